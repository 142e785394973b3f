/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-gen's clients: one per invitation of a store (store-only test
 * invitations, as dust-pcap uses), each with a long-term key derived from
 * its invitation so that a rerun is the same client the gateway bound.
 * Real intros, answered by the gateway's keepalive before traffic starts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include <sodium.h>

#include "dust-gen.h"
#include "frame.h"

/* The same invitation gives the same client key on every run (it is bound at first use). */
static void client_key(struct dg_client *c)
{
	static const char ctx[] = "dust-gen client key v1";

	crypto_generichash(c->id.sk, sizeof(c->id.sk), c->inv.secret, sizeof(c->inv.secret),
	                   (const uint8_t *)ctx, sizeof(ctx) - 1);
	crypto_scalarmult_base(c->id.pk, c->id.sk);
}

int dg_clients_load(struct dg *g)
{
	struct dust_store *st = dust_store_open(g->o.store, DUST_STORE_READONLY);
	size_t avail;

	if (!st) {
		fprintf(stderr, "dust-gen: store %s: %s\n", g->o.store, dust_last_error());
		return -EINVAL;
	}
	avail = dust_store_count(st);
	g->n = g->o.clients ? g->o.clients : (unsigned)avail;
	if (g->n == 0 || g->n > avail || g->n > 65536) {
		fprintf(stderr,
		        "dust-gen: %u clients wanted, the store has %zu invitations (max 65536)\n",
		        g->n, avail);
		dust_store_close(st);
		return -EINVAL;
	}
	g->c = calloc(g->n, sizeof(*g->c));
	if (!g->c) {
		dust_store_close(st);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < g->n; i++) {
		struct dg_client *c = &g->c[i];

		c->inv = dust_store_at(st, i)->inv;
		client_key(c);
		c->ep.ip.family = 4;
		memcpy(c->ep.ip.a, (uint8_t[]){198, 18, (uint8_t)(i >> 8), (uint8_t)i}, 4);
		c->ep.port = (uint16_t)(20000 + i % 40000);
	}
	dust_store_close(st);
	g->gw_ip = g->c[0].inv.server;
	g->gw_port = g->c[0].inv.port;
	if (g->gw_ip.family != 4) {
		fprintf(stderr,
		        "dust-gen: the invitations name an IPv6 gateway: IPv4 only so far\n");
		return -ENOTSUP;
	}
	return 0;
}

/* Ethernet + IPv4 + UDP around the Dust datagram at dg_bytes (which may sit at f + 42). */
uint16_t dg_frame(struct dg *g, struct dg_client *c, uint8_t *f, const uint8_t *dg_bytes,
                  size_t len)
{
	size_t h = eth(f, g->gw_mac, g->mac, 0x0800);

	return (uint16_t)(h + ip_udp4(f + h, c->ep.ip.a, g->gw_ip.a, c->ep.port, g->gw_port,
	                              dg_bytes, len));
}

static int send_intro(struct dg *g, struct dg_client *c)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(g->pool);
	struct timespec ts;
	uint8_t *f;
	int n;

	if (!m)
		return -ENOMEM;
	f = rte_pktmbuf_mtod(m, uint8_t *);
	clock_gettime(CLOCK_REALTIME, &ts);
	n = dust_intro_build(&c->inv, &c->id, &g->rng, &g->pad,
	                     (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000, f + 42,
	                     600, &c->s);
	if (n < 0) {
		rte_pktmbuf_free(m);
		return n;
	}
	m->data_len = m->pkt_len = dg_frame(g, c, f, f + 42, (size_t)n);
	if (rte_eth_tx_burst(g->net, 0, &m, 1) != 1) {
		rte_pktmbuf_free(m);
		return -EAGAIN;
	}
	return 0;
}

/* Client index of a frame sent to one of our outer addresses, -1 if none. */
static long client_of(const struct dg *g, const uint8_t *f, size_t len, const uint8_t **pl,
                      size_t *plen)
{
	size_t ihl;
	const uint8_t *u;
	unsigned i;

	if (len < 42 || f[12] != 0x08 || f[13] != 0x00 || f[23] != 17)
		return -1;
	ihl = (size_t)(f[14] & 0xf) * 4;
	u = f + 14 + ihl;
	if (14 + ihl + 8 > len || f[30] != 198 || f[31] != 18)
		return -1;
	i = (unsigned)f[32] << 8 | f[33];
	if (i >= g->n || (uint16_t)(u[2] << 8 | u[3]) != g->c[i].ep.port)
		return -1;
	*pl = u + 8;
	*plen = (size_t)(u[4] << 8 | u[5]);
	if (*plen < 8 || (size_t)(u - f) + *plen > len)
		return -1;
	*plen -= 8;
	return i;
}

/* Replies on the net port: keepalives that confirm a client's session. */
void dg_net_poll(struct dg *g, struct dg_count *k)
{
	struct rte_mbuf *pkts[DG_BURST];
	uint16_t n = rte_eth_rx_burst(g->net, 0, pkts, DG_BURST);

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
		const uint8_t *pl;
		size_t plen;
		struct dust_seg segs[4];
		struct dust_limits lim;
		enum dust_drop d;
		long w =
		    rte_pktmbuf_is_contiguous(m) ? client_of(g, f, m->data_len, &pl, &plen) : -1;

		dust_limits_default(&lim);
		if (w >= 0 &&
		    dust_datagram_open(&g->c[w].s, &lim, g->now_s, (uint8_t *)pl, plen, 0, segs, 4,
		                       &d) > 0 &&
		    d == DUST_OK) {
			g->c[w].up = true;
			k->ka++;
		} else {
			k->foreign++;
		}
	}
	rte_pktmbuf_free_bulk(pkts, n);
}

/* Introduce every client; up to 3 rounds for those whose keepalive did not come back. */
int dg_clients_intro(struct dg *g)
{
	struct dg_count k = {0};
	unsigned up = 0;

	for (int round = 0; round < 3 && up < g->n; round++) {
		uint64_t end;

		g->now_s = (uint32_t)time(NULL);
		for (unsigned i = 0; i < g->n; i++) {
			int rc;

			if (g->c[i].up)
				continue;
			while ((rc = send_intro(g, &g->c[i])) == -EAGAIN)
				dg_net_poll(g, &k);
			if (rc)
				return rc;
			if (i % 16 == 15)
				dg_net_poll(g, &k);
		}
		end = rte_rdtsc() + (g->o.no_confirm ? 0 : g->hz);
		while (rte_rdtsc() < end && k.ka < g->n)
			dg_net_poll(g, &k);
		up = 0;
		for (unsigned i = 0; i < g->n; i++)
			up += g->c[i].up;
		if (g->o.no_confirm) {
			printf("dust-gen: %u intros sent, not confirmed (--no-confirm)\n", g->n);
			return 0;
		}
	}
	printf("dust-gen: %u of %u clients introduced (keepalive received)\n", up, g->n);
	if (up < g->n) {
		fprintf(stderr,
		        "dust-gen: %u clients got no keepalive: is dustgw running on the other "
		        "end, with the same store?\n",
		        g->n - up);
		return -ETIMEDOUT;
	}
	return 0;
}
