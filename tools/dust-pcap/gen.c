/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap gen: the client side of N clients (intros chained with data,
 * data, optional hostile packets) and the manifest of what must come out.
 */
#include <inttypes.h>
#include <netinet/in.h>

#include "dust-pcap.h"

/* ---- gen ----------------------------------------------------------------- */

struct gen {
	struct outs o;
	FILE *man;
	struct client *c;
	unsigned n;
	uint8_t gw_ip[4];
	uint8_t gw_ip6[16]; /* --ip6: the gateway's IPv6 address, for --v6-clients */
	uint16_t gw_port;
	uint64_t delivered, intro_ok, first_use, ka_rx;
	uint64_t drop[DUST_DROP_MAX];
	struct {
		const char *name;
		uint64_t n;
	} gwdrop[16];
	unsigned ngwdrop;
	uint64_t arp_reply, nd_reply, evicted;
	unsigned nout;
	bool bad; /* --bad: gen_bad_dust follows */
};

static void gw_drop(struct gen *g, const char *name)
{
	for (unsigned i = 0; i < g->ngwdrop; i++)
		if (!strcmp(g->gwdrop[i].name, name)) {
			g->gwdrop[i].n++;
			return;
		}
	g->gwdrop[g->ngwdrop].name = name;
	g->gwdrop[g->ngwdrop++].n = 1;
}

/* An inner IPv4/UDP packet from the client's tunnel address, of total size len. */
static size_t inner_packet(const struct client *c, uint8_t *out, size_t len, const uint8_t *src)
{
	uint8_t pl[PAYLOAD_MAX];
	size_t plen = len > 28 ? len - 28 : 0;

	dust_rng_bytes(&rng, pl, plen);
	return ip_udp4(out, src ? src : c->inv.tunnel.a, far_ip, (uint16_t)(1000 + c->idx % 50000),
	               9, pl, plen);
}

/* Outer frame of a Dust datagram (at dg, dglen) from client c to the gateway. */

static size_t client_frame(struct gen *g, const struct client *c, uint8_t *f, const uint8_t *dg,
                           size_t dglen)
{
	size_t h;

	if (c->ep.ip.family == 6) {
		h = eth(f, gw_mac, c->mac, 0x86dd);
		return h + ip_udp6(f + h, c->ep.ip.a, g->gw_ip6, c->ep.port, g->gw_port, dg, dglen);
	}
	h = eth(f, gw_mac, c->mac, 0x0800);
	return h + ip_udp4(f + h, c->ep.ip.a, g->gw_ip, c->ep.port, g->gw_port, dg, dglen);
}

/* Client ci's datagram into output file q (mod the number of files). */
static void send_dg_q(struct gen *g, unsigned ci, unsigned q, const uint8_t *dg, size_t len)
{
	uint8_t f[FRAME_MAX + 64];

	emit(&g->o, q, f, client_frame(g, &g->c[ci], f, dg, len));
}

static void send_dg(struct gen *g, unsigned ci, const uint8_t *dg, size_t len)
{
	send_dg_q(g, ci, g->c[ci].queue, dg, len);
}

/* Seal inner packet ip (ilen) at dg+off; returns the datagram's new length. */
static size_t seal_at(struct client *c, uint8_t *dg, size_t off, const uint8_t *ip, size_t ilen)
{
	int r;

	memcpy(dg + off + DUST_DATA_PREFIX, ip, ilen);
	r = dust_data_seal(&c->s, &rng, &pad, now_s(), dg + off, ilen, FRAME_MAX - 100 - off);
	if (r < 0)
		die("seal failed: %s", strerror(-r));
	return off + (size_t)r;
}

/*
 * Does client c's intro, opened as a data packet by the gateway's end of
 * the session it creates, fail the replay pre-check (it unmasks to a length
 * that fits and a counter past 2^60)? A copy of it resent from the same
 * address must still reach the intro path.
 */
static bool intro_reads_as_replay(const struct client *c)
{
	static uint8_t dg[FRAME_MAX];
	struct dust_session gw = c->s;
	struct dust_limits lim;
	struct dust_seg seg;
	size_t used;
	enum dust_drop d;

	memcpy(gw.rx_key, c->s.tx_key, sizeof(gw.rx_key));
	memcpy(gw.rx_hp, c->s.tx_hp, sizeof(gw.rx_hp));
	dust_replay_init(&gw.replay);
	dust_limits_default(&lim);
	memcpy(dg, c->intro, c->intro_len);
	d = dust_data_open(&gw, &lim, now_s(), dg, c->intro_len, &seg, &used);
	dust_session_wipe(&gw);
	return d == DUST_DROP_REPLAY;
}

static void gen_intro(struct gen *g, unsigned i)
{
	struct client *c = &g->c[i];
	uint8_t ip[PAYLOAD_MAX];
	size_t ilen = inner_packet(c, ip, sizes[i % 4], NULL);
	/* gen_bad_dust resends client 9's intro: make it the hard case (~1 in 200 intros) */
	bool hard = g->bad && g->n > 12 && i == 9;

	for (unsigned t = 0;; t++) {
		int n =
		    dust_intro_build(&c->inv, &c->id, &rng, &pad, now_ms(), c->intro, 600, &c->s);

		if (n < 0)
			die("intro_build: %s", dust_last_error());
		c->intro_len = (uint16_t)seal_at(c, c->intro, (size_t)n, ip, ilen);
		if (!hard || intro_reads_as_replay(c))
			break;
		if (t == 20000)
			die("no intro of client 9 reads as a replayed data packet%s", "");
	}
	send_dg(g, i, c->intro, c->intro_len);
	if (c->refused) {
		gw_drop(g, "table_full");
		return;
	}
	if (c->wrong_key) {
		g->drop[DUST_DROP_INTRO_WRONG_KEY]++; /* and its chained data goes with it */
		return;
	}
	g->intro_ok++;
	hexline(g->man, "deliver", i, ip, ilen);
	g->delivered++;
}

static void gen_data(struct gen *g, unsigned i, unsigned p)
{
	struct client *c = &g->c[i];
	uint8_t ip[PAYLOAD_MAX];
	size_t ilen = inner_packet(c, ip, sizes[(i + p) % NSIZES], NULL);

	c->data_len = (uint16_t)seal_at(c, c->data, 0, ip, ilen);
	send_dg(g, i, c->data, c->data_len);
	if (c->refused) {
		gw_drop(g, "table_full"); /* no slot even to try it as an intro */
		return;
	}
	if (c->wrong_key) {
		/* No session: the gateway tries it as an intro and finds no tag. */
		g->drop[c->data_len >= DUST_INTRO_MIN_BYTES ? DUST_DROP_INTRO_UNKNOWN
		                                            : DUST_DROP_TRUNCATED]++;
		return;
	}
	hexline(g->man, "deliver", i, ip, ilen);
	g->delivered++;
}

/* The hostile part of --bad, against live clients 0..; each counted where it must be. */
static void gen_bad_dust(struct gen *g)
{
	unsigned n = g->n;
	uint8_t dg[FRAME_MAX], ip[PAYLOAD_MAX];
	size_t len, ilen;
	struct client *c;

	for (unsigned k = 0; k < 4 && n; k++) {
		/* forged: a fresh packet (new counter) with its last (MAC) byte flipped */
		c = &g->c[k % n];
		ilen = inner_packet(c, ip, 200, NULL);
		len = seal_at(c, dg, 0, ip, ilen);
		dg[len - 1] ^= 0x80;
		send_dg(g, k % n, dg, len);
		g->drop[DUST_DROP_AUTH]++;
		/* replayed: the same data packet again */
		send_dg(g, k % n, c->data, c->data_len);
		g->drop[DUST_DROP_REPLAY]++;
		/* truncated: a fresh packet cut in the middle */
		c = &g->c[(k + 5) % n];
		ilen = inner_packet(c, ip, 400, NULL);
		len = seal_at(c, dg, 0, ip, ilen);
		send_dg(g, (k + 5) % n, dg, len / 2);
		g->drop[DUST_DROP_TRUNCATED]++;
		/* replayed intro from the same address: the lib sees the same intro */
		c = &g->c[(k + 9) % n];
		send_dg(g, (k + 9) % n, c->intro, c->intro_len);
		g->drop[DUST_DROP_INTRO_DUP]++;
	}
	if (!n)
		return;
	/* a replayed intro from another address (a censor re-sending it) */
	{
		struct client fake = g->c[1 % n];

		fake.ep.ip.a[0] = 203;
		fake.ep.port = 7;
		uint8_t f[FRAME_MAX + 64];

		emit(&g->o, 1 % n, f, client_frame(g, &fake, f, fake.intro, fake.intro_len));
		g->drop[DUST_DROP_INTRO_DUP]++;
	}
	/* spoofed inner source: authenticates, then fails cryptokey routing */
	{
		static const uint8_t other[4] = {10, 99, 99, 99};

		c = &g->c[2 % n];
		ilen = inner_packet(c, ip, 100, other);
		len = seal_at(c, dg, 0, ip, ilen);
		send_dg(g, 2 % n, dg, len);
		gw_drop(g, "inner_src");
		/* and data that is no IP packet at all */
		dust_rng_bytes(&rng, ip, 50);
		ip[0] = 0x00;
		len = seal_at(c, dg, 0, ip, 50);
		send_dg(g, 2 % n, dg, len);
		gw_drop(g, "inner_bad");
	}
	/* a keepalive: answered with a keepalive */
	c = &g->c[3 % n];
	len = seal_at(c, dg, 0, ip, 0);
	send_dg(g, 3 % n, dg, len);
	g->ka_rx++;
	/* a short datagram from a live client */
	send_dg(g, 4 % n, c->data, 10);
	g->drop[DUST_DROP_TRUNCATED]++;
}

static void gen_junk(struct gen *g)
{
	struct client stranger = {0};
	uint8_t dg[600];

	stranger.ep.ip.family = 4;
	memcpy(stranger.ep.ip.a, (uint8_t[]){192, 0, 2, 77}, 4);
	memcpy(stranger.mac, (uint8_t[]){0x02, 0, 0, 0xbb, 0, 1}, 6);
	for (unsigned k = 0; k < 3; k++) {
		uint8_t f[FRAME_MAX];

		stranger.ep.port = (uint16_t)(5000 + k);
		dust_rng_bytes(&rng, dg, sizeof(dg));
		emit(&g->o, k, f, client_frame(g, &stranger, f, dg, 200 + 100 * k));
		g->drop[DUST_DROP_INTRO_UNKNOWN]++;
		emit(&g->o, k, f, client_frame(g, &stranger, f, dg, 60));
		g->drop[DUST_DROP_TRUNCATED]++;
	}
}

static void gen_foreign(struct gen *g)
{
	static const uint8_t smac[6] = {0x02, 0, 0, 0xee, 0, 1};
	static const uint8_t sip[4] = {192, 0, 2, 99}, other_ip[4] = {10, 0, 0, 2};
	uint8_t f[FRAME_MAX], pl[64] = {0};
	size_t h, len;

	/* UDP to another port, to another address */
	h = eth(f, gw_mac, smac, 0x0800);
	emit(&g->o, 0, f, h + ip_udp4(f + h, sip, g->gw_ip, 1234, 53, pl, 32));
	gw_drop(g, "other_port");
	emit(&g->o, 0, f, h + ip_udp4(f + h, sip, other_ip, 1234, g->gw_port, pl, 32));
	gw_drop(g, "not_ours");
	/* TCP to us */
	len = h + ip_udp4(f + h, sip, g->gw_ip, 1234, g->gw_port, pl, 32);
	f[h + 9] = IPPROTO_TCP;
	f[h + 10] = f[h + 11] = 0;
	put16(f + h + 10, fold(sum16(f + h, 20, 0)));
	emit(&g->o, 0, f, len);
	gw_drop(g, "not_udp");
	/* a fragment, a bad IP checksum, a bad UDP checksum */
	len = h + ip_udp4(f + h, sip, g->gw_ip, 1234, g->gw_port, pl, 32);
	f[h + 6] = 0x20; /* MF */
	f[h + 10] = f[h + 11] = 0;
	put16(f + h + 10, fold(sum16(f + h, 20, 0)));
	emit(&g->o, 0, f, len);
	gw_drop(g, "ip_frag");
	len = h + ip_udp4(f + h, sip, g->gw_ip, 1234, g->gw_port, pl, 32);
	f[h + 10] ^= 0x55;
	emit(&g->o, 0, f, len);
	gw_drop(g, "ip_csum");
	len = h + ip_udp4(f + h, sip, g->gw_ip, 1234, g->gw_port, pl, 32);
	f[h + 27] ^= 0x55;
	emit(&g->o, 0, f, len);
	gw_drop(g, "udp_csum");
	/* LLDP, a runt */
	h = eth(f, (uint8_t[]){0x01, 0x80, 0xc2, 0, 0, 0x0e}, smac, 0x88cc);
	emit(&g->o, 0, f, h + 46);
	gw_drop(g, "not_ip");
	emit(&g->o, 0, f, 10);
	gw_drop(g, "runt");
	/* ARP who-has another address, then who-has us (answered) */
	for (int k = 0; k < 2; k++) {
		static const uint8_t arp_hdr[8] = {0, 1, 8, 0, 6, 4, 0, 1};
		uint8_t *a = f + 14;

		h = eth(f, (uint8_t[]){0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, smac, 0x0806);
		memcpy(a, arp_hdr, 8);
		memcpy(a + 8, smac, 6);
		memcpy(a + 14, sip, 4);
		memset(a + 18, 0, 6);
		memcpy(a + 24, k ? g->gw_ip : other_ip, 4);
		memset(a + 28, 0, 18);
		emit(&g->o, 0, f, 60);
	}
	gw_drop(g, "arp_other");
	g->arp_reply++;
}

/*
 * Roaming: client i re-introduces from a new address; its old session must
 * be evicted. Its packets from the new address form flow n + i in the
 * manifest. They stay in the client's file: the gateway reads the files of
 * several queues concurrently, so a roam into another file could overtake
 * the client's own earlier packets (cross-lcore eviction needs the timing
 * control of test/e2e/gw/gw_lcores.c).
 */
static void gen_roam(struct gen *g, unsigned k)
{
	for (unsigned i = 0; i < k && i < g->n; i++) {
		struct client *c = &g->c[i];
		uint8_t ip[PAYLOAD_MAX];
		size_t ilen;
		int n;
		unsigned q = c->queue;

		if (c->refused || c->wrong_key)
			continue;
		memcpy(c->ep.ip.a, (uint8_t[]){198, 19, (uint8_t)(i >> 8), (uint8_t)i}, 4);
		c->ep.port = (uint16_t)(30000 + i);
		ilen = inner_packet(c, ip, 200, NULL);
		n = dust_intro_build(&c->inv, &c->id, &rng, &pad, now_ms() + 1, c->intro, 600,
		                     &c->s);
		if (n < 0)
			die("intro_build: %s", dust_last_error());
		c->intro_len = (uint16_t)seal_at(c, c->intro, (size_t)n, ip, ilen);
		c->queue = q;
		send_dg_q(g, i, q, c->intro, c->intro_len);
		hexline(g->man, "deliver", g->n + i, ip, ilen);
		ilen = inner_packet(c, ip, 700, NULL);
		c->data_len = (uint16_t)seal_at(c, c->data, 0, ip, ilen);
		send_dg_q(g, i, q, c->data, c->data_len);
		hexline(g->man, "deliver", g->n + i, ip, ilen);
		g->delivered += 2;
		g->intro_ok++;
		g->evicted++;
	}
}

/* A neighbour solicitation for addr (answered) and IPv6 UDP to another address. */
static void gen_ip6(struct gen *g, const char *addr)
{
	static const uint8_t smac[6] = {0x02, 0, 0, 0xee, 0, 6};
	struct dust_ipaddr a;
	uint8_t f[256], *ip = f + 14, *icmp = f + 54;
	uint32_t s;

	if (dust_ipaddr_parse(&a, addr) != 0 || a.family != 6)
		die("--ip6 %s: not an IPv6 address", addr);
	memset(f, 0, sizeof(f));
	eth(f, (uint8_t[]){0x33, 0x33, 0xff, a.a[13], a.a[14], a.a[15]}, smac, 0x86dd);
	ip[0] = 0x60;
	put16(ip + 4, 32);
	ip[6] = 58;
	ip[7] = 255;
	memcpy(ip + 8, (uint8_t[]){0xfe, 0x80, [14] = 0xee, [15] = 1}, 16);
	memcpy(
	    ip + 24,
	    (uint8_t[]){
	        0xff, 0x02, [11] = 1, [12] = 0xff, [13] = a.a[13], [14] = a.a[14], [15] = a.a[15]},
	    16);
	icmp[0] = 135;
	memcpy(icmp + 8, a.a, 16);
	icmp[24] = 1;
	icmp[25] = 1;
	memcpy(icmp + 26, smac, 6);
	s = sum_ip6_pseudo(ip, 32, 58);
	put16(icmp + 2, fold(sum16(icmp, 32, s)));
	emit(&g->o, 0, f, 14 + 40 + 32);
	g->nd_reply++;
	/* UDP to another IPv6 address of the same network */
	a.a[15] ^= 1;
	eth(f, gw_mac, smac, 0x86dd);
	emit(&g->o, 0, f,
	     14 + ip_udp6(ip, (uint8_t[16]){0xfd, 0, [15] = 0x99}, a.a, 1234, g->gw_port,
	                  (uint8_t[8]){0}, 8));
	gw_drop(g, "not_ours");
}

static void gen_manifest_tail(struct gen *g)
{
	FILE *m = g->man;

	fprintf(m, "expect ctr.delivered %" PRIu64 "\n", g->delivered);
	fprintf(m, "expect ctr.intro_ok %" PRIu64 "\n", g->intro_ok);
	fprintf(m, "expect ctr.keepalive_rx %" PRIu64 "\n", g->ka_rx);
	fprintf(m, "expect ctr.keepalive_tx %" PRIu64 "\n", g->ka_rx + g->intro_ok);
	fprintf(m, "expect ctr.arp_reply %" PRIu64 "\n", g->arp_reply);
	fprintf(m, "expect ctr.nd_reply %" PRIu64 "\n", g->nd_reply);
	fprintf(m, "expect ctr.sessions_evicted %" PRIu64 "\n", g->evicted);
	for (unsigned d = 1; d < DUST_DROP_MAX; d++)
		if (g->drop[d])
			fprintf(m, "expect drop.%s %" PRIu64 "\n", dust_drop_name(d), g->drop[d]);
	for (unsigned i = 0; i < g->ngwdrop; i++)
		fprintf(m, "expect drop.%s %" PRIu64 "\n", g->gwdrop[i].name, g->gwdrop[i].n);
}

static void clients_from_store(struct gen *g, struct dust_store *st, const struct args *a)
{
	size_t avail = dust_store_count(st);
	struct client *saved = NULL;
	unsigned nsaved = 0;

	if (a->reuse)
		saved = state_load(a->reuse, &nsaved);
	g->n = a->clients ? a->clients : (unsigned)avail;
	if (g->n > avail)
		die("the store has fewer invitations than --clients%s", "");
	g->c = calloc(g->n ? g->n : 1, sizeof(*g->c));
	for (unsigned i = 0; i < g->n; i++) {
		struct client *c = &g->c[i];

		c->idx = i;
		c->inv = dust_store_at(st, i)->inv;
		c->ep.ip.family = 4;
		memcpy(c->ep.ip.a, (uint8_t[]){198, 18, (uint8_t)(i >> 8), (uint8_t)i}, 4);
		c->ep.port = (uint16_t)(20000 + i % 40000);
		if (i + a->v6_clients >= g->n) { /* the last K clients come over IPv6 */
			memset(&c->ep.ip, 0, sizeof(c->ep.ip));
			c->ep.ip.family = 6;
			memcpy(c->ep.ip.a,
			       (uint8_t[]){0xfd, 0, 0,
			                   0x18, [14] = (uint8_t)(i >> 8), [15] = (uint8_t)i},
			       16);
		}
		memcpy(c->mac, (uint8_t[]){0x02, 0, 0, 0xcc, (uint8_t)(i >> 8), (uint8_t)i}, 6);
		/* Each output file feeds one worker: its table holds table_max clients. */
		c->queue = i % (a->nout ? a->nout : 1);
		c->refused = a->table_max && i / (a->nout ? a->nout : 1) >= a->table_max;
		if (saved && i < nsaved && i >= a->wrong_key) {
			c->id = saved[i].id;
		} else {
			if (dust_identity_generate(&c->id) != 0)
				die("keygen: %s", dust_last_error());
			c->wrong_key = saved && i < nsaved;
		}
	}
	free(saved);
}

int cmd_gen(const struct args *a)
{
	struct gen g;
	struct dust_store *st;

	memset(&g, 0, sizeof(g));
	if (!a->store || !a->nout || !a->manifest)
		die("gen needs --store, --out and --manifest%s", "");
	st = store_open(a->store, a->key, 0);
	clients_from_store(&g, st, a);
	dust_store_close(st);
	if (!g.n)
		die("no invitations in the store%s", "");
	memcpy(g.gw_ip, g.c[0].inv.server.a, 4);
	g.gw_port = g.c[0].inv.port;
	if (g.c[0].inv.server.family != 4)
		die("gen writes IPv4 captures; the invitations name an IPv6 server%s", "");
	if (a->v6_clients) {
		struct dust_ipaddr ip6;

		if (!a->ip6 || dust_ipaddr_parse(&ip6, a->ip6) != 0 || ip6.family != 6)
			die("--v6-clients needs --ip6 GW6%s", "");
		memcpy(g.gw_ip6, ip6.a, 16);
	}
	g.man = fopen(a->manifest, "w");
	if (!g.man)
		die("cannot write %s", a->manifest);
	fprintf(g.man, "# dust-pcap manifest: what dustgw must deliver and count\nclients %u\n",
	        g.n);
	outs_open(&g.o, (char **)a->out, a->nout);
	g.nout = a->nout;
	g.bad = a->bad;
	for (unsigned i = 0; i < g.n; i++)
		gen_intro(&g, i);
	for (unsigned p = 1; p < a->packets; p++)
		for (unsigned i = 0; i < g.n; i++)
			gen_data(&g, i, p);
	gen_roam(&g, a->roam);
	if (a->bad) {
		gen_bad_dust(&g);
		gen_junk(&g);
		gen_foreign(&g);
	}
	if (a->ip6)
		gen_ip6(&g, a->ip6);
	gen_manifest_tail(&g);
	outs_close(&g.o);
	if (fclose(g.man) != 0)
		die("cannot write %s", a->manifest);
	if (a->state)
		state_save(a->state, g.c, g.n);
	printf("dust-pcap: %u clients, %" PRIu64 " frames, %" PRIu64
	       " cleartext packets expected\n",
	       g.n, g.o.frames, g.delivered);
	free(g.c);
	return 0;
}
