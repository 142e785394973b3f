/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-gen's clients: one per invitation of a store (store-only test
 * invitations, as dust-pcap uses) or of sealed texts (texts.c), each with a long-term key derived
 * from its invitation so that a rerun is the same client the gateway bound. Real intros, answered
 * by the gateway's keepalive before traffic starts.
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

/* Invitations from the store or from sealed texts; a key and an outer address each. */
int dg_clients_load(struct dg *g)
{
	int rc = g->o.invites ? dg_texts_load(g) : dg_store_load(g);

	if (rc)
		return rc;
	for (unsigned i = 0; i < g->n; i++) {
		struct dg_client *c = &g->c[i];

		/*
		 * dust-gen speaks the random profile only: it would send a quic
		 * invitation's port random-profile intros, and sizes from --size
		 * with no regard to the quic bounds (SPEC §12.4).
		 */
		if (c->inv.profile != DUST_PROFILE_RANDOM) {
			fprintf(stderr,
			        "dust-gen: invitation %u is a quic-profile one: dust-gen sends the "
			        "random profile only\n",
			        i);
			return -ENOTSUP;
		}
		client_key(c);
		c->ep.ip.family = 4;
		memcpy(c->ep.ip.a, (uint8_t[]){198, 18, (uint8_t)(i >> 8), (uint8_t)i}, 4);
		c->ep.port = (uint16_t)(20000 + i % 40000);
	}
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

/*
 * A new intro (a new session) for c, sent at once; the client waits in
 * DG_INTRO for the keepalive that answers it, and tries again after 3 s.
 * The session it had still opens what the gateway sealed before it moved.
 */
int dg_intro_send(struct dg *g, struct dg_client *c)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(g->pool);
	struct dust_session s;
	struct timespec ts;
	uint8_t *f;
	int n;

	if (!m)
		return -EAGAIN;
	f = rte_pktmbuf_mtod(m, uint8_t *);
	clock_gettime(CLOCK_REALTIME, &ts);
	n = dust_intro_build(&c->inv, &c->id, &g->rng, &g->pad,
	                     (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000, f + 42,
	                     600, &s);
	if (n < 0) {
		rte_pktmbuf_free(m);
		return n;
	}
	m->data_len = m->pkt_len = dg_frame(g, c, f, f + 42, (size_t)n);
	if (rte_eth_tx_burst(g->net, g->q, &m, 1) != 1) {
		/* not sent: the client keeps the session the gateway knows */
		rte_pktmbuf_free(m);
		dust_session_wipe(&s);
		return -EAGAIN;
	}
	if (c->state == DG_UP || c->state == DG_INTRO) {
		c->prev = c->s;
		c->prev_port = c->s_port;
	}
	c->s = s;
	c->s_port = c->ep.port;
	c->confirmed = false;
	dust_session_wipe(&s);
	if (c->state == DG_UP)
		g->nup--;
	if (c->state != DG_INTRO)
		g->nintro++;
	c->state = DG_INTRO;
	c->until = rte_rdtsc() + 3 * g->hz;
	g->ch.intros++;
	return 0;
}

/* Client index of a frame sent to one of our outer addresses (its datagram in u), -1 if none. */
static long client_of(const struct dg *g, const uint8_t *f, size_t len, struct frame_udp *u)
{
	unsigned i;

	if (frame_udp_parse(f, len, u) < 0 || u->family != 4 || u->dip[0] != 198 || u->dip[1] != 18)
		return -1;
	i = ((unsigned)u->dip[2] << 8 | u->dip[3]) - g->first; /* wraps past n below first */
	if (i >= g->n || (u->dport != g->c[i].s_port && u->dport != g->c[i].prev_port))
		return -1;
	return i;
}

/*
 * Open a datagram from the gateway with the session of the port it came to:
 * the current one, else the one before (a re-intro keeps the port). A
 * failed open changes neither session nor the datagram.
 */
static int open_reply(struct dg *g, struct dg_client *c, uint16_t port, uint8_t *pl, size_t plen,
                      struct dust_seg *segs)
{
	struct dust_session *try[2] = {port == c->s_port ? &c->s : NULL,
	                               port == c->prev_port ? &c->prev : NULL};
	struct dust_limits lim;
	enum dust_drop d;

	dust_limits_default(&lim);
	for (unsigned i = 0; i < 2; i++) {
		int n;

		if (!try[i])
			continue;
		n = dust_datagram_open(try[i], &lim, g->now_s, pl, plen, 0, segs, DUST_CHAIN_MAX,
		                       &d);
		if (d == DUST_OK && n > 0)
			return n;
	}
	return -1;
}

/*
 * c's answer opened: a keepalive under its keys goes back at once. It
 * proves to the gateway that c receives at its address (SPEC §9.1), which
 * the gateway then answers with a keepalive: c is up only then, so that no
 * probe toward c meets the limit on an unproved address.
 */
static void confirm(struct dg *g, struct dg_client *c)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(g->pool);
	uint8_t *f;
	int r;

	c->confirmed = true;
	if (!m)
		return; /* the retry after 3 s sends a new intro */
	f = rte_pktmbuf_mtod(m, uint8_t *);
	r = dust_data_seal(&c->s, &g->rng, &g->pad, g->now_s, f + 42, 0, 600);
	if (r < 0) {
		rte_pktmbuf_free(m);
		return;
	}
	m->data_len = m->pkt_len = dg_frame(g, c, f, f + 42, (size_t)r);
	if (rte_eth_tx_burst(g->net, g->q, &m, 1) != 1)
		rte_pktmbuf_free(m);
}

/*
 * The net port: keepalives that confirm a client's session, and (--dir rev
 * or both) data the gateway sealed toward a client, handed to fn as the
 * inner IP packet.
 */
void dg_net_poll(struct dg *g, struct dg_count *k, dg_rx_fn *fn, void *arg)
{
	struct rte_mbuf *pkts[DG_BURST];
	uint16_t n = rte_eth_rx_burst(g->net, g->q, pkts, DG_BURST);
	uint64_t now = rte_rdtsc();

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
		struct frame_udp u;
		struct dust_seg segs[DUST_CHAIN_MAX];
		long w = rte_pktmbuf_is_contiguous(m) ? client_of(g, f, m->data_len, &u) : -1;
		int ns =
		    w < 0 ? -1 : open_reply(g, &g->c[w], u.dport, (uint8_t *)u.pl, u.plen, segs);

		if (ns <= 0) {
			k->foreign++;
			continue;
		}
		for (int j = 0; j < ns; j++) {
			if (segs[j].len) {
				if (fn)
					fn(g, arg, u.pl + segs[j].off, segs[j].len, now);
				continue;
			}
			if (g->c[w].state == DG_INTRO && !g->c[w].confirmed && !g->o.no_confirm)
				confirm(g, &g->c[w]);
			else if (g->c[w].state == DG_INTRO)
				dg_client_up(g, &g->c[w]);
			g->ch.ka++;
			k->ka++;
		}
	}
	rte_pktmbuf_free_bulk(pkts, n);
}

/* Send c's intro, waiting up to 5 s for a port that refuses it (a full ring). */
static int intro_until_sent(struct dg *g, struct dg_client *c, struct dg_count *k)
{
	uint64_t give_up = rte_rdtsc() + 5 * g->hz;
	int rc;

	while ((rc = dg_intro_send(g, c)) == -EAGAIN && rte_rdtsc() < give_up)
		dg_net_poll(g, k, NULL, NULL);
	if (rc == -EAGAIN)
		fprintf(stderr, "dust-gen: port %u took no intro for 5 s: is its peer still up?\n",
		        g->net);
	return rc;
}

/* Introduce the first --start-clients (3 rounds for those whose keepalive did not come back). */
int dg_clients_intro(struct dg *g)
{
	struct dg_count k = {0};
	unsigned want = g->o.start_clients ? g->o.start_clients : g->n;

	for (int round = 0; round < 3 && g->nup < want; round++) {
		uint64_t end;

		g->now_s = (uint32_t)time(NULL);
		for (unsigned i = 0; i < want; i++) {
			int rc;

			if (g->c[i].state == DG_UP)
				continue;
			g->ch.retries += round > 0;
			if ((rc = intro_until_sent(g, &g->c[i], &k)) != 0)
				return rc;
			if (i % 16 == 15)
				dg_net_poll(g, &k, NULL, NULL);
		}
		end = rte_rdtsc() + (g->o.no_confirm ? 0 : g->hz);
		while (rte_rdtsc() < end && g->nup < want)
			dg_net_poll(g, &k, NULL, NULL);
		if (g->o.no_confirm) {
			for (unsigned i = 0; i < want; i++)
				if (g->c[i].state == DG_INTRO)
					dg_client_up(g, &g->c[i]);
			printf("dust-gen: %u intros sent, not confirmed (--no-confirm)\n", want);
			return 0;
		}
	}
	printf("dust-gen: %u of %u clients introduced (keepalive received)\n", g->nup, want);
	if (g->nup < want) {
		fprintf(stderr,
		        "dust-gen: %u clients got no keepalive: is dustgw running on the other "
		        "end, with the same store?\n",
		        want - g->nup);
		return -ETIMEDOUT;
	}
	return 0;
}

/* A client whose intro was answered (or that needs none) is up. */
void dg_client_up(struct dg *g, struct dg_client *c)
{
	g->nintro -= c->state == DG_INTRO;
	c->state = DG_UP;
	g->nup++;
}
