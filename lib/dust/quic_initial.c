/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QUIC v1 packet protection for the quic profile (RFC 9001 §5): Initial
 * secrets from the public salt and the client's first DCID, AES-128-GCM
 * payload protection and AES-128-ECB header protection (OpenSSL's libcrypto:
 * libsodium has neither AES-128 primitive), HKDF over HMAC-SHA256, varints.
 * Everything here is public-key-free and public by design: any observer can
 * remove Initial protection, and the quic profile wants them to.
 */
#include <pthread.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <sodium.h>

#include "quic_pvt.h"

/* RFC 9001 §5.2: the v1 Initial salt. */
static const uint8_t initial_salt[20] = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34,
                                         0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8,
                                         0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};

/*
 * OpenSSL's SHA-256 rather than libsodium's: it uses the CPU's SHA
 * extensions, and the five HMACs of an Initial's keys were a tenth of an
 * X25519 in libsodium's portable SHA-256 (the quic intro bench). The
 * digest is fetched once: OpenSSL 3's one-shot HMAC() fetches the MAC and
 * the digest on every call, most of its cost on these short inputs.
 */
static EVP_MD *sha256;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
	sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/* HMAC-SHA256 (RFC 2104) of msg || counter (when not 0) in context c. */
static void hmac_sha256(EVP_MD_CTX *c, uint8_t out[32], const uint8_t *key, size_t keylen,
                        const uint8_t *msg, size_t len, uint8_t counter)
{
	uint8_t pad[64], inner[32];
	bool ok;

	if (keylen > sizeof(pad) || len >= sizeof(pad))
		abort(); /* callers pass the salt or a secret, and a DCID or an HkdfLabel */
	memset(pad, 0x36, sizeof(pad));
	for (size_t i = 0; i < keylen; i++)
		pad[i] ^= key[i];
	ok = EVP_DigestInit_ex(c, sha256, NULL) == 1 &&
	     EVP_DigestUpdate(c, pad, sizeof(pad)) == 1 && EVP_DigestUpdate(c, msg, len) == 1 &&
	     (!counter || EVP_DigestUpdate(c, &counter, 1) == 1) &&
	     EVP_DigestFinal_ex(c, inner, NULL) == 1;
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] ^= 0x36 ^ 0x5c; /* the inner pad becomes the outer one */
	ok = ok && EVP_DigestInit_ex(c, sha256, NULL) == 1 &&
	     EVP_DigestUpdate(c, pad, sizeof(pad)) == 1 &&
	     EVP_DigestUpdate(c, inner, sizeof(inner)) == 1 &&
	     EVP_DigestFinal_ex(c, out, NULL) == 1;
	sodium_memzero(pad, sizeof(pad));
	sodium_memzero(inner, sizeof(inner));
	if (!ok)
		abort(); /* cannot fail for SHA-256 short of running out of memory */
}

/* HKDF-Expand-Label (RFC 8446 §7.1) with an empty context, for outputs <= 32 bytes. */
static void expand_label(EVP_MD_CTX *c, uint8_t *out, size_t len, const uint8_t secret[32],
                         const char *label)
{
	uint8_t info[2 + 1 + 6 + 32 + 1], t[32];
	size_t llen = strlen(label), n = 0;

	info[n++] = (uint8_t)(len >> 8);
	info[n++] = (uint8_t)len;
	info[n++] = (uint8_t)(6 + llen);
	memcpy(info + n, "tls13 ", 6);
	n += 6;
	memcpy(info + n, label, llen);
	n += llen;
	info[n++] = 0; /* context length */
	hmac_sha256(c, t, secret, 32, info, n, 1);
	memcpy(out, t, len);
	sodium_memzero(t, sizeof(t));
}

DUST_EXPORT void dust_quic_initial_keys(const uint8_t *dcid, size_t dcid_len, bool server,
                                        struct dust_quic_keys *k)
{
	uint8_t initial[32], side[32];
	EVP_MD_CTX *c;

	pthread_once(&sha256_once, sha256_fetch);
	c = EVP_MD_CTX_new();
	if (!sha256 || !c)
		abort(); /* out of memory, or a libcrypto without SHA-256 */
	hmac_sha256(c, initial, initial_salt, sizeof(initial_salt), dcid, dcid_len, 0);
	expand_label(c, side, 32, initial, server ? "server in" : "client in");
	expand_label(c, k->key, sizeof(k->key), side, "quic key");
	expand_label(c, k->iv, sizeof(k->iv), side, "quic iv");
	expand_label(c, k->hp, sizeof(k->hp), side, "quic hp");
	EVP_MD_CTX_free(c); /* OpenSSL clears the digest state it frees */
	sodium_memzero(initial, sizeof(initial));
	sodium_memzero(side, sizeof(side));
}

/* ---- varints (RFC 9000 §16) ------------------------------------------------ */

size_t quic_varint_len(uint64_t v)
{
	return v < 64 ? 1 : v < 16384 ? 2 : v < (1u << 30) ? 4 : 8;
}

size_t quic_varint_put(uint8_t *p, uint64_t v, size_t len)
{
	static const uint8_t prefix[9] = {0, 0x00, 0x40, 0, 0x80, 0, 0, 0, 0xc0};

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(v >> (8 * (len - 1 - i)));
	p[0] |= prefix[len];
	return len;
}

bool quic_varint_get(const uint8_t *p, size_t avail, size_t *pos, uint64_t *v)
{
	size_t len;

	if (*pos >= avail)
		return false;
	len = (size_t)1 << (p[*pos] >> 6);
	if (avail - *pos < len)
		return false;
	*v = p[*pos] & 0x3f;
	for (size_t i = 1; i < len; i++)
		*v = *v << 8 | p[*pos + i];
	*pos += len;
	return true;
}

/* ---- AES primitives -------------------------------------------------------- */

static bool hp_mask(const uint8_t hp[16], const uint8_t sample[16], uint8_t mask[16])
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int n = 0;
	bool ok = c && EVP_EncryptInit_ex(c, EVP_aes_128_ecb(), NULL, hp, NULL) == 1 &&
	          EVP_CIPHER_CTX_set_padding(c, 0) == 1 &&
	          EVP_EncryptUpdate(c, mask, &n, sample, 16) == 1 && n == 16;

	EVP_CIPHER_CTX_free(c);
	return ok;
}

static void pn_nonce(const struct dust_quic_keys *k, uint64_t pn, uint8_t nonce[12])
{
	memcpy(nonce, k->iv, 12);
	for (int i = 0; i < 8; i++)
		nonce[11 - i] ^= (uint8_t)(pn >> (8 * i));
}

static bool gcm(bool enc, const struct dust_quic_keys *k, uint64_t pn, const uint8_t *ad,
                size_t adlen, const uint8_t *in, size_t len, uint8_t *out, uint8_t tag[16])
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	uint8_t nonce[12];
	int n = 0, fin = 0;
	bool ok;

	pn_nonce(k, pn, nonce);
	ok = c && EVP_CipherInit_ex(c, EVP_aes_128_gcm(), NULL, k->key, nonce, enc) == 1 &&
	     EVP_CipherUpdate(c, NULL, &n, ad, (int)adlen) == 1 &&
	     EVP_CipherUpdate(c, out, &n, in, (int)len) == 1;
	if (ok && !enc)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, 16, tag) == 1;
	ok = ok && EVP_CipherFinal_ex(c, out + n, &fin) == 1;
	if (ok && enc)
		ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
	EVP_CIPHER_CTX_free(c);
	return ok;
}

/*
 * Protect a long-header packet in place: pkt[0..pn_off) is the header, the
 * packet number (pn_len bytes) follows, then plen bytes of plaintext frames
 * and room for the tag. The Length field must already count pn, frames, tag.
 */
bool quic_protect(const struct dust_quic_keys *k, uint8_t *pkt, size_t pn_off, size_t pn_len,
                  uint64_t pn, size_t plen)
{
	uint8_t *payload = pkt + pn_off + pn_len, mask[16];

	for (size_t i = 0; i < pn_len; i++)
		pkt[pn_off + i] = (uint8_t)(pn >> (8 * (pn_len - 1 - i)));
	if (!gcm(true, k, pn, pkt, pn_off + pn_len, payload, plen, payload, payload + plen))
		return false;
	if (!hp_mask(k->hp, pkt + pn_off + 4, mask))
		return false;
	pkt[0] ^= mask[0] & 0x0f;
	for (size_t i = 0; i < pn_len; i++)
		pkt[pn_off + i] ^= mask[1 + i];
	return true;
}

/*
 * Remove protection from the long-header packet at pkt whose packet number
 * starts at pn_off and whose Length field said len bytes follow it. Works
 * on a copy (out, at least len bytes): the datagram itself is never changed.
 * On success *pn and the frames (out[0..*plen)) are set.
 */
bool quic_unprotect(const struct dust_quic_keys *k, const uint8_t *pkt, size_t pn_off, size_t len,
                    uint64_t *pn, uint8_t *out, size_t *plen)
{
	uint8_t mask[16], hdr[64], first;
	size_t pn_len;
	uint64_t v = 0;

	if (len < 4 + DUST_QUIC_HP_SAMPLE || pn_off + 4 > sizeof(hdr))
		return false;
	if (!hp_mask(k->hp, pkt + pn_off + 4, mask))
		return false;
	first = pkt[0] ^ (mask[0] & 0x0f);
	pn_len = (size_t)(first & 3) + 1;
	if (len < pn_len + DUST_QUIC_AEAD_TAG)
		return false;
	memcpy(hdr, pkt, pn_off);
	hdr[0] = first;
	for (size_t i = 0; i < pn_len; i++) {
		hdr[pn_off + i] = pkt[pn_off + i] ^ mask[1 + i];
		v = v << 8 | hdr[pn_off + i];
	}
	*plen = len - pn_len - DUST_QUIC_AEAD_TAG;
	if (!gcm(false, k, v, hdr, pn_off + pn_len, pkt + pn_off + pn_len, *plen, out,
	         (uint8_t *)pkt + pn_off + pn_len + *plen)) {
		sodium_memzero(out, *plen);
		return false;
	}
	*pn = v;
	return true;
}

/* Parse a long header up to the packet number; false if it is not one of ours to read. */
bool quic_long_parse(const uint8_t *dg, size_t len, struct quic_long *h)
{
	size_t pos = 5;
	uint64_t v;

	if (len < 7 || !(dg[0] & DUST_QUIC_LONG) || !(dg[0] & DUST_QUIC_FIXED))
		return false;
	h->type = dg[0] & DUST_QUIC_TYPE_MASK;
	h->version = (uint32_t)dg[1] << 24 | (uint32_t)dg[2] << 16 | (uint32_t)dg[3] << 8 | dg[4];
	h->dcid_len = dg[pos++];
	if (h->dcid_len > DUST_QUIC_CID_MAX || len - pos < h->dcid_len + 1u)
		return false;
	h->dcid = dg + pos;
	pos += h->dcid_len;
	h->scid_len = dg[pos++];
	if (h->scid_len > DUST_QUIC_CID_MAX || len - pos < h->scid_len)
		return false;
	h->scid = dg + pos;
	pos += h->scid_len;
	h->token_len = 0;
	if (h->type == DUST_QUIC_TYPE_INITIAL) {
		if (!quic_varint_get(dg, len, &pos, &v) || v > len - pos)
			return false;
		h->token_len = (size_t)v;
		pos += h->token_len;
	}
	if (!quic_varint_get(dg, len, &pos, &v) || v > len - pos)
		return false;
	h->pn_off = pos;
	h->length = (size_t)v;
	return true;
}

bool quic_ack_skip(const uint8_t *f, size_t n, size_t *pos, uint64_t max_ranges)
{
	uint64_t v, ranges;
	bool ecn = f[*pos] == 0x03;

	(*pos)++;
	if (!quic_varint_get(f, n, pos, &v) || !quic_varint_get(f, n, pos, &v) ||
	    !quic_varint_get(f, n, pos, &ranges) || !quic_varint_get(f, n, pos, &v) ||
	    ranges > max_ranges)
		return false;
	for (uint64_t i = 0; i < 2 * ranges + (ecn ? 3 : 0); i++)
		if (!quic_varint_get(f, n, pos, &v))
			return false;
	return true;
}

/* ---- CRYPTO stream reassembly ------------------------------------------------ */

/* Whether byte i of the stream was received. */
static bool crypto_have(const struct quic_crypto_buf *cb, uint64_t i)
{
	return cb->have[i / 8] & (1u << (i % 8));
}

void quic_crypto_reset(struct quic_crypto_buf *cb)
{
	memset(cb->have, 0, sizeof(cb->have));
}

bool quic_crypto_store(struct quic_crypto_buf *cb, uint64_t off, const uint8_t *p, uint64_t len)
{
	if (off > DUST_QUIC_CRYPTO_MAX || len > DUST_QUIC_CRYPTO_MAX - off)
		return false;
	/*
	 * A byte received twice must be the same (RFC 9000 §19.6 lets a receiver
	 * treat a change as a violation): else the stream's head read from the
	 * hello's first Initial alone (the gateway's peek) could differ from the
	 * head that both Initials reassemble into (what accept authenticates).
	 */
	for (uint64_t i = 0; i < len; i++)
		if (crypto_have(cb, off + i) && cb->b[off + i] != p[i])
			return false;
	memcpy(cb->b + off, p, len);
	for (uint64_t i = off; i < off + len; i++)
		cb->have[i / 8] |= (uint8_t)(1u << (i % 8));
	return true;
}

bool quic_crypto_complete(const struct quic_crypto_buf *cb, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!crypto_have(cb, i))
			return false;
	return true;
}

size_t quic_crypto_message(const struct quic_crypto_buf *cb, uint8_t t)
{
	size_t n;

	if (!quic_crypto_complete(cb, 4) || cb->b[0] != t)
		return 0;
	n = 4 + ((size_t)cb->b[1] << 16 | be16_get(cb->b + 2));
	return n <= DUST_QUIC_CRYPTO_MAX && quic_crypto_complete(cb, n) ? n : 0;
}
