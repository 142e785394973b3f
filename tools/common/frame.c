/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ethernet, IPv4/IPv6 and UDP headers with their checksums, for the tools
 * that write frames (dust-pcap, dust-gen): one builder, one checksum.
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

/* IPv4 + UDP + payload at out; returns the IP packet's length. */
size_t ip_udp4(uint8_t *out, const uint8_t sip[4], const uint8_t dip[4], uint16_t sport,
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

/* IPv6 + UDP + payload at out; returns the IP packet's length. */
size_t ip_udp6(uint8_t *out, const uint8_t sip[16], const uint8_t dip[16], uint16_t sport,
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
