/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Header protection for a burst of packets (siphash.h): SipHash-2-4-128 of
 * eight packets at once in the eight 64-bit lanes of AVX-512 registers where
 * the CPU has them, one at a time otherwise. SipHash is a chain of dependent
 * adds and rotates, so a packet alone cannot use the core's width.
 */
#include <stdbool.h>

#include "siphash.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define SIP_ROUND8(v0, v1, v2, v3)                                                                 \
	do {                                                                                       \
		v0 = _mm512_add_epi64(v0, v1);                                                     \
		v1 = _mm512_xor_si512(_mm512_rol_epi64(v1, 13), v0);                               \
		v0 = _mm512_rol_epi64(v0, 32);                                                     \
		v2 = _mm512_add_epi64(v2, v3);                                                     \
		v3 = _mm512_xor_si512(_mm512_rol_epi64(v3, 16), v2);                               \
		v0 = _mm512_add_epi64(v0, v3);                                                     \
		v3 = _mm512_xor_si512(_mm512_rol_epi64(v3, 21), v0);                               \
		v2 = _mm512_add_epi64(v2, v1);                                                     \
		v1 = _mm512_xor_si512(_mm512_rol_epi64(v1, 17), v2);                               \
		v2 = _mm512_rol_epi64(v2, 32);                                                     \
	} while (0)

/* Eight masks; lane l is packet l. */
__attribute__((target("avx512f"))) static void mask8(uint8_t *const *buf, const uint8_t *const *in,
                                                     const uint8_t *const *key)
{
	uint64_t w[4][8] __attribute__((aligned(64))), o[2][8] __attribute__((aligned(64)));
	__m512i k0, k1, m0, m1, v0, v1, v2, v3, last = _mm512_set1_epi64((long long)16 << 56);

	for (int l = 0; l < 8; l++) {
		w[0][l] = sip_load(key[l]);
		w[1][l] = sip_load(key[l] + 8);
		w[2][l] = sip_load(in[l]);
		w[3][l] = sip_load(in[l] + 8);
	}
	k0 = _mm512_load_si512(w[0]);
	k1 = _mm512_load_si512(w[1]);
	m0 = _mm512_load_si512(w[2]);
	m1 = _mm512_load_si512(w[3]);
	v0 = _mm512_xor_si512(k0, _mm512_set1_epi64(0x736f6d6570736575ll));
	v1 = _mm512_xor_si512(k1, _mm512_set1_epi64(0x646f72616e646f6dll ^ 0xee));
	v2 = _mm512_xor_si512(k0, _mm512_set1_epi64(0x6c7967656e657261ll));
	v3 = _mm512_xor_si512(k1, _mm512_set1_epi64(0x7465646279746573ll));
	v3 = _mm512_xor_si512(v3, m0);
	SIP_ROUND8(v0, v1, v2, v3);
	SIP_ROUND8(v0, v1, v2, v3);
	v0 = _mm512_xor_si512(v0, m0);
	v3 = _mm512_xor_si512(v3, m1);
	SIP_ROUND8(v0, v1, v2, v3);
	SIP_ROUND8(v0, v1, v2, v3);
	v0 = _mm512_xor_si512(v0, m1);
	v3 = _mm512_xor_si512(v3, last);
	SIP_ROUND8(v0, v1, v2, v3);
	SIP_ROUND8(v0, v1, v2, v3);
	v0 = _mm512_xor_si512(v0, last);
	v2 = _mm512_xor_si512(v2, _mm512_set1_epi64(0xee));
	for (int i = 0; i < 4; i++)
		SIP_ROUND8(v0, v1, v2, v3);
	_mm512_store_si512(o[0],
	                   _mm512_xor_si512(_mm512_xor_si512(v0, v1), _mm512_xor_si512(v2, v3)));
	v1 = _mm512_xor_si512(v1, _mm512_set1_epi64(0xdd));
	for (int i = 0; i < 4; i++)
		SIP_ROUND8(v0, v1, v2, v3);
	_mm512_store_si512(o[1],
	                   _mm512_xor_si512(_mm512_xor_si512(v0, v1), _mm512_xor_si512(v2, v3)));
	for (int l = 0; l < 8; l++) {
		sip_xor(buf[l], o[0][l]);
		sip_xor(buf[l] + 8, o[1][l]);
	}
}

/* Workers ask at once: the cached answer is an atomic (ThreadSanitizer saw the race). */
static bool have_avx512(void)
{
	static int have = -1;
	int h = __atomic_load_n(&have, __ATOMIC_RELAXED);

	if (h < 0) {
		h = __builtin_cpu_supports("avx512f");
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	return h;
}
#else
static void mask8(uint8_t *const *buf, const uint8_t *const *in, const uint8_t *const *key)
{
	for (int l = 0; l < 8; l++)
		dust_siphash128_16_xor(buf[l], in[l], key[l]);
}

static bool have_avx512(void)
{
	return false;
}
#endif

void dust_siphash128_16_xor_burst(uint8_t *const *buf, const uint8_t *const *in,
                                  const uint8_t *const *key, unsigned n)
{
	unsigned i = 0;

	if (have_avx512())
		for (; i + 8 <= n; i += 8)
			mask8(buf + i, in + i, key + i);
	for (; i < n; i++)
		dust_siphash128_16_xor(buf[i], in[i], key[i]);
}
