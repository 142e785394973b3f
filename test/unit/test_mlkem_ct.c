/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Constant-time test of ML-KEM-768, as ctgrind does it: the secrets (d, z,
 * m, and dk's s and z) are marked undefined for valgrind's memcheck, so any
 * branch, table index or variable-time division on them, or on anything
 * computed from them, is a memcheck error ("Conditional jump or move
 * depends on uninitialised value(s)" or "Use of uninitialised value").
 * Run under `valgrind --error-exitcode=1` (meson test mlkem_ct); outside
 * valgrind it fails at once, since it could check nothing there.
 *
 * Built with its own copy of lib/dust/mlkem.c compiled with
 * DUST_MLKEM_CTGRIND, where rho (public, though computed from d) is
 * declassified. Outputs that are public by design (ek, ct) are declassified
 * here before they are used as inputs.
 */
#include <valgrind/memcheck.h>

#include "check.h"
#include "mlkem.h"
#include <sodium.h>

enum { EK = DUST_MLKEM768_EKBYTES, DK = DUST_MLKEM768_DKBYTES, CT = DUST_MLKEM768_CTBYTES };

#define secret(p, n)     VALGRIND_MAKE_MEM_UNDEFINED(p, n)
#define declassify(p, n) VALGRIND_MAKE_MEM_DEFINED(p, n)

static uint8_t ek[EK], dk[DK], ct[CT], bad[CT];

static void test_keypair_enc_dec(void)
{
	uint8_t d[32], z[32], m[32], ss[32], ss2[32], ss3[32];

	randombytes_buf(d, sizeof(d));
	randombytes_buf(z, sizeof(z));
	randombytes_buf(m, sizeof(m));
	secret(d, sizeof(d));
	secret(z, sizeof(z));
	CHECK(dust_mlkem768_keypair_derand(ek, dk, d, z) == 0);
	/* ek is public, and so are the copy of ek and H(ek) inside dk: only s and z stay secret */
	declassify(ek, EK);
	declassify(dk + 3 * 384, EK + 32);

	secret(m, sizeof(m));
	CHECK(dust_mlkem768_enc_derand(ct, ss, ek, m) == 0);
	declassify(ct, CT);

	CHECK(dust_mlkem768_dec(ss2, ct, dk) == 0); /* accepted */
	memcpy(bad, ct, CT);
	bad[CT / 2] ^= 4;
	CHECK(dust_mlkem768_dec(ss3, bad, dk) == 0); /* implicitly rejected */

	/* Only now look at the results. */
	declassify(ss, sizeof(ss));
	declassify(ss2, sizeof(ss2));
	declassify(ss3, sizeof(ss3));
	CHECK(memcmp(ss, ss2, 32) == 0);
	CHECK(memcmp(ss, ss3, 32) != 0);
}

/* The same on the scalar path, where the CPU (and valgrind's) has AVX2. */
static void test_keypair_enc_dec_scalar(void)
{
	dust_mlkem_force_scalar(true);
	test_keypair_enc_dec();
	dust_mlkem_force_scalar(false);
}

static const struct check_test tests[] = {
    {"mlkem_ct_keypair_enc_dec", test_keypair_enc_dec},
    {"mlkem_ct_keypair_enc_dec_scalar", test_keypair_enc_dec_scalar},
};

int main(int argc, char **argv)
{
	if (sodium_init() < 0)
		return 1;
	/*
	 * Outside valgrind nothing here is checked for constant time: that is a
	 * failure, not a pass, unless --native says this run is the sanitizer
	 * build's (ASan and valgrind cannot run together), which checks the same
	 * code for memory safety only.
	 */
	bool native = argc > 1 && !strcmp(argv[1], "--native");

	if (!RUNNING_ON_VALGRIND && !native) {
		fprintf(stderr, "test_mlkem_ct: run it under valgrind (meson test mlkem_ct)\n");
		return 1;
	}
	if (native)
		printf("test_mlkem_ct: native run: memory safety only, no constant-time check\n");
	printf("test_mlkem_ct: %s path by default\n",
	       dust_mlkem_force_scalar(false) ? "AVX2" : "scalar (no AVX2 here)");
	return check_run(tests, CHECK_COUNT(tests), argc > 1 && !native ? argv[1] : NULL);
}
