/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-gen on several lcores: the clients are split into one contiguous
 * share per lcore, each with its own queue pair on both ports (so a
 * client's intro, probes and replies stay on one queue, and a gateway that
 * spreads queues over workers keeps each client on one worker). Each lcore
 * runs a whole trial on its share at rate / lcores; the results are merged.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_launch.h>
#include <rte_lcore.h>

#include "dust-gen.h"

struct job {
	struct dg *g;
	double pps;
	struct dg_result r;
	int rc;
};

static struct job *jobs; /* one per lcore, kept across trials */

/* One dg per lcore, sharing the ports, the pool and the base's clients. */
int dg_lcores_split(struct dg *g)
{
	unsigned nl = g->nq, off = 0;
	unsigned k = g->o.start_clients ? g->o.start_clients : g->n;

	if (g->n < nl) {
		fprintf(stderr, "dust-gen: %u clients for %u lcores: at least one each, please\n",
		        g->n, nl);
		return -1;
	}
	g->ls = calloc(nl, sizeof(*g->ls));
	if (!g->ls)
		return -1;
	g->started = 0;
	for (unsigned l = 0; l < nl; l++) {
		struct dg *s = &g->ls[l];
		unsigned n = g->n / nl + (l < g->n % nl);

		*s = *g;
		s->ls = NULL;
		s->c = g->c + off;
		s->n = n;
		s->first = off;
		s->q = (uint16_t)l;
		memset(s->fl, 0, sizeof(s->fl));
		memset(&s->ch, 0, sizeof(s->ch));
		dust_rng_init(&s->rng);
		/* its part of --start-clients (at least one), and of the churn */
		s->o.start_clients = RTE_MAX(1u, RTE_MIN(n, (k * n + g->n - 1) / g->n));
		s->o.churn = g->o.churn / nl;
		g->started += s->o.start_clients;
		off += n;
	}
	return 0;
}

void dg_lcores_free(struct dg *g)
{
	for (unsigned l = 0; g->ls && l < g->nq; l++) {
		free(g->ls[l].fl[0].seen);
		free(g->ls[l].fl[1].seen);
	}
	for (unsigned l = 0; jobs && l < g->nq; l++)
		for (unsigned dir = 0; dir < 2; dir++)
			dg_hist_free(&jobs[l].r.d[dir].h);
	free(jobs);
	jobs = NULL;
	free(g->ls);
	g->ls = NULL;
}

/* Intros of every share, one after the other, each on its own queue. */
int dg_lcores_intro(struct dg *g)
{
	for (unsigned l = 0; l < g->nq; l++) {
		int rc = dg_clients_intro(&g->ls[l]);

		if (rc)
			return rc;
	}
	return 0;
}

static int job_run(void *arg)
{
	struct job *j = arg;

	j->rc = dg_trial(j->g, j->pps, &j->r);
	return 0;
}

static void hist_merge(struct dg_hist *a, const struct dg_hist *b)
{
	for (unsigned i = 0; i <= DG_HIST_BUCKETS; i++)
		a->b[i] += b->b[i];
	a->n += b->n;
	a->sum_ns += b->sum_ns;
	a->max_ns = RTE_MAX(a->max_ns, b->max_ns);
	a->min_ns = RTE_MIN(a->min_ns, b->min_ns);
}

/* Counters add up; the TX time is the longest lcore's. */
static void result_merge(struct dg_result *a, const struct dg_result *b)
{
	a->rate_pps += b->rate_pps;
	a->secs = RTE_MAX(a->secs, b->secs);
	for (unsigned dir = 0; dir < 2; dir++) {
		uint64_t *x = (uint64_t *)&a->d[dir].k;
		const uint64_t *y = (const uint64_t *)&b->d[dir].k;

		for (size_t i = 0; i < sizeof(a->d[dir].k) / sizeof(*x); i++)
			x[i] += y[i];
		a->d[dir].lost += b->d[dir].lost;
		hist_merge(&a->d[dir].h, &b->d[dir].h);
	}
}

/* The base's churn counts and clients up: the sum of the lcores'. */
static void churn_sum(struct dg *g)
{
	memset(&g->ch, 0, sizeof(g->ch));
	g->nup = 0;
	for (unsigned l = 0; l < g->nq; l++) {
		const uint64_t *y = (const uint64_t *)&g->ls[l].ch;
		uint64_t *x = (uint64_t *)&g->ch;

		for (size_t i = 0; i < sizeof(g->ch) / sizeof(*x); i++)
			x[i] += y[i];
		g->nup += g->ls[l].nup;
	}
}

/* One trial on every lcore at pps / lcores each (the main lcore runs share 0). */
int dg_lcores_trial(struct dg *g, double pps, struct dg_result *r)
{
	unsigned l = 1, lc;
	int rc = 0;

	if (!jobs && !(jobs = calloc(g->nq, sizeof(*jobs))))
		return -1;
	for (unsigned i = 0; i < g->nq; i++) {
		jobs[i].g = &g->ls[i];
		jobs[i].pps = pps / g->nq;
	}
	RTE_LCORE_FOREACH_WORKER(lc)
	{
		if (rte_eal_remote_launch(job_run, &jobs[l], lc) != 0)
			return -1;
		l++;
	}
	job_run(&jobs[0]);
	rte_eal_mp_wait_lcore();
	r->rate_pps = 0;
	r->secs = 0;
	for (unsigned dir = 0; dir < 2; dir++) {
		memset(&r->d[dir].k, 0, sizeof(r->d[dir].k));
		r->d[dir].lost = 0;
		dg_hist_init(&r->d[dir].h);
		if (!r->d[dir].h.b)
			return -1;
	}
	for (unsigned i = 0; i < g->nq; i++) {
		rc = rc ? rc : jobs[i].rc;
		if (!jobs[i].rc)
			result_merge(r, &jobs[i].r);
	}
	churn_sum(g);
	return rc;
}
