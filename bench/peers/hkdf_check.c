/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Checks sha1.c against RFC 5869 test case 4 (HKDF-SHA1), so the peer
 * generator's subkeys are known right before ss-server ever sees them.
 */
#include <stdio.h>
#include <string.h>

#include "sha1.h"

int main(void)
{
	static const uint8_t okm_want[42] = {
	    0x08, 0x5a, 0x01, 0xea, 0x1b, 0x10, 0xf3, 0x69, 0x33, 0x06, 0x8b, 0x56, 0xef, 0xa5,
	    0xad, 0x81, 0xa4, 0xf1, 0x4b, 0x82, 0x2f, 0x5b, 0x09, 0x15, 0x68, 0xa9, 0xcd, 0xd4,
	    0xf1, 0x55, 0xfd, 0xa2, 0xc2, 0x2e, 0x42, 0x24, 0x78, 0xd3, 0x05, 0xf3, 0xf8, 0x96};
	uint8_t ikm[11], salt[13], info[10], okm[42];

	memset(ikm, 0x0b, sizeof(ikm));
	for (unsigned i = 0; i < sizeof(salt); i++)
		salt[i] = (uint8_t)i;
	for (unsigned i = 0; i < sizeof(info); i++)
		info[i] = (uint8_t)(0xf0 + i);
	sha1_hkdf(okm, sizeof(okm), salt, sizeof(salt), ikm, sizeof(ikm), info, sizeof(info));
	if (memcmp(okm, okm_want, sizeof(okm)) != 0) {
		fprintf(stderr, "hkdf_check: HKDF-SHA1 does not match RFC 5869 case 4\n");
		return 1;
	}
	return 0;
}
