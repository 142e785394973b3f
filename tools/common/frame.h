/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ethernet, IPv4/IPv6 and UDP headers with their checksums (frame.c).
 */
#ifndef TOOLS_FRAME_H
#define TOOLS_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* One's-complement sum of n bytes (big-endian words) added to s; fold() finishes it. */
uint32_t sum16(const uint8_t *p, size_t n, uint32_t s);
uint16_t fold(uint32_t s);
void put16(uint8_t *p, uint16_t v);
/* IPv4 + UDP + payload at out (pl may overlap out + 28); returns the IP packet's length. */
size_t ip_udp4(uint8_t *out, const uint8_t sip[4], const uint8_t dip[4], uint16_t sport,
               uint16_t dport, const uint8_t *pl, size_t plen);
/* Ethernet II header at f; returns 14. */
size_t eth(uint8_t *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type);
/* Sum of the IPv6 pseudo-header of the packet at ip6. */
uint32_t sum_ip6_pseudo(const uint8_t *ip6, uint32_t l4len, uint8_t nh);
/* IPv6 + UDP + payload at out; returns the IP packet's length. */
size_t ip_udp6(uint8_t *out, const uint8_t sip[16], const uint8_t dip[16], uint16_t sport,
               uint16_t dport, const uint8_t *pl, size_t plen);

#endif /* TOOLS_FRAME_H */
