/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ML-KEM-768 per FIPS 203 (August 2024). Algorithm numbers in comments are
 * FIPS 203's. Polynomials hold int16 coefficients mod q; products use
 * Montgomery reduction (R = 2^16) and sums Barrett reduction, so no
 * division or branch ever depends on a secret. The only branches on data
 * are in SampleNTT's rejection sampling, over the public seed rho, and in
 * the checks of public inputs (the ek modulus check, the dk hash check);
 * the only data-dependent table index is the AVX2 rejection sampling's,
 * over rho's output too.
 *
 * Secrets: s, e, y, e1, e2, m, r, K, the re-encryption and the coins. Each
 * lives on the stack of the function that made it and is wiped with
 * sodium_memzero before that function returns, on every path.
 */
#include <pthread.h>

#include <sodium.h>

#include "dust_pvt.h"
#include "mlkem.h"

/*
 * The constant-time test (test/unit/test_mlkem_ct.c) builds this file with
 * DUST_MLKEM_CTGRIND: values derived from secrets that are public by
 * design (rho, the seed of A, is an output of G(d || k)) are then declared
 * defined to valgrind, as ctgrind's declassify does.
 */
#ifdef DUST_MLKEM_CTGRIND
#include <valgrind/memcheck.h>
#define declassify(p, n) VALGRIND_MAKE_MEM_DEFINED(p, n)
#else
#define declassify(p, n) ((void)(p), (void)(n))
#endif

enum {
	N = 256,
	Q = 3329,
	K = 3,   /* ML-KEM-768: k */
	ETA = 2, /* eta1 = eta2 = 2 */
	DU = 10,
	DV = 4,
	SYM = 32,         /* seeds, hashes, messages and keys */
	POLY_BYTES = 384, /* ByteEncode12 of one polynomial */
	VEC_BYTES = K * POLY_BYTES,
	C1_BYTES = K * N * DU / 8,
	C2_BYTES = N * DV / 8,
	XOF_BLOCK = 168,   /* SHAKE128's rate */
	QINV = -3327,      /* q^-1 mod 2^16, as int16 */
	BARRETT_V = 20159, /* round(2^26 / q) */
};

_Static_assert(XOF_BLOCK % 3 == 0, "SampleNTT reads whole blocks of triples");
_Static_assert(DU == 10 && DV == 4, "the compressions are written for ML-KEM-768");
_Static_assert(XOF_BLOCK % 8 == 0 && 64 * ETA % 8 == 0, "the four-way sponge outputs lanes");
_Static_assert(DUST_MLKEM768_EKBYTES == VEC_BYTES + SYM, "ek layout");
_Static_assert(DUST_MLKEM768_DKBYTES == 2 * VEC_BYTES + 3 * SYM, "dk layout");
_Static_assert(DUST_MLKEM768_CTBYTES == C1_BYTES + C2_BYTES, "ct layout");

struct poly {
	int16_t c[N];
};

struct polyvec {
	struct poly p[K];
};

/* ---- tables, filled once ---- */

static int16_t zetas[128];     /* 17^BitRev7(i) * R mod q, centered: filled once */
static int16_t zetas_mul[128]; /* basemul's zeta per pair: zetas[64 + m/2], negated for odd m */
static uint64_t keccak_rc[24]; /* Keccak-f[1600]'s round constants */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static unsigned bitrev7(unsigned i)
{
	unsigned r = 0;

	for (int b = 0; b < 7; b++)
		r |= ((i >> b) & 1) << (6 - b);
	return r;
}

/*
 * The NTT's twiddle factors, computed rather than typed in: zeta = 17 is the
 * primitive 256th root of unity mod q (§4.3), stored times R = 2^16 so
 * that a Montgomery product by one leaves a plain product.
 */
static void zetas_init(void)
{
	for (unsigned i = 0; i < 128; i++) {
		uint32_t z = 1;

		for (unsigned e = bitrev7(i); e > 0; e--)
			z = z * 17 % Q;
		z = (uint32_t)((uint64_t)z * 65536 % Q);
		zetas[i] = (int16_t)(z > Q / 2 ? (int)z - Q : (int)z);
	}
	for (unsigned m = 0; m < 128; m++)
		zetas_mul[m] = (int16_t)(m & 1 ? -zetas[64 + m / 2] : zetas[64 + m / 2]);
}

/*
 * Keccak-f[1600]'s round constants from their definition (FIPS 202, 3.2.5):
 * bit 2^j - 1 of round i's constant is rc(j + 7 i), the output of an 8-bit
 * LFSR with x^8 + x^6 + x^5 + x^4 + 1.
 */
static void keccak_rc_init(void)
{
	unsigned lfsr = 1;

	for (int i = 0; i < 24; i++) {
		uint64_t rc = 0;

		for (int j = 0; j < 7; j++) {
			if (lfsr & 1)
				rc |= 1ull << ((1u << j) - 1);
			lfsr = (lfsr << 1 ^ (lfsr & 0x80 ? 0x71 : 0)) & 0xff;
		}
		keccak_rc[i] = rc;
	}
}

static void avx2_init(void);

static void init_once(void)
{
	zetas_init();
	keccak_rc_init();
	avx2_init();
}

static void tables_init(void)
{
	pthread_once(&once, init_once);
}

/* ---- the hashes (FIPS 203 §4.1): Keccak, one state or four side by side ---- */

/* Four Keccak states, lane by lane: one vector operation steps all four. */
typedef uint64_t lane4 __attribute__((vector_size(32)));

/* rho's rotation of lane x + 5 y (FIPS 202, 3.2.2). */
static const uint8_t keccak_rot[25] = {0,  1,  62, 28, 27, 36, 44, 6,  55, 20, 3,  10, 43,
                                       25, 39, 41, 45, 15, 21, 8,  18, 2,  61, 56, 14};

/* v <<< n for 0 <= n < 64; n = 0 gives v | v. */
#define ROL64(v, n) ((v) << (n) | (v) >> ((64 - (n)) & 63))

/*
 * The 24 rounds over lanes of type T (uint64_t or lane4), state s[x + 5 y],
 * temporaries b[25] and c[5]: theta, rho and pi into b, chi back into s,
 * iota. No branch or index depends on the state.
 */
#define KECCAK_ROUNDS(T, s, b, c)                                                                  \
	for (int round = 0; round < 24; round++) {                                                 \
		for (int x = 0; x < 5; x++)                                                        \
			c[x] = s[x] ^ s[x + 5] ^ s[x + 10] ^ s[x + 15] ^ s[x + 20];                \
		for (int x = 0; x < 5; x++) {                                                      \
			T d = c[(x + 4) % 5] ^ ROL64(c[(x + 1) % 5], 1);                           \
			for (int y = 0; y < 25; y += 5)                                            \
				s[x + y] ^= d;                                                     \
		}                                                                                  \
		for (int x = 0; x < 5; x++)                                                        \
			for (int y = 0; y < 5; y++)                                                \
				b[y + 5 * ((2 * x + 3 * y) % 5)] =                                 \
				    ROL64(s[x + 5 * y], keccak_rot[x + 5 * y]);                    \
		for (int y = 0; y < 25; y += 5)                                                    \
			for (int x = 0; x < 5; x++)                                                \
				s[x + y] = b[x + y] ^ (~b[(x + 1) % 5 + y] & b[(x + 2) % 5 + y]);  \
		s[0] ^= keccak_rc[round];                                                          \
	}

/*
 * ThreadSanitizer instruments target_clones' resolver, which the dynamic
 * loader runs before the sanitizer's runtime is up: a crash at load. A
 * TSan build takes the default clone.
 *
 * x86-64-v4 (AVX-512VL) gives the four-way rounds a rotate and a
 * three-input logic instruction (1008 -> 672 TSC ticks a permutation on
 * the Zen 5 of bench/, 2.1 GHz); v4 and v3 (BMI's andn and rorx) help the
 * one-way rounds less (840 -> 714 and 777). valgrind reports no AVX-512:
 * test_mlkem_ct runs the v3 and avx2 clones.
 */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DUST_NO_CLONES 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(DUST_NO_CLONES) || !defined(__x86_64__)
#define KECCAK1_CLONES
#define KECCAK4_CLONES
#else
#define KECCAK1_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define KECCAK4_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif

/* The temporaries hold state (secret for G, J and the noise): both permutations wipe them. */
KECCAK1_CLONES static void keccak_f(uint64_t s[25])
{
	uint64_t b[25], c[5];

	KECCAK_ROUNDS(uint64_t, s, b, c)
	sodium_memzero(b, sizeof(b));
	sodium_memzero(c, sizeof(c));
}

/* Four permutations at once: AVX-512VL or AVX2 where the CPU has it, two SSE2 halves otherwise. */
KECCAK4_CLONES static void keccak_f4(lane4 s[25])
{
	lane4 b[25], c[5];

	KECCAK_ROUNDS(lane4, s, b, c)
	sodium_memzero(b, sizeof(b));
	sodium_memzero(c, sizeof(c));
}

/* A sponge's rate in bytes and its padding's first byte (SHA3: 01, SHAKE: 1111, then 1). */
struct sponge_kind {
	unsigned rate;
	uint8_t pad;
};

static const struct sponge_kind sha3_256 = {136, 0x06}, sha3_512 = {72, 0x06},
                                shake128 = {168, 0x1f}, shake256 = {136, 0x1f};

struct sponge {
	uint64_t s[25];
	unsigned rate, pos; /* pos: the next byte of the rate to absorb or squeeze */
};

static void sponge_absorb(struct sponge *k, const uint8_t *in, size_t len)
{
	size_t i = 0;

	/* Whole lanes while the position is on a lane's start (H(ek) reads 1184 bytes). */
	for (; k->pos % 8 == 0 && i + 8 <= len; i += 8) {
		k->s[k->pos / 8] ^= le64_get(in + i);
		k->pos += 8;
		if (k->pos == k->rate) {
			keccak_f(k->s);
			k->pos = 0;
		}
	}
	for (; i < len; i++) {
		k->s[k->pos / 8] ^= (uint64_t)in[i] << 8 * (k->pos % 8);
		if (++k->pos == k->rate) {
			keccak_f(k->s);
			k->pos = 0;
		}
	}
}

static void sponge_squeeze(struct sponge *k, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (k->pos == k->rate) {
			keccak_f(k->s);
			k->pos = 0;
		}
		out[i] = (uint8_t)(k->s[k->pos / 8] >> 8 * (k->pos % 8));
		k->pos++;
	}
}

/* out = f(a || b), outlen bytes (a digest's length, or any for SHAKE); the state is wiped. */
static void hash2(const struct sponge_kind *f, const uint8_t *a, size_t alen, const uint8_t *b,
                  size_t blen, uint8_t *out, size_t outlen)
{
	struct sponge k = {.rate = f->rate};

	sponge_absorb(&k, a, alen);
	sponge_absorb(&k, b, blen);
	k.s[k.pos / 8] ^= (uint64_t)f->pad << 8 * (k.pos % 8);
	k.s[(k.rate - 1) / 8] ^= 0x80ull << 8 * ((k.rate - 1) % 8);
	keccak_f(k.s);
	k.pos = 0;
	sponge_squeeze(&k, out, outlen);
	sodium_memzero(&k, sizeof(k));
}

/*
 * Four sponges of one kind over four inputs of one length, shorter than the
 * rate (seed || one or two index bytes): absorbed, padded, permuted once.
 */
static void sponge4_start(lane4 s[25], const struct sponge_kind *f, uint8_t in[4][SYM + 2],
                          size_t len)
{
	memset(s, 0, 25 * sizeof(lane4));
	for (int l = 0; l < 4; l++) {
		for (size_t i = 0; i < len; i++)
			s[i / 8][l] ^= (uint64_t)in[l][i] << 8 * (i % 8);
		s[len / 8][l] ^= (uint64_t)f->pad << 8 * (len % 8);
		s[(f->rate - 1) / 8][l] ^= 0x80ull << 8 * ((f->rate - 1) % 8);
	}
	keccak_f4(s);
}

/*
 * Up to four hashes of one rate side by side, each over its own message
 * (contiguous, all with the same number of whole blocks, len / rate), each
 * writing outlen <= rate bytes: the four-way permutation for the price of
 * about one. Decapsulation's H(ek) and J(z || c) are 9 blocks each.
 */
struct hash_job {
	const struct sponge_kind *f;
	const uint8_t *in;
	size_t len;
	uint8_t *out;
	size_t outlen; /* whole lanes */
};

static void hash4(const struct hash_job *job, int count)
{
	size_t rate = job[0].f->rate, blocks = job[0].len / rate;
	uint8_t last[200];
	lane4 s[25];

	memset(s, 0, sizeof(s));
	for (size_t blk = 0; blk <= blocks; blk++) {
		for (int l = 0; l < count; l++) {
			const uint8_t *p = job[l].in + blk * rate;

			if (blk == blocks) { /* the rest, then the padding */
				size_t rest = job[l].len - blocks * rate;

				memset(last, 0, rate);
				memcpy(last, p, rest);
				last[rest] ^= job[l].f->pad;
				last[rate - 1] ^= 0x80;
				p = last;
			}
			for (size_t w = 0; w < rate / 8; w++)
				s[w][l] ^= le64_get(p + 8 * w);
		}
		keccak_f4(s);
	}
	for (int l = 0; l < count; l++)
		for (size_t i = 0; i < job[l].outlen / 8; i++)
			le64_put(job[l].out + 8 * i, s[i][l]);
	sodium_memzero(s, sizeof(s));
	sodium_memzero(last, sizeof(last));
}

/* The first n bytes (whole lanes) of the rate of each of the four states. */
static void sponge4_out(const lane4 s[25], uint8_t *out[4], size_t n)
{
	for (size_t i = 0; i < n / 8; i++)
		for (int l = 0; l < 4; l++)
			le64_put(out[l] + 8 * i, s[i][l]);
}

/*
 * ---- AVX2 (x86-64): the NTT, its inverse, basemul, the coefficient-wise
 * operations and rejection sampling, sixteen coefficients a vector ----
 *
 * Same layout (int16, normal order) and the same operations, lane by lane,
 * as the scalar code: a Montgomery product is mullo, mulhi, mulhi, sub in
 * either, and int16 sums wrap the same way in any order. So the two paths
 * give identical bytes, and test_mlkem checks that on random inputs and on
 * every KAT. Chosen once, in init_once, from the CPU's feature bits; the
 * scalar path stays for CPUs without AVX2 (and for the tests).
 */
#if defined(__x86_64__) && defined(__GNUC__)
#define DUST_MLKEM_AVX2 1
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,popcnt")))

static bool use_avx2; /* set in init_once, or by dust_mlkem_force_scalar */
static bool cpu_avx2;

/*
 * The butterflies of the last forward layers (len 8, 4, 2) and the first
 * inverse ones pair coefficients inside one vector. split() gathers, from
 * two vectors of 16 coefficients, the 16 first members of each pair into f
 * and the 16 second ones into s (lane i of f pairs with lane i of s);
 * merge() puts them back. Their zetas, per lane of s, come from running
 * split() on vectors of each coefficient's zeta (avx2_init).
 */
/* [forward, inverse][len 8, 4, 2][pair of vectors][zeta, zeta * QINV] */
static _Alignas(32) int16_t split_zetas[2][3][N / 32][2][16];
static _Alignas(32) int16_t zetas_qinv[128];          /* zetas[i] * QINV mod 2^16 */
static _Alignas(32) int16_t mul_zetas[N / 16][2][16]; /* basemul's zeta on odd lanes, and *QINV */
static _Alignas(16) uint8_t rej_shuffle[256][16];     /* the accepted lanes of a mask, packed */

AVX2 static inline void split(int layer, __m256i *a, __m256i *b)
{
	__m256i x = *a, y = *b;

	switch (layer) {
	case 0: /* len 8: the 128-bit halves */
		*a = _mm256_permute2x128_si256(x, y, 0x20);
		*b = _mm256_permute2x128_si256(x, y, 0x31);
		break;
	case 1: /* len 4: the 64-bit quarters */
		*a = _mm256_unpacklo_epi64(x, y);
		*b = _mm256_unpackhi_epi64(x, y);
		break;
	default: /* len 2: 32-bit words, first put in order 0 2 1 3 */
		x = _mm256_shuffle_epi32(x, 0xd8);
		y = _mm256_shuffle_epi32(y, 0xd8);
		*a = _mm256_unpacklo_epi64(x, y);
		*b = _mm256_unpackhi_epi64(x, y);
		break;
	}
}

AVX2 static inline void merge(int layer, __m256i *f, __m256i *s)
{
	__m256i x = *f, y = *s;

	switch (layer) {
	case 0:
		*f = _mm256_permute2x128_si256(x, y, 0x20);
		*s = _mm256_permute2x128_si256(x, y, 0x31);
		break;
	case 1:
		*f = _mm256_unpacklo_epi64(x, y);
		*s = _mm256_unpackhi_epi64(x, y);
		break;
	default:
		*f = _mm256_shuffle_epi32(_mm256_unpacklo_epi64(x, y), 0xd8);
		*s = _mm256_shuffle_epi32(_mm256_unpackhi_epi64(x, y), 0xd8);
		break;
	}
}

/* fqmul lane by lane, b's QINV multiple given: bq = b * QINV mod 2^16. */
AVX2 static inline __m256i fqmul_v(__m256i a, __m256i b, __m256i bq)
{
	__m256i t = _mm256_mullo_epi16(a, bq);

	return _mm256_sub_epi16(_mm256_mulhi_epi16(a, b),
	                        _mm256_mulhi_epi16(t, _mm256_set1_epi16(Q)));
}

AVX2 static inline __m256i fqmul_vv(__m256i a, __m256i b)
{
	return fqmul_v(a, b, _mm256_mullo_epi16(b, _mm256_set1_epi16(QINV)));
}

AVX2 static inline __m256i barrett_v(__m256i a)
{
	__m256i t = _mm256_mulhi_epi16(a, _mm256_set1_epi16(BARRETT_V));

	t = _mm256_srai_epi16(_mm256_add_epi16(t, _mm256_set1_epi16(1 << 9)), 10);
	return _mm256_sub_epi16(a, _mm256_mullo_epi16(t, _mm256_set1_epi16(Q)));
}

AVX2 static inline __m256i load16(const int16_t *p)
{
	return _mm256_loadu_si256((const __m256i *)p);
}

AVX2 static inline void store16(int16_t *p, __m256i v)
{
	_mm256_storeu_si256((__m256i *)p, v);
}

AVX2 static void poly_reduce_avx2(struct poly *r)
{
	for (int i = 0; i < N; i += 16)
		store16(r->c + i, barrett_v(load16(r->c + i)));
}

AVX2 static void poly_add_avx2(struct poly *r, const struct poly *a)
{
	for (int i = 0; i < N; i += 16)
		store16(r->c + i, _mm256_add_epi16(load16(r->c + i), load16(a->c + i)));
}

AVX2 static void poly_sub_avx2(struct poly *r, const struct poly *a, const struct poly *b)
{
	for (int i = 0; i < N; i += 16)
		store16(r->c + i, _mm256_sub_epi16(load16(a->c + i), load16(b->c + i)));
}

/* Every coefficient times the constant c (a Montgomery product). */
AVX2 static void poly_fqmul_avx2(struct poly *r, int16_t c)
{
	__m256i z = _mm256_set1_epi16(c), zq = _mm256_set1_epi16((int16_t)(c * QINV));

	for (int i = 0; i < N; i += 16)
		store16(r->c + i, fqmul_v(load16(r->c + i), z, zq));
}

/* Algorithm 9 as ntt(): the layers of len >= 16 on whole vectors, the rest split. */
AVX2 static void ntt_avx2(struct poly *r)
{
	int16_t *c = r->c;
	unsigned k = 1;

	for (unsigned len = 128; len >= 16; len >>= 1) {
		for (unsigned start = 0; start < N; start += 2 * len, k++) {
			__m256i z = _mm256_set1_epi16(zetas[k]),
			        zq = _mm256_set1_epi16(zetas_qinv[k]);

			for (unsigned j = start; j < start + len; j += 16) {
				__m256i a = load16(c + j), t = fqmul_v(load16(c + j + len), z, zq);

				store16(c + j + len, _mm256_sub_epi16(a, t));
				store16(c + j, _mm256_add_epi16(a, t));
			}
		}
	}
	/* len 8, 4 and 2 stay inside 32 coefficients: all three per pair of vectors */
	for (int p = 0; p < N / 32; p++) {
		__m256i f = load16(c + 32 * p), s = load16(c + 32 * p + 16);

		for (int l = 0; l < 3; l++) {
			const int16_t *z = split_zetas[0][l][p][0], *zq = split_zetas[0][l][p][1];
			__m256i t;

			split(l, &f, &s);
			t = fqmul_v(s, load16(z), load16(zq));
			s = _mm256_sub_epi16(f, t);
			f = _mm256_add_epi16(f, t);
			merge(l, &f, &s);
		}
		store16(c + 32 * p, f);
		store16(c + 32 * p + 16, s);
	}
	poly_reduce_avx2(r);
}

/* Algorithm 10 as invntt_tomont(), the same reductions at the same layers. */
AVX2 static void invntt_avx2(struct poly *r)
{
	int16_t *c = r->c;

	for (int p = 0; p < N / 32; p++) {
		__m256i f = load16(c + 32 * p), s = load16(c + 32 * p + 16);

		for (int l = 2; l >= 0; l--) {
			const int16_t *z = split_zetas[1][l][p][0], *zq = split_zetas[1][l][p][1];
			__m256i t;

			split(l, &f, &s);
			t = f;
			f = _mm256_add_epi16(t, s);
			s = fqmul_v(_mm256_sub_epi16(s, t), load16(z), load16(zq));
			merge(l, &f, &s);
		}
		store16(c + 32 * p, f);
		store16(c + 32 * p + 16, s);
	}
	for (unsigned len = 16; len <= 128; len <<= 1) {
		unsigned k = 256 / len - 1;

		for (unsigned start = 0; start < N; start += 2 * len, k--) {
			__m256i z = _mm256_set1_epi16(zetas[k]),
			        zq = _mm256_set1_epi16(zetas_qinv[k]);

			for (unsigned j = start; j < start + len; j += 16) {
				__m256i a = load16(c + j), b = load16(c + j + len);

				store16(c + j, _mm256_add_epi16(a, b));
				store16(c + j + len, fqmul_v(_mm256_sub_epi16(b, a), z, zq));
			}
		}
		if (len == 16)
			poly_reduce_avx2(r);
	}
	poly_fqmul_avx2(r, 1441);
}

/*
 * Algorithm 11 accumulated, as polyvec_basemul_acc(), on interleaved pairs
 * (c0 on even lanes, c1 on odd): p = a * b lane by lane gives a0 b0 and
 * a1 b1, x = a * (b with its pairs swapped) gives a0 b1 and a1 b0; then
 * w = p * zeta on odd lanes, and the halves of each 32-bit word are summed.
 */
AVX2 static void basemul_acc_avx2(struct poly *r, const struct polyvec *a, const struct polyvec *b)
{
	const __m256i swap = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
	                                      2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);

	for (int v = 0; v < N / 16; v++) {
		__m256i acc = _mm256_setzero_si256();

		for (int i = 0; i < K; i++) {
			__m256i x = load16(a->p[i].c + 16 * v), y = load16(b->p[i].c + 16 * v);
			__m256i p = fqmul_vv(x, y), s = fqmul_vv(x, _mm256_shuffle_epi8(y, swap));
			__m256i w = fqmul_v(p, load16(mul_zetas[v][0]), load16(mul_zetas[v][1]));
			__m256i even = _mm256_add_epi16(p, _mm256_srli_epi32(w, 16));
			__m256i odd = _mm256_add_epi16(s, _mm256_slli_epi32(s, 16));

			acc = _mm256_add_epi16(acc, _mm256_blend_epi16(even, odd, 0xaa));
		}
		store16(r->c + 16 * v, barrett_v(acc));
	}
}

static unsigned rej_uniform_scalar(struct poly *r, unsigned n, const uint8_t *b, size_t len);

/*
 * rej_uniform 24 bytes (16 candidates) at a time while 16 slots remain:
 * the candidates below q are packed by a shuffle looked up from their
 * mask, which is public (A is sampled from rho). The rest in scalar.
 */
AVX2 static unsigned rej_uniform_avx2(struct poly *r, unsigned n, const uint8_t *b, size_t len)
{
	/* candidate j of a half: bytes 3 (j / 2) + (j & 1) and the next; the upper half is 4 in */
	const __m256i bytes = _mm256_setr_epi8(0, 1, 1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9, 10, 10, 11, 4,
	                                       5, 5, 6, 7, 8, 8, 9, 10, 11, 11, 12, 13, 14, 14, 15);
	size_t i = 0;

	for (; i + 24 <= len && n + 16 <= N; i += 24) {
		/* two 16-byte loads, so that nothing past b[len) is read */
		__m256i v = _mm256_inserti128_si256(
		    _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(b + i))),
		    _mm_loadu_si128((const __m128i *)(b + i + 8)), 1);
		__m256i ok;
		unsigned mask, m0, m1;

		v = _mm256_shuffle_epi8(v, bytes);
		v = _mm256_blend_epi16(_mm256_and_si256(v, _mm256_set1_epi16(0xfff)),
		                       _mm256_srli_epi16(v, 4), 0xaa);
		ok = _mm256_cmpgt_epi16(_mm256_set1_epi16(Q), v);
		mask = (unsigned)_mm256_movemask_epi8(_mm256_packs_epi16(ok, ok));
		m0 = mask & 0xff;
		m1 = (mask >> 16) & 0xff;
		_mm_storeu_si128(
		    (__m128i *)(r->c + n),
		    _mm_shuffle_epi8(_mm256_castsi256_si128(v),
		                     _mm_load_si128((const __m128i *)rej_shuffle[m0])));
		n += (unsigned)__builtin_popcount(m0);
		_mm_storeu_si128(
		    (__m128i *)(r->c + n),
		    _mm_shuffle_epi8(_mm256_extracti128_si256(v, 1),
		                     _mm_load_si128((const __m128i *)rej_shuffle[m1])));
		n += (unsigned)__builtin_popcount(m1);
	}
	return rej_uniform_scalar(r, n, b + i, len - i);
}

/* Each split layer's zetas, by running split() on each coefficient's zeta. */
AVX2 static void split_zetas_init(void)
{
	for (int inv = 0; inv < 2; inv++) {
		for (int l = 0; l < 3; l++) {
			unsigned len = 8u >> l;

			for (int p = 0; p < N / 32; p++) {
				int16_t z[2][32];
				__m256i f, s, fq, sq;

				for (unsigned i = 0; i < 32; i++) {
					unsigned g = (32 * p + i) / (2 * len);
					unsigned k = inv ? 256 / len - 1 - g : 128 / len + g;

					z[0][i] = zetas[k];
					z[1][i] = zetas_qinv[k];
				}
				f = load16(z[0]);
				s = load16(z[0] + 16);
				fq = load16(z[1]);
				sq = load16(z[1] + 16);
				split(l, &f, &s);
				split(l, &fq, &sq);
				store16(split_zetas[inv][l][p][0], s);
				store16(split_zetas[inv][l][p][1], sq);
			}
		}
	}
}

static void avx2_init(void)
{
	for (int k = 0; k < 128; k++)
		zetas_qinv[k] = (int16_t)(zetas[k] * QINV);
	for (int m = 0; m < N / 2; m++) {
		mul_zetas[m / 8][0][2 * (m % 8) + 1] = zetas_mul[m];
		mul_zetas[m / 8][1][2 * (m % 8) + 1] = (int16_t)(zetas_mul[m] * QINV);
	}
	for (unsigned mask = 0; mask < 256; mask++) {
		unsigned n = 0;

		memset(rej_shuffle[mask], 0x80, 16); /* 0x80: a zero byte */
		for (unsigned j = 0; j < 8; j++)
			if (mask >> j & 1) {
				rej_shuffle[mask][2 * n] = (uint8_t)(2 * j);
				rej_shuffle[mask][2 * n + 1] = (uint8_t)(2 * j + 1);
				n++;
			}
	}
	cpu_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
	if (cpu_avx2)
		split_zetas_init();
	use_avx2 = cpu_avx2;
}

/* Runs call and returns from the calling function when the AVX2 path is on. */
#define AVX2_PATH(call)                                                                            \
	do {                                                                                       \
		if (use_avx2) {                                                                    \
			call;                                                                      \
			return;                                                                    \
		}                                                                                  \
	} while (0)
#else
static void avx2_init(void)
{
}
#define AVX2_PATH(call) ((void)0)
#endif

/* ---- arithmetic mod q ---- */

/* The high half of a 16x16-bit product: one vector multiply-high per lane. */
static int16_t mulhi(int16_t a, int16_t b)
{
	return (int16_t)(((int32_t)a * b) >> 16);
}

/*
 * a mod q, centered in [-(q-1)/2, (q-1)/2]: t = round(a * 2^26 / q / 2^26),
 * the 2^-26 taken as a high half (2^-16) and a rounded shift by 10, so
 * the lanes stay 16 bits wide.
 */
static int16_t barrett_reduce(int16_t a)
{
	int16_t t = (int16_t)((mulhi(a, BARRETT_V) + (1 << 9)) >> 10);

	return (int16_t)(a - t * Q);
}

/*
 * a * b * R^-1 mod q in (-q, q) for |a * b| < q * 2^15 (Montgomery), in
 * 16-bit lanes only, so that the compiler can vectorise the loops that use it: a * b - t * q has a
 * zero low half, so its high half is high(a * b) - high(t * q) with no borrow. Same values.
 */
static int16_t fqmul(int16_t a, int16_t b)
{
	int16_t t = (int16_t)((int16_t)(a * b) * QINV);

	return (int16_t)(mulhi(a, b) - mulhi(t, Q));
}

/* A centered representative to [0, q), without a branch: add q where the sign bit is set. */
static uint16_t to_unsigned(int16_t a)
{
	a = barrett_reduce(a);
	return (uint16_t)(a + ((a >> 15) & Q));
}

static void poly_reduce(struct poly *r)
{
	AVX2_PATH(poly_reduce_avx2(r));
	for (int i = 0; i < N; i++)
		r->c[i] = barrett_reduce(r->c[i]);
}

static void poly_add(struct poly *r, const struct poly *a)
{
	AVX2_PATH(poly_add_avx2(r, a));
	for (int i = 0; i < N; i++)
		r->c[i] = (int16_t)(r->c[i] + a->c[i]);
}

static void poly_sub(struct poly *r, const struct poly *a, const struct poly *b)
{
	AVX2_PATH(poly_sub_avx2(r, a, b));
	for (int i = 0; i < N; i++)
		r->c[i] = (int16_t)(a->c[i] - b->c[i]);
}

/* Multiply by R (R^2 mod q = 1353, then one reduction): undoes a basemul's R^-1. */
static void poly_tomont(struct poly *r)
{
	AVX2_PATH(poly_fqmul_avx2(r, 1353));
	for (int i = 0; i < N; i++)
		r->c[i] = fqmul(r->c[i], 1353);
}

/* ---- NTT (Algorithms 9, 10, 11, 12) ---- */

/* Algorithm 9, in place; the output is in bit-reversed order, |coefficients| < 8q. */
static void ntt(struct poly *r)
{
	unsigned k = 1;

	AVX2_PATH(ntt_avx2(r));

	for (unsigned len = 128; len >= 2; len >>= 1) {
		for (unsigned start = 0; start < N; start += 2 * len) {
			int16_t zeta = zetas[k++];

			for (unsigned j = start; j < start + len; j++) {
				int16_t t = fqmul(zeta, r->c[j + len]);

				r->c[j + len] = (int16_t)(r->c[j] - t);
				r->c[j] = (int16_t)(r->c[j] + t);
			}
		}
	}
	poly_reduce(r);
}

/*
 * Algorithm 10, in place, times R: the final scaling by 1441 = R^2 / 128 mod
 * q divides by 128 and leaves a factor R that cancels the R^-1 of the
 * basemul that came before. Going down the table with (b - a) * zeta is the
 * same as (a - b) * zeta^-1, since 17^128 = -1.
 *
 * The input is reduced (|c| <= q/2: every caller passes a basemul's
 * output). A butterfly's difference leaves its multiplication below q and
 * its sum adds the bounds, so they at most double a layer: q/2, q, 2q, 4q,
 * 8q after four layers, one reduction back to q/2, then q, 2q, 4q. 8q and
 * every difference stay inside int16, and fqmul takes any int16 times a
 * zeta. The values differ from a reduction per layer only by multiples of
 * q: callers bring them to [0, q) before they are encoded.
 */
static void invntt_tomont(struct poly *r)
{
	unsigned k = 127;

	AVX2_PATH(invntt_avx2(r));

	for (unsigned len = 2; len <= 128; len <<= 1) {
		for (unsigned start = 0; start < N; start += 2 * len) {
			int16_t zeta = zetas[k--];

			for (unsigned j = start; j < start + len; j++) {
				int16_t t = r->c[j];

				r->c[j] = (int16_t)(t + r->c[j + len]);
				r->c[j + len] = fqmul(zeta, (int16_t)(r->c[j + len] - t));
			}
		}
		if (len == 16)
			poly_reduce(r);
	}
	for (int j = 0; j < N; j++)
		r->c[j] = fqmul(r->c[j], 1441);
}

/*
 * Algorithm 11, accumulated: r = sum a[i] * b[i] in the NTT domain, times
 * R^-1. Pair m holds (c0 + c1 X) mod X^2 - zeta_m with zeta_m =
 * +-17^(2 BitRev7(m/2) + 1) (Algorithm 12); one pass over the pairs with a
 * table of the 128 zetas keeps the loop vectorisable.
 */
static void polyvec_basemul_acc(struct poly *r, const struct polyvec *a, const struct polyvec *b)
{
	AVX2_PATH(basemul_acc_avx2(r, a, b));
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < K; i++) {
		const int16_t *pa = a->p[i].c, *pb = b->p[i].c;

		for (int m = 0; m < N / 2; m++) {
			int16_t a0 = pa[2 * m], a1 = pa[2 * m + 1], b0 = pb[2 * m],
			        b1 = pb[2 * m + 1];

			r->c[2 * m] = (int16_t)(r->c[2 * m] + fqmul(fqmul(a1, b1), zetas_mul[m]) +
			                        fqmul(a0, b0));
			r->c[2 * m + 1] =
			    (int16_t)(r->c[2 * m + 1] + fqmul(a0, b1) + fqmul(a1, b0));
		}
	}
	poly_reduce(r);
}

static void polyvec_ntt(struct polyvec *v)
{
	for (int i = 0; i < K; i++)
		ntt(&v->p[i]);
}

/* ---- encodings and compression (§4.2.1, Algorithms 5 and 6) ---- */

/* ByteEncode12 of one polynomial, coefficients first brought into [0, q). */
static void poly_tobytes(uint8_t r[POLY_BYTES], const struct poly *a)
{
	for (int i = 0; i < N / 2; i++) {
		uint16_t t0 = to_unsigned(a->c[2 * i]), t1 = to_unsigned(a->c[2 * i + 1]);

		r[3 * i] = (uint8_t)t0;
		r[3 * i + 1] = (uint8_t)(t0 >> 8 | t1 << 4);
		r[3 * i + 2] = (uint8_t)(t1 >> 4);
	}
}

/* ByteDecode12 without the reduction mod q: values up to 4095 (dk's s; ek is checked first). */
static void poly_frombytes(struct poly *r, const uint8_t a[POLY_BYTES])
{
	for (int i = 0; i < N / 2; i++) {
		r->c[2 * i] = (int16_t)((a[3 * i] | a[3 * i + 1] << 8) & 0xfff);
		r->c[2 * i + 1] = (int16_t)((a[3 * i + 1] >> 4 | a[3 * i + 2] << 4) & 0xfff);
	}
}

static void polyvec_tobytes(uint8_t r[VEC_BYTES], const struct polyvec *v)
{
	for (int i = 0; i < K; i++)
		poly_tobytes(r + i * POLY_BYTES, &v->p[i]);
}

static void polyvec_frombytes(struct polyvec *v, const uint8_t a[VEC_BYTES])
{
	for (int i = 0; i < K; i++)
		poly_frombytes(&v->p[i], a + i * POLY_BYTES);
}

/*
 * Compress_d(x) = round(2^d x / q) mod 2^d for x in [0, q). The division
 * by q is a multiplication by ceil(2^32 / q) and a shift, exact for every
 * numerator below 2^23: a divide instruction's time can depend on its
 * operands (KyberSlash), and x is secret.
 */
static uint32_t compress(uint16_t x, unsigned d)
{
	uint64_t num = ((uint64_t)x << d) + Q / 2;

	return (uint32_t)((num * 1290168) >> 32) & ((1u << d) - 1);
}

/* Decompress_d(y) = round(q y / 2^d). */
static int16_t decompress(uint32_t y, unsigned d)
{
	return (int16_t)((y * Q + (1u << (d - 1))) >> d);
}

/*
 * ByteEncode_10(Compress_10(a)): four coefficients in five bytes,
 * little-endian; compressed in one loop and packed in another, so the
 * first vectorises.
 */
static void poly_compress10(uint8_t *r, const struct poly *a)
{
	uint16_t t[N];

	for (int i = 0; i < N; i++)
		t[i] = (uint16_t)compress(to_unsigned(a->c[i]), DU);
	for (int i = 0; i < N / 4; i++, r += 5) {
		const uint16_t *u = t + 4 * i;

		r[0] = (uint8_t)u[0];
		r[1] = (uint8_t)(u[0] >> 8 | u[1] << 2);
		r[2] = (uint8_t)(u[1] >> 6 | u[2] << 4);
		r[3] = (uint8_t)(u[2] >> 4 | u[3] << 6);
		r[4] = (uint8_t)(u[3] >> 2);
	}
	sodium_memzero(t, sizeof(t));
}

/* ByteEncode_4(Compress_4(a)): two coefficients a byte, the first in the low half. */
static void poly_compress4(uint8_t *r, const struct poly *a)
{
	for (int i = 0; i < N / 2; i++)
		r[i] = (uint8_t)(compress(to_unsigned(a->c[2 * i]), DV) |
		                 compress(to_unsigned(a->c[2 * i + 1]), DV) << 4);
}

/* Decompress_d(ByteDecode_d(a)): the ciphertext is public. */
static void poly_decompress(struct poly *r, const uint8_t *a, unsigned d)
{
	uint32_t acc = 0;
	unsigned bits = 0;

	for (int i = 0; i < N; i++) {
		while (bits < d) {
			acc |= (uint32_t)*a++ << bits;
			bits += 8;
		}
		r->c[i] = decompress(acc & ((1u << d) - 1), d);
		acc >>= d;
		bits -= d;
	}
}

/* Decompress_1(ByteDecode_1(m)): bit 1 -> 1665 = round(q / 2), with a mask, not a branch. */
static void poly_frommsg(struct poly *r, const uint8_t m[SYM])
{
	for (int i = 0; i < N; i++) {
		int16_t bit = (int16_t)((m[i / 8] >> (i % 8)) & 1);

		r->c[i] = (int16_t)(-bit & ((Q + 1) / 2));
	}
}

/* ByteEncode_1(Compress_1(a)). */
static void poly_tomsg(uint8_t m[SYM], const struct poly *a)
{
	memset(m, 0, SYM);
	for (int i = 0; i < N; i++)
		m[i / 8] |= (uint8_t)(compress(to_unsigned(a->c[i]), 1) << (i % 8));
}

/* ---- sampling (Algorithms 7 and 8) ---- */

/* Rejection sampling over bytes b[0..len) into r from *n on; returns the new count. */
static unsigned rej_uniform_scalar(struct poly *r, unsigned n, const uint8_t *b, size_t len)
{
	size_t i = 0;

	/*
	 * While two slots remain, both candidates are stored and counted only
	 * when below q: one in five is not, too often for a branch to predict.
	 * A refused one is overwritten by the next. A is public (rho).
	 */
	for (; i + 3 <= len && n + 2 <= N; i += 3) {
		uint16_t d1 = (uint16_t)(b[i] | (b[i + 1] & 0x0f) << 8);
		uint16_t d2 = (uint16_t)(b[i + 1] >> 4 | b[i + 2] << 4);

		r->c[n] = (int16_t)d1;
		n += d1 < Q;
		r->c[n] = (int16_t)d2;
		n += d2 < Q;
	}
	for (; i + 3 <= len && n < N; i += 3) {
		uint16_t d1 = (uint16_t)(b[i] | (b[i + 1] & 0x0f) << 8);
		uint16_t d2 = (uint16_t)(b[i + 1] >> 4 | b[i + 2] << 4);

		if (d1 < Q)
			r->c[n++] = (int16_t)d1;
		if (d2 < Q && n < N)
			r->c[n++] = (int16_t)d2;
	}
	return n;
}

static unsigned rej_uniform(struct poly *r, unsigned n, const uint8_t *b, size_t len)
{
#ifdef DUST_MLKEM_AVX2
	if (use_avx2)
		return rej_uniform_avx2(r, n, b, len);
#endif
	return rej_uniform_scalar(r, n, b, len);
}

/*
 * Algorithm 7, four at a time: r[l] = SampleNTT(rho || idx[l]), SHAKE128
 * squeezed one block per step in all four lanes until each has 256
 * coefficients (three blocks about 99% of the time; every triple of a
 * block is read, 168 being a multiple of 3). Twelve blocks, 1344
 * candidates with fewer than 256 below q, never happen in practice.
 */
static bool sample_ntt4(struct poly *r[4], const uint8_t rho[SYM], const uint8_t idx[4][2])
{
	uint8_t in[4][SYM + 2], buf[4][XOF_BLOCK], *out[4] = {buf[0], buf[1], buf[2], buf[3]};
	unsigned n[4] = {0};
	lane4 s[25];

	for (int l = 0; l < 4; l++) {
		memcpy(in[l], rho, SYM);
		memcpy(in[l] + SYM, idx[l], 2);
	}
	sponge4_start(s, &shake128, in, SYM + 2);
	for (int block = 0; block < 12; block++) {
		bool done = true;

		if (block > 0)
			keccak_f4(s);
		sponge4_out(s, out, XOF_BLOCK);
		for (int l = 0; l < 4; l++) {
			n[l] = rej_uniform(r[l], n[l], buf[l], XOF_BLOCK);
			done &= n[l] == N;
		}
		if (done)
			return true;
	}
	return false;
}

/*
 * Â with a[i][j] = SampleNTT(rho || j || i), or its transpose: nine
 * polynomials in three four-way batches, the last with three spare lanes.
 */
static bool gen_matrix(struct polyvec a[K], const uint8_t rho[SYM], bool transposed)
{
	struct poly spare;
	struct poly *r[4];
	uint8_t idx[4][2];
	bool ok = true;

	for (int e = 0; e < 12; e += 4) {
		for (int l = 0; l < 4; l++) {
			int i = (e + l) / K, j = (e + l) % K;

			r[l] = e + l < K * K ? &a[i].p[j] : &spare;
			idx[l][0] = (uint8_t)(transposed ? i : j);
			idx[l][1] = (uint8_t)(transposed ? j : i);
		}
		ok = ok && sample_ntt4(r, rho, idx);
	}
	return ok;
}

/* Algorithm 8 for eta = 2 on 128 bytes of PRF output. */
static void cbd2(struct poly *r, const uint8_t buf[64 * ETA])
{
	/* Each coefficient: (two bits summed) - (the next two summed), all in one word. */
	for (int i = 0; i < N / 8; i++) {
		uint32_t t = le32_get(buf + 4 * i);
		uint32_t d = (t & 0x55555555) + ((t >> 1) & 0x55555555);

		for (int j = 0; j < 8; j++) {
			int16_t a = (int16_t)((d >> (4 * j)) & 3),
			        b = (int16_t)((d >> (4 * j + 2)) & 3);

			r->c[8 * i + j] = (int16_t)(a - b);
		}
	}
}

/*
 * r[0..count) = CBD_2(PRF_2(seed, nonce + i)), PRF_2 = SHAKE256(seed ||
 * nonce, 128 bytes) fits one block: four polynomials per permutation.
 */
static void sample_noise(struct poly *const *r, int count, const uint8_t seed[SYM], uint8_t nonce)
{
	uint8_t in[4][SYM + 2], buf[4][64 * ETA], *out[4] = {buf[0], buf[1], buf[2], buf[3]};
	lane4 s[25];

	for (int e = 0; e < count; e += 4) {
		for (int l = 0; l < 4; l++) {
			memcpy(in[l], seed, SYM);
			in[l][SYM] = (uint8_t)(nonce + e + l);
		}
		sponge4_start(s, &shake256, in, SYM + 1);
		sponge4_out(s, out, sizeof(buf[0]));
		for (int l = 0; l < 4 && e + l < count; l++)
			cbd2(r[e + l], buf[l]);
	}
	sodium_memzero(in, sizeof(in));
	sodium_memzero(buf, sizeof(buf));
	sodium_memzero(s, sizeof(s));
}

/* ---- K-PKE (Algorithms 13, 14, 15) ---- */

/* Algorithm 13 from (rho, sigma) = G(d || k): writes ek_PKE and dk_PKE. */
static bool pke_keygen(uint8_t ek[DUST_MLKEM768_EKBYTES], uint8_t dkp[VEC_BYTES],
                       const uint8_t d[SYM])
{
	uint8_t in[SYM + 1], rs[2 * SYM]; /* rho || sigma */
	struct polyvec a[K], s, e, t;
	bool ok;

	memcpy(in, d, SYM);
	in[SYM] = K; /* FIPS 203 final: k is hashed with d (domain separation) */
	hash2(&sha3_512, in, sizeof(in), NULL, 0, rs, sizeof(rs));
	declassify(rs, SYM); /* rho is public: it is the end of ek */
	ok = gen_matrix(a, rs, false);
	sample_noise((struct poly *[]){&s.p[0], &s.p[1], &s.p[2], &e.p[0], &e.p[1], &e.p[2]}, 2 * K,
	             rs + SYM, 0);
	if (ok) {
		polyvec_ntt(&s);
		polyvec_ntt(&e);
		for (int i = 0; i < K; i++) {
			polyvec_basemul_acc(&t.p[i], &a[i], &s);
			poly_tomont(&t.p[i]);
			poly_add(&t.p[i], &e.p[i]);
			poly_reduce(&t.p[i]);
		}
		polyvec_tobytes(ek, &t);
		memcpy(ek + VEC_BYTES, rs, SYM);
		polyvec_tobytes(dkp, &s);
	}
	sodium_memzero(in, sizeof(in));
	sodium_memzero(rs, sizeof(rs));
	sodium_memzero(&s, sizeof(s));
	sodium_memzero(&e, sizeof(e));
	sodium_memzero(&t, sizeof(t)); /* t is public, but it was summed with e here */
	return ok;
}

/* The secrets of one encryption, wiped in one place. */
struct pke_tmp {
	struct polyvec a[K], tv, y, e1, u;
	struct poly e2, v, mu;
};

/* Algorithm 14: ct = K-PKE.Encrypt(ek, m, r); ek has passed the modulus check. */
static bool pke_encrypt(uint8_t ct[DUST_MLKEM768_CTBYTES], const uint8_t ek[DUST_MLKEM768_EKBYTES],
                        const uint8_t m[SYM], const uint8_t r[SYM])
{
	struct pke_tmp *w = &(struct pke_tmp){0};
	bool ok;

	polyvec_frombytes(&w->tv, ek);
	ok = gen_matrix(w->a, ek + VEC_BYTES, true);
	sample_noise((struct poly *[]){&w->y.p[0], &w->y.p[1], &w->y.p[2], &w->e1.p[0], &w->e1.p[1],
	                               &w->e1.p[2], &w->e2},
	             2 * K + 1, r, 0);
	if (ok) {
		polyvec_ntt(&w->y);
		for (int i = 0; i < K; i++) { /* u = NTT^-1(Â^T y) + e1 */
			polyvec_basemul_acc(&w->u.p[i], &w->a[i], &w->y);
			invntt_tomont(&w->u.p[i]);
			poly_add(&w->u.p[i], &w->e1.p[i]);
		}
		polyvec_basemul_acc(&w->v, &w->tv, &w->y); /* v = NTT^-1(t^T y) + e2 + mu */
		invntt_tomont(&w->v);
		poly_frommsg(&w->mu, m);
		poly_add(&w->v, &w->e2);
		poly_add(&w->v, &w->mu);
		for (int i = 0; i < K; i++)
			poly_compress10(ct + i * (N * DU / 8), &w->u.p[i]);
		poly_compress4(ct + C1_BYTES, &w->v);
	}
	sodium_memzero(w, sizeof(*w));
	return ok;
}

/* Algorithm 15: m = K-PKE.Decrypt(dk_PKE, ct). */
static void pke_decrypt(uint8_t m[SYM], const uint8_t dkp[VEC_BYTES],
                        const uint8_t ct[DUST_MLKEM768_CTBYTES])
{
	struct polyvec u, s;
	struct poly v, w;

	for (int i = 0; i < K; i++)
		poly_decompress(&u.p[i], ct + i * (N * DU / 8), DU);
	poly_decompress(&v, ct + C1_BYTES, DV);
	polyvec_frombytes(&s, dkp);
	polyvec_ntt(&u);
	polyvec_basemul_acc(&w, &s, &u); /* w = v - NTT^-1(s^T NTT(u)) */
	invntt_tomont(&w);
	poly_sub(&w, &v, &w);
	poly_tomsg(m, &w);
	sodium_memzero(&s, sizeof(s));
	sodium_memzero(&w, sizeof(w));
	sodium_memzero(&u, sizeof(u)); /* public, but multiplied by s */
}

/* ---- ML-KEM (Algorithms 16 to 21) ---- */

/* §7.2's modulus check: every 12-bit value of ek's t below q. ek is public: branches are fine. */
static bool ek_check(const uint8_t ek[DUST_MLKEM768_EKBYTES])
{
	for (int i = 0; i < VEC_BYTES; i += 3) {
		unsigned a = ek[i] | (ek[i + 1] & 0x0f) << 8, b = ek[i + 1] >> 4 | ek[i + 2] << 4;

		if (a >= Q || b >= Q)
			return false;
	}
	return true;
}

DUST_EXPORT int dust_mlkem768_keypair_derand(uint8_t ek[DUST_MLKEM768_EKBYTES],
                                             uint8_t dk[DUST_MLKEM768_DKBYTES],
                                             const uint8_t d[DUST_MLKEM768_SEEDBYTES],
                                             const uint8_t z[DUST_MLKEM768_SEEDBYTES])
{
	uint8_t *h = dk + 2 * VEC_BYTES + SYM;
	bool ok;

	tables_init();
	ok = pke_keygen(ek, dk, d);
	/* dk = dk_PKE || ek || H(ek) || z (Algorithm 16) */
	if (ok) {
		hash2(&sha3_256, ek, DUST_MLKEM768_EKBYTES, NULL, 0, h, SYM);
		memcpy(dk + VEC_BYTES, ek, DUST_MLKEM768_EKBYTES);
		memcpy(h + SYM, z, SYM);
	} else {
		sodium_memzero(ek, DUST_MLKEM768_EKBYTES);
		sodium_memzero(dk, DUST_MLKEM768_DKBYTES);
	}
	return ok ? 0 : -1;
}

DUST_EXPORT int dust_mlkem768_keypair(uint8_t ek[DUST_MLKEM768_EKBYTES],
                                      uint8_t dk[DUST_MLKEM768_DKBYTES], struct dust_rng *rng)
{
	uint8_t dz[2 * SYM];
	int rc;

	dust_rng_bytes(rng, dz, sizeof(dz));
	rc = dust_mlkem768_keypair_derand(ek, dk, dz, dz + SYM);
	sodium_memzero(dz, sizeof(dz));
	return rc;
}

DUST_EXPORT int dust_mlkem768_enc_derand(uint8_t ct[DUST_MLKEM768_CTBYTES],
                                         uint8_t ss[DUST_MLKEM768_SSBYTES],
                                         const uint8_t ek[DUST_MLKEM768_EKBYTES],
                                         const uint8_t m[DUST_MLKEM768_SEEDBYTES])
{
	uint8_t in[2 * SYM], kr[2 * SYM] = {0}; /* m || H(ek) -> K || r */
	bool ok = ek_check(ek);

	/* Algorithm 17: (K, r) = G(m || H(ek)), ct = K-PKE.Encrypt(ek, m, r) */
	tables_init();
	memcpy(in, m, SYM);
	if (ok) {
		hash2(&sha3_256, ek, DUST_MLKEM768_EKBYTES, NULL, 0, in + SYM, SYM);
		hash2(&sha3_512, in, sizeof(in), NULL, 0, kr, sizeof(kr));
		ok = pke_encrypt(ct, ek, m, kr + SYM);
	}
	if (ok) {
		memcpy(ss, kr, SYM);
	} else {
		sodium_memzero(ct, DUST_MLKEM768_CTBYTES);
		sodium_memzero(ss, DUST_MLKEM768_SSBYTES);
	}
	sodium_memzero(in, sizeof(in));
	sodium_memzero(kr, sizeof(kr));
	return ok ? 0 : -1;
}

DUST_EXPORT int dust_mlkem768_enc(uint8_t ct[DUST_MLKEM768_CTBYTES],
                                  uint8_t ss[DUST_MLKEM768_SSBYTES],
                                  const uint8_t ek[DUST_MLKEM768_EKBYTES], struct dust_rng *rng)
{
	uint8_t m[SYM];
	int rc;

	dust_rng_bytes(rng, m, sizeof(m));
	rc = dust_mlkem768_enc_derand(ct, ss, ek, m);
	sodium_memzero(m, sizeof(m));
	return rc;
}

/* All ones if a[0..n) == b[0..n), else zero; the loop runs to the end whatever it finds. */
static uint8_t ct_eq_mask(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint32_t diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= (uint32_t)(a[i] ^ b[i]);
	/* diff in [0, 255]: diff - 1 borrows into bit 31 only when diff is 0. */
	uint8_t mask = (uint8_t)(0 - ((diff - 1) >> 31));
	__asm__("" : "+r"(mask)); /* keep the compiler from turning the select into a branch */
	return mask;
}

_Static_assert(DUST_MLKEM768_EKBYTES / 136 == (SYM + DUST_MLKEM768_CTBYTES) / 136,
               "H(ek) and J(z || c) absorb the same number of whole blocks");

/* The secrets of one decapsulation, wiped in one place. */
struct dec_tmp {
	uint8_t mh[2 * SYM]; /* m' || h */
	uint8_t kr[2 * SYM]; /* K' || r' */
	uint8_t kbar[SYM];   /* J(z || c) */
	uint8_t hek[SYM];    /* H(ek), for §7.3's hash check */
	uint8_t zc[SYM + DUST_MLKEM768_CTBYTES];
	uint8_t ct2[DUST_MLKEM768_CTBYTES];
};

DUST_EXPORT int dust_mlkem768_dec(uint8_t ss[DUST_MLKEM768_SSBYTES],
                                  const uint8_t ct[DUST_MLKEM768_CTBYTES],
                                  const uint8_t dk[DUST_MLKEM768_DKBYTES])
{
	const uint8_t *ek = dk + VEC_BYTES, *h = ek + DUST_MLKEM768_EKBYTES, *z = h + SYM;
	struct dec_tmp *w = &(struct dec_tmp){{0}};
	bool ok;
	uint8_t eq;

	tables_init();
	/*
	 * §7.3's hash check (the H(ek) inside dk is the hash of the ek inside
	 * dk) and K̄ = J(z || c) of Algorithm 18, side by side: one rate (136),
	 * nine blocks each.
	 */
	memcpy(w->zc, z, SYM);
	memcpy(w->zc + SYM, ct, DUST_MLKEM768_CTBYTES);
	hash4((const struct hash_job[]){{&sha3_256, ek, DUST_MLKEM768_EKBYTES, w->hek, SYM},
	                                {&shake256, w->zc, sizeof(w->zc), w->kbar, SYM}},
	      2);
	ok = sodium_memcmp(w->hek, h, SYM) == 0;

	/* Algorithm 18: m' = Decrypt(dk_PKE, c); (K', r') = G(m' || h) */
	if (ok) {
		pke_decrypt(w->mh, dk, ct);
		memcpy(w->mh + SYM, h, SYM);
		hash2(&sha3_512, w->mh, sizeof(w->mh), NULL, 0, w->kr, sizeof(w->kr));
		ok = pke_encrypt(w->ct2, ek, w->mh, w->kr + SYM);
	}
	if (ok) {
		/* K' if the re-encryption gives c back, else K̄: a masked select, no branch */
		eq = ct_eq_mask(ct, w->ct2, DUST_MLKEM768_CTBYTES);
		for (int i = 0; i < SYM; i++)
			ss[i] = (uint8_t)(w->kbar[i] ^ (eq & (w->kr[i] ^ w->kbar[i])));
	} else {
		sodium_memzero(ss, DUST_MLKEM768_SSBYTES);
	}
	sodium_memzero(w, sizeof(*w));
	return ok ? 0 : -1;
}

/* ---- for the tests: the path switch and single steps ---- */

DUST_EXPORT bool dust_mlkem_force_scalar(bool scalar)
{
	tables_init();
#ifdef DUST_MLKEM_AVX2
	use_avx2 = cpu_avx2 && !scalar;
	return use_avx2;
#else
	(void)scalar;
	return false;
#endif
}

DUST_EXPORT unsigned dust_mlkem_step(enum dust_mlkem_step step, int16_t r[N], const int16_t *a,
                                     const int16_t *b, const uint8_t *bytes, size_t len, unsigned n)
{
	struct polyvec va, vb;
	struct poly p, q;

	tables_init();
	memcpy(p.c, a, sizeof(p.c));
	if (step == DUST_MLKEM_STEP_BASEMUL) {
		memcpy(&va, a, sizeof(va));
		memcpy(&vb, b, sizeof(vb));
	} else if (b) {
		memcpy(q.c, b, sizeof(q.c));
	}
	switch (step) {
	case DUST_MLKEM_STEP_NTT:
		ntt(&p);
		break;
	case DUST_MLKEM_STEP_INVNTT:
		invntt_tomont(&p);
		break;
	case DUST_MLKEM_STEP_BASEMUL:
		polyvec_basemul_acc(&p, &va, &vb);
		break;
	case DUST_MLKEM_STEP_REDUCE:
		poly_reduce(&p);
		break;
	case DUST_MLKEM_STEP_ADD:
		poly_add(&p, &q);
		break;
	case DUST_MLKEM_STEP_SUB:
		poly_sub(&p, &p, &q);
		break;
	case DUST_MLKEM_STEP_TOMONT:
		poly_tomont(&p);
		break;
	case DUST_MLKEM_STEP_REJ:
		n = rej_uniform(&p, n, bytes, len);
		break;
	}
	memcpy(r, p.c, sizeof(p.c));
	return step == DUST_MLKEM_STEP_REJ ? n : 0;
}
