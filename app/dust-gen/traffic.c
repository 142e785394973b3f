/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-gen's traffic: one trial sends sealed probes toward the gateway at a
 * set rate (TSC-paced) or as fast as the port takes them, reads the
 * cleartext back on the delivery-side port and measures loss, reordering,
 * duplicates and latency (TX TSC in each probe; same host, same TSC).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dust-gen.h"
#include "frame.h"

static const uint8_t far_ip[4] = {10, 200, 0, 1}; /* a host behind the gateway */

/* IMIX by inner IP packet size, 7:4:1. */
static const uint16_t imix[12] = {64, 64, 64, 64, 64, 64, 64, 576, 576, 576, 576, 1400};

unsigned dg_size_of(const struct dg *g, uint64_t i)
{
	return g->o.size ? g->o.size : imix[i % 12];
}

/* Mean outer frame (Ethernet to Dust MAC, no padding) of the size mix. */
double dg_avg_frame(const struct dg *g)
{
	double sum = 0;

	for (unsigned i = 0; i < 12; i++)
		sum += 42 + DUST_DATA_OVERHEAD + dg_size_of(g, i);
	return sum / 12;
}

void dg_hist_init(struct dg_hist *h)
{
	if (!h->b)
		h->b = calloc(DG_HIST_BUCKETS + 1, sizeof(*h->b));
	else
		memset(h->b, 0, (DG_HIST_BUCKETS + 1) * sizeof(*h->b));
	h->n = h->sum_ns = h->max_ns = 0;
	h->min_ns = UINT64_MAX;
}

void dg_hist_free(struct dg_hist *h)
{
	free(h->b);
	h->b = NULL;
}

static void hist_add(struct dg_hist *h, uint64_t ns)
{
	uint64_t i = ns / DG_HIST_NS;

	h->b[i < DG_HIST_BUCKETS ? i : DG_HIST_BUCKETS]++;
	h->n++;
	h->sum_ns += ns;
	h->max_ns = ns > h->max_ns ? ns : h->max_ns;
	h->min_ns = ns < h->min_ns ? ns : h->min_ns;
}

/* Upper edge of the bucket holding the pct-th percentile (ns); 0 if empty. */
uint64_t dg_hist_pct(const struct dg_hist *h, double pct)
{
	uint64_t want = (uint64_t)((double)h->n * pct / 100.0 + 0.5), acc = 0;

	if (!h->n)
		return 0;
	if (want < 1)
		want = 1;
	for (uint64_t i = 0; i <= DG_HIST_BUCKETS; i++) {
		acc += h->b[i];
		if (acc >= want)
			return i < DG_HIST_BUCKETS ? (i + 1) * DG_HIST_NS : h->max_ns;
	}
	return h->max_ns;
}

static int seen_reserve(struct dg_flow *fl, uint64_t bit)
{
	uint64_t bits = fl->seen_bits ? fl->seen_bits : 1u << 20;
	uint64_t *p;

	if (bit < fl->seen_bits)
		return 0;
	while (bits <= bit)
		bits *= 2;
	p = realloc(fl->seen, bits / 8);
	if (!p)
		return -ENOMEM;
	memset((uint8_t *)p + fl->seen_bits / 8, 0, (bits - fl->seen_bits) / 8);
	fl->seen = p;
	fl->seen_bits = bits;
	return 0;
}

struct probe {
	uint32_t magic, client, cseq, q; /* q: the sending lcore's queue */
	uint64_t gseq, tsc;
};

/*
 * Probes' inner UDP checksum is 0 (none, allowed in IPv4): a gateway does
 * not check inner checksums, and summing every payload cost dust-gen about
 * a tenth of its time at 1400 B. The outer UDP checksum is computed.
 */
enum { PROBE_FLAGS = FRAME_DF | FRAME_NO_UDP_CSUM };

/* Forward: the probe's inner packet from the client's tunnel address, sealed, framed. */
static int fwd_build(struct dg *g, struct dg_client *c, uint8_t *f, const struct probe *p,
                     unsigned size, size_t room)
{
	uint8_t *dgp = f + 42, *in = dgp + DUST_DATA_PREFIX;
	size_t ilen = ip_udp4_opt(in, c->inv.tunnel.a, far_ip, (uint16_t)(1000 + p->client % 50000),
	                          9, in + 28, size - 28, 0, PROBE_FLAGS);
	int r = dust_data_seal(&c->s, &g->rng, &g->pad, g->now_s, dgp, ilen, room - 42);

	return r < 0 ? r : dg_frame(g, c, f, dgp, (size_t)r);
}

/* Reverse: cleartext from the far host to the client's tunnel address, on the delivery side. */
static int rev_build(struct dg *g, const struct dg_client *c, uint8_t *f, const struct probe *p,
                     unsigned size)
{
	size_t h = eth(f, g->gw_mac, g->dlv_mac, 0x0800);

	return (int)(h + ip_udp4_opt(f + h, far_ip, c->inv.tunnel.a, 9,
	                             (uint16_t)(1000 + p->client % 50000), f + h + 28, size - 28, 0,
	                             PROBE_FLAGS));
}

/* Build dir's next probe of the round-robin over clients into m. */
static int probe_build(struct dg *g, unsigned dir, struct rte_mbuf *m, uint64_t tsc)
{
	struct dg_flow *fl = &g->fl[dir];
	struct dg_client *c = dg_next_up(g, &fl->cur);
	unsigned size = dg_size_of(g, fl->gseq);
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	/* the probe's place: behind the inner IPv4 + UDP headers */
	uint8_t *pl = dir == DG_DIR_FWD ? f + 42 + DUST_DATA_PREFIX + 28 : f + 14 + 28;
	struct probe p = {DG_MAGIC, 0, 0, g->q, fl->gseq, tsc};
	int r;

	if (!c)
		return -EAGAIN; /* nobody up: churn took them all */
	p.client = (uint32_t)(c - g->c);
	p.cseq = c->tx_seq[dir];
	memcpy(pl, &p, sizeof(p));
	memset(pl + sizeof(p), 0, size - 28 - sizeof(p));
	r = dir == DG_DIR_FWD ? fwd_build(g, c, f, &p, size, rte_pktmbuf_tailroom(m))
	                      : rev_build(g, c, f, &p, size);
	if (r < 0)
		return r;
	m->data_len = m->pkt_len = (uint16_t)r;
	c->tx_seq[dir]++;
	fl->gseq++;
	return 0;
}

/* One direction of a trial: its counters, its report interval, what the port refused. */
struct tdir {
	struct dg_count k, k_mark; /* totals; at the last report */
	struct dg_hist ih;         /* this report interval */
	uint64_t first_gseq;
	struct rte_mbuf *pend[DG_BURST];
	unsigned npend, ipend;
	uint64_t skipped; /* schedule slots given up after a stall of ours */
};

struct trial {
	struct tdir d[2];
	struct dg_result *r;
};

/* Upper bounds of the latency buckets --prometheus shows (le, in ns). */
const uint64_t dg_lat_bounds_ns[DG_LAT_BOUNDS] = {
    10000,   20000,    50000,    100000,   200000,    500000,    1000000,   2000000,
    5000000, 10000000, 20000000, 50000000, 100000000, 200000000, 500000000, 1000000000,
};

static void live_lat(struct dg_live *l, unsigned dir, uint64_t ns)
{
	unsigned i = 0;

	while (i < DG_LAT_BOUNDS && ns > dg_lat_bounds_ns[i])
		i++;
	l->lat[dir][i]++;
	l->lat_sum_ns[dir] += ns;
}

/* The counts the scrape thread sees: finished trials plus this one so far. */
static void live_publish(struct dg *g, const struct dg_count *now, unsigned dir)
{
	const uint64_t *a = (const uint64_t *)&g->live.done[dir], *b = (const uint64_t *)now;
	uint64_t *k = (uint64_t *)&g->live.k[dir];

	for (size_t i = 0; i < sizeof(*now) / sizeof(*k); i++)
		__atomic_store_n(&k[i], a[i] + b[i], __ATOMIC_RELAXED);
}

/* A probe came back in dir: pl is its UDP payload, len the frame's length. */
static void rx_probe(struct dg *g, struct trial *t, unsigned dir, const uint8_t *pl, size_t plen,
                     size_t len, uint64_t now)
{
	struct dg_flow *fl = &g->fl[dir];
	struct tdir *d = &t->d[dir];
	struct probe p;
	struct dg_client *c;
	uint64_t ns;

	if (!pl || plen < sizeof(p))
		goto foreign;
	memcpy(&p, pl, sizeof(p));
	if (p.magic != DG_MAGIC || p.q != g->q || p.client >= g->n || p.gseq >= fl->gseq)
		goto foreign;
	if (p.gseq < d->first_gseq) {
		d->k.late++; /* from an earlier trial */
		return;
	}
	if (fl->seen[p.gseq / 64] & (UINT64_C(1) << (p.gseq % 64))) {
		d->k.dup++;
		return;
	}
	fl->seen[p.gseq / 64] |= UINT64_C(1) << (p.gseq % 64);
	d->k.rx++;
	d->k.rx_bytes += len;
	c = &g->c[p.client];
	if (p.cseq < c->rx_next[dir])
		d->k.reordered++;
	else
		c->rx_next[dir] = p.cseq + 1;
	ns = now > p.tsc ? (now - p.tsc) * 1000000000 / g->hz : 0;
	hist_add(&t->r->d[dir].h, ns);
	hist_add(&d->ih, ns);
	live_lat(&g->live, dir, ns);
	return;
foreign:
	d->k.foreign++;
}

static void rx_dlv(struct dg *g, struct trial *t)
{
	struct rte_mbuf *pkts[DG_BURST];
	uint16_t n = rte_eth_rx_burst(g->dlv, g->q, pkts, DG_BURST);
	uint64_t now = rte_rdtsc();

	for (uint16_t i = 0; i < n; i++) {
		struct frame_udp u;
		size_t len = pkts[i]->data_len;
		bool ok = frame_udp_parse(rte_pktmbuf_mtod(pkts[i], uint8_t *), len, &u) == 0 &&
		          u.family == 4;

		rx_probe(g, t, DG_DIR_FWD, ok ? u.pl : NULL, ok ? u.plen : 0, len, now);
	}
	rte_pktmbuf_free_bulk(pkts, n);
}

/*
 * What the gateway sealed toward a client (dg_net_poll opened it): the
 * inner IPv4 packet of a reverse probe, whose UDP payload is the probe.
 */
static void rx_rev(struct dg *g, void *arg, const uint8_t *ip, size_t len, uint64_t now)
{
	size_t ihl = len ? (size_t)(ip[0] & 0xf) * 4 : 0;
	bool ok = len >= 28 && ip[0] >> 4 == 4 && ip[9] == 17 && ihl >= 20 && ihl + 8 <= len;

	rx_probe(g, arg, DG_DIR_REV, ok ? ip + ihl + 8 : NULL, ok ? len - ihl - 8 : 0, 14 + len,
	         now);
}

static void rx_net(struct dg *g, struct trial *t)
{
	struct dg_count k0 = {0};

	dg_net_poll(g, &k0, rx_rev, t);
	t->d[DG_DIR_REV].k.foreign += k0.foreign;
}

/* Send up to want new probes of dir (after any the port refused last time). */
static void tx_some(struct dg *g, struct trial *t, unsigned dir, unsigned want)
{
	struct tdir *d = &t->d[dir];
	uint16_t sent;

	if (d->npend == d->ipend) {
		uint64_t tsc = rte_rdtsc();

		d->npend = d->ipend = 0;
		if (!want || rte_pktmbuf_alloc_bulk(g->pool, d->pend, want) != 0)
			return;
		if (seen_reserve(&g->fl[dir], g->fl[dir].gseq + want) != 0) {
			rte_pktmbuf_free_bulk(d->pend, want);
			return;
		}
		for (unsigned i = 0; i < want; i++)
			if (probe_build(g, dir, d->pend[i], tsc) != 0) {
				rte_pktmbuf_free_bulk(d->pend + i, want - i);
				want = i;
				break;
			}
		d->npend = want;
	}
	sent = rte_eth_tx_burst(dir == DG_DIR_FWD ? g->net : g->dlv, g->q, d->pend + d->ipend,
	                        (uint16_t)(d->npend - d->ipend));
	for (uint16_t i = 0; i < sent; i++)
		d->k.tx_bytes += d->pend[d->ipend + i]->data_len;
	d->ipend += sent;
	d->k.tx += sent;
}

static void report(struct dg *g, struct trial *t, double secs, double dt)
{
	static const char *const name[2] = {"tx", "rev tx"};
	char lc[16] = "";

	if (g->nq > 1)
		snprintf(lc, sizeof(lc), " [q%u]", g->q);

	for (unsigned dir = 0; dir < 2; dir++) {
		struct tdir *d = &t->d[dir];
		struct dg_count *a = &d->k, *b = &d->k_mark;

		if (!(g->o.dirs & 1u << dir))
			continue;
		if (!g->o.quiet)
			printf(
			    "dust-gen:%s %5.1fs %s %9.0f pps %7.3f Gbit/s | rx %9.0f pps | reord "
			    "%" PRIu64 " dup %" PRIu64
			    " | latency us p50 %.1f p99 %.1f p99.9 %.1f | up %u\n",
			    lc, secs, name[dir], (double)(a->tx - b->tx) / dt,
			    (double)(a->tx_bytes - b->tx_bytes) * 8 / dt / 1e9,
			    (double)(a->rx - b->rx) / dt, a->reordered - b->reordered,
			    a->dup - b->dup, dg_hist_pct(&d->ih, 50) / 1e3,
			    dg_hist_pct(&d->ih, 99) / 1e3, dg_hist_pct(&d->ih, 99.9) / 1e3, g->nup);
		d->k_mark = *a;
		dg_hist_init(&d->ih);
		live_publish(g, a, dir);
	}
	fflush(stdout);
	g->now_s = (uint32_t)time(NULL);
}

/* How many of dir's probes are due at now (pps 0: a full burst). */
static unsigned due_now(struct dg *g, struct tdir *d, double pps, uint64_t t0, uint64_t now)
{
	uint64_t due, done;

	if (pps <= 0)
		return DG_BURST;
	due = (uint64_t)((double)(now - t0) / (double)g->hz * pps);
	done = d->k.tx + (d->npend - d->ipend) + d->skipped;
	/*
	 * Descheduled, we would owe a burst far above the set rate: give the
	 * backlog up instead (the report shows the rate achieved).
	 */
	if (due > done + 4 * DG_BURST) {
		d->skipped += due - done - DG_BURST;
		done = due - DG_BURST;
	}
	return due > done ? (unsigned)RTE_MIN(due - done, (uint64_t)DG_BURST) : 0;
}

/* TX for the trial's duration at pps each way (0: max), reading both ports throughout. */
static void trial_run(struct dg *g, struct trial *t, double pps)
{
	uint64_t t0 = rte_rdtsc(), end = t0 + (uint64_t)(g->o.duration_s * (double)g->hz);
	uint64_t next_rep = t0 + g->hz, last_rep = t0, now;
	uint64_t stall_from = t0 + (end - t0) / 2,
	         stall_to = stall_from + g->hz / 1000 * g->o.stall_ms;
	bool idle;

	while ((now = rte_rdtsc()) < end) {
		idle = true;
		for (unsigned dir = 0; dir < 2; dir++) {
			struct tdir *d = &t->d[dir];

			if (g->o.dirs & 1u << dir)
				tx_some(g, t, dir, due_now(g, d, pps, t0, now));
			idle &= d->npend == d->ipend;
		}
		if (idle)
			dg_churn_tick(g, now, end);
		if (!g->o.stall_ms || now < stall_from || now >= stall_to)
			rx_dlv(g, t);
		rx_net(g, t);
		if (now >= next_rep) {
			report(g, t, (double)(now - t0) / (double)g->hz,
			       (double)(now - last_rep) / (double)g->hz);
			last_rep = now;
			next_rep += g->hz;
		}
	}
	t->r->secs = (double)(rte_rdtsc() - t0) / (double)g->hz;
}

static uint64_t rx_all(const struct trial *t)
{
	uint64_t n = 0;

	for (unsigned dir = 0; dir < 2; dir++)
		n += t->d[dir].k.rx + t->d[dir].k.late + t->d[dir].k.dup;
	return n;
}

/* Read both ports until drain_ms pass with nothing new and every intro is answered (<= 10x). */
static void drain(struct dg *g, struct trial *t)
{
	uint64_t last_rx = rx_all(t), quiet = g->hz / 1000 * g->o.drain_ms, now;
	uint64_t end = rte_rdtsc() + quiet, cap = rte_rdtsc() + 10 * quiet;

	while ((now = rte_rdtsc()) < cap && (now < end || g->nintro)) {
		rx_dlv(g, t);
		rx_net(g, t);
		if (rx_all(t) != last_rx) {
			last_rx = rx_all(t);
			end = rte_rdtsc() + quiet;
		}
	}
}

int dg_trial(struct dg *g, double pps, struct dg_result *r)
{
	struct trial t;
	int rc = 0;

	memset(&t, 0, sizeof(t));
	r->rate_pps = pps;
	t.r = r;
	for (unsigned dir = 0; dir < 2; dir++) {
		memset(&r->d[dir].k, 0, sizeof(r->d[dir].k));
		dg_hist_init(&r->d[dir].h);
		dg_hist_init(&t.d[dir].ih);
		if (!r->d[dir].h.b || !t.d[dir].ih.b)
			rc = -ENOMEM;
		t.d[dir].first_gseq = g->fl[dir].gseq;
	}
	if (rc)
		goto out;
	g->now_s = (uint32_t)time(NULL);
	__atomic_store(&g->live.pps, &pps, __ATOMIC_RELAXED);
	dg_churn_start(g);
	trial_run(g, &t, pps);
	for (unsigned dir = 0; dir < 2; dir++) {
		struct tdir *d = &t.d[dir];

		/* whatever the port still refused was never offered */
		d->k.unsent = d->npend - d->ipend;
		if (d->npend > d->ipend)
			rte_pktmbuf_free_bulk(d->pend + d->ipend, d->npend - d->ipend);
	}
	drain(g, &t);
	for (unsigned dir = 0; dir < 2; dir++) {
		r->d[dir].k = t.d[dir].k;
		r->d[dir].lost = t.d[dir].k.tx > t.d[dir].k.rx ? t.d[dir].k.tx - t.d[dir].k.rx : 0;
		live_publish(g, &t.d[dir].k, dir);
		g->live.done[dir] = g->live.k[dir];
	}
	__atomic_store_n(&g->live.trials, g->live.trials + 1, __ATOMIC_RELAXED);
out:
	for (unsigned dir = 0; dir < 2; dir++)
		dg_hist_free(&t.d[dir].ih);
	return rc;
}
