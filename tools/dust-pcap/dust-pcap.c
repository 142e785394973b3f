/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap: captures for replaying Dust through dustgw, and their checks.
 * gen writes the client side of N clients (intros chained with data, data,
 * optional hostile packets) plus a manifest of what must come out; inject
 * writes cleartext for the delivery side; check and decode compare what
 * dustgw wrote with the manifests; read prints per-flow summaries.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <sodium.h>

#include "dust.h"

static const char usage_text[] =
    "usage: dust-pcap COMMAND [options]\n"
    "\n"
    "  gen --store STORE --out PCAP [--out PCAP...] --manifest FILE [--clients N]\n"
    "      [--packets P] [--bad] [--state FILE] [--reuse-state FILE] [--wrong-key K]\n"
    "      [--roam K] [--table-max N] [--ip6 GW6]\n"
    "      Client traffic toward the gateway of STORE's invitations (one client per\n"
    "      invitation, a fresh client key each, or the keys of --reuse-state; the first K\n"
    "      get a fresh key anyway). Each client sends an intro chained with its first\n"
    "      packet, then P-1 more of mixed sizes. --bad adds forged, truncated, replayed,\n"
    "      spoofed and foreign packets. Client i goes to the (i mod n)-th --out file.\n"
    "      --roam K: the first K clients then re-introduce from a new address (same\n"
    "      file). --table-max N: the gateway's per-lcore session\n"
    "      limit, so clients beyond it are expected as table_full. --ip6 GW6: add an ND\n"
    "      solicitation for the gateway's IPv6 address and IPv6 UDP for another.\n"
    "      The manifest lists every cleartext packet dustgw must deliver and the counter\n"
    "      values it must report; --state saves the client sessions (for decode/inject).\n"
    "  inject --store STORE --state FILE --out PCAP [--out PCAP...] --manifest FILE\n"
    "      [--packets P]  Cleartext from the tunnel side toward each client (client i\n"
    "      to file (i+1) mod n, so it crosses lcores), plus packets for an unused\n"
    "      invitation and for an unknown address, with a manifest.\n"
    "  check --manifest FILE [--stats FILE] [--delivered PCAP...] [--unordered]\n"
    "      dustgw's delivered cleartext equals the manifest byte for byte (in order, or\n"
    "      with --unordered: each client's packets in order and all in one file), and\n"
    "      every counter in the manifest matches --stats (dustgw --stats-out); every\n"
    "      drop reason the manifest does not name must be zero. A second --manifest\n"
    "      (e.g. inject's) adds its counters to the expectations.\n"
    "  decode --state FILE --in PCAP [--in PCAP...] [--manifest FILE]\n"
    "      Open the gateway's replies with the saved client sessions; with an inject\n"
    "      manifest, every expected packet must decode, byte for byte.\n"
    "  read PCAP...  Per-flow summary (UDP 5-tuples, frames, bytes, other frames).\n";

enum { MAX_OUT = 8, FRAME_MAX = 2048, PAYLOAD_MAX = 1800 };

static const uint8_t gw_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t far_ip[4] = {10, 200, 0, 1}; /* a host behind the gateway */

static struct dust_rng rng;
static struct dust_pad pad;

static int die(const char *fmt, const char *arg)
{
	fprintf(stderr, "dust-pcap: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(1);
}

/* ---- Frames -------------------------------------------------------------- */

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

/* IPv4 + UDP + payload at out; returns the IP packet's length. */
static size_t ip_udp4(uint8_t *out, const uint8_t sip[4], const uint8_t dip[4], uint16_t sport,
                      uint16_t dport, const uint8_t *pl, size_t plen)
{
	uint8_t *u = out + 20;
	uint32_t s;

	memset(out, 0, 28);
	out[0] = 0x45;
	put16(out + 2, (uint16_t)(28 + plen));
	out[6] = 0x40; /* DF */
	out[8] = 64;
	out[9] = IPPROTO_UDP;
	memcpy(out + 12, sip, 4);
	memcpy(out + 16, dip, 4);
	put16(out + 10, fold(sum16(out, 20, 0)));
	put16(u, sport);
	put16(u + 2, dport);
	put16(u + 4, (uint16_t)(8 + plen));
	memmove(u + 8, pl, plen);
	s = sum16(out + 12, 8, IPPROTO_UDP + 8 + (uint32_t)plen);
	s = fold(sum16(u, 8 + plen, s));
	put16(u + 6, s ? s : 0xffff);
	return 28 + plen;
}

static size_t eth(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put16(f + 12, type);
	return 14;
}

/* ---- Pcap files ---------------------------------------------------------- */

struct outs {
	pcap_t *dead;
	pcap_dumper_t *d[MAX_OUT];
	unsigned n;
	uint64_t frames;
};

static void outs_open(struct outs *o, char **paths, unsigned n)
{
	o->dead = pcap_open_dead(DLT_EN10MB, 65535);
	o->n = n;
	for (unsigned i = 0; i < n; i++) {
		o->d[i] = pcap_dump_open(o->dead, paths[i]);
		if (!o->d[i])
			die("%s", pcap_geterr(o->dead));
	}
}

static void outs_close(struct outs *o)
{
	for (unsigned i = 0; i < o->n; i++)
		pcap_dump_close(o->d[i]);
	pcap_close(o->dead);
}

static void emit(struct outs *o, unsigned q, const uint8_t *f, size_t len)
{
	struct pcap_pkthdr h;

	gettimeofday(&h.ts, NULL);
	h.caplen = h.len = (bpf_u_int32)len;
	pcap_dump((u_char *)o->d[q % o->n], &h, f);
	o->frames++;
}

typedef void (*frame_fn)(const uint8_t *f, size_t len, unsigned file, void *arg);

static void read_pcap(const char *path, unsigned file, frame_fn fn, void *arg)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const u_char *data;

	if (!p)
		die("%s", err);
	while (pcap_next_ex(p, &h, &data) == 1)
		fn(data, h->caplen, file, arg);
	pcap_close(p);
}

/* ---- Clients and state --------------------------------------------------- */

struct client {
	uint32_t idx;
	struct dust_identity id;
	struct dust_session s;
	struct dust_endpoint ep;
	uint8_t mac[6];
	uint8_t wrong_key; /* a fresh key for an invitation bound to the saved one */
	uint8_t refused;   /* beyond the gateway's table capacity (--table-max) */
	unsigned queue;    /* output file its datagrams go to */
	struct dust_invite inv;
	uint8_t intro[FRAME_MAX];
	uint16_t intro_len;
	uint8_t data[FRAME_MAX];
	uint16_t data_len;
};

#define STATE_MAGIC "dust-pcap-state-3"

static void state_save(const char *path, const struct client *c, unsigned n)
{
	FILE *f = fopen(path, "wb");
	uint32_t n32 = n;

	if (!f)
		die("cannot write %s", path);
	fwrite(STATE_MAGIC, 1, sizeof(STATE_MAGIC), f);
	fwrite(&n32, sizeof(n32), 1, f);
	for (unsigned i = 0; i < n; i++) {
		fwrite(&c[i].idx, sizeof(c[i].idx), 1, f);
		fwrite(&c[i].id, sizeof(c[i].id), 1, f);
		fwrite(&c[i].s, sizeof(c[i].s), 1, f);
		fwrite(&c[i].ep, sizeof(c[i].ep), 1, f);
		fwrite(c[i].mac, 6, 1, f);
		fwrite(&c[i].wrong_key, 1, 1, f);
		fwrite(&c[i].refused, 1, 1, f);
	}
	if (fclose(f) != 0)
		die("cannot write %s", path);
}

static struct client *state_load(const char *path, unsigned *n)
{
	FILE *f = fopen(path, "rb");
	char magic[sizeof(STATE_MAGIC)];
	uint32_t n32;
	struct client *c;

	if (!f || fread(magic, 1, sizeof(magic), f) != sizeof(magic) ||
	    memcmp(magic, STATE_MAGIC, sizeof(magic)) || fread(&n32, sizeof(n32), 1, f) != 1)
		die("%s: not a dust-pcap state file", path);
	c = calloc(n32 ? n32 : 1, sizeof(*c));
	for (uint32_t i = 0; i < n32; i++)
		if (fread(&c[i].idx, sizeof(c[i].idx), 1, f) != 1 ||
		    fread(&c[i].id, sizeof(c[i].id), 1, f) != 1 ||
		    fread(&c[i].s, sizeof(c[i].s), 1, f) != 1 ||
		    fread(&c[i].ep, sizeof(c[i].ep), 1, f) != 1 || fread(c[i].mac, 6, 1, f) != 1 ||
		    fread(&c[i].wrong_key, 1, 1, f) != 1 || fread(&c[i].refused, 1, 1, f) != 1)
			die("%s: truncated", path);
	fclose(f);
	*n = n32;
	return c;
}

static void hexline(FILE *f, const char *kind, unsigned who, const uint8_t *p, size_t n)
{
	fprintf(f, "%s %u ", kind, who);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
	fputc('\n', f);
}

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

static uint32_t now_s(void)
{
	return (uint32_t)time(NULL);
}

static uint64_t now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
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
static uint32_t sum_ip6_pseudo(const uint8_t *ip6, uint32_t l4len, uint8_t nh)
{
	uint32_t s = sum16(ip6 + 8, 32, 0);

	return s + (l4len >> 16) + (l4len & 0xffff) + nh;
}

/* IPv6 + UDP + payload at out; returns the IP packet's length. */
static size_t ip_udp6(uint8_t *out, const uint8_t sip[16], const uint8_t dip[16], uint16_t sport,
                      uint16_t dport, const uint8_t *pl, size_t plen)
{
	uint8_t *u = out + 40;
	uint16_t c;

	memset(out, 0, 48);
	out[0] = 0x60;
	put16(out + 4, (uint16_t)(8 + plen));
	out[6] = IPPROTO_UDP;
	out[7] = 64;
	memcpy(out + 8, sip, 16);
	memcpy(out + 24, dip, 16);
	put16(u, sport);
	put16(u + 2, dport);
	put16(u + 4, (uint16_t)(8 + plen));
	memmove(u + 8, pl, plen);
	c = fold(sum16(u, 8 + plen, sum_ip6_pseudo(out, (uint32_t)(8 + plen), IPPROTO_UDP)));
	put16(u + 6, c ? c : 0xffff);
	return 48 + plen;
}

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

static const uint16_t sizes[] = {28, 64, 120, 300, 576, 900, 1200, 1350};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

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
	memset(f + 14, 0, sizeof(f) - 14);
	eth(f, gw_mac, smac, 0x86dd);
	ip[0] = 0x60;
	put16(ip + 4, 16);
	ip[6] = IPPROTO_UDP;
	ip[7] = 64;
	memcpy(ip + 8, (uint8_t[]){0xfd, 0, [15] = 0x99}, 16);
	memcpy(ip + 24, a.a, 16);
	ip[39] ^= 1;
	put16(ip + 40, 1234);
	put16(ip + 42, g->gw_port);
	put16(ip + 44, 16);
	s = sum_ip6_pseudo(ip, 16, IPPROTO_UDP);
	put16(ip + 46, fold(sum16(ip + 40, 16, s)));
	emit(&g->o, 0, f, 14 + 40 + 16);
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

struct args {
	const char *store, *manifest, *state, *reuse, *stats;
	const char *more_manifest[MAX_OUT];
	unsigned nmore;
	char *out[MAX_OUT];
	unsigned nout;
	char *in[MAX_OUT];
	unsigned nin;
	unsigned clients, packets, wrong_key, roam, table_max, v6_clients;
	int bad, unordered;
	const char *ip6;
};

static struct dust_store *store_open(const char *path)
{
	struct dust_store *st = dust_store_open(path, 0);

	if (!st)
		die("store: %s", dust_last_error());
	return st;
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

static int cmd_gen(const struct args *a)
{
	struct gen g;
	struct dust_store *st;

	memset(&g, 0, sizeof(g));
	if (!a->store || !a->nout || !a->manifest)
		die("gen needs --store, --out and --manifest%s", "");
	st = store_open(a->store);
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

/* ---- inject -------------------------------------------------------------- */

static void inject_one(struct outs *o, unsigned q, const struct dust_ipaddr *to, size_t size,
                       FILE *man, int who)
{
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x02}, smac[6] = {0x02, 0, 0, 0, 0, 0x03};
	uint8_t f[FRAME_MAX], pl[PAYLOAD_MAX];
	size_t h = eth(f, dmac, smac, 0x0800), plen = size - 28, len;

	dust_rng_bytes(&rng, pl, plen);
	len = ip_udp4(f + h, far_ip, to->a, 9, (uint16_t)(2000 + (who < 0 ? 0 : who)), pl, plen);
	emit(o, q, f, h + len);
	if (who >= 0)
		hexline(man, "encode", (unsigned)who, f + h, len);
}

static int cmd_inject(const struct args *a)
{
	struct client *c;
	unsigned n, packets = a->packets ? a->packets : 3;
	struct dust_store *st;
	struct outs o;
	FILE *man;
	uint64_t enc = 0, no_session = 0;

	if (!a->store || !a->state || !a->nout || !a->manifest)
		die("inject needs --store, --state, --out and --manifest%s", "");
	c = state_load(a->state, &n);
	st = store_open(a->store);
	man = fopen(a->manifest, "w");
	if (!man)
		die("cannot write %s", a->manifest);
	fprintf(man, "# dust-pcap inject manifest: cleartext each client must decode\nclients %u\n",
	        n);
	outs_open(&o, (char **)a->out, a->nout);
	for (unsigned p = 0; p < packets; p++) {
		for (unsigned i = 0; i < n; i++) {
			/* A client refused at its intro has no session to encode for. */
			bool live = !c[i].wrong_key && !c[i].refused;

			inject_one(&o, i + 1, &dust_store_at(st, c[i].idx)->inv.tunnel,
			           sizes[(i + p) % NSIZES], man, live ? (int)i : -1);
			enc += live;
			no_session += !live;
		}
	}
	if (dust_store_count(st) > n) { /* an invitation nobody introduced */
		inject_one(&o, 0, &dust_store_at(st, n)->inv.tunnel, 100, man, -1);
		no_session++;
	}
	{
		struct dust_ipaddr unknown = {.family = 4, .a = {10, 250, 0, 1}};

		inject_one(&o, 0, &unknown, 100, man, -1);
	}
	fprintf(man, "expect ctr.encoded %" PRIu64 "\nexpect drop.no_tunnel 1\n", enc);
	if (no_session)
		fprintf(man, "expect drop.no_session %" PRIu64 "\n", no_session);
	outs_close(&o);
	dust_store_close(st);
	fclose(man);
	printf("dust-pcap: %" PRIu64 " cleartext packets toward %u clients\n", enc, n);
	free(c);
	return 0;
}

/* ---- manifests ----------------------------------------------------------- */

struct pkt {
	unsigned who;
	uint16_t len;
	uint8_t *b;
};

struct expect {
	char name[64];
	uint64_t v;
};

struct manifest {
	struct pkt *p;
	size_t np, cap;
	struct expect e[64];
	unsigned ne;
	unsigned clients;
};

static void manifest_load(struct manifest *m, const char *path, const char *kind)
{
	FILE *f = fopen(path, "r");
	static char line[8192];

	memset(m, 0, sizeof(*m));
	if (!f)
		die("cannot read %s", path);
	while (fgets(line, sizeof(line), f)) {
		char k[16], hex[4000];
		unsigned who;

		if (sscanf(line, "clients %u", &m->clients) == 1)
			continue;
		if (sscanf(line, "expect %63s %" SCNu64, m->e[m->ne].name, &m->e[m->ne].v) == 2) {
			if (m->ne < 63)
				m->ne++;
			continue;
		}
		if (sscanf(line, "%15s %u %3999s", k, &who, hex) != 3 || strcmp(k, kind))
			continue;
		if (m->np == m->cap) {
			m->cap = m->cap ? m->cap * 2 : 1024;
			m->p = realloc(m->p, m->cap * sizeof(*m->p));
		}
		m->p[m->np].who = who;
		m->p[m->np].len = (uint16_t)(strlen(hex) / 2);
		m->p[m->np].b = malloc(m->p[m->np].len + 1);
		for (size_t i = 0; i < m->p[m->np].len; i++)
			sscanf(hex + 2 * i, "%2hhx", &m->p[m->np].b[i]);
		m->np++;
	}
	fclose(f);
}

static void manifest_free(struct manifest *m)
{
	for (size_t i = 0; i < m->np; i++)
		free(m->p[i].b);
	free(m->p);
}

/* Add another manifest's counter expectations (a run fed by two captures). */
static void manifest_merge_expect(struct manifest *m, const char *path)
{
	struct manifest o;

	manifest_load(&o, path, "-");
	for (unsigned i = 0; i < o.ne; i++) {
		unsigned j;

		for (j = 0; j < m->ne && strcmp(m->e[j].name, o.e[i].name); j++)
			;
		if (j == m->ne && m->ne < 63)
			m->e[m->ne++] = o.e[i];
		else if (j < m->ne)
			m->e[j].v += o.e[i].v;
	}
	manifest_free(&o);
}

/* Per-client queues of expected packets, in manifest order. */
struct queues {
	size_t **idx;
	size_t *n, *next;
	int *file;
	unsigned clients;
};

static void queues_build(struct queues *q, const struct manifest *m)
{
	unsigned c = m->clients;

	for (size_t i = 0; i < m->np; i++)
		c = m->p[i].who + 1 > c ? m->p[i].who + 1 : c;
	q->clients = c;
	q->idx = calloc(c + 1, sizeof(*q->idx));
	q->n = calloc(c + 1, sizeof(*q->n));
	q->next = calloc(c + 1, sizeof(*q->next));
	q->file = calloc(c + 1, sizeof(*q->file));
	for (unsigned i = 0; i < c; i++)
		q->file[i] = -1;
	for (size_t i = 0; i < m->np; i++) {
		unsigned w = m->p[i].who;

		q->idx[w] = realloc(q->idx[w], (q->n[w] + 1) * sizeof(size_t));
		q->idx[w][q->n[w]++] = i;
	}
}

/* ---- check --------------------------------------------------------------- */

static void queues_free(struct queues *q)
{
	for (unsigned w = 0; w <= q->clients; w++)
		free(q->idx[w]);
	free(q->idx);
	free(q->n);
	free(q->next);
	free(q->file);
}

struct check {
	struct manifest m;
	struct queues q;
	bool unordered;
	size_t seen, next, bad, extra, split;
};

static long find_client(struct check *k, const uint8_t *ip, size_t len)
{
	/* First a flow whose next expected packet is this one (flows may share a source). */
	for (unsigned w = 0; w < k->q.clients; w++) {
		const struct pkt *p;

		if (k->q.next[w] >= k->q.n[w])
			continue;
		p = &k->m.p[k->q.idx[w][k->q.next[w]]];
		if (p->len == len && !memcmp(p->b, ip, len))
			return w;
	}
	/* Else the flow of its inner source, to report what differs. */
	for (unsigned w = 0; w < k->q.clients; w++) {
		if (!k->q.n[w])
			continue;
		const struct pkt *p = &k->m.p[k->q.idx[w][0]];

		if (len >= 20 && p->len >= 20 && !memcmp(p->b + 12, ip + 12, 4))
			return w;
	}
	return -1;
}

static void check_frame(const uint8_t *f, size_t len, unsigned file, void *arg)
{
	struct check *k = arg;
	const uint8_t *ip = f + 14;
	size_t ilen = len >= 14 ? len - 14 : 0;
	const struct pkt *p = NULL;
	long w;

	k->seen++;
	if (!k->unordered) {
		if (k->next < k->m.np)
			p = &k->m.p[k->next++];
	} else if ((w = find_client(k, ip, ilen)) >= 0) {
		if (k->q.file[w] >= 0 && k->q.file[w] != (int)file)
			k->split++;
		k->q.file[w] = (int)file;
		if (k->q.next[w] < k->q.n[w])
			p = &k->m.p[k->q.idx[w][k->q.next[w]++]];
	}
	if (!p) {
		k->extra++;
		return;
	}
	if (p->len != ilen || memcmp(p->b, ip, ilen) != 0) {
		if (k->bad++ < 5)
			fprintf(stderr, "check: packet %zu (client %u): %zu bytes, expected %u%s\n",
			        k->seen, p->who, ilen, p->len,
			        p->len == ilen ? " (contents differ)" : "");
	}
}

static int check_stats(const struct manifest *m, const char *path)
{
	FILE *f = fopen(path, "r");
	char name[96];
	uint64_t v;
	int bad = 0;
	unsigned matched = 0;

	if (!f)
		die("cannot read %s", path);
	while (fscanf(f, "%95s %" SCNu64, name, &v) == 2) {
		bool named = false;

		for (unsigned i = 0; i < m->ne; i++) {
			if (strcmp(m->e[i].name, name))
				continue;
			named = true;
			matched++;
			if (m->e[i].v != v) {
				fprintf(stderr, "check: %s = %" PRIu64 ", expected %" PRIu64 "\n",
				        name, v, m->e[i].v);
				bad++;
			}
		}
		if (!named && !strncmp(name, "drop.", 5) && v) {
			fprintf(stderr, "check: %s = %" PRIu64 ", expected 0\n", name, v);
			bad++;
		}
	}
	fclose(f);
	if (matched != m->ne) {
		fprintf(stderr, "check: %u of %u expected counters missing from %s\n",
		        m->ne - matched, m->ne, path);
		bad++;
	}
	if (!bad)
		printf("check: %u counters as expected, every other drop reason zero\n", m->ne);
	return bad;
}

static int cmd_check(const struct args *a)
{
	struct check k;
	int bad = 0;

	memset(&k, 0, sizeof(k));
	if (!a->manifest)
		die("check needs --manifest%s", "");
	manifest_load(&k.m, a->manifest, "deliver");
	for (unsigned i = 0; i < a->nmore; i++)
		manifest_merge_expect(&k.m, a->more_manifest[i]);
	queues_build(&k.q, &k.m);
	k.unordered = a->unordered;
	for (unsigned i = 0; i < a->nin; i++)
		read_pcap(a->in[i], i, check_frame, &k);
	if (a->nin) {
		size_t lost = 0;

		if (k.unordered)
			for (unsigned w = 0; w < k.q.clients; w++)
				lost += k.q.n[w] - k.q.next[w];
		else
			lost = k.m.np - k.next;
		printf("check: %zu of %zu cleartext packets delivered byte for byte "
		       "(%zu differ, %zu lost, %zu unexpected%s)\n",
		       k.seen - k.bad - k.extra, k.m.np, k.bad, lost, k.extra,
		       k.unordered ? "" : ", in order");
		if (k.unordered)
			printf("check: clients seen on more than one output: %zu\n", k.split);
		bad += k.bad || lost || k.extra || k.split;
	}
	if (a->stats)
		bad += check_stats(&k.m, a->stats);
	queues_free(&k.q);
	manifest_free(&k.m);
	return bad ? 1 : 0;
}

/* ---- decode -------------------------------------------------------------- */

struct dec {
	struct client *c;
	unsigned n;
	struct manifest m;
	struct queues q;
	bool have_manifest;
	uint64_t datagrams, ka, data, fail, bad, extra, foreign;
	uint64_t *ka_per;
};

static long client_of(struct dec *d, int family, const uint8_t *ip, uint16_t port)
{
	for (unsigned i = 0; i < d->n; i++)
		if (d->c[i].ep.ip.family == family &&
		    !memcmp(d->c[i].ep.ip.a, ip, family == 6 ? 16 : 4) && d->c[i].ep.port == port)
			return i;
	return -1;
}

/* UDP payload of an IPv4 or IPv6 frame and its destination client; -1 if none. */
static long dec_udp(struct dec *d, const uint8_t *f, size_t len, const uint8_t **pl, size_t *plen)
{
	size_t l3 = 14, ihl;
	const uint8_t *u;
	long w;

	if (len >= 62 && f[12] == 0x86 && f[13] == 0xdd && f[20] == IPPROTO_UDP) {
		u = f + l3 + 40;
		w = client_of(d, 6, f + l3 + 24, (uint16_t)(u[2] << 8 | u[3]));
	} else if (len >= 42 && f[12] == 0x08 && f[13] == 0x00 && f[23] == IPPROTO_UDP) {
		ihl = (size_t)(f[14] & 0xf) * 4;
		u = f + l3 + ihl;
		if (l3 + ihl + 8 > len)
			return -1;
		w = client_of(d, 4, f + l3 + 16, (uint16_t)(u[2] << 8 | u[3]));
	} else {
		return -1;
	}
	*plen = (size_t)(u[4] << 8 | u[5]);
	if (w < 0 || *plen < 8 || (size_t)(u - f) + *plen > len)
		return -1;
	*pl = u + 8;
	*plen -= 8;
	return w;
}

static void dec_seg(struct dec *d, unsigned w, const uint8_t *b, size_t len)
{
	const struct pkt *p;

	d->data++;
	if (!d->have_manifest)
		return;
	if (d->q.next[w] >= d->q.n[w]) {
		d->extra++;
		return;
	}
	p = &d->m.p[d->q.idx[w][d->q.next[w]++]];
	if (p->len != len || memcmp(p->b, b, len)) {
		if (d->bad++ < 5)
			fprintf(stderr, "decode: client %u: packet differs (%zu vs %u bytes)\n", w,
			        len, p->len);
	}
}

static void dec_frame(const uint8_t *f, size_t len, unsigned file, void *arg)
{
	struct dec *d = arg;
	struct dust_limits lim;
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop drop;
	uint8_t buf[FRAME_MAX];
	const uint8_t *pl;
	size_t plen;
	unsigned ns;
	long w;

	(void)file;
	w = dec_udp(d, f, len, &pl, &plen);
	if (w < 0 || plen > sizeof(buf)) {
		d->foreign++;
		return;
	}
	d->datagrams++;
	memcpy(buf, pl, plen);
	dust_limits_default(&lim);
	ns = dust_datagram_open(&d->c[w].s, &lim, now_s(), buf, plen, 0, segs, DUST_CHAIN_MAX,
	                        &drop);
	if (drop != DUST_OK || !ns) {
		if (d->fail++ < 5)
			fprintf(stderr, "decode: client %ld: datagram did not open: %s\n", w,
			        dust_drop_name(drop));
	}
	for (unsigned i = 0; i < ns; i++) {
		if (!segs[i].len) {
			d->ka++;
			d->ka_per[w]++;
		} else {
			dec_seg(d, (unsigned)w, buf + segs[i].off, segs[i].len);
		}
	}
}

static int cmd_decode(const struct args *a)
{
	struct dec d;
	uint64_t lost = 0, with_ka = 0;

	memset(&d, 0, sizeof(d));
	if (!a->state || !a->nin)
		die("decode needs --state and --in%s", "");
	d.c = state_load(a->state, &d.n);
	d.ka_per = calloc(d.n + 1, sizeof(*d.ka_per));
	for (unsigned i = 0; i < d.n; i++)
		dust_replay_init(&d.c[i].s.replay);
	if (a->manifest) {
		manifest_load(&d.m, a->manifest, "encode");
		queues_build(&d.q, &d.m);
		d.have_manifest = true;
	}
	for (unsigned i = 0; i < a->nin; i++)
		read_pcap(a->in[i], i, dec_frame, &d);
	for (unsigned i = 0; i < d.n; i++)
		with_ka += d.ka_per[i] > 0;
	if (d.have_manifest)
		for (unsigned w = 0; w < d.q.clients; w++)
			lost += d.q.n[w] - d.q.next[w];
	printf("decode: %" PRIu64 " datagrams to %u clients: %" PRIu64 " data packets, %" PRIu64
	       " keepalives (%" PRIu64 " clients got one), %" PRIu64 " failed to open, %" PRIu64
	       " other frames\n",
	       d.datagrams, d.n, d.data, d.ka, with_ka, d.fail, d.foreign);
	if (d.have_manifest)
		printf("decode: %" PRIu64 " of %zu expected packets decoded byte for byte (%" PRIu64
		       " differ, %" PRIu64 " lost, %" PRIu64 " unexpected)\n",
		       d.data - d.bad - d.extra, d.m.np, d.bad, lost, d.extra);
	if (d.have_manifest) {
		queues_free(&d.q);
		manifest_free(&d.m);
	}
	free(d.ka_per);
	free(d.c);
	return d.fail || d.bad || lost || d.extra ? 1 : 0;
}

/* ---- read ---------------------------------------------------------------- */

struct flow {
	uint8_t key[12]; /* src ip, dst ip, sport, dport */
	uint64_t frames, bytes;
};

struct rd {
	struct flow *f;
	size_t n, cap;
	uint64_t frames, other;
};

static void rd_frame(const uint8_t *f, size_t len, unsigned file, void *arg)
{
	struct rd *r = arg;
	uint8_t key[12];
	size_t i;

	(void)file;
	r->frames++;
	if (len < 42 || f[12] != 0x08 || f[13] != 0x00 || f[23] != IPPROTO_UDP) {
		r->other++;
		return;
	}
	memcpy(key, f + 26, 8);
	memcpy(key + 8, f + 34, 4);
	for (i = 0; i < r->n && memcmp(r->f[i].key, key, 12); i++)
		;
	if (i == r->n) {
		if (r->n == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 256;
			r->f = realloc(r->f, r->cap * sizeof(*r->f));
		}
		memset(&r->f[r->n], 0, sizeof(r->f[0]));
		memcpy(r->f[r->n++].key, key, 12);
	}
	r->f[i].frames++;
	r->f[i].bytes += len;
}

static int cmd_read(int argc, char **argv)
{
	for (int a = 0; a < argc; a++) {
		struct rd r = {0};

		read_pcap(argv[a], 0, rd_frame, &r);
		printf("%s: %" PRIu64 " frames, %zu UDP/IPv4 flows, %" PRIu64 " other frames\n",
		       argv[a], r.frames, r.n, r.other);
		for (size_t i = 0; i < r.n && i < 20; i++) {
			const uint8_t *k = r.f[i].key;

			printf("  %u.%u.%u.%u:%u -> %u.%u.%u.%u:%u  %" PRIu64 " frames %" PRIu64
			       " bytes\n",
			       k[0], k[1], k[2], k[3], k[8] << 8 | k[9], k[4], k[5], k[6], k[7],
			       k[10] << 8 | k[11], r.f[i].frames, r.f[i].bytes);
		}
		if (r.n > 20)
			printf("  ... %zu more flows\n", r.n - 20);
		free(r.f);
	}
	return 0;
}

/* ---- main ---------------------------------------------------------------- */

static int parse(int argc, char **argv, struct args *a)
{
	static const struct option lo[] = {
	    {"store", required_argument, NULL, 'S'},
	    {"out", required_argument, NULL, 'o'},
	    {"in", required_argument, NULL, 'i'},
	    {"delivered", required_argument, NULL, 'i'},
	    {"manifest", required_argument, NULL, 'm'},
	    {"clients", required_argument, NULL, 'n'},
	    {"packets", required_argument, NULL, 'p'},
	    {"bad", no_argument, NULL, 'b'},
	    {"state", required_argument, NULL, 's'},
	    {"reuse-state", required_argument, NULL, 'r'},
	    {"wrong-key", required_argument, NULL, 'w'},
	    {"stats", required_argument, NULL, 't'},
	    {"unordered", no_argument, NULL, 'u'},
	    {"roam", required_argument, NULL, 'R'},
	    {"table-max", required_argument, NULL, 'T'},
	    {"ip6", required_argument, NULL, '6'},
	    {"v6-clients", required_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(a, 0, sizeof(*a));
	a->packets = 4;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'S':
			a->store = optarg;
			break;
		case 'o':
			if (a->nout == MAX_OUT)
				die("at most 8 --out%s", "");
			a->out[a->nout++] = optarg;
			break;
		case 'i':
			if (a->nin == MAX_OUT)
				die("at most 8 --in%s", "");
			a->in[a->nin++] = optarg;
			break;
		case 'm':
			if (!a->manifest)
				a->manifest = optarg;
			else if (a->nmore < MAX_OUT)
				a->more_manifest[a->nmore++] = optarg;
			break;
		case 'n':
			a->clients = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'p':
			a->packets = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'b':
			a->bad = 1;
			break;
		case 's':
			a->state = optarg;
			break;
		case 'r':
			a->reuse = optarg;
			break;
		case 'w':
			a->wrong_key = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 't':
			a->stats = optarg;
			break;
		case 'u':
			a->unordered = 1;
			break;
		case 'R':
			a->roam = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'T':
			a->table_max = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case '6':
			a->ip6 = optarg;
			break;
		case 'V':
			a->v6_clients = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			fputs(usage_text, stderr);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct args a;
	const char *cmd = argc > 1 ? argv[1] : "";

	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (dust_init() != 0)
		die("libsodium init failed%s", "");
	dust_rng_init(&rng);
	dust_pad_default(&pad);
	if (!strcmp(cmd, "read"))
		return argc > 2 ? cmd_read(argc - 2, argv + 2) : die("read needs a file%s", "");
	if (parse(argc - 1, argv + 1, &a) != 0)
		return 2;
	if (!strcmp(cmd, "gen"))
		return cmd_gen(&a);
	if (!strcmp(cmd, "inject"))
		return cmd_inject(&a);
	if (!strcmp(cmd, "check"))
		return cmd_check(&a);
	if (!strcmp(cmd, "decode"))
		return cmd_decode(&a);
	fputs(usage_text, stderr);
	return 2;
}
