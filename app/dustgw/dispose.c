/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The bottom of the decode path: what becomes of a datagram once its fate
 * is known. It is dropped and counted, opened, its segments delivered, a
 * keepalive or intro answer (or the quic first flight) sent. Nothing here
 * calls up: the parking queues, the intro path and the dispatch call down.
 */
#include <netinet/in.h>

#include <rte_ip.h>
#include <sodium.h>

#include "dgw_pvt.h"
#include "dispose.h"
#include "inner.h"
#include "loopprof.h"
#include "net.h"
#include "rtx.h"
#include "sessmap.h"

static void free_m(struct rte_mbuf *m)
{
	if (m)
		rte_pktmbuf_free(m);
}

static unsigned inner_check(const struct dust_session *s, const uint8_t *ip, uint16_t len)
{
	const struct dust_ipaddr *t = &s->tunnel;

	if (len >= sizeof(struct rte_ipv4_hdr) && (ip[0] >> 4) == 4) {
		const struct rte_ipv4_hdr *h = (const void *)ip;

		if ((h->version_ihl & 0xf) < 5 || rte_be_to_cpu_16(h->total_length) != len)
			return DGW_DROP_INNER_BAD;
		return t->family == 4 && !memcmp(&h->src_addr, t->a, 4) ? DUST_OK
		                                                        : DGW_DROP_INNER_SRC;
	}
	if (len >= sizeof(struct rte_ipv6_hdr) && (ip[0] >> 4) == 6) {
		const struct rte_ipv6_hdr *h = (const void *)ip;

		if (sizeof(*h) + rte_be_to_cpu_16(h->payload_len) != len)
			return DGW_DROP_INNER_BAD;
		return t->family == 6 && !memcmp(h->src_addr, t->a, 16) ? DUST_OK
		                                                        : DGW_DROP_INNER_SRC;
	}
	return DGW_DROP_INNER_BAD;
}

/* Byte-wise: the header lands wherever the cleartext starts, often at an odd address. */
static void frame_eth(struct dgw *gw, uint8_t *start, uint8_t version)
{
	uint16_t type = rte_cpu_to_be_16(version == 4 ? RTE_ETHER_TYPE_IPV4 : RTE_ETHER_TYPE_IPV6);

	memcpy(start, gw->dlv_dst.addr_bytes, RTE_ETHER_ADDR_LEN);
	memcpy(start + RTE_ETHER_ADDR_LEN, gw->dlv_mac.addr_bytes, RTE_ETHER_ADDR_LEN);
	memcpy(start + 2 * RTE_ETHER_ADDR_LEN, &type, 2);
}

/*
 * Hand one inner packet to the delivery port. With reuse, the datagram's
 * own mbuf carries it (the bytes before the cleartext are spent headers);
 * otherwise it is copied into a fresh mbuf.
 */
static void deliver(struct dgw_worker *w, const struct dust_session *s, struct rte_mbuf *m,
                    bool reuse, uint8_t *ip, uint16_t len)
{
	struct dgw *gw = w->gw;
	uint16_t hdr = gw->cfg.framing == DGW_FRAME_ETH ? DGW_ETH_LEN : 0;
	unsigned why = inner_check(s, ip, len);
	uint8_t *start;

	if (why != DUST_OK) {
		dgw_count_drop(w, why);
		if (reuse)
			rte_pktmbuf_free(m);
		return;
	}
	if (reuse) {
		start = ip - hdr;
		m->data_off = (uint16_t)(start - (uint8_t *)m->buf_addr);
	} else {
		m = rte_pktmbuf_alloc(gw->pool);
		if (!m) {
			dgw_count_drop(w, DGW_DROP_NO_MBUF);
			return;
		}
		if (rte_pktmbuf_tailroom(m) < hdr + len) {
			dgw_count_drop(w, DGW_DROP_TOO_BIG);
			rte_pktmbuf_free(m);
			return;
		}
		start = rte_pktmbuf_mtod(m, uint8_t *);
		memcpy(start + hdr, ip, len);
	}
	m->data_len = hdr + len;
	m->pkt_len = m->data_len;
	m->ol_flags = 0;
	m->packet_type = 0;
	/* quic: a SYN's MSS no more than the server bound lets us send back (SPEC §12.4) */
	if (s->profile == DUST_PROFILE_QUIC &&
	    dust_inner_mss_clamp(start + hdr, len, dust_quic_tx_inner_max(s)))
		dgw_ctr_inc(w, DGW_CTR_MSS_CLAMPED);
	if (hdr)
		frame_eth(gw, start, ip[0] >> 4);
	dgw_ctr_inc(w, DGW_CTR_DELIVERED);
	DUST_PROF_LAP(FRAME);
	dgw_dlv_tx(w, m);
	DUST_PROF_LAP(TX);
}

/*
 * A packet of the worker's own toward s's peer: the answer to an intro (the
 * first keepalive of a random-profile session, SPEC §5.1), a keepalive, or
 * a path message (msg, DUST_PATH_MSG_BYTES of data). The answer goes out
 * whatever the path credit (the intro paid three times for it); the rest
 * only within it (SPEC §9.1). size: a quic datagram of exactly that many
 * bytes (a path MTU probe, caddy's ticket), else 0 (the padding policy's).
 * Returns 0 when sent.
 */
static int send_own(struct dgw_worker *w, struct dust_session *s, uint64_t mac, const uint8_t *msg,
                    size_t size)
{
	struct rte_mbuf *c;
	uint16_t outer = dgw_net_outer_len(&s->peer);
	size_t pre = dust_quic_tx_prefix(s), dlen = msg ? DUST_PATH_MSG_BYTES : 0, room;
	bool answer = s->hs_pending;
	struct dust_pad fixed;
	const struct dust_pad *pad = &w->gw->cfg.pad;
	uint8_t *pkt;
	int r;

	if (!(c = rte_pktmbuf_alloc(w->gw->pool))) {
		dgw_count_drop(w, DGW_DROP_NO_MBUF);
		return -1;
	}
	pkt = rte_pktmbuf_mtod(c, uint8_t *) + outer;
	room = rte_pktmbuf_tailroom(c) - outer - pre;
	if (size && size - pre <= room && dust_quic_pad_exact(&fixed, s, size, dlen)) {
		pad = &fixed;
		room = size - pre; /* over the session's bound: a probe of a bigger one */
	} else {
		room = dust_quic_tx_cap(s, room);
	}
	if (answer) {
		r = dust_intro_answer_build(s, &w->rng, &w->gw->cfg.pad, w->now_s, pkt,
		                            rte_pktmbuf_tailroom(c) - outer);
	} else {
		if (msg)
			memcpy(pkt + pre + DUST_DATA_PREFIX, msg, dlen);
		r = dust_data_seal(s, &w->rng, pad, w->now_s, pkt + pre, dlen, room);
	}
	if (r < 0) {
		dgw_count_drop(w, r == -EMSGSIZE ? DGW_DROP_TOO_BIG : DGW_DROP_SEAL);
		rte_pktmbuf_free(c);
		return -1;
	}
	/* sealed first, so that the exact size is spent; a refused one costs a counter value */
	if (answer) {
		dust_path_spent(s, pre + (size_t)r);
	} else if (!dust_path_may_send(s, pre + (size_t)r)) {
		dgw_count_drop(w, DGW_DROP_PATH_LIMIT);
		rte_pktmbuf_free(c);
		return -1;
	}
	if (pre)
		dust_quic_short_put(s, &w->rng, pkt);
	if (dgw_net_outer(w, c, &s->peer, mac, (uint16_t)(pre + (size_t)r), s->profile) != 0) {
		rte_pktmbuf_free(c);
		return -1;
	}
	dgw_net_tx(w, c);
	return 0;
}

/*
 * A keepalive back; ticket: the one answering a quic client's second
 * flight, in the datagram size of caddy's session ticket there (SPEC 12.3).
 */
static void send_keepalive(struct dgw_worker *w, struct dust_session *s, uint64_t mac, bool ticket)
{
	if (send_own(w, s, mac, NULL, ticket ? DUST_QUIC_TICKET_BYTES : 0) == 0)
		dgw_ctr_inc(w, DGW_CTR_KA_TX);
}

/*
 * quic: quic-go acknowledges every second packet it receives with an
 * ACK-only packet of 22..32 bytes (a fifth of caddy's downstream datagrams);
 * no Dust packet is that small. After every second data datagram from s,
 * one ACK-sized datagram that carries nothing (SPEC §12.4), within the path
 * credit (SPEC §9.1), at once as an ACK goes.
 */
/*
 * A small datagram that carries nothing of Dust (an ACK-sized one, the
 * Handshake ACK): build writes it at pkt within room and returns its size
 * (0: none). It goes toward s's peer within the path's limit, counted in
 * ctr; a refused or failed one is freed silently, as an ACK lost.
 */
static void send_small(struct dgw_worker *w, struct dust_session *s, uint64_t mac, unsigned ctr,
                       size_t (*build)(struct dgw_worker *w, struct dust_session *s, uint8_t *pkt,
                                       size_t room))
{
	uint16_t outer = dgw_net_outer_len(&s->peer);
	struct rte_mbuf *c;
	size_t len;

	if (!(c = rte_pktmbuf_alloc(w->gw->pool))) {
		dgw_count_drop(w, DGW_DROP_NO_MBUF);
		return;
	}
	len = build(w, s, rte_pktmbuf_mtod(c, uint8_t *) + outer, rte_pktmbuf_tailroom(c) - outer);
	if (!len || !dust_path_may_send(s, len) ||
	    dgw_net_outer(w, c, &s->peer, mac, (uint16_t)len, s->profile) != 0) {
		rte_pktmbuf_free(c);
		return;
	}
	dgw_net_tx(w, c);
	dgw_ctr_inc(w, ctr);
}

static size_t ack_build(struct dgw_worker *w, struct dust_session *s, uint8_t *pkt, size_t room)
{
	return dust_quic_ack_put(s, &w->rng, pkt, room);
}

static void send_ack(struct dgw_worker *w, struct dust_session *s, uint64_t mac)
{
	if (w->gw->cfg.quic_acks && dust_quic_ack_due(s))
		send_small(w, s, mac, DGW_CTR_QUIC_ACKS_TX, ack_build);
}

/* s moved to a new address: ask it to echo a fresh cookie (SPEC §9.1). */
void dgw_path_challenge(struct dgw_worker *w, struct dust_session *s, uint64_t mac)
{
	uint8_t msg[DUST_PATH_MSG_BYTES];

	dust_path_msg_put(msg, DUST_PATH_CHALLENGE, s->path_cookie);
	if (send_own(w, s, mac, msg, 0) == 0)
		dgw_ctr_inc(w, DGW_CTR_PATH_CHALLENGE);
}

/*
 * quic: a path MTU probe when one is due (SPEC §12.4): a challenge in a
 * datagram of the size to try, as quic-go probes; its echo raises the
 * session's bound (path_msg).
 */
static void pmtu_probe(struct dgw_worker *w, struct dust_session *s, uint64_t mac)
{
	uint8_t msg[DUST_PATH_MSG_BYTES];
	size_t size = dust_pmtu_probe(s, &w->rng, w->now_ms, msg);

	if (size && send_own(w, s, mac, msg, size) == 0)
		dgw_ctr_inc(w, DGW_CTR_PMTU_PROBES);
}

/* A data segment that is no IP packet: a path message, or bad inner data. */
static void path_msg(struct dgw_worker *w, struct dust_session *s, const uint8_t *p, uint16_t len)
{
	uint8_t cookie[DUST_PATH_COOKIE_BYTES];

	if (dust_path_msg_parse(p, len, cookie) != DUST_PATH_RESPONSE)
		dgw_count_drop(w, DGW_DROP_INNER_BAD);
	else if (dust_pmtu_echo(s, cookie, w->now_ms))
		dgw_ctr_inc(w, DGW_CTR_PMTU_RAISED);
	else if (dust_path_echo(s, cookie))
		dgw_ctr_inc(w, DGW_CTR_PATH_VALIDATED);
	else
		dgw_count_drop(w, DGW_DROP_PATH_ECHO);
}

/* Open the chained Dust packets of rx->dg from off with s (one datagram, off the burst). */
void dgw_open(struct dgw_worker *w, struct dust_session *s, const struct dgw_rx *rx, size_t off,
              struct dust_rx_result *res)
{
	res->nseg = (uint8_t)dust_datagram_open(s, &w->gw->cfg.lim, w->now_s, rx->dg, rx->len, off,
	                                        res->seg, DUST_CHAIN_MAX, &res->drop);
}

/* Deliver the segments of an opened datagram, then any keepalive it asks for; m is consumed. */
void dgw_dispose(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                 struct dust_session *s, const struct dust_rx_result *res, bool ka)
{
	/* an ACK-sized datagram may follow (SPEC §12.4): does anything here call for one? */
	bool acks = s->profile == DUST_PROFILE_QUIC && w->gw->cfg.quic_acks, eliciting = false;
	int last = -1;

	if (res->drop != DUST_OK)
		dgw_count_drop(w, res->drop);
	if (res->nseg) {
		dgw_sess_note_mac(w, s, rx->mac);
		if (dust_path_rx(s, rx->len))
			dgw_ctr_inc(w, DGW_CTR_PATH_VALIDATED);
	}
	dgw_ctr_add(w, DGW_CTR_DECODED, res->nseg);
	for (int i = 0; i < res->nseg; i++)
		if (res->seg[i].len && rx->dg[res->seg[i].off] >= DUST_PATH_IP_FIRST_MIN)
			last = i;
	for (int i = 0; i < res->nseg; i++) {
		const struct dust_seg *g = &res->seg[i];

		if (!g->len) {
			dgw_ctr_inc(w, DGW_CTR_KA_RX);
			ka = true;
			continue;
		}
		if (rx->dg[g->off] < DUST_PATH_IP_FIRST_MIN) {
			path_msg(w, s, rx->dg + g->off, g->len);
			continue;
		}
		/* what the client's compressed ACKs will be rebuilt from (ackz.h) */
		if (s->profile == DUST_PROFILE_QUIC)
			dust_ackz_note(dust_session_table_ackz(w->tab, s), rx->dg + g->off, g->len);
		eliciting = eliciting || (acks && dust_inner_elicits(rx->dg + g->off, g->len));
		deliver(w, s, m, i == last, rx->dg + g->off, g->len);
	}
	if (last < 0)
		free_m(m);
	if (ka)
		send_keepalive(w, s, rx->mac, rx->ticket);
	else if (eliciting)
		send_ack(w, s, rx->mac); /* quic: after every second datagram that calls for one */
	/* a replay (clock = capture) has no client to echo: no search */
	if (res->nseg && s->profile == DUST_PROFILE_QUIC && w->gw->cfg.quic_pmtu &&
	    w->gw->cfg.clock != DGW_CLOCK_CAPTURE)
		pmtu_probe(w, s, rx->mac);
}

bool dgw_dispose_compact(struct dgw_worker *w, struct dust_session *s, const struct dgw_rx *rx)
{
	uint8_t pt[DUST_COMPACT_PT_MAX], ip[DUST_ACKZ_IP_MAX];
	size_t ptlen;
	int n;

	if (dust_compact_open(s, w->now_s, rx->dg, rx->len, pt, &ptlen) != DUST_OK)
		return false;
	dgw_ctr_inc(w, DGW_CTR_QUIC_COMPACT);
	dgw_sess_note_mac(w, s, rx->mac);
	if (dust_path_rx(s, rx->len))
		dgw_ctr_inc(w, DGW_CTR_PATH_VALIDATED);
	n = dust_ackz_expand(dust_session_table_ackz(w->tab, s), pt, ptlen, ip, sizeof(ip));
	if (n > 0)
		deliver(w, s, NULL, false, ip, (uint16_t)n);
	else
		dgw_ctr_inc(w, DGW_CTR_ACKZ_BAD);
	return true;
}

enum flight_dg {
	FLIGHT_ACK,
	FLIGHT_ANSWER,
	FLIGHT_TAIL,
	FLIGHT_SHORT,
	FLIGHT_TAIL_SHORT,
	FLIGHT_INITIAL, /* the answer's Initial alone, padded to its size (a PTO resend) */
	FLIGHT_HS,      /* the answer's Handshake packet alone (a PTO resend) */
	FLIGHT_ACKS,    /* an ACK-only Initial of every client packet number seen */
};

_Static_assert((int)DGW_SHAPE_SHORT_LEAST == (int)DUST_QUIC_TAIL_SHORT_LEAST &&
                   (int)DGW_SHAPE_SHORT_MOST == (int)DUST_QUIC_TAIL_SHORT_MOST,
               "a 1-RTT coalesced behind the tail is one that clients pass by");

/*
 * The small 1-RTT packet quic-go sends after its tail (a 1-RTT packet to an
 * empty DCID): header-protected and sealed, so random bytes behind the
 * session's short header (its spin bit, as its later ones). Under a Dust
 * packet's size, the client passes it by (SPEC §12.3).
 */
static int short_build(struct dgw_worker *w, struct dust_session *s, const struct dgw_shape *sh,
                       uint8_t *pkt, size_t room)
{
	size_t pre = dust_quic_tx_prefix(s);

	if (room < sh->short_len || sh->short_len <= pre)
		return -EMSGSIZE;
	dust_quic_short_put(s, &w->rng, pkt);
	dust_rng_bytes(&w->rng, pkt + pre, sh->short_len - pre);
	return sh->short_len;
}

/* The tail: its size drawn from the shape the first time, then kept (quic-go resends it so). */
static int tail_build(struct dgw_worker *w, struct dust_session *s, const struct dgw_shape *sh,
                      struct dgw_rtx_e *e, uint16_t hi, uint8_t *pkt, size_t room)
{
	size_t lo = e->tail_len ? e->tail_len : sh->tail_min;
	int t;

	if (e->tail_len)
		hi = e->tail_len;
	if (hi < lo)
		return -EMSGSIZE; /* the shape says: no tail the 1-RTT follows */
	t = dust_quic_answer_tail_build_sized(s, &w->rng, w->now_s, lo, hi, pkt, room);
	if (t > 0 && !e->tail_len)
		e->tail_len = (uint16_t)t;
	return t;
}

/*
 * One datagram of a first flight at pkt: the ACK-only Initial, the answer
 * (both from a generator keyed by e->seed, so that a resend carries the same
 * ServerHello; its size fixed at accept), the Handshake tail (its size
 * from the shape sh), the short 1-RTT datagram after it, or the two
 * coalesced (a tail that the 1-RTT follows: to short_tail bytes); on the
 * PTO the answer's Initial or its Handshake packet alone; an ACK of what
 * the client sent again. Each Initial takes the next packet number
 * (acc->server_pn).
 */
static int flight_build(struct dgw_worker *w, struct dust_session *s, struct dgw_rtx_e *e,
                        const struct dgw_shape *sh, enum flight_dg k, uint8_t *pkt, size_t room)
{
	struct dust_quic_accept *acc = &e->acc;
	struct dust_rng rng;
	int r;

	if (k == FLIGHT_TAIL)
		return tail_build(w, s, sh, e, sh->tail_max, pkt, room);
	if (k == FLIGHT_SHORT)
		return short_build(w, s, sh, pkt, room);
	if (k == FLIGHT_HS)
		return dust_quic_answer_hs_build(s, acc, pkt, room);
	if (k == FLIGHT_TAIL_SHORT) {
		int t, u;

		if ((t = tail_build(w, s, sh, e, RTE_MIN(sh->tail_max, sh->short_tail), pkt,
		                    room)) < 0)
			return t;
		if ((u = short_build(w, s, sh, pkt + t, room - (size_t)t)) < 0)
			return u;
		return t + u;
	}
	if (k == FLIGHT_ACKS) {
		r = dust_quic_answer_acks_build(s, acc, e->seen, pkt, room);
		acc->server_pn += r >= 0;
		return r;
	}
	dust_rng_seed(&rng, e->seed);
	if (k == FLIGHT_ACK) {
		r = dust_quic_answer_ack_build(s, acc, &rng, pkt, room);
		acc->server_pn += r >= 0;
	} else if (k == FLIGHT_INITIAL) {
		r = dust_quic_answer_initial_build(s, acc, &rng, pkt, room);
		acc->server_pn += r >= 0;
	} else {
		acc->server_pn--; /* the answer's Initial takes server_pn + 1 */
		r = dust_quic_answer_build(s, acc, &rng, w->now_s, pkt, room);
		acc->server_pn += 1 + (r >= 0);
	}
	sodium_memzero(&rng, sizeof(rng));
	return r;
}

/*
 * Send one datagram of s's first flight. The first answer goes out whatever
 * the credit (the intro paid three times for it); a resend only within it
 * (SPEC §9.1). Returns its size when sent, -1 when not.
 */
static int flight_dg(struct dgw_worker *w, struct dust_session *s, struct dgw_rtx_e *e,
                     const struct dgw_shape *sh, enum flight_dg k, bool resend)
{
	uint16_t outer = dgw_net_outer_len(&s->peer);
	struct rte_mbuf *c = rte_pktmbuf_alloc(w->gw->pool);
	uint8_t *pkt;
	int r;

	if (!c) {
		dgw_count_drop(w, DGW_DROP_NO_MBUF);
		return -1;
	}
	pkt = rte_pktmbuf_mtod(c, uint8_t *) + outer;
	r = flight_build(w, s, e, sh, k, pkt, rte_pktmbuf_tailroom(c) - outer);
	if (r < 0) {
		dgw_drop_m(w, c, r == -EMSGSIZE ? DGW_DROP_TOO_BIG : DGW_DROP_SEAL);
		return -1;
	}
	if (!resend) {
		dust_path_spent(s, (size_t)r);
	} else if (!dust_path_may_resend(s, (size_t)r)) {
		/* an event of every flight left unconfirmed long enough, not a lost datagram */
		dgw_ctr_inc(w, DGW_CTR_QUIC_RTX_LIMITED);
		rte_pktmbuf_free(c);
		return -1;
	}
	if (dgw_net_outer(w, c, &s->peer, e->mac, (uint16_t)r, DUST_PROFILE_QUIC) != 0) {
		rte_pktmbuf_free(c);
		return -1;
	}
	dgw_net_tx(w, c);
	return r;
}

/*
 * caddy (quic-go) acknowledges a browser's Handshake packets at once with a
 * 36-byte Handshake packet (SPEC §12.3): the same after the client's second
 * flight opened, ahead of anything it brings back. Within the 3x limit, as
 * every datagram before the path is proved.
 */
static size_t hs_ack_build(struct dgw_worker *w, struct dust_session *s, uint8_t *pkt, size_t room)
{
	int r = dust_quic_hs_ack_build(s, &w->rng, pkt, room);

	return r < 0 ? 0 : (size_t)r;
}

void dgw_quic_hs_ack(struct dgw_worker *w, struct dust_session *s, uint64_t mac)
{
	send_small(w, s, mac, DGW_CTR_QUIC_HS_ACKS, hs_ack_build);
}

/* Then caddy's HANDSHAKE_DONE (SPEC §12.3), 24 or 25 bytes that the client passes by. */
static size_t done_build(struct dgw_worker *w, struct dust_session *s, uint8_t *pkt, size_t room)
{
	return dust_quic_done_put(s, &w->rng, pkt, room);
}

void dgw_quic_done(struct dgw_worker *w, struct dust_session *s, uint64_t mac)
{
	send_small(w, s, mac, DGW_CTR_QUIC_HS_DONE, done_build);
}

/*
 * s's first flight, as the cover server sends it (SPEC §12.3). ANSWER: an
 * ACK-only Initial, the answer, a Handshake packet with a keepalive where
 * a certificate chain ends, and after a tail as short as the shape's
 * short_tail a small 1-RTT datagram; or that in two parts, ACK_ALONE and
 * HELD, the second when the client's PTO probe came (rtx.c). Then as
 * quic-go resends: AGAIN, an ACK-only Initial of what the client sent; on
 * the PTOs the Initial alone twice, or the Handshake packet alone and the
 * tail as first sent.
 * Returns 0 when all of it went out.
 */
int dgw_quic_flight(struct dgw_worker *w, struct dust_session *s, struct dgw_rtx_e *e,
                    enum dgw_flight kind)
{
	static const enum flight_dg first[] = {FLIGHT_ACK, FLIGHT_ANSWER, FLIGHT_TAIL};
	static const enum flight_dg pto_initial[] = {FLIGHT_INITIAL, FLIGHT_INITIAL};
	static const enum flight_dg pto_hs[] = {FLIGHT_HS, FLIGHT_TAIL};
	static const enum flight_dg again[] = {FLIGHT_ACKS};
	const enum flight_dg *dg = first;
	bool resend = kind != DGW_FLIGHT_ANSWER && kind != DGW_FLIGHT_HELD;
	unsigned i = 0, n = RTE_DIM(first);
	struct dgw_shape sh;
	int r = 0;

	dgw_shape_now(w->gw, &sh);
	if (kind == DGW_FLIGHT_ACK_ALONE)
		return flight_dg(w, s, e, &sh, FLIGHT_ACK, false) < 0 ? -1 : 0;
	if (kind == DGW_FLIGHT_HELD) {
		i = 1; /* its ACK went first */
	} else if (kind != DGW_FLIGHT_ANSWER) {
		if (kind == DGW_FLIGHT_AGAIN)
			dg = again, n = RTE_DIM(again);
		else if (kind == DGW_FLIGHT_PTO_INITIAL)
			dg = pto_initial, n = RTE_DIM(pto_initial);
		else
			dg = pto_hs, n = RTE_DIM(pto_hs);
		/* a datagram refused (the 3x limit) ends the resend */
		for (; i < n; i++)
			if (flight_dg(w, s, e, &sh, dg[i], resend) < 0)
				return -1;
		return 0;
	}
	if (!sh.ack_first)
		i = 1; /* a cover server that sends no ACK-only Initial first */
	/* the 1-RTT coalesced behind the tail, in sh.coalesce thirds of the flights that have it */
	if (sh.short_len && sh.short_tail >= sh.tail_min &&
	    dust_rng_uniform(&w->rng, DGW_SHAPE_COALESCE_MAX) < sh.coalesce) {
		for (; i < n - 1; i++)
			if (flight_dg(w, s, e, &sh, dg[i], resend) < 0)
				return -1;
		return flight_dg(w, s, e, &sh, FLIGHT_TAIL_SHORT, resend) < 0 ? -1 : 0;
	}
	for (; i < n; i++)
		if ((r = flight_dg(w, s, e, &sh, dg[i], resend)) < 0)
			return -1;
	/* r: the tail's size */
	if (sh.short_len && r <= sh.short_tail && flight_dg(w, s, e, &sh, FLIGHT_SHORT, resend) < 0)
		return -1;
	return 0;
}
