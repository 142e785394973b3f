/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cover server's exception path ([quic] cover = tap, SPEC §12.5).
 * Every frame to the gateway's address that dustgw does not consume as
 * Dust (quic Initials that do not authenticate, the later datagrams of
 * those flows, short headers of no session, TCP, ICMP, other UDP, ARP
 * replies) is written to a net_tap port, whose kernel interface a real
 * HTTPS + HTTP/3 server listens behind; what the kernel writes back goes
 * out of the net port unchanged.
 *
 * L2: the kernel interface takes the net port's MAC (net_tap sets the
 * kernel side to the port's address) and the operator gives it the
 * gateway's address and routes, as the NIC would have had. So the
 * kernel's frames leave with the gateway's MAC, and it resolves next hops
 * by ARP/ND through this path: dustgw answers requests for its own address
 * itself (neigh.c) and hands every other ARP and ICMPv6 to the kernel.
 *
 * Each worker owns tap queue wid (RX and TX): no lock, no frame crosses
 * lcores. The tap is read at the TX-drain tick, not every loop: a tap read
 * is a read(2), and one per loop would cost the Dust fast path a syscall
 * per burst; 32 frames per 100 us tick is 320 kpps, above the rate limit.
 */
#include <errno.h>
#include <stddef.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "cover.h"
#include "dgw_pvt.h"
#include "net.h"

enum {
	COVER_BUCKETS =
	    1024, /* per-prefix token buckets per worker (hashed, shared on collision) */
	COVER_EXPIRE_SLICE = 4096, /* flow slots looked at per expiry round */
};

/* A quic-port flow: the client's address and port (zero padded, hashed whole). */
struct cover_key {
	uint8_t a[16];
	uint16_t port;
	uint8_t family;
	uint8_t pad;
};

/* A token bucket in TSC cycles: each frame costs cost cycles, credit tops out at cap. */
struct bucket {
	uint64_t credit;
	uint64_t last;
};

struct dgw_cover_w {
	struct rte_hash *flows;
	struct cover_key *keys; /* by the hash's position, for expiry */
	uint32_t *seen_s;       /* last datagram of the flow, 0 = free */
	uint32_t nflows, scan;
	struct rte_eth_dev_tx_buffer *txb;
	uint64_t cost, cap;   /* global bucket, this worker's share of cover_rate */
	uint64_t pcost, pcap; /* per-prefix buckets */
	struct bucket all;
	struct bucket pfx[COVER_BUCKETS];
};

static bool take_token(struct bucket *b, uint64_t now, uint64_t cost, uint64_t cap)
{
	uint64_t c = b->credit + (now - b->last);

	b->last = now;
	b->credit = c > cap ? cap : c;
	if (b->credit < cost)
		return false;
	b->credit -= cost;
	return true;
}

static void key_of(struct cover_key *k, const struct dust_endpoint *ep)
{
	memset(k, 0, sizeof(*k));
	k->family = ep->ip.family;
	memcpy(k->a, ep->ip.a, ep->ip.family == 6 ? 16 : 4);
	k->port = ep->port;
}

/* The source prefix's bucket: /24 for IPv4, /48 for IPv6, one for the rest (ARP). */
static struct bucket *prefix_bucket(struct dgw_cover_w *c, const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	uint16_t type = rte_be_to_cpu_16(eth->ether_type);
	uint32_t h = 0;

	if (type == RTE_ETHER_TYPE_IPV4 && m->data_len >= DGW_ETH_LEN + 20) {
		const struct rte_ipv4_hdr *ip = (const void *)(eth + 1);

		h = rte_hash_crc_4byte(rte_be_to_cpu_32(ip->src_addr) >> 8, 4);
	} else if (type == RTE_ETHER_TYPE_IPV6 && m->data_len >= DGW_ETH_LEN + 40) {
		const struct rte_ipv6_hdr *ip = (const void *)(eth + 1);

		h = rte_hash_crc(ip->src_addr, 6, 6);
	}
	return &c->pfx[h % COVER_BUCKETS];
}

/*
 * A sender that leaves its checksum to offload (veth, containers) puts only
 * the pseudo-header sum in the field, and af_packet hands it on as is; the
 * kernel behind the tap would drop it. Finished here, only where the
 * gateway accepts such checksums ([gateway] udp_checksum, hints.c).
 */
static void finish_csum(struct dgw *gw, struct rte_mbuf *m)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	uint16_t type = rte_be_to_cpu_16(eth->ether_type);
	uint16_t phdr, l4len, cur, sum;
	size_t off;
	void *ip = eth + 1, *l4;
	uint8_t proto;
	bool v6;

	if (gw->net_csum != DGW_CSUM_PARTIAL)
		return;
	if (type == RTE_ETHER_TYPE_IPV4 && m->data_len >= DGW_ETH_LEN + 20) {
		struct rte_ipv4_hdr *h = ip;
		uint16_t ihl = (h->version_ihl & 0xf) * 4, tot = rte_be_to_cpu_16(h->total_length);

		if (ihl < 20 || tot < ihl || DGW_ETH_LEN + tot > m->data_len ||
		    (h->fragment_offset &
		     rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)))
			return;
		proto = h->next_proto_id;
		l4 = (uint8_t *)ip + ihl;
		l4len = tot - ihl;
		v6 = false;
	} else if (type == RTE_ETHER_TYPE_IPV6 && m->data_len >= DGW_ETH_LEN + 40) {
		struct rte_ipv6_hdr *h = ip;

		l4len = rte_be_to_cpu_16(h->payload_len);
		if (DGW_ETH_LEN + 40 + l4len > m->data_len)
			return;
		proto = h->proto;
		l4 = h + 1;
		v6 = true;
	} else {
		return;
	}
	if (proto == IPPROTO_TCP && l4len >= sizeof(struct rte_tcp_hdr))
		off = offsetof(struct rte_tcp_hdr, cksum);
	else if (proto == IPPROTO_UDP && l4len >= sizeof(struct rte_udp_hdr))
		off = offsetof(struct rte_udp_hdr, dgram_cksum);
	else
		return;
	memcpy(&cur, (uint8_t *)l4 + off, 2);
	/* rte_ipv*_phdr_cksum reads the L4 length from the IP header */
	phdr = v6 ? rte_ipv6_phdr_cksum(ip, 0) : rte_ipv4_phdr_cksum(ip, 0);
	if (cur != phdr || (proto == IPPROTO_UDP && !v6 && cur == 0))
		return;
	memset((uint8_t *)l4 + off, 0, 2);
	sum = v6 ? rte_ipv6_udptcp_cksum(ip, l4) : rte_ipv4_udptcp_cksum(ip, l4);
	memcpy((uint8_t *)l4 + off, &sum, 2);
}

static void remember(struct dgw_worker *w, struct dgw_cover_w *c, const struct dust_endpoint *ep)
{
	struct cover_key k;
	int32_t pos;

	key_of(&k, ep);
	pos = rte_hash_add_key(c->flows, &k);
	if (pos < 0) {
		dgw_ctr_inc(w, DGW_CTR_COVER_FLOW_FULL); /* handed over, but not remembered */
		return;
	}
	if (!c->seen_s[pos]) {
		c->nflows++;
		dgw_ctr_inc(w, DGW_CTR_COVER_FLOWS);
	}
	c->keys[pos] = k;
	c->seen_s[pos] = w->now_s ? w->now_s : 1;
}

bool dgw_cover_flow(struct dgw_worker *w, const struct dust_endpoint *ep)
{
	struct dgw_cover_w *c = w->cover;
	struct cover_key k;
	int32_t pos;

	if (!c || !c->nflows)
		return false;
	key_of(&k, ep);
	pos = rte_hash_lookup(c->flows, &k);
	if (pos < 0)
		return false;
	c->seen_s[pos] = w->now_s ? w->now_s : 1;
	return true;
}

void dgw_cover_take(struct dgw_worker *w, struct rte_mbuf *m, const struct dust_endpoint *flow)
{
	struct dgw_cover_w *c = w->cover;
	uint64_t now = rte_rdtsc();

	if (!take_token(prefix_bucket(c, m), now, c->pcost, c->pcap)) {
		dgw_drop_m(w, m, DGW_DROP_COVER_PREFIX_RATE);
		return;
	}
	if (!take_token(&c->all, now, c->cost, c->cap)) {
		dgw_drop_m(w, m, DGW_DROP_COVER_RATE);
		return;
	}
	if (flow)
		remember(w, c, flow);
	finish_csum(w->gw, m);
	dgw_ctr_inc(w, DGW_CTR_COVER_IN);
	rte_eth_tx_buffer(w->gw->cover_port, w->wid, c->txb, m);
}

/*
 * An intro that did not authenticate as Dust: a browser's, a prober's, a
 * replayed Dust Initial. The store's own failures (persist, unavailable)
 * are a Dust client's, and a datagram from an address with a live session
 * (old) is that session's: those stay drops.
 */
static bool not_dust(enum dust_drop d)
{
	switch (d) {
	case DUST_DROP_TRUNCATED:
	case DUST_DROP_MALFORMED:
	case DUST_DROP_INTRO_UNKNOWN:
	case DUST_DROP_INTRO_AUTH:
	case DUST_DROP_INTRO_EXPIRED:
	case DUST_DROP_INTRO_WRONG_KEY:
	case DUST_DROP_INTRO_STALE:
	case DUST_DROP_INTRO_REPLAY:
	case DUST_DROP_INTRO_DUP:
	case DUST_DROP_INTRO_REVOKED:
	case DUST_DROP_INTRO_EARLY:
		return true;
	default:
		return false;
	}
}

bool dgw_cover_intro(struct dgw_worker *w, struct rte_mbuf *m, const struct dust_endpoint *ep,
                     const struct dust_session *old, enum dust_drop d)
{
	if (!dgw_cover_on(w) || old || !not_dust(d))
		return false;
	if (w->hello_first) { /* a paired hello: its first Initial goes before its second */
		struct rte_mbuf *first = w->hello_first;

		w->hello_first = NULL;
		dgw_cover_take(w, first, ep);
	}
	dgw_cover_take(w, m, ep);
	return true;
}

void dgw_cover_poll(struct dgw_worker *w)
{
	struct rte_mbuf *pkts[DGW_BURST];
	uint16_t n;

	if (!w->cover)
		return;
	rte_eth_tx_buffer_flush(w->gw->cover_port, w->wid, w->cover->txb);
	dgw_learn_send(w);
	n = rte_eth_rx_burst(w->gw->cover_port, w->wid, pkts, DGW_BURST);
	for (uint16_t i = 0; i < n; i++) {
		if (dgw_learn_catch(w, pkts[i]))
			continue; /* to the learner's probe address: never on the wire */
		dgw_ctr_inc(w, DGW_CTR_COVER_OUT);
		dgw_net_tx(w, pkts[i]);
	}
}

void dgw_cover_expire(struct dgw_worker *w)
{
	struct dgw_cover_w *c = w->cover;
	uint32_t cap, idle;

	if (!c || !c->nflows)
		return;
	cap = w->gw->cfg.cover_flows;
	idle = w->gw->cfg.cover_idle_s;
	for (unsigned i = 0; i < COVER_EXPIRE_SLICE && i < cap; i++) {
		uint32_t pos = c->scan;

		c->scan = (c->scan + 1) % cap;
		if (!c->seen_s[pos] || w->now_s - c->seen_s[pos] < idle)
			continue;
		rte_hash_del_key(c->flows, &c->keys[pos]);
		c->seen_s[pos] = 0;
		c->nflows--;
	}
}

static void unsent(struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct dgw_worker *w = arg;

	dgw_count_drops(w, DGW_DROP_COVER_TX_FULL, n);
	dgw_ctr_sub(w, DGW_CTR_COVER_IN, n);
	rte_pktmbuf_free_bulk(pkts, n);
}

static void bucket_init(uint64_t rate, uint64_t *cost, uint64_t *cap)
{
	uint64_t hz = rte_get_tsc_hz();

	*cost = hz / (rate ? rate : 1);
	/* a tenth of a second of frames, at least 32 (one burst) */
	*cap = *cost * RTE_MAX(rate / 10, (uint64_t)DGW_BURST);
}

static int worker_init(struct dgw_worker *w)
{
	const struct dgw_config *cfg = &w->gw->cfg;
	static _Atomic unsigned seq;
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters p = {
	    .name = name,
	    .entries = cfg->cover_flows,
	    .key_len = sizeof(struct cover_key),
	    .hash_func = rte_hash_crc,
	    .socket_id = (int)rte_socket_id(),
	};
	struct dgw_cover_w *c = rte_zmalloc("dgw_cover", sizeof(*c), RTE_CACHE_LINE_SIZE);
	uint64_t now = rte_rdtsc();

	if (!c)
		return -ENOMEM;
	w->cover = c;
	snprintf(name, sizeof(name), "dgw_cov_%u_%u", w->wid, atomic_fetch_add(&seq, 1));
	c->flows = rte_hash_create(&p);
	c->keys = rte_zmalloc("dgw_cover_keys", sizeof(*c->keys) * cfg->cover_flows, 0);
	c->seen_s = rte_zmalloc("dgw_cover_seen", sizeof(*c->seen_s) * cfg->cover_flows, 0);
	c->txb =
	    rte_zmalloc("dgw_cover_txb", RTE_ETH_TX_BUFFER_SIZE(DGW_BURST), RTE_CACHE_LINE_SIZE);
	if (!c->flows || !c->keys || !c->seen_s || !c->txb)
		return -ENOMEM;
	rte_eth_tx_buffer_init(c->txb, DGW_BURST);
	rte_eth_tx_buffer_set_err_callback(c->txb, unsent, w);
	bucket_init(RTE_MAX(cfg->cover_rate / w->gw->nworkers, 1u), &c->cost, &c->cap);
	bucket_init(cfg->cover_prefix_rate, &c->pcost, &c->pcap);
	c->all = (struct bucket){.credit = c->cap, .last = now};
	for (unsigned i = 0; i < COVER_BUCKETS; i++)
		c->pfx[i] = (struct bucket){.credit = c->pcap, .last = now};
	return 0;
}

static int tap_start(struct dgw *gw, const char *dev)
{
	struct rte_eth_conf conf;
	uint16_t q = gw->nworkers, rxd = 512, txd = 512;
	int rc;

	memset(&conf, 0, sizeof(conf));
	if ((rc = rte_eth_dev_get_port_by_name(dev, &gw->cover_port)) != 0 ||
	    (rc = rte_eth_dev_configure(gw->cover_port, q, q, &conf)) != 0 ||
	    (rc = rte_eth_dev_adjust_nb_rx_tx_desc(gw->cover_port, &rxd, &txd)) != 0)
		return rc;
	for (uint16_t i = 0; i < q; i++) {
		int sock = rte_eth_dev_socket_id(gw->cover_port);

		if ((rc = rte_eth_rx_queue_setup(gw->cover_port, i, rxd, sock, NULL, gw->pool)) ||
		    (rc = rte_eth_tx_queue_setup(gw->cover_port, i, txd, sock, NULL)))
			return rc;
	}
	return rte_eth_dev_start(gw->cover_port);
}

int dgw_cover_setup(struct dgw *gw)
{
	char dev[RTE_ETH_NAME_MAX_LEN], args[128], mac[RTE_ETHER_ADDR_FMT_SIZE];
	int rc;

	if (gw->cfg.cover != DGW_COVER_TAP)
		return 0;
	rte_ether_format_addr(mac, sizeof(mac), &gw->net_mac);
	snprintf(dev, sizeof(dev), "net_tap_dgwcover%u", gw->net_port);
	snprintf(args, sizeof(args), "iface=%s,mac=%s", gw->cfg.cover_iface, mac);
	/* through EAL hotplug: rte_vdev_init would link the vdev bus library too */
	if ((rc = rte_eal_hotplug_add("vdev", dev, args)) != 0 || (rc = tap_start(gw, dev)) != 0) {
		DGW_LOG(ERR, "cover: tap %s (%s): %s", dev, args, strerror(rc < 0 ? -rc : rc));
		return rc < 0 ? rc : -rc;
	}
	gw->cover_on = true;
	for (unsigned i = 0; i < gw->nworkers; i++)
		if ((rc = worker_init(gw->w[i])) != 0)
			return rc;
	DGW_LOG(INFO, "cover: what is not Dust goes to %s (MAC %s), at most %u/s, %u/s per prefix",
	        gw->cfg.cover_iface, mac, gw->cfg.cover_rate, gw->cfg.cover_prefix_rate);
	return dgw_learn_setup(gw);
}

void dgw_cover_free(struct dgw *gw)
{
	dgw_learn_free(gw);
	if (gw->cover_on) {
		rte_eth_dev_stop(gw->cover_port);
		rte_eth_dev_close(gw->cover_port);
		gw->cover_on = false;
	}
	for (unsigned i = 0; i < gw->nworkers; i++) {
		struct dgw_worker *w = gw->w[i];
		struct dgw_cover_w *c = w ? w->cover : NULL;

		if (!c)
			continue;
		rte_hash_free(c->flows);
		rte_free(c->keys);
		rte_free(c->seen_s);
		rte_free(c->txb);
		rte_free(c);
		w->cover = NULL;
	}
}
