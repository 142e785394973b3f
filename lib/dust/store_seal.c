/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sealed store records (SPEC.md §7.6): every record the file store keeps is
 * XChaCha20-Poly1305 under a storage key derived from the server key, with
 * the record's kind and invitation ID as associated data, so that a record
 * cannot be read, forged, or moved to another ID or kind without the key.
 */
#include <assert.h>

#include <sodium.h>

#include "dust_pvt.h"

#define SEAL_NONCE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define SEAL_TAG   crypto_aead_xchacha20poly1305_ietf_ABYTES
#define SEAL_AD    "dust store v1"

static_assert(SEAL_NONCE + SEAL_TAG == DUST_SEAL_OVERHEAD, "sealed record overhead");

/* Its own label: the storage key is never the server key nor any other key of §4. */
void dust_store_key_derive(uint8_t key[DUST_KEY_BYTES], const uint8_t server_sk[DUST_KEY_BYTES])
{
	kdf_prk(key, server_sk, "dustKSTORE", NULL, 0);
}

/* The associated data: a label, the record's kind and its invitation ID. */
static void seal_ad(uint8_t ad[sizeof(SEAL_AD) + DUST_ID_BYTES], char kind,
                    const uint8_t id[DUST_ID_BYTES])
{
	memcpy(ad, SEAL_AD, sizeof(SEAL_AD) - 1);
	ad[sizeof(SEAL_AD) - 1] = (uint8_t)kind;
	memcpy(ad + sizeof(SEAL_AD), id, DUST_ID_BYTES);
}

int dust_seal_hex(char *out, size_t cap, const uint8_t key[DUST_KEY_BYTES], char kind,
                  const uint8_t id[DUST_ID_BYTES], const uint8_t *pt, size_t len)
{
	uint8_t ad[sizeof(SEAL_AD) + DUST_ID_BYTES], buf[DUST_SEAL_PT_MAX + DUST_SEAL_OVERHEAD];
	size_t n = len + DUST_SEAL_OVERHEAD;

	if (len > DUST_SEAL_PT_MAX || cap < 2 * n + 1)
		return -EINVAL;
	seal_ad(ad, kind, id);
	randombytes_buf(buf, SEAL_NONCE);
	crypto_aead_xchacha20poly1305_ietf_encrypt(buf + SEAL_NONCE, NULL, pt, len, ad, sizeof(ad),
	                                           NULL, buf, key);
	sodium_bin2hex(out, cap, buf, n);
	sodium_memzero(buf, sizeof(buf));
	return 0;
}

int dust_unseal_hex(uint8_t *pt, size_t cap, const uint8_t key[DUST_KEY_BYTES], char kind,
                    const uint8_t id[DUST_ID_BYTES], const char *hex)
{
	uint8_t ad[sizeof(SEAL_AD) + DUST_ID_BYTES], buf[DUST_SEAL_PT_MAX + DUST_SEAL_OVERHEAD];
	size_t n = 0, hexlen = strlen(hex);
	unsigned long long len = 0;

	if (hexlen > 2 * sizeof(buf) ||
	    sodium_hex2bin(buf, sizeof(buf), hex, hexlen, NULL, &n, NULL) != 0 || 2 * n != hexlen ||
	    n < DUST_SEAL_OVERHEAD || n - DUST_SEAL_OVERHEAD > cap)
		return -1;
	seal_ad(ad, kind, id);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(
	        pt, &len, NULL, buf + SEAL_NONCE, n - SEAL_NONCE, ad, sizeof(ad), buf, key) != 0) {
		sodium_memzero(pt, cap); /* never hand out partial plaintext */
		return -1;
	}
	return (int)len;
}
