/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * app/dustgw/slow.c, the slow path's queue (SPEC §7), on one worker of a
 * real gateway with no loop (gwunit.h):
 * - first in, first out, across the ring's end; full at DGW_SLOW_MAX (the
 *   caller then runs the oldest first: nothing is refused or reordered);
 * - the count goes down once the popped entry ran, not when it is popped;
 * - an endpoint is held while a datagram of it waits, not after;
 * - no datagram queues while an entry runs, with intro_share 0, or on the
 *   capture's clock;
 * - the share: a full burst earns share/(100 - share) of the data's time,
 *   an entry that overran is a debt paid from later earnings, spare time
 *   gives a fresh slice; an entry runs while the credit is positive.
 */
#include "gwunit.h"
#include "slow.h"

static struct dgw_rx rx_of(unsigned i)
{
	return (struct dgw_rx){.profile = DUST_PROFILE_RANDOM, .ep = gwu_ep(i, 40000)};
}

static bool holds(unsigned i)
{
	struct dust_endpoint ep = gwu_ep(i, 40000);

	return dgw_slow_holds(U.w, &ep);
}

/* Pop the oldest, as the caller runs it: its mbuf and endpoint back, freed. */
static struct rte_mbuf *run_head(unsigned *ep)
{
	struct dgw_slow e;

	dgw_slow_pop(U.w, &e);
	*ep = e.rx.ep.ip.a[2] << 8 | e.rx.ep.ip.a[3];
	dgw_slow_popped(U.w);
	rte_pktmbuf_free(e.m);
	return e.m;
}

static void test_fifo(void)
{
	static struct rte_mbuf *m[DGW_SLOW_MAX];
	unsigned ep, next = 0, pushed = 0;

	CHECK_EQ(dgw_slow_count(U.w), 0);
	CHECK(!dgw_slow_full(U.w));
	for (unsigned i = 0; i < DGW_SLOW_MAX; i++) {
		struct dgw_rx rx = rx_of(i);

		CHECK(!dgw_slow_full(U.w));
		m[i] = gwu_mbuf();
		dgw_slow_push(U.w, m[i], &rx);
	}
	CHECK(dgw_slow_full(U.w));
	CHECK_EQ(dgw_slow_count(U.w), DGW_SLOW_MAX);
	/* half out, in order; then as many in behind them (across the ring's end) */
	for (unsigned i = 0; i < DGW_SLOW_MAX / 2; i++) {
		CHECK(run_head(&ep) == m[i]);
		CHECK_EQ(ep, i);
	}
	next = DGW_SLOW_MAX / 2;
	for (unsigned i = 0; i < DGW_SLOW_MAX / 2; i++) {
		struct dgw_rx rx = rx_of(DGW_SLOW_MAX + i);

		dgw_slow_push(U.w, gwu_mbuf(), &rx);
		pushed++;
	}
	CHECK(dgw_slow_full(U.w));
	for (unsigned i = 0; i < DGW_SLOW_MAX; i++) {
		run_head(&ep);
		CHECK_EQ(ep, next + i);
	}
	CHECK_EQ(pushed, DGW_SLOW_MAX / 2);
	CHECK_EQ(dgw_slow_count(U.w), 0);
	CHECK(!dgw_slow_full(U.w));
}

/* Spending credit cycles in all leaves the queue due until the last one. */
static void spend_all(uint64_t credit)
{
	dgw_slow_spend(U.w, credit - 1);
	CHECK(dgw_slow_due(U.w));
	dgw_slow_spend(U.w, 1);
	CHECK(!dgw_slow_due(U.w));
}

/* Counted until it ran; not accepting while it runs; its endpoint free once popped. */
static void test_running(void)
{
	struct dgw_rx a = rx_of(7), b = rx_of(8);
	struct dgw_slow e;

	CHECK(dgw_slow_accepts(U.w));
	CHECK(!holds(7) && !holds(8));
	dgw_slow_push(U.w, gwu_mbuf(), &a);
	dgw_slow_push(U.w, gwu_mbuf(), &b);
	CHECK(holds(7) && holds(8));
	dgw_slow_pop(U.w, &e);
	CHECK_EQ(e.rx.ep.ip.a[3], 7);
	CHECK(!holds(7) && holds(8));
	CHECK_EQ(dgw_slow_count(U.w), 2); /* a test waiting for 0 sees the entry's effects */
	CHECK(!dgw_slow_accepts(U.w));    /* nothing queues from inside a running entry */
	dgw_slow_popped(U.w);
	rte_pktmbuf_free(e.m);
	CHECK_EQ(dgw_slow_count(U.w), 1);
	CHECK(dgw_slow_accepts(U.w));
	dgw_slow_pop(U.w, &e);
	dgw_slow_popped(U.w);
	rte_pktmbuf_free(e.m);
	CHECK(!holds(8));
	CHECK_EQ(dgw_slow_count(U.w), 0);
	/* no share, or the capture's clock (replay opens intros in the burst): no queue */
	U.gw->cfg.intro_share = 0;
	CHECK(!dgw_slow_accepts(U.w));
	U.gw->cfg.intro_share = 5;
	U.gw->cfg.clock = DGW_CLOCK_CAPTURE;
	CHECK(!dgw_slow_accepts(U.w));
	U.gw->cfg.clock = U.cfg.clock;
	CHECK(dgw_slow_accepts(U.w));
}

static void test_share(void)
{
	struct dgw_rx rx = rx_of(9);
	uint64_t data = 1900000, hz = rte_get_tsc_hz();
	int64_t earned = (int64_t)(data * 5 / 95), slice = (int64_t)(hz / 1000000 * 200);
	struct dgw_slow e;

	CHECK_EQ(U.gw->cfg.intro_share, 5);
	dgw_slow_earn(U.w, data, true);
	CHECK(!dgw_slow_due(U.w)); /* credit, but nothing waits */
	dgw_slow_push(U.w, gwu_mbuf(), &rx);
	CHECK(dgw_slow_due(U.w));
	/* a full burst: share/(100 - share) of the data's time */
	spend_all((uint64_t)earned);
	/* an entry that overran by 1000 cycles: the next earnings pay the debt first */
	dgw_slow_spend(U.w, 1000);
	dgw_slow_earn(U.w, data, true);
	spend_all((uint64_t)earned - 1000);
	/* no credit saved from one full burst to the next: what was left is not added */
	dgw_slow_earn(U.w, data, true);
	dgw_slow_earn(U.w, data, true);
	dgw_slow_spend(U.w, (uint64_t)earned);
	CHECK(!dgw_slow_due(U.w));
	/* spare time: a fresh slice, the debt forgiven */
	dgw_slow_spend(U.w, 5000);
	dgw_slow_earn(U.w, data, false);
	spend_all((uint64_t)slice);
	dgw_slow_pop(U.w, &e);
	dgw_slow_popped(U.w);
	rte_pktmbuf_free(e.m);
}

static const struct check_test tests[] = {
    {"fifo", test_fifo},
    {"running", test_running},
    {"share", test_share},
};

GWU_MAIN("test_slow", tests)
