/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --prometheus ADDR:PORT: dust-gen's live counts, rates and latency
 * histogram on GET /metrics, so a benchmark can be watched (and graphed)
 * while it runs. A control thread serves it with lib/common/promserve;
 * it only loads what the lcores write (struct dg_live, traffic.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_lcore.h>

#include "dust-gen.h"
#include "promserve.h"

enum { DG_PROM_POLL_MS = 200 };

struct dg_prom {
	struct prom_thread t;
};

static const char *const dir_name[2] = {"forward", "reverse"};

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* One counter of struct dg_count per lcore and direction. */
struct count_metric {
	const char *name, *help;
	size_t off;
};

static const struct count_metric counts[] = {
    {"dustgen_probes_sent_total", "Probes sent (forward: Dust to the gateway; reverse: cleartext).",
     offsetof(struct dg_count, tx)},
    {"dustgen_sent_bytes_total", "Bytes of the probe frames sent.",
     offsetof(struct dg_count, tx_bytes)},
    {"dustgen_probes_received_total", "Probes that came back through the gateway.",
     offsetof(struct dg_count, rx)},
    {"dustgen_received_bytes_total", "Bytes of the frames the probes came back in.",
     offsetof(struct dg_count, rx_bytes)},
    {"dustgen_probes_reordered_total", "Probes that came back before one sent earlier.",
     offsetof(struct dg_count, reordered)},
    {"dustgen_probes_duplicate_total", "Probes that came back twice.",
     offsetof(struct dg_count, dup)},
    {"dustgen_probes_late_total", "Probes of an earlier trial that came back in this one.",
     offsetof(struct dg_count, late)},
    {"dustgen_foreign_total", "Frames received that are no probe of this dust-gen.",
     offsetof(struct dg_count, foreign)},
};

static bool dir_on(const struct dg *g, unsigned dir)
{
	return g->o.dirs & 1u << dir;
}

static void write_counts(FILE *f, const struct dg *g)
{
	for (size_t m = 0; m < sizeof(counts) / sizeof(counts[0]); m++) {
		prom_family(f, counts[m].name, "counter", counts[m].help);
		for (unsigned l = 0; l < g->nq; l++)
			for (unsigned dir = 0; dir < 2; dir++) {
				const uint64_t *v =
				    (const uint64_t *)((const char *)&g->ls[l].live.k[dir] +
				                       counts[m].off);

				if (dir_on(g, dir))
					fprintf(f, "%s{dir=\"%s\",lcore=\"%u\"} %" PRIu64 "\n",
					        counts[m].name, dir_name[dir], l, LOAD(*v));
			}
	}
}

/* The lcores' latencies as one histogram per direction (cumulative buckets). */
static void write_latency(FILE *f, const struct dg *g)
{
	const char *name = "dustgen_latency_seconds";

	prom_family(f, name, "histogram",
	            "Probe round trip through the gateway, TX to RX on this host's TSC.");
	for (unsigned dir = 0; dir < 2; dir++) {
		uint64_t cum = 0, sum_ns = 0;

		if (!dir_on(g, dir))
			continue;
		for (unsigned i = 0; i <= DG_LAT_BOUNDS; i++) {
			for (unsigned l = 0; l < g->nq; l++)
				cum += LOAD(g->ls[l].live.lat[dir][i]);
			if (i < DG_LAT_BOUNDS)
				fprintf(f, "%s_bucket{dir=\"%s\",le=\"%g\"} %" PRIu64 "\n", name,
				        dir_name[dir], (double)dg_lat_bounds_ns[i] / 1e9, cum);
			else
				fprintf(f, "%s_bucket{dir=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name,
				        dir_name[dir], cum);
		}
		for (unsigned l = 0; l < g->nq; l++)
			sum_ns += LOAD(g->ls[l].live.lat_sum_ns[dir]);
		fprintf(f, "%s_sum{dir=\"%s\"} %.9f\n", name, dir_name[dir], (double)sum_ns / 1e9);
		fprintf(f, "%s_count{dir=\"%s\"} %" PRIu64 "\n", name, dir_name[dir], cum);
	}
}

static void write_gauges(FILE *f, const struct dg *g)
{
	uint64_t up = 0, intros = 0, ka = 0, trials = 0;
	double pps = 0;

	for (unsigned l = 0; l < g->nq; l++) {
		double v;

		__atomic_load(&g->ls[l].live.pps, &v, __ATOMIC_RELAXED);
		pps += v;
		up += LOAD(g->ls[l].nup);
		intros += LOAD(g->ls[l].ch.intros);
		ka += LOAD(g->ls[l].ch.ka);
		trials = LOAD(g->ls[l].live.trials);
	}
	prom_gauge(f, "dustgen_clients", "Emulated clients (--clients).", g->n);
	prom_gauge(f, "dustgen_clients_up", "Clients introduced and sending.", (double)up);
	prom_gauge(f, "dustgen_lcores", "Lcores, each with a share of the clients.", g->nq);
	prom_gauge(f, "dustgen_offered_rate_pps",
	           "Offered probes per second each way in the running trial (0: as fast as the "
	           "port takes them).",
	           pps);
	prom_family(f, "dustgen_trials_total", "counter",
	            "Trials finished (--search runs several).");
	fprintf(f, "dustgen_trials_total %" PRIu64 "\n", trials);
	prom_family(f, "dustgen_intros_total", "counter", "Intros sent (dustgw intro_ok).");
	fprintf(f, "dustgen_intros_total %" PRIu64 "\n", intros);
	prom_family(f, "dustgen_keepalives_total", "counter",
	            "Keepalives received from the gateway (dustgw keepalive_tx).");
	fprintf(f, "dustgen_keepalives_total %" PRIu64 "\n", ka);
}

static void write_metrics(FILE *f, void *arg)
{
	const struct dg *g = arg;

	write_gauges(f, g);
	write_counts(f, g);
	write_latency(f, g);
}

struct dg_prom *dg_prom_open(const char *addr)
{
	struct dg_prom *p = calloc(1, sizeof(*p));
	char err[192];

	if (!p)
		return NULL;
	p->t.fd = prom_listen(addr, err, sizeof(err));
	if (p->t.fd < 0) {
		fprintf(stderr, "dust-gen: --prometheus %s\n", err);
		free(p);
		return NULL;
	}
	return p;
}

/* After dg_lcores_split: the thread reads g->ls. */
int dg_prom_start(struct dg_prom *p, struct dg *g)
{
	return prom_thread_start(&p->t, rte_ctrl_thread_create, "dust-gen", "dg-prom",
	                         DG_PROM_POLL_MS, write_metrics, g);
}

void dg_prom_stop(struct dg_prom *p)
{
	if (p)
		prom_thread_stop(&p->t);
	free(p);
}
