/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cover server's first-flight shape (app/dustgw/shape.c, SPEC §12.5):
 * long headers read from synthetic datagrams laid out as RFC 9000 §17.2
 * says (coalesced packets, tokens, Length), malformed ones refused; the
 * shape derived from lists of datagrams as caddy 2.6.2 sends them, and as
 * other servers might (no ACK first, no tail, no PTO in the window); the
 * clamp to what clients open; the packed word that workers read.
 */
#include <stdint.h>

#include "check.h"
#include "shape.h"

enum { T_INITIAL = 0, T_0RTT = 1, T_HANDSHAKE = 2, T_RETRY = 3 };

/* Field by field: the struct has padding, which memcmp would read. */
static bool shape_eq(const struct dgw_shape *a, const struct dgw_shape *b)
{
	return a->answer == b->answer && a->tail_min == b->tail_min && a->tail_max == b->tail_max &&
	       a->pto_ms == b->pto_ms && a->ack_first == b->ack_first &&
	       a->short_len == b->short_len && a->short_tail == b->short_tail &&
	       a->coalesce == b->coalesce;
}

/* A long-header packet of total bytes at p (4-byte SCID, empty DCID, 2-byte Length). */
static size_t pkt(uint8_t *p, unsigned type, size_t total)
{
	size_t h = 0, len;

	p[h++] = (uint8_t)(0xc0 | type << 4);
	p[h++] = 0, p[h++] = 0, p[h++] = 0, p[h++] = 1;
	p[h++] = 0; /* DCID */
	p[h++] = 4; /* SCID */
	memcpy(p + h, "\x11\x22\x33\x44", 4);
	h += 4;
	if (type == T_INITIAL)
		p[h++] = 0; /* token length */
	len = total - h - 2;
	p[h++] = (uint8_t)(0x40 | len >> 8);
	p[h++] = (uint8_t)len;
	memset(p + h, 0xa5, len);
	return total;
}

static uint8_t B[2048];

/* Parse a datagram built of packets of the given types and sizes. */
static struct dgw_shape_dg dg_of(const unsigned *types, const size_t *sizes, unsigned n,
                                 uint32_t t_ms)
{
	struct dgw_shape_dg d;
	size_t off = 0;

	for (unsigned i = 0; i < n; i++)
		off += types[i] == 9 ? (memset(B + off, 0x41, sizes[i]), sizes[i])
		                     : pkt(B + off, types[i], sizes[i]);
	CHECK(dgw_shape_dgram(B, off, &d));
	d.t_ms = t_ms;
	return d;
}

static struct dgw_shape_dg one(unsigned type, size_t size, uint32_t t_ms)
{
	return dg_of(&type, &size, 1, t_ms);
}

/*
 * An answer to a Chromium hello as caddy 2.6.2's looks at the datagram
 * level: ACK 37, 1252 (Initial+Handshake), the tail, and a 24-byte 1-RTT
 * datagram after tails under 125 B, none after the others (a server whose
 * longer tails come without one; quicgo_probe has caddy's own).
 */
static void caddy_probe(struct dgw_shape_probe *p, size_t tail, uint32_t pto)
{
	static const unsigned ih[] = {T_INITIAL, T_HANDSHAKE};
	static const size_t ihs[] = {150, 1102};

	memset(p, 0, sizeof(*p));
	p->dg[p->n++] = one(T_INITIAL, 37, 1);
	p->dg[p->n++] = dg_of(ih, ihs, 2, 1);
	p->dg[p->n++] = one(T_HANDSHAKE, tail, 2);
	if (tail < 125)
		p->dg[p->n++] = one(9, 24, 2); /* a short header */
	if (pto) {                             /* two 1252-byte Initials again on the PTO */
		p->dg[p->n++] = one(T_INITIAL, 1252, 2 + pto);
		p->dg[p->n++] = one(T_INITIAL, 1252, 2 + pto);
	}
}

/*
 * caddy 2.6.2's (quic-go's) own flights, as in
 * test/data/chromium156-caddy-loads.pcap: the tail is a Handshake packet of
 * hs bytes (105..120), its 24-byte 1-RTT packet after it either in a
 * datagram of its own or coalesced behind it (the 131..141-byte tails).
 */
static void quicgo_probe(struct dgw_shape_probe *p, size_t hs, bool coalesced)
{
	static const unsigned ih[] = {T_INITIAL, T_HANDSHAKE}, hs1[] = {T_HANDSHAKE, 9};
	static const size_t ihs[] = {150, 1102};
	size_t sizes[] = {hs, 24};

	memset(p, 0, sizeof(*p));
	p->dg[p->n++] = one(T_INITIAL, 37, 1);
	p->dg[p->n++] = dg_of(ih, ihs, 2, 1);
	if (coalesced) {
		p->dg[p->n++] = dg_of(hs1, sizes, 2, 2);
	} else {
		p->dg[p->n++] = one(T_HANDSHAKE, hs, 2);
		p->dg[p->n++] = one(9, 24, 2);
	}
}

/* The headers of each kind, coalesced packets counted, the lengths checked. */
static void test_parse(void)
{
	static const unsigned ih[] = {T_INITIAL, T_HANDSHAKE};
	static const size_t ihs[] = {150, 1102};
	struct dgw_shape_dg d;

	d = dg_of(ih, ihs, 2, 0);
	CHECK_EQ(d.len, 1252);
	CHECK_EQ(d.first, DGW_QK_INITIAL);
	CHECK_EQ(d.kinds, DGW_QK_INITIAL | DGW_QK_HANDSHAKE);
	CHECK_EQ(d.npkts, 2);
	d = one(T_HANDSHAKE, 118, 0);
	CHECK(d.first == DGW_QK_HANDSHAKE && d.npkts == 1 && d.len == 118);
	d = one(T_0RTT, 300, 0);
	CHECK_EQ(d.first, DGW_QK_0RTT);
	d = one(9, 24, 0);
	CHECK(d.first == DGW_QK_SHORT && d.npkts == 1);
	/* Version Negotiation (version 0) and another version: the rest is theirs */
	pkt(B, T_INITIAL, 40);
	B[4] = 0;
	CHECK(dgw_shape_dgram(B, 40, &d) && d.first == DGW_QK_VN);
	B[4] = 2;
	CHECK(dgw_shape_dgram(B, 40, &d) && d.first == DGW_QK_OTHER);
	/* Retry takes the rest of the datagram */
	pkt(B, T_RETRY, 60);
	CHECK(dgw_shape_dgram(B, 60, &d) && d.first == DGW_QK_RETRY && d.npkts == 1);
}

/* Lengths past the datagram, a CID over 20, a token past the end: refused. */
static void test_malformed(void)
{
	struct dgw_shape_dg d;

	CHECK(!dgw_shape_dgram(B, 0, &d));
	pkt(B, T_INITIAL, 100);
	CHECK(!dgw_shape_dgram(B, 99, &d)); /* Length says 100 */
	CHECK(!dgw_shape_dgram(B, 4, &d));  /* no version */
	CHECK(!dgw_shape_dgram(B, 6, &d));  /* no SCID length */
	CHECK(!dgw_shape_dgram(B, 12, &d)); /* no token length */
	B[6] = 21;                          /* SCID of 21 bytes */
	CHECK(!dgw_shape_dgram(B, 100, &d));
	pkt(B, T_INITIAL, 100);
	B[11] = 0x40 | 0x3f, B[12] = 0xff; /* a token of 16383 bytes */
	CHECK(!dgw_shape_dgram(B, 100, &d));
	/* a good first packet, a bad second: what was read stands */
	pkt(B, T_INITIAL, 100);
	pkt(B + 100, T_HANDSHAKE, 100);
	CHECK(dgw_shape_dgram(B, 150, &d) && d.npkts == 1 && d.kinds == DGW_QK_INITIAL);
}

/* Four caddy answers: its sizes, its ACK first, its tails' spread, its PTO. */
static void test_derive_caddy(void)
{
	static const size_t tails[] = {118, 105, 141, 130};
	struct dgw_shape_probe p[4];
	struct dgw_shape cur = {.answer = 1240, .tail_min = 300, .tail_max = 320, .pto_ms = 500};
	struct dgw_shape got;

	for (unsigned i = 0; i < 4; i++)
		caddy_probe(&p[i], tails[i], i == 2 ? 0 : 205 + i);
	CHECK_EQ(dgw_shape_derive(p, 4, &cur, &got), 4);
	CHECK_EQ(got.answer, 1252);
	CHECK_EQ(got.tail_min, 105);
	CHECK_EQ(got.tail_max, 141);
	CHECK(got.ack_first);
	CHECK_EQ(got.pto_ms, 205); /* the shortest; the probe with none says nothing */
	/* the 1-RTT after tails 118 and 105, not after 130 and 141: halfway */
	CHECK_EQ(got.short_len, 24);
	CHECK_EQ(got.short_tail, 124);
	CHECK_EQ(dgw_shape_clamp(&got), 0);
}

/*
 * caddy's own flights: the tail learned is the Handshake packet's size, a
 * 1-RTT coalesced behind it counts as one after it. Reading the datagram's
 * size instead learned tails to 141 B whose Handshake packet alone filled
 * them, which caddy never sends (its Length field shows it), and no 1-RTT
 * after those.
 */
static void test_derive_coalesced(void)
{
	struct dgw_shape_probe p[4];
	struct dgw_shape cur, got;
	struct dgw_shape_dg d;

	quicgo_probe(&p[0], 117, true); /* a 141-byte datagram */
	d = p[0].dg[2];
	CHECK(d.len == 141 && d.first_len == 117 && d.npkts == 2 &&
	      d.kinds == (DGW_QK_HANDSHAKE | DGW_QK_SHORT));
	quicgo_probe(&p[1], 107, true);  /* 131 */
	quicgo_probe(&p[2], 105, false); /* 105, then 24 */
	quicgo_probe(&p[3], 120, false);
	dgw_shape_default(&cur);
	cur.tail_min = 300, cur.tail_max = 320, cur.short_len = 0;
	CHECK_EQ(dgw_shape_derive(p, 4, &cur, &got), 4);
	CHECK(got.tail_min == 105 && got.tail_max == 120);
	CHECK(got.short_len == 24 && got.short_tail == 120); /* after every tail */
	CHECK_EQ(got.coalesce, 2); /* 2 of 4 coalesced: the nearest third */
	CHECK_EQ(dgw_shape_clamp(&got), 0);
	/* coalesced only: the same, always coalesced */
	quicgo_probe(&p[2], 112, true);
	quicgo_probe(&p[3], 109, true);
	CHECK_EQ(dgw_shape_derive(p, 4, &cur, &got), 4);
	CHECK(got.tail_min == 107 && got.tail_max == 117 && got.short_len == 24);
	CHECK_EQ(got.coalesce, 3);
	/* one of four: a third; none: never */
	quicgo_probe(&p[1], 107, false);
	quicgo_probe(&p[2], 112, false);
	quicgo_probe(&p[3], 109, false);
	CHECK_EQ(dgw_shape_derive(p, 4, &cur, &got), 4);
	CHECK_EQ(got.coalesce, 1);
	quicgo_probe(&p[0], 117, false);
	CHECK_EQ(dgw_shape_derive(p, 4, &cur, &got), 4);
	CHECK_EQ(got.coalesce, 0);
	quicgo_probe(&p[0], 117, true);
	/* a big 1-RTT coalesced behind the tail is data, not the small one */
	{
		static const unsigned t[] = {T_HANDSHAKE, 9};
		static const size_t sz[] = {110, 64};

		p[0].dg[2] = dg_of(t, sz, 2, 2);
		CHECK_EQ(dgw_shape_derive(p, 1, &cur, &got), 1);
		CHECK(got.tail_min == 110 && got.tail_max == 110 && got.short_len == 0);
	}
}

/* The short datagram: after every tail, after none, after tails that do not separate. */
static void test_derive_short(void)
{
	struct dgw_shape_probe p[3];
	struct dgw_shape cur, got;

	dgw_shape_default(&cur);
	for (unsigned i = 0; i < 3; i++)
		caddy_probe(&p[i], 100 + i, 0);
	CHECK_EQ(dgw_shape_derive(p, 3, &cur, &got), 3);
	CHECK(got.short_len == 24 && got.short_tail == 124); /* every tail, within cur's: cur's */
	cur.short_tail = 90;
	CHECK_EQ(dgw_shape_derive(p, 3, &cur, &got), 3);
	CHECK(got.short_len == 24 && got.short_tail == 102); /* past cur's: all of them */
	cur.short_len = 0;
	CHECK_EQ(dgw_shape_derive(p, 3, &cur, &got), 3);
	CHECK(got.short_len == 24 && got.short_tail == 102); /* cur had none */
	dgw_shape_default(&cur);
	for (unsigned i = 0; i < 3; i++)
		caddy_probe(&p[i], 130 + i, 0);
	CHECK_EQ(dgw_shape_derive(p, 3, &cur, &got), 3);
	CHECK(got.short_len == 24 && got.short_tail == 124); /* none, all past cur's: cur's */
	cur.short_tail = 131;
	CHECK_EQ(dgw_shape_derive(p, 3, &cur, &got), 3);
	CHECK(got.short_len == 0 && got.short_tail == 0); /* none where cur's wanted one: never */
	dgw_shape_default(&cur);
	caddy_probe(&p[0], 110, 0);
	caddy_probe(&p[1], 100, 0);
	p[1].n--; /* a tail under one that had a 1-RTT, without: up to the largest with */
	p[2].dg[p[2].n++] = one(9, 30, 3);
	CHECK_EQ(dgw_shape_derive(p, 3, &cur, &got), 3);
	CHECK(got.short_len == 24 && got.short_tail == 132); /* 110 and 132 had one */
	/* a 1-RTT past the first burst is not the flight's */
	caddy_probe(&p[0], 130, 0);
	p[0].dg[p[0].n++] = one(9, 24, 2 + DGW_SHAPE_BURST_MS + 1);
	CHECK_EQ(dgw_shape_derive(p, 1, &cur, &got), 1);
	CHECK(got.short_len == 24 && got.short_tail == 124); /* taken, it would reach 130 */
}

/* Another server: no ACK-only Initial, no tail, no PTO in the window; what it did not show stays.
 */
static void test_derive_other(void)
{
	struct dgw_shape_probe p[3];
	struct dgw_shape cur, got;

	dgw_shape_default(&cur);
	memset(p, 0, sizeof(p));
	for (unsigned i = 0; i < 3; i++) {
		p[i].dg[p[i].n++] = one(T_INITIAL, i == 0 ? 1232 : 1240, 0);
		p[i].dg[p[i].n++] = one(9, 30, 1);
	}
	CHECK_EQ(dgw_shape_derive(p, 3, &cur, &got), 3);
	CHECK_EQ(got.answer, 1240); /* two of three */
	CHECK(!got.ack_first);
	CHECK(got.tail_min == cur.tail_min && got.tail_max == cur.tail_max);
	CHECK_EQ(got.pto_ms, cur.pto_ms);
	CHECK(got.short_len == cur.short_len && got.short_tail == cur.short_tail); /* no tail */
	/* a tie: the larger */
	p[2].dg[0] = one(T_INITIAL, 1232, 0);
	p[1].dg[0] = one(T_INITIAL, 1250, 0);
	CHECK_EQ(dgw_shape_derive(p, 2, &cur, &got), 2);
	CHECK_EQ(got.answer, 1250);
}

/* Nothing of a flight (no answer, junk, a Version Negotiation): 0, the shape unchanged. */
static void test_derive_none(void)
{
	struct dgw_shape_probe p[2];
	struct dgw_shape cur = {.answer = 1244, .tail_min = 70, .tail_max = 90, .pto_ms = 99};
	struct dgw_shape got;

	memset(p, 0, sizeof(p));
	CHECK_EQ(dgw_shape_derive(p, 2, &cur, &got), 0);
	CHECK(shape_eq(&got, &cur));
	p[0].dg[p[0].n++] = one(T_HANDSHAKE, 1252, 0); /* big, but no Initial first */
	p[1].dg[p[1].n++] = one(T_INITIAL, 1100, 0);   /* an Initial, under 1200 */
	CHECK_EQ(dgw_shape_derive(p, 2, &cur, &got), 0);
	CHECK(shape_eq(&got, &cur));
}

/* Out of what clients open: brought in, each change reported. */
static void test_clamp(void)
{
	struct dgw_shape s = {.answer = 1350, .tail_min = 40, .tail_max = 1300, .pto_ms = 9};

	CHECK_EQ(dgw_shape_clamp(&s), DGW_SHAPE_CL_ANSWER | DGW_SHAPE_CL_TAIL | DGW_SHAPE_CL_PTO);
	CHECK(s.answer == 1252 && s.tail_min == 64 && s.tail_max == 1199 && s.pto_ms == 50);
	s = (struct dgw_shape){.answer = 1100, .tail_min = 200, .tail_max = 100, .pto_ms = 3000};
	dgw_shape_clamp(&s);
	CHECK(s.answer == 1200 && s.tail_min == 200 && s.tail_max == 200 && s.pto_ms == 2000);
	s.short_len = 200;
	s.short_tail = 4000;
	CHECK_EQ(dgw_shape_clamp(&s), DGW_SHAPE_CL_SHORT);
	CHECK(s.short_len == 63 && s.short_tail == 1199);
	s.short_len = 5;
	CHECK_EQ(dgw_shape_clamp(&s), DGW_SHAPE_CL_SHORT);
	CHECK_EQ(s.short_len, 21);
	s.short_len = 0; /* never: stays */
	CHECK_EQ(dgw_shape_clamp(&s), 0);
	s.coalesce = 4;
	CHECK_EQ(dgw_shape_clamp(&s), DGW_SHAPE_CL_SHORT);
	CHECK_EQ(s.coalesce, 3);
}

/* The word workers read holds every field. */
static void test_pack(void)
{
	struct dgw_shape a = {.answer = 1252,
	                      .tail_min = 300,
	                      .tail_max = 1199,
	                      .pto_ms = 2000,
	                      .ack_first = true,
	                      .short_len = 63,
	                      .short_tail = 1199,
	                      .coalesce = 3};
	struct dgw_shape b;

	dgw_shape_unpack(dgw_shape_pack(&a), &b);
	CHECK(shape_eq(&a, &b));
	a.ack_first = false;
	a.short_len = 21;
	a.short_tail = 0;
	a.coalesce = 0;
	dgw_shape_unpack(dgw_shape_pack(&a), &b);
	CHECK(shape_eq(&a, &b));
	a.coalesce = 2;
	dgw_shape_unpack(dgw_shape_pack(&a), &b);
	CHECK(shape_eq(&a, &b));
	dgw_shape_default(&a);
	CHECK(a.answer == 1252 && a.tail_min == 105 && a.tail_max == 120 && a.pto_ms == 205 &&
	      a.ack_first && a.short_len == 24 && a.short_tail == 124 && a.coalesce == 1);
}

static const struct check_test tests[] = {
    {"parse", test_parse},
    {"malformed", test_malformed},
    {"derive_caddy", test_derive_caddy},
    {"derive_short", test_derive_short},
    {"derive_coalesced", test_derive_coalesced},
    {"derive_other", test_derive_other},
    {"derive_none", test_derive_none},
    {"clamp", test_clamp},
    {"pack", test_pack},
};

CHECK_MAIN(tests, NULL)
