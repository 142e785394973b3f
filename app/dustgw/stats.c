/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counter names and the summaries built from the per-lcore counters: the
 * human table printed on exit and a "name value" file that tests and
 * scripts read. Workers write their own counters; readers only load them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include <rte_cycles.h>

#include "dgw_pvt.h"
#include "pending.h"
#include "pubwait.h"
#include "slow.h"

/*
 * Each event counter's name (telemetry, summaries, the stats file, and
 * dustgw_NAME_total on /metrics) and its Prometheus HELP text; one without
 * help text is described by its name.
 */
static const struct {
	const char *name, *help;
} ctrs[DGW_CTR_MAX] = {
    [DGW_CTR_NET_RX] = {"net_rx", "Frames read on the net (client) port."},
    [DGW_CTR_NET_TX] = {"net_tx", "Frames sent on the net (client) port."},
    [DGW_CTR_DLV_RX] = {"dlv_rx", "Frames read on the delivery port."},
    [DGW_CTR_DLV_TX] = {"dlv_tx", "Frames sent on the delivery port."},
    [DGW_CTR_DECODED] = {"decoded", "Dust data packets authenticated."},
    [DGW_CTR_DELIVERED] = {"delivered", "Inner packets delivered."},
    [DGW_CTR_ENCODED] = {"encoded", "Inner packets sealed toward a client."},
    [DGW_CTR_INTRO_OK] = {"intro_ok", "Intros accepted."},
    [DGW_CTR_INTRO_FIRST] = {"intro_first_use", "Intros that bound an invitation (first use)."},
    [DGW_CTR_KA_RX] = {"keepalive_rx", "Keepalives received."},
    [DGW_CTR_KA_TX] = {"keepalive_tx", "Keepalives sent."},
    [DGW_CTR_ARP_REPLY] = {"arp_reply", "ARP replies sent."},
    [DGW_CTR_ND_REPLY] = {"nd_reply", "IPv6 neighbour advertisements sent."},
    [DGW_CTR_SESS_EXPIRED] = {"sessions_expired", "Sessions retired after idle_timeout_s."},
    [DGW_CTR_SESS_EVICTED] = {"sessions_evicted",
                              "Sessions replaced by an intro on another worker."},
    [DGW_CTR_SESS_EVICTED_IDLE] = {"sessions_evicted_idle",
                                   "Sessions evicted from a full table for an intro."},
    [DGW_CTR_QUIC_ANSWER] = {"quic_answers", "Quic profile: server first flights sent."},
    [DGW_CTR_QUIC_MIGRATED] = {"quic_migrated",
                               "Quic profile: sessions moved to a new address by CID."},
    [DGW_CTR_PATH_CHALLENGE] = {"path_challenge",
                                "Path challenges sent to a moved session's new address."},
    [DGW_CTR_PATH_VALIDATED] = {"path_validated",
                                "New or moved client addresses that proved they receive."},
    [DGW_CTR_SESS_REVOKED] = {"sessions_revoked",
                              "Sessions retired because their invitation was revoked."},
    [DGW_CTR_MSS_CLAMPED] = {"mss_clamped", "Quic profile: inner TCP SYNs whose MSS was lowered."},
    [DGW_CTR_ICMP_TOO_BIG] = {"icmp_too_big", "Quic profile: ICMP too-big errors sent back."},
    [DGW_CTR_COVER_IN] = {"cover_in", "Frames that were not Dust handed to the cover server."},
    [DGW_CTR_COVER_OUT] = {"cover_out", "Frames from the cover server sent on the net port."},
    [DGW_CTR_COVER_FLOWS] = {"cover_flows", "Quic flows remembered as the cover server's."},
    [DGW_CTR_COVER_FLOW_FULL] = {"cover_flow_full",
                                 "Cover flow table full: frames handed over, not remembered."},
    [DGW_CTR_MSG_BACKLOG] = {"msg_backlogged",
                             "RETIRED messages that waited for room in the main lcore's ring."},
    [DGW_CTR_HANDOFF_TX] = {"quic_handoff_tx",
                            "Quic short headers handed to the worker owning their CID."},
    [DGW_CTR_HANDOFF_RX] = {"quic_handoff_rx",
                            "Quic short headers taken from another worker's handoff ring."},
    [DGW_CTR_PACED] = {"quic_paced",
                       "Quic profile: datagrams the pacer held for their departure time."},
    [DGW_CTR_HELLO_HELD] = {"quic_hello_held",
                            "Quic hellos' first Initials held for their second."},
    [DGW_CTR_HELLO_PAIRED] = {"quic_hello_paired",
                              "Held first Initials whose second came (one hello)."},
    [DGW_CTR_HELLO_UNPAIRED] = {"quic_hello_unpaired",
                                "Held first Initials with no second, handed to the cover server."},
    [DGW_CTR_HELLO_REPLAYED] =
        {"quic_hello_replayed",
         "Replayed first Initials of a hello, handed to the cover server at once."},
    [DGW_CTR_QUIC_INITIAL_QUEUED] = {"quic_initial_queued",
                                     "Quic client Initials run from the slow queue (intro_share)."},
    [DGW_CTR_QUIC_CONFIRM_ACK] =
        {"quic_confirm_acks", "Quic clients' padded Initial+Handshake ACK datagrams passed by."},
    [DGW_CTR_QUIC_CONFIRM_OLD] =
        {"quic_confirm_old",
         "Quic confirmations in the previous release's form (one Handshake packet)."},
    [DGW_CTR_QUIC_HS_ACKS] = {"quic_hs_acks", NULL},
    [DGW_CTR_QUIC_HS_DONE] = {"quic_hs_done", NULL},
    [DGW_CTR_QUIC_HELD] = {"quic_held", NULL},
    [DGW_CTR_QUIC_PROBED] = {"quic_probed", NULL},
    [DGW_CTR_PMTU_PROBES] = {"pmtu_probes", NULL},
    [DGW_CTR_PMTU_RAISED] = {"pmtu_raised", NULL},
    [DGW_CTR_QUIC_RTX_HELLO] = {"quic_rtx_hello", NULL},
    [DGW_CTR_QUIC_RTX_PTO] = {"quic_rtx_pto", NULL},
    [DGW_CTR_QUIC_RTX_PTO_HS] = {"quic_rtx_pto_hs", NULL},
    [DGW_CTR_QUIC_RTX_DONE] = {"quic_rtx_done", NULL},
    [DGW_CTR_QUIC_RTX_EXPIRED] = {"quic_rtx_expired", NULL},
    [DGW_CTR_QUIC_RTX_CLOSED] = {"quic_rtx_closed", NULL},
    [DGW_CTR_QUIC_RTX_EVICTED] = {"quic_rtx_evicted", NULL},
    [DGW_CTR_QUIC_RTX_LIMITED] = {"quic_rtx_limited", NULL},
    [DGW_CTR_COVER_LEARN_OK] =
        {"cover_learn_ok", "Rounds that learned the first flight's shape from the cover server."},
    [DGW_CTR_COVER_LEARN_FAIL] =
        {"cover_learn_fail", "Rounds with no answer of the first flight's shape from the cover."},
    [DGW_CTR_COVER_LEARN_RX] = {"cover_learn_rx",
                                "Frames to the learner's probe address, kept from the net port."},
    [DGW_CTR_QUIC_ACKS] = {"quic_acks",
                           "Quic clients' ACK-sized datagrams (under any Dust packet) passed by."},
    [DGW_CTR_QUIC_ACKS_TX] = {"quic_acks_tx",
                              "ACK-sized datagrams sent to quic clients ([quic] acks = cover)."},
    [DGW_CTR_QUIC_COMPACT] = {"quic_compact",
                              "Compact packets (a compressed inner TCP ACK) opened from clients."},
    [DGW_CTR_ACKZ_BAD] = {"ackz_bad",
                          "Compact packets whose compressed ACK did not rebuild: dropped."},
    [DGW_CTR_ACKS_THINNED] =
        {"acks_thinned",
         "Inner TCP ACKs to clients left out: a newer one of the burst covers them."},
};

static const char *const drop_names[DGW_DROP_MAX - DUST_DROP_MAX] = {
    [DGW_DROP_RUNT - DUST_DROP_MAX] = "runt",
    [DGW_DROP_NOT_IP - DUST_DROP_MAX] = "not_ip",
    [DGW_DROP_ARP_OTHER - DUST_DROP_MAX] = "arp_other",
    [DGW_DROP_BAD_IP - DUST_DROP_MAX] = "bad_ip",
    [DGW_DROP_IP_CSUM - DUST_DROP_MAX] = "ip_csum",
    [DGW_DROP_IP_FRAG - DUST_DROP_MAX] = "ip_frag",
    [DGW_DROP_IP6_EXT - DUST_DROP_MAX] = "ip6_ext",
    [DGW_DROP_NOT_OURS - DUST_DROP_MAX] = "not_ours",
    [DGW_DROP_NOT_UDP - DUST_DROP_MAX] = "not_udp",
    [DGW_DROP_OTHER_PORT - DUST_DROP_MAX] = "other_port",
    [DGW_DROP_BAD_UDP - DUST_DROP_MAX] = "bad_udp",
    [DGW_DROP_UDP_CSUM - DUST_DROP_MAX] = "udp_csum",
    [DGW_DROP_MULTISEG - DUST_DROP_MAX] = "multiseg",
    [DGW_DROP_TABLE_FULL - DUST_DROP_MAX] = "table_full",
    [DGW_DROP_PENDING_FULL - DUST_DROP_MAX] = "pending_full",
    [DGW_DROP_INNER_BAD - DUST_DROP_MAX] = "inner_bad",
    [DGW_DROP_INNER_SRC - DUST_DROP_MAX] = "inner_src",
    [DGW_DROP_DLV_NOT_IP - DUST_DROP_MAX] = "dlv_not_ip",
    [DGW_DROP_NO_TUNNEL - DUST_DROP_MAX] = "no_tunnel",
    [DGW_DROP_DLV_LOCAL - DUST_DROP_MAX] = "dlv_local",
    [DGW_DROP_NO_SESSION - DUST_DROP_MAX] = "no_session",
    [DGW_DROP_NO_SRC_ADDR - DUST_DROP_MAX] = "no_src_addr",
    [DGW_DROP_TOO_BIG - DUST_DROP_MAX] = "too_big",
    [DGW_DROP_SEAL - DUST_DROP_MAX] = "seal",
    [DGW_DROP_NO_MBUF - DUST_DROP_MAX] = "no_mbuf",
    [DGW_DROP_TX_FULL - DUST_DROP_MAX] = "tx_full",
    [DGW_DROP_QUIC_NO_SESSION - DUST_DROP_MAX] = "quic_no_session",
    [DGW_DROP_QUIC_LONG - DUST_DROP_MAX] = "quic_long_other",
    [DGW_DROP_UNPUBLISHED - DUST_DROP_MAX] = "unpublished",
    [DGW_DROP_QUIC_TOO_BIG - DUST_DROP_MAX] = "quic_too_big",
    [DGW_DROP_ENDPOINT_BUSY - DUST_DROP_MAX] = "endpoint_busy",
    [DGW_DROP_PATH_LIMIT - DUST_DROP_MAX] = "path_limit",
    [DGW_DROP_PATH_ECHO - DUST_DROP_MAX] = "path_echo",
    [DGW_DROP_COVER_RATE - DUST_DROP_MAX] = "cover_rate",
    [DGW_DROP_COVER_PREFIX_RATE - DUST_DROP_MAX] = "cover_prefix_rate",
    [DGW_DROP_COVER_TX_FULL - DUST_DROP_MAX] = "cover_tx_full",
    [DGW_DROP_HANDOFF_FULL - DUST_DROP_MAX] = "quic_handoff_full",
    [DGW_DROP_PACE_FULL - DUST_DROP_MAX] = "quic_pace_full",
    [DGW_DROP_HELLO_UNPAIRED - DUST_DROP_MAX] = "quic_hello_unpaired",
    [DGW_DROP_HELLO_REPLAYED - DUST_DROP_MAX] = "quic_hello_replayed",
    [DGW_DROP_QUIC_CONFIRM - DUST_DROP_MAX] = "quic_confirm_malformed",
    [DGW_DROP_QUIC_RTX_PAIR - DUST_DROP_MAX] = "quic_rtx_pair",
};

const char *dgw_ctr_name(unsigned c)
{
	return c < DGW_CTR_MAX ? ctrs[c].name : "?";
}

const char *dgw_ctr_help(unsigned c)
{
	return c < DGW_CTR_MAX && ctrs[c].help ? ctrs[c].help : dgw_ctr_name(c);
}

const char *dgw_drop_name(unsigned d)
{
	if (d < DUST_DROP_MAX)
		return dust_drop_name((enum dust_drop)d);
	return d < DGW_DROP_MAX ? drop_names[d - DUST_DROP_MAX] : "?";
}

unsigned dgw_stats_workers(const struct dgw *gw)
{
	return gw->nworkers;
}

unsigned dgw_stats_lcore(const struct dgw *gw, unsigned w)
{
	return w < gw->nworkers ? dgw_worker_lcore(gw->w[w]) : 0;
}

static void add(struct dgw_stats *out, const struct dgw_stats *in)
{
	for (unsigned c = 0; c < DGW_CTR_MAX; c++)
		out->ctr[c] += __atomic_load_n(&in->ctr[c], __ATOMIC_RELAXED);
	for (unsigned d = 0; d < DGW_DROP_MAX; d++)
		out->drop[d] += __atomic_load_n(&in->drop[d], __ATOMIC_RELAXED);
	out->sessions += __atomic_load_n(&in->sessions, __ATOMIC_RELAXED);
}

void dgw_stats_get(const struct dgw *gw, unsigned w, struct dgw_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < gw->nworkers; i++)
		if (w == UINT32_MAX || w == i)
			add(out, &gw->w[i]->st);
}

void dgw_worker_depths(const struct dgw *gw, unsigned w, struct dgw_depths *out)
{
	const struct dgw_worker *wk = gw->w[w];

	out->pending = dgw_pending_count(wk);
	out->pubwait = dgw_pubwait_count(wk);
	out->slow = dgw_slow_count(wk);
	out->inbox = rte_ring_count(wk->inbox);
	out->busy = atomic_load(&wk->last_net_rx_tsc) == DGW_BUSY;
}

static uint64_t drops_total(const struct dgw_stats *s)
{
	uint64_t t = 0;

	for (unsigned d = 1; d < DGW_DROP_MAX; d++)
		t += s->drop[d];
	return t;
}

static void print_one(FILE *f, const char *who, const struct dgw_stats *s)
{
	fprintf(f,
	        "%-8s %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
	        " %9" PRIu64 " %8" PRIu64 " %9" PRIu64 "\n",
	        who, s->ctr[DGW_CTR_NET_RX], s->ctr[DGW_CTR_NET_TX], s->ctr[DGW_CTR_DLV_RX],
	        s->ctr[DGW_CTR_DLV_TX], s->ctr[DGW_CTR_DECODED], s->ctr[DGW_CTR_DELIVERED],
	        s->ctr[DGW_CTR_ENCODED], s->sessions, drops_total(s));
}

/* Frames per second from the first to the last net-side frame (all of the
 * loop's work, pcap reading and writing included when the ports are pcap). */
static void print_rate(const struct dgw *gw, FILE *f, const struct dgw_stats *t)
{
	uint64_t first = UINT64_MAX, last = 0;

	for (unsigned i = 0; i < gw->nworkers; i++) {
		const struct dgw_worker *w = gw->w[i];
		uint64_t l = atomic_load_explicit(&w->last_net_rx_tsc, memory_order_relaxed);

		if (w->first_rx_tsc && w->first_rx_tsc < first)
			first = w->first_rx_tsc;
		last = RTE_MAX(last, l);
	}
	if (first == UINT64_MAX || last <= first)
		return;
	fprintf(f,
	        "net side: %" PRIu64 " frames in %.3f s from first to last (intros, binding"
	        " writes and pcap I/O included): %.0f frames/s\n",
	        t->ctr[DGW_CTR_NET_RX], (double)(last - first) / rte_get_tsc_hz(),
	        (double)t->ctr[DGW_CTR_NET_RX] * rte_get_tsc_hz() / (double)(last - first));
}

/* A live run (until a signal): how long it ran, mean rates, sessions. */
static void print_live(const struct dgw *gw, FILE *f, const struct dgw_stats *t)
{
	double up = (double)(rte_rdtsc() - gw->start_tsc) / (double)rte_get_tsc_hz();
	uint64_t s = (uint64_t)up;

	if (!gw->start_tsc || up <= 0)
		return;
	fprintf(
	    f,
	    "uptime %" PRIu64 "d %02" PRIu64 ":%02" PRIu64 ":%02" PRIu64 " (%.1f s); mean rates:"
	    " net %.1f frames/s in, %.1f out; delivery %.1f in, %.1f out\n",
	    s / 86400, s / 3600 % 24, s / 60 % 60, s % 60, up, t->ctr[DGW_CTR_NET_RX] / up,
	    t->ctr[DGW_CTR_NET_TX] / up, t->ctr[DGW_CTR_DLV_RX] / up, t->ctr[DGW_CTR_DLV_TX] / up);
	fprintf(f,
	        "sessions: %" PRIu64 " live at stop; %" PRIu64 " intros accepted (%" PRIu64
	        " bound an invitation); %" PRIu64 " expired, %" PRIu64 " evicted\n",
	        t->sessions, t->ctr[DGW_CTR_INTRO_OK], t->ctr[DGW_CTR_INTRO_FIRST],
	        t->ctr[DGW_CTR_SESS_EXPIRED],
	        t->ctr[DGW_CTR_SESS_EVICTED] + t->ctr[DGW_CTR_SESS_EVICTED_IDLE]);
}

/* Replay stops on idle (or runs on a capture's clock); a live run waits for a signal. */
static bool is_replay(const struct dgw *gw)
{
	return gw->cfg.exit_on_idle_ms || gw->cfg.dlv_hold_ms || gw->cfg.clock == DGW_CLOCK_CAPTURE;
}

void dgw_stats_print(const struct dgw *gw, FILE *f)
{
	struct dgw_stats t, per[DGW_MAX_WORKERS];

	dgw_stats_get(gw, UINT32_MAX, &t);
	fprintf(f, "dustgw summary (%u worker lcore%s)\n", gw->nworkers,
	        gw->nworkers > 1 ? "s" : "");
	fprintf(f, "%-8s %9s %9s %9s %9s %9s %9s %9s %8s %9s\n", "lcore", "net_rx", "net_tx",
	        "dlv_rx", "dlv_tx", "decoded", "delivered", "encoded", "sessions", "dropped");
	for (unsigned i = 0; i < gw->nworkers; i++) {
		char who[16];

		dgw_stats_get(gw, i, &per[i]);
		snprintf(who, sizeof(who), "%u", dgw_worker_lcore(gw->w[i]));
		print_one(f, who, &per[i]);
	}
	print_one(f, "total", &t);
	fprintf(f, "events:");
	for (unsigned c = DGW_CTR_INTRO_OK; c < DGW_CTR_MAX; c++)
		fprintf(f, " %s=%" PRIu64, ctrs[c].name, t.ctr[c]);
	fprintf(f, "\ndrops by reason (per lcore):\n");
	for (unsigned d = 1; d < DGW_DROP_MAX; d++) {
		if (!t.drop[d])
			continue;
		fprintf(f, "  %-18s %9" PRIu64 "  (", dgw_drop_name(d), t.drop[d]);
		for (unsigned i = 0; i < gw->nworkers; i++)
			fprintf(f, "%slcore%u=%" PRIu64, i ? " " : "", dgw_worker_lcore(gw->w[i]),
			        per[i].drop[d]);
		fprintf(f, ")\n");
	}
	if (!drops_total(&t))
		fprintf(f, "  (none)\n");
	if (is_replay(gw))
		print_rate(gw, f, &t);
	else
		print_live(gw, f, &t);
}

static void write_one(FILE *f, const char *prefix, const struct dgw_stats *s)
{
	for (unsigned c = 0; c < DGW_CTR_MAX; c++)
		fprintf(f, "%sctr.%s %" PRIu64 "\n", prefix, ctrs[c].name, s->ctr[c]);
	for (unsigned d = 1; d < DGW_DROP_MAX; d++)
		fprintf(f, "%sdrop.%s %" PRIu64 "\n", prefix, dgw_drop_name(d), s->drop[d]);
	fprintf(f, "%ssessions %" PRIu64 "\n", prefix, s->sessions);
}

int dgw_stats_write(const struct dgw *gw, const char *path)
{
	FILE *f = fopen(path, "w");
	struct dgw_stats s;

	if (!f)
		return -errno;
	fprintf(f, "workers %u\n", gw->nworkers);
	dgw_stats_get(gw, UINT32_MAX, &s);
	write_one(f, "", &s);
	for (unsigned i = 0; i < gw->nworkers; i++) {
		char prefix[32];

		snprintf(prefix, sizeof(prefix), "w%u.", i);
		dgw_stats_get(gw, i, &s);
		write_one(f, prefix, &s);
	}
	return fclose(f) == 0 ? 0 : -EIO;
}
