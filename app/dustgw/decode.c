/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The decode path: a burst from the net port is parsed, looked up in bulk
 * in this lcore's session table and opened in one batch; unknown
 * endpoints go through the intro path. Cleartext IP packets whose source
 * is the session's tunnel address are framed for the delivery port.
 * Nothing is ever sent for a datagram that did not authenticate.
 */
#include <netinet/in.h>

#include <rte_ip.h>

#include "dgw_pvt.h"
#include "inner.h"
#include "loopprof.h"

static void free_m(struct rte_mbuf *m)
{
	if (m)
		rte_pktmbuf_free(m);
}

void dgw_drop_m(struct dgw_worker *w, struct rte_mbuf *m, unsigned reason)
{
	dgw_count_drop(w, reason);
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
		w->st.ctr[DGW_CTR_MSS_CLAMPED]++;
	if (hdr)
		frame_eth(gw, start, ip[0] >> 4);
	w->st.ctr[DGW_CTR_DELIVERED]++;
	DUST_PROF_LAP(FRAME);
	dgw_dlv_tx(w, m);
	DUST_PROF_LAP(TX);
}

static void send_keepalive(struct dgw_worker *w, struct dust_session *s, uint64_t mac)
{
	struct rte_mbuf *c = rte_pktmbuf_alloc(w->gw->pool);
	uint16_t outer = dgw_net_outer_len(&s->peer);
	size_t pre = dust_quic_tx_prefix(s);
	uint8_t *pkt;
	int r;

	if (!c) {
		dgw_count_drop(w, DGW_DROP_NO_MBUF);
		return;
	}
	pkt = rte_pktmbuf_mtod(c, uint8_t *) + outer;
	/* the first keepalive of a random-profile session is its intro's answer (SPEC §5.1) */
	if (s->hs_pending)
		r = dust_intro_answer_build(s, &w->rng, &w->gw->cfg.pad, w->now_s, pkt,
		                            rte_pktmbuf_tailroom(c) - outer);
	else
		r = dust_data_seal(s, &w->rng, &w->gw->cfg.pad, w->now_s, pkt + pre, 0,
		                   dust_quic_tx_cap(s, rte_pktmbuf_tailroom(c) - outer - pre));
	if (r >= 0 && pre)
		dust_quic_short_put(s, &w->rng, pkt);
	if (r < 0 ||
	    dgw_net_outer(w, c, &s->peer, mac, (uint16_t)(pre + (size_t)r), s->profile) != 0) {
		if (r < 0)
			dgw_count_drop(w, r == -EMSGSIZE ? DGW_DROP_TOO_BIG : DGW_DROP_SEAL);
		rte_pktmbuf_free(c);
		return;
	}
	w->st.ctr[DGW_CTR_KA_TX]++;
	dgw_net_tx(w, c);
}

/* Deliver the segments of an opened datagram; m is consumed. */
/* Open the chained Dust packets of rx->dg from off with s (one datagram, off the burst). */
void dgw_open(struct dgw_worker *w, struct dust_session *s, const struct dgw_rx *rx, size_t off,
              struct dust_rx_result *res)
{
	res->nseg = (uint8_t)dust_datagram_open(s, &w->gw->cfg.lim, w->now_s, rx->dg, rx->len, off,
	                                        res->seg, DUST_CHAIN_MAX, &res->drop);
}

void dgw_datagram_done(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                       struct dust_session *s, const struct dust_rx_result *res, bool ka)
{
	int last = -1;

	/* s's intro is not answered yet: nothing of it leaves before the answer */
	if (unlikely(w->nwait) && dgw_pubwait_take(w, m, rx, s, res))
		return;
	if (res->drop != DUST_OK)
		dgw_count_drop(w, res->drop);
	if (res->nseg)
		dgw_sess_note_mac(w, s, rx->mac);
	w->st.ctr[DGW_CTR_DECODED] += res->nseg;
	for (int i = 0; i < res->nseg; i++)
		if (res->seg[i].len)
			last = i;
	for (int i = 0; i < res->nseg; i++) {
		const struct dust_seg *g = &res->seg[i];

		if (!g->len) {
			w->st.ctr[DGW_CTR_KA_RX]++;
			ka = true;
			continue;
		}
		deliver(w, s, m, i == last, rx->dg + g->off, g->len);
	}
	if (last < 0)
		free_m(m);
	if (ka)
		send_keepalive(w, s, rx->mac);
}

/*
 * May a full table make room? Before authentication this must stay cheap
 * (a flood of datagrams that look like intros): the oldest last_rx_s is
 * scanned for at most once a second and cached. Sessions only get younger
 * or leave, so the cache may say yes where the scan after authentication
 * then says no (counted as table_full), never the reverse.
 */
static bool evict_possible(struct dgw_worker *w)
{
	if (w->evict_scan_s != w->now_s || !w->evict_scanned) {
		struct dust_session *v = dust_session_table_idlest(w->tab, w->now_s);

		w->evict_oldest_s = v ? v->last_rx_s : w->now_s;
		w->evict_scan_s = w->now_s;
		w->evict_scanned = true;
	}
	return w->now_s - w->evict_oldest_s >= w->gw->cfg.evict_idle_s;
}

/*
 * A slot for an authenticated intro's session, now in tmp. In a full table
 * the session idle longest is retired (if idle evict_idle_s or more) and a
 * spare slot holds tmp while the victim's slot waits out its grace period.
 */
static struct dust_session *make_room(struct dgw_worker *w, struct dust_session *tmp)
{
	struct dust_session *s = dust_session_table_reserve(w->tab), *v;

	if (!s) {
		v = dust_session_table_idlest(w->tab, w->now_s);
		if (v && w->now_s - v->last_rx_s >= w->gw->cfg.evict_idle_s) {
			dgw_sess_retire(w, v);
			w->st.ctr[DGW_CTR_SESS_EVICTED_IDLE]++;
			w->evict_scanned = false;
			s = dust_session_table_reserve(w->tab);
		}
	}
	if (s)
		*s = *tmp;
	dust_session_wipe(tmp);
	return s;
}

/*
 * An intro from rx->ep. old is the live session of that endpoint when the
 * datagram failed as data (a client re-introducing from the same address);
 * then, if it is no intro either, the data failure old_drop is what counts.
 * In a full table the intro is opened into a stack session: only once it
 * authenticated may it retire anything (old, or the idlest session).
 */
void dgw_intro_path(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                    struct dust_session *old, enum dust_drop old_drop)
{
	struct dust_session tmp, *s = dust_session_table_reserve(w->tab);
	struct dust_intro_info info;
	struct dust_quic_accept acc;
	size_t consumed = 0;
	enum dust_drop d;

	/* first uses waiting for their fsync hold places in the table too */
	if (s && w->npend &&
	    dust_session_table_live(w->tab) + w->npend >= dust_session_table_capacity(w->tab))
		s = NULL;
	if (!s && !old && !evict_possible(w)) {
		dgw_drop_m(w, m, DGW_DROP_TABLE_FULL);
		return;
	}
	if (!s)
		memset(&tmp, 0, sizeof(tmp));
	if (rx->profile == DUST_PROFILE_QUIC) {
		d = dgw_quic_accept(w, rx, s ? s : &tmp, &acc, &info);
	} else {
		const struct dust_eph *eph = dgw_eph_peek(w);

		d = dust_intro_accept(&w->gw->srv, rx->dg, rx->len, w->now_ms, &rx->ep, eph,
		                      s ? s : &tmp, &consumed, &info);
		if (d == DUST_OK)
			dgw_eph_spent(w, eph);
	}
	if (d != DUST_OK) {
		if (s)
			dust_session_table_release(w->tab, s);
		else
			dust_session_wipe(&tmp);
		/* From a live endpoint, a datagram that is no intro either was bad data. */
		if (old && old_drop != DUST_OK &&
		    (d == DUST_DROP_INTRO_UNKNOWN || d == DUST_DROP_TRUNCATED))
			d = old_drop;
		dgw_drop_m(w, m, d);
		return;
	}
	if (old)
		dgw_sess_retire(w, old);
	if (w->gw->deferred && info.held) {
		/*
		 * answered once the binding is durable, or (etcd) the returning
		 * client's freshness is committed cluster-wide (pending.c)
		 */
		dgw_pending_hold(w, s ? s : &tmp, m, rx, consumed, &acc, info.first_use);
		return;
	}
	if (w->gw->deferred)
		dgw_store_fresh(w, info.invite_idx);
	dgw_intro_live(w, s, &tmp, m, rx, consumed, &acc, info.first_use);
}

/*
 * An accepted intro's session goes live: into slot s, or (s NULL) a slot
 * made for tmp; published. Its answer (SPEC §5.1, or the quic first
 * flight) and any chained data wait until the main lcore says PUBLISHED
 * (pubwait.c): a reply to the client must find its session.
 */
void dgw_intro_live(struct dgw_worker *w, struct dust_session *s, struct dust_session *tmp,
                    struct rte_mbuf *m, const struct dgw_rx *rx, size_t consumed,
                    const struct dust_quic_accept *acc, bool first_use)
{
	struct dust_rx_result res;

	if (!s && !(s = make_room(w, tmp))) {
		dgw_drop_m(w, m, DGW_DROP_TABLE_FULL);
		return;
	}
	if (dust_session_table_insert(w->tab, s) != 0) {
		/* Cannot happen: the endpoint's only session was just retired. */
		dust_session_table_release(w->tab, s);
		dgw_drop_m(w, m, DUST_DROP_MALFORMED);
		return;
	}
	w->st.ctr[DGW_CTR_INTRO_OK]++;
	w->st.ctr[DGW_CTR_INTRO_FIRST] += first_use;
	dgw_sess_publish(w, s, rx->mac);
	if (rx->profile == DUST_PROFILE_QUIC) {
		/* No chained data (SPEC §12.3): the answer is the server's first flight. */
		if (dgw_pubwait_hold(w, s, m, rx, NULL, acc) &&
		    w->gw->cfg.clock == DGW_CLOCK_CAPTURE)
			dgw_replay_publish_wait(w, s);
		return;
	}
	dgw_open(w, s, rx, consumed, &res);
	/* The answer (SPEC §5.1) tells the client its session is up and brings its keys. */
	if (dgw_pubwait_hold(w, s, m, rx, &res, NULL) && w->gw->cfg.clock == DGW_CLOCK_CAPTURE)
		dgw_replay_publish_wait(w, s);
}

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

/*
 * A datagram whose burst lookup missed, or whose session changed in this
 * burst; or one held while its endpoint's first use became durable.
 */
void dgw_decode_one(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx)
{
	struct dust_session *s = dust_session_table_lookup(w->tab, &rx->ep);
	struct dust_rx_result res;

	if (!s && dgw_slow_defer(w, m, rx))
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
		if (dgw_net_classify(w, pkts[i], &rx[k]) == DGW_RX_DUST)
			m[k++] = pkts[i];
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
		if (!s[i] && dgw_slow_defer(w, m[i], &rx[i]))
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
