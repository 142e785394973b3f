/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * app/dustgw/pubwait.c, accepted intros' answers held until their session
 * is published, on one worker of a real gateway with no loop (gwunit.h):
 * - at most DGW_PENDING_MAX answers wait: the next hold is refused (the
 *   caller retires and drops); every place comes back;
 * - oldest first: entries unlinked from the middle leave the rest in order
 *   (issue 21 F3; a data datagram's lookup with 1 and 1024 waiting printed);
 * - asking whether a session waits looks at a few slots of the index, with
 *   DGW_PENDING_MAX waiting as with one, never one per waiting answer (F3:
 *   counted in probes, not timed);
 * - a later datagram of a waiting session is held behind its answer
 *   (DGW_PENDING_HOLD at most, then pending_full), one that did not open is
 *   not, nor one of a session not waiting;
 * - a session that leaves drops its answer and what it held, counted
 *   unpublished, every mbuf back in the pool;
 * - expiry names the oldest once it waited DGW_PENDING_TIMEOUT_S.
 */
#include "gwunit.h"
#include "pubwait.h"

static struct dust_session fake[DGW_PENDING_MAX + 1];
static struct dust_session other[2 * DGW_PENDING_MAX]; /* never held */

/* Hold an answer for fake[i]: 0 held, 1 refused (its mbuf freed here), -1 no mbuf. */
static int hold(unsigned i)
{
	struct dgw_rx rx = {.profile = DUST_PROFILE_RANDOM};
	struct dust_rx_result res = {.nseg = 1};
	struct rte_mbuf *m = gwu_mbuf();

	if (!m)
		return -1;
	if (!dgw_pubwait_hold(U.w, &fake[i], m, &rx, &res, NULL)) {
		rte_pktmbuf_free(m);
		return 1;
	}
	return 0;
}

/* The session whose answer waits longest (any age counts as expired here). */
static const struct dust_session *oldest(void)
{
	return dgw_pubwait_expired(U.w, UINT64_MAX / 2);
}

static double ns_per(uint64_t tsc, unsigned n)
{
	return (double)tsc * 1e9 / (double)rte_get_tsc_hz() / n;
}

/*
 * What a data datagram of an established session pays while answers wait
 * (dgw_datagram_done asks pubwait whether its session is held), with one
 * and with DGW_PENDING_MAX waiting: printed, side by side, not asserted.
 */
static double take_ns(void)
{
	struct dust_rx_result res = {.nseg = 1};
	struct dgw_rx rx = {.profile = DUST_PROFILE_RANDOM};
	struct dust_session other;
	uint64_t t0 = rte_rdtsc();
	unsigned taken = 0;

	for (unsigned i = 0; i < 100000; i++)
		taken += dgw_pubwait_take(U.w, NULL, &rx, &other, &res);
	return taken ? -1 : ns_per(rte_rdtsc() - t0, 100000);
}

/*
 * Probes per lookup, averaged over every session of other[] (none waits)
 * and over fake[0, held) (each waits): an index keeps both a few slots at
 * any fill; a list scan would look at one per waiting answer.
 */
static void probes_per_lookup(unsigned held, double *miss, double *hit)
{
	struct dust_rx_result res = {.nseg = 1};
	struct dgw_rx rx = {.profile = DUST_PROFILE_RANDOM};
	struct rte_mbuf *m = gwu_mbuf();
	uint64_t p0 = dgw_pubwait_probes(U.w);
	unsigned taken = 0;

	for (unsigned i = 0; i < RTE_DIM(other); i++)
		taken += dgw_pubwait_take(U.w, NULL, &rx, &other[i], &res);
	CHECK_EQ(taken, 0);
	*miss = (double)(dgw_pubwait_probes(U.w) - p0) / RTE_DIM(other);
	/* a failed datagram (nseg 0) asks too, and is not held: nothing changes */
	res.nseg = 0;
	p0 = dgw_pubwait_probes(U.w);
	for (unsigned i = 0; i < held; i++)
		taken += dgw_pubwait_take(U.w, m, &rx, &fake[i], &res);
	CHECK_EQ(taken, 0);
	*hit = held ? (double)(dgw_pubwait_probes(U.w) - p0) / held : 0;
	rte_pktmbuf_free(m);
}

static void test_lookup_probes(void)
{
	double miss1, hit1, miss, hit;

	CHECK_EQ(hold(0), 0);
	probes_per_lookup(1, &miss1, &hit1);
	for (unsigned i = 1; i < DGW_PENDING_MAX; i++)
		CHECK_EQ(hold(i), 0);
	probes_per_lookup(DGW_PENDING_MAX, &miss, &hit);
	/* the index is half full at most: about 2.5 and 1.5 probes expected */
	CHECK(miss < 8 && hit < 8);
	CHECK(hit1 >= 1);
	printf("pubwait: probes per lookup, a session not waiting / waiting: %.2f / %.2f with 1 "
	       "waiting, %.2f / %.2f with %u\n",
	       miss1, hit1, miss, hit, DGW_PENDING_MAX);
	for (unsigned i = DGW_PENDING_MAX; i-- > 0;)
		dgw_pubwait_drop(U.w, &fake[i]);
	CHECK_EQ(dgw_pubwait_count(U.w), 0);
}

static void test_cap_order(void)
{
	double one, full, drop_ns;
	unsigned kept = 0, free0 = gwu_free_mbufs();
	uint64_t t0;

	CHECK_EQ(hold(0), 0);
	one = take_ns();
	for (unsigned i = 1; i < DGW_PENDING_MAX; i++)
		CHECK_EQ(hold(i), 0);
	CHECK_EQ(hold(DGW_PENDING_MAX), 1);
	CHECK_EQ(dgw_pubwait_count(U.w), DGW_PENDING_MAX);
	full = take_ns();
	CHECK(one > 0 && full > 0); /* a session that waits for nothing was taken */
	/* every third from the middle, then the oldest: the rest keep their order */
	t0 = rte_rdtsc();
	for (unsigned i = 1; i < DGW_PENDING_MAX; i += 3)
		dgw_pubwait_drop(U.w, &fake[i]);
	drop_ns = ns_per(rte_rdtsc() - t0, (DGW_PENDING_MAX + 1) / 3);
	CHECK(oldest() == &fake[0]);
	dgw_pubwait_drop(U.w, &fake[0]);
	CHECK(oldest() == &fake[2]);
	for (unsigned i = 2; i < DGW_PENDING_MAX; i++) {
		if (i % 3 == 1)
			continue;
		CHECK(oldest() == &fake[i]);
		kept++;
		dgw_pubwait_drop(U.w, &fake[i]);
	}
	CHECK_EQ(dgw_pubwait_count(U.w), 0);
	CHECK_EQ(kept, DGW_PENDING_MAX - 1 - (DGW_PENDING_MAX + 1) / 3);
	CHECK(oldest() == NULL);
	/* every place is free again */
	for (unsigned i = 0; i < DGW_PENDING_MAX; i++)
		CHECK_EQ(hold(i), 0);
	for (unsigned i = DGW_PENDING_MAX; i-- > 0;)
		dgw_pubwait_drop(U.w, &fake[i]);
	CHECK_EQ(dgw_pubwait_count(U.w), 0);
	CHECK_EQ(gwu_free_mbufs(), free0);
	printf("pubwait: is this session waiting? %.1f ns with 1 waiting, %.1f ns with %u "
	       "(%.2fx); an unlink from the middle %.1f ns\n",
	       one, full, DGW_PENDING_MAX, full / one, drop_ns);
}

static bool take(unsigned i, struct rte_mbuf *m, unsigned nseg, enum dust_drop drop)
{
	struct dust_rx_result res = {.nseg = (uint8_t)nseg, .drop = drop};
	struct dgw_rx rx = {.profile = DUST_PROFILE_RANDOM};

	return dgw_pubwait_take(U.w, m, &rx, &fake[i], &res);
}

/* Held behind the answer, at most DGW_PENDING_HOLD; a drop of s takes them all. */
static void test_take_drop(void)
{
	uint64_t full0 = gwu_drops(DGW_DROP_PENDING_FULL), unpub0 = gwu_drops(DGW_DROP_UNPUBLISHED);
	uint64_t replay0 = gwu_drops(DUST_DROP_REPLAY);
	unsigned free0 = gwu_free_mbufs();
	struct rte_mbuf *m = gwu_mbuf();

	/* no answer waits for fake[3]: its datagram goes on */
	CHECK(!take(3, m, 1, DUST_OK));
	CHECK_EQ(hold(3), 0);
	/* nothing of it opened: not the session's, not held */
	CHECK(!take(3, m, 0, DUST_DROP_AUTH));
	rte_pktmbuf_free(m);
	for (unsigned k = 0; k < DGW_PENDING_HOLD; k++)
		CHECK(take(3, gwu_mbuf(), 1, DUST_OK));
	CHECK_EQ(gwu_drops(DGW_DROP_PENDING_FULL), full0);
	/* one more: dropped and counted, as is what its tail failed with */
	CHECK(take(3, gwu_mbuf(), 1, DUST_DROP_REPLAY));
	CHECK_EQ(gwu_drops(DGW_DROP_PENDING_FULL), full0 + 1);
	CHECK_EQ(gwu_drops(DUST_DROP_REPLAY), replay0 + 1);
	CHECK_EQ(gwu_free_mbufs(), free0 - 1 - DGW_PENDING_HOLD);
	/* s leaves the table: the answer and what it held, dropped, never sent */
	dgw_pubwait_drop(U.w, &fake[3]);
	CHECK_EQ(gwu_drops(DGW_DROP_UNPUBLISHED), unpub0 + 1 + DGW_PENDING_HOLD);
	CHECK_EQ(gwu_free_mbufs(), free0);
	CHECK_EQ(dgw_pubwait_count(U.w), 0);
	/* a PUBLISHED for a session already gone finds nothing and sends nothing */
	dgw_pubwait_done(U.w, &fake[3]);
	CHECK_EQ(gwu_drops(DGW_DROP_UNPUBLISHED), unpub0 + 1 + DGW_PENDING_HOLD);
	CHECK_EQ(gwu_free_mbufs(), free0);
}

/* Expired at DGW_PENDING_TIMEOUT_S, not a cycle before, the oldest first. */
static void test_expire(void)
{
	uint64_t limit = DGW_PENDING_TIMEOUT_S * rte_get_tsc_hz(), a0, a1, b1;

	a0 = rte_rdtsc();
	CHECK_EQ(hold(5), 0);
	a1 = rte_rdtsc();
	while (rte_rdtsc() == a1)
		;
	CHECK_EQ(hold(6), 0);
	b1 = rte_rdtsc();
	CHECK(dgw_pubwait_expired(U.w, a0 + limit - 1) == NULL);
	CHECK(dgw_pubwait_expired(U.w, a1 + limit) == &fake[5]);
	dgw_pubwait_drop(U.w, &fake[5]); /* the caller retires it */
	CHECK(dgw_pubwait_expired(U.w, a1 + limit) == NULL);
	CHECK(dgw_pubwait_expired(U.w, b1 + limit) == &fake[6]);
	dgw_pubwait_drop(U.w, &fake[6]);
	CHECK_EQ(dgw_pubwait_count(U.w), 0);
}

static const struct check_test tests[] = {
    {"cap_order", test_cap_order},
    {"lookup_probes", test_lookup_probes},
    {"take_drop", test_take_drop},
    {"expire", test_expire},
};

GWU_MAIN("test_pubwait", tests)
