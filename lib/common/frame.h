/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ethernet, IPv4/IPv6 and UDP headers with their checksums, built and parsed
 * back (frame.c): the one frame code of the tools, dust-gen, bench and tests.
 */
#ifndef TOOLS_FRAME_H
#define TOOLS_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* One's-complement sum of n bytes (big-endian words) added to s; fold() finishes it. */
uint32_t sum16(const uint8_t *p, size_t n, uint32_t s);
uint16_t fold(uint32_t s);
void put16(uint8_t *p, uint16_t v);

/* ip_udp4_opt flags: Don't Fragment set; UDP checksum left 0 (none, allowed in IPv4). */
enum { FRAME_DF = 1u, FRAME_NO_UDP_CSUM = 2u };

/* IPv4 header (20 bytes, TTL 64, checksummed) of a packet of tot bytes; returns 20. */
size_t ip4_hdr(uint8_t *out, const uint8_t sip[4], const uint8_t dip[4], uint8_t proto,
               uint16_t tot, uint16_t id, unsigned flags);
/* IPv4 + UDP + payload at out (pl may overlap out); returns the IP packet's length. */
size_t ip_udp4_opt(uint8_t *out, const uint8_t sip[4], const uint8_t dip[4], uint16_t sport,
                   uint16_t dport, const uint8_t *pl, size_t plen, uint16_t id, unsigned flags);
/* ip_udp4_opt with id 0, DF and the UDP checksum: what a client's kernel sends. */
size_t ip_udp4(uint8_t *out, const uint8_t sip[4], const uint8_t dip[4], uint16_t sport,
               uint16_t dport, const uint8_t *pl, size_t plen);
/* Ethernet II header at f; returns 14. */
size_t eth(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type);
/* Sum of the IPv6 pseudo-header of the packet at ip6. */
uint32_t sum_ip6_pseudo(const uint8_t *ip6, uint32_t l4len, uint8_t nh);
/* IPv6 + UDP + payload at out (pl may overlap out); returns the IP packet's length. */
size_t ip_udp6(uint8_t *out, const uint8_t sip[16], const uint8_t dip[16], uint16_t sport,
               uint16_t dport, const uint8_t *pl, size_t plen);

/* A UDP datagram found in a frame; the pointers point into the frame. */
struct frame_udp {
	uint8_t family;           /* 4 or 6 */
	const uint8_t *sip, *dip; /* 4 or 16 bytes */
	uint16_t sport, dport;
	const uint8_t *pl; /* the UDP payload, plen bytes by the UDP length */
	size_t plen;
};

/*
 * Ethernet II + IPv4 (IHL >= 5) or IPv6 (no extension header) + UDP whose
 * UDP length fits in the len bytes at f: 0 and u filled, else -1.
 */
int frame_udp_parse(const uint8_t *f, size_t len, struct frame_udp *u);

#endif /* TOOLS_FRAME_H */
