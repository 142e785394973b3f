/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic profile's dispatch (SPEC.md §12): client Initials go to the
 * intro path (answered with a QUIC server first flight, dispose.c); data
 * arrives in 1-RTT short headers, found by address and, when the address
 * is new (a NAT rebinding), by the connection ID this gateway chose
 * (cid.c). A session moves only after a packet from the new address
 * authenticates.
 */
#include "cid.h"
#include "dgw_pvt.h"
#include "dispose.h"
#include "hello.h"
#include "lifecycle.h"
#include "pending.h"
#include "quic_w.h"
#include "rtx_w.h"
#include "sessmap.h"
#include "slow.h"

bool dgw_quic_short(struct dgw_rx *rx, struct dust_session **s)
{
	size_t pre;

	if (!*s || (*s)->profile != DUST_PROFILE_QUIC ||
	    !(dust_quic_short_match(*s, rx->dg, rx->len) ||
	      dust_quic_ack_match(*s, rx->dg, rx->len))) {
		*s = NULL;
		return false;
	}
	pre = dust_quic_rx_prefix(*s);
	rx->dg += pre;
	rx->len = (uint16_t)(rx->len - pre);
	return true;
}

/*
 * After dgw_quic_short: a short header of the session's, too short for a
 * Dust packet behind it, is a compact packet (SPEC §6.5) when it opens on
 * s, the session at its address; else a client's ACK-sized datagram (SPEC
 * §12.4), which carries nothing and authenticates nothing: counted and
 * freed, no session state changes (not even a move to a new address: s is
 * NULL from one), no answer.
 */
bool dgw_quic_ack(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                  struct dust_session *s)
{
	if (rx->len >= DUST_DATA_MIN_BYTES)
		return false;
	if (!s || !dgw_dispose_compact(w, s, rx))
		dgw_ctr_inc(w, DGW_CTR_QUIC_ACKS);
	rte_pktmbuf_free(m);
	return true;
}

/*
 * The send counter of a moved copy of a session whose counter is c: the
 * start of the key epoch after next. Encoders on other lcores may still
 * seal with the old slot, but only until they see it retired (encode.c
 * checks the state before each burst), a few packets at most: never the
 * 2^22 that would reach the copy's first counter. A move costs at most two
 * epochs (2^23 counter values), so 2^37 moves fit under the sender's limit
 * where a fixed 2^32 jump allowed 2^28 (SPEC §12.4).
 */
static uint64_t moved_counter(uint64_t c)
{
	return ((c >> DUST_KEY_EPOCH_LOG) + 2) << DUST_KEY_EPOCH_LOG;
}

/*
 * s authenticated a datagram from a new address: a copy of it takes the
 * new address and the old one retires. The copy sends at most 3x what the
 * new address sent until it echoes a challenge (SPEC §9.1): whoever sent
 * that packet from there (a NAT rebinding, or someone who forwarded a
 * client's packet from a spoofed or own address) must show that it
 * receives there.
 */
static struct dust_session *migrate(struct dgw_worker *w, struct dust_session *old,
                                    const struct dgw_rx *rx)
{
	struct dust_session *s = dust_session_table_reserve(w->tab);
	uint64_t c = __atomic_load_n(&old->tx_counter, __ATOMIC_RELAXED);

	if (!s)
		return NULL;
	*s = *old;
	if (dust_session_table_ackz(w->tab, s))
		*dust_session_table_ackz(w->tab, s) = *dust_session_table_ackz(w->tab, old);
	s->tx_counter = moved_counter(c);
	s->peer = rx->ep;
	/* credited when the datagram that moved it is disposed */
	dgw_path_start(w, s, DUST_PATH_AWAIT_ECHO, 0);
	if (dust_session_table_insert(w->tab, s) != 0) {
		dust_session_table_release(w->tab, s);
		return NULL;
	}
	dgw_quic_cid_add(w, s);
	dgw_sess_publish(w, s, rx->mac);
	dgw_sess_retire(w, old);
	dgw_ctr_inc(w, DGW_CTR_QUIC_MIGRATED);
	return s;
}

/*
 * A short header whose CID names another worker (RSS sent a moved client
 * here): handed to that worker, which owns the session and moves it (VPP's
 * handoff). Once only: what comes over the ring is never handed on.
 */
static bool handoff(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx)
{
	struct dgw_handoff h = {.m = m, .rx = *rx};
	uint16_t owner;

	if (rx->handed || w->gw->nworkers < 2 || rx->len < 1u + DUST_QUIC_SERVER_CID_LEN)
		return false;
	owner = dgw_quic_cid_owner(w->gw, rx->dg + 1);
	if (owner == w->wid)
		return false;
	h.rx.handed = true;
	if (rte_ring_enqueue_elem(w->gw->w[owner]->handoff, &h, sizeof(h)) != 0) {
		dgw_drop_m(w, m, DGW_DROP_HANDOFF_FULL);
		return true;
	}
	dgw_ctr_inc(w, DGW_CTR_HANDOFF_TX);
	return true;
}

/* Short headers other workers handed here, run as this worker's own misses. */
unsigned dgw_quic_handoff_poll(struct dgw_worker *w)
{
	struct dgw_handoff h[DGW_BURST];
	unsigned n = rte_ring_dequeue_burst_elem(w->handoff, h, sizeof(h[0]), DGW_BURST, NULL);

	dgw_ctr_add(w, DGW_CTR_HANDOFF_RX, n);
	for (unsigned i = 0; i < n; i++)
		dgw_quic_miss(w, h[i].m, &h[i].rx);
	return n;
}

/* A short header from an address with no session: its CID may know it. */
static void by_cid(struct dgw_worker *w, struct rte_mbuf *m, struct dgw_rx *rx)
{
	struct dust_session *s = dgw_quic_cid_find(w, rx->dg, rx->len), *moved;
	struct dust_rx_result res;

	if (!s && handoff(w, m, rx))
		return;
	if (!s || s->state != DUST_SESSION_LIVE || !dgw_quic_short(rx, &s)) {
		/* the cover server's (not remembered: a short header opens no flow) */
		if (dgw_cover_on(w))
			dgw_cover_take(w, m, NULL);
		else
			dgw_drop_m(w, m, DGW_DROP_QUIC_NO_SESSION);
		return;
	}
	if (dgw_quic_ack(w, m, rx, NULL))
		return;
	dgw_open(w, s, rx, 0, &res);
	if (!res.nseg) {
		dgw_datagram_done(w, m, rx, s, &res, false); /* counts the drop, moves nothing */
		return;
	}
	moved = migrate(w, s, rx);
	dgw_datagram_done(w, m, rx, moved ? moved : s, &res, false);
	if (moved && moved->path_state == DUST_PATH_AWAIT_ECHO)
		dgw_path_challenge(w, moved, rx->mac);
}

/*
 * The client's answer to the first flight (SPEC §12.3), to s's CID: the
 * padded Initial+Handshake datagram (nothing of Dust's in it: passed by,
 * counted), the Handshake+1-RTT datagram or a previous release's Handshake
 * packet (Dust data inside, which authenticates), or a long header to s's
 * CID of neither shape (a counted drop). False: none of these, m untouched.
 */
static bool confirm(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                    struct dust_session *s)
{
	struct dust_rx_result res;
	size_t off;
	enum dust_quic_confirm_kind kind = dust_quic_confirm_kind(s, rx->dg, rx->len, &off);

	switch (kind) {
	case DUST_QUIC_CONFIRM_NONE:
		return false;
	case DUST_QUIC_CONFIRM_ACK:
		dgw_ctr_inc(w, DGW_CTR_QUIC_CONFIRM_ACK);
		rte_pktmbuf_free(m);
		return true;
	case DUST_QUIC_CONFIRM_OLD:
	case DUST_QUIC_CONFIRM_DATA: {
		struct dgw_rx r = *rx;

		/* Dust data at off in both forms; its tag decides */
		dgw_open(w, s, rx, off, &res);
		if (kind == DUST_QUIC_CONFIRM_OLD && res.nseg)
			dgw_ctr_inc(w, DGW_CTR_QUIC_CONFIRM_OLD);
		/*
		 * caddy's Handshake ACK and HANDSHAKE_DONE, ahead of what the data
		 * brings back; a keepalive back takes its session ticket's size
		 */
		if (kind == DUST_QUIC_CONFIRM_DATA && res.nseg) {
			dgw_quic_hs_ack(w, s, rx->mac);
			dgw_quic_done(w, s, rx->mac);
			r.ticket = true;
		}
		dgw_datagram_done(w, m, &r, s, &res, false);
		return true;
	}
	case DUST_QUIC_CONFIRM_BAD:
		break;
	}
	dgw_drop_m(w, m, DGW_DROP_QUIC_CONFIRM);
	return true;
}

/*
 * A client Initial: a hello's first (held for its second), its second (the
 * two onto the intro path as one hello, SPEC §12.2), or, no hello's, as before.
 */
static void hello_initial(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                          struct dust_session *s)
{
	struct dgw_rx both;

	switch (dgw_hello_take(w, m, rx, &both)) {
	case DGW_HELLO_HELD:
	case DGW_HELLO_REPLAYED:
		return;
	case DGW_HELLO_PAIRED:
		dgw_intro_path(w, m, &both, s, DUST_OK);
		dgw_hello_done(w);
		return;
	case DGW_HELLO_NONE:
		break;
	}
	dgw_intro_path(w, m, rx, s, DUST_OK);
}

/*
 * A client Initial: answered again if its flight was lost, waiting behind its
 * endpoint's pending first use, or one of a hello's two (hello_initial).
 */
static void initial(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                    struct dust_session *s)
{
	/* its flight lost: answered again, not tried as a (replayed) hello */
	if (s && dgw_rtx_hello(w, m, rx, s))
		return;
	if (!s && dgw_pending_take(w, m, rx))
		return;
	hello_initial(w, m, rx, s);
}

void dgw_quic_initial_run(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx)
{
	initial(w, m, rx, dust_session_table_lookup(w->tab, &rx->ep));
}

/*
 * Off the RX burst, as the random profile's intros go (SPEC §12.2): an
 * Initial whose tag names an invitation, the second of a held first, or
 * one behind its endpoint's queued datagrams waits in the slow queue
 * (slow.c) and runs in the intro path's share of the worker, so a burst of
 * hellos (ML-KEM and three X25519s each) does not stall established
 * sessions. Anything else (a browser's, a prober's) costs one tag check and
 * goes on at once, to the cover server or dropped: it takes no queue slot.
 * A full queue, or replay (no share), runs it in the burst as before.
 */
static bool initial_defer(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx)
{
	if (!dgw_slow_accepts(w) || dgw_slow_full(w))
		return false;
	if (!dgw_slow_holds(w, &rx->ep) && !dgw_hello_pairs(w, rx) &&
	    dust_quic_intro_peek(&w->gw->srv, rx->dg, rx->len) < 0)
		return false;
	dgw_slow_push(w, m, rx);
	dgw_ctr_inc(w, DGW_CTR_QUIC_INITIAL_QUEUED);
	return true;
}

void dgw_quic_miss(struct dgw_worker *w, struct rte_mbuf *m, struct dgw_rx *rx)
{
	struct dust_session *s = dust_session_table_lookup(w->tab, &rx->ep);
	struct dust_rx_result res;

	/* a flow handed to the cover server stays there: not tried as Dust (SPEC §12.5) */
	if (!s && dgw_cover_on(w) && (!rx->len || dgw_cover_flow(w, &rx->ep))) {
		dgw_cover_take(w, m, rx->len ? &rx->ep : NULL);
		return;
	}
	if (!rx->len) {
		dgw_drop_m(w, m, DUST_DROP_TRUNCATED);
		return;
	}
	if (rx->dg[0] & DUST_QUIC_LONG) {
		/* the client's second flight, to its session's CID */
		if (s && confirm(w, m, rx, s))
			return;
		/*
		 * A client Initial (maybe a restart from the same address), else
		 * nothing we take. While the endpoint's first use waits for its
		 * binding, a later Initial waits behind it and is tried once it is
		 * live: a client that restarted gets the answer to its newer one.
		 */
		if (dust_quic_is_initial(rx->dg, rx->len)) {
			if (!initial_defer(w, m, rx))
				initial(w, m, rx, s);
		} else if (!s && dgw_cover_on(w))
			dgw_cover_take(w, m, &rx->ep); /* unknown versions, 0-RTT, Handshake... */
		else
			dgw_drop_m(w, m, DGW_DROP_QUIC_LONG);
		return;
	}
	if (!dgw_quic_short(rx, &s)) {
		by_cid(w, m, rx);
		return;
	}
	if (dgw_quic_ack(w, m, rx, s))
		return;
	/* the session came up earlier in this burst */
	dgw_open(w, s, rx, 0, &res);
	dgw_datagram_done(w, m, rx, s, &res, false);
}
