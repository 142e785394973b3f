/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gateway's unit tier (test_pending.c, test_pubwait.c, test_slow.c):
 * one worker of a real gateway (dustgw_core) over a --no-huge EAL with no
 * ports, each module's functions called one after another from the test's
 * thread, no loop. test/e2e/gw/ringgw.sh runs each with its EAL line and a
 * work directory (after "--") for the key and the store.
 */
#ifndef GW_UNIT_H
#define GW_UNIT_H

#include <stdio.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_mbuf.h>

#include "check.h"
#include "dgw_pvt.h"

enum { GWU_NINV = 4 };

static struct {
	struct dgw *gw;
	struct dgw_worker *w; /* worker 0: the one under test */
	struct dgw_config cfg;
	struct dust_identity srv, cli;
	struct dust_invite inv[GWU_NINV];
	struct dust_rng rng;
	struct dust_pad pad;
} U;

/* The gateway's key, a store with GWU_NINV invitations (tunnels 10.9.0.2..) under dir. */
static inline int gwu_store(const char *dir)
{
	struct dust_ipaddr addr, tun;
	struct dust_store *st;

	snprintf(U.cfg.key_file, sizeof(U.cfg.key_file), "%s/server.key", dir);
	snprintf(U.cfg.store_path, sizeof(U.cfg.store_path), "%s/inv.store", dir);
	remove(U.cfg.store_path);
	if (dust_identity_generate(&U.srv) || dust_identity_save(&U.srv, U.cfg.key_file) ||
	    dust_identity_generate(&U.cli))
		return -1;
	st = dust_store_open(U.cfg.store_path, DUST_STORE_CREATE, &U.srv);
	if (!st)
		return -1;
	dust_ipaddr_parse(&addr, "10.0.0.1");
	for (unsigned i = 0; i < GWU_NINV; i++) {
		dust_ipaddr_parse(&tun, "10.9.0.0");
		tun.a[3] = (uint8_t)(i + 2);
		if (dust_invite_new(&U.inv[i], &U.srv, &addr, 4433, &tun, 16, time(NULL) + 3600) ||
		    dust_store_add(st, &U.inv[i]))
			return -1;
	}
	if (dust_store_save(st))
		return -1;
	dust_store_close(st);
	return 0;
}

/* EAL from argv, then the gateway (one worker); 0, or -1 with a message. */
static inline int gwu_setup(const char *name, int argc, char **argv)
{
	int n = rte_eal_init(argc, argv);

	if (n < 0 || argc - n < 2 || dust_init() != 0) {
		fprintf(stderr, "usage: %s EAL-ARGS -- WORKDIR\n", name);
		return -1;
	}
	dgw_config_defaults(&U.cfg);
	dust_ipaddr_parse(&U.cfg.ip4, "10.0.0.1");
	U.cfg.queues = 1;
	U.cfg.sessions_per_lcore = 8;
	if (gwu_store(argv[n + 1]) || !(U.gw = dgw_create(&U.cfg))) {
		fprintf(stderr, "%s: setup failed\n", name);
		return -1;
	}
	U.w = U.gw->w[0];
	dust_rng_init(&U.rng);
	dust_pad_default(&U.pad);
	return 0;
}

static inline void gwu_teardown(void)
{
	dgw_destroy(U.gw);
	U.gw = NULL;
	U.w = NULL;
	rte_eal_cleanup();
}

/* A unit test's main: the EAL and worker set up, the tests run, all torn down. */
static inline int gwu_main(const char *name, int argc, char **argv, const struct check_test *tests,
                           size_t n)
{
	int rc;

	if (gwu_setup(name, argc, argv))
		return 1;
	rc = check_run(tests, n, NULL);
	gwu_teardown();
	return rc;
}

/* main for a file-scope table of tests: gwu_main's, under the test's name. */
#define GWU_MAIN(name, tests)                                                                      \
	int main(int argc, char **argv)                                                            \
	{                                                                                          \
		return gwu_main(name, argc, argv, tests, CHECK_COUNT(tests));                      \
	}

static inline struct rte_mbuf *gwu_mbuf(void)
{
	return rte_pktmbuf_alloc(dgw_pool(U.gw));
}

/* mbufs free in the gateway's pool: what a queue dropped came back. */
static inline unsigned gwu_free_mbufs(void)
{
	return rte_mempool_avail_count(dgw_pool(U.gw));
}

/* Worker 0's drops counted for reason. */
static inline uint64_t gwu_drops(unsigned reason)
{
	struct dgw_stats st;

	dgw_stats_get(U.gw, 0, &st);
	return st.drop[reason];
}

/* An IPv4 endpoint 198.19.(i >> 8).(i & 255):port. */
static inline struct dust_endpoint gwu_ep(unsigned i, uint16_t port)
{
	struct dust_endpoint ep = {.port = port};

	ep.ip.family = 4;
	ep.ip.a[0] = 198;
	ep.ip.a[1] = 19;
	ep.ip.a[2] = (uint8_t)(i >> 8);
	ep.ip.a[3] = (uint8_t)i;
	return ep;
}

/* An intro of invitation idx (random profile) into dg; its length, or -1. */
static inline int gwu_intro(unsigned idx, uint8_t *dg, size_t cap)
{
	struct dust_session cs;
	uint64_t now_ms = (uint64_t)time(NULL) * 1000;
	int n = dust_intro_build(&U.inv[idx], &U.cli, &U.rng, &U.pad, now_ms, dg, cap, &cs);

	dust_session_wipe(&cs);
	return n;
}

#endif /* GW_UNIT_H */
