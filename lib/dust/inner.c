/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inner IP packets at a tunnel's size bound (SPEC.md §12.4): the TCP MSS
 * clamp on SYNs and the ICMP "fragmentation needed" / ICMPv6 "packet too
 * big" a router sends back. Bytes only, no sockets, no DPDK.
 */
#include <errno.h>
#include <string.h>

#include "dust_pvt.h"
#include "inner.h"

enum {
	IP4_HDR = 20,
	IP6_HDR = 40,
	ICMP_HDR = 8,
	TCP_HDR = 20,
	PROTO_ICMP = 1,
	PROTO_TCP = 6,
	PROTO_ICMPV6 = 58,
	TCP_SYN = 0x02,
	TCP_OPT_END = 0,
	TCP_OPT_NOP = 1,
	TCP_OPT_MSS = 2,
	IP6_EXT_MAX = 8, /* extension headers walked before giving up */
};

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

static void be16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* One's complement sum of p[0..len) as big-endian words, added to sum. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += be16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'). A field at an odd offset from
 * the summed header straddles two words: its bytes count swapped.
 */
static void csum_replace(uint8_t *csum, uint16_t from, uint16_t to, bool odd)
{
	uint32_t sum;

	if (odd) {
		from = (uint16_t)(from << 8 | from >> 8);
		to = (uint16_t)(to << 8 | to >> 8);
	}
	sum = (uint16_t)~be16(csum) + (uint32_t)(uint16_t)~from + to;
	be16_put(csum, csum_fold(sum));
}

/* IPv4 header length, *plen cut to the packet's total length; 0 if no IPv4 packet. */
static size_t ip4_hdr(const uint8_t *ip, size_t *plen)
{
	size_t hl, tot;

	if (*plen < IP4_HDR || ip[0] >> 4 != 4)
		return 0;
	hl = (size_t)(ip[0] & 0xf) * 4;
	tot = be16(ip + 2);
	if (hl < IP4_HDR || tot < hl || tot > *plen)
		return 0;
	*plen = tot;
	return hl;
}

/* Offset of the upper-layer header of an IPv6 packet and its protocol in *proto; 0 if none. */
static size_t ip6_upper(const uint8_t *ip, size_t *plen, uint8_t *proto)
{
	size_t off = IP6_HDR, tot;
	uint8_t nh;

	if (*plen < IP6_HDR || ip[0] >> 4 != 6)
		return 0;
	tot = IP6_HDR + (size_t)be16(ip + 4);
	if (tot > *plen)
		return 0;
	*plen = tot;
	nh = ip[6];
	for (int i = 0; i < IP6_EXT_MAX; i++) {
		if (nh == 44) { /* fragment: only the first carries the upper header */
			if (off + 8 > tot || (be16(ip + off + 2) & 0xfff8) != 0)
				return 0;
			nh = ip[off];
			off += 8;
		} else if (nh == 0 || nh == 43 || nh == 60) {
			if (off + 8 > tot)
				return 0;
			nh = ip[off];
			off += ((size_t)ip[off + 1] + 1) * 8;
		} else {
			*proto = nh;
			return off <= tot ? off : 0;
		}
	}
	return 0;
}

/* Offset of the TCP header of a first fragment (or whole packet); 0 if not TCP. */
static size_t tcp_find(const uint8_t *ip, size_t *len)
{
	uint8_t proto = 0;
	size_t off;

	if (*len && ip[0] >> 4 == 4) {
		off = ip4_hdr(ip, len);
		if (!off || ip[9] != PROTO_TCP || (be16(ip + 6) & 0x1fff) != 0)
			return 0;
	} else {
		off = ip6_upper(ip, len, &proto);
		if (!off || proto != PROTO_TCP)
			return 0;
	}
	return off + TCP_HDR <= *len ? off : 0;
}

DUST_EXPORT bool dust_inner_mss_clamp(uint8_t *ip, size_t len, size_t mtu)
{
	size_t off = tcp_find(ip, &len), hl, o, hdrs;
	uint8_t *tcp = ip + off;

	if (!off || !(tcp[13] & TCP_SYN))
		return false;
	hdrs = ip[0] >> 4 == 4 ? IP4_HDR + TCP_HDR : IP6_HDR + TCP_HDR;
	if (mtu <= hdrs)
		return false;
	hl = (size_t)(tcp[12] >> 4) * 4;
	if (hl < TCP_HDR || off + hl > len)
		return false;
	for (o = TCP_HDR; o < hl && tcp[o] != TCP_OPT_END;) {
		uint16_t mss, max = (uint16_t)(mtu - hdrs < 0xffff ? mtu - hdrs : 0xffff);

		if (tcp[o] == TCP_OPT_NOP) {
			o++;
			continue;
		}
		if (o + 2 > hl || tcp[o + 1] < 2 || o + tcp[o + 1] > hl)
			return false; /* malformed options: leave the packet alone */
		if (tcp[o] == TCP_OPT_MSS && tcp[o + 1] == 4) {
			mss = be16(tcp + o + 2);
			if (mss <= max)
				return false;
			be16_put(tcp + o + 2, max);
			csum_replace(tcp + 16, mss, max, (o + 2) & 1);
			return true;
		}
		o += tcp[o + 1];
	}
	return false;
}

/* ---- ACK thinning --------------------------------------------------------------- */

enum {
	TCP_ACK = 0x10,
	TCP_OPT_TS = 8,
	TCP_OPT_TS_LEN = 10,
};

/* Options NOP, EOL and timestamps only, well formed; hl the TCP header's length. */
static bool ack_options_plain(const uint8_t *tcp, size_t hl)
{
	for (size_t o = TCP_HDR; o < hl && tcp[o] != TCP_OPT_END;) {
		if (tcp[o] == TCP_OPT_NOP) {
			o++;
			continue;
		}
		if (tcp[o] != TCP_OPT_TS || o + TCP_OPT_TS_LEN > hl || tcp[o + 1] != TCP_OPT_TS_LEN)
			return false;
		o += TCP_OPT_TS_LEN;
	}
	return true;
}

DUST_EXPORT bool dust_inner_tcp_read(const uint8_t *ip, size_t len, struct dust_inner_tcp *t)
{
	size_t off = tcp_find(ip, &len), hl;
	const uint8_t *tcp = ip + off;
	bool v4 = len && ip[0] >> 4 == 4;

	memset(t, 0, sizeof(*t));
	if (!off)
		return false;
	hl = (size_t)(tcp[12] >> 4) * 4;
	if (hl < TCP_HDR || off + hl > len)
		return false;
	t->flow_len = v4 ? 12 : 36;
	memcpy(t->flow, ip + (v4 ? 12 : 8), t->flow_len - 4u);
	memcpy(t->flow + t->flow_len - 4, tcp, 4);
	t->ack = (uint32_t)be16(tcp + 8) << 16 | be16(tcp + 10);
	t->pure_ack = off + hl == len && tcp[13] == TCP_ACK && !(tcp[12] & 0x0f) &&
	              (v4 ? !(be16(ip + 6) & 0x2000) : off == IP6_HDR) &&
	              ack_options_plain(tcp, hl);
	return true;
}

DUST_EXPORT bool dust_inner_same_flow(const struct dust_inner_tcp *a,
                                      const struct dust_inner_tcp *b)
{
	return a->flow_len && a->flow_len == b->flow_len && !memcmp(a->flow, b->flow, a->flow_len);
}

DUST_EXPORT bool dust_inner_ack_supersedes(const struct dust_inner_tcp *newer,
                                           const struct dust_inner_tcp *older)
{
	uint32_t ahead = newer->ack - older->ack;

	return newer->pure_ack && older->pure_ack && dust_inner_same_flow(newer, older) && ahead &&
	       ahead < 0x80000000u;
}

DUST_EXPORT bool dust_inner_elicits(const uint8_t *ip, size_t len)
{
	struct dust_inner_tcp t;

	return !dust_inner_tcp_read(ip, len, &t) || !t.pure_ack;
}

/* ---- ICMP errors ---------------------------------------------------------------- */

/* RFC 1812 §4.3.2.7: which IPv4 packets get no ICMP error. */
static bool icmp4_due(const uint8_t *ip, size_t hl)
{
	const uint8_t *src = ip + 12, *dst = ip + 16;

	if ((be16(ip + 6) & 0x1fff) != 0)
		return false; /* a later fragment */
	if (src[0] == 0 || src[0] == 127 || src[0] >= 224 || dst[0] >= 224)
		return false; /* no single host: 0/8, loopback, multicast, class E, broadcast */
	if (ip[9] == PROTO_ICMP) {
		uint8_t type = ip[hl];

		/* errors: unreachable, source quench, redirect, time exceeded, parameter problem */
		return !(type == 3 || type == 4 || type == 5 || type == 11 || type == 12);
	}
	return true;
}

static int too_big4(const uint8_t *ip, size_t len, size_t mtu, uint8_t *out)
{
	size_t hl = ip4_hdr(ip, &len), q, n;
	uint8_t *icmp = out + IP4_HDR;

	if (!hl)
		return -EINVAL;
	if (ip[9] == PROTO_ICMP && len < hl + 1)
		return -EINVAL;
	if (!icmp4_due(ip, hl))
		return 0;
	q = min_sz(len, DUST_INNER_ICMP4_MAX - IP4_HDR - ICMP_HDR);
	n = IP4_HDR + ICMP_HDR + q;
	memset(out, 0, IP4_HDR + ICMP_HDR);
	out[0] = 0x45;
	be16_put(out + 2, (uint16_t)n);
	out[8] = 64; /* TTL */
	out[9] = PROTO_ICMP;
	memcpy(out + 12, ip + 16, 4); /* from the packet's destination (see inner.h) */
	memcpy(out + 16, ip + 12, 4);
	be16_put(out + 10, csum_fold(csum_add(0, out, IP4_HDR)));
	icmp[0] = 3; /* destination unreachable */
	icmp[1] = 4; /* fragmentation needed and DF set (RFC 1191: next-hop MTU below) */
	be16_put(icmp + 6, (uint16_t)(mtu < 0xffff ? mtu : 0xffff));
	memcpy(icmp + ICMP_HDR, ip, q);
	be16_put(icmp + 2, csum_fold(csum_add(0, icmp, ICMP_HDR + q)));
	return (int)n;
}

/* RFC 4443 §2.4 (e): no error for an error, nor to the unspecified or a multicast source. */
static bool icmp6_due(const uint8_t *ip, size_t len)
{
	static const uint8_t unspec[16];
	uint8_t proto = 0;
	size_t off;

	if (ip[8] == 0xff || !memcmp(ip + 8, unspec, 16))
		return false;
	off = ip6_upper(ip, &len, &proto);
	return !(off && proto == PROTO_ICMPV6 && off < len && ip[off] < 128);
}

static int too_big6(const uint8_t *ip, size_t len, size_t mtu, uint8_t *out)
{
	size_t q, n, tot;
	uint8_t *icmp = out + IP6_HDR, pseudo[8] = {0};
	uint32_t sum;

	if (len < IP6_HDR || ip[0] >> 4 != 6)
		return -EINVAL;
	tot = IP6_HDR + (size_t)be16(ip + 4);
	if (tot > len)
		return -EINVAL;
	if (!icmp6_due(ip, tot))
		return 0;
	q = min_sz(tot, DUST_INNER_ICMP_MAX - IP6_HDR - ICMP_HDR);
	n = IP6_HDR + ICMP_HDR + q;
	memset(out, 0, IP6_HDR + ICMP_HDR);
	out[0] = 0x60;
	be16_put(out + 4, (uint16_t)(ICMP_HDR + q));
	out[6] = PROTO_ICMPV6;
	out[7] = 64;                  /* hop limit */
	memcpy(out + 8, ip + 24, 16); /* from the packet's destination (see inner.h) */
	memcpy(out + 24, ip + 8, 16);
	icmp[0] = 2; /* packet too big */
	be16_put(icmp + 4, (uint16_t)(mtu >> 16));
	be16_put(icmp + 6, (uint16_t)mtu);
	memcpy(icmp + ICMP_HDR, ip, q);
	/* pseudo-header: source, destination, upper-layer length, next header */
	be16_put(pseudo + 2, (uint16_t)(ICMP_HDR + q));
	pseudo[7] = PROTO_ICMPV6;
	sum = csum_add(csum_add(0, out + 8, 32), pseudo, sizeof(pseudo));
	be16_put(icmp + 2, csum_fold(csum_add(sum, icmp, ICMP_HDR + q)));
	return (int)n;
}

DUST_EXPORT int dust_inner_too_big(const uint8_t *ip, size_t len, size_t mtu, uint8_t *out,
                                   size_t cap)
{
	if (cap < DUST_INNER_ICMP_MAX)
		return -EMSGSIZE;
	if (len && ip[0] >> 4 == 4)
		return too_big4(ip, len, mtu, out);
	return too_big6(ip, len, mtu, out);
}
