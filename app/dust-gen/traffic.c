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

static int seen_reserve(struct dg *g, uint64_t bit)
{
	uint64_t bits = g->seen_bits ? g->seen_bits : 1u << 20;
	uint64_t *p;

	if (bit < g->seen_bits)
		return 0;
	while (bits <= bit)
		bits *= 2;
	p = realloc(g->seen, bits / 8);
	if (!p)
		return -ENOMEM;
	memset((uint8_t *)p + g->seen_bits / 8, 0, (bits - g->seen_bits) / 8);
	g->seen = p;
	g->seen_bits = bits;
	return 0;
}

struct probe {
	uint32_t magic, client, cseq, zero;
	uint64_t gseq, tsc;
};

/* The next client of the round-robin over those up, or NULL. */
static struct dg_client *next_sender(struct dg *g)
{
	for (unsigned k = 0; k < g->n; k++) {
		struct dg_client *c = &g->c[g->cur];

		g->cur = g->cur + 1 < g->n ? g->cur + 1 : 0;
		if (c->state == DG_UP)
			return c;
	}
	return NULL;
}

/* Build the next probe of the round-robin over clients into m. */
static int probe_build(struct dg *g, struct rte_mbuf *m, uint64_t tsc)
{
	struct dg_client *c = next_sender(g);
	unsigned size = dg_size_of(g, g->gseq);
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *), *dgp = f + 42;
	uint8_t *in = dgp + DUST_DATA_PREFIX, *pl = in + 28;
	struct probe p = {DG_MAGIC, 0, 0, 0, g->gseq, tsc};
	size_t ilen;
	int r;

	if (!c)
		return -EAGAIN; /* nobody up: churn took them all */
	p.client = (uint32_t)(c - g->c);
	p.cseq = c->tx_seq;
	memcpy(pl, &p, sizeof(p));
	memset(pl + sizeof(p), 0, size - 28 - sizeof(p));
	ilen = ip_udp4(in, c->inv.tunnel.a, far_ip, (uint16_t)(1000 + p.client % 50000), 9, pl,
	               size - 28);
	r = dust_data_seal(&c->s, &g->rng, &g->pad, g->now_s, dgp, ilen,
	                   rte_pktmbuf_tailroom(m) - 42);
	if (r < 0)
		return r;
	m->data_len = m->pkt_len = dg_frame(g, c, f, dgp, (size_t)r);
	c->tx_seq++;
	g->gseq++;
	return 0;
}

struct trial {
	struct dg_count k, k_mark; /* totals; at the last report */
	struct dg_hist ih;         /* this report interval */
	struct dg_result *r;
	uint64_t first_gseq;
	struct rte_mbuf *pend[DG_BURST];
	unsigned npend, ipend;
	uint64_t skipped; /* schedule slots given up after a stall of ours */
};

static void rx_probe(struct dg *g, struct trial *t, const uint8_t *f, size_t len, uint64_t now)
{
	struct frame_udp u;
	struct probe p;
	struct dg_client *c;
	uint64_t ns;

	if (frame_udp_parse(f, len, &u) < 0 || u.family != 4 || u.plen < sizeof(p))
		goto foreign;
	memcpy(&p, u.pl, sizeof(p));
	if (p.magic != DG_MAGIC || p.client >= g->n || p.gseq >= g->gseq)
		goto foreign;
	if (p.gseq < t->first_gseq) {
		t->k.late++; /* from an earlier trial */
		return;
	}
	if (g->seen[p.gseq / 64] & (UINT64_C(1) << (p.gseq % 64))) {
		t->k.dup++;
		return;
	}
	g->seen[p.gseq / 64] |= UINT64_C(1) << (p.gseq % 64);
	t->k.rx++;
	t->k.rx_bytes += len;
	c = &g->c[p.client];
	if (p.cseq < c->rx_next)
		t->k.reordered++;
	else
		c->rx_next = p.cseq + 1;
	ns = now > p.tsc ? (now - p.tsc) * 1000000000 / g->hz : 0;
	hist_add(&t->r->h, ns);
	hist_add(&t->ih, ns);
	return;
foreign:
	t->k.foreign++;
}

static void rx_dlv(struct dg *g, struct trial *t)
{
	struct rte_mbuf *pkts[DG_BURST];
	uint16_t n = rte_eth_rx_burst(g->dlv, 0, pkts, DG_BURST);
	uint64_t now = rte_rdtsc();

	for (uint16_t i = 0; i < n; i++)
		rx_probe(g, t, rte_pktmbuf_mtod(pkts[i], uint8_t *), pkts[i]->data_len, now);
	rte_pktmbuf_free_bulk(pkts, n);
}

/* Send up to want new probes (after any the port refused last time). */
static void tx_some(struct dg *g, struct trial *t, unsigned want)
{
	uint16_t sent;

	if (t->npend == t->ipend) {
		uint64_t tsc = rte_rdtsc();

		t->npend = t->ipend = 0;
		if (!want || rte_pktmbuf_alloc_bulk(g->pool, t->pend, want) != 0)
			return;
		if (seen_reserve(g, g->gseq + want) != 0) {
			rte_pktmbuf_free_bulk(t->pend, want);
			return;
		}
		for (unsigned i = 0; i < want; i++)
			if (probe_build(g, t->pend[i], tsc) != 0) {
				rte_pktmbuf_free_bulk(t->pend + i, want - i);
				want = i;
				break;
			}
		t->npend = want;
	}
	sent = rte_eth_tx_burst(g->net, 0, t->pend + t->ipend, (uint16_t)(t->npend - t->ipend));
	for (uint16_t i = 0; i < sent; i++)
		t->k.tx_bytes += t->pend[t->ipend + i]->data_len;
	t->ipend += sent;
	t->k.tx += sent;
}

static void report(struct dg *g, struct trial *t, double secs, double dt)
{
	struct dg_count *a = &t->k, *b = &t->k_mark;

	if (!g->o.quiet)
		printf("dust-gen: %5.1fs tx %9.0f pps %7.3f Gbit/s | rx %9.0f pps | reord %" PRIu64
		       " dup %" PRIu64 " | latency us p50 %.1f p99 %.1f p99.9 %.1f | up %u\n",
		       secs, (double)(a->tx - b->tx) / dt,
		       (double)(a->tx_bytes - b->tx_bytes) * 8 / dt / 1e9,
		       (double)(a->rx - b->rx) / dt, a->reordered - b->reordered, a->dup - b->dup,
		       dg_hist_pct(&t->ih, 50) / 1e3, dg_hist_pct(&t->ih, 99) / 1e3,
		       dg_hist_pct(&t->ih, 99.9) / 1e3, g->nup);
	fflush(stdout);
	t->k_mark = *a;
	dg_hist_init(&t->ih);
	g->now_s = (uint32_t)time(NULL);
}

/* TX for the trial's duration at pps (0: max), reading both ports throughout. */
static void trial_run(struct dg *g, struct trial *t, double pps)
{
	uint64_t t0 = rte_rdtsc(), end = t0 + (uint64_t)(g->o.duration_s * (double)g->hz);
	uint64_t next_rep = t0 + g->hz, last_rep = t0, now;
	uint64_t stall_from = t0 + (end - t0) / 2,
	         stall_to = stall_from + g->hz / 1000 * g->o.stall_ms;
	struct dg_count k0 = {0};

	while ((now = rte_rdtsc()) < end) {
		unsigned want = DG_BURST;

		if (pps > 0) {
			uint64_t due = (uint64_t)((double)(now - t0) / (double)g->hz * pps);
			uint64_t done = t->k.tx + (t->npend - t->ipend) + t->skipped;

			/*
			 * Descheduled, we would owe a burst far above the set rate: give
			 * the backlog up instead (the report shows the rate achieved).
			 */
			if (due > done + 4 * DG_BURST) {
				t->skipped += due - done - DG_BURST;
				done = due - DG_BURST;
			}
			want = due > done ? (unsigned)RTE_MIN(due - done, (uint64_t)DG_BURST) : 0;
		}
		tx_some(g, t, want);
		if (t->npend == t->ipend)
			dg_churn_tick(g, now, end);
		if (!g->o.stall_ms || now < stall_from || now >= stall_to)
			rx_dlv(g, t);
		dg_net_poll(g, &k0, NULL, NULL);
		if (now >= next_rep) {
			report(g, t, (double)(now - t0) / (double)g->hz,
			       (double)(now - last_rep) / (double)g->hz);
			last_rep = now;
			next_rep += g->hz;
		}
	}
	t->r->secs = (double)(rte_rdtsc() - t0) / (double)g->hz;
}

int dg_trial(struct dg *g, double pps, struct dg_result *r)
{
	struct trial t;
	uint64_t end, cap, quiet, now, last_rx;
	struct dg_count k0 = {0};

	memset(&t, 0, sizeof(t));
	memset(&r->k, 0, sizeof(r->k));
	dg_hist_init(&r->h);
	dg_hist_init(&t.ih);
	if (!r->h.b || !t.ih.b)
		return -ENOMEM;
	t.r = r;
	r->rate_pps = pps;
	t.first_gseq = g->gseq;
	g->now_s = (uint32_t)time(NULL);
	dg_churn_start(g);
	trial_run(g, &t, pps);
	/* whatever the port still refused was never offered */
	t.k.unsent = t.npend - t.ipend;
	if (t.npend > t.ipend)
		rte_pktmbuf_free_bulk(t.pend + t.ipend, t.npend - t.ipend);
	/*
	 * Until drain_ms pass with nothing new and every intro is answered (at
	 * most 10 times drain_ms).
	 */
	last_rx = t.k.rx + t.k.late + t.k.dup;
	quiet = g->hz / 1000 * g->o.drain_ms;
	end = rte_rdtsc() + quiet;
	cap = rte_rdtsc() + 10 * quiet;
	while ((now = rte_rdtsc()) < cap && (now < end || g->nintro)) {
		rx_dlv(g, &t);
		dg_net_poll(g, &k0, NULL, NULL);
		if (t.k.rx + t.k.late + t.k.dup != last_rx) {
			last_rx = t.k.rx + t.k.late + t.k.dup;
			end = rte_rdtsc() + quiet;
		}
	}
	r->k = t.k;
	r->lost = t.k.tx > t.k.rx ? t.k.tx - t.k.rx : 0;
	dg_hist_free(&t.ih);
	return 0;
}
