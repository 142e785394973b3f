/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ethernet, IPv4/IPv6 and UDP headers with their checksums, for everything
 * that writes or reads frames (dust-pcap, dust-dpi, dust-gen, bench, the gw
 * tests): one builder, one checksum, one parser.
 */
#include <netinet/in.h>
#include <string.h>

#include "frame.h"

uint32_t sum16(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	return s;
}

uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

size_t ip4_hdr(uint8_t *out, const uint8_t sip[4], const uint8_t dip[4], uint8_t proto,
               uint16_t tot, uint16_t id, unsigned flags)
{
	memset(out, 0, 20);
	out[0] = 0x45;
	put16(out + 2, tot);
	put16(out + 4, id);
	out[6] = flags & FRAME_DF ? 0x40 : 0;
	out[8] = 64;
	out[9] = proto;
	memcpy(out + 12, sip, 4);
	memcpy(out + 16, dip, 4);
	put16(out + 10, fold(sum16(out, 20, 0)));
	return 20;
}

/* UDP header at u before plen payload bytes at u + 8; the checksum is the caller's. */
static void udp_hdr(uint8_t *u, uint16_t sport, uint16_t dport, size_t plen)
{
	put16(u, sport);
	put16(u + 2, dport);
	put16(u + 4, (uint16_t)(8 + plen));
	put16(u + 6, 0);
}

/* A UDP checksum of 0 is sent as 0xffff: 0 means "none". */
static void udp_csum_put(uint8_t *u, uint32_t pseudo, size_t plen)
{
	uint16_t c = fold(sum16(u, 8 + plen, pseudo));

	put16(u + 6, c ? c : 0xffff);
}

size_t ip_udp4_opt(uint8_t *out, const uint8_t sip[4], const uint8_t dip[4], uint16_t sport,
                   uint16_t dport, const uint8_t *pl, size_t plen, uint16_t id, unsigned flags)
{
	uint8_t *u = out + 20;

	memmove(u + 8, pl, plen); /* first: pl may sit anywhere in out */
	ip4_hdr(out, sip, dip, IPPROTO_UDP, (uint16_t)(28 + plen), id, flags);
	udp_hdr(u, sport, dport, plen);
	if (!(flags & FRAME_NO_UDP_CSUM))
		udp_csum_put(u, sum16(out + 12, 8, IPPROTO_UDP + 8 + (uint32_t)plen), plen);
	return 28 + plen;
}

size_t ip_udp4(uint8_t *out, const uint8_t sip[4], const uint8_t dip[4], uint16_t sport,
               uint16_t dport, const uint8_t *pl, size_t plen)
{
	return ip_udp4_opt(out, sip, dip, sport, dport, pl, plen, 0, FRAME_DF);
}

size_t eth(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put16(f + 12, type);
	return 14;
}

uint32_t sum_ip6_pseudo(const uint8_t *ip6, uint32_t l4len, uint8_t nh)
{
	uint32_t s = sum16(ip6 + 8, 32, 0);

	return s + (l4len >> 16) + (l4len & 0xffff) + nh;
}

size_t ip_udp6(uint8_t *out, const uint8_t sip[16], const uint8_t dip[16], uint16_t sport,
               uint16_t dport, const uint8_t *pl, size_t plen)
{
	uint8_t *u = out + 40;

	memmove(u + 8, pl, plen);
	memset(out, 0, 40);
	out[0] = 0x60;
	put16(out + 4, (uint16_t)(8 + plen));
	out[6] = IPPROTO_UDP;
	out[7] = 64;
	memcpy(out + 8, sip, 16);
	memcpy(out + 24, dip, 16);
	udp_hdr(u, sport, dport, plen);
	udp_csum_put(u, sum_ip6_pseudo(out, (uint32_t)(8 + plen), IPPROTO_UDP), plen);
	return 48 + plen;
}

int frame_udp_parse(const uint8_t *f, size_t len, struct frame_udp *u)
{
	size_t ihl;
	const uint8_t *h;

	if (len >= 14 + 40 + 8 && get16(f + 12) == 0x86dd && f[20] == IPPROTO_UDP) {
		u->family = 6;
		u->sip = f + 22;
		u->dip = f + 38;
		ihl = 40;
	} else if (len >= 14 + 20 + 8 && get16(f + 12) == 0x0800 && f[23] == IPPROTO_UDP) {
		u->family = 4;
		u->sip = f + 26;
		u->dip = f + 30;
		ihl = (size_t)(f[14] & 15) * 4;
		if (ihl < 20 || 14 + ihl + 8 > len)
			return -1;
	} else {
		return -1;
	}
	h = f + 14 + ihl;
	u->sport = get16(h);
	u->dport = get16(h + 2);
	u->plen = get16(h + 4);
	if (u->plen < 8 || 14 + ihl + u->plen > len)
		return -1;
	u->plen -= 8;
	u->pl = h + 8;
	return 0;
}
