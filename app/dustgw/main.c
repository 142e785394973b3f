/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dustgw: the Dust gateway executable. EAL arguments, then "--", then
 * dustgw's own options; everything else lives in the INI config file.
 * Runs until SIGINT/SIGTERM (or --exit-on-idle), then prints a summary.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "cfgcheck.h"
#include "dgw_pvt.h"
#include "loglevel.h"
#include "prom.h"
#include "telemetry.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: dustgw [EAL options] -- --config FILE [options]\n"
	    "\n"
	    "Terminates Dust for many clients on a DPDK port and delivers their\n"
	    "cleartext IP packets to a second port (net_tap, net_ring, net_pcap...).\n"
	    "\n"
	    "options (after --):\n"
	    "  -c, --config FILE      INI configuration (see config/dustgw.conf)\n"
	    "  -i, --exit-on-idle MS  exit once no packet arrived for MS milliseconds\n"
	    "                         (pcap replay; overrides [runtime] exit_on_idle_ms)\n"
	    "  -s, --stats-out FILE   on exit, also write every counter as 'name value' lines\n"
	    "  -r, --replay           the clock is the capture's packet timestamps (net_pcap\n"
	    "                         rx_pcap) and the store is opened read-only: a capture\n"
	    "                         replays the same on any day, any number of times\n"
	    "                         (same as [runtime] clock = capture)\n"
	    "      --check-config     validate the configuration, the key and the store,\n"
	    "                         print a summary and exit (0: ok); needs no EAL\n"
	    "                         options and runs beside a running gateway\n"
	    "  -h, --help             this text\n"
	    "\n"
	    "One worker lcore per queue ([ports] queues) besides the main lcore, e.g.\n"
	    "  dustgw -l 0,1 --no-huge -m 512 --no-pci \\\n"
	    "    --vdev net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap \\\n"
	    "    --vdev net_pcap1,tx_pcap=clear.pcap -- --config dustgw.conf --exit-on-idle 500\n"
	    "Telemetry (while running): dpdk-telemetry.py, then /dustgw/stats, "
	    "/dustgw/sessions.\n");
	if (dust_init() == 0)
		fprintf(f, "Data AEAD here: %s\n", dust_crypto_backend_name());
}

struct opts {
	const char *config;
	const char *stats_out;
	long exit_on_idle;
	bool replay;
	bool check;
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"exit-on-idle", required_argument, NULL, 'i'},
	    {"stats-out", required_argument, NULL, 's'},
	    {"replay", no_argument, NULL, 'r'},
	    {"check-config", no_argument, NULL, 'C'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	o->exit_on_idle = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:i:s:rh", lo, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case 'i':
			o->exit_on_idle = strtol(optarg, &end, 10);
			if (*end || o->exit_on_idle < 1) {
				fprintf(stderr, "dustgw: --exit-on-idle wants milliseconds > 0\n");
				return -1;
			}
			break;
		case 's':
			o->stats_out = optarg;
			break;
		case 'r':
			o->replay = true;
			break;
		case 'C':
			o->check = true;
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc || !o->config) {
		fprintf(stderr, "dustgw: %s\n",
		        o->config ? "unexpected argument" : "--config FILE is required");
		usage(stderr);
		return -1;
	}
	return 0;
}

static void on_signal(int sig)
{
	struct dgw *gw = __atomic_load_n(&dgw_global, __ATOMIC_ACQUIRE);

	(void)sig;
	if (gw)
		dgw_stop(gw);
}

static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

/*
 * --check-config, before and without EAL: a check must not take the
 * running gateway's TAP, sockets or runtime directory. dustgw's options
 * are those after "--", or all of them when there is no "--".
 */
static int check_only(int argc, char **argv)
{
	struct opts o = {0};
	struct dgw_config cfg;
	char err[512];
	int first = 1;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			first = i + 1;
			break;
		}
	argv[first - 1] = argv[0];
	if (parse_opts(argc - first + 1, argv + first - 1, &o) != 0 || dust_init() != 0 ||
	    dust_core_dumps_off() != 0)
		return 1;
	dgw_config_defaults(&cfg);
	if (dgw_config_load(&cfg, o.config, err, sizeof(err)) != 0) {
		fprintf(stderr, "dustgw: %s\n", err);
		return 1;
	}
	if (o.replay)
		cfg.clock = DGW_CLOCK_CAPTURE;
	return dgw_config_check(&cfg, o.config) == 0 ? 0 : 1;
}

static bool wants_check(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--check-config"))
			return true;
	return false;
}

static void banner(const struct dgw *gw)
{
	char a4[64] = "-", a6[64] = "-";
	char net[RTE_ETH_NAME_MAX_LEN] = "?", dlv[RTE_ETH_NAME_MAX_LEN] = "?";

	if (gw->cfg.ip4.family)
		dust_ipaddr_format(&gw->cfg.ip4, a4, sizeof(a4));
	if (gw->cfg.ip6.family)
		dust_ipaddr_format(&gw->cfg.ip6, a6, sizeof(a6));
	rte_eth_dev_get_name_by_port(gw->net_port, net);
	rte_eth_dev_get_name_by_port(gw->dlv_port, dlv);
	char quic[32] = "";

	if (gw->cfg.quic_port)
		snprintf(quic, sizeof(quic), ", quic %u", gw->cfg.quic_port);
	printf("dustgw: %u invitations, UDP random %u%s on %s / %s via port %u (%s), cleartext to "
	       "port %u (%s), %u worker%s\n",
	       gw->ninv, gw->cfg.udp_port, quic, a4, a6, gw->net_port, net, gw->dlv_port, dlv,
	       gw->nworkers, gw->nworkers > 1 ? "s" : "");
	printf("dustgw: data AEAD %s\n", dust_crypto_backend_name());
	fflush(stdout);
}

static int run(struct opts *o)
{
	struct dgw_config cfg;
	struct dgw_prom *prom = NULL;
	struct dgw *gw;
	char err[512];
	int rc;

	dgw_config_defaults(&cfg);
	if (dgw_config_load(&cfg, o->config, err, sizeof(err)) != 0) {
		fprintf(stderr, "dustgw: %s\n", err);
		return 1;
	}
	if (o->exit_on_idle > 0)
		cfg.exit_on_idle_ms = (uint32_t)o->exit_on_idle;
	if (o->replay)
		cfg.clock = DGW_CLOCK_CAPTURE;
	/* a port taken or an address not ours: stop before the store is opened */
	if (cfg.prometheus[0] && !(prom = dgw_prom_open(cfg.prometheus)))
		return 1;
	gw = dgw_create(&cfg);
	if (!gw || (rc = dgw_ports_setup(gw)) != 0) {
		dgw_destroy(gw);
		dgw_prom_stop(prom);
		return 1;
	}
	if (dgw_telemetry_register() != 0)
		DGW_LOG(WARNING, "telemetry commands not registered");
	if (prom && dgw_prom_start(prom, gw) != 0) {
		dgw_destroy(gw);
		dgw_prom_stop(prom);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	banner(gw);
	rc = dgw_run(gw);
	dgw_prom_stop(prom);
	dgw_stats_print(gw, stdout);
	if (o->stats_out && dgw_stats_write(gw, o->stats_out) != 0) {
		fprintf(stderr, "dustgw: cannot write %s\n", o->stats_out);
		rc = -EIO;
	}
	dgw_destroy(gw);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	char **eal_argv;
	int n, rc = 1;

	if (wants_help(argc, argv)) {
		usage(stdout);
		return 0;
	}
	if (wants_check(argc, argv))
		return check_only(argc, argv);
	argc = dgw_eal_args(argc, argv, &eal_argv);
	if (argc < 0) {
		fprintf(stderr, "dustgw: out of memory\n");
		return 1;
	}
	argv = eal_argv;
	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "dustgw: EAL init failed: %s\n", rte_strerror(rte_errno));
		goto out_free;
	}
	argv[n] = argv[0];
	/* the server key and the store's secrets: never in a core (F5) */
	if (parse_opts(argc - n, argv + n, &o) == 0 && dust_init() == 0 &&
	    dust_core_dumps_off() == 0)
		rc = run(&o);
	rte_eal_cleanup();
out_free:
	free(eal_argv); /* the EAL arguments with the quiet log levels added */
	return rc;
}
