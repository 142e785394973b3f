/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: inner.c's parsers, the TCP MSS clamp and the ICMP
 * too-big builder, on any inner packet (dustgw meets them from clients and
 * from the delivery side). Input: two bytes of MTU (big endian), then the
 * packet. Checked: the clamp changes at most four bytes (the MSS value and
 * the TCP checksum) and leaves the packet's one's complement sum as it was
 * (the incremental update is right wherever the option sits); the error is
 * an IPv4/IPv6 packet of at most DUST_INNER_ICMP_MAX bytes whose length
 * field says so and which quotes the packet's first bytes; ACK thinning's
 * TCP reader reads a flow of 12 or 36 bytes, and its supersedes rule holds
 * for a pure ACK and the same one a number ahead, never for a copy.
 * Compressed ACKs (ackz.c): the packet compressed against a context that
 * noted only itself, and against one the inputs before left (a mutation
 * runs after its parent): 5..9 bytes that expand, against the context as it
 * was, to the packet byte for byte (with DF, but for the IP ID, which is
 * rebuilt, and the header checksum, which must hold) and the same context; the packet read
 * as a compressed ACK expands to an error that leaves the context as it
 * was, or to 40 or 52 bytes of IPv4 TCP whose checksums hold.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ackz.h"
#include "dust.h"
#include "inner.h"

static uint8_t pkt[65536], orig[65536], err[DUST_INNER_ICMP_MAX];
static struct dust_ackz carried; /* the sender's context, across inputs */

/* One's complement sum of p[0..len), folded; 0 and 0xffff are the same value. */
static unsigned sum(const uint8_t *p, size_t len)
{
	uint64_t s = 0;

	for (size_t i = 0; i < len; i++)
		s += (i & 1) ? p[i] : (uint64_t)p[i] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s == 0xffff ? 0 : (unsigned)s;
}

static void check_clamp(size_t len, size_t mtu)
{
	unsigned changed = 0;

	memcpy(orig, pkt, len);
	if (!dust_inner_mss_clamp(pkt, len, mtu)) {
		if (memcmp(orig, pkt, len) != 0)
			abort(); /* "not rewritten" must mean untouched */
		return;
	}
	for (size_t i = 0; i < len; i++)
		changed += orig[i] != pkt[i];
	if (changed > 4 || sum(orig, len) != sum(pkt, len))
		abort();
}

static void check_too_big(size_t len, size_t mtu)
{
	int n = dust_inner_too_big(pkt, len, mtu, err, sizeof(err));
	size_t hdr, tot;

	if (n <= 0)
		return;
	if ((size_t)n > sizeof(err) || (size_t)n < 28)
		abort();
	hdr = err[0] >> 4 == 4 ? 20 : 40;
	tot = err[0] >> 4 == 4 ? (size_t)(err[2] << 8 | err[3])
	                       : hdr + (size_t)(err[4] << 8 | err[5]);
	if ((err[0] >> 4 != 4 && err[0] >> 4 != 6) || tot != (size_t)n ||
	    memcmp(err + hdr + 8, pkt, (size_t)n - hdr - 8) != 0)
		abort();
}

/*
 * ACK thinning's reader: a pure ACK is no longer than its headers allow
 * (IPv4 60 + TCP 60, IPv6 40 + 60), its flow is one of the two lengths, and
 * it supersedes neither itself nor a copy of itself (the same number);
 * everything but a pure ACK calls for an ACK-sized datagram.
 */
static void check_tcp_read(size_t len)
{
	struct dust_inner_tcp t, u;

	if (!dust_inner_tcp_read(pkt, len, &t)) {
		if (t.flow_len || t.pure_ack || !dust_inner_elicits(pkt, len))
			abort(); /* nothing read must read as nothing, and call for an ACK */
		return;
	}
	if (dust_inner_elicits(pkt, len) == t.pure_ack)
		abort(); /* only a pure ACK calls for none */
	if ((t.flow_len != 12 && t.flow_len != 36) || (t.pure_ack && len < 40) ||
	    dust_inner_ack_supersedes(&t, &t))
		abort();
	u = t;
	u.ack++;
	if (t.pure_ack != dust_inner_ack_supersedes(&u, &t))
		abort();
}

/*
 * ackz.c reads ip[0..len), the input's own bytes (ASan sees a read past
 * them). Compressed by the sender with context *z: expanding gives the
 * packet and the context back.
 */
static void check_ackz_roundtrip(struct dust_ackz *z, const uint8_t *ip, size_t len)
{
	struct dust_ackz rx;
	uint8_t zb[DUST_ACKZ_MAX], out[64];
	size_t n;

	memcpy(&rx, z, sizeof(rx));
	n = dust_ackz_compress(z, ip, len, zb);
	if (!n)
		return;
	if (n < DUST_ACKZ_MIN || n > DUST_ACKZ_MAX ||
	    dust_ackz_expand(&rx, zb, n, out, sizeof(out)) != (int)len || sum(out, 20) != 0 ||
	    memcmp(&rx, z, sizeof(rx)) != 0)
		abort();
	/* with DF the IP ID is rebuilt, not sent: it and the header checksum may differ */
	if ((ip[6] & 0x40) && len >= 20)
		memcpy(out + 4, ip + 4, 2), memcpy(out + 10, ip + 10, 2);
	if (memcmp(out, ip, len) != 0)
		abort();
}

/* The TCP checksum of the packet out[0..n) holds (its header's bytes 8..12 overwritten). */
static bool ackz_tcp_ok(uint8_t *out, size_t n)
{
	/* the pseudo-header: zero, protocol, TCP length, then the addresses in place */
	out[8] = 0, out[9] = 6, out[10] = 0, out[11] = (uint8_t)(n - 20);
	return sum(out + 8, n - 8) == 0;
}

/* The input as a compressed ACK: an error and z untouched, or a packet that checks. */
static void check_ackz_expand(const struct dust_ackz *z, const uint8_t *zb, size_t len)
{
	struct dust_ackz rx;
	uint8_t out[64];
	int n;

	memcpy(&rx, z, sizeof(rx));
	n = dust_ackz_expand(&rx, zb, len, out, sizeof(out));
	if (n < 0) {
		if (memcmp(&rx, z, sizeof(rx)) != 0)
			abort();
		return;
	}
	if ((n != 40 && n != 52) || out[0] != 0x45 || (size_t)(out[2] << 8 | out[3]) != (size_t)n ||
	    sum(out, 20) != 0 || dust_ackz_slot_of(out, (size_t)n) != (zb[0] & 7u) ||
	    !ackz_tcp_ok(out, (size_t)n))
		abort();
}

static void check_ackz(const uint8_t *ip, size_t len)
{
	struct dust_ackz self;

	dust_ackz_init(&self);
	dust_ackz_note(&self, ip, len);
	check_ackz_roundtrip(&self, ip, len);
	check_ackz_roundtrip(&carried, ip, len);
	check_ackz_expand(&carried, ip, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t mtu, len;

	if (size < 2)
		return 0;
	mtu = (size_t)data[0] << 8 | data[1];
	len = size - 2;
	memcpy(pkt, data + 2, len);
	check_too_big(len, mtu);
	check_clamp(len, mtu);
	check_tcp_read(len);
	check_ackz(data + 2, len);
	return 0;
}
