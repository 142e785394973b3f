/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data-packet AEAD behind one interface: seal and open a burst of
 * packets, each with its own key and suite, on libipsec-mb where it was
 * built in and runs, else on libsodium. Private to libdust.
 */
#ifndef DUST_AEAD_H
#define DUST_AEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

enum { AEAD_AD_BYTES = DUST_HDR_BYTES };

struct aead_op {
	const uint8_t *key; /* DUST_KEY_BYTES, raw */
	const uint8_t *ad;  /* AEAD_AD_BYTES */
	const uint8_t *src;
	uint8_t *dst; /* seal: may equal src; open: must not overlap src */
	uint8_t *tag; /* seal: written; open: the tag received */
	uint32_t len;
	uint8_t nonce[DUST_NONCE_BYTES];
	uint8_t suite; /* DUST_SUITE_* */
	uint8_t ok;    /* out: sealed, or tag verified */
};

/*
 * Encrypt each op and write its tag; ok = 0 if the suite cannot run here, or
 * if the backend failed while the op's bytes were in its hands (then they
 * are neither plaintext nor ciphertext to trust: drop the packet).
 */
void aead_seal_burst(struct aead_op *ops, unsigned n);
/*
 * Decrypt each op out of place and compare its tag in constant time. On a
 * mismatch ok = 0 and dst[0..len) is zeroed: no plaintext of it remains.
 */
void aead_open_burst(struct aead_op *ops, unsigned n);

/*
 * Keys about to be wiped: the backend drops every copy it made of them (the
 * AES-GCM expanded-key cache), this thread's at once, another thread's
 * before that thread's next burst. Only AES-256-GCM keys are cached.
 */
void aead_forget(const uint8_t *const *keys, unsigned n);
/* Does this thread's backend hold an expanded copy of key? (test_crypto) */
bool aead_key_cached(const uint8_t *key);

/*
 * Seal a dummy packet of each suite once (dust_init): the backend's code is
 * paged in and bound before a worker's first packet waits for it (~3 ms).
 */
void aead_warm(void);

/* aead_sodium.c: the reference backend, one op at a time. */
void aead_sodium_seal(struct aead_op *op);
void aead_sodium_open(struct aead_op *op);
bool aead_sodium_suite_ok(uint8_t suite);
void aead_sodium_name(char *buf, size_t len);

#ifdef DUST_HAVE_IPSECMB
/* aead_ipsecmb.c: one IMB_MGR per thread; false when this thread has none. */
bool aead_ipsecmb_seal(struct aead_op *ops, unsigned n);
bool aead_ipsecmb_open(struct aead_op *ops, unsigned n);
void aead_ipsecmb_name(char *buf, size_t len);
bool aead_ipsecmb_usable(void);
bool aead_ipsecmb_suite_ok(uint8_t suite);
void aead_ipsecmb_forget(const uint8_t *const *keys, unsigned n);
bool aead_ipsecmb_cached(const uint8_t *raw);
#endif

#endif /* DUST_AEAD_H */
