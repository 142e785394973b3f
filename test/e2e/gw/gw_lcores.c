/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-lcores: the cross-lcore session protocol of sessmap.c under load,
 * through the real loop (dustgw_core, two workers) on net_ring ports, with
 * a driver lcore that controls the timing no capture can: clients come up
 * on worker 0, then roam to worker 1 while cleartext for them streams in on
 * both delivery queues. Every reply must open with the session it claims
 * (old keys to the old address, new keys to the new one); the old sessions
 * must be evicted, and their slots released after the RCU grace period, so
 * worker 0 (capacity K) can admit K new clients afterwards.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_lcore.h>

#include "dgw_pvt.h"

enum { K = 16, STREAM = 4000 };

struct cl {
	struct dust_invite inv;
	struct dust_identity id;
	struct dust_session old, cur;
	struct dust_endpoint a, b; /* address before and after the roam */
	bool roamed;
	uint64_t got_old, got_new;
};

static struct {
	struct dgw *gw;
	struct rte_ring *nrx[2], *ntx[2], *drx[2], *dtx[2];
	struct rte_mempool *pool;
	struct dust_rng rng;
	struct dust_pad pad;
	struct cl c[2 * K];
	uint64_t bad_reply, keepalives, data;
	int fail;
	const char *why;
} T;

#define CHECK(cond, msg)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			T.fail = 1;                                                                \
			T.why = msg;                                                               \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

static uint64_t now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

static uint16_t csum(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Ethernet + IPv4 + UDP around pl; returns the frame length. */
static size_t frame(uint8_t *f, const uint8_t sip[4], const uint8_t dip[4], uint16_t sp,
                    uint16_t dp, const uint8_t *pl, size_t plen)
{
	uint8_t *ip = f + 14, *u = ip + 20;
	uint16_t c;

	memset(f, 0, 42);
	memset(f, 0x02, 12);
	f[12] = 0x08;
	ip[0] = 0x45;
	ip[2] = (uint8_t)((28 + plen) >> 8);
	ip[3] = (uint8_t)(28 + plen);
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, sip, 4);
	memcpy(ip + 16, dip, 4);
	c = csum(ip, 20, 0);
	ip[10] = c >> 8;
	ip[11] = c & 0xff;
	u[0] = sp >> 8, u[1] = sp & 0xff, u[2] = dp >> 8, u[3] = dp & 0xff;
	u[4] = (uint8_t)((8 + plen) >> 8), u[5] = (uint8_t)(8 + plen);
	memmove(u + 8, pl, plen);
	return 42 + plen; /* UDP checksum 0: none, allowed in IPv4 */
}

static int put(struct rte_ring *r, const uint8_t *f, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(T.pool);

	if (!m)
		return -1;
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), f, len);
	while (rte_ring_enqueue(r, m) != 0)
		rte_pause();
	return 0;
}

static int send_intro(struct cl *c, const struct dust_endpoint *from, unsigned q)
{
	static const uint8_t gw_ip[4] = {10, 0, 0, 1};
	uint8_t dg[1024], f[1100];
	int n =
	    dust_intro_build(&c->inv, &c->id, &T.rng, &T.pad, now_ms(), dg, sizeof(dg), &c->cur);

	if (n < 0)
		return -1;
	return put(T.nrx[q], f, frame(f, from->ip.a, gw_ip, from->port, 4433, dg, (size_t)n));
}

static void send_clear(struct cl *c, unsigned q, uint32_t seq)
{
	static const uint8_t far[4] = {10, 200, 0, 1};
	uint8_t f[128], pl[36];

	/* Ethernet + the inner IPv4/UDP packet toward the client's tunnel address */
	memset(pl, 0, sizeof(pl));
	memcpy(pl, &seq, 4);
	put(T.drx[q], f, frame(f, far, c->inv.tunnel.a, 9, 9, pl, sizeof(pl)));
}

static struct cl *client_at(const uint8_t *ip, uint16_t port, bool *new_addr)
{
	for (unsigned i = 0; i < 2 * K; i++) {
		struct cl *c = &T.c[i];

		if (!memcmp(c->a.ip.a, ip, 4) && c->a.port == port) {
			*new_addr = false;
			return c;
		}
		if (c->roamed && !memcmp(c->b.ip.a, ip, 4) && c->b.port == port) {
			*new_addr = true;
			return c;
		}
	}
	return NULL;
}

/* A reply must open with the session of the address it went to. */
static void reply(struct rte_mbuf *m)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *), buf[2048];
	struct dust_seg segs[DUST_CHAIN_MAX];
	struct dust_limits lim;
	enum dust_drop d;
	bool new_addr;
	struct cl *c;
	unsigned n;
	size_t len = m->data_len;

	if (len < 42 || f[23] != 17 || len - 42 > sizeof(buf)) {
		T.bad_reply++;
		return;
	}
	c = client_at(f + 30, (uint16_t)(f[36] << 8 | f[37]), &new_addr);
	if (!c) {
		T.bad_reply++;
		return;
	}
	memcpy(buf, f + 42, len - 42);
	dust_limits_default(&lim);
	n = dust_datagram_open(new_addr ? &c->cur : &c->old, &lim, (uint32_t)time(NULL), buf,
	                       len - 42, 0, segs, DUST_CHAIN_MAX, &d);
	if (d != DUST_OK || !n) {
		T.bad_reply++;
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		if (!segs[i].len) {
			T.keepalives++;
			continue;
		}
		T.data++;
		*(new_addr ? &c->got_new : &c->got_old) += 1;
	}
}

/*
 * Read every reply so far, a few from each worker's ring in turn: the two
 * lcores seal from one counter, and the client's replay window (192) only
 * absorbs the reordering of small batches.
 */
static void drain(void)
{
	struct rte_mbuf *m[8];
	unsigned got;

	do {
		got = 0;
		for (unsigned q = 0; q < 2; q++) {
			unsigned n = rte_ring_dequeue_burst(T.ntx[q], (void **)m, 8, NULL);

			for (unsigned i = 0; i < n; i++) {
				reply(m[i]);
				rte_pktmbuf_free(m[i]);
			}
			got += n;
			n = rte_ring_dequeue_burst(T.dtx[q], (void **)m, 8, NULL);
			rte_pktmbuf_free_bulk(m, n);
			got += n;
		}
	} while (got);
}

typedef bool (*cond_fn)(void);

static bool wait_for(cond_fn ok)
{
	for (int i = 0; i < 20000; i++) {
		drain();
		if (ok())
			return true;
		rte_delay_us_sleep(500);
	}
	return false;
}

static uint64_t ctr(unsigned w, unsigned c)
{
	struct dgw_stats s;

	dgw_stats_get(T.gw, w, &s);
	return s.ctr[c];
}

static bool up_on_0(void)
{
	return ctr(0, DGW_CTR_INTRO_OK) == K && T.keepalives == K && T.gw->published == K;
}

static bool evicted(void)
{
	return ctr(0, DGW_CTR_SESS_EVICTED) == K && ctr(1, DGW_CTR_INTRO_OK) == K;
}

static bool second_wave(void)
{
	struct dgw_stats s;

	dgw_stats_get(T.gw, 0, &s);
	return s.ctr[DGW_CTR_INTRO_OK] + s.drop[DGW_DROP_TABLE_FULL] == 2 * K && s.sessions == K;
}

static int phases(void)
{
	struct dgw_stats s;
	uint32_t seq = 0;

	/* c->old: the session of the first address (replies there open with it). */
	for (unsigned i = 0; i < K; i++) {
		CHECK(send_intro(&T.c[i], &T.c[i].a, 0) == 0, "intro build");
		T.c[i].old = T.c[i].cur;
	}
	CHECK(wait_for(up_on_0), "clients did not come up on worker 0");
	/* Stream on both delivery queues while every client roams to worker 1. */
	for (unsigned r = 0; r < STREAM; r++, seq++) {
		struct cl *c = &T.c[r % K];

		send_clear(c, r & 1, seq);
		if (r % (STREAM / K) == STREAM / K / 2 && !c->roamed) {
			CHECK(send_intro(c, &c->b, 1) == 0, "roam intro");
			c->roamed = true;
		}
		if (r % 16 == 0)
			drain();
	}
	for (unsigned i = 0; i < K; i++)
		if (!T.c[i].roamed) {
			CHECK(send_intro(&T.c[i], &T.c[i].b, 1) == 0, "roam intro");
			T.c[i].roamed = true;
		}
	CHECK(wait_for(evicted), "old sessions not evicted from worker 0");
	/* Once moved, everything goes to the new address under the new keys. */
	rte_delay_us_sleep(20000);
	drain();
	for (unsigned i = 0; i < K; i++)
		T.c[i].got_new = T.c[i].got_old = 0;
	for (unsigned r = 0; r < 4 * K; r++)
		send_clear(&T.c[r % K], r & 1, seq++);
	rte_delay_us_sleep(50000);
	drain();
	rte_delay_us_sleep(50000);
	drain();
	for (unsigned i = 0; i < K; i++) {
		if (T.c[i].got_new != 4 || T.c[i].got_old)
			printf("client %u: %" PRIu64 " replies at the new address, %" PRIu64
			       " at the old\n",
			       i, T.c[i].got_new, T.c[i].got_old);
		CHECK(T.c[i].got_new == 4 && !T.c[i].got_old,
		      "after the roam, replies must use the new session");
	}
	/* Worker 0 is at capacity K unless the evicted slots were released. */
	for (unsigned i = K; i < 2 * K; i++) {
		CHECK(send_intro(&T.c[i], &T.c[i].a, 0) == 0, "intro build");
		T.c[i].old = T.c[i].cur;
	}
	CHECK(wait_for(second_wave), "second wave not processed on worker 0");
	dgw_stats_get(T.gw, 0, &s);
	CHECK(s.drop[DGW_DROP_TABLE_FULL] == 0, "evicted slots were never released");
	CHECK(T.bad_reply == 0, "a reply did not open with its address's session");
	return 0;
}

static int driver(void *arg)
{
	(void)arg;
	phases();
	dgw_stop(T.gw);
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
	for (unsigned i = 0; i < 2 * K; i++) {
		struct cl *c = &T.c[i];

		dust_ipaddr_parse(&tun, "10.9.0.0");
		tun.a[3] = (uint8_t)(i + 2);
		if (dust_invite_new(&c->inv, &srv, &addr, 4433, &tun, 16, time(NULL) + 3600) ||
		    dust_store_add(st, &c->inv) || dust_identity_generate(&c->id))
			return -1;
		c->a.ip.family = c->b.ip.family = 4;
		memcpy(c->a.ip.a, (uint8_t[]){198, 18, 0, (uint8_t)i}, 4);
		memcpy(c->b.ip.a, (uint8_t[]){198, 19, 0, (uint8_t)i}, 4);
		c->a.port = (uint16_t)(20000 + i);
		c->b.port = (uint16_t)(30000 + i);
	}
	if (dust_store_save(st))
		return -1;
	dust_store_close(st);
	return 0;
}

static int port_from_rings(const char *name, struct rte_ring **rx, struct rte_ring **tx)
{
	struct rte_eth_conf conf;
	int p = rte_eth_from_rings(name, rx, 2, tx, 2, (unsigned)rte_socket_id());

	memset(&conf, 0, sizeof(conf));
	if (p < 0 || rte_eth_dev_configure(p, 2, 2, &conf))
		return -1;
	for (uint16_t q = 0; q < 2; q++)
		if (rte_eth_rx_queue_setup(p, q, 1024, rte_socket_id(), NULL, dgw_pool(T.gw)) ||
		    rte_eth_tx_queue_setup(p, q, 1024, rte_socket_id(), NULL))
			return -1;
	return rte_eth_dev_start(p) ? -1 : p;
}

static int rings(void)
{
	const char *names[4] = {"t_nrx", "t_ntx", "t_drx", "t_dtx"};
	struct rte_ring **sets[4] = {T.nrx, T.ntx, T.drx, T.dtx};

	for (unsigned s = 0; s < 4; s++)
		for (unsigned q = 0; q < 2; q++) {
			char n[32];

			snprintf(n, sizeof(n), "%s%u", names[s], q);
			sets[s][q] = rte_ring_create(n, 8192, rte_socket_id(), 0);
			if (!sets[s][q])
				return -1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	struct dgw_config cfg;
	int n = rte_eal_init(argc, argv), net, dlv;
	unsigned lcore, count = 0, drv = RTE_MAX_LCORE;

	if (n < 0 || argc - n < 2 || dust_init() != 0) {
		fprintf(stderr, "usage: gw-lcores EAL-ARGS (4 lcores) -- WORKDIR\n");
		return 1;
	}
	RTE_LCORE_FOREACH_WORKER(lcore)
	if (++count == 3)
		drv = lcore;
	if (drv == RTE_MAX_LCORE) {
		fprintf(stderr, "gw-lcores: needs 3 worker lcores\n");
		return 1;
	}
	dgw_config_defaults(&cfg);
	dust_ipaddr_parse(&cfg.ip4, "10.0.0.1");
	cfg.queues = 2;
	cfg.sessions_per_lcore = K;
	dust_rng_init(&T.rng);
	dust_pad_default(&T.pad);
	if (make_store(argv[n + 1], &cfg) || !(T.gw = dgw_create(&cfg)) || rings()) {
		fprintf(stderr, "gw-lcores: setup failed\n");
		return 1;
	}
	T.pool = rte_pktmbuf_pool_create("t_pool", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
	                                 (int)rte_socket_id());
	net = port_from_rings("t_net", T.nrx, T.ntx);
	dlv = port_from_rings("t_dlv", T.drx, T.dtx);
	if (!T.pool || net < 0 || dlv < 0 || dgw_ports_use(T.gw, (uint16_t)net, (uint16_t)dlv)) {
		fprintf(stderr, "gw-lcores: ports failed\n");
		return 1;
	}
	rte_eal_remote_launch(driver, NULL, drv);
	dgw_run(T.gw);
	dgw_stats_print(T.gw, stdout);
	printf("gw-lcores: %" PRIu64 " replies opened (%" PRIu64 " data, %" PRIu64
	       " keepalives), %" PRIu64 " did not\n",
	       T.data + T.keepalives, T.data, T.keepalives, T.bad_reply);
	dgw_destroy(T.gw);
	if (T.fail)
		printf("FAIL: %s\n", T.why);
	else
		printf("PASS gw-lcores\n");
	return T.fail;
}
