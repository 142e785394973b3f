/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ackz.c: compressed inner TCP ACKs. A download's ACK stream through a
 * sender's and a receiver's context (byte-exact, contexts in step), the
 * sizes the flags give, each way a packet is not compressible, lost packets
 * (what a stale context rebuilds fails its checksum), malformed compressed
 * ACKs, the slot hash. Packets and their checksums are built here, with a
 * reference checksum of the test's own.
 */
#include <stdbool.h>
#include <stdint.h>

#include "ackz.h"
#include "check.h"
#include "csum_ref.h"

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

enum { PKT_MAX = 256 }; /* the longest packet built: 60 bytes of headers, 120 of payload */

/* A connection, one direction. */
struct flow {
	uint8_t src[4], dst[4];
	uint16_t sport, dport;
};

/* One segment of it, and how its packet is built. */
struct seg {
	uint32_t seq, ack, tsval, tsecr;
	uint16_t id, win, frag, urg;      /* frag: IP flags and fragment offset (0x4000: DF) */
	uint8_t flags, tcp_res, tos, ttl; /* tcp_res: the low 4 bits of TCP's byte 12 */
	bool ts;                          /* options NOP NOP TS */
	const uint8_t *opts;              /* else these olen bytes (a multiple of 4) */
	size_t olen, pay;
	bool v6, ip_opt;                    /* IPv6; IPv4 with 4 bytes of options (IHL 6) */
	uint16_t ip_csum_xor, tcp_csum_xor; /* spoil a checksum */
};

static const struct flow A = {{10, 9, 0, 7}, {93, 184, 216, 34}, 51000, 443};

/* The TCP segment of s at t, checksum field 0; its length. */
static size_t tcp_put(uint8_t *t, const struct flow *f, const struct seg *s)
{
	size_t olen = s->ts ? 12 : s->olen, n = 20 + olen + s->pay;

	memset(t, 0, n);
	put16(t, f->sport);
	put16(t + 2, f->dport);
	put32(t + 4, s->seq);
	put32(t + 8, s->ack);
	t[12] = (uint8_t)((20 + olen) / 4 << 4 | s->tcp_res);
	t[13] = s->flags;
	put16(t + 14, s->win);
	put16(t + 18, s->urg);
	if (s->ts) {
		t[20] = 1, t[21] = 1, t[22] = 8, t[23] = 10;
		put32(t + 24, s->tsval);
		put32(t + 28, s->tsecr);
	} else if (olen) {
		memcpy(t + 20, s->opts, olen);
	}
	for (size_t i = 0; i < s->pay; i++)
		t[20 + olen + i] = (uint8_t)(7 * i + 1);
	return n;
}

static void tcp_csum(uint8_t *t, size_t tl, uint64_t pseudo, const struct seg *s)
{
	put16(t + 16, (uint16_t)~ref_fold(ref_sum(t, tl) + 6 + tl + pseudo) ^ s->tcp_csum_xor);
}

/* s as IPv6 (fd00::src to fd00::dst), the TCP checksum right. */
static size_t pkt6(uint8_t *p, const struct flow *f, const struct seg *s)
{
	size_t tl = tcp_put(p + 40, f, s);

	memset(p, 0, 40);
	p[0] = 0x60;
	put16(p + 4, (unsigned)tl);
	p[6] = 6;
	p[7] = s->ttl;
	p[8] = 0xfd, p[24] = 0xfd;
	memcpy(p + 20, f->src, 4);
	memcpy(p + 36, f->dst, 4);
	tcp_csum(p + 40, tl, ref_sum(p + 8, 32), s);
	return 40 + tl;
}

/* The packet of s in flow f at p, both checksums right unless s spoils one; its length. */
static size_t pkt(uint8_t *p, const struct flow *f, const struct seg *s)
{
	size_t hl = s->ip_opt ? 24 : 20, tl, n;

	if (s->v6)
		return pkt6(p, f, s);
	tl = tcp_put(p + hl, f, s);
	n = hl + tl;
	memset(p, 0, hl);
	p[0] = (uint8_t)(0x40 | hl / 4);
	p[1] = s->tos;
	put16(p + 2, (unsigned)n);
	put16(p + 4, s->id);
	put16(p + 6, s->frag);
	p[8] = s->ttl;
	p[9] = 6;
	memcpy(p + 12, f->src, 4);
	memcpy(p + 16, f->dst, 4);
	if (s->ip_opt)
		p[20] = 1, p[21] = 1, p[22] = 1, p[23] = 0; /* NOP NOP NOP EOL */
	put16(p + 10, (uint16_t)~ref_fold(ref_sum(p, hl)) ^ s->ip_csum_xor);
	tcp_csum(p + hl, tl, ref_sum(p + 12, 8), s);
	return n;
}

/* A pure ACK with timestamps, DF, IP ID counting; numbers just short of wrapping. */
static struct seg first_ack(void)
{
	return (struct seg){.seq = 0xfffffff0u,
	                    .ack = 0xfffe0000u,
	                    .tsval = 0xfffffffeu,
	                    .tsecr = 0xfffffff0u,
	                    .id = 0x4d2,
	                    .win = 501,
	                    .frag = 0x4000,
	                    .flags = 0x10,
	                    .ttl = 64,
	                    .ts = true};
}

/* The pure ACK that follows s with nothing else changed. */
static struct seg next_ack(const struct seg *s)
{
	uint32_t used = (uint32_t)s->pay + !!(s->flags & 0x02) + !!(s->flags & 0x01); /* SYN, FIN */

	return (struct seg){.seq = s->seq + used,
	                    .ack = s->ack,
	                    .tsval = s->tsval,
	                    .tsecr = s->tsecr,
	                    .id = s->id ? (uint16_t)(s->id + 1) : 0,
	                    .win = s->win,
	                    .frag = s->frag,
	                    .flags = 0x10,
	                    .tos = s->tos,
	                    .ttl = s->ttl,
	                    .ts = s->ts};
}

/* The length the flags of a compressed ACK's byte 0 give. */
static size_t flags_len(uint8_t b)
{
	return 5 + (b & 0x20 ? 2 : 0) + (b & 0x10 ? 1 : 0) + (b & 0x08 ? 1 : 0);
}

/*
 * s (flow g) compressed against a context that noted prev (flow f): the
 * compressed length (its bytes in zb). Checked: the context then holds s
 * (noted either way), and a compressed s expands, against the context
 * before, to s byte for byte, the receiver's context then the sender's.
 */
static size_t after(const struct flow *f, const struct seg *prev, const struct flow *g,
                    const struct seg *s, uint8_t zb[DUST_ACKZ_MAX])
{
	struct dust_ackz z, want, rx;
	uint8_t p[PKT_MAX], q[64];
	size_t len, n;

	dust_ackz_init(&z);
	dust_ackz_note(&z, p, pkt(p, f, prev));
	memcpy(&want, &z, sizeof(z));
	memcpy(&rx, &z, sizeof(z));
	len = pkt(p, g, s);
	dust_ackz_note(&want, p, len);
	n = dust_ackz_compress(&z, p, len, zb);
	CHECK(!memcmp(&z, &want, sizeof(z)));
	if (n) {
		CHECK(n >= DUST_ACKZ_MIN && n <= DUST_ACKZ_MAX && n == flags_len(zb[0]));
		CHECK_EQ(zb[0] & 0xc7, 0x80 | dust_ackz_slot_of(p, len));
		CHECK_EQ(dust_ackz_expand(&rx, zb, n, q, sizeof(q)), len);
		CHECK(!memcmp(q, p, len));
		CHECK(!memcmp(&rx, &z, sizeof(z)));
	}
	return n;
}

/* ---- the slot hash ---- */

static void test_slot_of(void)
{
	static const struct {
		struct flow f;
		unsigned slot;
	} t[] = {
	    /* 0x0a000001 ^ 0x0a000002 ^ 0x12340050 = 0x12340053; ^ >> 16: 0x12341267;
	       ^ >> 8: 0x12262675; % 8 = 5 */
	    {{{10, 0, 0, 1}, {10, 0, 0, 2}, 0x1234, 80}, 5},
	    /* 0xc0a8010a ^ 0x5db8d822 ^ 0xc73801bb = 0x5a28d893 -> 0x5a2882bb -> 0x5a72aa39: 1 */
	    {{{192, 168, 1, 10}, {93, 184, 216, 34}, 51000, 443}, 1},
	    /* 0x0a090007 ^ 0x0a0a0002 ^ 0x9c4001bb = 0x9c4301be -> 0x9c439dfd -> 0x9cdfde60: 0 */
	    {{{10, 9, 0, 7}, {10, 10, 0, 2}, 40000, 443}, 0},
	    {{{0, 0, 0, 0}, {0, 0, 0, 0}, 0, 7}, 7},
	    /* the source port's bit 8: 0x01000000 -> 0x01000100 -> 0x01010101: 1 */
	    {{{0, 0, 0, 0}, {0, 0, 0, 0}, 0x100, 0}, 1},
	    /* its bit 2: 0x00040000 -> 0x00040004 -> 0x00040404: 4 */
	    {{{0, 0, 0, 0}, {0, 0, 0, 0}, 4, 0}, 4},
	};
	struct seg s = first_ack();
	uint8_t p[PKT_MAX];

	for (size_t i = 0; i < CHECK_COUNT(t); i++)
		CHECK_EQ(dust_ackz_slot_of(p, pkt(p, &t[i].f, &s)), t[i].slot);
}

/* ---- a download's ACK stream ---- */

static uint32_t rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* The sender's side of one packet and the receiver's; 0 if it went whole. */
static size_t send_one(struct dust_ackz *tx, struct dust_ackz *rx, const struct seg *s)
{
	uint8_t p[PKT_MAX], q[64], zb[DUST_ACKZ_MAX];
	size_t len = pkt(p, &A, s), n = dust_ackz_compress(tx, p, len, zb);

	if (!n) {
		dust_ackz_note(rx, p, len);
	} else {
		CHECK_EQ(dust_ackz_expand(rx, zb, n, q, sizeof(q)), len);
		CHECK(!memcmp(q, p, len));
	}
	CHECK(!memcmp(rx, tx, sizeof(*rx)));
	return n;
}

static void test_roundtrip(void)
{
	static const uint8_t syn_opts[20] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0,
	                                     0, 1, 0,    0,    0, 0, 1, 3,  3, 7};
	struct dust_ackz tx, rx;
	struct seg s = first_ack(), prev;
	uint32_t x = 0x2545f491;
	size_t n, zipped = 0, bytes = 0;
	int rw = 0, rt = 0, re = 0; /* repeats left of a changed field (DUST_ACKZ_REPEAT) */

	dust_ackz_init(&tx);
	dust_ackz_init(&rx);
	s.flags = 0x02, s.ts = false, s.opts = syn_opts, s.olen = sizeof(syn_opts);
	CHECK_EQ(send_one(&tx, &rx, &s), 0); /* SYN */
	s = next_ack(&s);
	s.ts = true;
	CHECK_EQ(send_one(&tx, &rx, &s), 0); /* the slot has no timestamp layout yet */
	s = next_ack(&s);
	s.flags = 0x18, s.pay = 120;
	CHECK_EQ(send_one(&tx, &rx, &s), 0); /* the request */
	for (int i = 0; i < 200; i++) {
		prev = s;
		s = next_ack(&s);
		s.ack += rnd(&x) % 3001;
		s.tsval += rnd(&x) % 4;
		s.tsecr += rnd(&x) % 4;
		if (rnd(&x) % 8 == 0)
			s.win = (uint16_t)(400 + rnd(&x) % 200);
		n = send_one(&tx, &rx, &s);
		CHECK_EQ(n, 5 + 2 * (s.win != prev.win || rw) + (s.tsval != prev.tsval || rt) +
		                (s.tsecr != prev.tsecr || re));
		rw = s.win != prev.win ? DUST_ACKZ_REPEAT : rw - !!rw;
		rt = s.tsval != prev.tsval ? DUST_ACKZ_REPEAT : rt - !!rt;
		re = s.tsecr != prev.tsecr ? DUST_ACKZ_REPEAT : re - !!re;
		zipped += n > 0;
		bytes += n;
	}
	CHECK_EQ(zipped, 200);
	printf("  roundtrip: %zu of 200 ACKs compressed, mean %.2f bytes (whole: 52)\n", zipped,
	       zipped ? (double)bytes / (double)zipped : 0.0);
}

/* ---- sizes ---- */

static void test_sizes(void)
{
	static const struct {
		int dwin, dval, decr;
		size_t len;
	} t[] = {{0, 0, 0, 5}, {1, 0, 0, 7}, {0, 1, 0, 6}, {0, 0, 1, 6},
	         {0, 1, 1, 7}, {1, 1, 0, 8}, {1, 1, 1, 9}};
	struct seg b = first_ack(), s;
	uint8_t zb[DUST_ACKZ_MAX];

	for (size_t i = 0; i < CHECK_COUNT(t); i++) {
		s = next_ack(&b);
		s.ack += 1448;
		s.win = (uint16_t)(s.win + t[i].dwin);
		s.tsval += (uint32_t)t[i].dval;
		s.tsecr += (uint32_t)t[i].decr;
		CHECK_EQ(after(&A, &b, &A, &s, zb), t[i].len);
		CHECK_EQ(zb[0] & 0x38, t[i].dwin << 5 | t[i].dval << 4 | t[i].decr << 3);
	}
	/* the fields: checksum and the ACK's low bits as sent, then the window */
	s = next_ack(&b);
	s.ack += 0xfedc;
	s.win = 0x1234;
	CHECK_EQ(after(&A, &b, &A, &s, zb), 7);
	CHECK_EQ(zb[3] << 8 | zb[4], (s.ack & 0xffff));
	CHECK_EQ(zb[5] << 8 | zb[6], 0x1234);
	/* at the ranges' ends */
	s = next_ack(&b);
	s.ack += 0xffff, s.tsval += 0xff, s.tsecr += 0xff;
	CHECK_EQ(after(&A, &b, &A, &s, zb), 7);
	/* no options: no timestamps to send */
	b.ts = false;
	s = next_ack(&b);
	s.ack += 1, s.win = 9;
	CHECK_EQ(after(&A, &b, &A, &s, zb), 7);
	CHECK_EQ(zb[0] & 0x18, 0);
	/* Linux's DF packets: IP ID 0 stays 0 */
	b.id = 0;
	s = next_ack(&b);
	s.ack += 100;
	CHECK_EQ(after(&A, &b, &A, &s, zb), 5);
}

/* What note keeps of a packet. */
static void test_note(void)
{
	struct dust_ackz z;
	struct seg b = first_ack();
	uint8_t p[PKT_MAX];
	size_t len;
	const struct dust_ackz_slot *sl;

	b.flags = 0x13, b.pay = 9, b.tos = 0x20, b.ttl = 57; /* FIN, SYN: one each */
	dust_ackz_init(&z);
	len = pkt(p, &A, &b);
	dust_ackz_note(&z, p, len);
	sl = &z.slot[dust_ackz_slot_of(p, len)];
	CHECK(sl->used && sl->has_ts && sl->df && sl->tos == 0x20 && sl->ttl == 57);
	CHECK(!memcmp(sl->addr, A.src, 4) && !memcmp(sl->addr + 4, A.dst, 4));
	CHECK(!memcmp(sl->ports, p + 20, 4));
	CHECK_EQ(sl->seq_next, (uint32_t)(b.seq + 9 + 2)); /* wrapped */
	CHECK(sl->ack == b.ack && sl->tsval == b.tsval && sl->tsecr == b.tsecr);
	CHECK(sl->ipid == b.id && sl->win == b.win);
	/* options of NOP NOP TS's length, another layout: no timestamps */
	b.ts = false, b.opts = (const uint8_t[12]){1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2},
	b.olen = 12;
	dust_ackz_note(&z, p, pkt(p, &A, &b));
	CHECK(sl->used && !sl->has_ts && !sl->tsval && !sl->tsecr);
	b.frag = 0;
	dust_ackz_note(&z, p, pkt(p, &A, &b));
	CHECK(!sl->df);
}

/* Packets note leaves alone: a byte of first_ack()'s changed to v, its length by dlen. */
static const struct {
	const char *why;
	size_t at;
	uint8_t v;
	int dlen;
} unnoted[] = {
    {"IPv6", 0, 0x60, 0},
    {"IHL 6", 0, 0x46, 0},
    {"MF", 6, 0x60, 0},
    {"fragment offset", 7, 0x01, 0},
    {"UDP", 9, 17, 0},
    {"total length over the packet's", 3, 53, 0},
    {"total length under the packet's", 3, 51, 0},
    {"shorter than 40", 3, 39, -13},
    {"data offset 4", 32, 0x40, 0},
    {"data offset past the end", 32, 0xf0, 0},
};

static void test_note_ignores(void)
{
	struct dust_ackz z, zero;
	struct seg b = first_ack();
	uint8_t p[PKT_MAX];
	size_t len;

	dust_ackz_init(&zero);
	for (size_t k = 0; k < CHECK_COUNT(unnoted); k++) {
		len = pkt(p, &A, &b);
		p[unnoted[k].at] = unnoted[k].v;
		dust_ackz_init(&z);
		dust_ackz_note(&z, p, (size_t)((int)len + unnoted[k].dlen));
		if (memcmp(&z, &zero, sizeof(z)) != 0) {
			fprintf(stderr, "  noted: %s\n", unnoted[k].why);
			CHECK(0);
		}
	}
}

/* The ACK after a SYN, a FIN, data: its sequence number the slot's next. */
static void test_seq_next(void)
{
	static const struct {
		uint8_t flags;
		size_t pay;
	} t[] = {{0x02, 0}, {0x12, 0}, {0x11, 0}, {0x18, 100}, {0x19, 7}, {0x14, 0}};
	struct seg b = first_ack(), s;
	uint8_t zb[DUST_ACKZ_MAX];

	for (size_t i = 0; i < CHECK_COUNT(t); i++) {
		b.flags = t[i].flags, b.pay = t[i].pay;
		s = next_ack(&b);
		CHECK_EQ(after(&A, &b, &A, &s, zb), 5);
		s.seq--;
		CHECK_EQ(after(&A, &b, &A, &s, zb), 0);
	}
}

/* ---- not compressible ---- */

/* Another connection of f's addresses (a source port above) in f's slot. */
static struct flow collider(const struct flow *f)
{
	struct seg s = first_ack();
	struct flow g = *f;
	uint8_t p[PKT_MAX], q[PKT_MAX];
	unsigned slot = dust_ackz_slot_of(p, pkt(p, f, &s));

	do
		g.sport++;
	while (dust_ackz_slot_of(q, pkt(q, &g, &s)) != slot);
	return g;
}

/*
 * The ways to make the ACK after another not compressible: numbers added
 * (wrapping: UINT32_MAX is -1), flags or'ed, IP flags xor'ed, options
 * replaced where opts is set (olen 0: none), the rest set.
 */
static const struct {
	const char *why;
	struct seg d;
} spoilt[] = {
    {"payload", {.pay = 10}},
    {"SYN", {.flags = 0x02}},
    {"FIN", {.flags = 0x01}},
    {"RST", {.flags = 0x04}},
    {"PSH", {.flags = 0x08}},
    {"ECE", {.flags = 0x40}},
    {"TCP reserved bit (AE)", {.tcp_res = 1}},
    {"urgent pointer", {.urg = 1}},
    {"SACK", {.opts = (const uint8_t[12]){1, 1, 5, 10, 0, 0, 1, 0, 0, 0, 2, 0}, .olen = 12}},
    {"TS then EOL", {.opts = (const uint8_t[12]){8, 10, 0, 0, 0, 1, 0, 0, 0, 2}, .olen = 12}},
    {"options dropped", {.opts = (const uint8_t[1]){0}, .olen = 0}},
    {"IPv6", {.v6 = true}},
    {"MF", {.frag = 0x2000}},
    {"fragment offset", {.frag = 0x0001}},
    {"DF cleared", {.frag = 0x4000}},
    {"reserved IP flag", {.frag = 0x8000}},
    {"IHL 6", {.ip_opt = true}},
    {"seq != seq_next", {.seq = 1}},
    {"ack backwards", {.ack = UINT32_MAX}},
    {"ack jump 2^16", {.ack = 0x10000}},
    {"TSval backwards", {.tsval = UINT32_MAX}},
    {"TSval jump 2^8", {.tsval = 0x100}},
    {"TSecr backwards", {.tsecr = UINT32_MAX}},
    {"TSecr jump 2^8", {.tsecr = 0x100}},
    {"TTL", {.ttl = 0xff}},
    {"TOS", {.tos = 2}},
    {"IP header checksum", {.ip_csum_xor = 1}},
    {"TCP checksum", {.tcp_csum_xor = 0x100}},
};

static void spoil(struct seg *s, const struct seg *d)
{
	s->seq += d->seq, s->ack += d->ack, s->tsval += d->tsval, s->tsecr += d->tsecr;
	s->id = (uint16_t)(s->id + d->id);
	s->ttl = (uint8_t)(s->ttl + d->ttl);
	s->tos = (uint8_t)(s->tos + d->tos);
	s->frag ^= d->frag;
	s->flags |= d->flags;
	s->tcp_res = d->tcp_res, s->urg = d->urg, s->pay = d->pay, s->v6 = d->v6;
	s->ip_opt = d->ip_opt, s->ip_csum_xor = d->ip_csum_xor, s->tcp_csum_xor = d->tcp_csum_xor;
	if (d->opts)
		s->ts = false, s->opts = d->opts, s->olen = d->olen;
}

/*
 * The IP ID: with DF it is not compared (an atomic datagram's ID means
 * nothing, RFC 6864), so an ACK after thinned ones (Linux counted them in
 * its ID) compresses, rebuilt with the slot's ID + 1 and its header
 * checksum; without DF it must count up by one.
 */
static void test_ipid(void)
{
	struct seg b = first_ack(), s;
	struct dust_ackz tx, rx;
	uint8_t p[PKT_MAX], q[64], zb[DUST_ACKZ_MAX];
	size_t len, n;

	dust_ackz_init(&tx);
	dust_ackz_init(&rx);
	len = pkt(p, &A, &b);
	dust_ackz_note(&tx, p, len);
	dust_ackz_note(&rx, p, len);
	s = next_ack(&b);
	s.id = (uint16_t)(s.id + 5);
	len = pkt(p, &A, &s);
	n = dust_ackz_compress(&tx, p, len, zb);
	CHECK_EQ(n, DUST_ACKZ_MIN);
	CHECK_EQ(dust_ackz_expand(&rx, zb, n, q, sizeof(q)), len);
	CHECK_EQ(q[4] << 8 | q[5], b.id + 1);
	CHECK_EQ(ref_fold(ref_sum(q, 20)), 0xffff);
	CHECK(!memcmp(q, p, 4) && !memcmp(q + 6, p + 6, 4) && !memcmp(q + 12, p + 12, len - 12));
	CHECK(!memcmp(&tx, &rx, sizeof(tx))); /* the sender keeps the ID the receiver rebuilt */
	b.frag = 0;
	s = next_ack(&b);
	CHECK(after(&A, &b, &A, &s, zb) > 0);
	s.id = (uint16_t)(s.id + 1);
	CHECK_EQ(after(&A, &b, &A, &s, zb), 0);
	s.id = b.id;
	CHECK_EQ(after(&A, &b, &A, &s, zb), 0);
}

static void test_not_compressible(void)
{
	struct seg b = first_ack(), s;
	struct flow other;
	uint8_t zb[DUST_ACKZ_MAX];

	s = next_ack(&b);
	CHECK(after(&A, &b, &A, &s, zb) > 0); /* unspoilt */
	for (size_t k = 0; k < CHECK_COUNT(spoilt); k++) {
		s = next_ack(&b);
		spoil(&s, &spoilt[k].d);
		if (after(&A, &b, &A, &s, zb) != 0) {
			fprintf(stderr, "  compressed: %s\n", spoilt[k].why);
			CHECK(0);
		}
	}
	/* the first packet of a connection: nothing in its slot */
	{
		struct dust_ackz z;
		uint8_t p[PKT_MAX];

		dust_ackz_init(&z);
		CHECK_EQ(dust_ackz_compress(&z, p, pkt(p, &A, &b), zb), 0);
	}
	/* its slot holds another connection */
	other = collider(&A);
	s = next_ack(&b);
	CHECK_EQ(after(&other, &b, &A, &s, zb), 0);
}

/* ---- loss ---- */

/* Compressed by tx (the receiver sees it or not); its bytes in p, its length in *len. */
static size_t zip(struct dust_ackz *tx, const struct seg *s, const struct flow *f, uint8_t *p,
                  size_t *len, uint8_t zb[DUST_ACKZ_MAX])
{
	*len = pkt(p, f, s);
	return dust_ackz_compress(tx, p, *len, zb);
}

/* A context pair that both noted b. */
static void pair(struct dust_ackz *tx, struct dust_ackz *rx, const struct flow *f,
                 const struct seg *b)
{
	uint8_t p[PKT_MAX];
	size_t len = pkt(p, f, b);

	dust_ackz_init(tx);
	dust_ackz_init(rx);
	dust_ackz_note(tx, p, len);
	dust_ackz_note(rx, p, len);
}

/*
 * The receiver misses a compressed ACK: the next one rebuilds the right
 * TCP segment (the LSB ranges cover both steps, and it sends each field the
 * lost one changed). The IP ID, not sent, comes out one behind where it
 * counts (0 stays 0), the header checksum computed for it.
 */
static void lost_ack(uint16_t id)
{
	struct dust_ackz tx, rx;
	struct seg b = first_ack(), s1, s2;
	uint8_t p[PKT_MAX], q[64], zb[DUST_ACKZ_MAX];
	size_t len, n;

	b.id = id;
	pair(&tx, &rx, &A, &b);
	s1 = next_ack(&b);
	s1.ack += 30000, s1.tsval += 1, s1.tsecr += 1;
	CHECK(zip(&tx, &s1, &A, p, &len, zb) > 0); /* lost */
	s2 = next_ack(&s1);
	s2.ack += 30000, s2.tsval += 2, s2.tsecr += 3;
	n = zip(&tx, &s2, &A, p, &len, zb);
	CHECK_EQ(n, 7);
	CHECK_EQ(dust_ackz_expand(&rx, zb, n, q, sizeof(q)), len);
	CHECK(!memcmp(q + 20, p + 20, len - 20)); /* the TCP segment */
	CHECK(!memcmp(q, p, 4) && !memcmp(q + 6, p + 6, 4) && !memcmp(q + 12, p + 12, 8));
	CHECK_EQ(q[4] << 8 | q[5], id ? id + 1 : 0);
	CHECK_EQ(ref_fold(ref_sum(q, 20)), 0xffff);
	rx.slot[dust_ackz_slot_of(p, len)].ipid = tx.slot[dust_ackz_slot_of(p, len)].ipid;
	CHECK(!memcmp(&rx, &tx, sizeof(rx))); /* all but the IP ID in step */
}

/*
 * The receiver misses s1, compressed, then gets s2: what it rebuilds fails
 * the checksum, and its context stays as it was.
 */
/*
 * The receiver misses the compressed ACKs lost[0..nlost), then gets s: it
 * rebuilds s exactly (ok), or what it rebuilds fails the checksum and its
 * context stays as it was.
 */
static void lost_then(const struct seg *lost, int nlost, const struct seg *s, bool ok)
{
	struct dust_ackz tx, rx, was;
	struct seg b = first_ack();
	uint8_t p[PKT_MAX], q[64], zb[DUST_ACKZ_MAX];
	size_t len, n;

	pair(&tx, &rx, &A, &b);
	for (int i = 0; i < nlost; i++)
		CHECK(zip(&tx, &lost[i], &A, p, &len, zb) > 0);
	n = zip(&tx, s, &A, p, &len, zb);
	CHECK(n > 0);
	memcpy(&was, &rx, sizeof(rx));
	if (ok) {
		CHECK_EQ(dust_ackz_expand(&rx, zb, n, q, sizeof(q)), len);
		CHECK(!memcmp(q + 20, p + 20, len - 20)); /* the TCP segment (the IP ID lags) */
		return;
	}
	CHECK_EQ(dust_ackz_expand(&rx, zb, n, q, sizeof(q)), -EBADMSG);
	CHECK(!memcmp(&rx, &was, sizeof(rx)));
}

/*
 * A window or timestamp that a lost ACK changed: sent again in the next
 * DUST_ACKZ_REPEAT, so the receiver bridges that many losses in a row and
 * no more. Beyond: ACKs that advance 2^16 or more together. Dropped, as a
 * lost ACK, never delivered wrong.
 */
static void lost_beyond(void)
{
	struct seg b = first_ack(), run[DUST_ACKZ_REPEAT + 1], s;

	for (int field = 0; field < 3; field++) {
		for (int k = 0; k <= DUST_ACKZ_REPEAT; k++) {
			run[k] = next_ack(k ? &run[k - 1] : &b);
			run[k].ack += 10;
			if (k == 0 && field == 0)
				run[k].win = 600;
			if (k == 0 && field == 1)
				run[k].tsval += 1;
			if (k == 0 && field == 2)
				run[k].tsecr += 1;
		}
		for (int lost = 1; lost <= DUST_ACKZ_REPEAT + 1; lost++) {
			s = next_ack(&run[lost - 1]);
			s.ack += 10;
			lost_then(run, lost, &s, lost <= DUST_ACKZ_REPEAT);
		}
	}
	run[0] = next_ack(&b);
	run[0].ack += 40000;
	s = next_ack(&run[0]);
	s.ack += 40000;
	lost_then(run, 1, &s, false);
}

/*
 * The receiver misses the full packet that put another connection in the
 * slot: the next compressed ACK, rebuilt from the old connection, fails its
 * checksum and leaves the receiver's context as it was.
 */
static void lost_collision(void)
{
	struct dust_ackz tx, rx, was;
	struct flow B = collider(&A);
	struct seg a = first_ack(), b;
	uint8_t p[PKT_MAX], q[64], zb[DUST_ACKZ_MAX];
	size_t len, n;

	pair(&tx, &rx, &A, &a);
	a = next_ack(&a);
	a.ack += 100;
	n = zip(&tx, &a, &A, p, &len, zb);
	CHECK(n > 0);
	CHECK_EQ(dust_ackz_expand(&rx, zb, n, q, sizeof(q)), len); /* delivered */
	b = first_ack();
	b.seq = 77, b.ack = 0x01000000;
	CHECK_EQ(zip(&tx, &b, &B, p, &len, zb), 0); /* whole, lost */
	b = next_ack(&b);
	b.ack += 100;
	n = zip(&tx, &b, &B, p, &len, zb);
	CHECK(n > 0);
	memcpy(&was, &rx, sizeof(rx));
	CHECK_EQ(dust_ackz_expand(&rx, zb, n, q, sizeof(q)), -EBADMSG);
	CHECK(!memcmp(&rx, &was, sizeof(rx)));
}

static void test_loss(void)
{
	lost_ack(0x4d2);
	lost_ack(0); /* Linux's DF packets: byte for byte */
	lost_beyond();
	lost_collision();
}

/* ---- bad input to expand ---- */

/* expand of zb[0..zlen) into cap bytes returns want and leaves z as it was. */
static void expand_fails(struct dust_ackz *z, const uint8_t *zb, size_t zlen, size_t cap, int want)
{
	struct dust_ackz was;
	uint8_t q[64];

	memcpy(&was, z, sizeof(was));
	CHECK_EQ(dust_ackz_expand(z, zb, zlen, q, cap), want);
	CHECK(!memcmp(z, &was, sizeof(was)));
}

static void test_expand_bad(void)
{
	static const uint8_t kinds[] = {0x00, 0x45, 0x60, 0xc0, 0x3f, 0xff};
	struct dust_ackz tx, rx;
	struct seg b = first_ack(), s;
	uint8_t p[PKT_MAX], q[64], zb[16] = {0}, bad[16];
	size_t len, n;

	pair(&tx, &rx, &A, &b);
	s = next_ack(&b);
	s.ack += 5;
	n = zip(&tx, &s, &A, p, &len, zb);
	CHECK_EQ(n, 5);
	for (size_t zlen = 0; zlen < 5; zlen++)
		expand_fails(&rx, zb, zlen, sizeof(q), -EINVAL);
	for (size_t i = 0; i < sizeof(kinds); i++) {
		memcpy(bad, zb, sizeof(bad));
		bad[0] = kinds[i];
		expand_fails(&rx, bad, DUST_ACKZ_MAX, sizeof(q), -EINVAL);
	}
	memcpy(bad, zb, sizeof(bad));
	bad[0] |= 0x20; /* a window: 7 bytes */
	expand_fails(&rx, bad, 6, sizeof(q), -EINVAL);
	bad[0] |= 0x18; /* and both timestamps: 9 */
	expand_fails(&rx, bad, 8, sizeof(q), -EINVAL);
	memcpy(bad, zb, sizeof(bad));
	bad[0] ^= 1; /* a slot that holds nothing */
	expand_fails(&rx, bad, n, sizeof(q), -ENOENT);
	expand_fails(&rx, zb, n, 51, -EMSGSIZE); /* NOP NOP TS: 52 bytes */
	for (size_t i = 1; i < 5; i++) {
		memcpy(bad, zb, sizeof(bad));
		bad[i] ^= 0x04;
		expand_fails(&rx, bad, n, sizeof(q), -EBADMSG);
	}
	/* padding after the fields is ignored */
	CHECK_EQ(dust_ackz_expand(&rx, zb, sizeof(zb), q, 52), len);
	CHECK(!memcmp(q, p, len));

	/* no options: 40 bytes; timestamps for it mean another connection */
	b.ts = false;
	pair(&tx, &rx, &A, &b);
	s = next_ack(&b);
	n = zip(&tx, &s, &A, p, &len, zb);
	CHECK_EQ(n, 5);
	expand_fails(&rx, zb, n, 39, -EMSGSIZE);
	memcpy(bad, zb, sizeof(bad));
	bad[0] |= 0x10;
	expand_fails(&rx, bad, 6, sizeof(q), -EBADMSG);
	CHECK_EQ(dust_ackz_expand(&rx, zb, n, q, 40), 40);
	CHECK(!memcmp(q, p, len));
}

static const struct check_test tests[] = {
    {"ipid", test_ipid},
    {"ackz_slot_of", test_slot_of},
    {"ackz_roundtrip", test_roundtrip},
    {"ackz_note", test_note},
    {"ackz_note_ignores", test_note_ignores},
    {"ackz_sizes", test_sizes},
    {"ackz_seq_next", test_seq_next},
    {"ackz_not_compressible", test_not_compressible},
    {"ackz_loss", test_loss},
    {"ackz_expand_bad", test_expand_bad},
};

CHECK_MAIN(tests, NULL)
