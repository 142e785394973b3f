/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A reference Internet checksum for the inner-packet tests: the whole one's
 * complement sum of 16-bit words (RFC 1071), folded only at the end, so it
 * shares nothing with the incremental code it checks.
 */
#ifndef DUST_TEST_CSUM_REF_H
#define DUST_TEST_CSUM_REF_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t ref_sum(const uint8_t *p, size_t len)
{
	uint64_t s = 0;

	for (size_t i = 0; i < len; i++)
		s += (i & 1) ? p[i] : (uint64_t)p[i] << 8;
	return s;
}

static inline uint16_t ref_fold(uint64_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

#endif /* DUST_TEST_CSUM_REF_H */
