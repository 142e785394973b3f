/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap: captures for replaying Dust through dustgw, and their checks.
 * gen writes the client side of N clients (intros chained with data, data,
 * optional hostile packets) plus a manifest of what must come out; inject
 * writes cleartext for the delivery side; check and decode compare what
 * dustgw wrote with the manifests; read prints per-flow summaries.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dust-pcap.h"
#include "numopt.h"
#include "wire_quic.h"

static const char usage_text[] =
    "usage: dust-pcap COMMAND [options]\n"
    "\n"
    "  gen --store STORE --key KEY --out PCAP [--out PCAP...] --manifest FILE [--clients N]\n"
    "      [--packets P] [--bad] [--state FILE] [--reuse-state FILE] [--wrong-key K]\n"
    "      [--roam K] [--table-max N] [--ip6 GW6]\n"
    "      Client traffic toward the gateway of STORE's invitations (one client per\n"
    "      invitation, a fresh client key each, or the keys of --reuse-state; the first K\n"
    "      get a fresh key anyway). Each client sends an intro chained with its first\n"
    "      packet, then P-1 more of mixed sizes. --bad adds forged, truncated, replayed,\n"
    "      spoofed and foreign packets. Client i goes to the (i mod n)-th --out file.\n"
    "      --roam K: the first K clients then re-introduce from a new address (same\n"
    "      file). --table-max N: the gateway's per-lcore session\n"
    "      limit, so clients beyond it are expected as table_full. --ip6 GW6: add an ND\n"
    "      solicitation for the gateway's IPv6 address and IPv6 UDP for another.\n"
    "      The manifest lists every cleartext packet dustgw must deliver and the counter\n"
    "      values it must report; --state saves the client sessions (for decode/inject).\n"
    "  gen --profile quic --store STORE --key KEY --out PCAP [--out PCAP...]\n"
    "      --manifest FILE [--clients N] [--packets P] [--wire PCAP]\n"
    "      Quic-profile clients (SPEC §12): each sends its QUIC Initial, then P-1\n"
    "      short-header data packets. Their keys depend on the server's answer, made\n"
    "      here by a server side with KEY (the store read only); the gateway, with its\n"
    "      own ephemeral and connection IDs, accepts every Initial and drops that data\n"
    "      as quic_no_session (the manifest says so). --wire PCAP: both directions\n"
    "      (Initials, answers, data each way) as an observer on the path sees them.\n"
    "  inject --store STORE --key KEY --state FILE --out PCAP [--out PCAP...] --manifest FILE\n"
    "      [--packets P]  Cleartext from the tunnel side toward each client (client i\n"
    "      to file (i+1) mod n, so it crosses lcores), plus packets for an unused\n"
    "      invitation and for an unknown address, with a manifest.\n"
    "  check --manifest FILE [--stats FILE] [--delivered PCAP...] [--unordered]\n"
    "      dustgw's delivered cleartext equals the manifest byte for byte (in order, or\n"
    "      with --unordered: each client's packets in order and all in one file), and\n"
    "      every counter in the manifest matches --stats (dustgw --stats-out); every\n"
    "      drop reason the manifest does not name must be zero. A second --manifest\n"
    "      (e.g. inject's) adds its counters to the expectations.\n"
    "  decode --state FILE --in PCAP [--in PCAP...] [--manifest FILE]\n"
    "      Open the gateway's replies with the saved client sessions; with an inject\n"
    "      manifest, every expected packet must decode, byte for byte.\n"
    "  read PCAP...  Per-flow summary (UDP 5-tuples, frames, bytes, other frames).\n"
    "\n"
    "KEY is the server's key file: the store's records are sealed under it.\n";

/* ---- main ---------------------------------------------------------------- */

/* A count option: a whole number, or a clear error and exit 1. */
static void num(const char *arg, const char *opt, unsigned *out)
{
	if (!numopt_uint("dust-pcap", opt, arg, 0, UINT_MAX, out))
		exit(1);
}

static int parse(int argc, char **argv, struct args *a)
{
	static const struct option lo[] = {
	    {"store", required_argument, NULL, 'S'},
	    {"out", required_argument, NULL, 'o'},
	    {"in", required_argument, NULL, 'i'},
	    {"delivered", required_argument, NULL, 'i'},
	    {"manifest", required_argument, NULL, 'm'},
	    {"clients", required_argument, NULL, 'n'},
	    {"packets", required_argument, NULL, 'p'},
	    {"bad", no_argument, NULL, 'b'},
	    {"state", required_argument, NULL, 's'},
	    {"reuse-state", required_argument, NULL, 'r'},
	    {"wrong-key", required_argument, NULL, 'w'},
	    {"stats", required_argument, NULL, 't'},
	    {"unordered", no_argument, NULL, 'u'},
	    {"roam", required_argument, NULL, 'R'},
	    {"table-max", required_argument, NULL, 'T'},
	    {"ip6", required_argument, NULL, '6'},
	    {"v6-clients", required_argument, NULL, 'V'},
	    {"profile", required_argument, NULL, 'P'},
	    {"key", required_argument, NULL, 'K'},
	    {"wire", required_argument, NULL, 'W'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(a, 0, sizeof(*a));
	a->packets = 4;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			a->store = optarg;
			break;
		case 'o':
			if (a->nout == MAX_OUT)
				die("at most 8 --out%s", "");
			a->out[a->nout++] = optarg;
			break;
		case 'i':
			if (a->nin == MAX_OUT)
				die("at most 8 --in%s", "");
			a->in[a->nin++] = optarg;
			break;
		case 'm':
			if (!a->manifest)
				a->manifest = optarg;
			else if (a->nmore < MAX_OUT)
				a->more_manifest[a->nmore++] = optarg;
			break;
		case 'n':
			num(optarg, "clients", &a->clients);
			break;
		case 'p':
			num(optarg, "packets", &a->packets);
			break;
		case 'b':
			a->bad = 1;
			break;
		case 's':
			a->state = optarg;
			break;
		case 'r':
			a->reuse = optarg;
			break;
		case 'w':
			num(optarg, "wrong-key", &a->wrong_key);
			break;
		case 't':
			a->stats = optarg;
			break;
		case 'u':
			a->unordered = 1;
			break;
		case 'R':
			num(optarg, "roam", &a->roam);
			break;
		case 'T':
			num(optarg, "table-max", &a->table_max);
			break;
		case '6':
			a->ip6 = optarg;
			break;
		case 'V':
			num(optarg, "v6-clients", &a->v6_clients);
			break;
		case 'P':
			if (!strcmp(optarg, "quic"))
				a->profile = DUST_PROFILE_QUIC;
			else if (strcmp(optarg, "random") != 0)
				die("--profile: random or quic, not %s", optarg);
			break;
		case 'K':
			a->key = optarg;
			break;
		case 'W':
			a->wire = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			fputs(usage_text, stderr);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct args a;
	const char *cmd = argc > 1 ? argv[1] : "";

	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (dust_init() != 0)
		die("libsodium init failed%s", "");
	dust_rng_init(&rng);
	dust_pad_default(&pad);
	if (!strcmp(cmd, "read"))
		return argc > 2 ? cmd_read(argc - 2, argv + 2) : die("read needs a file%s", "");
	if (parse(argc - 1, argv + 1, &a) != 0)
		return 2;
	if (!strcmp(cmd, "gen"))
		return a.profile == DUST_PROFILE_QUIC ? cmd_gen_quic(&a) : cmd_gen(&a);
	if (!strcmp(cmd, "inject"))
		return cmd_inject(&a);
	if (!strcmp(cmd, "check"))
		return cmd_check(&a);
	if (!strcmp(cmd, "decode"))
		return cmd_decode(&a);
	fputs(usage_text, stderr);
	return 2;
}
