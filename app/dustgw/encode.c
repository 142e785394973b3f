/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The encode (reverse) path: inner IP packets read from the delivery port
 * are matched by destination address to an invitation (tunnel_map) and to
 * its published session (pub[], see sessmap.c for why that is safe from
 * any lcore), sealed in place and sent to the client's last address. quic
 * sessions keep the profile's size bound (SPEC §12.4).
 */
#include <rte_ip.h>

#include "dgw_pvt.h"
#include "encode.h"
#include "inner.h"
#include "loopprof.h"
#include "neigh.h"
#include "net.h"
#include "pace_w.h"

struct enc {
	struct rte_mbuf *m;
	uint8_t *ip;
	uint16_t len;
	struct dgw_tkey dst;
};

/* dgw_drop_m, then the verdict of a function that consumed m: -1 */
static int drop(struct dgw_worker *w, struct rte_mbuf *m, unsigned reason)
{
	dgw_drop_m(w, m, reason);
	return -1;
}

/* Find the inner packet and its destination; 0, or -1 when m was consumed. */
static int inner_parse(struct dgw_worker *w, struct rte_mbuf *m, struct enc *e)
{
	struct dgw *gw = w->gw;
	uint16_t hdr = gw->cfg.framing == DGW_FRAME_ETH ? DGW_ETH_LEN : 0;
	uint8_t *p;
	uint16_t room;

	if (dgw_ensure_linear(w, m) != 0) {
		rte_pktmbuf_free(m);
		return -1;
	}
	if (m->data_len < hdr + 1)
		return drop(w, m, DGW_DROP_RUNT);
	p = rte_pktmbuf_mtod(m, uint8_t *);
	if (hdr) {
		uint16_t type = rte_be_to_cpu_16(((struct rte_ether_hdr *)p)->ether_type);

		if (type == RTE_ETHER_TYPE_ARP && gw->cfg.proxy_arp &&
		    dgw_neigh_arp(w, m, &gw->dlv_mac, true))
			return -1;
		if (type != RTE_ETHER_TYPE_IPV4 && type != RTE_ETHER_TYPE_IPV6)
			return drop(w, m, DGW_DROP_DLV_NOT_IP);
	}
	e->m = m;
	e->ip = p + hdr;
	room = m->data_len - hdr;
	memset(&e->dst, 0, sizeof(e->dst));
	if ((e->ip[0] >> 4) == 4 && room >= sizeof(struct rte_ipv4_hdr)) {
		struct rte_ipv4_hdr *h = (struct rte_ipv4_hdr *)e->ip;

		e->len = rte_be_to_cpu_16(h->total_length);
		e->dst.ip.family = 4;
		memcpy(e->dst.ip.a, &h->dst_addr, 4);
	} else if ((e->ip[0] >> 4) == 6 && room >= sizeof(struct rte_ipv6_hdr)) {
		struct rte_ipv6_hdr *h = (struct rte_ipv6_hdr *)e->ip;

		if (h->proto == IPPROTO_ICMPV6 && gw->cfg.proxy_arp && hdr &&
		    dgw_neigh_ns(w, m, &gw->dlv_mac, true))
			return -1;
		e->len = sizeof(*h) + rte_be_to_cpu_16(h->payload_len);
		e->dst.ip.family = 6;
		memcpy(e->dst.ip.a, h->dst_addr, 16);
	} else {
		return drop(w, m, DGW_DROP_DLV_NOT_IP);
	}
	if (e->len > room || e->len < 20)
		return drop(w, m, DGW_DROP_BAD_IP);
	return 0;
}

/*
 * What the delivery host says to its link, not to a client: IPv4 multicast
 * or limited broadcast, IPv6 multicast or link-local (a TAP's kernel sends
 * router solicitations, MLD reports and the like as it comes up).
 */
static bool host_local(const struct enc *e)
{
	const uint8_t *a = e->dst.ip.a;

	if (e->dst.ip.family == 4)
		return (a[0] & 0xf0) == 0xe0 ||
		       (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255);
	return a[0] == 0xff || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80);
}

/*
 * quic: e's inner packet is over the server bound's inner MTU (SPEC §12.4).
 * Answered as a router answers it: the ICMP error goes back out of the
 * delivery port in e's own mbuf, framed as delivered packets are.
 */
static int too_big(struct dgw_worker *w, struct enc *e, size_t mtu)
{
	struct dgw *gw = w->gw;
	struct rte_mbuf *m = e->m;
	uint8_t *start = rte_pktmbuf_mtod(m, uint8_t *);
	uint8_t err[DUST_INNER_ICMP_MAX];
	int n;

	dgw_count_drop(w, DGW_DROP_QUIC_TOO_BIG);
	n = dust_inner_too_big(e->ip, e->len, mtu, err, sizeof(err));
	if (n <= 0 || e->ip + n > (uint8_t *)m->buf_addr + m->buf_len) {
		rte_pktmbuf_free(m);
		return -1;
	}
	if (e->ip != start) { /* Ethernet: the delivered packets' addresses, same type */
		memcpy(start, gw->dlv_dst.addr_bytes, RTE_ETHER_ADDR_LEN);
		memcpy(start + RTE_ETHER_ADDR_LEN, gw->dlv_mac.addr_bytes, RTE_ETHER_ADDR_LEN);
	}
	memcpy(e->ip, err, (size_t)n);
	m->data_len = (uint16_t)(e->ip - start + n);
	m->pkt_len = m->data_len;
	m->ol_flags = 0;
	m->packet_type = 0;
	dgw_ctr_inc(w, DGW_CTR_ICMP_TOO_BIG);
	dgw_dlv_tx(w, m);
	return -1;
}

/*
 * quic: the inner packet must fit one datagram under the server bound; a
 * TCP SYN's MSS is clamped to what the client can send back (its bound).
 * 0, or -1 when m was consumed.
 */
static int quic_fit(struct dgw_worker *w, struct enc *e, const struct dust_session *s)
{
	size_t max = dust_quic_tx_inner_max(s);

	if (e->len > max)
		return too_big(w, e, max);
	if (dust_inner_mss_clamp(e->ip, e->len, dust_quic_rx_inner_max(s)))
		dgw_ctr_inc(w, DGW_CTR_MSS_CLAMPED);
	return 0;
}

/* Where e's Dust packet lies in its mbuf; -1 when it cannot be sealed (m consumed). */
static int seal_place(struct dgw_worker *w, struct enc *e, struct dust_session *s,
                      struct dust_tx_pkt *t)
{
	struct rte_mbuf *m = e->m;
	size_t pre = dust_quic_tx_prefix(s); /* quic: the 1-RTT short header */
	uint8_t *pkt = e->ip - DUST_DATA_PREFIX;

	if (pkt - pre - dgw_net_outer_len(&s->peer) < (uint8_t *)m->buf_addr)
		return drop(w, m, DGW_DROP_TOO_BIG);
	t->s = s;
	t->pkt = pkt;
	t->data_len = e->len;
	/* quic: padding is drawn within the bound, never past it */
	t->cap = dust_quic_tx_cap(s, (size_t)((uint8_t *)m->buf_addr + m->buf_len - pkt));
	return 0;
}

/*
 * ACK thinning (SPEC §9.2): of the pure TCP ACKs of one connection in this
 * burst, with nothing else of that connection between them, only the newest
 * goes; one stands for at most DUST_INNER_THIN_MAX earlier ones. The nearest earlier
 * packet of a connection decides: a data segment or a duplicate ACK there
 * keeps everything before it. Returns the packets kept, in order.
 */
static uint16_t thin_acks(struct dgw_worker *w, struct enc *e, uint16_t k)
{
	struct dust_inner_tcp t[DGW_BURST];
	uint8_t stands[DGW_BURST];
	bool gone[DGW_BURST];
	uint16_t kept = 0;

	for (uint16_t i = 0; i < k; i++) {
		stands[i] = 0;
		gone[i] = false;
		if (!dust_inner_tcp_read(e[i].ip, e[i].len, &t[i]))
			continue;
		for (uint16_t j = i; j-- > 0;) {
			if (gone[j] || !dust_inner_same_flow(&t[j], &t[i]))
				continue;
			if (stands[j] < DUST_INNER_THIN_MAX &&
			    dust_inner_ack_supersedes(&t[i], &t[j])) {
				gone[j] = true;
				stands[i] = (uint8_t)(stands[j] + 1);
			}
			break;
		}
	}
	for (uint16_t i = 0; i < k; i++) {
		if (gone[i]) {
			rte_pktmbuf_free(e[i].m);
			dgw_ctr_inc(w, DGW_CTR_ACKS_THINNED);
			continue;
		}
		e[kept++] = e[i];
	}
	return kept;
}

/* A sealed packet goes behind fresh outer headers onto the net port. */
static void seal_done(struct dgw_worker *w, struct rte_mbuf *m, const struct dust_tx_pkt *t,
                      uint64_t mac)
{
	struct dust_session *s = t->s;
	size_t pre = dust_quic_tx_prefix(s);
	uint8_t *first = t->pkt - pre - dgw_net_outer_len(&s->peer);

	if (t->result < 0)
		return (void)drop(w, m, t->result == -EMSGSIZE ? DGW_DROP_TOO_BIG : DGW_DROP_SEAL);
	/* an address not yet validated gets at most 3x what it sent (SPEC §9.1) */
	if (!dust_path_may_send(s, pre + (size_t)t->result))
		return (void)drop(w, m, DGW_DROP_PATH_LIMIT);
	if (pre)
		dust_quic_short_put(s, &w->rng, t->pkt - pre);
	m->data_off = (uint16_t)(first - (uint8_t *)m->buf_addr);
	m->ol_flags = 0;
	m->packet_type = 0;
	DUST_PROF_LAP(FRAME);
	if (dgw_net_outer(w, m, &s->peer, mac, (uint16_t)(pre + (size_t)t->result), s->profile) !=
	    0) {
		rte_pktmbuf_free(m);
		return;
	}
	dgw_ctr_inc(w, DGW_CTR_ENCODED);
	DUST_PROF_LAP(FRAME);
	if (w->pace && s->profile == DUST_PROFILE_QUIC)
		dgw_pace_tx(w, m, s); /* pace.c: at the cover's gaps */
	else
		dgw_net_tx(w, m);
	DUST_PROF_LAP(TX);
}

void dgw_encode_burst(struct dgw_worker *w, struct rte_mbuf **pkts, uint16_t n)
{
	struct dgw *gw = w->gw;
	struct enc e[DGW_BURST];
	const void *keys[DGW_BURST];
	void *data[DGW_BURST];
	struct dust_tx_pkt tx[DGW_BURST];
	struct rte_mbuf *txm[DGW_BURST];
	uint64_t mac[DGW_BURST];
	uint64_t hits = 0;
	uint16_t k = 0, nt = 0;

	dgw_prefetch_mbufs(pkts, n);
	for (uint16_t i = 0; i < n; i++) {
		if (i + DGW_PREFETCH_AHEAD < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + DGW_PREFETCH_AHEAD], void *));
		if (inner_parse(w, pkts[i], &e[k]) == 0)
			k++;
	}
	if (gw->cfg.ack_thin && k > 1)
		k = thin_acks(w, e, k);
	for (uint16_t i = 0; i < k; i++)
		keys[i] = &e[i].dst;
	DUST_PROF_LAP(PARSE);
	if (!k)
		return;
	rte_hash_lookup_bulk_data(gw->tunnel_map, keys, k, &hits, data);
	for (uint16_t i = 0; i < k; i++) {
		struct dgw_pub *p;
		struct dust_session *s;

		if (!(hits & (1ull << i))) {
			drop(w, e[i].m,
			     host_local(&e[i]) ? DGW_DROP_DLV_LOCAL : DGW_DROP_NO_TUNNEL);
			continue;
		}
		p = &gw->pub[(uintptr_t)data[i]];
		s = atomic_load_explicit(&p->s, memory_order_acquire);
		/*
		 * A retired slot (replaced, or moved: quic.c) seals no more: a moved
		 * copy's counter starts only 2^22 ahead of it.
		 */
		if (!s || __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != DUST_SESSION_LIVE) {
			drop(w, e[i].m, DGW_DROP_NO_SESSION);
			continue;
		}
		if (s->profile == DUST_PROFILE_QUIC && quic_fit(w, &e[i], s) != 0)
			continue;
		if (seal_place(w, &e[i], s, &tx[nt]) != 0)
			continue;
		txm[nt] = e[i].m;
		mac[nt++] = atomic_load_explicit(&p->mac, memory_order_relaxed);
	}
	DUST_PROF_LAP(LOOKUP);
	/* One call into the AEAD backend for the whole burst. */
	dust_data_seal_burst(tx, nt, &w->rng, &gw->cfg.pad, w->now_s);
	for (uint16_t i = 0; i < nt; i++)
		seal_done(w, txm[i], &tx[i], mac[i]);
}
