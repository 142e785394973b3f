/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic pacer's timing wheel (app/dustgw/pace.c) on a fake clock in
 * nanoseconds, one-microsecond slots: each lane's datagrams leave in the
 * order they came, spaced by the gaps given, each released in the slot of
 * its departure (never early, never a slot late); a full wheel or a
 * departure past its horizon is refused and counted by the caller; nothing
 * is lost across many turns of the wheel, a partial release or a stall.
 */
#include <stdint.h>

#include "check.h"
#include "gaps.h"
#include "pace.h"

enum { TICK = 1000, LANES = 3, PER_LANE = 200 };

#define ITEM(lane, seq) ((void *)(uintptr_t)(((uintptr_t)(lane) << 20) | (seq) | 1u << 30))
#define LANE_OF(it)     ((unsigned)(((uintptr_t)(it) >> 20) & 0x3ff))
#define SEQ_OF(it)      ((unsigned)((uintptr_t)(it)&0xfffff))

/* a fixed spread of gaps, 3..22 us and off the microsecond */
static uint64_t gap_of(unsigned lane, unsigned seq)
{
	return 3000 + (seq * 7919u + lane * 104729u) % 20000u;
}

static void test_order_and_gaps(void)
{
	static uint64_t dep[LANES][PER_LANE];
	struct dgw_pacer p;
	unsigned next[LANES] = {0}, got = 0;

	CHECK_EQ(dgw_pacer_init(&p, 8192, 4, LANES * PER_LANE, TICK, 0), 0);
	for (unsigned i = 0; i < PER_LANE; i++)
		for (unsigned l = 0; l < LANES; l++) {
			dep[l][i] = (i ? dep[l][i - 1] : 0) + gap_of(l, i);
			CHECK_EQ(dgw_pacer_push(&p, l, 0, gap_of(l, i), ITEM(l, i)), DGW_PACE_HELD);
		}
	CHECK_EQ(dgw_pacer_held(&p), LANES * PER_LANE);
	for (uint64_t now = 0; now <= dep[0][PER_LANE - 1] + 30 * TICK; now += TICK) {
		void *out[8];
		unsigned n;

		while ((n = dgw_pacer_release(&p, now, out, 8)) != 0)
			for (unsigned k = 0; k < n; k++) {
				unsigned l = LANE_OF(out[k]), s = SEQ_OF(out[k]);

				CHECK(l < LANES);
				if (l >= LANES)
					continue;
				CHECK_EQ(s, next[l]); /* the lane's order */
				if (s < PER_LANE)     /* on time: the slot of its departure */
					CHECK_EQ(now / TICK, dep[l][s] / TICK);
				next[l] = s + 1;
				got++;
			}
	}
	CHECK_EQ(got, LANES * PER_LANE);
	CHECK_EQ(dgw_pacer_held(&p), 0);
	for (unsigned l = 0; l < LANES; l++) /* the gaps as given, end to end */
		for (unsigned i = 1; i < PER_LANE; i++)
			CHECK_EQ(dep[l][i] - dep[l][i - 1], gap_of(l, i));
	dgw_pacer_fini(&p);
}

/* An idle lane's datagram goes now; a busy lane's never overtakes what it holds. */
static void test_now(void)
{
	struct dgw_pacer p;
	void *out[4];

	CHECK_EQ(dgw_pacer_init(&p, 64, 4, 16, TICK, 1000000), 0);
	CHECK_EQ(dgw_pacer_push(&p, 1, 1000000, 5000, ITEM(1, 0)), DGW_PACE_NOW);
	CHECK_EQ(dgw_pacer_push(&p, 1, 1000000, 5000, ITEM(1, 1)), DGW_PACE_HELD);
	/* another lane is not held back by lane 1 */
	CHECK_EQ(dgw_pacer_push(&p, 2, 1000000, 5000, ITEM(2, 0)), DGW_PACE_NOW);
	/* lane 1, gap 0, before its held one is due: behind it, not now */
	CHECK_EQ(dgw_pacer_push(&p, 1, 1002000, 0, ITEM(1, 2)), DGW_PACE_HELD);
	CHECK_EQ(dgw_pacer_release(&p, 1004999, out, 4), 0); /* not early */
	CHECK_EQ(dgw_pacer_release(&p, 1005000, out, 4), 2);
	CHECK(out[0] == ITEM(1, 1) && out[1] == ITEM(1, 2));
	/* long idle: the next one goes at once */
	CHECK_EQ(dgw_pacer_release(&p, 9000000, out, 4), 0);
	CHECK_EQ(dgw_pacer_push(&p, 1, 9000000, 5000, ITEM(1, 3)), DGW_PACE_NOW);
	dgw_pacer_fini(&p);
}

/* Full by entries, then past the horizon: refused; a refusal moves no departure. */
static void test_full(void)
{
	struct dgw_pacer p;
	unsigned full = 0, held = 0;
	void *out[16];

	CHECK_EQ(dgw_pacer_init(&p, 64, 4, 8, TICK, 0), 0);
	for (unsigned i = 0; i < 10; i++) {
		enum dgw_pace_verdict v = dgw_pacer_push(&p, 0, 0, 5000, ITEM(0, i));

		full += v == DGW_PACE_FULL;
		held += v == DGW_PACE_HELD;
	}
	CHECK_EQ(held, 8);
	CHECK_EQ(full, 2);
	/* the 8 held leave at 5..40 us; the next departure is 45 us, not 55 */
	CHECK_EQ(dgw_pacer_release(&p, 40000, out, 16), 8);
	CHECK_EQ(dgw_pacer_push(&p, 0, 40000, 5000, ITEM(0, 8)), DGW_PACE_HELD);
	CHECK_EQ(dgw_pacer_release(&p, 44999, out, 16), 0);
	CHECK_EQ(dgw_pacer_release(&p, 45000, out, 16), 1);
	/* the horizon: 64 slots of 1 us past what is released (45 us); lanes 1, 2 idle */
	CHECK_EQ(dgw_pacer_push(&p, 1, 45000, 108999, ITEM(1, 0)), DGW_PACE_HELD);
	CHECK_EQ(dgw_pacer_push(&p, 2, 45000, 109000, ITEM(2, 0)), DGW_PACE_FULL);
	CHECK_EQ(dgw_pacer_held(&p), 1);
	dgw_pacer_fini(&p);
}

/*
 * Many turns of a small wheel with the clock stepping unevenly, partial
 * releases of 1 and a stall longer than the horizon: every item comes out
 * once, each lane in order.
 */
static void test_wrap_stall(void)
{
	struct dgw_pacer p;
	unsigned pushed = 0, got = 0, nows = 0, next[2] = {0}, seq[2] = {0};
	uint64_t now = 0;
	void *out[1];

	CHECK_EQ(dgw_pacer_init(&p, 16, 2, 32, TICK, 0), 0);
	for (unsigned round = 0; round < 3000; round++) {
		unsigned l = round % 2;

		/* uneven steps, a stall past the horizon now and then */
		now += (round % 7) * 700 + (round % 500 == 0 ? 100000 : 0);
		/* as the gateway's loop does: what is due goes before what is new */
		while (dgw_pacer_release(&p, now, out, 1) == 1) {
			CHECK_EQ(SEQ_OF(out[0]), next[LANE_OF(out[0])]);
			next[LANE_OF(out[0])]++;
			got++;
		}
		switch (dgw_pacer_push(&p, l, now, 2000 + (round % 5) * 900, ITEM(l, seq[l]))) {
		case DGW_PACE_FULL:
			continue; /* dropped by the caller: not pushed */
		case DGW_PACE_NOW:
			nows++;
			CHECK_EQ(seq[l], next[l]);
			next[l]++;
			got++;
			break;
		case DGW_PACE_HELD:
			break;
		}
		seq[l]++;
		pushed++;
	}
	while (dgw_pacer_release(&p, UINT64_MAX, out, 1) == 1) {
		CHECK_EQ(SEQ_OF(out[0]), next[LANE_OF(out[0])]);
		next[LANE_OF(out[0])]++;
		got++;
	}
	printf("wrap_stall: %u of 3000 taken, %u now\n", pushed, nows);
	CHECK_EQ(got, pushed);
	CHECK(pushed > 2000);
	CHECK_EQ(dgw_pacer_held(&p), 0);
	dgw_pacer_fini(&p);
}

/*
 * The rate cap (gaps.h): a sender bringing a datagram every 2 us gets gaps
 * of at most 1.6 us from the second window on (it paces at 5/4 of its own
 * rate); one every 100 us, or after a silence, gets no cap (the cover's
 * gaps stand).
 */
static void test_rate_cap(void)
{
	struct dust_pace_rate r = {0};
	uint64_t now = 1000000, cap = 0;

	CHECK_EQ(dust_pace_cap(&r, now, 1000000), UINT64_MAX);
	for (unsigned i = 1; i <= 1000; i++)
		cap = dust_pace_cap(&r, now + i * 2000, 1000000);
	CHECK_EQ(r.cap, 1600); /* 500 datagrams in the 1 ms window before */
	CHECK_EQ(cap, 1600);
	/* a silence of more than two windows: no cap from it */
	CHECK_EQ(dust_pace_cap(&r, now + 6000000, 1000000), UINT64_MAX);
	memset(&r, 0, sizeof(r));
	for (unsigned i = 1; i <= 100; i++)
		cap = dust_pace_cap(&r, now + i * 100000, 1000000);
	CHECK_EQ(cap, 80000); /* 10 a window: 4/5 of 100 us, over any cover gap */
}

static const struct check_test tests[] = {
    {"order_and_gaps", test_order_and_gaps}, {"now", test_now},           {"full", test_full},
    {"wrap_stall", test_wrap_stall},         {"rate_cap", test_rate_cap},
};

CHECK_MAIN(tests, NULL)
