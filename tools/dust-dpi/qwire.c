/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QUIC v1 as a passive observer reads it: what the GFW's Initial
 * decryption and nDPI need, written from RFC 9000 and RFC 9001 over
 * OpenSSL's HMAC-SHA256, AES-128-ECB and AES-128-GCM.
 */
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "qwire.h"

/* RFC 9001 §5.2: the salt of QUIC version 1's Initial secrets */
static const uint8_t v1_salt[20] = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
                                    0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};

bool qw_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v)
{
	size_t len;

	if (*pos >= n)
		return false;
	len = (size_t)1 << (p[*pos] >> 6);
	if (n - *pos < len)
		return false;
	*v = p[*pos] & 0x3f;
	for (size_t i = 1; i < len; i++)
		*v = *v << 8 | p[*pos + i];
	*pos += len;
	return true;
}

/* A connection ID: its length byte, then that many bytes (at most QW_CID_MAX in v1). */
static bool cid_get(const uint8_t *p, size_t n, size_t *pos, const uint8_t **cid, uint8_t *len)
{
	if (*pos >= n || p[*pos] > QW_CID_MAX || n - *pos - 1 < p[*pos])
		return false;
	*len = p[*pos];
	*cid = p + *pos + 1;
	*pos += 1 + (size_t)*len;
	return true;
}

bool qw_long_parse(const uint8_t *p, size_t n, struct qw_long *h)
{
	size_t pos = 5;
	uint64_t token, length;

	memset(h, 0, sizeof(*h));
	if (n < 7 || !(p[0] & QW_FORM_LONG))
		return false;
	h->type = p[0] & 0x30;
	h->version = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
	if (h->version != QW_V1 || !cid_get(p, n, &pos, &h->dcid, &h->dcid_len) ||
	    !cid_get(p, n, &pos, &h->scid, &h->scid_len))
		return false;
	if (h->type == QW_TYPE_RETRY)
		return true;
	if (h->type == QW_TYPE_INITIAL) {
		if (!qw_varint(p, n, &pos, &token) || token > n - pos)
			return false;
		pos += token;
	}
	if (!qw_varint(p, n, &pos, &length))
		return false;
	h->pn_off = pos;
	h->length = length;
	return true;
}

/* HKDF-Expand-Label (RFC 8446 §7.1) with an empty context; out_len at most 32. */
static bool expand_label(const uint8_t secret[32], const char *label, uint8_t *out, size_t out_len)
{
	uint8_t info[2 + 1 + 6 + 32 + 1 + 1], t[32];
	size_t llen = strlen(label), n = 0;
	unsigned int tlen = 0;

	if (llen > 32 || out_len > sizeof(t))
		return false;
	info[n++] = (uint8_t)(out_len >> 8);
	info[n++] = (uint8_t)out_len;
	info[n++] = (uint8_t)(6 + llen);
	memcpy(info + n, "tls13 ", 6);
	memcpy(info + n + 6, label, llen);
	n += 6 + llen;
	info[n++] = 0;    /* context: empty */
	info[n++] = 0x01; /* T(1): one block covers every length used here */
	if (!HMAC(EVP_sha256(), secret, 32, info, n, t, &tlen) || tlen != 32)
		return false;
	memcpy(out, t, out_len);
	return true;
}

bool qw_initial_keys(const uint8_t *dcid, size_t dcid_len, bool server, struct qw_keys *k)
{
	uint8_t initial[32], secret[32];
	unsigned int len = 0;
	bool ok;

	/* HKDF-Extract(salt, IKM) is HMAC(key = salt, IKM) */
	ok = HMAC(EVP_sha256(), v1_salt, sizeof(v1_salt), dcid, dcid_len, initial, &len) &&
	     len == 32 && expand_label(initial, server ? "server in" : "client in", secret, 32) &&
	     expand_label(secret, "quic key", k->key, sizeof(k->key)) &&
	     expand_label(secret, "quic iv", k->iv, sizeof(k->iv)) &&
	     expand_label(secret, "quic hp", k->hp, sizeof(k->hp));
	return ok;
}

/* RFC 9001 §5.4.3: AES-128-ECB of the 16-byte sample */
static bool hp_mask(const uint8_t hp[16], const uint8_t sample[16], uint8_t mask[16])
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int len = 0;
	bool ok = c && EVP_EncryptInit_ex(c, EVP_aes_128_ecb(), NULL, hp, NULL) &&
	          EVP_CIPHER_CTX_set_padding(c, 0) &&
	          EVP_EncryptUpdate(c, mask, &len, sample, 16) && len == 16;

	EVP_CIPHER_CTX_free(c);
	return ok;
}

static bool gcm_open(const struct qw_keys *k, const uint8_t nonce[12], const uint8_t *aad,
                     size_t aad_len, const uint8_t *ct, size_t ct_len, const uint8_t tag[16],
                     uint8_t *out)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int len = 0, fin = 0;
	bool ok = c && EVP_DecryptInit_ex(c, EVP_aes_128_gcm(), NULL, k->key, nonce) &&
	          EVP_DecryptUpdate(c, NULL, &len, aad, (int)aad_len) &&
	          EVP_DecryptUpdate(c, out, &len, ct, (int)ct_len) &&
	          EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, 16, (void *)tag) &&
	          EVP_DecryptFinal_ex(c, out + len, &fin) == 1;

	EVP_CIPHER_CTX_free(c);
	return ok;
}

bool qw_open(const struct qw_keys *k, const uint8_t *pkt, const struct qw_long *h, uint8_t *out,
             size_t *plen, uint64_t *pn)
{
	uint8_t mask[16], hdr[1 + 4 + 2 * (1 + QW_CID_MAX) + 8 + 8 + 4], nonce[12];
	size_t pn_len, hlen;

	/* the sample starts 4 bytes past the packet number's start (§5.4.2) */
	if (h->length < 4 + 16 || h->pn_off + 4 > sizeof(hdr) ||
	    !hp_mask(k->hp, pkt + h->pn_off + 4, mask))
		return false;
	memcpy(hdr, pkt, h->pn_off);
	hdr[0] = pkt[0] ^ (mask[0] & 0x0f);
	pn_len = (size_t)(hdr[0] & 0x03) + 1;
	if (h->length < pn_len + 16)
		return false;
	*pn = 0;
	for (size_t i = 0; i < pn_len; i++) {
		hdr[h->pn_off + i] = pkt[h->pn_off + i] ^ mask[1 + i];
		*pn = *pn << 8 | hdr[h->pn_off + i];
	}
	hlen = h->pn_off + pn_len;
	/* the nonce is the IV with the packet number XORed into its end (§5.3) */
	memcpy(nonce, k->iv, sizeof(nonce));
	for (int i = 0; i < 8; i++)
		nonce[11 - i] ^= (uint8_t)(*pn >> (8 * i));
	*plen = h->length - pn_len - 16;
	return gcm_open(k, nonce, hdr, hlen, pkt + hlen, *plen, pkt + hlen + *plen, out);
}

bool qw_ack_skip(const uint8_t *f, size_t n, size_t *pos, uint64_t max_ranges)
{
	bool ecn = f[*pos] == 0x03;
	uint64_t v, ranges;

	(*pos)++;
	/* largest acknowledged, delay, range count, first range */
	if (!qw_varint(f, n, pos, &v) || !qw_varint(f, n, pos, &v) ||
	    !qw_varint(f, n, pos, &ranges) || ranges > max_ranges || !qw_varint(f, n, pos, &v))
		return false;
	for (uint64_t i = 0; i < 2 * ranges; i++) /* gap, length */
		if (!qw_varint(f, n, pos, &v))
			return false;
	for (int i = 0; ecn && i < 3; i++) /* ECT(0), ECT(1), ECN-CE counts */
		if (!qw_varint(f, n, pos, &v))
			return false;
	return true;
}

bool qw_crypto_put(struct qw_crypto *c, uint64_t off, const uint8_t *p, uint64_t len)
{
	if (off > QW_CRYPTO_MAX || len > QW_CRYPTO_MAX - off)
		return false;
	memcpy(c->b + off, p, len);
	for (uint64_t i = off; i < off + len; i++)
		c->have[i / 8] |= (uint8_t)(1u << (i % 8));
	return true;
}

size_t qw_crypto_message(const struct qw_crypto *c, uint8_t t)
{
	size_t len;

	for (size_t i = 0; i < 4; i++)
		if (!(c->have[i / 8] & (1u << (i % 8))))
			return 0;
	len = 4 + ((size_t)c->b[1] << 16 | (size_t)c->b[2] << 8 | c->b[3]);
	if (c->b[0] != t || len > QW_CRYPTO_MAX)
		return 0;
	for (size_t i = 4; i < len; i++)
		if (!(c->have[i / 8] & (1u << (i % 8))))
			return 0;
	return len;
}
