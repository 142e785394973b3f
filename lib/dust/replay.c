/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RFC 6479 anti-replay window: a ring of 64-bit blocks, one redundant block
 * so a shift never clears bits still inside the window. check() is cheap and
 * runs before decryption; update() runs only after the tag verified.
 */
#include "dust_pvt.h"

enum {
	BLOCK_BITS = 64,
	BLOCK_LOG = 6,
	TOTAL_BITS = DUST_REPLAY_WORDS * BLOCK_BITS,
	WINDOW = TOTAL_BITS - BLOCK_BITS, /* counters this far back are still judged */
};

DUST_EXPORT void dust_replay_init(struct dust_replay *r)
{
	memset(r, 0, sizeof(*r));
}

DUST_EXPORT bool dust_replay_check(const struct dust_replay *r, uint64_t counter)
{
	uint64_t idx, bit;

	if (counter >= DUST_REJECT_AFTER_PACKETS)
		return false;
	if (counter >= r->top)
		return true;
	if (r->top - counter > WINDOW)
		return false;
	idx = (counter >> BLOCK_LOG) % DUST_REPLAY_WORDS;
	bit = UINT64_C(1) << (counter & (BLOCK_BITS - 1));
	return (r->bitmap[idx] & bit) == 0;
}

DUST_EXPORT bool dust_replay_update(struct dust_replay *r, uint64_t counter)
{
	uint64_t idx, bit;

	if (!dust_replay_check(r, counter))
		return false;
	if (counter >= r->top) {
		uint64_t cur = r->top ? ((r->top - 1) >> BLOCK_LOG) : 0;
		uint64_t next = counter >> BLOCK_LOG;
		uint64_t diff = next - cur;

		if (r->top == 0) {
			memset(r->bitmap, 0, sizeof(r->bitmap));
		} else {
			if (diff > DUST_REPLAY_WORDS)
				diff = DUST_REPLAY_WORDS;
			for (uint64_t i = 1; i <= diff; i++)
				r->bitmap[(cur + i) % DUST_REPLAY_WORDS] = 0;
		}
		r->top = counter + 1;
	}
	idx = (counter >> BLOCK_LOG) % DUST_REPLAY_WORDS;
	bit = UINT64_C(1) << (counter & (BLOCK_BITS - 1));
	r->bitmap[idx] |= bit;
	return true;
}
