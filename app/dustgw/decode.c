/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The decode dispatch: a burst from the net port is parsed, looked up in
 * bulk in this lcore's session table and opened in one batch; misses queue
 * in slow.c or take the intro path (lifecycle.c), quic misses go to quic.c.
 * What the parking queues release (slow.c, pending.c) is run from here;
 * what becomes of each datagram is dispose.c's. Nothing is ever sent for a
 * datagram that did not authenticate.
 */
#include <rte_cycles.h>

#include "decode.h"
#include "dgw_pvt.h"
#include "dispose.h"
#include "lifecycle.h"
#include "loopprof.h"
#include "net.h"
#include "pending.h"
#include "quic_w.h"
#include "slow.h"

/*
 * Did the datagram fail as data before its first packet authenticated? Then
 * it is no packet of this session and may be an intro (a client coming back
 * from the same address). The replay pre-check counts: it reads a counter
 * from bytes no tag has vouched for yet, and an intro's first bytes unmask
 * to a refused counter about one time in 200 (a fitting length, then a
 * counter past 2^60). Opening failed without touching a byte, so the intro
 * path sees the datagram as it came; a real replay still counts as replay.
 */
static bool maybe_intro(const struct dust_rx_result *res)
{
	return res->nseg == 0 && (res->drop == DUST_DROP_AUTH || res->drop == DUST_DROP_TRUNCATED ||
	                          res->drop == DUST_DROP_REPLAY);
}

static void slow_run_head(struct dgw_worker *w);

/*
 * A random-profile datagram from an endpoint with no session, and none
 * waiting for it (queued, or held with a first use), can only be an intro.
 * One that names no invitation (its tag: one BLAKE2b and a lookup) is
 * refused before it takes a place in the slow queue: a flood of junk costs
 * that much a datagram, not a queue slot and the intro path (dgw_pipe
 * --junk measures it). Returns true when m was dropped.
 */
static bool junk_dropped(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx)
{
	if (rx->profile != DUST_PROFILE_RANDOM || dgw_slow_holds(w, &rx->ep) ||
	    dgw_pending_holds(w, &rx->ep))
		return false;
	if (rx->len < DUST_INTRO_MIN_BYTES) {
		dgw_drop_m(w, m, DUST_DROP_TRUNCATED);
		return true;
	}
	if (dust_intro_peek(&w->gw->srv, rx->dg, rx->len) >= 0)
		return false;
	dgw_drop_m(w, m, DUST_DROP_INTRO_UNKNOWN);
	return true;
}

/* Queued in slow.c if it takes datagrams now; a full queue runs its oldest first. */
static bool slow_defer(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx)
{
	if (!dgw_slow_accepts(w))
		return false;
	if (junk_dropped(w, m, rx))
		return true;
	if (dgw_slow_full(w))
		slow_run_head(w);
	dgw_slow_push(w, m, rx);
	return true;
}

/*
 * A datagram whose burst lookup missed, or whose session changed in this
 * burst; or one held while its endpoint's first use became durable.
 */
void dgw_decode_one(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx)
{
	struct dust_session *s = dust_session_table_lookup(w->tab, &rx->ep);
	struct dust_rx_result res;

	if (!s && slow_defer(w, m, rx))
		return; /* opened in the slow path's share of the worker (slow.c) */
	if (!s && dgw_pending_take(w, m, rx))
		return; /* its endpoint's first use waits for the fsync: keep the order */
	if (!s) {
		dgw_intro_path(w, m, rx, NULL, DUST_OK);
		return;
	}
	dgw_open(w, s, rx, 0, &res);
	if (maybe_intro(&res) && rx->len >= DUST_INTRO_MIN_BYTES)
		dgw_intro_path(w, m, rx, s, res.drop);
	else
		dgw_datagram_done(w, m, rx, s, &res, false);
}

/* The slow queue's oldest entry, opened now. */
static void slow_run_head(struct dgw_worker *w)
{
	struct dgw_slow e;

	dgw_slow_pop(w, &e);
	if (e.rx.profile == DUST_PROFILE_QUIC)
		dgw_quic_initial_run(w, e.m, &e.rx);
	else
		dgw_decode_one(w, e.m, &e.rx);
	dgw_slow_popped(w);
}

/* After a poll that took data_tsc: the slow queue's share of the worker (slow.c). */
void dgw_decode_slow(struct dgw_worker *w, uint64_t data_tsc, bool saturated)
{
	dgw_slow_earn(w, data_tsc, saturated);
	while (dgw_slow_due(w)) {
		uint64_t t0 = rte_rdtsc();

		slow_run_head(w);
		dgw_slow_spend(w, rte_rdtsc() - t0);
	}
}

/* outcome: DUST_OK once durable, else the reason (intro_persist, store_unavailable, ...) */
static void finish(struct dgw_worker *w, struct dgw_pending *p, enum dust_drop outcome)
{
	if (outcome != DUST_OK) {
		dust_session_wipe(&p->s);
		dgw_drop_m(w, p->m, outcome);
		for (unsigned i = 0; i < p->nheld; i++)
			dgw_drop_m(w, p->held[i], outcome);
		return;
	}
	dgw_intro_live(w, NULL, &p->s, p->m, &p->rx, p->consumed,
	               p->rx.profile == DUST_PROFILE_QUIC ? &p->acc : NULL, p->first_use);
	/*
	 * Run now, in order: each had its turn in the slow queue already. Sent
	 * back to the queue's tail, a restarted hello's first Initial would run
	 * after its second when that one was still queued (the second then
	 * malformed, the first unpaired: the abandoned hello won, issue 21 F6).
	 */
	for (unsigned i = 0; i < p->nheld; i++)
		if (p->held_rx[i].profile == DUST_PROFILE_QUIC)
			dgw_quic_initial_run(w, p->held[i], &p->held_rx[i]); /* a later Initial */
		else
			dgw_decode_one(w, p->held[i], &p->held_rx[i]);
}

/* First uses released by pending.c (DURABLE, or expired), finished in order. */
void dgw_decode_released(struct dgw_worker *w, struct dgw_pending *p, unsigned n,
                         enum dust_drop outcome)
{
	for (unsigned i = 0; i < n; i++) {
		finish(w, &p[i], outcome);
		dust_session_wipe(&p[i].s);
	}
}

static uint16_t parse_burst(struct dgw_worker *w, struct rte_mbuf **pkts, uint16_t n,
                            struct dgw_rx *rx, struct rte_mbuf **m)
{
	uint16_t k = 0;

	dgw_prefetch_mbufs(pkts, n);
	for (uint16_t i = 0; i < n && i < DGW_PREFETCH_AHEAD; i++)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
	for (uint16_t i = 0; i < n; i++) {
		if (i + DGW_PREFETCH_AHEAD < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + DGW_PREFETCH_AHEAD], void *));
		int kind = dgw_net_classify(w, pkts[i], &rx[k]);

		if (kind == DGW_RX_DUST)
			m[k++] = pkts[i];
		else if (kind == DGW_RX_COVER)
			dgw_cover_take(w, pkts[i],
			               NULL); /* TCP, ICMP, other UDP, ARP: never Dust */
	}
	return k;
}

void dgw_decode_burst(struct dgw_worker *w, struct rte_mbuf **pkts, uint16_t n)
{
	struct dgw_rx rx[DGW_BURST];
	struct rte_mbuf *m[DGW_BURST];
	const struct dust_endpoint *eps[DGW_BURST];
	struct dust_session *s[DGW_BURST];
	uint8_t *dg[DGW_BURST];
	uint16_t len[DGW_BURST];
	struct dust_rx_result res[DGW_BURST];
	uint16_t k = parse_burst(w, pkts, n, rx, m);

	DUST_PROF_LAP(PARSE);
	if (!k)
		return;
	for (uint16_t i = 0; i < k; i++) {
		eps[i] = &rx[i].ep;
		dg[i] = rx[i].dg;
		len[i] = rx[i].len;
	}
	dust_session_table_lookup_bulk(w->tab, eps, k, s);
	DUST_PROF_LAP(LOOKUP);
	for (uint16_t i = 0; i < k; i++)
		if (rx[i].profile == DUST_PROFILE_QUIC) {
			/* strip the short header of a matching session, or leave it to the miss */
			(void)dgw_quic_short(&rx[i], &s[i]);
			dg[i] = rx[i].dg;
			len[i] = rx[i].len;
		}
	DUST_PROF_LAP(PARSE);
	/*
	 * Earlier datagrams of the endpoint still wait in the slow queue (its
	 * session came up meanwhile): not opened here, it queues behind them,
	 * or it would be delivered before them.
	 */
	for (uint16_t i = 0; i < k; i++)
		if (s[i] && rx[i].profile != DUST_PROFILE_QUIC && dgw_slow_holds(w, &rx[i].ep))
			s[i] = NULL;
	dust_datagram_open_burst(s, dg, len, k, &w->gw->cfg.lim, w->now_s, res);
	for (uint16_t i = 0; i < k; i++) {
		bool retry = maybe_intro(&res[i]);

		/* quic: long headers and unknown CIDs; a short header is never an intro */
		if (rx[i].profile == DUST_PROFILE_QUIC) {
			if (s[i] && dgw_quic_ack(w, m[i], &rx[i], s[i]))
				continue;
			if (s[i])
				dgw_datagram_done(w, m[i], &rx[i], s[i], &res[i], false);
			else
				dgw_quic_miss(w, m[i], &rx[i]);
			continue;
		}

		/*
		 * No session at the bulk lookup (or held back above): queued
		 * behind earlier misses, and looked up again when its turn comes.
		 */
		if (!s[i] && slow_defer(w, m[i], &rx[i]))
			continue; /* opened in the slow path's share of the worker */
		/*
		 * An intro earlier in this burst may have created or replaced the
		 * session of this endpoint after the bulk lookup: look again.
		 * Opening failed without touching any byte, so the retry is safe.
		 */
		if (!s[i] || (retry && s[i]->state != DUST_SESSION_LIVE))
			dgw_decode_one(w, m[i], &rx[i]);
		else if (retry && rx[i].len >= DUST_INTRO_MIN_BYTES)
			dgw_intro_path(w, m[i], &rx[i], s[i], res[i].drop);
		else
			dgw_datagram_done(w, m[i], &rx[i], s[i], &res[i], false);
	}
}
