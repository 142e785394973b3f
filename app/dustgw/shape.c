/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cover server's first-flight shape (shape.h, SPEC §12.3): its
 * datagrams' long headers read without keys, and the sizes, the ACK-only
 * Initial and the PTO derived from a few probes' answers. What it reads is
 * wire input from the kernel's server: every length is checked against the
 * datagram (test/fuzz/fuzz_shape.c).
 */
#include <string.h>

#include "shape.h"

enum {
	QUIC_V1 = 1,
	CID_MAX = 20, /* RFC 9000 §17.2 */
	PKTS_MAX = 8, /* coalesced packets read per datagram */
	PROBES_MAX = 16,
};

void dgw_shape_default(struct dgw_shape *sh)
{
	*sh = (struct dgw_shape){.answer = 1252,
	                         .tail_min = 105,
	                         .tail_max = 120,
	                         .pto_ms = 205,
	                         .ack_first = true,
	                         .short_len = 24,
	                         .short_tail = 124,
	                         .coalesce = 1};
}

static uint16_t clamp16(uint16_t v, uint16_t lo, uint16_t hi, unsigned bit, unsigned *changed)
{
	if (v >= lo && v <= hi)
		return v;
	*changed |= bit;
	return v < lo ? lo : hi;
}

unsigned dgw_shape_clamp(struct dgw_shape *sh)
{
	unsigned c = 0;

	sh->answer = clamp16(sh->answer, DGW_SHAPE_ANSWER_MIN, DGW_SHAPE_ANSWER_MAX,
	                     DGW_SHAPE_CL_ANSWER, &c);
	sh->tail_min =
	    clamp16(sh->tail_min, DGW_SHAPE_TAIL_LEAST, DGW_SHAPE_TAIL_MOST, DGW_SHAPE_CL_TAIL, &c);
	sh->tail_max =
	    clamp16(sh->tail_max, DGW_SHAPE_TAIL_LEAST, DGW_SHAPE_TAIL_MOST, DGW_SHAPE_CL_TAIL, &c);
	if (sh->tail_min > sh->tail_max) {
		sh->tail_max = sh->tail_min;
		c |= DGW_SHAPE_CL_TAIL;
	}
	sh->pto_ms =
	    clamp16(sh->pto_ms, DGW_SHAPE_PTO_MIN, DGW_SHAPE_PTO_MAX, DGW_SHAPE_CL_PTO, &c);
	if (sh->short_len)
		sh->short_len = (uint8_t)clamp16(sh->short_len, DGW_SHAPE_SHORT_LEAST,
		                                 DGW_SHAPE_SHORT_MOST, DGW_SHAPE_CL_SHORT, &c);
	if (sh->short_tail > DGW_SHAPE_TAIL_MOST) {
		sh->short_tail = DGW_SHAPE_TAIL_MOST;
		c |= DGW_SHAPE_CL_SHORT;
	}
	if (sh->coalesce > DGW_SHAPE_COALESCE_MAX) {
		sh->coalesce = DGW_SHAPE_COALESCE_MAX;
		c |= DGW_SHAPE_CL_SHORT;
	}
	return c;
}

/*
 * 11 bits each for the answer, the tails, the PTO and short_tail (all under
 * 2048 once clamped), 6 for short_len, 1 for the ACK, 2 for coalesce: 64 bits.
 */
uint64_t dgw_shape_pack(const struct dgw_shape *sh)
{
	return (uint64_t)(sh->answer & 0x7ff) | (uint64_t)(sh->tail_min & 0x7ff) << 11 |
	       (uint64_t)(sh->tail_max & 0x7ff) << 22 | (uint64_t)(sh->pto_ms & 0x7ff) << 33 |
	       (uint64_t)(sh->short_tail & 0x7ff) << 44 | (uint64_t)(sh->short_len & 0x3f) << 55 |
	       (uint64_t)sh->ack_first << 61 | (uint64_t)(sh->coalesce & 3) << 62;
}

void dgw_shape_unpack(uint64_t v, struct dgw_shape *sh)
{
	sh->answer = (uint16_t)(v & 0x7ff);
	sh->tail_min = (uint16_t)(v >> 11 & 0x7ff);
	sh->tail_max = (uint16_t)(v >> 22 & 0x7ff);
	sh->pto_ms = (uint16_t)(v >> 33 & 0x7ff);
	sh->short_tail = (uint16_t)(v >> 44 & 0x7ff);
	sh->short_len = (uint8_t)(v >> 55 & 0x3f);
	sh->ack_first = v >> 61 & 1;
	sh->coalesce = (uint8_t)(v >> 62 & 3);
}

/* ---- reading the cover server's datagrams ---- */

/* A QUIC variable-length integer at dg[*off] (RFC 9000 §16), within len. */
static bool varint(const uint8_t *dg, size_t len, size_t *off, uint64_t *v)
{
	size_t n;

	if (*off >= len)
		return false;
	n = (size_t)1 << (dg[*off] >> 6);
	if (n > len - *off)
		return false;
	*v = dg[*off] & 0x3f;
	for (size_t i = 1; i < n; i++)
		*v = *v << 8 | dg[*off + i];
	*off += n;
	return true;
}

/*
 * The packet at dg[off..len) (off < len): its kind, and where the next one
 * begins (len when it takes the rest: short headers, Retry, other versions).
 */
static bool packet(const uint8_t *dg, size_t len, size_t off, uint8_t *kind, size_t *next)
{
	size_t p = off + 5;
	uint64_t tok, plen;
	uint32_t ver;

	*next = len;
	if (!(dg[off] & 0x80)) {
		*kind = DGW_QK_SHORT;
		return true;
	}
	if (len - off < 5)
		return false;
	ver = (uint32_t)dg[off + 1] << 24 | (uint32_t)dg[off + 2] << 16 |
	      (uint32_t)dg[off + 3] << 8 | dg[off + 4];
	if (ver != QUIC_V1) {
		*kind = ver ? DGW_QK_OTHER : DGW_QK_VN;
		return true;
	}
	for (int i = 0; i < 2; i++) { /* DCID, SCID */
		uint8_t cil;

		if (p >= len)
			return false;
		cil = dg[p++];
		if (cil > CID_MAX || cil > len - p)
			return false;
		p += cil;
	}
	switch ((dg[off] >> 4) & 3) {
	case 0:
		*kind = DGW_QK_INITIAL;
		if (!varint(dg, len, &p, &tok) || tok > len - p)
			return false;
		p += (size_t)tok;
		break;
	case 1:
		*kind = DGW_QK_0RTT;
		break;
	case 2:
		*kind = DGW_QK_HANDSHAKE;
		break;
	default:
		*kind = DGW_QK_RETRY;
		return true;
	}
	if (!varint(dg, len, &p, &plen) || plen > len - p)
		return false;
	*next = p + (size_t)plen;
	return true;
}

bool dgw_shape_dgram(const uint8_t *dg, size_t len, struct dgw_shape_dg *out)
{
	size_t off = 0, next;
	uint8_t k;

	memset(out, 0, sizeof(*out));
	if (!len || len > UINT16_MAX)
		return false;
	out->len = (uint16_t)len;
	/* each packet moves off past its header at least: the walk ends */
	while (off < len && out->npkts < PKTS_MAX) {
		if (!packet(dg, len, off, &k, &next))
			return out->npkts > 0; /* a bad later packet ends the walk */
		if (!out->npkts) {
			out->first = k;
			out->first_len = (uint16_t)next;
		}
		out->kinds |= k;
		out->npkts++;
		off = next;
	}
	return true;
}

/* ---- deriving the shape ---- */

struct facts {
	uint16_t answer, tail, pto, shrt; /* shrt: the 1-RTT after the tail (or coalesced), or 0 */
	bool ack, coalesced;              /* coalesced: shrt rode behind the tail */
};

static bool is_answer(const struct dgw_shape_dg *d)
{
	return d->first == DGW_QK_INITIAL && d->len >= DGW_SHAPE_ANSWER_MIN;
}

static bool is_tail(const struct dgw_shape_dg *d)
{
	return d->first == DGW_QK_HANDSHAKE && !(d->kinds & DGW_QK_INITIAL);
}

static bool is_lone_ack(const struct dgw_shape_dg *d)
{
	return d->npkts == 1 && d->kinds == DGW_QK_INITIAL && d->len < DGW_SHAPE_ANSWER_MIN;
}

/* One probe's answer, tail, ACK and PTO; false if it had no answer. */
static bool probe_facts(const struct dgw_shape_probe *p, struct facts *f)
{
	unsigned a = 0, n = p->n < DGW_SHAPE_DG_MAX ? p->n : DGW_SHAPE_DG_MAX;
	uint32_t last;

	memset(f, 0, sizeof(*f));
	while (a < n && !is_answer(&p->dg[a]))
		a++;
	if (a == n)
		return false;
	f->answer = p->dg[a].len;
	f->ack = a > 0 && is_lone_ack(&p->dg[0]);
	last = p->dg[a].t_ms;
	for (unsigned i = a + 1; i < n; i++) {
		const struct dgw_shape_dg *d = &p->dg[i];

		if (d->t_ms >= last + DGW_SHAPE_BURST_MS) { /* the first burst is over */
			if (is_answer(d) && d->t_ms - last <= UINT16_MAX)
				f->pto = (uint16_t)(d->t_ms - last);
			break;
		}
		if (!f->tail && is_tail(d)) {
			f->tail = d->first_len;
			if (d->npkts == 2 && d->kinds == (DGW_QK_HANDSHAKE | DGW_QK_SHORT) &&
			    d->len - d->first_len <= DGW_SHAPE_SHORT_MOST) {
				f->shrt =
				    (uint16_t)(d->len - d->first_len); /* coalesced behind it */
				f->coalesced = true;
			}
		} else if (f->tail && !f->shrt && d->first == DGW_QK_SHORT && d->npkts == 1)
			f->shrt = d->len;
		if (d->t_ms > last)
			last = d->t_ms;
	}
	return true;
}

/* The answer size the most probes sent, the larger on a tie. */
static uint16_t answer_mode(const struct facts *f, unsigned n)
{
	unsigned best = 0;
	uint16_t size = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned c = 0;

		for (unsigned j = 0; j < n; j++)
			c += f[j].answer == f[i].answer;
		if (c > best || (c == best && f[i].answer > size)) {
			best = c;
			size = f[i].answer;
		}
	}
	return size;
}

/*
 * The short datagram after the tail (see dgw_shape_derive); only when some
 * probe had a tail. A side the probes did not show keeps *cur's rule where
 * the probes agree with it: four probes often show only one side.
 */
static void short_derive(const struct facts *f, unsigned n, const struct dgw_shape *cur,
                         struct dgw_shape *out)
{
	uint16_t len = UINT16_MAX, with = 0, without = UINT16_MAX;
	unsigned shorts = 0, coalesced = 0;

	for (unsigned i = 0; i < n; i++) {
		if (!f[i].tail)
			continue;
		if (f[i].shrt) {
			len = f[i].shrt < len ? f[i].shrt : len;
			with = f[i].tail > with ? f[i].tail : with;
			shorts++;
			coalesced += f[i].coalesced;
		} else if (f[i].tail < without) {
			without = f[i].tail;
		}
	}
	if (!with) { /* none seen: none, unless every tail was past cur's bound */
		if (!cur->short_len || without <= cur->short_tail) {
			out->short_len = 0;
			out->short_tail = 0;
		}
		return;
	}
	out->short_len = len > UINT8_MAX ? UINT8_MAX : (uint8_t)len;
	/* the nearest third: a round of four probes shows 0..4 of them coalesced */
	out->coalesce = (uint8_t)((3 * coalesced + shorts / 2) / shorts);
	if (without == UINT16_MAX) /* after every tail: up to cur's bound, if it reaches them */
		out->short_tail =
		    cur->short_len && cur->short_tail >= with ? cur->short_tail : with;
	else
		out->short_tail = without > with ? (uint16_t)((with + without) / 2) : with;
}

unsigned dgw_shape_derive(const struct dgw_shape_probe *p, unsigned n, const struct dgw_shape *cur,
                          struct dgw_shape *out)
{
	struct facts f[PROBES_MAX];
	unsigned ok = 0, acks = 0;
	uint16_t tmin = UINT16_MAX, tmax = 0, pto = UINT16_MAX;

	*out = *cur;
	for (unsigned i = 0; i < n && i < PROBES_MAX; i++)
		if (probe_facts(&p[i], &f[ok]))
			ok++;
	if (!ok)
		return 0;
	for (unsigned i = 0; i < ok; i++) {
		acks += f[i].ack;
		if (f[i].tail) {
			tmin = f[i].tail < tmin ? f[i].tail : tmin;
			tmax = f[i].tail > tmax ? f[i].tail : tmax;
		}
		if (f[i].pto && f[i].pto < pto)
			pto = f[i].pto;
	}
	out->answer = answer_mode(f, ok);
	out->ack_first = 2 * acks > ok;
	if (tmax) {
		out->tail_min = tmin;
		out->tail_max = tmax;
	}
	if (pto != UINT16_MAX)
		out->pto_ms = pto;
	if (tmax)
		short_derive(f, ok, cur, out);
	return ok;
}
