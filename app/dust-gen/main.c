/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-gen: a Dust load generator for benchmarking gateways on DPDK ports
 * (a NIC, or net_memif toward a dustgw on the same host). EAL arguments,
 * "--", then its own options; a per-second report and a JSON summary.
 */
#include <getopt.h>
#include <limits.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "dust-gen.h"
#include "numopt.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: dust-gen [EAL options] -- (--store STORE --key KEY | --invites DIR) [options]\n"
	    "\n"
	    "Emulates N Dust clients toward a gateway: real intros (each client's key is\n"
	    "derived from its invitation, so reruns are the client the gateway bound), then\n"
	    "probes: forward, sealed on the net port, the gateway's cleartext back on the\n"
	    "delivery port; reverse, cleartext to the clients' tunnel addresses on the\n"
	    "delivery port, the gateway's Dust back on the net port (opened with each\n"
	    "client's session). Each probe carries a sequence number and its TX TSC:\n"
	    "dust-gen reports throughput, loss, reordering, duplicates and latency per\n"
	    "direction.\n"
	    "\n"
	    "  --store STORE      invitations (store-only test invitations, one client each)\n"
	    "  --key KEY          with --store: the server's key, which opens its records\n"
	    "  --invites DIR      or sealed invitation texts DIR/invite-<n>.txt (as dust-invite\n"
	    "                     create --out-dir writes them), in n's order, one client each\n"
	    "  --password-file F  their password: the first line of F; else $DUST_PASSWORD,\n"
	    "                     else a prompt on the terminal\n"
	    "  --clients N        the first N invitations (default: all, at most 65536)\n"
	    "  --net PORT         port toward the gateway's net side (name or index; default 0)\n"
	    "  --dlv PORT         port on the gateway's delivery side (default 1)\n"
	    "  --gw-mac MAC       destination MAC of our frames: the gateway NIC's own on a\n"
	    "                     real link (default 02:00:00:00:00:01; memif takes any)\n"
	    "  --dir D            fwd (default), rev or both (both at the set rate each way)\n"
	    "  --pps R            offered rate in packets/s (each direction), or\n"
	    "  --gbps G           offered rate in Gbit/s (L1 of the Dust frames + 24 B, each\n"
	    "                     direction), default: max\n"
	    "  --size N           inner IP packet bytes (%d..%d; default 512), or --imix;\n"
	    "                     a probe's inner UDP checksum is 0 (none; the outer one is set)\n"
	    "  --imix             64/576/1400 B inner packets, 7:4:1\n"
	    "  --duration S       seconds of traffic (per trial; default 5)\n"
	    "  --drain-ms MS      after each trial, read until MS ms pass with nothing new\n"
	    "                     and every intro is answered (at most 10 x MS; default 300)\n"
	    "  --search           highest rate with loss <= --loss-max (RFC 2544 style binary\n"
	    "                     search from the max-rate trial; --steps trials, default 7;\n"
	    "                     with --dir both the loss of both directions together)\n"
	    "  --loss-max PCT     search threshold in percent (default 0)\n"
	    "  --stall-ms MS      forced overload: stop reading the delivery port for MS ms\n"
	    "                     mid-trial, so the gateway's TX toward it overflows (forward)\n"
	    "  --json FILE        write the summary (every trial) as JSON: the forward\n"
	    "                     direction's counts at the top of each trial, the reverse's\n"
	    "                     under \"reverse\" (with --dir rev or both)\n"
	    "  --quiet            no per-second lines\n"
	    "  --prometheus ADDR:PORT  serve live metrics on http://ADDR:PORT/metrics (IPv6:\n"
	    "                     [ADDR]:PORT): counts and rates per lcore and direction, a\n"
	    "                     latency histogram, clients up (see docs/prometheus.md)\n"
	    "  --no-confirm       send the intros but wait for no keepalive: toward a sink\n"
	    "                     (net_null), to measure the generator's own rate\n"
	    "  --linger-ms MS     at the end, wait MS ms without polling before closing the\n"
	    "                     ports: a memif peer that leaves while the other end polls\n"
	    "                     can crash it (DPDK 22.11 frees the rings under the poller),\n"
	    "                     so let dustgw --exit-on-idle leave first\n"
	    "Churn (fixed-rate runs, not --search):\n"
	    "  --start-clients K  introduce only the first K clients before traffic (default:\n"
	    "                     all); the others join by churn\n"
	    "  --churn E          E events per second, taking turns: a client joins (first\n"
	    "                     intro), one goes idle, one roams (new source port, new\n"
	    "                     intro), one re-introduces on its live session; a kind with\n"
	    "                     no fitting client passes its turn on\n"
	    "  --idle-s S         an idle client is silent S s, then introduces itself again;\n"
	    "                     set S >= the gateway's idle_timeout_s + 3 so that its\n"
	    "                     session has expired by then (0, the default: no idle events)\n"
	    "  Every up client must still send a probe well within idle_timeout_s: rate /\n"
	    "  clients sets how often. The JSON's \"churn\" counts (intros, joins, expiries,\n"
	    "  roams, reintros, retries, keepalives) match dustgw's intro_ok, sessions_expired,\n"
	    "  sessions_evicted and keepalive_tx when nothing is lost. No event starts in a\n"
	    "  trial's last 3 s, nor an idle silence that would end in its last 5 s; an\n"
	    "  intro not answered in 3 s is sent again (a retry) unless in the last 3 s.\n"
	    "Lcores: every EAL lcore (-l/--lcores) takes a contiguous share of the clients\n"
	    "and one queue pair on each port, sends at rate / lcores and reads only its own\n"
	    "queues; the report merges them (per-second lines are per lcore, [qN]). A probe\n"
	    "must come back on the queue that sent it, else it counts as lost (foreign):\n"
	    "so over memif (queue N <-> queue N; give dustgw queues >= lcores), while on NICs\n"
	    "the peer's RSS picks the queue, so use one lcore there.\n"
	    "Over memif, next to dustgw (its ports are servers):\n"
	    "  dust-gen -l 1 --no-huge -m 512 --no-pci --file-prefix gen \\\n"
	    "    --vdev net_memif0,role=client,socket=/tmp/net.sock,socket-abstract=no \\\n"
	    "    --vdev net_memif1,role=client,socket=/tmp/dlv.sock,socket-abstract=no \\\n"
	    "    -- --store inv.store --key server.key --clients 64 --pps 100000 --size 512 \\\n"
	    "    --json out.json\n",
	    DG_MIN_SIZE, DG_MAX_SIZE);
}

static int parse(int argc, char **argv, struct dg_opts *o)
{
	static const struct option lo[] = {
	    {"store", required_argument, NULL, 'S'},
	    {"key", required_argument, NULL, 'k'},
	    {"clients", required_argument, NULL, 'n'},
	    {"net", required_argument, NULL, 'N'},
	    {"dlv", required_argument, NULL, 'D'},
	    {"pps", required_argument, NULL, 'p'},
	    {"gbps", required_argument, NULL, 'g'},
	    {"size", required_argument, NULL, 's'},
	    {"imix", no_argument, NULL, 'I'},
	    {"duration", required_argument, NULL, 'd'},
	    {"drain-ms", required_argument, NULL, 'r'},
	    {"search", no_argument, NULL, 'x'},
	    {"loss-max", required_argument, NULL, 'l'},
	    {"steps", required_argument, NULL, 'X'},
	    {"stall-ms", required_argument, NULL, 'T'},
	    {"json", required_argument, NULL, 'j'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"gw-mac", required_argument, NULL, 'M'},
	    {"no-confirm", no_argument, NULL, 'C'},
	    {"linger-ms", required_argument, NULL, 'L'},
	    {"start-clients", required_argument, NULL, 'K'},
	    {"churn", required_argument, NULL, 'E'},
	    {"idle-s", required_argument, NULL, 'i'},
	    {"dir", required_argument, NULL, 'R'},
	    {"invites", required_argument, NULL, 'V'},
	    {"password-file", required_argument, NULL, 'P'},
	    {"prometheus", required_argument, NULL, 'O'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	unsigned long long ull;
	int c;

	o->net_port = "0";
	o->dlv_port = "1";
	o->size = 512;
	o->duration_s = 5;
	o->drain_ms = 300;
	o->search_steps = 7;
	o->dirs = 1u << DG_DIR_FWD;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			o->store = optarg;
			break;
		case 'k':
			o->key = optarg;
			break;
		case 'n':
			if (!numopt_uint("dust-gen", "clients", optarg, 1, UINT_MAX, &o->clients))
				return -1;
			break;
		case 'N':
			o->net_port = optarg;
			break;
		case 'D':
			o->dlv_port = optarg;
			break;
		case 'p':
			if (!numopt_ull("dust-gen", "pps", optarg, 0, UINT64_MAX, &ull))
				return -1;
			o->pps = ull;
			break;
		case 'g':
			if (!numopt_double("dust-gen", "gbps", optarg, 0, 1e6, &o->gbps))
				return -1;
			break;
		case 's':
			if (!numopt_uint("dust-gen", "size", optarg, DG_MIN_SIZE, DG_MAX_SIZE,
			                 &o->size))
				return -1;
			break;
		case 'I':
			o->size = 0;
			break;
		case 'd':
			if (!numopt_double("dust-gen", "duration", optarg, 0.001, 1e7,
			                   &o->duration_s))
				return -1;
			break;
		case 'r':
			if (!numopt_uint("dust-gen", "drain-ms", optarg, 0, 3600000, &o->drain_ms))
				return -1;
			break;
		case 'x':
			o->search = true;
			break;
		case 'l':
			if (!numopt_double("dust-gen", "loss-max", optarg, 0, 100,
			                   &o->loss_max_pct))
				return -1;
			break;
		case 'X':
			if (!numopt_uint("dust-gen", "steps", optarg, 1, 64, &o->search_steps))
				return -1;
			break;
		case 'T':
			if (!numopt_uint("dust-gen", "stall-ms", optarg, 0, 3600000, &o->stall_ms))
				return -1;
			break;
		case 'j':
			o->json = optarg;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'O':
			o->prometheus = optarg;
			break;
		case 'M':
			o->gw_mac = optarg;
			break;
		case 'C':
			o->no_confirm = true;
			break;
		case 'L':
			if (!numopt_uint("dust-gen", "linger-ms", optarg, 0, 3600000,
			                 &o->linger_ms))
				return -1;
			break;
		case 'V':
			o->invites = optarg;
			break;
		case 'P':
			o->password_file = optarg;
			break;
		case 'R':
			o->dirs = !strcmp(optarg, "fwd")    ? 1u << DG_DIR_FWD
			          : !strcmp(optarg, "rev")  ? 1u << DG_DIR_REV
			          : !strcmp(optarg, "both") ? 3u
			                                    : 0;
			if (!o->dirs) {
				fprintf(stderr, "dust-gen: --dir %s: fwd, rev or both\n", optarg);
				return -1;
			}
			break;
		case 'K':
			if (!numopt_uint("dust-gen", "start-clients", optarg, 0, UINT_MAX,
			                 &o->start_clients))
				return -1;
			break;
		case 'E':
			if (!numopt_double("dust-gen", "churn", optarg, 0, 1e9, &o->churn))
				return -1;
			break;
		case 'i':
			if (!numopt_uint("dust-gen", "idle-s", optarg, 0, 86400, &o->idle_s))
				return -1;
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (!o->store == !o->invites || optind < argc || (o->store && !o->key)) {
		fprintf(stderr, "dust-gen: %s\n",
		        optind < argc         ? "unexpected argument"
		        : o->store && !o->key ? "--store needs the server's --key (sealed records)"
		                              : "one of --store or --invites, please");
		return -1;
	}
	if (o->size && (o->size < DG_MIN_SIZE || o->size > DG_MAX_SIZE)) {
		fprintf(stderr, "dust-gen: --size %u: want %d..%d\n", o->size, DG_MIN_SIZE,
		        DG_MAX_SIZE);
		return -1;
	}
	if ((o->churn > 0 || o->start_clients) && o->search) {
		fprintf(stderr, "dust-gen: churn is for fixed-rate runs, not --search\n");
		return -1;
	}
	if (o->churn < 0 || (o->start_clients && o->clients && o->start_clients > o->clients)) {
		fprintf(stderr,
		        "dust-gen: --churn >= 0 and --start-clients <= --clients, please\n");
		return -1;
	}
	if (o->duration_s <= 0 || o->loss_max_pct < 0 || o->loss_max_pct > 100) {
		fprintf(stderr, "dust-gen: --duration > 0 and --loss-max 0..100, please\n");
		return -1;
	}
	return 0;
}

static int port_resolve(const char *spec, uint16_t *id)
{
	char *end;
	unsigned long v = strtoul(spec, &end, 10);

	if (!*end && *spec && v < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port((uint16_t)v)) {
		*id = (uint16_t)v;
		return 0;
	}
	if (rte_eth_dev_get_port_by_name(spec, id) == 0)
		return 0;
	fprintf(stderr, "dust-gen: no DPDK port '%s' (missing --vdev or -a?)\n", spec);
	return -ENODEV;
}

static int port_start(struct dg *g, uint16_t port)
{
	struct rte_eth_conf conf;
	uint16_t rxd = 1024, txd = 1024;
	int rc;

	memset(&conf, 0, sizeof(conf));
	if ((rc = rte_eth_dev_configure(port, g->nq, g->nq, &conf)) != 0 ||
	    (rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd)) != 0)
		goto err;
	/* one queue pair per lcore */
	for (uint16_t q = 0; q < g->nq; q++)
		if ((rc = rte_eth_rx_queue_setup(port, q, rxd, rte_eth_dev_socket_id(port), NULL,
		                                 g->pool)) != 0 ||
		    (rc = rte_eth_tx_queue_setup(port, q, txd, rte_eth_dev_socket_id(port),
		                                 NULL)) != 0)
			goto err;
	if ((rc = rte_eth_dev_start(port)) == 0)
		return 0;
err:
	fprintf(stderr, "dust-gen: port %u setup (%u queues): %s\n", port, g->nq, strerror(-rc));
	return rc;
}

/*
 * Read both ports for 200 ms: the peer may see its link a moment later, and
 * memif gives the peer room to send only as this end reads (refills) its rings.
 */
static int links_settle(struct dg *g)
{
	uint64_t end = rte_rdtsc() + g->hz / 5;
	struct rte_mbuf *pkts[DG_BURST];

	while (rte_rdtsc() < end)
		for (uint16_t q = 0; q < g->nq; q++) {
			rte_pktmbuf_free_bulk(pkts, rte_eth_rx_burst(g->net, q, pkts, DG_BURST));
			rte_pktmbuf_free_bulk(pkts, rte_eth_rx_burst(g->dlv, q, pkts, DG_BURST));
		}
	return 0;
}

/* memif connects in the background: wait for both links (10 s). */
static int links_wait(struct dg *g)
{
	uint64_t end = rte_rdtsc() + 10 * g->hz;

	while (rte_rdtsc() < end) {
		struct rte_eth_link a, b;

		if (rte_eth_link_get_nowait(g->net, &a) == 0 &&
		    rte_eth_link_get_nowait(g->dlv, &b) == 0 && a.link_status && b.link_status)
			return links_settle(g);
		rte_delay_ms(10);
	}
	fprintf(stderr, "dust-gen: link down on port %u or %u after 10 s (is the peer up?)\n",
	        g->net, g->dlv);
	return -ETIMEDOUT;
}

static int ports_setup(struct dg *g)
{
	struct rte_ether_addr mac;
	int rc;

	if ((rc = port_resolve(g->o.net_port, &g->net)) ||
	    (rc = port_resolve(g->o.dlv_port, &g->dlv)))
		return rc;
	if (g->net == g->dlv) {
		fprintf(stderr, "dust-gen: --net and --dlv must be different ports\n");
		return -EINVAL;
	}
	g->pool = rte_pktmbuf_pool_create("dg_mbufs", 16383, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
	                                  (int)rte_socket_id());
	if (!g->pool) {
		fprintf(stderr, "dust-gen: no mbuf pool: %s\n", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	if ((rc = port_start(g, g->net)) || (rc = port_start(g, g->dlv)))
		return rc;
	rte_eth_macaddr_get(g->net, &mac);
	memcpy(g->mac, mac.addr_bytes, 6);
	rte_eth_macaddr_get(g->dlv, &mac);
	memcpy(g->dlv_mac, mac.addr_bytes, 6);
	return links_wait(g);
}

static uint64_t tx_all(const struct dg_result *r)
{
	return r->d[0].k.tx + r->d[1].k.tx;
}

/* Both directions together (--search's measure). */
static double loss_pct(const struct dg_result *r)
{
	uint64_t tx = tx_all(r);

	return tx ? 100.0 * (double)(r->d[0].lost + r->d[1].lost) / (double)tx : 0;
}

static void summary_print(const struct dg *g, const struct dg_result *r, const char *what)
{
	static const char *const dname[2] = {"", " (reverse)"};

	for (unsigned dir = 0; dir < 2; dir++) {
		const struct dg_count *k = &r->d[dir].k;
		const struct dg_hist *h = &r->d[dir].h;

		if (!(g->o.dirs & 1u << dir))
			continue;
		printf("dust-gen: %s%s: offered %s%.0f pps, sent %" PRIu64
		       " (%.0f pps, %.3f Gbit/s), received %" PRIu64 ", lost %" PRIu64
		       " (%.4f%%), reordered %" PRIu64 ", duplicates %" PRIu64 "\n"
		       "dust-gen: latency us: p50 %.1f p99 %.1f p99.9 %.1f max %.1f (%" PRIu64
		       " samples, 100 ns buckets)\n",
		       what, dname[dir], r->rate_pps > 0 ? "" : "max, ", r->rate_pps, k->tx,
		       (double)k->tx / r->secs, (double)k->tx_bytes * 8 / r->secs / 1e9, k->rx,
		       r->d[dir].lost, k->tx ? 100.0 * (double)r->d[dir].lost / (double)k->tx : 0,
		       k->reordered, k->dup, dg_hist_pct(h, 50) / 1e3, dg_hist_pct(h, 99) / 1e3,
		       dg_hist_pct(h, 99.9) / 1e3, (double)h->max_ns / 1e3, h->n);
	}
}

/* One direction's fields of a trial object. */
static void json_dir(FILE *f, const struct dg_result *r, unsigned dir)
{
	const struct dg_count *k = &r->d[dir].k;
	const struct dg_hist *h = &r->d[dir].h;

	fprintf(f,
	        "\"tx\": %" PRIu64 ", \"tx_bytes\": %" PRIu64 ", \"unsent\": %" PRIu64
	        ", \"rx\": %" PRIu64 ", \"rx_bytes\": %" PRIu64 ", \"lost\": %" PRIu64
	        ", \"loss_pct\": %.6f, \"reordered\": %" PRIu64 ", \"duplicates\": %" PRIu64
	        ", \"late\": %" PRIu64 ", \"foreign\": %" PRIu64
	        ", \"tx_pps\": %.1f, \"rx_pps\": %.1f, \"tx_gbps\": %.4f, \"rx_gbps\": %.4f"
	        ", \"latency_ns\": {\"samples\": %" PRIu64 ", \"p50\": %" PRIu64
	        ", \"p99\": %" PRIu64 ", \"p99_9\": %" PRIu64 ", \"min\": %" PRIu64
	        ", \"max\": %" PRIu64 ", \"mean\": %.0f}",
	        k->tx, k->tx_bytes, k->unsent, k->rx, k->rx_bytes, r->d[dir].lost,
	        k->tx ? 100.0 * (double)r->d[dir].lost / (double)k->tx : 0, k->reordered, k->dup,
	        k->late, k->foreign, (double)k->tx / r->secs, (double)k->rx / r->secs,
	        (double)k->tx_bytes * 8 / r->secs / 1e9, (double)k->rx_bytes * 8 / r->secs / 1e9,
	        h->n, dg_hist_pct(h, 50), dg_hist_pct(h, 99), dg_hist_pct(h, 99.9),
	        h->n ? h->min_ns : 0, h->max_ns, h->n ? (double)h->sum_ns / (double)h->n : 0);
}

/* The forward direction's fields at the top; the reverse one's under "reverse". */
static void json_trial(FILE *f, const struct dg *g, const struct dg_result *r)
{
	fprintf(f, "{\"offered_pps\": %.0f, \"seconds\": %.3f, ", r->rate_pps, r->secs);
	json_dir(f, r, DG_DIR_FWD);
	if (g->o.dirs & 1u << DG_DIR_REV) {
		fprintf(f, ", \"reverse\": {");
		json_dir(f, r, DG_DIR_REV);
		fprintf(f, "}");
	}
	fprintf(f, "}");
}

static int json_write(const struct dg *g, struct dg_result *t, unsigned nt, int best)
{
	FILE *f = fopen(g->o.json, "w");

	if (!f) {
		fprintf(stderr, "dust-gen: cannot write %s\n", g->o.json);
		return -1;
	}
	fprintf(f,
	        "{\"clients\": %u, \"size\": %u, \"imix\": %s, \"duration_s\": %.3f, "
	        "\"loss_max_pct\": %.6f, \"search\": %s,\n \"trials\": [",
	        g->n, g->o.size, g->o.size ? "false" : "true", g->o.duration_s, g->o.loss_max_pct,
	        g->o.search ? "true" : "false");
	for (unsigned i = 0; i < nt; i++) {
		fprintf(f, "%s\n  ", i ? "," : "");
		json_trial(f, g, &t[i]);
	}
	fprintf(f,
	        "],\n \"churn\": {\"intros\": %" PRIu64 ", \"joins\": %" PRIu64
	        ", \"expiries\": %" PRIu64 ", \"roams\": %" PRIu64 ", \"reintros\": %" PRIu64
	        ", \"retries\": %" PRIu64 ", \"keepalives\": %" PRIu64 ", \"up\": %u"
	        ", \"started\": %u},",
	        g->ch.intros, g->ch.joins, g->ch.expiries, g->ch.roams, g->ch.reintros,
	        g->ch.retries, g->ch.ka, g->nup, g->started);
	fprintf(f, "\n \"result\": ");
	if (best >= 0)
		json_trial(f, g, &t[best]);
	else
		fprintf(f, "null");
	fprintf(f, "}\n");
	return fclose(f) == 0 ? 0 : -1;
}

/* Of the trials within the loss limit, the one that sent the most per second. */
static int best_trial(const struct dg *g, const struct dg_result *t, unsigned nt)
{
	int b = -1;

	for (unsigned i = 0; i < nt; i++)
		if (loss_pct(&t[i]) <= g->o.loss_max_pct &&
		    (b < 0 ||
		     (double)tx_all(&t[i]) / t[i].secs > (double)tx_all(&t[b]) / t[b].secs))
			b = (int)i;
	return b;
}

/* Bisect the offered rate between 0 and what the max-rate trial sent. */
static int search(struct dg *g, struct dg_result *t, unsigned *nt)
{
	/* the rate is per direction */
	double lo = 0, hi = (double)tx_all(&t[0]) / t[0].secs / __builtin_popcount(g->o.dirs);

	for (unsigned s = 0; s < g->o.search_steps && *nt < DG_TRIALS_MAX; s++) {
		double mid = (lo + hi) / 2;
		char what[32];
		int rc = dg_lcores_trial(g, mid, &t[*nt]);

		if (rc)
			return rc;
		snprintf(what, sizeof(what), "trial %u", *nt + 1);
		summary_print(g, &t[*nt], what);
		if (loss_pct(&t[*nt]) <= g->o.loss_max_pct)
			lo = mid;
		else
			hi = mid;
		(*nt)++;
	}
	return 0;
}

/* One trial at the set rate, or the search: max first, then bisect on the rate. */
static int run(struct dg *g)
{
	static struct dg_result t[DG_TRIALS_MAX];
	unsigned nt = 1;
	int best = 0, rc;
	double pps = (double)g->o.pps;

	if (!pps && g->o.gbps > 0)
		pps = g->o.gbps * 1e9 / ((dg_avg_frame(g) + 24) * 8);
	if ((rc = dg_lcores_trial(g, g->o.search ? 0 : pps, &t[0])) != 0)
		return rc;
	summary_print(g, &t[0], g->o.search ? "trial 1 (max)" : "result");
	if (g->o.search) {
		if (loss_pct(&t[0]) > g->o.loss_max_pct && (rc = search(g, t, &nt)) != 0)
			return rc;
		best = best_trial(g, t, nt);
		if (best >= 0)
			summary_print(g, &t[best],
			              "search result (highest rate within the loss limit)");
		else
			printf("dust-gen: search: no rate met loss <= %.4f%%\n", g->o.loss_max_pct);
	}
	printf("dust-gen: intros %" PRIu64 " (joins %" PRIu64 ", roams %" PRIu64
	       ", re-intros %" PRIu64 ", after idle %" PRIu64 ", retries %" PRIu64
	       "), keepalives %" PRIu64 ", %u clients up at the end\n",
	       g->ch.intros, g->ch.joins, g->ch.roams, g->ch.reintros, g->ch.expiries,
	       g->ch.retries, g->ch.ka, g->nup);
	rc = g->o.json ? json_write(g, t, nt, best) : 0;
	for (unsigned i = 0; i < nt; i++)
		for (unsigned dir = 0; dir < 2; dir++)
			dg_hist_free(&t[i].d[dir].h);
	return rc;
}

int main(int argc, char **argv)
{
	static struct dg g;
	struct dg_prom *prom = NULL;
	int n, rc;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "dust-gen: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argv[n] = argv[0];
	if (parse(argc - n, argv + n, &g.o) != 0 || dust_init() != 0) {
		rte_eal_cleanup();
		return 2;
	}
	g.hz = rte_get_tsc_hz();
	memcpy(g.gw_mac, (uint8_t[]){0x02, 0, 0, 0, 0, 0x01}, 6);
	if (g.o.gw_mac) {
		struct rte_ether_addr a;

		if (rte_ether_unformat_addr(g.o.gw_mac, &a) != 0) {
			fprintf(stderr, "dust-gen: --gw-mac %s: not a MAC address\n", g.o.gw_mac);
			rte_eal_cleanup();
			return 2;
		}
		memcpy(g.gw_mac, a.addr_bytes, 6);
	}
	/* bound before the ports: a port in use stops dust-gen at once */
	if (g.o.prometheus && !(prom = dg_prom_open(g.o.prometheus))) {
		rte_eal_cleanup();
		return 2;
	}
	dust_rng_init(&g.rng);
	g.pad.kind = DUST_PAD_UNIFORM; /* no padding: sizes are what --size says */
	g.nq = rte_lcore_count();
	rc = dg_clients_load(&g);
	if (!rc)
		rc = ports_setup(&g);
	if (!rc)
		rc = dg_lcores_split(&g);
	if (!rc && prom)
		rc = dg_prom_start(prom, &g);
	if (!rc)
		rc = dg_lcores_intro(&g);
	if (!rc)
		rc = run(&g);
	if (!rc && g.o.linger_ms)
		rte_delay_us_sleep(1000 * g.o.linger_ms); /* no polling: the peer may leave now */
	dg_prom_stop(prom); /* serves until here: a last scrape sees the final counts */
	if (g.pool) {
		rte_eth_dev_stop(g.net);
		rte_eth_dev_stop(g.dlv);
		rte_eth_dev_close(g.net);
		rte_eth_dev_close(g.dlv);
	}
	dg_lcores_free(&g);
	free(g.c);
	rte_eal_cleanup();
	return rc ? 1 : 0;
}
