/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes the seed corpus of the fuzz harnesses into OUTDIR/{data,intro,
 * invite,config,quic,inner,mlkem}: valid packets made with the fixture's fixed keys and
 * clock (so they pass the harnesses' tag checks), plus near misses.
 */
#include <errno.h>
#include <sys/stat.h>

#include "ackz.h"
#include "fuzz_fixture.h"
#include "quic_pvt.h"

static const char *outdir;
static struct dust_rng rng;
static struct dust_pad pad;

static void put(const char *sub, const char *name, const void *p, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, sub);
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		fz_die(path);
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, sub, name);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0)
		fz_die(path);
}

/* Seal one packet of data_len bytes (a plausible IPv4 header first) at p. */
static size_t seal(struct dust_session *c, uint8_t *p, size_t cap, size_t data_len, uint32_t now)
{
	uint8_t *d = p + DUST_DATA_PREFIX;
	int n;

	memset(d, 0, data_len);
	if (data_len >= 20) {
		d[0] = 0x45;
		d[2] = (uint8_t)(data_len >> 8), d[3] = (uint8_t)data_len;
		d[12] = 10, d[13] = 9, d[14] = 0, d[15] = 2;
	}
	n = dust_data_seal(c, &rng, &pad, now, p, data_len, cap);
	if (n < 0)
		fz_die("seal");
	return (size_t)n;
}

static void data_seeds(void)
{
	static const size_t lens[] = {0, 1, 20, 100, 1400};
	static const uint64_t counters[] = {0, 1, 191, 192, 4096, UINT64_C(1) << 40};
	struct dust_session c, s;
	uint8_t dg[8192];
	char name[64];
	size_t n, off;

	fz_session_pair(&c, &s);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		n = seal(&c, dg, sizeof(dg), lens[i], FZ_NOW_S);
		snprintf(name, sizeof(name), "len%zu", lens[i]);
		put("data", name, dg, n);
	}
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		c.tx_counter = counters[i];
		n = seal(&c, dg, sizeof(dg), 60, FZ_NOW_S);
		snprintf(name, sizeof(name), "ctr%zu", i);
		put("data", name, dg, n);
	}
	for (unsigned k = 2; k <= DUST_CHAIN_MAX + 1; k += k < 4 ? 1 : DUST_CHAIN_MAX - 3) {
		for (off = 0, n = 0; n < k; n++)
			off += seal(&c, dg + off, sizeof(dg) - off, 40, FZ_NOW_S);
		snprintf(name, sizeof(name), "chain%u", k);
		put("data", name, dg, off);
	}
	n = seal(&c, dg, sizeof(dg), 40, FZ_NOW_S - 61);
	put("data", "stale", dg, n);
	n = seal(&c, dg, sizeof(dg), 40, FZ_NOW_S + 61);
	put("data", "future", dg, n);
	n = seal(&c, dg, sizeof(dg), 40, FZ_NOW_S);
	put("data", "truncated", dg, n - 1);
	dg[20] ^= 1;
	put("data", "bitflip", dg, n);
	dg[20] ^= 1;
	dg[n - 1] ^= 0x80;
	put("data", "tagflip", dg, n);
	/* compact packets (SPEC §6.5): a compressed ACK, its counter's low byte wrapped once */
	c.tx_counter = 0;
	for (size_t total = DUST_COMPACT_OVERHEAD + 5; total <= DUST_COMPACT_MAX; total += 3) {
		if (dust_compact_seal(&c, (const uint8_t *)"\x80\x12\x34\x00\x10", 5, total, dg) <
		    0)
			abort();
		snprintf(name, sizeof(name), "compact%zu", total);
		put("data", name, dg, total);
	}
	dust_session_wipe(&c);
}

/* Structured-mode seeds of fuzz_data: 0xff, then 8-byte packet records. */
static void structured_seeds(void)
{
	static const uint8_t ok3[] = {0xff, 0, 0, 0, 0, 40, 0, 5,    0,   1, 0,  0, 0,
	                              0,    0, 0, 0, 2, 0,  0, 0xfe, 200, 1, 63, 0};
	static const uint8_t faults[] = {
	    0xff, 5, 0, 0, 0,  10, 0, 0, 0, 5, 0, 0, 0,  10, 0, 0, 0, 1, 0,  0, 61, 10, 0, 0, 0,
	    1,    0, 0, 0, 10, 0,  0, 1, 1, 0, 0, 0, 10, 0,  0, 2, 1, 0, 60, 0, 10, 0,  0, 4};
	uint8_t many[1 + 8 * 18];

	put("data", "s-ok3", ok3, sizeof(ok3));
	put("data", "s-faults", faults, sizeof(faults));
	memset(many, 0, sizeof(many));
	many[0] = 0xff;
	for (int k = 0; k < 18; k++)
		many[1 + 8 * k] = (uint8_t)(k * 3);
	put("data", "s-many", many, sizeof(many));
	many[1 + 8 * 2 + 2] = 60; /* one counter at 2^60 and beyond */
	many[1 + 8 * 3] = 200, many[1 + 8 * 3 + 2] = 1;
	put("data", "s-far", many, sizeof(many));
}

static size_t intro(const struct dust_invite *inv, const struct dust_identity *cl, uint64_t now_ms,
                    uint8_t *dg, size_t cap, size_t chain)
{
	struct dust_session s;
	int n = dust_intro_build(inv, cl, &rng, &pad, now_ms, dg, cap, &s);
	size_t off;

	if (n < 0)
		fz_die("intro");
	off = (size_t)n;
	for (size_t i = 0; i < chain; i++)
		off += seal(&s, dg + off, cap - off, 60, (uint32_t)(now_ms / 1000));
	dust_session_wipe(&s);
	return off;
}

static void intro_seeds(void)
{
	struct dust_identity server, client, other;
	struct dust_invite inv;
	uint8_t dg[4096];
	size_t n;

	fz_identity(&server, 0x11);
	fz_identity(&client, 0x22);
	fz_identity(&other, 0x23);
	fz_invite(&inv, &server);
	put("intro", "bare", dg, intro(&inv, &client, FZ_NOW_MS, dg, sizeof(dg), 0));
	put("intro", "chained1", dg, intro(&inv, &client, FZ_NOW_MS, dg, sizeof(dg), 1));
	put("intro", "chained3", dg, intro(&inv, &client, FZ_NOW_MS, dg, sizeof(dg), 3));
	put("intro", "otherkey", dg, intro(&inv, &other, FZ_NOW_MS, dg, sizeof(dg), 1));
	put("intro", "stale", dg, intro(&inv, &client, FZ_NOW_MS - 61000, dg, sizeof(dg), 0));
	put("intro", "nextepoch", dg,
	    intro(&inv, &client, FZ_NOW_MS + 1000 * DUST_EPOCH_S, dg, sizeof(dg), 0));
	/* FZ_NOW_S starts an epoch: one second earlier is the previous epoch's tag */
	put("intro", "prevepoch", dg, intro(&inv, &client, FZ_NOW_MS - 1000, dg, sizeof(dg), 1));
	pad.min = pad.max = DUST_INTRO_PAD_MAX;
	put("intro", "maxpad", dg, intro(&inv, &client, FZ_NOW_MS, dg, sizeof(dg), 0));
	pad.min = pad.max = 0;
	n = intro(&inv, &client, FZ_NOW_MS, dg, sizeof(dg), 0);
	put("intro", "nopad", dg, n);
	put("intro", "short", dg, n - 1);
	dust_rng_bytes(&rng, dg, DUST_INTRO_MIN_BYTES);
	put("intro", "random", dg, DUST_INTRO_MIN_BYTES);
	dust_pad_default(&pad);
}

static void invite_seeds(void)
{
	uint8_t pt[1 + DUST_INVITE_PT_BYTES];
	char text[1 + DUST_INVITE_TEXT_MAX + 8];
	struct dust_identity server;
	struct dust_invite inv;
	size_t len;

	fz_identity(&server, 0x11);
	fz_invite(&inv, &server);
	pt[0] = 0;
	dust_invite_pack(&inv, pt + 1);
	put("invite", "pt4", pt, sizeof(pt));
	if (dust_ipaddr_parse(&inv.server, "2001:db8::1") ||
	    dust_ipaddr_parse(&inv.tunnel, "fd00::2"))
		fz_die("address");
	inv.tunnel_prefix = 64;
	dust_invite_pack(&inv, pt + 1);
	put("invite", "pt6", pt, sizeof(pt));
	text[0] = 1;
	if (dust_invite_seal(&inv, "fuzz password", 13, text + 1, sizeof(text) - 1))
		fz_die("seal invite");
	len = strlen(text);
	put("invite", "text", text, len);
	put("invite", "text-short", text, len - 3);
	memmove(text + 41, text + 40, len - 40);
	text[40] = '\n';
	put("invite", "text-newline", text, len + 1);
	put("invite", "text-bad", "\x01not an invitation!", 19);
}

/* One record of fuzz_dpi's input: flow (0: client to port 443, 1: back), length, datagram. */
static size_t dpi_record(uint8_t *out, uint8_t flow, const uint8_t *p, size_t len)
{
	out[0] = flow;
	out[1] = (uint8_t)(len >> 8);
	out[2] = (uint8_t)len;
	memcpy(out + 3, p, len);
	return 3 + len;
}

/* dpi: a hello's two Initials and the server's answer, as fuzz_dpi reads a capture */
static void dpi_seed(const uint8_t *hello, const uint8_t *ans, size_t ans_len)
{
	static uint8_t rec[2 * (3 + DUST_QUIC_CLIENT_DGRAM) + 3 + 1500 + 256];
	size_t n = 0;

	n += dpi_record(rec + n, 0, hello, DUST_QUIC_CLIENT_DGRAM);
	n += dpi_record(rec + n, 0, hello + DUST_QUIC_CLIENT_DGRAM, DUST_QUIC_CLIENT_DGRAM);
	put("dpi", "hello", rec, n);
	n += dpi_record(rec + n, 1, ans, ans_len);
	put("dpi", "hello-answer", rec, n);
}

/*
 * quic: the fixture client's Initial and the server's answer to it (accepted
 * here through a store in a temp dir), each read by fuzz_quic both ways.
 */
static void quic_seeds(void)
{
	struct dust_server srv = {0};
	struct dust_invite inv;
	struct dust_quic_client qc;
	struct dust_quic_accept acc;
	struct dust_eph eph;
	struct dust_session s;
	struct dust_endpoint from = {.ip = {.family = 4, .a = {198, 51, 100, 7}}, .port = 5555};
	uint8_t dg[DUST_QUIC_HELLO_BYTES], ans[1500 + 256];
	char dir[64], path[128], cmd[160];
	int n;

	fz_identity(&srv.id, 0x11);
	fz_quic_invite(&inv, &srv.id);
	dust_limits_default(&srv.lim);
	fz_quic_client(&inv, dg, sizeof(dg), &qc);
	put("quic", "initial", dg, sizeof(dg));
	{ /* both Initials' frames, for fuzz_quic's third reading (it protects them itself) */
		struct quic_long h;
		struct dust_quic_keys k;
		uint8_t fr[3000];
		uint64_t pn;
		size_t plen = 0, p2 = 0;

		dust_quic_initial_keys(qc.dcid, qc.dcid_len, false, &k);
		if (!quic_long_parse(dg, DUST_QUIC_CLIENT_DGRAM, &h) ||
		    !quic_unprotect(&k, dg, h.pn_off, h.length, &pn, fr, &plen) ||
		    !quic_long_parse(dg + DUST_QUIC_CLIENT_DGRAM, DUST_QUIC_CLIENT_DGRAM, &h) ||
		    !quic_unprotect(&k, dg + DUST_QUIC_CLIENT_DGRAM, h.pn_off, h.length, &pn,
		                    fr + plen, &p2) ||
		    plen != p2)
			fz_die("quic unprotect");
		put("quic", "initial-frames", fr, plen + p2);
		put("quic", "initial-first", dg, DUST_QUIC_CLIENT_DGRAM);
	}
	put("quic", "initial-short", dg, DUST_QUIC_INITIAL_MIN - 1);
	fz_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/store", dir);
	srv.store = fz_store(path, &inv, &srv.id);
	fz_quic_eph(&eph);
	if (dust_quic_intro_accept(&srv, &rng, dg, sizeof(dg), FZ_NOW_MS, &from, &eph, &s, &acc,
	                           NULL) != DUST_OK)
		fz_die("quic accept");
	n = dust_quic_answer_build(&s, &acc, &rng, FZ_NOW_S, ans, sizeof(ans));
	if (n < 0)
		fz_die("quic answer");
	dpi_seed(dg, ans, (size_t)n); /* the hello and the 1252-byte flight */
	{ /* the flight and its tail back to back, as fuzz_quic reads an answer */
		int t = dust_quic_answer_tail_build(&s, &rng, FZ_NOW_S, ans + n,
		                                    sizeof(ans) - (size_t)n);

		if (t < 0)
			fz_die("quic answer tail");
		n += t;
	}
	put("quic", "answer", ans, (size_t)n);
	ans[n - 1] ^= 1;
	put("quic", "answer-tagflip", ans, (size_t)n);
	{ /* the flight resent in parts, as try_parts cuts its input: Initial, Handshake, tail */
		static uint8_t parts[4 + 3 * 1300];
		int a, b, t;

		a = dust_quic_answer_initial_build(&s, &acc, &rng, parts + 4, 1300);
		b = a < 0 ? a : dust_quic_answer_hs_build(&s, &acc, parts + 4 + a, 1300);
		t = b < 0
		        ? b
		        : dust_quic_answer_tail_build(&s, &rng, FZ_NOW_S, parts + 4 + a + b, 1300);
		if (t < 0)
			fz_die("quic resent parts");
		parts[0] = (uint8_t)a, parts[1] = (uint8_t)(a >> 8);
		parts[2] = (uint8_t)b, parts[3] = (uint8_t)(b >> 8);
		put("quic", "parts", parts, 4 + (size_t)(a + b + t));
	}
	dust_store_close(srv.store);
	dust_session_wipe(&s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fz_die("rm store dir");
	/* a stale Initial of another client key: tag, AEAD and confirm hold, the clock not */
	{
		struct dust_identity other;
		struct dust_quic_client q2;

		fz_identity(&other, 0x23);
		n = dust_quic_intro_build(&inv, &other, &rng, FZ_NOW_MS - 61000, dg, sizeof(dg),
		                          &q2);
		if (n < 0)
			fz_die("quic intro");
		put("quic", "initial-stale", dg, (size_t)n);
		dust_quic_client_wipe(&q2);
	}
	dust_quic_client_wipe(&qc);
}

/* The one's complement checksum of p[0..len) (even) and sum, as its field holds it. */
static uint16_t csum(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * inner, compressed ACKs (ackz.h): Linux's pure ACK with timestamps (DF, IP
 * ID 0: it compresses against itself), checksums right, and its compressed
 * form.
 */
static void ackz_seeds(void)
{
	uint8_t p[2 + 52] = {0x04, 0xc3}, zb[DUST_ACKZ_MAX], z[2 + DUST_ACKZ_MIN] = {0x04, 0xc3};
	uint8_t *ip = p + 2, *tcp = ip + 20;
	struct dust_ackz ctx;

	ip[0] = 0x45, ip[3] = 52, ip[6] = 0x40, ip[8] = 64, ip[9] = 6;
	ip[12] = 10, ip[13] = 9, ip[15] = 2, ip[16] = 93, ip[17] = 184, ip[18] = 216, ip[19] = 34;
	be16_put(ip + 10, csum(0, ip, 20));
	be16_put(tcp, 51000), be16_put(tcp + 2, 443);
	tcp[4] = 0x3c, tcp[8] = 0x7f, tcp[11] = 0x01, tcp[12] = 8 << 4, tcp[13] = 0x10;
	be16_put(tcp + 14, 501);
	tcp[20] = 1, tcp[21] = 1, tcp[22] = 8, tcp[23] = 10, tcp[27] = 0x42, tcp[31] = 0x17;
	be16_put(tcp + 16, csum((uint16_t)~csum(0, ip + 12, 8) + 6u + 32u, tcp, 32)); /* pseudo */
	put("inner", "ack4-ts", p, sizeof(p));
	dust_ackz_init(&ctx);
	dust_ackz_note(&ctx, ip, 52);
	if (dust_ackz_compress(&ctx, ip, 52, zb) != DUST_ACKZ_MIN)
		fz_die("ackz seed"); /* a checksum wrong */
	memcpy(z + 2, zb, DUST_ACKZ_MIN);
	put("inner", "ackz", z, 2 + DUST_ACKZ_MIN);
}

/*
 * inner: two bytes of MTU, then an inner packet: SYNs with the MSS option
 * at an odd and an even offset (IPv4, and IPv6 behind a hop-by-hop
 * header), a UDP packet over the MTU, and ackz_seeds'.
 */
static void inner_seeds(void)
{
	static const uint8_t odd[8] = {1, 2, 4, 0x05, 0xb4, 1, 1, 0};
	static const uint8_t even[8] = {2, 4, 0x05, 0xb4, 4, 2, 1, 0};
	uint8_t p[2 + 1428] = {0x04, 0xc3}; /* MTU 1219 */
	uint8_t *ip = p + 2;

	/* IPv4 + TCP SYN (data offset 7) */
	ip[0] = 0x45, ip[3] = 48, ip[8] = 64, ip[9] = 6, ip[12] = 10, ip[16] = 10;
	ip[20 + 12] = 7 << 4, ip[20 + 13] = 0x02;
	memcpy(ip + 40, odd, sizeof(odd));
	put("inner", "syn4", p, 2 + 48);
	/* IPv6, hop-by-hop (PadN), TCP SYN-ACK */
	memset(ip, 0, 100);
	ip[0] = 0x60, ip[5] = 8 + 28, ip[6] = 0, ip[7] = 64, ip[8] = 0xfd, ip[24] = 0xfd;
	ip[40] = 6, ip[42] = 1, ip[43] = 4;
	ip[48 + 12] = 7 << 4, ip[48 + 13] = 0x12;
	memcpy(ip + 68, even, sizeof(even));
	put("inner", "syn6", p, 2 + 76);
	/* IPv4 UDP of 1428 bytes, DF */
	memset(ip, 0, 100);
	ip[0] = 0x45, ip[2] = 1428 >> 8, ip[3] = 1428 & 0xff, ip[6] = 0x40, ip[8] = 64;
	ip[9] = 17, ip[12] = 10, ip[16] = 10;
	put("inner", "udp-big", p, sizeof(p));
	ackz_seeds();
}

/*
 * mlkem: a mode byte (even: decapsulate, odd: encapsulate), then the
 * fixture's ciphertext (taken) and a flipped one (rejected), its
 * encapsulation key (taken), one with a coefficient = q (refused), and a
 * truncated one.
 */
static void mlkem_seeds(void)
{
	static uint8_t ek[DUST_MLKEM768_EKBYTES], dk[DUST_MLKEM768_DKBYTES];
	static uint8_t ct[DUST_MLKEM768_CTBYTES], p[1 + DUST_MLKEM768_EKBYTES];
	uint8_t ss[32];

	fz_mlkem_keys(ek, dk, ct, ss);
	p[0] = 0;
	memcpy(p + 1, ct, sizeof(ct));
	put("mlkem", "ct", p, 1 + sizeof(ct));
	p[1 + 100] ^= 1;
	put("mlkem", "ct-flipped", p, 1 + sizeof(ct));
	p[0] = 1;
	memcpy(p + 1, ek, sizeof(ek));
	put("mlkem", "ek", p, 1 + sizeof(ek));
	put("mlkem", "ek-short", p, 1 + 600);
	p[1] = 3329 & 0xff; /* the first coefficient = q */
	p[2] = (uint8_t)((p[2] & 0xf0) | 3329 >> 8);
	put("mlkem", "ek-q", p, 1 + sizeof(ek));
}

/* A long-header packet of total bytes (4-byte SCID) at p, for shape seeds. */
static size_t shape_pkt(uint8_t *p, unsigned type, size_t total)
{
	size_t h = 0, len;

	p[h++] = (uint8_t)(0xc0 | type << 4);
	memcpy(p + h, "\x00\x00\x00\x01\x00\x04\x11\x22\x33\x44", 10);
	h += 10;
	if (type == 0)
		p[h++] = 0; /* token length */
	len = total - h - 2;
	p[h++] = (uint8_t)(0x40 | len >> 8);
	p[h++] = (uint8_t)len;
	dust_rng_bytes(&rng, p + h, len);
	return total;
}

/* shape: caddy's answers to two probe hellos, as fuzz_shape reads them (length, bytes). */
static void shape_seeds(void)
{
	static uint8_t b[8192];
	size_t n = 0;

	for (unsigned probe = 0; probe < 2; probe++) {
		static const size_t sizes[] = {37, 1252, 118, 24, 1252};

		for (unsigned i = 0; i < 5; i++) {
			size_t at = n + 2, len = sizes[i];

			b[n] = (uint8_t)((i == 4 ? 0x80 : 0) | len >> 8);
			b[n + 1] = (uint8_t)len;
			if (i == 1)
				shape_pkt(b + at + shape_pkt(b + at, 0, 150), 2, len - 150);
			else if (i == 3)
				dust_rng_bytes(&rng, b + at, len), b[at] = 0x41;
			else
				shape_pkt(b + at, i == 2 ? 2 : 0, len);
			n = at + len;
		}
	}
	put("shape", "caddy", b, n);
	put("shape", "flight", b + 2 + 37 + 2, 1252);
}

static void config_seeds(void)
{
	static const char conf[] =
	    "; dustgw config seed\n"
	    "[gateway]\nipv4 = 192.0.2.1\nipv6 = 2001:db8::1\nudp_port = 4433\n"
	    "key_file = /tmp/k\nstore = /tmp/s\n"
	    "[ports]\nnet = net_pcap0\ndelivery = 1\nqueues = 2\nmbufs = 8191\n"
	    "rx_desc = 1024\ntx_desc = 1024\ndelivery_framing = raw\n"
	    "delivery_mac = 02:00:00:00:00:01\nproxy_arp = yes\n"
	    "[sessions]\nmax_per_lcore = 4096\nidle_timeout_s = 180\nts_window_s = 60\n"
	    "[padding]\nmode = uniform\nmin = 0\nmax = 63\nmtu = 1400\n"
	    "[runtime]\ndrain_us = 100\nexit_on_idle_ms = 0\ndelivery_hold_ms = 0\n";

	put("config", "full", conf, sizeof(conf) - 1);
	put("config", "minimal", "[gateway]\nipv4=10.0.0.1\nkey_file=k\nstore=s\n", 41);
	put("config", "unknown", "[gateway]\nbogus = 1\n[nope]\nx=y\n", 31);
}

/*
 * fuzz_store: a sealed journal (run marker, a binding, freshness records of
 * which the newest is not the last, revocation, close) and the sealed
 * invitations file.
 */
static void store_seeds(void)
{
	struct dust_identity id;
	struct dust_invite inv;
	struct dust_store_entry *e;
	struct dust_store *st;
	char dir[64], path[128];
	uint8_t buf[4097], pk[DUST_PK_BYTES] = {7}; /* the key, DH result and nonce */
	bool clean, first, held;
	FILE *f;
	size_t n;

	fz_identity(&id, 0x11);
	fz_invite(&inv, &id);
	fz_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/store", dir);
	st = fz_store(path, &inv, &id);
	e = dust_store_at(st, 0);
	if (dust_store_run_begin(st, &clean) != 0 ||
	    dust_store_commit(st, e, pk, pk, FZ_NOW_S * UINT64_C(1000), pk, FZ_NOW_S, &first,
	                      &held) != DUST_OK ||
	    dust_store_commit(st, e, pk, pk, FZ_NOW_S * UINT64_C(1000) + 3000, pk, FZ_NOW_S, &first,
	                      &held) != DUST_OK)
		fz_die("store seeds");
	e->last_ts_ms -= 1000; /* an older freshness record after the newest */
	dust_store_persist_fresh(st, e);
	if (dust_store_revoke(st, e, FZ_NOW_S) != 0)
		fz_die("store seeds");
	dust_store_close(st);
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/store%s", dir, k ? "" : ".bind");
		f = fopen(path, "rb");
		if (!f)
			fz_die(path);
		buf[0] = (uint8_t)k;
		n = fread(buf + 1, 1, sizeof(buf) - 1, f);
		fclose(f);
		put("store", k ? "invites" : "journal", buf, n + 1);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/store.lock", dir);
	unlink(path);
	rmdir(dir);
}

/* fuzz_etcd: store URLs (odd first byte) and watch streams (even, then a chunk byte). */
static void etcd_seeds(void)
{
	static const char *const urls[] = {
	    "\x01etcd://127.0.0.1:2379,127.0.0.1:2380/dust",
	    "\x01etcds://10.0.0.1:2379/dust?dir=/nonexistent&ca=ca.pem&cert=c.pem&key=c.key",
	    "\x01etcds://h:1/p?user=u&password-file=/nonexistent/pw&tls=1",
	};
	static const char watch[] =
	    "\x00\x03{\"result\":{\"header\":{\"revision\":\"7\"},\"created\":true}}\n"
	    "{\"result\":{\"header\":{\"revision\":\"8\"},\"events\":[{\"kv\":{\"key\":"
	    "\"ZnovaS8wMDExMjIzMzQ0NTU2Njc3\",\"mod_revision\":\"8\",\"value\":\"YWJj\"}},"
	    "{\"type\":\"DELETE\",\"kv\":{\"key\":\"ZnovYi8wMDExMjIzMzQ0NTU2Njc3\"}}]}}\n"
	    "{\"result\":{\"compact_revision\":\"5\",\"canceled\":true}}\n";
	char name[16];

	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		snprintf(name, sizeof(name), "url%zu", i);
		put("etcd", name, urls[i], strlen(urls[i] + 1) + 1);
	}
	put("etcd", "watch", watch, sizeof(watch) - 1);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkcorpus OUTDIR\n");
		return 2;
	}
	if (dust_init() < 0)
		return 1;
	outdir = argv[1];
	if (mkdir(outdir, 0755) != 0 && errno != EEXIST)
		fz_die(outdir);
	fz_rng(&rng, 0x61);
	dust_pad_default(&pad);
	data_seeds();
	structured_seeds();
	intro_seeds();
	invite_seeds();
	config_seeds();
	shape_seeds();
	quic_seeds();
	inner_seeds();
	mlkem_seeds();
	store_seeds();
	etcd_seeds();
	return 0;
}
