/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The libsodium AEAD backend: ChaCha20-Poly1305-IETF everywhere, AES-256-GCM
 * where the CPU has AES-NI. The reference the other backend must equal, and
 * the fallback where libipsec-mb is absent.
 */
#include <stdio.h>

#include <sodium.h>

#include "aead.h"

bool aead_sodium_suite_ok(uint8_t suite)
{
	if (suite == DUST_SUITE_CHACHA20POLY1305)
		return true;
	return suite == DUST_SUITE_AES256GCM && crypto_aead_aes256gcm_is_available();
}

void aead_sodium_seal(struct aead_op *op)
{
	int rc = -1;

	if (op->suite == DUST_SUITE_CHACHA20POLY1305)
		rc = crypto_aead_chacha20poly1305_ietf_encrypt_detached(
		    op->dst, op->tag, NULL, op->src, op->len, op->ad, AEAD_AD_BYTES, NULL,
		    op->nonce, op->key);
	else if (aead_sodium_suite_ok(op->suite))
		rc = crypto_aead_aes256gcm_encrypt_detached(op->dst, op->tag, NULL, op->src,
		                                            op->len, op->ad, AEAD_AD_BYTES, NULL,
		                                            op->nonce, op->key);
	op->ok = rc == 0;
}

/* Both constructions verify the tag (in constant time) before they decrypt. */
void aead_sodium_open(struct aead_op *op)
{
	int rc = -1;

	if (op->suite == DUST_SUITE_CHACHA20POLY1305)
		rc = crypto_aead_chacha20poly1305_ietf_decrypt_detached(
		    op->dst, NULL, op->src, op->len, op->tag, op->ad, AEAD_AD_BYTES, op->nonce,
		    op->key);
	else if (aead_sodium_suite_ok(op->suite))
		rc = crypto_aead_aes256gcm_decrypt_detached(op->dst, NULL, op->src, op->len,
		                                            op->tag, op->ad, AEAD_AD_BYTES,
		                                            op->nonce, op->key);
	op->ok = rc == 0;
	if (!op->ok)
		sodium_memzero(op->dst, op->len);
}

void aead_sodium_name(char *buf, size_t len)
{
	snprintf(buf, len, "libsodium %s (%s)", sodium_version_string(),
	         crypto_aead_aes256gcm_is_available() ? "AES-NI" : "no AES-NI: no AES-256-GCM");
}
