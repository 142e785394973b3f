/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bare libsodium AEAD, N times on one buffer: a fixed workload for
 * bench/profile to count instructions per packet under callgrind, next to
 * the gateway loop's count. usage: aead_loop decode|encode SIZE N
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

int main(int argc, char **argv)
{
	static unsigned char ct[2048], out[2048];
	unsigned char key[32] = {1}, nonce[12] = {0}, tag[16];
	int enc, len, n;

	if (argc != 4 || sodium_init() < 0)
		return 2;
	enc = !strcmp(argv[1], "encode");
	len = atoi(argv[2]);
	n = atoi(argv[3]);
	if (len < 0 || len > 2000 || n <= 0)
		return 2;
	if (!enc) /* only decode needs a valid ciphertext; encode counts exactly n calls */
		crypto_aead_chacha20poly1305_ietf_encrypt_detached(ct, tag, NULL, ct, len, NULL, 0,
		                                                   NULL, nonce, key);
	for (int i = 0; i < n; i++) {
		if (enc) {
			memcpy(nonce + 4, &i, sizeof(i));
			crypto_aead_chacha20poly1305_ietf_encrypt_detached(
			    out, tag, NULL, out, len, NULL, 0, NULL, nonce, key);
		} else if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(
		               out, NULL, ct, len, tag, NULL, 0, nonce, key)) {
			fprintf(stderr, "aead_loop: tag rejected\n");
			return 1;
		}
	}
	return 0;
}
