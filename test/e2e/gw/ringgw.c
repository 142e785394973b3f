/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers for the net_ring gateway tests (ringgw.h): frames, rings and
 * ports, counters.
 */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_lcore.h>

#include "frame.h"
#include "ringgw.h"

uint64_t rg_now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

size_t rg_frame(uint8_t *f, const uint8_t sip[4], const uint8_t dip[4], uint16_t sp, uint16_t dp,
                const uint8_t *pl, size_t plen)
{
	static const uint8_t mac[6] = {2, 2, 2, 2, 2, 2};
	size_t h = eth(f, mac, mac, 0x0800);

	/* no DF; UDP checksum 0: none, allowed in IPv4 */
	return h + ip_udp4_opt(f + h, sip, dip, sp, dp, pl, plen, 0, FRAME_NO_UDP_CSUM);
}

/* A frame copied into an mbuf of the driver's pool (the gateway frees what it read). */
static struct rte_mbuf *frame_mbuf(struct ringgw *h, const uint8_t *f, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(h->pool);

	/* a driver ahead of the gateway waits (5 s at most) */
	for (int i = 0; !m && i < 5000; i++) {
		rte_delay_us_sleep(1000);
		m = rte_pktmbuf_alloc(h->pool);
	}
	if (m)
		memcpy(rte_pktmbuf_append(m, (uint16_t)len), f, len);
	return m;
}

static int put_mbuf(struct rte_ring *r, struct rte_mbuf *m)
{
	if (!m)
		return -1;
	while (rte_ring_enqueue(r, m) != 0)
		rte_pause();
	return 0;
}

int rg_put(struct ringgw *h, struct rte_ring *r, const uint8_t *f, size_t len)
{
	return put_mbuf(r, frame_mbuf(h, f, len));
}

static int port_from_rings(struct ringgw *h, const char *name, struct rte_ring **rx,
                           struct rte_ring **tx)
{
	struct rte_eth_conf conf;
	uint16_t nq = (uint16_t)h->queues;
	int p = rte_eth_from_rings(name, rx, nq, tx, nq, (unsigned)rte_socket_id());

	memset(&conf, 0, sizeof(conf));
	if (p < 0 || rte_eth_dev_configure(p, nq, nq, &conf))
		return -1;
	for (uint16_t q = 0; q < nq; q++)
		if (rte_eth_rx_queue_setup(p, q, 1024, rte_socket_id(), NULL, dgw_pool(h->gw)) ||
		    rte_eth_tx_queue_setup(p, q, 1024, rte_socket_id(), NULL))
			return -1;
	return rte_eth_dev_start(p) ? -1 : p;
}

int rg_ports(struct ringgw *h, unsigned queues)
{
	const char *names[4] = {"t_nrx", "t_ntx", "t_drx", "t_dtx"};
	struct rte_ring **sets[4] = {h->nrx, h->ntx, h->drx, h->dtx};
	int net, dlv;

	h->queues = queues;
	for (unsigned s = 0; s < 4; s++)
		for (unsigned q = 0; q < queues; q++) {
			char n[32];

			snprintf(n, sizeof(n), "%s%u", names[s], q);
			sets[s][q] = rte_ring_create(n, 8192, rte_socket_id(), 0);
			if (!sets[s][q])
				return -1;
		}
	h->pool = rte_pktmbuf_pool_create("t_pool", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
	                                  (int)rte_socket_id());
	net = port_from_rings(h, "t_net", h->nrx, h->ntx);
	dlv = port_from_rings(h, "t_dlv", h->drx, h->dtx);
	if (!h->pool || net < 0 || dlv < 0)
		return -1;
	return dgw_ports_use(h->gw, (uint16_t)net, (uint16_t)dlv);
}

unsigned rg_driver_lcore(unsigned nth)
{
	unsigned lcore, count = 0;

	RTE_LCORE_FOREACH_WORKER(lcore)
	if (++count == nth)
		return lcore;
	return RTE_MAX_LCORE;
}

bool rg_worker_done(struct ringgw *h, unsigned w)
{
	struct dgw_depths d;

	rte_delay_us_sleep(2000);
	for (int i = 0; i < 20000; i++) {
		dgw_worker_depths(h->gw, w, &d);
		if (!d.busy && !d.pending && !d.pubwait && !d.slow)
			return true;
		rte_delay_us_sleep(500);
	}
	return false;
}

uint64_t rg_ctr(struct ringgw *h, unsigned w, unsigned c)
{
	struct dgw_stats s;

	dgw_stats_get(h->gw, w, &s);
	return s.ctr[c];
}

uint64_t rg_drop(struct ringgw *h, unsigned w, unsigned d)
{
	struct dgw_stats s;

	dgw_stats_get(h->gw, w, &s);
	return s.drop[d];
}

struct rte_mbuf *rg_dg_mbuf(struct ringgw *h, const struct dust_endpoint *from, uint16_t port,
                            const uint8_t *dg, size_t len)
{
	static const uint8_t gw_ip[4] = {10, 0, 0, 1};
	uint8_t f[2048];

	if (len > sizeof(f) - 42)
		return NULL;
	return frame_mbuf(h, f, rg_frame(f, from->ip.a, gw_ip, from->port, port, dg, len));
}

int rg_send(struct ringgw *h, unsigned q, const struct dust_endpoint *from, uint16_t port,
            const uint8_t *dg, size_t len)
{
	return put_mbuf(h->nrx[q], rg_dg_mbuf(h, from, port, dg, len));
}

struct dust_store *rg_store_new(const char *dir, struct dgw_config *cfg, struct dust_identity *srv)
{
	snprintf(cfg->key_file, sizeof(cfg->key_file), "%s/server.key", dir);
	snprintf(cfg->store_path, sizeof(cfg->store_path), "%s/inv.store", dir);
	remove(cfg->store_path);
	if (dust_identity_generate(srv) || dust_identity_save(srv, cfg->key_file))
		return NULL;
	return dust_store_open(cfg->store_path, DUST_STORE_CREATE, srv);
}

int rg_client_new(const struct dust_identity *srv, unsigned i, uint16_t port,
                  struct dust_invite *inv, struct dust_identity *id, struct dust_endpoint *ep)
{
	struct dust_ipaddr addr, tun;

	dust_ipaddr_parse(&addr, "10.0.0.1");
	dust_ipaddr_parse(&tun, "10.9.0.0");
	tun.a[3] = (uint8_t)(i + 2);
	if (dust_invite_new(inv, srv, &addr, port, &tun, 16, time(NULL) + 3600) ||
	    dust_identity_generate(id))
		return -1;
	ep->ip.family = 4;
	memcpy(ep->ip.a, (uint8_t[]){198, 18, 0, (uint8_t)i}, 4);
	ep->port = (uint16_t)(20000 + i);
	return 0;
}

int rg_main(struct ringgw *h, const struct rg_test *t, int argc, char **argv)
{
	struct dgw_config cfg;
	int n = rte_eal_init(argc, argv);
	unsigned drv = rg_driver_lcore(t->driver_nth);

	if (n < 0 || argc - n < 2 || dust_init() != 0) {
		fprintf(stderr, "usage: %s EAL-ARGS (%u lcores) -- %s\n", t->name,
		        t->driver_nth + 1, t->usage);
		return 1;
	}
	if (drv == RTE_MAX_LCORE) {
		fprintf(stderr, "%s: needs %u worker lcores\n", t->name, t->driver_nth);
		return 1;
	}
	dgw_config_defaults(&cfg);
	dust_ipaddr_parse(&cfg.ip4, "10.0.0.1");
	cfg.queues = t->queues;
	if (t->setup(&cfg, argv + n + 1, argc - n - 1) || !(h->gw = dgw_create(&cfg)) ||
	    rg_ports(h, t->queues)) {
		fprintf(stderr, "%s: setup failed\n", t->name);
		return 1;
	}
	rte_eal_remote_launch(t->driver, NULL, drv);
	dgw_run(h->gw);
	dgw_stats_print(h->gw, stdout);
	return 0;
}

void rg_drain(struct ringgw *h, void (*reply)(struct rte_mbuf *m))
{
	struct rte_mbuf *m[8];
	unsigned got;

	do {
		got = 0;
		for (unsigned q = 0; q < h->queues; q++) {
			unsigned n = rte_ring_dequeue_burst(h->ntx[q], (void **)m, 8, NULL);

			for (unsigned i = 0; i < n; i++) {
				reply(m[i]);
				rte_pktmbuf_free(m[i]);
			}
			got += n;
			n = rte_ring_dequeue_burst(h->dtx[q], (void **)m, 8, NULL);
			rte_pktmbuf_free_bulk(m, n);
			got += n;
		}
	} while (got);
}
