/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RFC 6479 replay window: the numbered table of edge cases below is run in
 * order against one window (192-packet window, 256-bit bitmap).
 */
#include "check.h"
#include "dust.h"

struct step {
	int no;
	uint64_t counter;
	bool expect; /* accepted by update() */
	const char *why;
};

#define W 192 /* DUST_REPLAY_WORDS * 64 - 64 */

static const struct step steps[] = {
    {1, 0, true, "first packet, counter 0"},
    {2, 0, false, "counter 0 again"},
    {3, 1, true, "next in order"},
    {4, 1, false, "duplicate of the newest"},
    {5, 10, true, "jump ahead within one block"},
    {6, 5, true, "late but inside the window"},
    {7, 5, false, "late duplicate"},
    {8, 63, true, "last bit of block 0"},
    {9, 64, true, "first bit of block 1"},
    {10, 64 + W, true, "jump by the window size"},
    {11, 65, true, "W-1 behind the newest: oldest still judged, unseen"},
    {12, 64 + W - W, false, "W behind the newest: too old"},
    {13, 1000, true, "jump far ahead (clears every block)"},
    {14, 1000 - W + 1, true, "W-1 behind after a far jump: bitmap was cleared"},
    {15, 1000 - W, false, "W behind: outside"},
    {16, 999, true, "just behind the newest"},
    {17, 1000, false, "newest again"},
    {18, UINT64_C(1) << 40, true, "huge jump"},
    {19, (UINT64_C(1) << 40) - 1, true, "one behind the huge jump"},
    {20, 1000, false, "old counter after the huge jump"},
    {21, (UINT64_C(1) << 60) - 1, true, "largest usable counter"},
    {22, UINT64_C(1) << 60, false, "DUST_REJECT_AFTER_PACKETS itself is refused"},
    {23, UINT64_MAX, false, "counter at 2^64-1 refused"},
};

static void test_table(void)
{
	struct dust_replay r;

	dust_replay_init(&r);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct step *s = &steps[i];
		bool pre = dust_replay_check(&r, s->counter);
		bool got = dust_replay_update(&r, s->counter);

		if (got != s->expect || pre != s->expect) {
			fprintf(stderr,
			        "  step %d (%s): counter %llu check %d update %d, want %d\n", s->no,
			        s->why, (unsigned long long)s->counter, pre, got, s->expect);
			check_failures++;
		}
	}
}

/* Every counter in a shuffled window is accepted once and only once. */
static void test_reorder(void)
{
	struct dust_replay r;
	uint64_t order[W];

	dust_replay_init(&r);
	for (uint64_t i = 0; i < W; i++)
		order[i] = (i * 37) % W; /* 37 is coprime with 192 */
	for (uint64_t i = 0; i < W; i++)
		CHECK(dust_replay_update(&r, 5000 + order[i]));
	for (uint64_t i = 0; i < W; i++)
		CHECK(!dust_replay_check(&r, 5000 + i));
}

/* check() never changes the window: only update() does. */
static void test_check_is_pure(void)
{
	struct dust_replay r, copy;

	dust_replay_init(&r);
	CHECK(dust_replay_update(&r, 3));
	copy = r;
	CHECK(dust_replay_check(&r, 4));
	CHECK(dust_replay_check(&r, 100000));
	CHECK(memcmp(&r, &copy, sizeof(r)) == 0);
}

static const struct check_test tests[] = {
    {"replay_table", test_table},
    {"replay_reorder", test_reorder},
    {"replay_check_is_pure", test_check_is_pure},
};

CHECK_MAIN(tests, NULL)
