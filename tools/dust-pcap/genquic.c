/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap gen --profile quic: quic-profile clients (SPEC.md §12). Each
 * sends its Initial, then short-header data. The data's keys depend on the
 * server's ephemeral (forward secrecy), so they come from a server side run
 * here (the store read-only, --key): the gateway, which picks its own
 * ephemeral and connection ID, must drop them as quic_no_session. --wire
 * writes both directions as an observer on the path would see them.
 */
#include <inttypes.h>

#include "dust-pcap.h"
#include "quic.h"

struct qclient {
	struct dust_identity id;
	struct dust_invite inv;
	struct dust_endpoint ep;
	uint8_t mac[6];
	struct dust_session cs, ss; /* client end, and the in-process server's */
};

struct qgen {
	struct outs o, wire;
	bool has_wire;
	struct qclient *c;
	unsigned n;
	uint8_t gw_ip[4];
	uint16_t gw_port;
	struct dust_server srv; /* in-process server: only with --key */
	bool server;
};

static size_t frame_c2s(const struct qgen *g, const struct qclient *c, uint8_t *f,
                        const uint8_t *dg, size_t len)
{
	size_t h = eth(f, gw_mac, c->mac, 0x0800);

	return h + ip_udp4(f + h, c->ep.ip.a, g->gw_ip, c->ep.port, g->gw_port, dg, len);
}

static size_t frame_s2c(const struct qgen *g, const struct qclient *c, uint8_t *f,
                        const uint8_t *dg, size_t len)
{
	size_t h = eth(f, c->mac, gw_mac, 0x0800);

	return h + ip_udp4(f + h, g->gw_ip, c->ep.ip.a, g->gw_port, c->ep.port, dg, len);
}

/* Client i's datagram: toward the gateway (its --out file) and on the wire. */
static void send_c2s(struct qgen *g, unsigned i, const uint8_t *dg, size_t len)
{
	uint8_t f[FRAME_MAX + 64];
	size_t n = frame_c2s(g, &g->c[i], f, dg, len);

	emit(&g->o, i, f, n);
	if (g->has_wire)
		emit(&g->wire, 0, f, n);
}

/*
 * Client i's datagram to the in-process server only (on the wire): the
 * gateway, whose connection IDs are its own, would take it for none of its
 * sessions'.
 */
static void wire_c2s(struct qgen *g, unsigned i, const uint8_t *dg, size_t len)
{
	uint8_t f[FRAME_MAX + 64];

	if (g->has_wire)
		emit(&g->wire, 0, f, frame_c2s(g, &g->c[i], f, dg, len));
}

static void send_s2c(struct qgen *g, unsigned i, const uint8_t *dg, size_t len)
{
	uint8_t f[FRAME_MAX + 64];

	if (g->has_wire)
		emit(&g->wire, 0, f, frame_s2c(g, &g->c[i], f, dg, len));
}

/*
 * Seal an inner packet of size len (src -> dst) behind s's short header;
 * returns its length. A size over the direction's inner MTU is sent at the
 * inner MTU, as a tunnel's MTU makes a stack send it (SPEC §12.4): every
 * datagram keeps the bound, padding included.
 */
static size_t seal_short(struct dust_session *s, uint8_t *dg, const uint8_t src[4],
                         const uint8_t dst[4], uint16_t port, size_t len)
{
	size_t pre = dust_quic_tx_prefix(s), plen, ilen;
	uint8_t pl[PAYLOAD_MAX];
	int r;

	if (len > dust_quic_tx_inner_max(s))
		len = dust_quic_tx_inner_max(s);
	plen = len > 28 ? len - 28 : 0;
	dust_rng_bytes(&rng, pl, plen);
	ilen = ip_udp4(dg + pre + DUST_DATA_PREFIX, src, dst, port, 9, pl, plen);
	r = dust_data_seal(s, &rng, &pad, now_s(), dg + pre, ilen,
	                   dust_quic_tx_cap(s, FRAME_MAX - 100 - pre));
	if (r < 0)
		die("seal failed: %s", strerror(-r));
	dust_quic_short_put(s, &rng, dg);
	return pre + (size_t)r;
}

/*
 * The client's second flight (SPEC §12.3), as Chromium's: the padded
 * Initial+Handshake ACK datagram, then the Handshake+1-RTT one with a
 * keepalive, which the in-process server opens. On the wire only.
 */
static void second_flight(struct qgen *g, unsigned i, const struct dust_quic_confirm *cf)
{
	struct qclient *c = &g->c[i];
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop d = DUST_OK;
	uint8_t dg[1500];
	size_t off = 0;
	bool carried;
	int n = dust_quic_confirm_ack_build(cf, &c->cs, &rng, dg, sizeof(dg));

	if (n < 0)
		die("second flight's ACK: %s", strerror(-n));
	wire_c2s(g, i, dg, (size_t)n);
	n = dust_quic_confirm_build(&c->cs, &rng, now_s(), NULL, 0, dg, sizeof(dg), &carried);
	if (n < 0)
		die("second flight: %s", strerror(-n));
	wire_c2s(g, i, dg, (size_t)n);
	if (dust_quic_confirm_kind(&c->ss, dg, (size_t)n, &off) != DUST_QUIC_CONFIRM_DATA ||
	    !dust_datagram_open(&c->ss, &g->srv.lim, now_s(), dg, (size_t)n, off, segs,
	                        DUST_CHAIN_MAX, &d))
		die("the server could not open the second flight: %s", dust_drop_name(d));
}

/* The in-process server accepts c's Initial and answers; the client opens the answer. */
static void handshake(struct qgen *g, unsigned i, const uint8_t *init, size_t len,
                      struct dust_quic_client *qc)
{
	struct qclient *c = &g->c[i];
	struct dust_eph eph;
	struct dust_quic_accept acc;
	struct dust_quic_confirm cf;
	uint8_t ans[1500], tail[256];
	enum dust_drop d;
	int n, t;

	if (dust_eph_generate(&eph) != 0)
		die("X25519 failed%s", "");
	d = dust_quic_intro_accept(&g->srv, &rng, init, len, now_ms(), &c->ep, &eph, &c->ss, &acc,
	                           NULL);
	sodium_memzero(&eph, sizeof(eph));
	if (d != DUST_OK)
		die("in-process accept: %s (is --key the store's server key, and are its "
		    "invitations unused?)",
		    dust_drop_name(d));
	/* the flight as the cover server's (SPEC §12.3): an ACK-only Initial, the answer, a tail */
	n = dust_quic_answer_ack_build(&c->ss, &acc, &rng, ans, sizeof(ans));
	if (n < 0)
		die("answer ACK: %s", strerror(-n));
	send_s2c(g, i, ans, (size_t)n);
	n = dust_quic_answer_build(&c->ss, &acc, &rng, now_s(), ans, sizeof(ans));
	if (n < 0)
		die("answer: %s", strerror(-n));
	send_s2c(g, i, ans, (size_t)n);
	t = dust_quic_answer_tail_build(&c->ss, &rng, now_s(), tail, sizeof(tail));
	if (t < 0)
		die("answer tail: %s", strerror(-t));
	send_s2c(g, i, tail, (size_t)t);
	/* the client opens the flight with its tail (the keepalive authenticates both) */
	dust_quic_confirm_init(qc, &cf);
	d = dust_quic_answer_open(qc, &g->srv.lim, now_s(), ans, (size_t)n, tail, (size_t)t,
	                          &c->cs);
	if (d != DUST_OK)
		die("the client could not open the answer: %s", dust_drop_name(d));
	second_flight(g, i, &cf);
}

static void gen_initial(struct qgen *g, unsigned i)
{
	struct qclient *c = &g->c[i];
	struct dust_quic_client qc;
	uint8_t dg[DUST_QUIC_HELLO_BYTES];
	int n = dust_quic_intro_build(&c->inv, &c->id, &rng, now_ms(), dg, sizeof(dg), &qc);

	if (n < 0)
		die("quic intro: %s", dust_last_error());
	/* the hello's two Initials (SPEC §12.2) */
	for (int at = 0; at < n; at += DUST_QUIC_CLIENT_DGRAM)
		send_c2s(g, i, dg + at, DUST_QUIC_CLIENT_DGRAM);
	if (g->server)
		handshake(g, i, dg, (size_t)n, &qc);
	dust_quic_client_wipe(&qc);
}

/* One round of data: client i sends, and (on the wire) the server replies. */
static void gen_data(struct qgen *g, unsigned i, unsigned p)
{
	struct qclient *c = &g->c[i];
	uint8_t dg[FRAME_MAX];
	size_t n;

	n = seal_short(&c->cs, dg, c->inv.tunnel.a, far_ip, (uint16_t)(1000 + i % 50000),
	               sizes[(i + p) % NSIZES]);
	send_c2s(g, i, dg, n);
	n = seal_short(&c->ss, dg, far_ip, c->inv.tunnel.a, 9, sizes[(i + p + 3) % NSIZES]);
	send_s2c(g, i, dg, n);
}

static void clients_load(struct qgen *g, const struct args *a)
{
	struct dust_store *st = store_open(a->store, a->key, DUST_STORE_READONLY);
	size_t avail;

	avail = dust_store_count(st);
	g->n = a->clients ? a->clients : (unsigned)avail;
	if (!g->n || g->n > avail)
		die("the store has fewer invitations than --clients (or none)%s", "");
	g->c = calloc(g->n, sizeof(*g->c));
	if (!g->c)
		die("out of memory%s", "");
	for (unsigned i = 0; i < g->n; i++) {
		struct qclient *c = &g->c[i];

		c->inv = dust_store_at(st, i)->inv;
		if (c->inv.profile != DUST_PROFILE_QUIC) {
			char idx[16];

			snprintf(idx, sizeof(idx), "%u", i);
			die("--profile quic: invitation %s of the store is not a quic one", idx);
		}
		if (c->inv.server.family != 4)
			die("gen writes IPv4 captures; the invitations name an IPv6 server%s", "");
		c->ep.ip.family = 4;
		memcpy(c->ep.ip.a, (uint8_t[]){198, 18, (uint8_t)(i >> 8), (uint8_t)i}, 4);
		c->ep.port = (uint16_t)(20000 + i % 40000);
		memcpy(c->mac, (uint8_t[]){0x02, 0, 0, 0xcc, (uint8_t)(i >> 8), (uint8_t)i}, 6);
		if (dust_identity_generate(&c->id) != 0)
			die("keygen: %s", dust_last_error());
	}
	memcpy(g->gw_ip, g->c[0].inv.server.a, 4);
	g->gw_port = g->c[0].inv.port;
	if (g->server) {
		g->srv.store = st;
		if (dust_store_tick(st, now_s()) < 0)
			die("store: %s", dust_last_error());
	} else {
		dust_store_close(st);
	}
}

static void manifest_write(const struct qgen *g, const struct args *a)
{
	FILE *m = fopen(a->manifest, "w");
	uint64_t data = (uint64_t)g->n * (a->packets ? a->packets - 1 : 0);

	if (!m)
		die("cannot write %s", a->manifest);
	fprintf(m,
	        "# dust-pcap manifest (quic profile): every Initial is accepted and answered;\n"
	        "# the data that follows is keyed to dust-pcap's own server ephemeral, so the\n"
	        "# gateway (its own ephemeral and connection IDs) drops it as quic_no_session\n"
	        "clients %u\n",
	        g->n);
	fprintf(m, "expect ctr.delivered 0\n");
	fprintf(m, "expect ctr.intro_ok %u\n", g->n);
	fprintf(m, "expect ctr.quic_answers %u\n", g->n);
	if (data)
		fprintf(m, "expect drop.quic_no_session %" PRIu64 "\n", data);
	if (fclose(m) != 0)
		die("cannot write %s", a->manifest);
}

static void refuse_options(const struct args *a)
{
	if (a->bad || a->roam || a->reuse || a->wrong_key || a->state || a->table_max ||
	    a->v6_clients || a->ip6)
		die("--profile quic takes only --store, --key, --out, --wire, --manifest, "
		    "--clients and --packets%s",
		    "");
	if ((a->packets > 1 || a->wire) && !a->key)
		die("--profile quic: data after the Initial (--packets > 1) and --wire need the "
		    "server's --key (the session keys depend on the server's answer)%s",
		    "");
}

int cmd_gen_quic(const struct args *a)
{
	struct qgen g;
	char *wire[1] = {(char *)a->wire};

	memset(&g, 0, sizeof(g));
	if (!a->store || !a->nout || !a->manifest)
		die("gen needs --store, --out and --manifest%s", "");
	refuse_options(a);
	if (a->key) {
		if (dust_identity_load(&g.srv.id, a->key) != 0)
			die("--key: %s", dust_last_error());
		dust_limits_default(&g.srv.lim);
		g.server = true;
	}
	clients_load(&g, a);
	outs_open(&g.o, (char **)a->out, a->nout);
	if (a->wire) {
		outs_open(&g.wire, wire, 1);
		g.has_wire = true;
	}
	for (unsigned i = 0; i < g.n; i++)
		gen_initial(&g, i);
	for (unsigned p = 1; g.server && p < a->packets; p++)
		for (unsigned i = 0; i < g.n; i++)
			gen_data(&g, i, p);
	manifest_write(&g, a);
	outs_close(&g.o);
	if (g.has_wire)
		outs_close(&g.wire);
	printf("dust-pcap: %u quic clients, %" PRIu64 " frames toward the gateway%s\n", g.n,
	       g.o.frames, g.has_wire ? ", both directions in --wire" : "");
	for (unsigned i = 0; i < g.n; i++) {
		dust_session_wipe(&g.c[i].cs);
		dust_session_wipe(&g.c[i].ss);
		dust_identity_wipe(&g.c[i].id);
	}
	if (g.server)
		dust_store_close(g.srv.store);
	dust_identity_wipe(&g.srv.id);
	free(g.c);
	return 0;
}
