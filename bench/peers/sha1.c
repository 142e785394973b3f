/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SHA-1 / HMAC-SHA1 / HKDF-SHA1 for the shadowsocks peer generator
 * (shadowsocks AEAD derives per-salt subkeys with HKDF-SHA1).
 */
#include <string.h>

#include "sha1.h"

static uint32_t rol(uint32_t x, unsigned n)
{
	return (x << n) | (x >> (32 - n));
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void round_fk(unsigned i, uint32_t b, uint32_t c, uint32_t d, uint32_t *f, uint32_t *k)
{
	if (i < 20) {
		*f = (b & c) | (~b & d);
		*k = 0x5a827999;
	} else if (i < 40) {
		*f = b ^ c ^ d;
		*k = 0x6ed9eba1;
	} else if (i < 60) {
		*f = (b & c) | (b & d) | (c & d);
		*k = 0x8f1bbcdc;
	} else {
		*f = b ^ c ^ d;
		*k = 0xca62c1d6;
	}
}

static void block(uint32_t h[5], const uint8_t p[SHA1_BLOCK])
{
	uint32_t w[80], v[5], f, k;

	for (unsigned i = 0; i < 16; i++)
		w[i] = be32(p + 4 * i);
	for (unsigned i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	memcpy(v, h, sizeof(v));
	for (unsigned i = 0; i < 80; i++) {
		round_fk(i, v[1], v[2], v[3], &f, &k);
		uint32_t t = rol(v[0], 5) + f + v[4] + k + w[i];
		v[4] = v[3];
		v[3] = v[2];
		v[2] = rol(v[1], 30);
		v[1] = v[0];
		v[0] = t;
	}
	for (unsigned i = 0; i < 5; i++)
		h[i] += v[i];
}

void sha1_init(struct sha1 *c)
{
	static const uint32_t iv[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
	memcpy(c->h, iv, sizeof(iv));
	c->total = 0;
	c->fill = 0;
}

void sha1_update(struct sha1 *c, const void *p, size_t n)
{
	const uint8_t *b = p;

	c->total += n;
	while (n) {
		size_t take = SHA1_BLOCK - c->fill < n ? SHA1_BLOCK - c->fill : n;
		memcpy(c->buf + c->fill, b, take);
		c->fill += take;
		b += take;
		n -= take;
		if (c->fill == SHA1_BLOCK) {
			block(c->h, c->buf);
			c->fill = 0;
		}
	}
}

void sha1_final(struct sha1 *c, uint8_t out[SHA1_BYTES])
{
	uint64_t bits = c->total * 8;
	uint8_t len[8];

	for (unsigned i = 0; i < 8; i++)
		len[i] = (uint8_t)(bits >> (56 - 8 * i));
	sha1_update(c, "\x80", 1);
	while (c->fill != SHA1_BLOCK - 8)
		sha1_update(c, "", 1);
	sha1_update(c, len, 8);
	for (unsigned i = 0; i < 5; i++) {
		out[4 * i] = (uint8_t)(c->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)c->h[i];
	}
}

void sha1_hmac(uint8_t out[SHA1_BYTES], const uint8_t *key, size_t klen, const uint8_t *msg,
               size_t mlen)
{
	uint8_t k[SHA1_BLOCK] = {0}, pad[SHA1_BLOCK], inner[SHA1_BYTES];
	struct sha1 c;

	if (klen > SHA1_BLOCK) {
		sha1_init(&c);
		sha1_update(&c, key, klen);
		sha1_final(&c, k);
	} else {
		memcpy(k, key, klen);
	}
	for (unsigned i = 0; i < SHA1_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	sha1_init(&c);
	sha1_update(&c, pad, SHA1_BLOCK);
	sha1_update(&c, msg, mlen);
	sha1_final(&c, inner);
	for (unsigned i = 0; i < SHA1_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	sha1_init(&c);
	sha1_update(&c, pad, SHA1_BLOCK);
	sha1_update(&c, inner, SHA1_BYTES);
	sha1_final(&c, out);
}

void sha1_hkdf(uint8_t *out, size_t out_len, const uint8_t *salt, size_t slen, const uint8_t *ikm,
               size_t ilen, const uint8_t *info, size_t info_len)
{
	uint8_t prk[SHA1_BYTES], t[SHA1_BYTES], msg[SHA1_BYTES + 256 + 1];
	size_t tlen = 0, done = 0;

	sha1_hmac(prk, salt, slen, ikm, ilen);
	for (uint8_t i = 1; done < out_len && info_len <= 256; i++) {
		memcpy(msg, t, tlen);
		memcpy(msg + tlen, info, info_len);
		msg[tlen + info_len] = i;
		sha1_hmac(t, prk, SHA1_BYTES, msg, tlen + info_len + 1);
		tlen = SHA1_BYTES;
		size_t take = out_len - done < SHA1_BYTES ? out_len - done : SHA1_BYTES;
		memcpy(out + done, t, take);
		done += take;
	}
}
