/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * app/dustgw/pending.c, first uses held until their binding is durable
 * (SPEC §7), on one worker of a real gateway with no loop (gwunit.h):
 * - a hold asks the main lcore for the binding (PERSIST of its invitation);
 * - at most DGW_PENDING_MAX held: the next is refused, its datagram dropped
 *   and counted pending_full, its session wiped; every place comes back;
 * - DURABLE releases the entries of its invitation to the caller in arrival
 *   order, with what each held, and keeps the others in order;
 * - later datagrams from a held endpoint: another intro of the same
 *   invitation held behind it (DGW_PENDING_HOLD at most, then pending_full),
 *   spoofed junk dropped as auth, another endpoint's not taken;
 * - expiry releases what waited DGW_PENDING_TIMEOUT_S, oldest only.
 */
#include "gwunit.h"
#include "pending.h"

/* Messages the hold sent to the main lcore: PERSIST(idx) counted, the rest thrown away. */
static unsigned persisted(uint32_t idx)
{
	struct dgw_msg m[64];
	unsigned n, got = 0;

	while ((n = rte_ring_dequeue_burst_elem(U.gw->to_main, m, sizeof(m[0]), 64, NULL)))
		for (unsigned i = 0; i < n; i++)
			got += m[i].type == DGW_MSG_PERSIST && m[i].idx == idx;
	return got;
}

/*
 * First use of invitation idx from endpoint i; hold's verdict, its mbuf in
 * *mp. Held: one PERSIST(idx) asked of the main lcore; refused: none.
 */
static bool pend(unsigned i, uint32_t idx, struct rte_mbuf **mp)
{
	struct dgw_rx rx = {.profile = DUST_PROFILE_RANDOM, .ep = gwu_ep(i, 30000)};
	struct dust_session s;
	struct rte_mbuf *m = gwu_mbuf();
	bool ok;

	memset(&s, 0, sizeof(s));
	s.invite_idx = idx;
	s.state = DUST_SESSION_LIVE;
	if (mp)
		*mp = m;
	if (!m)
		return false;
	ok = dgw_pending_hold(U.w, &s, m, &rx, 0, NULL, true);
	CHECK(s.invite_idx == 0 && s.state == 0); /* the caller's copy is wiped either way */
	CHECK_EQ(persisted(idx), ok ? 1 : 0);
	return ok;
}

static bool holds(unsigned i)
{
	struct dust_endpoint ep = gwu_ep(i, 30000);

	return dgw_pending_holds(U.w, &ep);
}

/* Finish released entries as a caller does: their mbufs freed, their sessions wiped. */
static void finish(struct dgw_pending *out, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		rte_pktmbuf_free(out[i].m);
		for (unsigned k = 0; k < out[i].nheld; k++)
			rte_pktmbuf_free(out[i].held[k]);
		dust_session_wipe(&out[i].s);
	}
}

static unsigned durable(uint32_t idx)
{
	struct dgw_pending *out;
	unsigned n = dgw_pending_done(U.w, idx, &out);

	finish(out, n);
	return n;
}

static void test_cap(void)
{
	unsigned free0 = gwu_free_mbufs();
	uint64_t full0 = gwu_drops(DGW_DROP_PENDING_FULL);

	for (unsigned i = 0; i < DGW_PENDING_MAX; i++)
		CHECK(pend(i, 5000 + i, NULL));
	CHECK_EQ(dgw_pending_count(U.w), DGW_PENDING_MAX);
	/* one more: refused, dropped, counted, nothing asked of the main lcore */
	CHECK(!pend(DGW_PENDING_MAX, 9999, NULL));
	CHECK_EQ(dgw_pending_count(U.w), DGW_PENDING_MAX);
	CHECK_EQ(gwu_drops(DGW_DROP_PENDING_FULL), full0 + 1);
	CHECK_EQ(gwu_free_mbufs(), free0 - DGW_PENDING_MAX);
	CHECK(!holds(DGW_PENDING_MAX));
	/* every place comes back */
	for (unsigned i = 0; i < DGW_PENDING_MAX; i++)
		CHECK_EQ(durable(5000 + i), 1);
	CHECK_EQ(dgw_pending_count(U.w), 0);
	CHECK_EQ(gwu_free_mbufs(), free0);
	for (unsigned i = 0; i < DGW_PENDING_MAX; i++)
		CHECK(pend(i, 6000 + i, NULL));
	for (unsigned i = DGW_PENDING_MAX; i-- > 0;)
		CHECK_EQ(durable(6000 + i), 1);
	CHECK_EQ(dgw_pending_count(U.w), 0);
}

/*
 * Entries 10 and 500 share invitation 7010: released together, the older
 * first; DURABLEs from the middle out each take only their own.
 */
static void test_order(void)
{
	struct rte_mbuf *m10 = NULL, *m500 = NULL, *m;
	struct dgw_pending *out;
	unsigned n = 0;

	for (unsigned i = 0; i < DGW_PENDING_MAX; i++) {
		CHECK(pend(i, i == 500 ? 7010 : 7000 + i, &m));
		if (i == 10)
			m10 = m;
		if (i == 500)
			m500 = m;
	}
	n = dgw_pending_done(U.w, 7010, &out);
	CHECK_EQ(n, 2);
	if (n == 2) {
		/* released to the caller: the intro's mbuf, where it came from, its invitation */
		CHECK(out[0].m == m10 && out[1].m == m500);
		CHECK(out[0].rx.ep.ip.a[3] == 10 && out[0].rx.ep.port == 30000);
		CHECK(out[0].s.invite_idx == 7010 && out[1].s.invite_idx == 7010);
		CHECK(out[0].first_use);
	}
	finish(out, n);
	CHECK(!holds(10) && !holds(500) && holds(11) && holds(499) && holds(501));
	n = 0;
	for (unsigned i = 100; i < 900; i += 2)
		n += i != 500 ? durable(7000 + i) : 0;
	CHECK_EQ(n, 399);
	CHECK_EQ(dgw_pending_count(U.w), DGW_PENDING_MAX - 2 - 399);
	CHECK(holds(101) && !holds(102) && holds(899));
	/* the places come back; all released */
	for (unsigned i = 0; dgw_pending_count(U.w) < DGW_PENDING_MAX; i++)
		CHECK(pend(2000 + i, 9000 + i, NULL));
	for (unsigned i = 0; i < DGW_PENDING_MAX; i++)
		(void)durable(7000 + i);
	for (unsigned i = 0; i < DGW_PENDING_MAX; i++)
		(void)durable(9000 + i);
	CHECK_EQ(dgw_pending_count(U.w), 0);
}

/* A datagram from endpoint i (port 30000) onto the queue: take's verdict. */
static bool take(unsigned i, struct rte_mbuf *m, uint8_t *dg, int len)
{
	struct dgw_rx rx = {.profile = DUST_PROFILE_RANDOM, .ep = gwu_ep(i, 30000)};

	rx.dg = dg;
	rx.len = (uint16_t)len;
	return dgw_pending_take(U.w, m, &rx);
}

static void test_take(void)
{
	static uint8_t dg[DGW_PENDING_HOLD + 1][1500], other[1500];
	uint8_t junk[200];
	struct rte_mbuf *held[DGW_PENDING_HOLD], *m;
	struct dgw_pending *out;
	uint64_t full0 = gwu_drops(DGW_DROP_PENDING_FULL), auth0 = gwu_drops(DUST_DROP_AUTH);
	unsigned free0 = gwu_free_mbufs(), n;
	int len[DGW_PENDING_HOLD + 1], olen;

	CHECK(pend(1, 1, NULL)); /* invitation 1 of the store, from endpoint 1 */
	/* spoofed junk from the held address: dropped as auth, no place taken */
	memset(junk, 0x5a, sizeof(junk));
	m = gwu_mbuf();
	CHECK(take(1, m, junk, sizeof(junk)));
	CHECK_EQ(gwu_drops(DUST_DROP_AUTH), auth0 + 1);
	/* from an address with nothing held: not this queue's */
	m = gwu_mbuf();
	CHECK(!take(2, m, junk, sizeof(junk)));
	rte_pktmbuf_free(m);
	/* intros of the same invitation (a retransmission): held, DGW_PENDING_HOLD at most */
	for (unsigned k = 0; k <= DGW_PENDING_HOLD; k++) {
		len[k] = gwu_intro(1, dg[k], sizeof(dg[k]));
		CHECK(len[k] > 0);
	}
	for (unsigned k = 0; k < DGW_PENDING_HOLD; k++) {
		held[k] = gwu_mbuf();
		CHECK(take(1, held[k], dg[k], len[k]));
	}
	CHECK_EQ(gwu_drops(DGW_DROP_PENDING_FULL), full0);
	m = gwu_mbuf();
	CHECK(take(1, m, dg[DGW_PENDING_HOLD], len[DGW_PENDING_HOLD]));
	CHECK_EQ(gwu_drops(DGW_DROP_PENDING_FULL), full0 + 1);
	/* another invitation's intro from there is junk to this first use */
	olen = gwu_intro(2, other, sizeof(other));
	m = gwu_mbuf();
	CHECK(olen > 0 && take(1, m, other, olen));
	CHECK_EQ(gwu_drops(DUST_DROP_AUTH), auth0 + 2);
	/* DURABLE: what it held comes back with it, in order */
	n = dgw_pending_done(U.w, 1, &out);
	CHECK_EQ(n, 1);
	if (n == 1) {
		CHECK_EQ(out[0].nheld, DGW_PENDING_HOLD);
		for (unsigned k = 0; k < out[0].nheld && k < DGW_PENDING_HOLD; k++)
			CHECK(out[0].held[k] == held[k] && out[0].held_rx[k].len == len[k]);
	}
	finish(out, n);
	CHECK_EQ(gwu_free_mbufs(), free0);
	CHECK_EQ(dgw_pending_count(U.w), 0);
}

/* Released once held DGW_PENDING_TIMEOUT_S, not a cycle before; the younger stays. */
static void test_expire(void)
{
	uint64_t limit = DGW_PENDING_TIMEOUT_S * rte_get_tsc_hz(), a0, a1, b1;
	struct rte_mbuf *ma, *mb;
	struct dgw_pending *out;
	unsigned n;

	a0 = rte_rdtsc();
	CHECK(pend(20, 20, &ma));
	a1 = rte_rdtsc();
	while (rte_rdtsc() == a1)
		;
	CHECK(pend(21, 21, &mb));
	b1 = rte_rdtsc();
	CHECK_EQ(dgw_pending_expire(U.w, a0 + limit - 1, &out), 0);
	n = dgw_pending_expire(U.w, a1 + limit, &out);
	CHECK_EQ(n, 1);
	CHECK(n == 1 && out[0].m == ma && out[0].s.invite_idx == 20);
	finish(out, n);
	CHECK(!holds(20) && holds(21));
	n = dgw_pending_expire(U.w, b1 + limit, &out);
	CHECK(n == 1 && out[0].m == mb);
	finish(out, n);
	CHECK_EQ(dgw_pending_count(U.w), 0);
}

static const struct check_test tests[] = {
    {"cap", test_cap},
    {"order", test_order},
    {"take", test_take},
    {"expire", test_expire},
};

GWU_MAIN("test_pending", tests)
