/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SipHash-2-4 with a 128-bit output over exactly 16 bytes: the header
 * protection mask (SPEC §6) of every data packet, XORed into the header. The
 * same function as libsodium's crypto_shorthash_siphashx24 on a 16-byte input
 * (test_crypto compares them); one packet inline, or a burst (siphash.c).
 * Also SipHash-2-4 with a 64-bit output over 32 bytes: where an AES-GCM key
 * goes in the backend's key cache (aead_ipsecmb.c).
 */
#ifndef DUST_SIPHASH_H
#define DUST_SIPHASH_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t sip_load(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

/* Word-wide: byte-wise stores then a wide load of the mask would stall forwarding. */
static inline void sip_xor(uint8_t *p, uint64_t m)
{
	uint64_t v;

	memcpy(&v, p, 8);
	v ^= htole64(m);
	memcpy(p, &v, 8);
}

static inline uint64_t sip_rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIP_ROUND(v0, v1, v2, v3)                                                                  \
	do {                                                                                       \
		v0 += v1;                                                                          \
		v1 = sip_rotl(v1, 13) ^ v0;                                                        \
		v0 = sip_rotl(v0, 32);                                                             \
		v2 += v3;                                                                          \
		v3 = sip_rotl(v3, 16) ^ v2;                                                        \
		v0 += v3;                                                                          \
		v3 = sip_rotl(v3, 21) ^ v0;                                                        \
		v2 += v1;                                                                          \
		v1 = sip_rotl(v1, 17) ^ v2;                                                        \
		v2 = sip_rotl(v2, 32);                                                             \
	} while (0)

/* buf ^= SipHash-2-4-128(key, in): 16 bytes each. */
static inline void dust_siphash128_16_xor(uint8_t buf[16], const uint8_t in[16],
                                          const uint8_t key[16])
{
	uint64_t k0 = sip_load(key), k1 = sip_load(key + 8);
	uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull ^ 0xee;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
	const uint64_t m[3] = {sip_load(in), sip_load(in + 8), (uint64_t)16 << 56};

	/* two message words, then the length word (16: no tail bytes) */
	for (int i = 0; i < 3; i++) {
		v3 ^= m[i];
		SIP_ROUND(v0, v1, v2, v3);
		SIP_ROUND(v0, v1, v2, v3);
		v0 ^= m[i];
	}
	v2 ^= 0xee;
	for (int i = 0; i < 4; i++)
		SIP_ROUND(v0, v1, v2, v3);
	sip_xor(buf, v0 ^ v1 ^ v2 ^ v3);
	v1 ^= 0xdd;
	for (int i = 0; i < 4; i++)
		SIP_ROUND(v0, v1, v2, v3);
	sip_xor(buf + 8, v0 ^ v1 ^ v2 ^ v3);
}

/* SipHash-2-4-64(key, in) of 32 bytes: libsodium's crypto_shorthash_siphash24. */
static inline uint64_t dust_siphash64_32(const uint8_t in[32], const uint8_t key[16])
{
	uint64_t k0 = sip_load(key), k1 = sip_load(key + 8);
	uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;

	/* four message words, then the length word (32: no tail bytes) */
	for (int i = 0; i < 5; i++) {
		uint64_t m = i < 4 ? sip_load(in + 8 * i) : (uint64_t)32 << 56;

		v3 ^= m;
		SIP_ROUND(v0, v1, v2, v3);
		SIP_ROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		SIP_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

#undef SIP_ROUND

/* buf[i] ^= SipHash-2-4-128(key[i], in[i]) for i < n; eight at a time with AVX-512. */
void dust_siphash128_16_xor_burst(uint8_t *const *buf, const uint8_t *const *in,
                                  const uint8_t *const *key, unsigned n);

#endif /* DUST_SIPHASH_H */
