/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Prometheus endpoint: a control thread (not a worker lcore) answers
 * HTTP GET /metrics with every counter, drop reason, gauge and port
 * statistic in the text exposition format, one connection at a time.
 * Like the telemetry callbacks it only loads what workers write.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_mempool.h>

#include "dgw_pvt.h"
#include "pending.h"
#include "prom.h"
#include "promserve.h"
#include "pubwait.h"
#include "slow.h"

#ifndef DUSTGW_VERSION
#define DUSTGW_VERSION "unknown"
#endif

enum {
	PROM_POLL_MS = 200, /* how soon the thread sees dgw_prom_stop */
};

struct dgw_prom {
	struct prom_thread t;
	struct dgw *gw;
	char addr[64];
	/* from dust_crypto_backend_name() on the main lcore (a per-thread view) */
	char aead_backend[32], aead_version[32], aead_path[64];
};

/* ---- Exposition ---------------------------------------------------------- */

/* Workers get their lcore in dgw_run; a scrape before that skips them. */
static bool worker_ready(const struct dgw *gw, unsigned i)
{
	return dgw_worker_lcore(gw->w[i]) != LCORE_ID_ANY;
}

static void write_counters(FILE *f, const struct dgw *gw, const struct dgw_stats *per)
{
	for (unsigned c = 0; c < DGW_CTR_MAX; c++) {
		char name[96];

		snprintf(name, sizeof(name), "dustgw_%s_total", dgw_ctr_name(c));
		prom_family(f, name, "counter", dgw_ctr_help(c));
		for (unsigned i = 0; i < gw->nworkers; i++)
			if (worker_ready(gw, i))
				fprintf(f, "%s{lcore=\"%u\"} %" PRIu64 "\n", name,
				        dgw_worker_lcore(gw->w[i]), per[i].ctr[c]);
	}
	prom_family(f, "dustgw_drops_total", "counter",
	            "Packets dropped, by reason (docs/counters.md says what each means).");
	for (unsigned d = 1; d < DGW_DROP_MAX; d++)
		for (unsigned i = 0; i < gw->nworkers; i++)
			if (worker_ready(gw, i))
				fprintf(
				    f,
				    "dustgw_drops_total{reason=\"%s\",lcore=\"%u\"} %" PRIu64 "\n",
				    dgw_drop_name(d), dgw_worker_lcore(gw->w[i]), per[i].drop[d]);
}

/*
 * Queue depths and the heartbeat are plain fields of the worker, written
 * by it alone; an aligned relaxed load reads a value it once held, which
 * is all a gauge needs (as for the counters in stats.c).
 */
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static void per_worker(FILE *f, const struct dgw *gw, const char *name, const char *help,
                       uint64_t (*get)(const struct dgw_worker *w))
{
	prom_family(f, name, "gauge", help);
	for (unsigned i = 0; i < gw->nworkers; i++)
		if (worker_ready(gw, i))
			fprintf(f, "%s{lcore=\"%u\"} %" PRIu64 "\n", name,
			        dgw_worker_lcore(gw->w[i]), get(gw->w[i]));
}

static uint64_t w_sessions(const struct dgw_worker *w)
{
	return LOAD(w->st.sessions);
}

static uint64_t w_capacity(const struct dgw_worker *w)
{
	return w->gw->cfg.sessions_per_lcore;
}

static uint64_t w_intro_queue(const struct dgw_worker *w)
{
	return dgw_slow_count(w);
}

static uint64_t w_pending(const struct dgw_worker *w)
{
	return dgw_pending_count(w);
}

static uint64_t w_pubwait(const struct dgw_worker *w)
{
	return dgw_pubwait_count(w);
}

static uint64_t w_publishing(const struct dgw_worker *w)
{
	uint64_t sent = LOAD(w->pub_sent), done = atomic_load(&w->pub_done);

	return sent > done ? sent - done : 0;
}

static void write_workers(FILE *f, const struct dgw *gw)
{
	struct timespec ts;
	double now;

	per_worker(f, gw, "dustgw_sessions", "Live sessions in the worker's table.", w_sessions);
	per_worker(f, gw, "dustgw_sessions_max", "Session table size ([sessions] max_per_lcore).",
	           w_capacity);
	per_worker(f, gw, "dustgw_intro_queue_depth",
	           "Datagrams from endpoints with no session waiting to be opened.", w_intro_queue);
	per_worker(f, gw, "dustgw_pending_bindings",
	           "First uses held until their binding is durable.", w_pending);
	per_worker(f, gw, "dustgw_answers_waiting",
	           "Accepted intros whose answer waits for the session's publication.", w_pubwait);
	per_worker(f, gw, "dustgw_publications_in_flight",
	           "Sessions sent to the main lcore for publication, not yet handled.",
	           w_publishing);
	if (gw->cfg.clock != DGW_CLOCK_REAL)
		return; /* replay: the worker clock is the capture's */
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	prom_family(
	    f, "dustgw_worker_heartbeat_age_seconds", "gauge",
	    "Seconds since the worker last ran its housekeeping (every drain_us when healthy).");
	for (unsigned i = 0; i < gw->nworkers; i++) {
		double beat = (double)LOAD(gw->w[i]->now_ms) / 1e3;

		if (worker_ready(gw, i) && beat > 0)
			fprintf(f, "dustgw_worker_heartbeat_age_seconds{lcore=\"%u\"} %.3f\n",
			        dgw_worker_lcore(gw->w[i]), now > beat ? now - beat : 0);
	}
}

static void write_store(FILE *f, struct dgw *gw)
{
	struct dust_store *st = gw->srv.store;
	uint64_t bound = 0, revoked = 0;
	uint32_t n, published;

	pthread_mutex_lock(&gw->pub_lock);
	n = gw->ninv;
	published = gw->published;
	pthread_mutex_unlock(&gw->pub_lock);
	/* as telemetry.c: entries never move, their flags are a moment's snapshot */
	for (uint32_t i = 0; i < n; i++) {
		const struct dust_store_entry *e = dust_store_at(st, i);

		bound += LOAD(e->bound) != 0;
		revoked += LOAD(e->revoked) != 0;
	}
	prom_gauge(f, "dustgw_sessions_published", "Sessions reachable from the delivery side.",
	           published);
	prom_gauge(f, "dustgw_invitations", "Invitations merged from the store.", n);
	prom_gauge(f, "dustgw_invitations_bound", "Invitations bound to a client key.",
	           (double)bound);
	prom_gauge(f, "dustgw_invitations_revoked", "Invitations revoked.", (double)revoked);
	prom_gauge(f, "dustgw_store_generation",
	           "Store reloads that changed something since start.",
	           (double)dust_store_generation(st));
	prom_gauge(f, "dustgw_store_remote", "1 for an etcd store, 0 for a file store.",
	           strcmp(dust_store_backend(st), "etcd") == 0);
	prom_gauge(f, "dustgw_store_up",
	           "0 while the store's last binding commit failed (store_unavailable), else 1.",
	           !LOAD(gw->store_down));
	prom_family(f, "dustgw_store_records_refused_total", "counter",
	            "Store records refused at load or reload: not sealed under the server key.");
	fprintf(f, "dustgw_store_records_refused_total %" PRIu64 "\n", dust_store_refused(st));
	prom_family(f, "dustgw_store_compactions_total", "counter",
	            "Journal compactions this gateway did while running.");
	fprintf(f, "dustgw_store_compactions_total %" PRIu64 "\n", dust_store_compactions(st));
	if (dust_store_revision(st) >= 0)
		prom_gauge(f, "dustgw_store_etcd_revision",
		           "The etcd revision the store's watch followed to.",
		           (double)dust_store_revision(st));
}

/* One series per port statistic; both ports under one family. */
struct port_stat {
	const char *name, *type, *help;
	size_t off;
};

static const struct port_stat port_stats[] = {
    {"dustgw_port_receive_packets_total", "counter", "Packets received by the port.",
     offsetof(struct rte_eth_stats, ipackets)},
    {"dustgw_port_transmit_packets_total", "counter", "Packets sent by the port.",
     offsetof(struct rte_eth_stats, opackets)},
    {"dustgw_port_receive_bytes_total", "counter", "Bytes received by the port.",
     offsetof(struct rte_eth_stats, ibytes)},
    {"dustgw_port_transmit_bytes_total", "counter", "Bytes sent by the port.",
     offsetof(struct rte_eth_stats, obytes)},
    {"dustgw_port_receive_missed_total", "counter",
     "Packets the port dropped for want of RX descriptors (imissed).",
     offsetof(struct rte_eth_stats, imissed)},
    {"dustgw_port_receive_errors_total", "counter", "Erroneous received packets (ierrors).",
     offsetof(struct rte_eth_stats, ierrors)},
    {"dustgw_port_transmit_errors_total", "counter", "Failed transmissions (oerrors).",
     offsetof(struct rte_eth_stats, oerrors)},
    {"dustgw_port_receive_nombuf_total", "counter", "RX mbuf allocation failures.",
     offsetof(struct rte_eth_stats, rx_nombuf)},
};

static void write_ports(FILE *f, const struct dgw *gw)
{
	const uint16_t id[2] = {gw->net_port, gw->dlv_port};
	const char *const role[2] = {"net", "delivery"};
	struct rte_eth_stats es[2];
	char dev[2][RTE_ETH_NAME_MAX_LEN];
	bool ok[2];

	for (int i = 0; i < 2; i++) {
		ok[i] = rte_eth_stats_get(id[i], &es[i]) == 0 &&
		        rte_eth_dev_get_name_by_port(id[i], dev[i]) == 0;
		ok[i] = ok[i] && !(i == 1 && id[1] == id[0]); /* one port for both: once */
	}
	for (size_t s = 0; s < RTE_DIM(port_stats); s++) {
		prom_family(f, port_stats[s].name, port_stats[s].type, port_stats[s].help);
		for (int i = 0; i < 2; i++) {
			if (!ok[i])
				continue;
			fprintf(f, "%s{port=\"%s\",device=\"", port_stats[s].name, role[i]);
			prom_label_value(f, dev[i]);
			fprintf(f, "\"} %" PRIu64 "\n",
			        *(const uint64_t *)((const char *)&es[i] + port_stats[s].off));
		}
	}
}

static void write_process(FILE *f, const struct dgw_prom *p)
{
	const struct dgw *gw = p->gw;
	uint64_t start = LOAD(gw->start_tsc);
	double up = start ? (double)(rte_rdtsc() - start) / (double)rte_get_tsc_hz() : 0;

	prom_family(f, "dustgw_build_info", "gauge",
	            "Always 1; the labels name the version and the data AEAD in use.");
	fprintf(f, "dustgw_build_info{version=\"%s\",aead_backend=\"", DUSTGW_VERSION);
	prom_label_value(f, p->aead_backend);
	fprintf(f, "\",aead_version=\"");
	prom_label_value(f, p->aead_version);
	fprintf(f, "\",aead_code_path=\"");
	prom_label_value(f, p->aead_path);
	fprintf(f, "\"} 1\n");
	prom_gauge(f, "dustgw_uptime_seconds", "Seconds since the workers started.", up);
	prom_gauge(f, "dustgw_workers", "Worker lcores.", gw->nworkers);
	prom_gauge(f, "dustgw_mbufs", "Size of the mbuf pool ([ports] mbufs).", gw->pool->size);
	prom_gauge(f, "dustgw_mbufs_in_use",
	           "Mbufs taken from the pool (in rings, queues, caches).",
	           rte_mempool_in_use_count(gw->pool));
}

static void write_metrics(FILE *f, struct dgw_prom *p)
{
	struct dgw *gw = p->gw;
	struct dgw_stats per[DGW_MAX_WORKERS];

	for (unsigned i = 0; i < gw->nworkers; i++)
		dgw_stats_get(gw, i, &per[i]);
	write_process(f, p);
	write_counters(f, gw, per);
	write_workers(f, gw);
	write_store(f, gw);
	write_ports(f, gw);
}

static void write_cb(FILE *f, void *arg)
{
	write_metrics(f, arg);
}

/* "libipsec-mb 1.3.0 (AVX512, VAES)" -> backend, version, code path */
static void aead_info(struct dgw_prom *p)
{
	const char *s = dust_crypto_backend_name();
	const char *open = strchr(s, '('), *close = strrchr(s, ')');

	if (sscanf(s, "%31s %31s", p->aead_backend, p->aead_version) != 2)
		snprintf(p->aead_version, sizeof(p->aead_version), "unknown");
	if (open && close && close > open)
		snprintf(p->aead_path, sizeof(p->aead_path), "%.*s", (int)(close - open - 1),
		         open + 1);
	else
		snprintf(p->aead_path, sizeof(p->aead_path), "unknown");
}

static int listen_on(const char *addr)
{
	char err[192];
	int fd = prom_listen(addr, err, sizeof(err));

	if (fd < 0)
		fprintf(stderr, "dustgw: [telemetry] prometheus = %s\n", err);
	return fd;
}

struct dgw_prom *dgw_prom_open(const char *addr)
{
	struct dgw_prom *p = calloc(1, sizeof(*p));
	int fd;

	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	fd = listen_on(addr);
	if (fd < 0) {
		free(p);
		errno = -fd;
		return NULL;
	}
	p->t.fd = fd;
	snprintf(p->addr, sizeof(p->addr), "%s", addr);
	return p;
}

int dgw_prom_start(struct dgw_prom *p, struct dgw *gw)
{
	int rc;

	p->gw = gw;
	aead_info(p);
	rc = prom_thread_start(&p->t, rte_ctrl_thread_create, "dustgw", "dgw-prom", PROM_POLL_MS,
	                       write_cb, p);
	if (rc != 0)
		return rc;
	DGW_LOG(INFO, "prometheus metrics on http://%s/metrics", p->addr);
	return 0;
}

void dgw_prom_stop(struct dgw_prom *p)
{
	if (p)
		prom_thread_stop(&p->t);
	free(p);
}
