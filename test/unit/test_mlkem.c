/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ML-KEM-768 (lib/dust/mlkem.c) against published vectors, byte for byte
 * (test/vectors/mlkem/README.md names their sources): NIST ACVP keyGen,
 * encapsulation and decapsulation (the latter with altered ciphertexts:
 * implicit rejection), C2SP's strcmp vectors (rejection where a strcmp
 * would stop at a zero byte), C2SP's 780 encapsulation keys with one
 * coefficient in [q, 4096) (refused). Then: implicit rejection recomputed
 * as J(z || c), the modulus check at q - 1 and q, the dk hash check, and
 * zeroed outputs on every failure.
 *
 * Every vector runs twice: on the AVX2 path where the CPU has it, then on
 * the scalar one (dust_mlkem_force_scalar). mlkem_paths_agree compares
 * the two paths' NTT, inverse NTT, basemul, coefficient-wise steps and
 * rejection sampling on random inputs.
 *
 * `test_mlkem --print N` prints N derandomised keygen/encaps/decaps results
 * for refmlkem.py, the independent Python ML-KEM, to compare.
 */
#include <openssl/evp.h>

#include "check.h"
#include "fixture.h"
#include "mlkem.h"

enum { EK = DUST_MLKEM768_EKBYTES, DK = DUST_MLKEM768_DKBYTES, CT = DUST_MLKEM768_CTBYTES };

/* One case of a 'name = hex' vector file: up to 8 fields. */
struct kat {
	char name[8][16];
	uint8_t *val[8];
	size_t len[8];
	int n;
	char op[32];
};

static const uint8_t *kat_get(const struct kat *k, const char *name, size_t want)
{
	for (int i = 0; i < k->n; i++)
		if (strcmp(k->name[i], name) == 0) {
			CHECK_EQ(k->len[i], want);
			return k->len[i] == want ? k->val[i] : NULL;
		}
	fprintf(stderr, "  no field %s\n", name);
	check_failures++;
	return NULL;
}

static void kat_clear(struct kat *k)
{
	for (int i = 0; i < k->n; i++)
		free(k->val[i]);
	memset(k, 0, sizeof(*k));
}

/* Read `name = value` lines; a blank line (or the end) hands the case to fn. Returns cases. */
static int kat_each(FILE *f, void (*fn)(const struct kat *))
{
	static char line[16384];
	struct kat k = {0};
	int cases = 0;

	for (;;) {
		char *eq, *got = fgets(line, sizeof(line), f);
		size_t l = got ? strcspn(line, "\r\n") : 0;

		line[l] = 0;
		if (l == 0 && k.n > 0) {
			fn(&k);
			cases++;
			kat_clear(&k);
		}
		if (!got)
			break;
		eq = strstr(line, " = ");
		if (l == 0 || line[0] == '#' || !eq || k.n == 8)
			continue;
		*eq = 0;
		if (strcmp(line, "op") == 0) {
			snprintf(k.op, sizeof(k.op), "%s", eq + 3);
			continue;
		}
		snprintf(k.name[k.n], sizeof(k.name[0]), "%s", line);
		k.len[k.n] = strlen(eq + 3) / 2;
		k.val[k.n] = malloc(k.len[k.n] + 1);
		CHECK(sodium_hex2bin(k.val[k.n], k.len[k.n], eq + 3, strlen(eq + 3), NULL, NULL,
		                     NULL) == 0);
		k.n++;
	}
	kat_clear(&k);
	return cases;
}

static FILE *vec_open(const char *file)
{
	const char *dir = getenv("DUST_MLKEM_VECTORS");
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "test/vectors/mlkem", file);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "  cannot open %s\n", path);
		check_failures++;
	}
	return f;
}

static int n_keygen, n_encaps, n_decaps;

static void acvp_case(const struct kat *k)
{
	uint8_t ek[EK], dk[DK], ct[CT], ss[32];

	if (strcmp(k->op, "keyGen") == 0) {
		const uint8_t *d = kat_get(k, "d", 32), *z = kat_get(k, "z", 32);
		const uint8_t *wek = kat_get(k, "ek", EK), *wdk = kat_get(k, "dk", DK);

		CHECK(d && z && wek && wdk && dust_mlkem768_keypair_derand(ek, dk, d, z) == 0);
		CHECK(wek && memcmp(ek, wek, EK) == 0);
		CHECK(wdk && memcmp(dk, wdk, DK) == 0);
		n_keygen++;
	} else if (strcmp(k->op, "encapsulation") == 0) {
		const uint8_t *wek = kat_get(k, "ek", EK), *m = kat_get(k, "m", 32);
		const uint8_t *wc = kat_get(k, "c", CT), *wk = kat_get(k, "k", 32);

		CHECK(wek && m && dust_mlkem768_enc_derand(ct, ss, wek, m) == 0);
		CHECK(wc && memcmp(ct, wc, CT) == 0);
		CHECK(wk && memcmp(ss, wk, 32) == 0);
		n_encaps++;
	} else if (strcmp(k->op, "decapsulation") == 0) {
		const uint8_t *wdk = kat_get(k, "dk", DK), *c = kat_get(k, "c", CT);
		const uint8_t *wk = kat_get(k, "k", 32);

		CHECK(wdk && c && dust_mlkem768_dec(ss, c, wdk) == 0);
		CHECK(wk && memcmp(ss, wk, 32) == 0);
		n_decaps++;
	}
}

/* NIST ACVP ML-KEM-768: 25 keyGen, 25 encapsulation, 10 decapsulation (some rejected). */
static void test_acvp(void)
{
	FILE *f = vec_open("acvp-768.txt");

	n_keygen = n_encaps = n_decaps = 0;
	if (!f)
		return;
	CHECK_EQ(kat_each(f, acvp_case), 60);
	fclose(f);
	CHECK_EQ(n_keygen, 25);
	CHECK_EQ(n_encaps, 25);
	CHECK_EQ(n_decaps, 10);
}

static void strcmp_case(const struct kat *k)
{
	const uint8_t *dk = kat_get(k, "dk", DK), *c = kat_get(k, "c", CT),
	              *wk = kat_get(k, "K", 32);
	uint8_t ss[32];

	CHECK(dk && c && dust_mlkem768_dec(ss, c, dk) == 0);
	CHECK(wk && memcmp(ss, wk, 32) == 0);
}

/* C2SP CCTV strcmp: a ciphertext equal to the re-encryption up to a zero byte is rejected. */
static void test_cctv_strcmp(void)
{
	FILE *f = vec_open("cctv-strcmp-768.txt");

	if (!f)
		return;
	CHECK_EQ(kat_each(f, strcmp_case), 1);
	fclose(f);
}

/* C2SP CCTV modulus: 780 encapsulation keys, each with one coefficient in [q, 4096). */
static void test_cctv_modulus(void)
{
	const char *dir = getenv("DUST_MLKEM_VECTORS");
	static char line[2 * EK + 8];
	char cmd[600];
	uint8_t ek[EK], ct[CT], ss[32], zero[CT] = {0};
	int n = 0, refused = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "gzip -dc '%s/cctv-modulus-768.txt.gz'",
	         dir ? dir : "test/vectors/mlkem");
	p = popen(cmd, "r");
	CHECK(p != NULL);
	if (!p)
		return;
	while (fgets(line, sizeof(line), p)) {
		size_t l = strcspn(line, "\r\n"), got = 0;

		if (l == 0)
			continue;
		CHECK(sodium_hex2bin(ek, EK, line, l, NULL, &got, NULL) == 0 && got == EK);
		memset(ct, 0xaa, CT);
		memset(ss, 0xaa, 32);
		if (dust_mlkem768_enc_derand(ct, ss, ek, zero) == -1 && memcmp(ct, zero, CT) == 0 &&
		    memcmp(ss, zero, 32) == 0)
			refused++;
		n++;
	}
	CHECK_EQ(pclose(p), 0);
	CHECK_EQ(n, 780);
	CHECK_EQ(refused, n);
}

static void keypair_from(uint8_t ek[EK], uint8_t dk[DK], uint8_t seed)
{
	uint8_t d[32], z[32];

	memset(d, seed, 32);
	memset(z, seed ^ 0xff, 32);
	CHECK(dust_mlkem768_keypair_derand(ek, dk, d, z) == 0);
}

/* J(z || c) = SHAKE256(z || c, 32), computed here apart from the library. */
static void j_of(uint8_t out[32], const uint8_t z[32], const uint8_t *c)
{
	EVP_MD_CTX *x = EVP_MD_CTX_new();

	CHECK(x && EVP_DigestInit_ex(x, EVP_shake256(), NULL) == 1 &&
	      EVP_DigestUpdate(x, z, 32) == 1 && EVP_DigestUpdate(x, c, CT) == 1 &&
	      EVP_DigestFinalXOF(x, out, 32) == 1);
	EVP_MD_CTX_free(x);
}

/* Every single-bit flip of a ciphertext gives J(z || c'), never the sender's key. */
static void test_implicit_rejection(void)
{
	static uint8_t ek[EK], dk[DK], ct[CT], bad[CT];
	uint8_t ss[32], ss2[32], j[32], m[32];
	int wrong = 0;

	keypair_from(ek, dk, 7);
	memset(m, 0x42, sizeof(m));
	CHECK(dust_mlkem768_enc_derand(ct, ss, ek, m) == 0);
	CHECK(dust_mlkem768_dec(ss2, ct, dk) == 0);
	CHECK(memcmp(ss, ss2, 32) == 0);
	for (size_t bit = 0; bit < 8 * CT; bit += 7) {
		memcpy(bad, ct, CT);
		bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		j_of(j, dk + DK - 32, bad);
		if (dust_mlkem768_dec(ss2, bad, dk) != 0 || memcmp(ss2, j, 32) != 0 ||
		    memcmp(ss2, ss, 32) == 0)
			wrong++;
	}
	CHECK_EQ(wrong, 0);
}

/* §7.2: a coefficient q - 1 is taken, q (and 4095) refused, outputs zeroed. */
static void test_modulus_check(void)
{
	static uint8_t ek[EK], dk[DK], ct[CT];
	uint8_t ss[32], m[32] = {1}, zero[CT] = {0};

	keypair_from(ek, dk, 9);
	for (int pos = 0; pos < 768; pos += 255) { /* first, middle, last coefficients */
		uint8_t *p = ek + 3 * (pos / 2);
		uint8_t save[3];

		memcpy(save, p, 3);
		for (unsigned v = 3328; v <= 4095; v += 767) {
			if (pos % 2 == 0) {
				p[0] = (uint8_t)v;
				p[1] = (uint8_t)((p[1] & 0xf0) | v >> 8);
			} else {
				p[1] = (uint8_t)((p[1] & 0x0f) | (v & 0x0f) << 4);
				p[2] = (uint8_t)(v >> 4);
			}
			memset(ss, 0xaa, 32);
			CHECK_EQ(dust_mlkem768_enc_derand(ct, ss, ek, m), v < 3329 ? 0 : -1);
			if (v >= 3329)
				CHECK(memcmp(ct, zero, CT) == 0 && memcmp(ss, zero, 32) == 0);
		}
		/* exactly q */
		if (pos % 2 == 0) {
			p[0] = 3329 & 0xff;
			p[1] = (uint8_t)((p[1] & 0xf0) | 3329 >> 8);
		} else {
			p[1] = (uint8_t)((p[1] & 0x0f) | (3329 & 0x0f) << 4);
			p[2] = (uint8_t)(3329 >> 4);
		}
		CHECK_EQ(dust_mlkem768_enc_derand(ct, ss, ek, m), -1);
		memcpy(p, save, 3);
		CHECK_EQ(dust_mlkem768_enc_derand(ct, ss, ek, m), 0);
	}
}

/* §7.3: a dk whose ek or H(ek) was altered is refused; z is not covered by the check. */
static void test_dk_hash_check(void)
{
	static uint8_t ek[EK], dk[DK], ct[CT];
	uint8_t ss[32], ss2[32], m[32] = {2}, zero[32] = {0};
	const size_t at[] = {384 * 3, 384 * 3 + EK - 1, 384 * 3 + EK, DK - 33};

	keypair_from(ek, dk, 11);
	CHECK(dust_mlkem768_enc_derand(ct, ss, ek, m) == 0);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		dk[at[i]] ^= 1;
		memset(ss2, 0xaa, 32);
		CHECK_EQ(dust_mlkem768_dec(ss2, ct, dk), -1);
		CHECK(memcmp(ss2, zero, 32) == 0);
		dk[at[i]] ^= 1;
	}
	CHECK_EQ(dust_mlkem768_dec(ss2, ct, dk), 0);
	CHECK(memcmp(ss, ss2, 32) == 0);
	dk[DK - 1] ^= 1; /* z: still decapsulates, the right ct still gives K */
	CHECK_EQ(dust_mlkem768_dec(ss2, ct, dk), 0);
	CHECK(memcmp(ss, ss2, 32) == 0);
}

/* The randomised API over the project's rng: 50 round trips, all keys distinct. */
static void test_round_trip(void)
{
	static uint8_t ek[EK], dk[DK], ct[CT], ek0[EK];
	uint8_t ss[32], ss2[32], ss0[32];
	struct dust_rng rng;
	int bad = 0;

	dust_rng_init(&rng);
	for (int i = 0; i < 50; i++) {
		if (dust_mlkem768_keypair(ek, dk, &rng) != 0 ||
		    dust_mlkem768_enc(ct, ss, ek, &rng) != 0 ||
		    dust_mlkem768_dec(ss2, ct, dk) != 0 || memcmp(ss, ss2, 32) != 0 ||
		    (i > 0 && memcmp(ek, ek0, EK) == 0) || (i > 0 && memcmp(ss, ss0, 32) == 0))
			bad++;
		memcpy(ek0, ek, EK);
		memcpy(ss0, ss, 32);
	}
	CHECK_EQ(bad, 0);
	dust_rng_wipe(&rng);
}

/* ---- the AVX2 path against the scalar one ---- */

enum { NC = 256 };

/* Random coefficients: any int16 (both paths wrap alike), or inside (-q, q) as in use. */
static void rand_coeffs(int16_t *c, size_t n, bool small)
{
	randombytes_buf(c, n * sizeof(*c));
	if (small)
		for (size_t i = 0; i < n; i++)
			c[i] = (int16_t)((int)randombytes_uniform(2 * 3329 - 1) - 3328);
}

/* step on both paths; 1 when they differ (rejection sampling: in count or accepted values). */
static int step_differs(enum dust_mlkem_step step, const int16_t *a, const int16_t *b,
                        const uint8_t *bytes, size_t len, unsigned n)
{
	int16_t r1[NC], r2[NC];
	unsigned n1, n2;

	dust_mlkem_force_scalar(false);
	n1 = dust_mlkem_step(step, r1, a, b, bytes, len, n);
	dust_mlkem_force_scalar(true);
	n2 = dust_mlkem_step(step, r2, a, b, bytes, len, n);
	dust_mlkem_force_scalar(false);
	if (step == DUST_MLKEM_STEP_REJ)
		return n1 != n2 || memcmp(r1, r2, n1 * sizeof(r1[0])) != 0;
	return memcmp(r1, r2, sizeof(r1)) != 0;
}

/* Bytes for rejection sampling: random, or all accepted (zeros), or all refused (0xff). */
static size_t rand_rej_bytes(uint8_t *b, size_t max, int kind)
{
	size_t len = 3 * randombytes_uniform((uint32_t)(max / 3 + 1));

	if (kind == 0)
		randombytes_buf(b, len);
	else
		memset(b, kind == 1 ? 0 : 0xff, len);
	return len;
}

static void test_paths_agree(void)
{
	static const char *names[] = {"ntt", "invntt", "basemul", "reduce",
	                              "add", "sub",    "tomont",  "rej_uniform"};
	int differ[8] = {0};
	int16_t a[3 * NC], b[3 * NC];
	uint8_t bytes[3 * 168];

	if (!dust_mlkem_force_scalar(false)) {
		printf(
		    "     mlkem_paths_agree: no AVX2 on this CPU, only the scalar path to test\n");
		return;
	}
	for (int i = 0; i < 2000; i++) {
		bool small = i % 2;
		unsigned n = randombytes_uniform(NC + 1);
		size_t len =
		    rand_rej_bytes(bytes, sizeof(bytes), i % 10 == 0 ? 1 + i % 20 / 10 : 0);

		rand_coeffs(a, 3 * NC, small);
		rand_coeffs(b, 3 * NC, small);
		for (int s = DUST_MLKEM_STEP_NTT; s <= DUST_MLKEM_STEP_REJ; s++)
			differ[s] += step_differs((enum dust_mlkem_step)s, a, b, bytes, len, n);
	}
	for (int s = 0; s < 8; s++)
		if (differ[s]) {
			fprintf(stderr, "  %s: AVX2 and scalar differ on %d of 2000 inputs\n",
			        names[s], differ[s]);
			check_failures++;
		}
}

/* A test on the scalar path, where the CPU would take the AVX2 one. */
static void on_scalar(void (*fn)(void))
{
	dust_mlkem_force_scalar(true);
	fn();
	dust_mlkem_force_scalar(false);
}

static void test_acvp_scalar(void)
{
	on_scalar(test_acvp);
}

static void test_cctv_strcmp_scalar(void)
{
	on_scalar(test_cctv_strcmp);
}

static void test_cctv_modulus_scalar(void)
{
	on_scalar(test_cctv_modulus);
}

static void test_implicit_rejection_scalar(void)
{
	on_scalar(test_implicit_rejection);
}

static void test_modulus_check_scalar(void)
{
	on_scalar(test_modulus_check);
}

static void test_dk_hash_check_scalar(void)
{
	on_scalar(test_dk_hash_check);
}

static void test_round_trip_scalar(void)
{
	on_scalar(test_round_trip);
}

static void put_hex(const char *name, const uint8_t *b, size_t n)
{
	printf("%s = ", name);
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
	printf("\n");
}

/* For refmlkem.py: case i uses d = SHA3-256("d" || i), and so on, then a flipped ct. */
static int print_cases(int n)
{
	static uint8_t ek[EK], dk[DK], ct[CT];
	uint8_t d[32], z[32], m[32], ss[32], ss2[32];

	for (int i = 0; i < n; i++) {
		uint8_t in[5] = {'d', (uint8_t)i, (uint8_t)(i >> 8), (uint8_t)(i >> 16), 0};
		unsigned len = 32;

		EVP_Digest(in, 4, d, &len, EVP_sha3_256(), NULL);
		in[0] = 'z';
		EVP_Digest(in, 4, z, &len, EVP_sha3_256(), NULL);
		in[0] = 'm';
		EVP_Digest(in, 4, m, &len, EVP_sha3_256(), NULL);
		if (dust_mlkem768_keypair_derand(ek, dk, d, z) != 0 ||
		    dust_mlkem768_enc_derand(ct, ss, ek, m) != 0)
			return 1;
		put_hex("d", d, 32);
		put_hex("z", z, 32);
		put_hex("m", m, 32);
		put_hex("ek", ek, EK);
		put_hex("dk", dk, DK);
		put_hex("c", ct, CT);
		put_hex("k", ss, 32);
		ct[i % CT] ^= 0x10;
		if (dust_mlkem768_dec(ss2, ct, dk) != 0)
			return 1;
		put_hex("c_bad", ct, CT);
		put_hex("k_bad", ss2, 32);
		printf("\n");
	}
	return 0;
}

static const struct check_test tests[] = {
    {"mlkem_acvp", test_acvp},
    {"mlkem_cctv_strcmp", test_cctv_strcmp},
    {"mlkem_cctv_modulus", test_cctv_modulus},
    {"mlkem_implicit_rejection", test_implicit_rejection},
    {"mlkem_modulus_check", test_modulus_check},
    {"mlkem_dk_hash_check", test_dk_hash_check},
    {"mlkem_round_trip", test_round_trip},
    {"mlkem_paths_agree", test_paths_agree},
    {"mlkem_acvp_scalar", test_acvp_scalar},
    {"mlkem_cctv_strcmp_scalar", test_cctv_strcmp_scalar},
    {"mlkem_cctv_modulus_scalar", test_cctv_modulus_scalar},
    {"mlkem_implicit_rejection_scalar", test_implicit_rejection_scalar},
    {"mlkem_modulus_check_scalar", test_modulus_check_scalar},
    {"mlkem_dk_hash_check_scalar", test_dk_hash_check_scalar},
    {"mlkem_round_trip_scalar", test_round_trip_scalar},
};

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "--print") == 0)
		return print_cases(atoi(argv[2]));
	printf("mlkem: %s path by default\n",
	       dust_mlkem_force_scalar(false) ? "AVX2" : "scalar (no AVX2 here)");
	return check_main(argc, argv, tests, CHECK_COUNT(tests), NULL);
}
