/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SHA-1, HMAC-SHA1 and HKDF-SHA1 (FIPS 180-4, RFC 2104, RFC 5869), only to
 * derive shadowsocks AEAD subkeys in the peer load generator; libsodium has
 * no SHA-1. Not for anything that needs SHA-1 to be strong.
 */
#ifndef BENCH_SHA1_H
#define BENCH_SHA1_H

#include <stddef.h>
#include <stdint.h>

enum { SHA1_BYTES = 20, SHA1_BLOCK = 64 };

struct sha1 {
	uint32_t h[5];
	uint64_t total;
	uint8_t buf[SHA1_BLOCK];
	size_t fill;
};

void sha1_init(struct sha1 *c);
void sha1_update(struct sha1 *c, const void *p, size_t n);
void sha1_final(struct sha1 *c, uint8_t out[SHA1_BYTES]);
void sha1_hmac(uint8_t out[SHA1_BYTES], const uint8_t *key, size_t klen, const uint8_t *msg,
               size_t mlen);
/** HKDF extract-then-expand; out_len at most 255 * SHA1_BYTES. */
void sha1_hkdf(uint8_t *out, size_t out_len, const uint8_t *salt, size_t slen, const uint8_t *ikm,
               size_t ilen, const uint8_t *info, size_t info_len);

#endif
