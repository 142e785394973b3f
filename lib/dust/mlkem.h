/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ML-KEM-768 (FIPS 203): key generation, encapsulation and decapsulation
 * with implicit rejection. SHA3-256, SHA3-512, SHAKE128 and SHAKE256 come
 * from mlkem.c's own Keccak. Private to libdust (the tests and the bench
 * include it); the quic profile's hybrid key agreement uses it (SPEC.md
 * §2.1, §12.3).
 *
 * Every function returns 0 on success and -1 on failure; on failure every
 * output buffer is zeroed, never left half written.
 */
#ifndef DUST_MLKEM_H
#define DUST_MLKEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dust.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
	DUST_MLKEM768_EKBYTES = 1184, /* encapsulation key: ByteEncode12(t) || rho */
	DUST_MLKEM768_DKBYTES = 2400, /* dk_PKE || ek || H(ek) || z */
	DUST_MLKEM768_CTBYTES = 1088, /* c1 (du = 10) || c2 (dv = 4) */
	DUST_MLKEM768_SSBYTES = 32,
	DUST_MLKEM768_SEEDBYTES = 32, /* each of d, z and m */
};

/* ML-KEM.KeyGen with d and z from rng (FIPS 203 Algorithm 19). */
DUST_MUST_CHECK int dust_mlkem768_keypair(uint8_t ek[DUST_MLKEM768_EKBYTES],
                                          uint8_t dk[DUST_MLKEM768_DKBYTES], struct dust_rng *rng);
/* ML-KEM.KeyGen_internal(d, z) (Algorithm 16): for known-answer tests. */
DUST_MUST_CHECK int dust_mlkem768_keypair_derand(uint8_t ek[DUST_MLKEM768_EKBYTES],
                                                 uint8_t dk[DUST_MLKEM768_DKBYTES],
                                                 const uint8_t d[DUST_MLKEM768_SEEDBYTES],
                                                 const uint8_t z[DUST_MLKEM768_SEEDBYTES]);
/*
 * ML-KEM.Encaps with m from rng (Algorithm 20). Fails (-1) on an ek that
 * does not pass the modulus check of §7.2: a 12-bit coefficient >= q.
 */
DUST_MUST_CHECK int dust_mlkem768_enc(uint8_t ct[DUST_MLKEM768_CTBYTES],
                                      uint8_t ss[DUST_MLKEM768_SSBYTES],
                                      const uint8_t ek[DUST_MLKEM768_EKBYTES],
                                      struct dust_rng *rng);
/* ML-KEM.Encaps_internal(ek, m) (Algorithm 17), with the same ek check. */
DUST_MUST_CHECK int dust_mlkem768_enc_derand(uint8_t ct[DUST_MLKEM768_CTBYTES],
                                             uint8_t ss[DUST_MLKEM768_SSBYTES],
                                             const uint8_t ek[DUST_MLKEM768_EKBYTES],
                                             const uint8_t m[DUST_MLKEM768_SEEDBYTES]);
/*
 * ML-KEM.Decaps (Algorithm 21). A ciphertext that does not re-encrypt to
 * itself is not an error: ss is then J(z || ct), chosen in constant time
 * (implicit rejection). Fails (-1) only on a dk whose hash check of §7.3
 * fails (H(ek) stored in dk differs from the hash of the ek stored in dk).
 */
DUST_MUST_CHECK int dust_mlkem768_dec(uint8_t ss[DUST_MLKEM768_SSBYTES],
                                      const uint8_t ct[DUST_MLKEM768_CTBYTES],
                                      const uint8_t dk[DUST_MLKEM768_DKBYTES]);

/*
 * For the tests only (test_mlkem, test_mlkem_ct): each step has an AVX2 path,
 * used where the CPU has AVX2, and a scalar one that must give the same
 * bytes. dust_mlkem_force_scalar(true) turns the AVX2 path off, (false)
 * back on where the CPU has it; it returns whether the AVX2 path is now in
 * use. Not for use while another thread runs ML-KEM.
 */
bool dust_mlkem_force_scalar(bool scalar);

enum dust_mlkem_step {
	DUST_MLKEM_STEP_NTT,     /* r = NTT(a) */
	DUST_MLKEM_STEP_INVNTT,  /* r = NTT^-1(a) times R */
	DUST_MLKEM_STEP_BASEMUL, /* r = sum of a[i] * b[i], i < 3, in the NTT domain */
	DUST_MLKEM_STEP_REDUCE,  /* r = a reduced mod q */
	DUST_MLKEM_STEP_ADD,     /* r = a + b */
	DUST_MLKEM_STEP_SUB,     /* r = a - b */
	DUST_MLKEM_STEP_TOMONT,  /* r = a times R */
	DUST_MLKEM_STEP_REJ,     /* r = a, then rejection sampling of bytes from n on */
};

/*
 * One internal step on the path now in use. a and b hold 256 coefficients
 * (3 * 256 for BASEMUL); bytes, len and n only for REJ. Returns REJ's new
 * count of coefficients, else 0.
 */
unsigned dust_mlkem_step(enum dust_mlkem_step step, int16_t r[256], const int16_t *a,
                         const int16_t *b, const uint8_t *bytes, size_t len, unsigned n);

#ifdef __cplusplus
}
#endif

#endif
