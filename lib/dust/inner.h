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
	/** Earlier ACKs one kept ACK may stand for, at most (ACK thinning, SPEC.md §9.2). */
	DUST_INNER_THIN_MAX = 8,
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

/**
 * A TCP segment as ACK thinning reads it (SPEC.md §9.2): its connection
 * (addresses and ports, one direction) and acknowledgement number.
 */
struct dust_inner_tcp {
	uint8_t flow[36]; /**< source and destination address, then source and destination port */
	uint8_t flow_len; /**< 12 for IPv4, 36 for IPv6 */
	uint32_t ack;     /**< acknowledgement number */
	/**
	 * A pure ACK that thinning may drop: no payload, no fragment, flags ACK
	 * alone (no SYN, FIN, RST, PSH, URG, ECE, CWR or AE), options NOP, EOL
	 * and timestamps only (no SACK blocks: they report loss), IPv6 with no
	 * extension header.
	 */
	bool pure_ack;
};

/**
 * Read ip[0..len) as a TCP segment (IPv4, or IPv6 behind extension
 * headers; a first fragment or a whole packet) into *t. Returns false where
 * it is none: another protocol, a later fragment, or malformed.
 */
bool dust_inner_tcp_read(const uint8_t *ip, size_t len, struct dust_inner_tcp *t);

/** Whether a and b (read by dust_inner_tcp_read) are segments of one connection and direction. */
bool dust_inner_same_flow(const struct dust_inner_tcp *a, const struct dust_inner_tcp *b);

/**
 * Whether pure ACK newer makes the earlier pure ACK older redundant: the
 * same connection and direction, its acknowledgement number strictly ahead
 * (serial arithmetic, RFC 1982: within 2^31). A duplicate ACK (the same
 * number) never supersedes: the sender counts those for fast retransmit.
 */
bool dust_inner_ack_supersedes(const struct dust_inner_tcp *newer,
                               const struct dust_inner_tcp *older);

/**
 * Whether inner packet ip[0..len) calls for an acknowledgement, as an
 * ack-eliciting QUIC packet does: anything but a pure TCP ACK (quic-go and
 * Chromium acknowledge no packet that holds only an ACK, SPEC.md §12.4).
 */
bool dust_inner_elicits(const uint8_t *ip, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* DUST_INNER_H */
