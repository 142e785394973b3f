/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-dpi: read a capture, look at its UDP payloads as a censor's DPI box
 * would, and say whether anything sets them apart from random bytes.
 * Exit 0: nothing flagged; 1: some check flagged; 2: error or too little data.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpi.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dust-dpi [options] CAPTURE.pcap\n"
		"  -p, --port N        only UDP datagrams from or to port N\n"
		"  -d, --dir to|from   with --port: only datagrams to N (client->server)\n"
		"                      or from N (server->client)\n"
		"  -a, --alpha A       false-positive budget per check (default 1e-4)\n"
		"  -l, --len-share S   length check: flag a length shown to hold more than\n"
		"                      share S of payloads (default 0.0625)\n"
		"  -m, --min N         refuse to judge fewer than N payloads (default 100)\n"
		"  -q, --quic          with --port N (the server's): instead of the randomness\n"
		"                      checks, check that the traffic is QUIC v1: packets parse,\n"
		"                      Initials decrypt to Client/ServerHellos, CIDs consistent\n"
		"  -h, --help\n"
		"Exit status: 0 nothing flagged, 1 flagged, 2 error or too few payloads.\n");
}

static bool quic_mode; /* --quic */

static int parse_args(int argc, char **argv, struct dpi_filter *f, struct dpi_params *p,
		      long *min_n, const char **path)
{
	static const struct option opts[] = {
		{"port", required_argument, NULL, 'p'},  {"dir", required_argument, NULL, 'd'},
		{"alpha", required_argument, NULL, 'a'}, {"len-share", required_argument, NULL, 'l'},
		{"min", required_argument, NULL, 'm'},   {"help", no_argument, NULL, 'h'},
		{"quic", no_argument, NULL, 'q'},
		{NULL, 0, NULL, 0},
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "p:d:a:l:m:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			f->port = (int)strtol(optarg, &end, 10);
			if (*end || f->port < 0 || f->port > 65535)
				goto bad;
			break;
		case 'd':
			if (!strcmp(optarg, "to"))
				f->dir = DPI_DIR_TO_PORT;
			else if (!strcmp(optarg, "from"))
				f->dir = DPI_DIR_FROM_PORT;
			else
				goto bad;
			break;
		case 'a':
			p->alpha = strtod(optarg, &end);
			if (*end || !(p->alpha > 0 && p->alpha < 1))
				goto bad;
			break;
		case 'l':
			p->len_share = strtod(optarg, &end);
			if (*end || !(p->len_share > 0 && p->len_share < 1))
				goto bad;
			break;
		case 'm':
			*min_n = strtol(optarg, &end, 10);
			if (*end || *min_n < 1)
				goto bad;
			break;
		case 'q':
			quic_mode = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc - 1 || (f->dir != DPI_DIR_ANY && f->port < 0) ||
	    (quic_mode && f->port < 0)) {
		usage(stderr);
		return -1;
	}
	*path = argv[optind];
	return 0;
bad:
	fprintf(stderr, "dust-dpi: bad value for -%c: '%s'\n", c, optarg);
	return -1;
}

static const char *verdict_name(enum dpi_verdict v)
{
	static const char *const names[] = {"PASS", "FLAG", "SKIP", "INFO"};

	return names[v];
}

static void print_header(const struct dpi_capture *c, const char *path,
			 const struct dpi_filter *f)
{
	printf("dust-dpi: %s: %llu frames, %zu UDP payloads in %zu flows", path,
	       (unsigned long long)c->frames, c->n, c->nflows);
	if (f->port >= 0)
		printf(" (%sport %d)",
		       f->dir == DPI_DIR_TO_PORT ? "to " : f->dir == DPI_DIR_FROM_PORT ? "from " : "",
		       f->port);
	printf("\n  left out: %llu not UDP, %llu filtered, %llu truncated, %llu empty\n",
	       (unsigned long long)c->not_udp, (unsigned long long)c->filtered,
	       (unsigned long long)c->truncated, (unsigned long long)c->empty);
}

int main(int argc, char **argv)
{
	void (*const checks[])(const struct dpi_capture *, const struct dpi_params *,
			       struct dpi_result *) = {
		dpi_check_bits,	    dpi_check_chi2,    dpi_check_lengths,
		dpi_check_prefixes, dpi_check_repeats, dpi_check_gfw,
	};
	struct dpi_params p = {.alpha = 1e-4, .len_share = 1.0 / 16};
	struct dpi_filter f = {.port = -1, .dir = DPI_DIR_ANY};
	struct dpi_capture cap = {0};
	const char *path;
	long min_n = 100;
	unsigned flags = 0;

	if (parse_args(argc, argv, &f, &p, &min_n, &path) < 0)
		return 2;
	if (dpi_capture_read(&cap, path, &f) < 0)
		return 2;
	print_header(&cap, path, &f);
	if (cap.n < (size_t)min_n) {
		fprintf(stderr, "dust-dpi: %s: %zu UDP payloads, fewer than the %ld needed to judge\n",
			path, cap.n, min_n);
		dpi_capture_free(&cap);
		return 2;
	}
	if (quic_mode) {
		struct dpi_result r = {0};

		printf("checks (QUIC v1, server port %d):\n", f.port);
		dpi_check_quic(&cap, &p, f.port, &r);
		printf("  %-13s %s  %s\n", r.name, verdict_name(r.verdict), r.detail);
		flags += r.verdict == DPI_FLAG;
		goto out;
	}
	printf("checks (each flags random payloads with probability <= %g):\n", p.alpha);
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		struct dpi_result r = {0};

		checks[i](&cap, &p, &r);
		printf("  %-13s %s  %s\n", r.name, verdict_name(r.verdict), r.detail);
		flags += r.verdict == DPI_FLAG;
	}
out:
	printf("result: %s\n", flags ? "FLAGGED: this traffic stands out" : "nothing flagged");
	dpi_capture_free(&cap);
	return flags ? 1 : 0;
}
