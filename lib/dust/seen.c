/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A bounded set of the quic hellos a gateway has seen (SPEC §12.2): a
 * direct-mapped table of keyed 64-bit fingerprints, shared by every worker
 * without a lock. An add is one atomic exchange, so of two workers adding
 * the same key at once exactly one finds it new. A newer key whose slot
 * another holds pushes it out: the set forgets, it never invents (a false
 * "seen" needs two keys with one 64-bit keyed hash).
 */
#include <errno.h>
#include <stdlib.h>

#include <sodium.h>

#include "dust_pvt.h"
#include "quic.h"

struct dust_seen {
	uint8_t key[crypto_shorthash_KEYBYTES];
	unsigned shift; /* 64 - log2 of the slots: a fingerprint's top bits pick its slot */
	uint64_t slot[];
};

DUST_EXPORT struct dust_seen *dust_seen_new(unsigned log2_slots)
{
	struct dust_seen *s;

	if (log2_slots < 4 || log2_slots > 28) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s) + (sizeof(uint64_t) << log2_slots));
	if (!s)
		return NULL;
	randombytes_buf(s->key, sizeof(s->key));
	s->shift = 64 - log2_slots;
	return s;
}

DUST_EXPORT void dust_seen_free(struct dust_seen *s)
{
	if (!s)
		return;
	sodium_memzero(s->key, sizeof(s->key));
	free(s);
}

DUST_EXPORT bool dust_seen_add(struct dust_seen *s, const uint8_t *k, size_t len)
{
	uint8_t h[crypto_shorthash_BYTES];
	uint64_t fp;

	crypto_shorthash(h, k, len, s->key);
	memcpy(&fp, h, sizeof(fp));
	fp |= 1; /* 0 marks an empty slot */
	return __atomic_exchange_n(&s->slot[fp >> s->shift], fp, __ATOMIC_RELAXED) == fp;
}
