/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-live: the session table and the store while the gateway runs, through
 * the real loop (dustgw_core, one worker) on net_ring ports, with a driver
 * lcore that controls time. Eviction: in a full table an authenticated
 * intro evicts the idlest session (idle evict_idle_s or more); a flood of
 * datagrams that do not authenticate evicts nothing; with no session idle
 * long enough the intro is refused.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_lcore.h>

#include "ringgw.h"

enum { CAP = 4, NCL = 6, EVICT_IDLE_S = 2 };

struct cl {
	struct dust_invite inv;
	struct dust_identity id;
	struct dust_session cur;
	struct dust_endpoint a;
	uint8_t intro[1024]; /* the last intro sent, for replays */
	int intro_len;
	uint32_t idx; /* store index */
};

static struct ringgw H;

static struct {
	struct dust_rng rng;
	struct dust_pad pad;
	struct cl c[NCL];
	uint64_t sent; /* frames put on the net RX ring */
	const char *why;
} T;

#define CHECK(cond, msg)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			T.why = msg;                                                               \
			printf("check failed at line %d: %s\n", __LINE__, #cond);                  \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

static const uint8_t gw_ip[4] = {10, 0, 0, 1};

static int send_dg(const struct dust_endpoint *from, const uint8_t *dg, size_t len)
{
	uint8_t f[1200];

	T.sent++;
	return rg_put(&H, H.nrx[0], f, rg_frame(f, from->ip.a, gw_ip, from->port, 4433, dg, len));
}

static int send_intro_at(struct cl *c, uint64_t ts_ms)
{
	c->intro_len = dust_intro_build(&c->inv, &c->id, &T.rng, &T.pad, ts_ms, c->intro,
	                                sizeof(c->intro), &c->cur);
	if (c->intro_len < 0)
		return -1;
	return send_dg(&c->a, c->intro, (size_t)c->intro_len);
}

static int send_intro(struct cl *c)
{
	return send_intro_at(c, rg_now_ms());
}

/* A keepalive from the client: refreshes its session's idle clock. */
static int send_ka(struct cl *c)
{
	uint8_t pkt[256];
	int n = dust_data_seal(&c->cur, &T.rng, &T.pad, (uint32_t)time(NULL), pkt, 0, sizeof(pkt));

	return n < 0 ? -1 : send_dg(&c->a, pkt, (size_t)n);
}

static void drain(void)
{
	struct rte_mbuf *m[32];
	unsigned n;

	while ((n = rte_ring_dequeue_burst(H.ntx[0], (void **)m, 32, NULL)) != 0)
		rte_pktmbuf_free_bulk(m, n);
	while ((n = rte_ring_dequeue_burst(H.dtx[0], (void **)m, 32, NULL)) != 0)
		rte_pktmbuf_free_bulk(m, n);
}

/* The worker is between bursts (a burst of first-use intros waits for fsync). */
static bool worker_idle(void)
{
	return atomic_load(&H.gw->w[0]->last_net_rx_tsc) != DGW_BUSY;
}

/* Until the worker has read every frame sent and handled its last burst. */
static bool settled(void)
{
	for (int i = 0; i < 4000; i++) {
		drain();
		if (rg_ctr(&H, 0, DGW_CTR_NET_RX) == T.sent && rte_ring_count(H.nrx[0]) == 0) {
			rte_delay_us_sleep(20000);
			for (int j = 0; j < 10000 && !worker_idle(); j++)
				rte_delay_us_sleep(1000);
			drain();
			return worker_idle();
		}
		rte_delay_us_sleep(500);
	}
	return false;
}

static struct dust_session *published(const struct cl *c)
{
	return atomic_load(&H.gw->pub[c->idx].s);
}

static uint64_t sessions(void)
{
	struct dgw_stats s;

	dgw_stats_get(H.gw, 0, &s);
	return s.sessions;
}

/* Clients 1..CAP-1 keep talking for ms milliseconds; client 0 stays silent. */
static int talk(unsigned ms)
{
	for (unsigned t = 0; t < ms; t += 100) {
		for (unsigned i = 1; i < CAP; i++)
			if (send_ka(&T.c[i]))
				return -1;
		rte_delay_us_sleep(100000);
		drain();
	}
	return 0;
}

/* Datagrams that never authenticate, each from an address with no session. */
static int flood(void)
{
	struct dust_endpoint ep = {.ip = {.family = 4, .a = {198, 51, 100, 0}}};
	struct cl *c4 = &T.c[4];
	uint8_t junk[600];

	for (unsigned i = 0; i < 200; i++) {
		ep.ip.a[3] = (uint8_t)i;
		ep.port = (uint16_t)(5000 + i);
		dust_rng_bytes(&T.rng, junk, sizeof(junk));
		if (send_dg(&ep, junk, 148 + i))
			return -1;
		/* client 0's own intro, replayed from elsewhere: a duplicate */
		if (i % 20 == 0 && send_dg(&ep, T.c[0].intro, (size_t)T.c[0].intro_len))
			return -1;
	}
	/* client 4's intro with its confirmation MAC broken: fails after the X25519 */
	c4->intro_len = dust_intro_build(&c4->inv, &c4->id, &T.rng, &T.pad, rg_now_ms(), c4->intro,
	                                 sizeof(c4->intro), &c4->cur);
	if (c4->intro_len < 0)
		return -1;
	c4->intro[c4->intro_len - 1] ^= 1;
	if (send_dg(&c4->a, c4->intro, (size_t)c4->intro_len))
		return -1;
	/* client 5's intro from two minutes ago: stale */
	return send_intro_at(&T.c[5], rg_now_ms() - 120000);
}

static bool moved_to_4(void)
{
	for (int i = 0; i < 2000 && (published(&T.c[0]) || !published(&T.c[4])); i++)
		rte_delay_us_sleep(500);
	return !published(&T.c[0]) && published(&T.c[4]);
}

static int phases(void)
{
	struct dust_store *st = H.gw->srv.store;
	uint64_t ok0;

	for (unsigned i = 0; i < CAP; i++)
		CHECK(send_intro(&T.c[i]) == 0, "intro build");
	CHECK(settled() && rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == CAP, "first clients not up");
	CHECK(talk(1000 * EVICT_IDLE_S + 1200) == 0, "keepalive seal");
	CHECK(settled(), "keepalives not read");
	CHECK(sessions() == CAP && published(&T.c[0]), "client 0 gone before any eviction");

	printf("gw-live: full table, client 0 idle: a flood that does not authenticate\n");
	ok0 = rg_ctr(&H, 0, DGW_CTR_INTRO_OK);
	CHECK(flood() == 0, "flood");
	CHECK(settled(), "flood not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_SESS_EVICTED_IDLE) == 0, "a datagram that failed evicted");
	CHECK(rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == ok0, "a bad intro was accepted");
	CHECK(sessions() == CAP && published(&T.c[0]), "client 0 lost to a flood");
	CHECK(rg_drop(&H, 0, DUST_DROP_INTRO_UNKNOWN) >= 200, "junk not counted as intro_unknown");
	CHECK(rg_drop(&H, 0, DUST_DROP_INTRO_DUP) == 10, "replays not counted as intro_dup");
	CHECK(rg_drop(&H, 0, DUST_DROP_INTRO_AUTH) == 1, "broken intro not counted");
	CHECK(rg_drop(&H, 0, DUST_DROP_INTRO_STALE) == 1, "stale intro not counted");

	printf("gw-live: client 4's intact intro evicts client 0, the idlest\n");
	CHECK(send_intro(&T.c[4]) == 0, "intro build");
	CHECK(settled(), "intro not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == ok0 + 1, "client 4 refused");
	CHECK(rg_ctr(&H, 0, DGW_CTR_SESS_EVICTED_IDLE) == 1, "no eviction counted");
	CHECK(sessions() == CAP, "table not full after the eviction");
	CHECK(moved_to_4(), "client 0 still published, or client 4 not");
	for (unsigned i = 1; i < CAP; i++)
		CHECK(published(&T.c[i]), "a talking client was evicted");

	printf("gw-live: nobody idle %u s: client 5 is refused, its invitation untouched\n",
	       EVICT_IDLE_S);
	CHECK(send_intro(&T.c[5]) == 0, "intro build");
	CHECK(settled(), "intro not read");
	CHECK(rg_drop(&H, 0, DGW_DROP_TABLE_FULL) == 1, "client 5 not refused as table_full");
	CHECK(rg_ctr(&H, 0, DGW_CTR_SESS_EVICTED_IDLE) == 1, "an active session was evicted");
	CHECK(!dust_store_at(st, T.c[5].idx)->bound, "a refused intro bound its invitation");
	return 0;
}

static int driver(void *arg)
{
	(void)arg;
	if (phases() != 0)
		printf("FAIL: %s\n", T.why);
	dgw_stop(H.gw);
	return 0;
}

static int make_store(const char *dir, struct dgw_config *cfg)
{
	struct dust_identity srv;
	struct dust_ipaddr addr, tun;
	struct dust_store *st;

	snprintf(cfg->key_file, sizeof(cfg->key_file), "%s/server.key", dir);
	snprintf(cfg->store_path, sizeof(cfg->store_path), "%s/inv.store", dir);
	remove(cfg->store_path);
	if (dust_identity_generate(&srv) || dust_identity_save(&srv, cfg->key_file))
		return -1;
	st = dust_store_open(cfg->store_path, DUST_STORE_CREATE);
	if (!st)
		return -1;
	dust_ipaddr_parse(&addr, "10.0.0.1");
	for (unsigned i = 0; i < NCL; i++) {
		struct cl *c = &T.c[i];

		dust_ipaddr_parse(&tun, "10.9.0.0");
		tun.a[3] = (uint8_t)(i + 2);
		if (dust_invite_new(&c->inv, &srv, &addr, 4433, &tun, 16, time(NULL) + 3600) ||
		    dust_store_add(st, &c->inv) || dust_identity_generate(&c->id))
			return -1;
		c->idx = i;
		c->a.ip.family = 4;
		memcpy(c->a.ip.a, (uint8_t[]){198, 18, 0, (uint8_t)i}, 4);
		c->a.port = (uint16_t)(20000 + i);
	}
	if (dust_store_save(st))
		return -1;
	dust_store_close(st);
	return 0;
}

int main(int argc, char **argv)
{
	struct dgw_config cfg;
	int n = rte_eal_init(argc, argv);
	unsigned drv = rg_driver_lcore(2);

	if (n < 0 || argc - n < 2 || dust_init() != 0) {
		fprintf(stderr, "usage: gw-live EAL-ARGS (3 lcores) -- WORKDIR\n");
		return 1;
	}
	if (drv == RTE_MAX_LCORE) {
		fprintf(stderr, "gw-live: needs 2 worker lcores\n");
		return 1;
	}
	dgw_config_defaults(&cfg);
	dust_ipaddr_parse(&cfg.ip4, "10.0.0.1");
	cfg.queues = 1;
	cfg.sessions_per_lcore = CAP;
	cfg.evict_idle_s = EVICT_IDLE_S;
	dust_rng_init(&T.rng);
	dust_pad_default(&T.pad);
	if (make_store(argv[n + 1], &cfg) || !(H.gw = dgw_create(&cfg)) || rg_ports(&H, 1)) {
		fprintf(stderr, "gw-live: setup failed\n");
		return 1;
	}
	rte_eal_remote_launch(driver, NULL, drv);
	dgw_run(H.gw);
	dgw_stats_print(H.gw, stdout);
	dgw_destroy(H.gw);
	if (T.why)
		return 1;
	printf("PASS gw-live\n");
	return 0;
}
