/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Compressed inner TCP ACKs (SPEC.md §12.4, "Compact packets"): a pure
 * IPv4 TCP ACK of a connection both ends have seen travels as 5..9 bytes
 * of per-connection deltas, as Van Jacobson's compression (RFC 1144) and
 * ROHC (RFC 3095) send TCP/IP headers, so that a tunnelled ACK fits in a
 * datagram of a QUIC ACK-only packet's size. Plain bytes in and out: the
 * client and the gateway share it.
 *
 * Each end keeps a context per direction: DUST_ACKZ_SLOTS slots, the slot
 * of a connection fixed by its addresses and ports (dust_ackz_slot_of).
 * The sender notes every inner IPv4 TCP packet it sends in that slot, the
 * receiver every one it receives (full or expanded), so both hold the last
 * packet of the connection that went through. A compressed ACK says only
 * what changed since, as least significant bits; the TCP checksum travels
 * unchanged and the receiver checks the packet it rebuilt against it: a
 * context that lost a packet, or holds another connection, rebuilds a
 * packet whose checksum fails, and it is dropped (a lost ACK), never
 * delivered wrong.
 *
 * The compressed form, all multi-byte fields in network order:
 *
 *   byte 0: 0b10 W T E s s s   (0x80 | W << 5 | T << 4 | E << 3 | slot)
 *   2 bytes: the TCP checksum, as the sender's packet has it
 *   2 bytes: the acknowledgement number's low 16 bits
 *   W: 2 bytes: the window (else the context's)
 *   T: 1 byte: TSval's low 8 bits (else the context's TSval)
 *   E: 1 byte: TSecr's low 8 bits (else the context's TSecr)
 *
 * A sender sets W, T, E when the field differs from its slot, and in the
 * DUST_ACKZ_REPEAT packets of the connection after one that changed it.
 *
 * Byte 0 lies in 0x80..0xbf: neither a path message (< 0x40, dust.h) nor
 * an IP packet (0x4_, 0x6_). Bytes after the fields are padding (zero) and
 * ignored.
 *
 * What the receiver rebuilds from the slot: version 4, IHL 5, the TOS, TTL
 * and DF bit of the slot, IP ID the slot's + 1 (0 stays 0, as Linux sends
 * DF packets without an ID; with DF the ID an ACK had is not sent: an
 * atomic datagram's ID means nothing, RFC 6864 §4.1), protocol TCP, the header checksum computed;
 * the addresses and ports; sequence number the slot's next (its sequence
 * number + payload length, + 1 for SYN or FIN); ACK = the value that has
 * the sent low 16 bits and lies in [slot ack, slot ack + 2^16); flags ACK
 * alone; data offset 5, or 8 with NOP NOP TS (the slot's layout); urgent
 * pointer 0; TSval, TSecr likewise in [slot, slot + 2^8).
 *
 * A packet is compressible when it is exactly that: an IPv4 pure ACK (no
 * payload, no fragment, IHL 5, flags ACK alone, urgent pointer 0), no TCP
 * options or exactly NOP NOP TS (Linux's layout), its slot holding its
 * connection with the same TOS, TTL, DF, option layout, without DF the IP
 * ID the rule above gives, sequence number equal to the slot's next, and ACK,
 * TSval and TSecr at or ahead of the slot's within the ranges above.
 */
#ifndef DUST_ACKZ_H
#define DUST_ACKZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
	DUST_ACKZ_SLOTS = 8,
	DUST_ACKZ_MIN = 5, /**< shortest compressed ACK */
	DUST_ACKZ_MAX = 9, /**< longest: window and both timestamps */
	DUST_ACKZ_KIND = 0x80,
	DUST_ACKZ_KIND_MASK = 0xc0,
	/** longest packet dust_ackz_expand writes: IPv4 + TCP + NOP NOP TS */
	DUST_ACKZ_IP_MAX = 52,
	/**
	 * A changed window or timestamp goes in this many compressed ACKs
	 * after the one that changed it too (ROHC's optimistic approach, RFC
	 * 3095 §5.3.1.1.1): a receiver that lost that one still rebuilds the
	 * next, where it would otherwise take the slot's old value, fail the
	 * checksum and drop every ACK up to the field's next change.
	 */
	DUST_ACKZ_REPEAT = 2,
};

/** The last packet of one connection (one direction) that went through. */
struct dust_ackz_slot {
	uint8_t addr[8];  /**< source, destination (network order) */
	uint8_t ports[4]; /**< source, destination (network order) */
	uint32_t seq_next;
	uint32_t ack;
	uint32_t tsval;
	uint32_t tsecr;
	uint16_t ipid;
	uint16_t win;
	uint8_t tos;
	uint8_t ttl;
	uint8_t df;     /**< 1 when DF was set */
	uint8_t has_ts; /**< 1: options were exactly NOP NOP TS; 0: none or another layout */
	uint8_t used;   /**< 1 once a packet was noted */
	/** compressed ACKs that still send the window, TSval, TSecr (DUST_ACKZ_REPEAT) */
	uint8_t rep_win, rep_tsval, rep_tsecr;
};

/** One direction's context: the sender's, or the receiver's copy of it. */
struct dust_ackz {
	struct dust_ackz_slot slot[DUST_ACKZ_SLOTS];
};

void dust_ackz_init(struct dust_ackz *z);

/**
 * The slot of a connection: x = source ^ destination ^ (source port << 16 |
 * destination port), as host-order integers; x ^= x >> 16; x ^= x >> 8;
 * slot = x % DUST_ACKZ_SLOTS.
 */
unsigned dust_ackz_slot_of(const uint8_t *ip, size_t len);

/**
 * Note ip[0..len) in its connection's slot if it is an IPv4 TCP packet
 * with IHL 5, not a fragment (it then replaces whatever the slot held).
 * Anything else (IPv6, other protocols, malformed) is ignored.
 */
void dust_ackz_note(struct dust_ackz *z, const uint8_t *ip, size_t len);

/**
 * The sender, for every inner packet it is about to send: if ip[0..len)
 * is compressible against z, writes its compressed form to out and returns
 * its length (DUST_ACKZ_MIN..DUST_ACKZ_MAX); otherwise returns 0. Either
 * way the packet is noted in z (the caller sends it, compressed or not).
 */
size_t dust_ackz_compress(struct dust_ackz *z, const uint8_t *ip, size_t len,
                          uint8_t out[DUST_ACKZ_MAX]);

/**
 * The receiver: rebuild the packet of the compressed ACK zb[0..zlen) from
 * z into out (cap bytes). Returns its length and notes it in z; or
 * -EINVAL when zb is no compressed ACK (kind, truncated), -ENOENT when
 * its slot holds nothing, -EBADMSG when the rebuilt packet's TCP checksum
 * fails (z then holds another connection, or missed a packet: z is left
 * as it was), -EMSGSIZE when cap is too small.
 */
int dust_ackz_expand(struct dust_ackz *z, const uint8_t *zb, size_t zlen, uint8_t *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* DUST_ACKZ_H */
