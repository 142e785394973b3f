/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Compressed inner TCP ACKs (ackz.h, SPEC.md §12.4): the sender's context
 * and compressor, the receiver's expander. Bytes only, read byte-wise: the
 * inner packet may sit at any alignment in its datagram.
 */
#include <errno.h>
#include <string.h>

#include "ackz.h"
#include "dust_pvt.h"

enum {
	IP4_HDR = 20,
	TCP_HDR = 20,
	TS_HDR = TCP_HDR + 12, /* NOP NOP TS: data offset 8 */
	PROTO_TCP = 6,
	IP_DF = 0x4000,
	IP_FRAG = 0x3fff, /* MF and the fragment offset */
	TCP_FIN = 0x01,
	TCP_SYN = 0x02,
	TCP_ACK = 0x10,
	Z_WIN = 0x20, /* byte 0's flags: window, TSval, TSecr follow */
	Z_TSVAL = 0x10,
	Z_TSECR = 0x08,
	Z_SLOT = 0x07,
};

static const uint8_t ts_layout[4] = {1, 1, 8, 10}; /* NOP NOP kind 8 length 10 */

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)be16(p) << 16 | be16(p + 2);
}

static void be16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void be32_put(uint8_t *p, uint32_t v)
{
	be16_put(p, (uint16_t)(v >> 16));
	be16_put(p + 2, (uint16_t)v);
}

/* One's complement sum of p[0..len) (len even) as big-endian words, added to sum. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i += 2)
		sum += be16(p + i);
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The header checksum of the IPv4 header ip[0..20), as its field should hold it. */
static uint16_t ip4_csum(const uint8_t *ip)
{
	return (uint16_t)~csum_fold(csum_add(csum_add(0, ip, 10), ip + 12, IP4_HDR - 12));
}

/*
 * Whether the TCP checksum of the pure ACK ip[0..len) (IHL 5, no payload:
 * an even length) verifies over its pseudo-header.
 */
static bool tcp_csum_ok(const uint8_t *ip, size_t len)
{
	uint32_t sum = csum_add(0, ip + 12, 8) + PROTO_TCP + (uint32_t)(len - IP4_HDR);

	return csum_fold(csum_add(sum, ip + IP4_HDR, len - IP4_HDR)) == 0xffff;
}

/*
 * An IP ID counts up by one per packet; 0 stays 0 (DF packets sent without
 * one). A DF packet's ID is not compared: an atomic datagram's ID means
 * nothing (RFC 6864 §4.1), and Linux counts the ACKs that thinning left out
 * (SPEC §9.2) in it; it is rebuilt as the count would go.
 */
static uint16_t ipid_next(uint16_t id)
{
	return id ? (uint16_t)(id + 1) : 0;
}

/* TCP header length of ip[0..len) if note takes it (IPv4 TCP, IHL 5, no fragment); else 0. */
static size_t tcp4_hl(const uint8_t *ip, size_t len)
{
	size_t hl;

	if (len < IP4_HDR + TCP_HDR || ip[0] != 0x45 || be16(ip + 2) != len ||
	    (be16(ip + 6) & IP_FRAG) || ip[9] != PROTO_TCP)
		return 0;
	hl = (size_t)(ip[IP4_HDR + 12] >> 4) * 4;
	return hl >= TCP_HDR && IP4_HDR + hl <= len ? hl : 0;
}

static bool ts_options(const uint8_t *tcp, size_t hl)
{
	return hl == TS_HDR && !memcmp(tcp + TCP_HDR, ts_layout, sizeof(ts_layout));
}

/* A field's repeats after a packet: all of them when it changed, else one fewer. */
static uint8_t repeats(bool changed, uint8_t left)
{
	return changed ? DUST_ACKZ_REPEAT : (uint8_t)(left ? left - 1 : 0);
}

static void slot_fill(struct dust_ackz_slot *s, const uint8_t *ip, size_t len, size_t hl)
{
	const uint8_t *tcp = ip + IP4_HDR;
	uint32_t syn_fin = (tcp[13] & TCP_SYN ? 1u : 0u) + (tcp[13] & TCP_FIN ? 1u : 0u);
	struct dust_ackz_slot was = *s;
	bool same = was.used && !memcmp(was.addr, ip + 12, sizeof(was.addr)) &&
	            !memcmp(was.ports, tcp, sizeof(was.ports)) && was.has_ts == ts_options(tcp, hl);

	memset(s, 0, sizeof(*s)); /* padding too: contexts compare with memcmp */
	memcpy(s->addr, ip + 12, sizeof(s->addr));
	memcpy(s->ports, tcp, sizeof(s->ports));
	s->seq_next = be32(tcp + 4) + (uint32_t)(len - IP4_HDR - hl) + syn_fin;
	s->ack = be32(tcp + 8);
	s->win = be16(tcp + 14);
	s->ipid = be16(ip + 4);
	s->tos = ip[1];
	s->ttl = ip[8];
	s->df = !!(be16(ip + 6) & IP_DF);
	s->has_ts = ts_options(tcp, hl);
	if (s->has_ts) {
		s->tsval = be32(tcp + TCP_HDR + 4);
		s->tsecr = be32(tcp + TCP_HDR + 8);
	}
	s->used = 1;
	if (!same)
		return; /* a connection new to the slot: its next ACK is judged against this one */
	s->rep_win = repeats(s->win != was.win, was.rep_win);
	s->rep_tsval = repeats(s->tsval != was.tsval, was.rep_tsval);
	s->rep_tsecr = repeats(s->tsecr != was.tsecr, was.rep_tsecr);
}

DUST_EXPORT void dust_ackz_init(struct dust_ackz *z)
{
	memset(z, 0, sizeof(*z));
}

/* ip[20..24) are the ports of an IHL 5 packet, the only kind noted; too short: slot 0. */
DUST_EXPORT unsigned dust_ackz_slot_of(const uint8_t *ip, size_t len)
{
	uint32_t x;

	if (len < IP4_HDR + 4)
		return 0;
	x = be32(ip + 12) ^ be32(ip + 16) ^ be32(ip + IP4_HDR);
	x ^= x >> 16;
	x ^= x >> 8;
	return x % DUST_ACKZ_SLOTS;
}

DUST_EXPORT void dust_ackz_note(struct dust_ackz *z, const uint8_t *ip, size_t len)
{
	size_t hl = tcp4_hl(ip, len);

	if (hl)
		slot_fill(&z->slot[dust_ackz_slot_of(ip, len)], ip, len, hl);
}

/*
 * The packet alone is one expand can rebuild: a pure ACK (flags ACK alone,
 * reserved bits clear, urgent pointer 0, no payload) with no options or
 * NOP NOP TS, no IP flag but DF, and checksums that hold: the receiver
 * computes the header's and checks the TCP one, so a packet with either
 * wrong goes whole (a sender whose checksums are left to offload then
 * loses compression, not its ACKs).
 */
static bool pure_ack(const uint8_t *ip, size_t len, size_t hl)
{
	const uint8_t *tcp = ip + IP4_HDR;

	return len == IP4_HDR + hl && tcp[13] == TCP_ACK && !(tcp[12] & 0x0f) && !be16(tcp + 18) &&
	       (hl == TCP_HDR || ts_options(tcp, hl)) && !(be16(ip + 6) & ~IP_DF) &&
	       be16(ip + 10) == ip4_csum(ip) && tcp_csum_ok(ip, len);
}

/* The slot holds ip's connection, and ip follows its last packet within the LSB ranges. */
static bool follows(const struct dust_ackz_slot *s, const uint8_t *ip, size_t hl)
{
	const uint8_t *tcp = ip + IP4_HDR;

	if (!s->used || memcmp(s->addr, ip + 12, sizeof(s->addr)) ||
	    memcmp(s->ports, tcp, sizeof(s->ports)))
		return false;
	if (ip[1] != s->tos || ip[8] != s->ttl || !!(be16(ip + 6) & IP_DF) != s->df ||
	    (hl == TS_HDR) != s->has_ts || (!s->df && be16(ip + 4) != ipid_next(s->ipid)))
		return false;
	if (be32(tcp + 4) != s->seq_next || be32(tcp + 8) - s->ack > 0xffff)
		return false;
	return hl != TS_HDR || (be32(tcp + TCP_HDR + 4) - s->tsval <= 0xff &&
	                        be32(tcp + TCP_HDR + 8) - s->tsecr <= 0xff);
}

/* The compressed form of ip (follows its slot s, the slot's index slot); its length. */
static size_t encode(const struct dust_ackz_slot *s, unsigned slot, const uint8_t *ip, size_t hl,
                     uint8_t *out)
{
	const uint8_t *tcp = ip + IP4_HDR;
	size_t n = DUST_ACKZ_MIN;

	out[0] = (uint8_t)(DUST_ACKZ_KIND | slot);
	memcpy(out + 1, tcp + 16, 2); /* checksum */
	memcpy(out + 3, tcp + 10, 2); /* the ACK's low 16 bits */
	if (be16(tcp + 14) != s->win || s->rep_win) {
		out[0] |= Z_WIN;
		memcpy(out + n, tcp + 14, 2);
		n += 2;
	}
	if (hl == TS_HDR && (be32(tcp + TCP_HDR + 4) != s->tsval || s->rep_tsval)) {
		out[0] |= Z_TSVAL;
		out[n++] = tcp[TCP_HDR + 7];
	}
	if (hl == TS_HDR && (be32(tcp + TCP_HDR + 8) != s->tsecr || s->rep_tsecr)) {
		out[0] |= Z_TSECR;
		out[n++] = tcp[TCP_HDR + 11];
	}
	return n;
}

DUST_EXPORT size_t dust_ackz_compress(struct dust_ackz *z, const uint8_t *ip, size_t len,
                                      uint8_t out[DUST_ACKZ_MAX])
{
	size_t hl = tcp4_hl(ip, len), n = 0;
	unsigned slot;
	uint16_t id;

	if (!hl)
		return 0;
	slot = dust_ackz_slot_of(ip, len);
	if (pure_ack(ip, len, hl) && follows(&z->slot[slot], ip, hl))
		n = encode(&z->slot[slot], slot, ip, hl, out);
	id = ipid_next(z->slot[slot].ipid);
	slot_fill(&z->slot[slot], ip, len, hl);
	/* a DF packet's ID is not sent: keep the one the receiver rebuilds, as it does */
	if (n && z->slot[slot].df)
		z->slot[slot].ipid = id;
	return n;
}

/* The length of the compressed ACK whose byte 0 is b. */
static size_t zlen_of(uint8_t b)
{
	return DUST_ACKZ_MIN + (b & Z_WIN ? 2u : 0u) + (b & Z_TSVAL ? 1u : 0u) +
	       (b & Z_TSECR ? 1u : 0u);
}

static void ip4_rebuild(const struct dust_ackz_slot *s, uint8_t *ip, size_t len)
{
	memset(ip, 0, IP4_HDR);
	ip[0] = 0x45;
	ip[1] = s->tos;
	be16_put(ip + 2, (uint16_t)len);
	be16_put(ip + 4, ipid_next(s->ipid));
	be16_put(ip + 6, s->df ? IP_DF : 0);
	ip[8] = s->ttl;
	ip[9] = PROTO_TCP;
	memcpy(ip + 12, s->addr, sizeof(s->addr));
	be16_put(ip + 10, ip4_csum(ip));
}

/* Each field the value with the sent low bits in [slot's, slot's + 2^bits). */
static void tcp_rebuild(const struct dust_ackz_slot *s, const uint8_t *zb, uint8_t *tcp)
{
	size_t o = DUST_ACKZ_MIN;
	uint16_t win = s->win;
	uint32_t tsval = s->tsval, tsecr = s->tsecr;

	if (zb[0] & Z_WIN) {
		win = be16(zb + o);
		o += 2;
	}
	if (zb[0] & Z_TSVAL)
		tsval += (uint8_t)(zb[o++] - s->tsval);
	if (zb[0] & Z_TSECR)
		tsecr += (uint8_t)(zb[o++] - s->tsecr);
	memset(tcp, 0, TCP_HDR);
	memcpy(tcp, s->ports, sizeof(s->ports));
	be32_put(tcp + 4, s->seq_next);
	be32_put(tcp + 8, s->ack + (uint16_t)(be16(zb + 3) - s->ack));
	tcp[12] = (uint8_t)((s->has_ts ? TS_HDR : TCP_HDR) / 4 << 4);
	tcp[13] = TCP_ACK;
	be16_put(tcp + 14, win);
	memcpy(tcp + 16, zb + 1, 2);
	if (s->has_ts) {
		memcpy(tcp + TCP_HDR, ts_layout, sizeof(ts_layout));
		be32_put(tcp + TCP_HDR + 4, tsval);
		be32_put(tcp + TCP_HDR + 8, tsecr);
	}
}

DUST_EXPORT int dust_ackz_expand(struct dust_ackz *z, const uint8_t *zb, size_t zlen, uint8_t *out,
                                 size_t cap)
{
	struct dust_ackz_slot *s;
	size_t len;

	if (zlen < DUST_ACKZ_MIN || (zb[0] & DUST_ACKZ_KIND_MASK) != DUST_ACKZ_KIND ||
	    zlen < zlen_of(zb[0]))
		return -EINVAL;
	s = &z->slot[zb[0] & Z_SLOT];
	if (!s->used)
		return -ENOENT;
	len = IP4_HDR + (s->has_ts ? TS_HDR : TCP_HDR);
	if (cap < len)
		return -EMSGSIZE;
	/* timestamps for a connection without: the slot holds another one */
	if (!s->has_ts && (zb[0] & (Z_TSVAL | Z_TSECR)))
		return -EBADMSG;
	ip4_rebuild(s, out, len);
	tcp_rebuild(s, zb, out + IP4_HDR);
	if (!tcp_csum_ok(out, len))
		return -EBADMSG;
	slot_fill(s, out, len, len - IP4_HDR);
	return (int)len;
}
