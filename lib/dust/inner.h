/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Inner IP packets at a tunnel's size bound (SPEC.md §12.4): the TCP MSS
 * clamp on SYNs and the ICMP error a router sends back for a packet too big
 * for its next hop. Plain bytes in and out: the gateway and the client
 * share them.
 */
#ifndef DUST_INNER_H
#define DUST_INNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
	/** Longest error dust_inner_too_big writes (IPv6's minimum MTU, RFC 4443 §3.2). */
	DUST_INNER_ICMP_MAX = 1280,
	DUST_INNER_ICMP4_MAX = 576, /**< IPv4's: RFC 1812 §4.3.2.3 */
};

/**
 * If ip[0..len) is a TCP SYN (IPv4, or IPv6 behind hop-by-hop, routing,
 * destination-options or a first fragment header) whose MSS option
 * exceeds what a path of this MTU carries (mtu - 40 for IPv4, mtu - 60 for
 * IPv6), lower it to that and fix the TCP checksum incrementally (RFC
 * 1624), as a router's MSS clamp does. Returns true when it rewrote.
 */
bool dust_inner_mss_clamp(uint8_t *ip, size_t len, size_t mtu);

/**
 * The error a router sends for ip[0..len), too big for a next hop of this
 * MTU: ICMP "fragmentation needed" (type 3 code 4, RFC 1191) for IPv4,
 * ICMPv6 "packet too big" (RFC 4443 §3.2) for IPv6, addressed to ip's
 * source and quoting as much of ip as the error may hold. Its source is
 * ip's destination: the tunnel has no address of its own on the inner
 * side, and that address routes back through it, so reverse-path filters
 * let the error through. Returns its length; 0 where none is due (ip is an
 * ICMP error itself, a later fragment, from no single host); -EMSGSIZE
 * when cap is under DUST_INNER_ICMP_MAX; -EINVAL when ip is no IP packet.
 */
int dust_inner_too_big(const uint8_t *ip, size_t len, size_t mtu, uint8_t *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* DUST_INNER_H */
