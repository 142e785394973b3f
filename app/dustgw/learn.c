/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Dust's first flight in the cover server's shape, learned from the cover
 * server itself ([quic] cover = tap, cover_learn_s; SPEC §12.5). At start
 * and every cover_learn_s seconds the main lcore makes LEARN_PROBES
 * Chromium-shaped hellos (libdust's own client hello, under a throwaway
 * invitation naming cover_learn_sni: the server sees a well-formed Chromium
 * 156 hello over two Initials), from cover_learn_src (an address that never
 * exists on the wire, 192.0.2.1 by default) and a random port each. Worker 0
 * writes them into the cover tap on its queue. The kernel's answers to that
 * address come out of the tap on any worker's queue: dgw_learn_catch takes
 * them there (they never go out of the net port) and hands them to the main
 * lcore over a ring, and answers the kernel's ARP for the address itself.
 * The hellos go a few milliseconds apart, each hello's second Initial
 * after its first, as they reach a server over a real path (see
 * LEARN_PAIR_MS). After LEARN_WINDOW_MS the main lcore reads the datagrams' long headers
 * (shape.c: sizes and packet types, nothing decrypted), derives the shape
 * and installs it with one atomic store: workers read it per answer.
 *
 * What it costs the workers: a compare per tap frame, and worker 0 one
 * ring dequeue per housekeeping pass. The hellos' X25519 and ML-KEM key
 * generation run on the main lcore, off every RX path.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <sodium.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_udp.h>

#include "dgw_pvt.h"
#include "learn.h"
#include "neigh.h"
#include "net.h"
#include "shape.h"

enum {
	LEARN_PROBES = 4,        /* hellos per round: the tail's spread */
	LEARN_WINDOW_MS = 400,   /* the answers and the first PTO resend (quic-go: ~205 ms) */
	LEARN_RETRY_S = 10,      /* after a round with no answer (the server not up yet) */
	LEARN_RING = 256,        /* frames to the probe address waiting for the main lcore */
	LEARN_PORT_BASE = 49152, /* the probes' source ports: the dynamic range */
	/*
	 * A hello's second Initial goes LEARN_PAIR_MS after its first, the next
	 * hello LEARN_GAP_MS after it: eight datagrams back to back made caddy
	 * (quic-go) lose most hellos' second Initial (1 flight in 4 hellos,
	 * an ACK-only Initial for the rest), as a client on a real path does not.
	 * quic-go drops an Initial that comes while it still sets up the
	 * connection of the one before: at 5 ms apart it answered 2 or 3 of a
	 * round's 4 hellos in 10 of 12 rounds of a netns-cover run (it took
	 * 23 ms to acknowledge a first Initial on a loaded machine).
	 */
	LEARN_PAIR_MS = 30,
	LEARN_GAP_MS = 60,
};

/* A frame to the probe address, and when a worker took it from the tap. */
struct caught {
	struct rte_mbuf *m;
	uint64_t tsc;
};

struct dgw_learn {
	struct rte_ring *out;    /* main -> worker 0: probe frames for the tap (SP/SC) */
	struct rte_ring *caught; /* workers -> main: struct caught (MP/SC) */
	rte_be32_t src;          /* the probe address */
	char src_str[INET_ADDRSTRLEN];
	struct rte_ether_addr src_mac;
	struct dust_rng rng; /* the main lcore's */
	struct dgw_shape_probe probe[LEARN_PROBES];
	uint16_t port[LEARN_PROBES];
	struct rte_mbuf *sched[2 * LEARN_PROBES]; /* the round's frames, in the order they go */
	uint64_t due[2 * LEARN_PROBES];           /* when each goes (TSC) */
	unsigned nsched, nsent;
	bool listening, failing;
	uint64_t t0, next; /* TSC: the round's start, the next round */
};

/* ---- workers ---- */

/* The kernel asks for the probe address (it is on a connected route): answer it. */
static bool arp_answer(struct dgw_worker *w, struct dgw_learn *L, struct rte_mbuf *m)
{
	struct rte_arp_hdr *a = dgw_arp_request(m);

	if (!a || a->arp_data.arp_tip != L->src)
		return false;
	dgw_arp_reply(m, &L->src_mac);
	if (rte_eth_tx_burst(w->gw->cover_port, w->wid, &m, 1) != 1)
		rte_pktmbuf_free(m);
	return true;
}

bool dgw_learn_catch(struct dgw_worker *w, struct rte_mbuf *m)
{
	struct dgw_learn *L = w->gw->learn;
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
	struct caught c = {.m = m};

	if (!L || m->data_len < DGW_ETH_LEN + sizeof(*ip))
		return false;
	if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP))
		return arp_answer(w, L, m);
	if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || ip->dst_addr != L->src)
		return false;
	dgw_ctr_inc(w, DGW_CTR_COVER_LEARN_RX);
	c.tsc = rte_rdtsc();
	if (rte_ring_mp_enqueue_elem(L->caught, &c, sizeof(c)) != 0)
		rte_pktmbuf_free(m);
	return true;
}

void dgw_learn_send(struct dgw_worker *w)
{
	struct dgw_learn *L = w->gw->learn;
	struct rte_mbuf *m[2 * LEARN_PROBES];
	unsigned n, sent;

	if (!L || w->wid != 0)
		return;
	n = rte_ring_sc_dequeue_burst(L->out, (void **)m, RTE_DIM(m), NULL);
	if (!n)
		return;
	sent = rte_eth_tx_burst(w->gw->cover_port, w->wid, m, (uint16_t)n);
	if (sent < n)
		rte_pktmbuf_free_bulk(m + sent, n - sent);
}

/* ---- the main lcore: probes ---- */

/* An Ethernet/IPv4/UDP frame from the probe address and port to the quic port. */
static struct rte_mbuf *frame(struct dgw *gw, struct dgw_learn *L, uint16_t port, const uint8_t *dg,
                              uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(gw->pool);
	uint16_t total = DGW_OUTER4_LEN + len;
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;

	if (!m)
		return NULL;
	if (rte_pktmbuf_tailroom(m) < total) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	udp = (struct rte_udp_hdr *)(ip + 1);
	rte_ether_addr_copy(&gw->net_mac, &eth->dst_addr);
	rte_ether_addr_copy(&L->src_mac, &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	dgw_udp4_hdrs(ip, &L->src, gw->cfg.ip4.a, port, gw->cfg.quic_port, sizeof(*udp) + len,
	              (rte_be16_t)dust_rng_uniform(&L->rng, 65536));
	memcpy(udp + 1, dg, len);
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	m->data_len = m->pkt_len = total;
	return m;
}

/*
 * One Chromium-shaped hello (two 1250-byte Initials) under a throwaway
 * invitation: a server key, a client key and secrets that exist for this
 * hello alone and are wiped with it. The cover server sees a browser.
 */
static int hello(struct dgw *gw, struct dgw_learn *L, uint8_t out[DUST_QUIC_HELLO_BYTES])
{
	const struct dust_ipaddr tun = {.family = 4, .a = {10, 0, 0, 2}};
	struct dust_identity srv, cl;
	struct dust_invite inv;
	struct dust_quic_client *qc = calloc(1, sizeof(*qc));
	struct timespec ts;
	int rc = -ENOMEM;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (!qc)
		return rc;
	rc = dust_identity_generate(&srv);
	if (!rc)
		rc = dust_identity_generate(&cl);
	if (!rc)
		rc = dust_invite_new(&inv, &srv, &gw->cfg.ip4, gw->cfg.quic_port, &tun, 32,
		                     (uint64_t)ts.tv_sec + 3600);
	if (!rc) {
		inv.profile = DUST_PROFILE_QUIC;
		rc = dust_invite_cover_set(&inv, gw->cfg.cover_learn_sni);
	}
	if (!rc)
		rc = dust_quic_intro_build(
		    &inv, &cl, &L->rng, (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000,
		    out, DUST_QUIC_HELLO_BYTES, qc);
	dust_quic_client_wipe(qc);
	free(qc);
	dust_identity_wipe(&srv);
	dust_identity_wipe(&cl);
	sodium_memzero(&inv, sizeof(inv));
	return rc < 0 ? rc : 0;
}

/* Probe i's two frames at f; 0 or -errno. */
static int probe_frames(struct dgw *gw, struct dgw_learn *L, unsigned i, struct rte_mbuf **f)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES];
	int rc = hello(gw, L, dg);

	if (rc)
		return rc;
	f[0] = frame(gw, L, L->port[i], dg, DUST_QUIC_CLIENT_DGRAM);
	f[1] = f[0] ? frame(gw, L, L->port[i], dg + DUST_QUIC_CLIENT_DGRAM, DUST_QUIC_CLIENT_DGRAM)
	            : NULL;
	if (f[1])
		return 0;
	rte_pktmbuf_free(f[0]);
	return -ENOMEM;
}

static uint64_t tsc_after_s(uint64_t now, uint32_t s)
{
	return now + rte_get_tsc_hz() * s;
}

static void count(struct dgw *gw, unsigned ctr)
{
	/* the main lcore's own counters live in worker 0's stats: it writes no learn_* field */
	dgw_ctr_inc(gw->w[0], ctr);
}

static void failed(struct dgw *gw, struct dgw_learn *L, uint64_t now, const char *why)
{
	count(gw, DGW_CTR_COVER_LEARN_FAIL);
	if (!L->failing) /* once, until a round succeeds */
		DGW_LOG(WARNING,
		        "cover: learning the first flight's shape from the cover server: %s "
		        "(is it up, and does the kernel route %s through %s?); the answer keeps "
		        "its shape, retried every %u s",
		        why, L->src_str, gw->cfg.cover_iface,
		        RTE_MIN(gw->cfg.cover_learn_s, (uint32_t)LEARN_RETRY_S));
	L->failing = true;
	L->next = tsc_after_s(now, RTE_MIN(gw->cfg.cover_learn_s, (uint32_t)LEARN_RETRY_S));
}

static void start(struct dgw *gw, struct dgw_learn *L, uint64_t now)
{
	uint64_t ms = rte_get_tsc_hz() / 1000;
	unsigned n = 0;

	memset(L->probe, 0, sizeof(L->probe));
	for (unsigned i = 0; i < LEARN_PROBES; i++) {
		/* distinct ports: each probe's answers are told apart by port alone */
		L->port[i] = (uint16_t)(LEARN_PORT_BASE +
		                        LEARN_PROBES * dust_rng_uniform(&L->rng, 4096) + i);
		if (probe_frames(gw, L, i, L->sched + n) != 0)
			continue;
		L->due[n] = now + ms * LEARN_GAP_MS * i;
		L->due[n + 1] = L->due[n] + ms * LEARN_PAIR_MS;
		n += 2;
	}
	L->nsched = n;
	L->nsent = 0;
	if (!n) {
		failed(gw, L, now, "no probe could be made");
		return;
	}
	L->t0 = now;
	L->listening = true;
}

/* The round's frames that are due, to worker 0 (a full ring: the next tick). */
static void release(struct dgw_learn *L, uint64_t now)
{
	while (L->nsent < L->nsched && L->due[L->nsent] <= now &&
	       rte_ring_sp_enqueue(L->out, L->sched[L->nsent]) == 0)
		L->sched[L->nsent++] = NULL;
}

static void unsent_free(struct dgw_learn *L)
{
	for (; L->nsent < L->nsched; L->nsent++) {
		rte_pktmbuf_free(L->sched[L->nsent]);
		L->sched[L->nsent] = NULL;
	}
}

/* A frame a worker caught: a datagram from the quic port to one of the probes' ports. */
static void record(struct dgw *gw, struct dgw_learn *L, const struct caught *c)
{
	const struct rte_mbuf *m = c->m;
	const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, const void *, DGW_ETH_LEN);
	const struct rte_udp_hdr *udp;
	struct dgw_shape_probe *p = NULL;
	size_t ihl = (ip->version_ihl & 0xf) * 4u, tot = rte_be_to_cpu_16(ip->total_length), ulen;

	if (ihl < sizeof(*ip) || tot < ihl + sizeof(*udp) ||
	    tot > (size_t)m->data_len - DGW_ETH_LEN || ip->next_proto_id != IPPROTO_UDP)
		return;
	udp = (const struct rte_udp_hdr *)((const uint8_t *)ip + ihl);
	ulen = rte_be_to_cpu_16(udp->dgram_len);
	if (udp->src_port != rte_cpu_to_be_16(gw->cfg.quic_port) || ulen < sizeof(*udp) ||
	    ulen > tot - ihl)
		return;
	for (unsigned i = 0; i < LEARN_PROBES; i++)
		if (udp->dst_port == rte_cpu_to_be_16(L->port[i]))
			p = &L->probe[i];
	if (!p || p->n == DGW_SHAPE_DG_MAX)
		return;
	/* one that does not parse keeps its size and no kind: it matches nothing */
	dgw_shape_dgram((const uint8_t *)(udp + 1), ulen - sizeof(*udp), &p->dg[p->n]);
	p->dg[p->n++].t_ms =
	    c->tsc > L->t0 ? (uint32_t)((c->tsc - L->t0) * 1000 / rte_get_tsc_hz()) : 0;
}

static void drain(struct dgw *gw, struct dgw_learn *L)
{
	struct caught c[DGW_BURST];
	unsigned n;

	do {
		n = rte_ring_sc_dequeue_burst_elem(L->caught, c, sizeof(c[0]), DGW_BURST, NULL);
		for (unsigned i = 0; i < n; i++) {
			if (L->listening)
				record(gw, L, &c[i]);
			rte_pktmbuf_free(c[i].m); /* late ones (the server's later PTOs) too */
		}
	} while (n == DGW_BURST);
}

static void finish(struct dgw *gw, struct dgw_learn *L, uint64_t now)
{
	struct dgw_shape cur, got;
	uint64_t v, old = atomic_load_explicit(&gw->shape, memory_order_relaxed);
	unsigned ok, cl;

	L->listening = false;
	unsent_free(L);
	dgw_shape_unpack(old, &cur);
	ok = dgw_shape_derive(L->probe, LEARN_PROBES, &cur, &got);
	if (!ok) {
		failed(gw, L, now, "no answer of the first flight's shape");
		return;
	}
	cl = dgw_shape_clamp(&got);
	v = dgw_shape_pack(&got);
	count(gw, DGW_CTR_COVER_LEARN_OK);
	L->failing = false;
	L->next = tsc_after_s(now, gw->cfg.cover_learn_s);
	if (v == old)
		return;
	atomic_store_explicit(&gw->shape, v, memory_order_relaxed);
	DGW_LOG(INFO,
	        "cover: the first flight takes the cover server's shape (%u of %u probes): "
	        "answer %u B, tail %u..%u B, %s, PTO %u ms, 1-RTT %u B after tails to %u B "
	        "(coalesced in %u/3)%s",
	        ok, LEARN_PROBES, got.answer, got.tail_min, got.tail_max,
	        got.ack_first ? "ACK-only Initial first" : "no ACK-only Initial", got.pto_ms,
	        got.short_len, got.short_tail, got.coalesce,
	        cl ? " (clamped to what clients open)" : "");
}

void dgw_learn_tick(struct dgw *gw, uint64_t now)
{
	struct dgw_learn *L = gw->learn;

	if (!L)
		return;
	drain(gw, L);
	if (L->listening)
		release(L, now);
	if (L->listening && now - L->t0 >= rte_get_tsc_hz() / 1000 * LEARN_WINDOW_MS)
		finish(gw, L, now);
	else if (!L->listening && now >= L->next)
		start(gw, L, now);
}

/* ---- setup ---- */

int dgw_learn_setup(struct dgw *gw)
{
	const struct dgw_config *cfg = &gw->cfg;
	static _Atomic unsigned seq; /* ring names are process-wide */
	char name[RTE_RING_NAMESIZE];
	unsigned id = atomic_fetch_add(&seq, 1);
	struct dgw_learn *L;

	if (cfg->cover != DGW_COVER_TAP || !cfg->cover_learn_s || cfg->ip4.family != 4 ||
	    !cfg->quic_port)
		return 0;
	L = rte_zmalloc("dgw_learn", sizeof(*L), RTE_CACHE_LINE_SIZE);
	if (!L)
		return -ENOMEM;
	gw->learn = L;
	snprintf(name, sizeof(name), "dgw_learn_out%u", id);
	L->out = rte_ring_create(name, 2 * LEARN_PROBES * 2, (int)rte_socket_id(),
	                         RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "dgw_learn_in%u", id);
	L->caught = rte_ring_create_elem(name, sizeof(struct caught), LEARN_RING,
	                                 (int)rte_socket_id(), RING_F_SC_DEQ);
	if (!L->out || !L->caught)
		return -ENOMEM;
	memcpy(&L->src, cfg->cover_learn_src.a, 4);
	inet_ntop(AF_INET, &L->src, L->src_str, sizeof(L->src_str));
	dust_rng_init(&L->rng);
	/* locally administered, unicast: the probe address's own, on no wire */
	dust_rng_bytes(&L->rng, L->src_mac.addr_bytes, RTE_ETHER_ADDR_LEN);
	L->src_mac.addr_bytes[0] = (uint8_t)((L->src_mac.addr_bytes[0] & 0xfc) | 0x02);
	DGW_LOG(INFO,
	        "cover: learning the first flight's shape from the cover server every %u s "
	        "(hellos for %s from %s)",
	        cfg->cover_learn_s, cfg->cover_learn_sni, L->src_str);
	return 0;
}

void dgw_learn_free(struct dgw *gw)
{
	struct dgw_learn *L = gw->learn;
	struct caught c;
	void *m;

	if (!L)
		return;
	unsent_free(L);
	while (L->out && rte_ring_dequeue(L->out, &m) == 0)
		rte_pktmbuf_free(m);
	while (L->caught && rte_ring_dequeue_elem(L->caught, &c, sizeof(c)) == 0)
		rte_pktmbuf_free(c.m);
	rte_ring_free(L->out);
	rte_ring_free(L->caught);
	dust_rng_wipe(&L->rng);
	rte_free(L);
	gw->learn = NULL;
}
