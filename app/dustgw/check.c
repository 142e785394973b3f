/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dustgw --check-config: validate a configuration and the files it names
 * (as nginx -t does) without starting EAL, so it runs beside a live
 * gateway: the key, the store (opened read-only) and the state directory.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cfgcheck.h"

/* The key loads; kept in id for the store, whose records it opens (SPEC §7.6). */
static int check_key(const struct dgw_config *cfg, struct dust_identity *id)
{
	int rc = dust_identity_load(id, cfg->key_file);

	if (rc != 0) {
		fprintf(stderr, "dustgw: server key %s: %s%s\n", cfg->key_file,
		        rc == -EPERM ? "readable by group or others (chmod 600 it)" : strerror(-rc),
		        rc == -ENOENT ? " (create one with dust-invite keygen)" : "");
		return rc;
	}
	return 0;
}

/* The gateway appends bindings to <store>.bind and rewrites it on open. */
static int check_state_dir(const struct dgw_config *cfg)
{
	char dir[DGW_PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", cfg->store_path);
	if (access(dirname(dir), W_OK | X_OK) != 0) {
		int rc = -errno;

		snprintf(dir, sizeof(dir), "%s", cfg->store_path);
		fprintf(stderr, "dustgw: %s: %s (the gateway writes the binding journal there)\n",
		        dirname(dir), strerror(-rc));
		return rc;
	}
	return 0;
}

/* The first flight's shape: learned from the cover server, or the configured one. */
static void check_shape(const struct dgw_config *cfg)
{
	const struct dgw_shape *sh = &cfg->shape;
	char src[INET_ADDRSTRLEN] = "?";

	inet_ntop(AF_INET, cfg->cover_learn_src.a, src, sizeof(src));
	printf("dustgw: quic first flight: answer %u B, tail %u..%u B, %s, PTO %u ms, ", sh->answer,
	       sh->tail_min, sh->tail_max,
	       sh->ack_first ? "ACK-only Initial first" : "no ACK first", sh->pto_ms);
	if (sh->short_len)
		printf("1-RTT %u B after tails to %u B, coalesced behind the tail in %u/3\n",
		       sh->short_len, sh->short_tail, sh->coalesce);
	else
		printf("no 1-RTT after the tail\n");
	if (cfg->cover == DGW_COVER_TAP && cfg->cover_learn_s)
		printf(
		    "dustgw: quic first flight: learned from the cover server at start and every "
		    "%u s (hellos for %s from %s; route it through %s), the above until then\n",
		    cfg->cover_learn_s, cfg->cover_learn_sni, src, cfg->cover_iface);
}

/*
 * One [quic] cover knob that the replay clock turns off (it has no client
 * to answer): what it does when off, under clock = capture, and on.
 */
static void print_knob(const struct dgw_config *cfg, const char *what, bool on, const char *off,
                       const char *capture, const char *cover)
{
	printf("dustgw: quic %s: %s\n", what,
	       !on                               ? off
	       : cfg->clock == DGW_CLOCK_CAPTURE ? capture
	                                         : cover);
}

/* What the quic profile will look like on the wire. */
static void check_quic(const struct dgw_config *cfg)
{
	printf("dustgw: quic data sizes: %s\n",
	       cfg->pad.model ? "the cover's (Chromium 156 <-> caddy page loads)"
	                      : "[padding] as on the random port");
	print_knob(cfg, "downstream pacing", cfg->pacing, "off (a burst's datagrams back to back)",
	           "cover, but off under [runtime] clock = capture (replay)",
	           "cover (gaps within a burst drawn from caddy's, SPEC §12.4)");
	printf("dustgw: quic ACK-sized datagrams to clients: %s\n",
	       cfg->quic_acks ? "cover (22..32 B after every second data datagram, SPEC §12.4)"
	                      : "off");
	print_knob(cfg, "path MTU discovery", cfg->quic_pmtu, "off (every session at 1252 B)",
	           "cover, but off under [runtime] clock = capture (replay: no echo)",
	           "cover (probes of 1352..1439 B as quic-go's, SPEC §12.4)");
	print_knob(cfg, "first flight after its ACK", cfg->quic_hold, "off (sent at once)",
	           "cover, but at once under [runtime] clock = capture (replay: no probe)",
	           "cover (held for the client's PTO probe, SPEC §12.3)");
	check_shape(cfg);
}

/* [quic] cover = tap: dustgw will create a TAP interface (needs /dev/net/tun). */
static int check_cover(const struct dgw_config *cfg)
{
	if (cfg->quic_port)
		check_quic(cfg);
	if (cfg->cover != DGW_COVER_TAP)
		return 0;
	if (access("/dev/net/tun", R_OK | W_OK) != 0) {
		int rc = -errno;

		fprintf(stderr, "dustgw: [quic] cover = tap: /dev/net/tun: %s\n", strerror(-rc));
		return rc;
	}
	printf("dustgw: cover: what is not Dust on %u/udp and every other protocol goes to "
	       "kernel interface %s (give it the gateway's address); at most %u frames/s, "
	       "%u/s per /24 or /48\n",
	       cfg->quic_port, cfg->cover_iface, cfg->cover_rate, cfg->cover_prefix_rate);
	return 0;
}

int dgw_config_check(const struct dgw_config *cfg, const char *path)
{
	struct dust_identity id;
	struct dust_store *st;
	bool remote;
	size_t n;
	int rc;

	if ((rc = check_key(cfg, &id)) != 0)
		return rc;
	if ((rc = check_cover(cfg)) != 0) {
		dust_identity_wipe(&id);
		return rc;
	}
	st = dust_store_open(cfg->store_path, DUST_STORE_READONLY, &id);
	dust_identity_wipe(&id);
	if (!st) {
		rc = errno ? -errno : -EINVAL;
		fprintf(stderr, "dustgw: invitation store %s: %s\n", cfg->store_path,
		        dust_last_error());
		return rc;
	}
	n = dust_store_count(st);
	remote = strcmp(dust_store_backend(st), "file") != 0; /* no journal on this host */
	if (dust_store_refused(st))
		fprintf(stderr,
		        "dustgw: invitation store %s: %" PRIu64 " records refused: not sealed "
		        "under this server's key (written by someone without it)\n",
		        cfg->store_path, dust_store_refused(st));
	dust_store_close(st);
	if (cfg->clock != DGW_CLOCK_CAPTURE && !remote && (rc = check_state_dir(cfg)) != 0)
		return rc;
	printf("dustgw: %s: ok (%zu invitation%s; ports '%s' and '%s', %u queue%s: checked when "
	       "dustgw starts)\n",
	       path, n, n == 1 ? "" : "s", cfg->net_port, cfg->dlv_port, cfg->queues,
	       cfg->queues == 1 ? "" : "s");
	return 0;
}
