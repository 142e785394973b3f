/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: ML-KEM-768 (mlkem.c) on hostile inputs. The first byte
 * picks the mode, the rest (zero-padded or cut to size) is the input:
 *   even: a ciphertext, decapsulated under the fixture's fixed dk. It must
 *         succeed, and give the encapsulated key for the fixture's own
 *         ciphertext and J(z || c) (computed here with OpenSSL) for every
 *         other one: implicit rejection, checked on each input;
 *   odd:  an encapsulation key. It must be refused exactly when one of its
 *         12-bit coefficients is >= q (checked here), with ct and ss zeroed;
 *         when taken, the call must give the same ct and ss twice.
 */
#include <openssl/evp.h>

#include "fuzz_fixture.h"
#include "mlkem.h"

enum { EK = DUST_MLKEM768_EKBYTES, DK = DUST_MLKEM768_DKBYTES, CT = DUST_MLKEM768_CTBYTES };

static uint8_t ek0[EK], dk0[DK], ct0[CT], ss0[32];
static bool ready;

static void setup(void)
{
	fz_mlkem_keys(ek0, dk0, ct0, ss0);
	ready = true;
}

static void j_of(uint8_t out[32], const uint8_t *c)
{
	EVP_MD_CTX *x = EVP_MD_CTX_new();

	if (!x || EVP_DigestInit_ex(x, EVP_shake256(), NULL) != 1 ||
	    EVP_DigestUpdate(x, dk0 + DK - 32, 32) != 1 || EVP_DigestUpdate(x, c, CT) != 1 ||
	    EVP_DigestFinalXOF(x, out, 32) != 1)
		abort();
	EVP_MD_CTX_free(x);
}

static void fuzz_decaps(const uint8_t *p, size_t n)
{
	static uint8_t ct[CT];
	uint8_t ss[32], want[32];

	memset(ct, 0, CT);
	memcpy(ct, p, n < CT ? n : CT);
	if (dust_mlkem768_dec(ss, ct, dk0) != 0)
		abort();
	if (memcmp(ct, ct0, CT) == 0)
		memcpy(want, ss0, 32);
	else
		j_of(want, ct);
	if (memcmp(ss, want, 32) != 0)
		abort();
}

static bool ek_valid(const uint8_t *ek)
{
	for (int i = 0; i < 3 * 384; i += 3)
		if ((ek[i] | (ek[i + 1] & 15) << 8) >= 3329 ||
		    (ek[i + 1] >> 4 | ek[i + 2] << 4) >= 3329)
			return false;
	return true;
}

static void fuzz_encaps(const uint8_t *p, size_t n)
{
	static uint8_t ek[EK], ct[CT], ct2[CT], zero[CT];
	static const uint8_t m[32] = {9};
	uint8_t ss[32], ss2[32];
	int rc;

	memset(ek, 0, EK);
	memcpy(ek, p, n < EK ? n : EK);
	rc = dust_mlkem768_enc_derand(ct, ss, ek, m);
	if (rc != (ek_valid(ek) ? 0 : -1))
		abort();
	if (rc != 0) {
		if (memcmp(ct, zero, CT) != 0 || memcmp(ss, zero, 32) != 0)
			abort();
		return;
	}
	if (dust_mlkem768_enc_derand(ct2, ss2, ek, m) != 0 || memcmp(ct, ct2, CT) != 0 ||
	    memcmp(ss, ss2, 32) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!ready)
		setup();
	if (size == 0)
		return 0;
	if (data[0] & 1)
		fuzz_encaps(data + 1, size - 1);
	else
		fuzz_decaps(data + 1, size - 1);
	return 0;
}
