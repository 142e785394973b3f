/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-quic: the quic profile through the real loop (dustgw_core, one
 * worker) on net_ring ports. Clients' Initials on the quic port are
 * answered with a first flight from that port; data flows both ways in
 * short headers; a client whose NAT rebinds keeps its session by CID after
 * an authenticated packet; probes (a stranger's Initial, unknown CIDs,
 * other long headers, a moved packet that does not authenticate) get no
 * byte back and are counted; the random profile keeps working beside it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_lcore.h>

#include "cid.h"
#include "frame.h"
#include "gwcheck.h"
#include "quic_pvt.h"
#include "ringgw.h"
#include "rtx.h"

enum { NQ = 3, QUIC_PORT = 443, RANDOM_PORT = 4433 };

struct cl {
	struct dust_invite inv;
	struct dust_identity id;
	struct dust_session cur;
	struct dust_quic_client qc;
	struct dust_quic_confirm cf; /* what the second flight keeps of the hello */
	struct dust_endpoint a;
};

static struct ringgw H;

static struct {
	struct dust_rng rng;
	struct dust_pad pad;
	struct cl c[NQ + 2]; /* NQ quic clients, one random-profile client, a spare quic one */
	struct dust_invite stranger;
	uint64_t sent;
	unsigned coalesced; /* first flights whose 1-RTT rode behind the tail */
} T;

/* The gateway's first-flight shape from now on: the default with coalesce thirds. */
static void shape_coalesce(uint8_t coalesce)
{
	struct dgw_shape sh;

	dgw_shape_default(&sh);
	sh.coalesce = coalesce;
	atomic_store(&H.gw->shape, dgw_shape_pack(&sh));
}

/*
 * The Handshake packet's bytes at the head of a flight's tail datagram of n
 * bytes (105..120 in the default shape), 0 if it is none; *coalesced when
 * quic-go's 24-byte 1-RTT rides behind it in the datagram (SPEC §12.3).
 */
static size_t tail_hs(const uint8_t *dg, size_t n, bool *coalesced)
{
	struct quic_long q;
	size_t hs;

	*coalesced = false;
	if (!quic_long_parse(dg, n, &q) || q.type != DUST_QUIC_TYPE_HANDSHAKE)
		return 0;
	hs = q.pn_off + q.length;
	if (hs < 105 || hs > 120)
		return 0;
	if (hs == n)
		return hs;
	*coalesced =
	    n - hs == 24 && (dg[hs] & (DUST_QUIC_LONG | DUST_QUIC_FIXED)) == DUST_QUIC_FIXED;
	return *coalesced ? hs : 0;
}

static int send_dg(const struct dust_endpoint *from, uint16_t port, const uint8_t *dg, size_t len)
{
	T.sent++;
	return rg_send(&H, 0, from, port, dg, len);
}

/* A quic hello (SPEC §12.2): its two 1250-byte Initials, one after the other. */
static int send_hello(const struct dust_endpoint *from, const uint8_t *dg, size_t len)
{
	for (size_t at = 0; at < len; at += DUST_QUIC_CLIENT_DGRAM)
		if (send_dg(from, QUIC_PORT, dg + at, DUST_QUIC_CLIENT_DGRAM) != 0)
			return -1;
	return 0;
}

/*
 * Next frame the gateway put on ring r (toward clients, or delivered), or 0
 * after 10 s (a first use is answered once its binding is durable).
 */
static size_t recv_ring(struct rte_ring *r, uint8_t *f, size_t cap)
{
	struct rte_mbuf *m;

	for (int i = 0; i < 20000; i++) {
		if (rte_ring_dequeue(r, (void **)&m) == 0) {
			size_t n = RTE_MIN((size_t)rte_pktmbuf_data_len(m), cap);

			memcpy(f, rte_pktmbuf_mtod(m, void *), n);
			rte_pktmbuf_free(m);
			return n;
		}
		rte_delay_us_sleep(500);
	}
	return 0;
}

/* Until the worker has read every frame sent and finished with them. */
static bool settled(void)
{
	for (int i = 0; i < 4000; i++) {
		if (rg_ctr(&H, 0, DGW_CTR_NET_RX) == T.sent && rte_ring_count(H.nrx[0]) == 0) {
			rte_delay_us_sleep(20000);
			return rg_worker_done(&H, 0);
		}
		rte_delay_us_sleep(500);
	}
	return false;
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* An inner IPv4/UDP packet from (or to) c's tunnel address, with a marker byte. */
static size_t inner(const struct cl *c, bool from_client, uint8_t mark, uint8_t *p)
{
	static const uint8_t far[4] = {10, 9, 255, 1};
	uint8_t pl[32];

	memset(pl, mark, sizeof(pl));
	return ip_udp4_opt(p, from_client ? c->inv.tunnel.a : far,
	                   from_client ? far : c->inv.tunnel.a, 9, 9, pl, sizeof(pl), 0,
	                   FRAME_NO_UDP_CSUM);
}

/*
 * The gateway answers a keepalive in c's confirmation with one in a short
 * header: size bytes (0: any).
 */
static int keepalive_back(struct cl *c, size_t size)
{
	uint8_t f[1600];
	size_t n = recv_ring(H.ntx[0], f, sizeof(f)), used = 0;
	struct dust_seg seg;

	CHECK(n > 43 && dust_quic_short_match(&c->cur, f + 42, n - 42),
	      "no short-header keepalive");
	CHECK(!size || n - 42 == size,
	      "the keepalive answering the second flight not caddy's ticket size");
	CHECK(dust_data_open(&c->cur, &H.gw->cfg.lim, (uint32_t)time(NULL), f + 43, n - 43, &seg,
	                     &used) == DUST_OK &&
	          seg.len == 0,
	      "the keepalive answering the confirmation does not open");
	return 0;
}

/* caddy's Handshake ACK after the second flight (SPEC §12.3): 36 bytes, passed by. */
static int hs_ack_back(struct cl *c)
{
	uint8_t f[1600];
	size_t n = recv_ring(H.ntx[0], f, sizeof(f));

	CHECK(n == 42 + 36 && dust_quic_is_hs_ack(&c->cur, f + 42, n - 42),
	      "no 36-byte Handshake ACK after the second flight");
	return 0;
}

/* Then caddy's HANDSHAKE_DONE: a 1-RTT datagram of 24 or 25 bytes that the client passes by. */
static int hs_done_back(struct cl *c)
{
	uint8_t f[1600];
	size_t n = recv_ring(H.ntx[0], f, sizeof(f));

	CHECK((n == 42 + DUST_QUIC_DONE_BYTES || n == 42 + DUST_QUIC_DONE_BYTES + 1) &&
	          dust_quic_ack_match(&c->cur, f + 42, n - 42),
	      "no 24- or 25-byte 1-RTT datagram after the Handshake ACK");
	return 0;
}

/* The previous release's confirmation: one Handshake packet, a keepalive inside. */
static int finished_old(struct cl *c)
{
	uint8_t dg[1500];
	size_t pre = dust_quic_hs_prefix(&c->cur);
	uint64_t old = rg_ctr(&H, 0, DGW_CTR_QUIC_CONFIRM_OLD);
	int k = dust_data_seal(&c->cur, &T.rng, &T.pad, (uint32_t)time(NULL), dg + pre, 0,
	                       sizeof(dg) - pre);

	CHECK(k > 0, "seal");
	dust_quic_hs_put(&c->cur, &T.rng, dg, (size_t)k);
	CHECK(send_dg(&c->a, QUIC_PORT, dg, pre + (size_t)k) == 0, "send");
	CHECK(keepalive_back(c, 0) == 0, gw_why);
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_CONFIRM_OLD) == old + 1, "old confirmation not counted");
	return 0;
}

/*
 * The second flight as Chromium's (SPEC §12.3): the padded Initial+Handshake
 * ACK datagram, passed by (counted, nothing sent), the same with its short
 * header's CID altered after the Handshake+1-RTT form (a counted drop), then
 * the Handshake+1-RTT datagram: the gateway sends caddy's Handshake ACK and
 * HANDSHAKE_DONE, and answers its keepalive in its session ticket's size.
 */
static int finished(struct cl *c)
{
	static unsigned calls;
	uint8_t dg[1500];
	uint64_t acks = rg_ctr(&H, 0, DGW_CTR_QUIC_CONFIRM_ACK), tx = rg_ctr(&H, 0, DGW_CTR_NET_TX);
	uint64_t bad = rg_drop(&H, 0, DGW_DROP_QUIC_CONFIRM);
	bool carried;
	int n;

	if (calls++ % 2) /* every other client: a client of the previous release */
		return finished_old(c);
	n = dust_quic_confirm_ack_build(&c->cf, &c->cur, &T.rng, dg, sizeof(dg));
	CHECK(n == DUST_QUIC_CLIENT_DGRAM_MAX && send_dg(&c->a, QUIC_PORT, dg, (size_t)n) == 0,
	      "send the Initial+Handshake ACK");
	CHECK(settled(), "not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_CONFIRM_ACK) == acks + 1 &&
	          rg_ctr(&H, 0, DGW_CTR_NET_TX) == tx,
	      "the Initial+Handshake ACK not passed by");
	n = dust_quic_confirm_build(&c->cur, &T.rng, (uint32_t)time(NULL), NULL, 0, dg, sizeof(dg),
	                            &carried);
	CHECK(n >= 133 && n <= 148, "Handshake+1-RTT build");
	dg[70] ^=
	    1; /* the 1-RTT packet's DCID (after 69 bytes of Handshake): no longer the session's */
	CHECK(send_dg(&c->a, QUIC_PORT, dg, (size_t)n) == 0 && settled(), "send a malformed one");
	CHECK(rg_drop(&H, 0, DGW_DROP_QUIC_CONFIRM) == bad + 1 &&
	          rg_ctr(&H, 0, DGW_CTR_NET_TX) == tx,
	      "a malformed confirmation not a counted drop");
	dg[70] ^= 1;
	CHECK(send_dg(&c->a, QUIC_PORT, dg, (size_t)n) == 0, "send");
	CHECK(hs_ack_back(c) == 0, gw_why);
	CHECK(hs_done_back(c) == 0, gw_why);
	return keepalive_back(c, DUST_QUIC_TICKET_BYTES);
}

/*
 * The flight's tail (SPEC §12.3): a Handshake packet of 105..120 bytes,
 * from the quic port, holding the keepalive that opens the flight (ans, its
 * 1252 bytes with the masked ML-KEM ciphertext) for the client; after a
 * tail of 124 bytes or less, a 24-byte 1-RTT, in a datagram of its own or
 * coalesced behind the tail.
 */
static int flight_tail(struct cl *c, uint8_t *ans, size_t alen, size_t budget)
{
	uint8_t f[1600];
	size_t fl = recv_ring(H.ntx[0], f, sizeof(f));
	bool coalesced;

	CHECK(fl > 42 && be16(f + 34) == QUIC_PORT && be16(f + 36) == c->a.port,
	      "no second datagram in the first flight");
	CHECK(tail_hs(f + 42, fl - 42, &coalesced) != 0,
	      "flight tail not a Handshake packet of 105..120 bytes (and a 24-byte 1-RTT)");
	CHECK(fl - 42 <= budget, "first flight over 3x the Initial");
	dust_quic_confirm_init(&c->qc, &c->cf);
	CHECK(dust_quic_answer_open(&c->qc, &H.gw->cfg.lim, (uint32_t)time(NULL), ans, alen, f + 42,
	                            fl - 42, &c->cur) == DUST_OK,
	      "the flight and its tail do not open");
	T.coalesced += coalesced;
	if (coalesced || fl - 42 > 124) /* the default shape: a 1-RTT after tails to 124 */
		return 0;
	budget -= fl - 42;
	fl = recv_ring(H.ntx[0], f, sizeof(f));
	CHECK(fl == 42 + 24 && be16(f + 34) == QUIC_PORT && be16(f + 36) == c->a.port &&
	          (f[42] & (DUST_QUIC_LONG | DUST_QUIC_FIXED)) == DUST_QUIC_FIXED,
	      "no 24-byte 1-RTT datagram after a short tail");
	CHECK(fl - 42 <= budget, "first flight over 3x the Initial");
	return 0;
}

static int intro(struct cl *c, uint8_t *ans, size_t *alen)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES], f[1600];
	int n = dust_quic_intro_build(&c->inv, &c->id, &T.rng, rg_now_ms(), dg, sizeof(dg), &c->qc);
	size_t fl, ack;

	CHECK(n == DUST_QUIC_HELLO_BYTES, "intro build");
	CHECK(send_hello(&c->a, dg, (size_t)n) == 0, "send");
	/* the flight opens with an ACK-only Initial, as the cover server's (SPEC §12.3) */
	fl = recv_ring(H.ntx[0], f, sizeof(f));
	CHECK(fl > 42 && be16(f + 34) == QUIC_PORT && be16(f + 36) == c->a.port &&
	          dust_quic_is_flight_ack(f + 42, fl - 42) && fl - 42 == 37,
	      "no 37-byte ACK-only Initial first");
	ack = fl - 42;
	fl = recv_ring(H.ntx[0], f, sizeof(f));
	CHECK(fl > 42, "no answer to an Initial");
	CHECK(be16(f + 34) == QUIC_PORT && be16(f + 36) == c->a.port, "answer ports");
	*alen = fl - 42;
	memcpy(ans, f + 42, *alen);
	CHECK(*alen == DUST_QUIC_SERVER_DGRAM_MAX, "answer not the cover server's 1252 bytes");
	CHECK(flight_tail(c, ans, *alen, 3 * (size_t)n - ack - *alen) == 0, gw_why);
	return finished(c);
}

static int send_data(struct cl *c, const struct dust_endpoint *from, uint8_t mark)
{
	uint8_t pkt[1500];
	size_t pre = dust_quic_tx_prefix(&c->cur);
	size_t il = inner(c, true, mark, pkt + pre + DUST_DATA_PREFIX);
	int n = dust_data_seal(&c->cur, &T.rng, &T.pad, (uint32_t)time(NULL), pkt + pre, il,
	                       sizeof(pkt) - pre);

	CHECK(n > 0, "seal");
	dust_quic_short_put(&c->cur, &T.rng, pkt);
	CHECK(send_dg(from, QUIC_PORT, pkt, pre + (size_t)n) == 0, "send");
	return 0;
}

static int expect_delivered(struct cl *c, uint8_t mark)
{
	uint8_t f[1600], want[128];
	size_t n = recv_ring(H.dtx[0], f, sizeof(f)), il = inner(c, true, mark, want);

	CHECK(n == 14 + il && memcmp(f + 14, want, il) == 0, "inner packet not delivered as sent");
	return 0;
}

/* Cleartext toward c from the delivery side; c must get it in a short header. */
static int reverse(struct cl *c, uint16_t want_port, uint8_t mark)
{
	uint8_t f[1600], ip[128], want[128];
	size_t il = inner(c, false, mark, ip), n;
	struct dust_seg seg;
	size_t used = 0;

	eth(f, (const uint8_t[6]){2, 2, 2, 2, 2, 2}, (const uint8_t[6]){2, 2, 2, 2, 2, 2}, 0x0800);
	memcpy(f + 14, ip, il);
	CHECK(rg_put(&H, H.drx[0], f, 14 + il) == 0, "put");
	n = recv_ring(H.ntx[0], f, sizeof(f));
	CHECK(n > 42 + 1, "no reply toward the client");
	CHECK(be16(f + 34) == QUIC_PORT && be16(f + 36) == want_port, "reply ports");
	CHECK(dust_quic_short_match(&c->cur, f + 42, n - 42), "reply is no short header for us");
	CHECK(dust_data_open(&c->cur, &H.gw->cfg.lim, (uint32_t)time(NULL), f + 43, n - 43, &seg,
	                     &used) == DUST_OK,
	      "reply does not open");
	inner(c, false, mark, want);
	CHECK(seg.len == il && memcmp(f + 43 + seg.off, want, il) == 0, "reply's inner packet");
	return 0;
}

/* ---- path validation (SPEC §9.1) ---- */

/* Every frame the gateway has put toward clients so far: count and UDP payload bytes to port. */
static void drain_to(uint16_t port, unsigned *frames, size_t *bytes, uint8_t *last, size_t *llen)
{
	struct rte_mbuf *m;

	*frames = 0;
	*bytes = 0;
	rte_delay_us_sleep(50000);
	while (rte_ring_dequeue(H.ntx[0], (void **)&m) == 0) {
		const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
		size_t n = rte_pktmbuf_data_len(m);

		if (n > 42 && be16(f + 36) == port) {
			(*frames)++;
			*bytes += n - 42;
			if (last) {
				*llen = RTE_MIN(n - 42, (size_t)1600);
				memcpy(last, f + 42, *llen);
			}
		}
		rte_pktmbuf_free(m);
	}
}

/* Cleartext toward c from the delivery side: n inner packets of il bytes (UDP, 1 mark). */
static int push_down(struct cl *c, unsigned n, size_t il)
{
	uint8_t f[1600], pl[1400];
	static const uint8_t far[4] = {10, 9, 255, 1};

	memset(pl, 0x5a, sizeof(pl));
	for (unsigned i = 0; i < n; i++) {
		size_t k = ip_udp4_opt(f + 14, far, c->inv.tunnel.a, 9, 9, pl, il - 28, 0,
		                       FRAME_NO_UDP_CSUM);

		eth(f, (const uint8_t[6]){2, 2, 2, 2, 2, 2}, (const uint8_t[6]){2, 2, 2, 2, 2, 2},
		    0x0800);
		CHECK(rg_put(&H, H.drx[0], f, 14 + k) == 0, "put");
	}
	return 0;
}

/* c seals one data packet of dlen bytes (at its place in pkt) and sends it from `from`. */
static int seal_from(struct cl *c, const struct dust_endpoint *from, uint8_t *pkt, size_t cap,
                     size_t dlen, size_t *sent)
{
	size_t pre = dust_quic_tx_prefix(&c->cur);
	int n = dust_data_seal(&c->cur, &T.rng, &T.pad, (uint32_t)time(NULL), pkt + pre, dlen,
	                       cap - pre);

	CHECK(n > 0, "seal");
	dust_quic_short_put(&c->cur, &T.rng, pkt);
	*sent = pre + (size_t)n;
	CHECK(send_dg(from, QUIC_PORT, pkt, *sent) == 0, "send");
	return 0;
}

/* A path message from c at `from` (type t, cookie). */
static int path_msg_from(struct cl *c, const struct dust_endpoint *from, enum dust_path_msg t,
                         const uint8_t *cookie)
{
	uint8_t pkt[256];
	size_t sent;

	dust_path_msg_put(pkt + dust_quic_tx_prefix(&c->cur) + DUST_DATA_PREFIX, t, cookie);
	return seal_from(c, from, pkt, sizeof(pkt), DUST_PATH_MSG_BYTES, &sent);
}

/*
 * c's packet arrives from a new address (a NAT rebinding, or anyone who
 * forwards a packet of c's from a spoofed or own address): the session
 * moves, but until that address echoes the challenge sent there, it gets
 * at most 3x the bytes that came from it. The challenge is the first frame
 * there; a wrong echo changes nothing; the right one lifts the limit.
 */
static int path_moved(struct cl *c, const struct dust_endpoint *to)
{
	uint8_t pkt[256], f[1600], cookie[DUST_PATH_COOKIE_BYTES], bad[DUST_PATH_COOKIE_BYTES];
	uint64_t lim0 = rg_drop(&H, 0, DGW_DROP_PATH_LIMIT);
	uint64_t chal0 = rg_ctr(&H, 0, DGW_CTR_PATH_CHALLENGE);
	uint64_t val0 = rg_ctr(&H, 0, DGW_CTR_PATH_VALIDATED);
	uint64_t echo0 = rg_drop(&H, 0, DGW_DROP_PATH_ECHO);
	size_t pre = dust_quic_tx_prefix(&c->cur), bytes, flen = 0, in_bytes, used = 0;
	size_t il = inner(c, true, 0x40, pkt + pre + DUST_DATA_PREFIX);
	struct dust_seg seg;
	unsigned frames;

	CHECK(seal_from(c, to, pkt, sizeof(pkt), il, &in_bytes) == 0, gw_why);
	CHECK(expect_delivered(c, 0x40) == 0, gw_why);
	CHECK(settled(), "move not read");
	rte_delay_us_sleep(20000); /* the main lcore publishes the moved session */
	CHECK(rg_ctr(&H, 0, DGW_CTR_PATH_CHALLENGE) == chal0 + 1, "no challenge sent");
	drain_to(to->port, &frames, &bytes, f, &flen);
	CHECK(frames == 1, "the challenge is not the one datagram to the new address");
	CHECK(dust_quic_short_match(&c->cur, f, flen) &&
	          dust_data_open(&c->cur, &H.gw->cfg.lim, (uint32_t)time(NULL), f + 1, flen - 1,
	                         &seg, &used) == DUST_OK,
	      "the challenge does not open");
	CHECK(dust_path_msg_parse(f + 1 + seg.off, seg.len, cookie) == DUST_PATH_CHALLENGE,
	      "no challenge in it");
	/*
	 * The move's counter jump is bounded (SPEC §12.4): the copy starts at the
	 * key epoch after next (2 x 2^22 here, the session having sent a few
	 * packets), not 2^32 ahead: forced moves cannot use up the counter.
	 */
	printf("gw-quic: the moved session's first counter: %" PRIu64 "\n", c->cur.replay.top - 1);
	CHECK(c->cur.replay.top - 1 == 2 * DUST_KEY_EPOCH_PACKETS,
	      "the moved session's counter is not at the epoch after next");
	/* 20 inner packets of 400 B toward c: only 3x in_bytes in all may reach the address */
	CHECK(push_down(c, 20, 400) == 0, gw_why);
	CHECK(settled(), "downstream not read");
	{
		size_t more;

		drain_to(to->port, &frames, &more, NULL, NULL);
		bytes += more;
	}
	printf("gw-quic: unvalidated address: %zu B in, %zu B out (limit %zu), %u data datagrams\n",
	       in_bytes, bytes, DUST_PATH_AMPLIFY * in_bytes, frames);
	CHECK(bytes <= DUST_PATH_AMPLIFY * in_bytes, "more than 3x sent to an unvalidated address");
	CHECK(rg_drop(&H, 0, DGW_DROP_PATH_LIMIT) >= lim0 + 20 - frames,
	      "path_limit drops not counted");
	/* a wrong echo: counted, still limited */
	memset(bad, 0xee, sizeof(bad));
	CHECK(path_msg_from(c, to, DUST_PATH_RESPONSE, bad) == 0, gw_why);
	CHECK(settled(), "not read");
	CHECK(rg_drop(&H, 0, DGW_DROP_PATH_ECHO) == echo0 + 1, "a wrong echo not counted");
	CHECK(rg_ctr(&H, 0, DGW_CTR_PATH_VALIDATED) == val0, "a wrong echo validated the path");
	drain_to(to->port, &frames, &bytes, NULL, NULL);
	/* the right echo lifts the limit */
	CHECK(path_msg_from(c, to, DUST_PATH_RESPONSE, cookie) == 0, gw_why);
	CHECK(settled(), "not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_PATH_VALIDATED) == val0 + 1, "the echo did not validate");
	CHECK(push_down(c, 20, 400) == 0, gw_why);
	CHECK(settled(), "downstream not read");
	drain_to(to->port, &frames, &bytes, NULL, NULL);
	CHECK(frames == 20, "a validated address is still limited");
	return 0;
}

/*
 * A random-profile session's address is proved by the client's first
 * packet under its answer's keys (key epoch 1: it needs E_s, which went
 * only to that address). Before it, the answer and data together stay
 * within 3x the intro.
 */
static int path_random(struct cl *c, size_t intro_len, uint8_t *ans, size_t alen)
{
	uint8_t pkt[256];
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop drop;
	uint64_t val0 = rg_ctr(&H, 0, DGW_CTR_PATH_VALIDATED);
	size_t bytes;
	unsigned frames;
	int n;

	CHECK(push_down(c, 20, 400) == 0, gw_why);
	CHECK(settled(), "downstream not read");
	drain_to(c->a.port, &frames, &bytes, NULL, NULL);
	printf("gw-quic: random profile before the answer is used: intro %zu B, answer %zu B, "
	       "then %zu B of data out\n",
	       intro_len, alen, bytes);
	CHECK(alen + bytes <= DUST_PATH_AMPLIFY * intro_len, "over 3x the intro before proof");
	CHECK(dust_datagram_open(&c->cur, &H.gw->cfg.lim, (uint32_t)time(NULL), ans, alen, 0, segs,
	                         DUST_CHAIN_MAX, &drop) >= 1,
	      "the answer does not open");
	n = dust_data_seal(&c->cur, &T.rng, &T.pad, (uint32_t)time(NULL), pkt, 0, sizeof(pkt));
	CHECK(n > 0 && send_dg(&c->a, RANDOM_PORT, pkt, (size_t)n) == 0, "keepalive");
	CHECK(settled(), "not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_PATH_VALIDATED) == val0 + 1, "epoch 1 did not validate");
	drain_to(c->a.port, &frames, &bytes, NULL, NULL); /* the keepalive's answer */
	CHECK(push_down(c, 20, 400) == 0, gw_why);
	CHECK(settled(), "downstream not read");
	drain_to(c->a.port, &frames, &bytes, NULL, NULL);
	CHECK(frames == 20, "a proved address is still limited");
	return 0;
}

/*
 * An authentic Initial of another invitation (c2's) from c's live address
 * (spoofed: anyone holding an invitation can send one) ends nothing: it is
 * dropped as endpoint_busy before any X25519, and c's session keeps going.
 */
static int endpoint_rule(struct cl *c, struct cl *c2)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES];
	struct dust_quic_client qc;
	uint64_t busy = rg_drop(&H, 0, DGW_DROP_ENDPOINT_BUSY),
	         ok = rg_ctr(&H, 0, DGW_CTR_INTRO_OK);
	uint64_t tx = rg_ctr(&H, 0, DGW_CTR_NET_TX);
	int n = dust_quic_intro_build(&c2->inv, &c2->id, &T.rng, rg_now_ms(), dg, sizeof(dg), &qc);

	dust_quic_client_wipe(&qc);
	CHECK(n > 0 && send_hello(&c->a, dg, (size_t)n) == 0, "spoofed Initial");
	CHECK(settled(), "not read");
	CHECK(rg_drop(&H, 0, DGW_DROP_ENDPOINT_BUSY) == busy + 1, "endpoint_busy not counted");
	CHECK(rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == ok && rg_ctr(&H, 0, DGW_CTR_NET_TX) == tx,
	      "the spoofed Initial was accepted or answered");
	CHECK(send_data(c, &c->a, 0x50) == 0 && expect_delivered(c, 0x50) == 0, gw_why);
	CHECK(reverse(c, c->a.port, 0x51) == 0, gw_why);
	return 0;
}

/* ---- size bounds (SPEC §12.4) ---- */

static const uint8_t FAR[4] = {10, 9, 255, 1};

/*
 * An IPv4 TCP segment 40000 -> 443 with flags and acknowledgement number
 * ack, an MSS option when mss is not 0, no payload, checksummed; its length
 * (44 bytes with the option, 40 without).
 */
static size_t tcp4(uint8_t *p, const uint8_t src[4], const uint8_t dst[4], uint8_t flags,
                   uint32_t ack, uint16_t mss)
{
	uint8_t *t = p + 20;
	uint16_t hl = mss ? 24 : 20;

	ip4_hdr(p, src, dst, 6, (uint16_t)(20 + hl), 0, FRAME_DF);
	memset(t, 0, hl);
	put16(t, 40000);
	put16(t + 2, 443);
	put16(t + 8, (uint16_t)(ack >> 16));
	put16(t + 10, (uint16_t)ack);
	t[12] = (uint8_t)(hl / 4 << 4);
	t[13] = flags;
	put16(t + 14, 64240);
	if (mss) {
		t[20] = 2;
		t[21] = 4;
		put16(t + 22, mss);
	}
	put16(t + 16, fold(sum16(t, hl, sum16(p + 12, 8, 6u + hl))));
	return 20u + hl;
}

/* A TCP SYN (or SYN-ACK: flags) with an MSS option; 44 bytes. */
static size_t syn(uint8_t *p, const uint8_t src[4], const uint8_t dst[4], uint8_t flags,
                  uint16_t mss)
{
	return tcp4(p, src, dst, flags, 0, mss);
}

static bool tcp_csum_ok(const uint8_t *ip)
{
	size_t tl = be16(ip + 2) - 20u;

	return fold(sum16(ip + 20, tl, sum16(ip + 12, 8, 6 + (uint32_t)tl))) == 0;
}

/*
 * ip[0..il) from the delivery side toward c: the UDP payload length of the
 * datagram c gets (0: none, or it does not open), its inner packet in in.
 */
static size_t down(struct cl *c, const uint8_t *ip, size_t il, uint8_t *in)
{
	uint8_t f[2100];
	struct dust_seg seg;
	size_t used = 0, n;

	eth(f, (const uint8_t[6]){2, 2, 2, 2, 2, 2}, (const uint8_t[6]){2, 2, 2, 2, 2, 3}, 0x0800);
	memcpy(f + 14, ip, il);
	if (rg_put(&H, H.drx[0], f, 14 + il) != 0)
		return 0;
	n = recv_ring(H.ntx[0], f, sizeof(f));
	if (n <= 43 || !dust_quic_short_match(&c->cur, f + 42, n - 42) ||
	    dust_data_open(&c->cur, &H.gw->cfg.lim, (uint32_t)time(NULL), f + 43, n - 43, &seg,
	                   &used) != DUST_OK)
		return 0;
	memcpy(in, f + 43 + seg.off, seg.len);
	return be16(f + 38) - 8u;
}

/* ip[0..il) from c toward the delivery side; what is delivered lands in out (its length). */
static size_t up(struct cl *c, const uint8_t *ip, size_t il, uint8_t *out)
{
	uint8_t dg[1500], f[1600];
	size_t pre = dust_quic_tx_prefix(&c->cur), n;
	int k;

	memcpy(dg + pre + DUST_DATA_PREFIX, ip, il);
	k = dust_data_seal(&c->cur, &T.rng, &T.pad, (uint32_t)time(NULL), dg + pre, il,
	                   dust_quic_tx_cap(&c->cur, sizeof(dg) - pre));
	if (k <= 0)
		return 0;
	dust_quic_short_put(&c->cur, &T.rng, dg);
	if (send_dg(&c->a, QUIC_PORT, dg, pre + (size_t)k) != 0)
		return 0;
	n = recv_ring(H.dtx[0], f, sizeof(f));
	if (n < 14)
		return 0;
	memcpy(out, f + 14, n - 14);
	return n - 14;
}

/* Every inner size up to the inner MTU reaches c in a datagram of at most 1252 bytes. */
static int bound_down(struct cl *c)
{
	uint8_t ip[1600], in[1600];
	size_t top = 0;

	for (size_t il = 28; il <= DUST_QUIC_S2C_INNER_MAX; il += il < 1100 ? 97 : 1) {
		size_t dl;

		ip_udp4_opt(ip, FAR, c->inv.tunnel.a, 9, 9, ip + 28, il - 28, 0,
		            FRAME_DF | FRAME_NO_UDP_CSUM);
		dl = down(c, ip, il, in);
		CHECK(dl > 0 && !memcmp(in, ip, il),
		      "an inner packet under the bound did not pass");
		CHECK(dl <= DUST_QUIC_SERVER_DGRAM_MAX, "a server datagram over 1252 bytes");
		top = dl > top ? dl : top;
	}
	printf("gw-quic: inner packets of 28..%d bytes: largest server datagram %zu (bound %d)\n",
	       DUST_QUIC_S2C_INNER_MAX, top, DUST_QUIC_SERVER_DGRAM_MAX);
	CHECK(top == DUST_QUIC_SERVER_DGRAM_MAX, "a full-size inner packet did not fill the bound");
	return 0;
}

/* Over the inner MTU: an ICMP "fragmentation needed" back to the sender, nothing to c. */
static int bound_icmp(struct cl *c, size_t il)
{
	uint8_t f[2100], *ip = f + 14, *e;
	uint64_t big = rg_drop(&H, 0, DGW_DROP_QUIC_TOO_BIG);
	uint64_t icmp = rg_ctr(&H, 0, DGW_CTR_ICMP_TOO_BIG), tx = rg_ctr(&H, 0, DGW_CTR_NET_TX);
	size_t n;

	eth(f, (const uint8_t[6]){2, 2, 2, 2, 2, 2}, (const uint8_t[6]){2, 2, 2, 2, 2, 3}, 0x0800);
	ip_udp4_opt(ip, FAR, c->inv.tunnel.a, 9, 9, ip + 28, il - 28, 0, FRAME_DF);
	CHECK(rg_put(&H, H.drx[0], f, 14 + il) == 0, "put");
	n = recv_ring(H.dtx[0], f, sizeof(f));
	e = f + 14;
	CHECK(n == 14 + 576 && be16(f + 12) == 0x0800 && e[9] == 1, "no ICMP error delivered");
	CHECK(fold(sum16(e, 20, 0)) == 0 && fold(sum16(e + 20, n - 34, 0)) == 0, "ICMP checksums");
	CHECK(e[20] == 3 && e[21] == 4 && be16(e + 26) == DUST_QUIC_S2C_INNER_MAX,
	      "not fragmentation needed with the next-hop MTU 1219");
	CHECK(!memcmp(e + 12, c->inv.tunnel.a, 4) && !memcmp(e + 16, FAR, 4), "ICMP addresses");
	CHECK(be16(e + 28 + 2) == il && e[28 + 9] == 17, "the quoted packet is not the one sent");
	CHECK(rg_drop(&H, 0, DGW_DROP_QUIC_TOO_BIG) == big + 1 &&
	          rg_ctr(&H, 0, DGW_CTR_ICMP_TOO_BIG) == icmp + 1,
	      "quic_too_big / icmp_too_big not counted");
	CHECK(rg_ctr(&H, 0, DGW_CTR_NET_TX) == tx && rte_ring_count(H.ntx[0]) == 0,
	      "the oversize packet went toward the client");
	return 0;
}

/* SYNs both ways: the MSS option comes out clamped, the TCP checksum still right. */
static int bound_mss(struct cl *c)
{
	uint8_t ip[64], in[1600];
	size_t want_up = dust_quic_tx_inner_max(&c->cur) - 40; /* what c can send back */
	uint64_t clamped = rg_ctr(&H, 0, DGW_CTR_MSS_CLAMPED);

	syn(ip, FAR, c->inv.tunnel.a, 0x02, 1460);
	CHECK(down(c, ip, 44, in) > 0, "a far host's SYN did not reach the client");
	CHECK(be16(in + 42) == DUST_QUIC_CLIENT_DGRAM_MAX - 1 - c->cur.cid_len - 32 - 40 &&
	          be16(in + 42) == want_up,
	      "the far host's MSS was not clamped to what the client sends");
	CHECK(tcp_csum_ok(in), "TCP checksum broken by the clamp (toward the client)");
	syn(ip, c->inv.tunnel.a, FAR, 0x12, 1460);
	CHECK(up(c, ip, 44, in) == 44, "the client's SYN-ACK was not delivered");
	CHECK(be16(in + 42) == DUST_QUIC_S2C_INNER_MAX - 40,
	      "the client's MSS was not clamped to 1219 - 40");
	CHECK(tcp_csum_ok(in), "TCP checksum broken by the clamp (from the client)");
	/* an MSS already within is left alone */
	syn(ip, c->inv.tunnel.a, FAR, 0x02, 1000);
	CHECK(up(c, ip, 44, in) == 44 && be16(in + 42) == 1000 && tcp_csum_ok(in),
	      "a small MSS was changed");
	CHECK(rg_ctr(&H, 0, DGW_CTR_MSS_CLAMPED) == clamped + 2, "mss_clamped is not 2");
	printf("gw-quic: MSS 1460 clamped to %zu toward the client, %d from it\n", want_up,
	       DUST_QUIC_S2C_INNER_MAX - 40);
	return 0;
}

/*
 * A hello's first Initial whose second never comes (SPEC 12.2): held (its
 * tag names an invitation), never answered, and after the hold time
 * dropped as quic_hello_unpaired (no cover server here). Polled, not timed.
 */
static int lone_first(void)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES];
	struct dust_quic_client qc;
	struct dust_endpoint ep = T.c[2].a;
	uint64_t held = rg_ctr(&H, 0, DGW_CTR_HELLO_HELD), tx = rg_ctr(&H, 0, DGW_CTR_NET_TX);
	uint64_t gone = rg_drop(&H, 0, DGW_DROP_HELLO_UNPAIRED);
	int n = dust_quic_intro_build(&T.c[2].inv, &T.c[2].id, &T.rng, rg_now_ms(), dg, sizeof(dg),
	                              &qc);

	dust_quic_client_wipe(&qc);
	ep.port = (uint16_t)(ep.port + 3000);
	CHECK(n > 0 && send_dg(&ep, QUIC_PORT, dg, DUST_QUIC_CLIENT_DGRAM) == 0, "lone first");
	CHECK(settled(), "lone first not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_HELLO_HELD) == held + 1, "a hello's first Initial not held");
	for (int i = 0; i < 1000 && rg_drop(&H, 0, DGW_DROP_HELLO_UNPAIRED) == gone; i++)
		rte_delay_us_sleep(10000);
	CHECK(rg_drop(&H, 0, DGW_DROP_HELLO_UNPAIRED) == gone + 1,
	      "a first Initial with no second was not dropped as quic_hello_unpaired");
	CHECK(rg_ctr(&H, 0, DGW_CTR_NET_TX) == tx, "a lone first Initial drew a reply");
	return 0;
}

/* Sum of every drop reason on worker 0. */
static uint64_t drops(void)
{
	uint64_t n = 0;

	for (unsigned d = 1; d < DGW_DROP_MAX; d++)
		n += rg_drop(&H, 0, d);
	return n;
}

/*
 * The client's ACK-sized datagrams (SPEC §12.4): from its address and from
 * a new one, each counted as quic_acks and nothing else: no drop, no reply,
 * nothing delivered, no move; the session carries data after them. One byte
 * longer than the cover's ACK sizes allow is a Dust packet that fails.
 */
static int acks(struct cl *c)
{
	struct dust_endpoint other = c->a;
	uint64_t n0 = rg_ctr(&H, 0, DGW_CTR_QUIC_ACKS), d0 = drops();
	uint64_t tx = rg_ctr(&H, 0, DGW_CTR_NET_TX), dlv = rg_ctr(&H, 0, DGW_CTR_DLV_TX);
	uint64_t moved = rg_ctr(&H, 0, DGW_CTR_QUIC_MIGRATED);
	uint8_t dg[64];
	size_t len, pre = dust_quic_tx_prefix(&c->cur);

	other.port = (uint16_t)(other.port + 2000);
	for (unsigned i = 0; i < 24; i++) {
		len = dust_quic_ack_put(&c->cur, &T.rng, dg, sizeof(dg));
		CHECK(len > pre && len < pre + DUST_DATA_MIN_BYTES, "an ACK-sized datagram's size");
		CHECK(send_dg(i < 20 ? &c->a : &other, QUIC_PORT, dg, len) == 0, "send ACK");
	}
	CHECK(settled(), "ACKs not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_ACKS) == n0 + 24, "quic_acks did not move by 24");
	CHECK(drops() == d0, "an ACK-sized datagram counted as a drop");
	CHECK(rg_ctr(&H, 0, DGW_CTR_NET_TX) == tx && rg_ctr(&H, 0, DGW_CTR_DLV_TX) == dlv,
	      "an ACK-sized datagram drew a frame");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_MIGRATED) == moved, "an ACK-sized datagram moved it");
	/* at the Dust floor: a short header of a data packet's least size, bytes random */
	dust_quic_short_put(&c->cur, &T.rng, dg);
	dust_rng_bytes(&T.rng, dg + pre, DUST_DATA_MIN_BYTES);
	CHECK(send_dg(&c->a, QUIC_PORT, dg, pre + DUST_DATA_MIN_BYTES) == 0, "send");
	CHECK(settled(), "not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_ACKS) == n0 + 24 && drops() == d0 + 1,
	      "a packet at the Dust floor not refused as data");
	CHECK(send_data(c, &c->a, 0x41) == 0 && expect_delivered(c, 0x41) == 0, "data after ACKs");
	return 0;
}

static int probes(void)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES], ans[1500];
	struct dust_quic_client qc;
	struct dust_identity id;
	struct dust_endpoint ep = {.ip = {.family = 4, .a = {198, 51, 100, 9}}, .port = 7000};
	uint64_t tx = rg_ctr(&H, 0, DGW_CTR_NET_TX), auth = rg_drop(&H, 0, DUST_DROP_AUTH);
	uint64_t trunc = rg_drop(&H, 0, DUST_DROP_TRUNCATED);
	uint64_t queued = rg_ctr(&H, 0, DGW_CTR_QUIC_INITIAL_QUEUED);
	int n;

	(void)ans;
	/* a well-formed Initial for an invitation this gateway never issued */
	CHECK(dust_identity_generate(&id) == 0, "id");
	n = dust_quic_intro_build(&T.stranger, &id, &T.rng, rg_now_ms(), dg, sizeof(dg), &qc);
	CHECK(n > 0 && send_hello(&ep, dg, (size_t)n) == 0, "stranger");
	/* a short header from nowhere, with and without a plausible CID */
	dust_rng_bytes(&T.rng, dg, 300);
	dg[0] = 0x43;
	CHECK(send_dg(&ep, QUIC_PORT, dg, 300) == 0, "short");
	memcpy(dg + 1, T.c[1].cur.cid, T.c[1].cur.cid_len);
	ep.port++;
	CHECK(send_dg(&ep, QUIC_PORT, dg, 300) == 0, "short with a known CID");
	/* a Handshake long header, and a truncated Initial */
	dg[0] = 0xe1;
	memcpy(dg + 1, "\x00\x00\x00\x01", 4);
	CHECK(send_dg(&ep, QUIC_PORT, dg, 200) == 0, "handshake");
	n = dust_quic_intro_build(&T.c[2].inv, &T.c[2].id, &T.rng, rg_now_ms(), dg, sizeof(dg),
	                          &qc);
	CHECK(n > 0 && send_dg(&ep, QUIC_PORT, dg, 900) == 0, "truncated");
	CHECK(settled(), "probes not read");
	rte_delay_us_sleep(50000);
	CHECK(rg_ctr(&H, 0, DGW_CTR_NET_TX) == tx && rte_ring_count(H.ntx[0]) == 0,
	      "a probe got a reply");
	CHECK(rg_drop(&H, 0, DUST_DROP_INTRO_UNKNOWN) >= 1, "stranger not counted");
	/* one tag check, no queue slot: a flood of those cannot fill the intro share */
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_INITIAL_QUEUED) == queued,
	      "a stranger's Initial took a slow-queue slot");
	CHECK(rg_drop(&H, 0, DGW_DROP_QUIC_NO_SESSION) == 1, "unknown CID not counted");
	/* the known CID's junk fails as data (auth or truncated), the short Initial as truncated */
	CHECK(rg_drop(&H, 0, DUST_DROP_AUTH) + rg_drop(&H, 0, DUST_DROP_TRUNCATED) ==
	          auth + trunc + 2,
	      "known CID with a bad packet, or the short Initial, not counted");
	CHECK(rg_drop(&H, 0, DGW_DROP_QUIC_LONG) == 1, "handshake probe not counted");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_MIGRATED) == 1, "a probe moved a session");
	dust_quic_client_wipe(&qc);
	return lone_first();
}

/* ---- resends of the first flight (SPEC §12.3) ---- */

/* What the gateway has put toward port so far, sorted by the flight's datagram kinds. */
struct flights {
	unsigned acks, answers, tails, shorts,
	    other;           /* shorts: 1-RTT after (or behind) a short tail */
	unsigned inits, hss; /* PTO resends: the Initial alone, the Handshake packet alone */
	size_t bytes, ack_len, hs_len;
	uint8_t answer[2][1600];  /* the first and the latest answer */
	uint8_t init[1600];       /* the latest Initial alone */
	uint8_t hs[1600];         /* the latest Handshake packet alone */
	uint8_t tail[1600];       /* the latest tail */
	size_t tail_len, tail_hs; /* its datagram's bytes, its Handshake packet's */
};

static void take_flights(uint16_t port, struct flights *fl)
{
	struct rte_mbuf *m;
	struct dgw_shape sh;
	size_t prev = 0; /* the datagram before */

	dgw_shape_default(&sh);
	memset(fl, 0, sizeof(*fl));
	rte_delay_us_sleep(50000);
	while (rte_ring_dequeue(H.ntx[0], (void **)&m) == 0) {
		const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
		size_t n = rte_pktmbuf_data_len(m);

		if (n > 42 && be16(f + 36) == port) {
			bool coalesced;
			size_t hs;

			n -= 42;
			fl->bytes += n;
			enum dust_quic_part part = dust_quic_answer_part(f + 42, n);

			if (dust_quic_is_flight_ack(f + 42, n)) {
				fl->acks++;
				fl->ack_len = n;
			} else if (n == DUST_QUIC_SERVER_DGRAM_MAX &&
			           part == DUST_QUIC_PART_ANSWER) {
				if (!fl->answers++)
					memcpy(fl->answer[0], f + 42, n);
				memcpy(fl->answer[1], f + 42, n);
			} else if (n == DUST_QUIC_SERVER_DGRAM_MAX &&
			           part == DUST_QUIC_PART_INITIAL) {
				fl->inits++;
				memcpy(fl->init, f + 42, n);
			} else if (part == DUST_QUIC_PART_HANDSHAKE) {
				fl->hss++;
				memcpy(fl->hs, f + 42, n);
				fl->hs_len = n;
			} else if ((hs = tail_hs(f + 42, n, &coalesced)) != 0) {
				fl->tails++;
				fl->shorts += coalesced;
				memcpy(fl->tail, f + 42, n);
				fl->tail_len = n;
				fl->tail_hs = hs;
			} else if (n == sh.short_len && !(f[42] & DUST_QUIC_LONG) &&
			           prev >= sh.tail_min && prev <= sh.short_tail) {
				fl->shorts++;
			} else {
				fl->other++;
			}
			prev = n;
		}
		rte_pktmbuf_free(m);
	}
}

static bool ctr_reaches(unsigned c, uint64_t want)
{
	for (int i = 0; i < 1000 && rg_ctr(&H, 0, c) < want; i++)
		rte_delay_us_sleep(10000);
	return rg_ctr(&H, 0, c) >= want;
}

/*
 * The answer's Initial opened with the public Initial keys of the hello's
 * DCID: its packet number and its frames (the ACK and the ServerHello).
 */
static bool answer_frames(const uint8_t *hello, const uint8_t *ans, uint64_t *pn, uint8_t *f,
                          size_t *flen)
{
	struct dust_quic_keys k;
	struct quic_long q;

	dust_quic_initial_keys(hello + 6, hello[5], true, &k);
	return quic_long_parse(ans, DUST_QUIC_SERVER_DGRAM_MAX, &q) &&
	       quic_unprotect(&k, ans, q.pn_off, q.length, pn, f, flen);
}

/*
 * An answer and its Initial resent alone (b), as quic-go's probe: only
 * PADDING, then the same CRYPTO frame (the 90-byte ServerHello: E_s,
 * random) in a newer packet number.
 */
static int same_server_hello(const uint8_t *hello, const uint8_t *a, const uint8_t *b)
{
	uint8_t fa[1500], fb[1500];
	size_t na = 0, nb = 0, crypto = 4 + 90;
	uint64_t pa = 0, pb = 0;

	CHECK(answer_frames(hello, a, &pa, fa, &na) && answer_frames(hello, b, &pb, fb, &nb),
	      "an answer's Initial does not open with the Initial keys");
	CHECK(pb > pa, "the resent Initial's packet number is not newer");
	CHECK(na > crypto && nb > na && fb[nb - crypto] == DUST_QUIC_FRAME_CRYPTO &&
	          memcmp(fa + na - crypto, fb + nb - crypto, crypto) == 0,
	      "the resent Initial is not the same ServerHello");
	for (size_t i = 0; i < nb - crypto; i++)
		CHECK(fb[i] == DUST_QUIC_FRAME_PADDING,
		      "the resent Initial holds more than PADDING");
	return 0;
}

/*
 * One hello (2500 bytes) and silence: the PTO resends stop at 3x what the
 * address sent (SPEC §9.1), counted as quic_rtx_limited; the flight is then given
 * up. A new intro of c from a new port: a session of its own.
 */
static int closes(struct cl *c);
static int lost_second(struct cl *c);

static int pto_limit(struct cl *c)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES];
	struct dust_quic_client qc;
	struct dust_endpoint ep = c->a;
	struct flights f;
	uint64_t ok = rg_ctr(&H, 0, DGW_CTR_INTRO_OK);
	uint64_t gone = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_EXPIRED);
	uint64_t lim = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_LIMITED);
	int n = dust_quic_intro_build(&c->inv, &c->id, &T.rng, rg_now_ms(), dg, sizeof(dg), &qc);

	printf("gw-quic: one hello and silence: resends stop at 3x\n");
	dust_quic_client_wipe(&qc);
	ep.port = (uint16_t)(ep.port + 7);
	CHECK(n == DUST_QUIC_HELLO_BYTES && send_hello(&ep, dg, (size_t)n) == 0, "send");
	CHECK(ctr_reaches(DGW_CTR_INTRO_OK, ok + 1), "hello not accepted");
	CHECK(ctr_reaches(DGW_CTR_QUIC_RTX_EXPIRED, gone + 1), "the flight never given up");
	take_flights(ep.port, &f);
	printf("gw-quic: %zu bytes for %d\n", f.bytes, n);
	/* quic-go's check: a resend goes while under 3x, so the last may pass it by one */
	CHECK(f.bytes <= 3 * (size_t)n + DUST_QUIC_SERVER_DGRAM_MAX,
	      "resends over 3x what the address sent, and a datagram more");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_LIMITED) > lim, "the 3x limit never refused a resend");
	return closes(c);
}

/*
 * A client that lost the flight resends its hello as Chromium does on its
 * PTO, one Initial (dust_quic_intro_resend, packet number 4): acknowledged
 * as quic-go acknowledges it, an ACK-only Initial of 1, 2 and 4 (39 bytes).
 * At +4 s it gives the connection up with a CONNECTION_CLOSE: the gateway
 * ends the kept flight (quic_rtx_closed) and resends nothing more.
 */
static int closes(struct cl *c)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES];
	struct dust_quic_client qc;
	struct dust_endpoint ep = c->a;
	struct flights f;
	uint64_t ok = rg_ctr(&H, 0, DGW_CTR_INTRO_OK), rtx = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_HELLO);
	uint64_t closed = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_CLOSED);
	uint64_t gone = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_EXPIRED);
	uint64_t ans = rg_ctr(&H, 0, DGW_CTR_QUIC_ANSWER);
	int n = dust_quic_intro_build(&c->inv, &c->id, &T.rng, rg_now_ms(), dg, sizeof(dg), &qc);

	printf("gw-quic: a one-Initial resend gets an ACK of 1, 2 and 4; the close ends it\n");
	ep.port = (uint16_t)(ep.port + 9);
	CHECK(n == DUST_QUIC_HELLO_BYTES && send_hello(&ep, dg, (size_t)n) == 0, "send");
	CHECK(ctr_reaches(DGW_CTR_INTRO_OK, ok + 1), "hello not accepted");
	/*
	 * The resend comes once the flight went out (Chromium's is at its PTO,
	 * 300 ms on): sent as soon as the intro was accepted, it could reach the
	 * gateway before the answer's publication (slower under the sanitizers),
	 * when no flight is kept to resend, and be taken for a new hello's first.
	 */
	CHECK(ctr_reaches(DGW_CTR_QUIC_ANSWER, ans + 1), "no flight for the hello");
	n = dust_quic_intro_resend(&qc, &T.rng, dg, sizeof(dg));
	CHECK(n == DUST_QUIC_CLIENT_DGRAM && send_dg(&ep, QUIC_PORT, dg, (size_t)n) == 0,
	      "send the resend");
	CHECK(ctr_reaches(DGW_CTR_QUIC_RTX_HELLO, rtx + 1), "a one-Initial resend not answered");
	n = dust_quic_intro_close(&qc, 4000000, dg, sizeof(dg));
	dust_quic_client_wipe(&qc);
	CHECK(n == DUST_QUIC_CLIENT_DGRAM && send_dg(&ep, QUIC_PORT, dg, (size_t)n) == 0,
	      "send the close");
	CHECK(ctr_reaches(DGW_CTR_QUIC_RTX_CLOSED, closed + 1), "the close did not end the flight");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_EXPIRED) == gone, "a closed flight expired too");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_HELLO) == rtx + 1, "the close answered as a hello");
	take_flights(ep.port, &f);
	CHECK(f.answers == 1 && f.tails >= 1 && f.acks == 2 && f.ack_len == 39,
	      "the flight and the resend's ACK did not come");
	return lost_second(c);
}

/*
 * A hello whose second Initial is lost: the gateway holds the first; the
 * client's first PTO resend carries the first Initial's spans again
 * (Chromium's order, SPEC 12.2) and takes the held one's place; the next
 * carries the second's and completes the hello. Paired with the first's
 * copy, the hello could never open.
 */
static int lost_second(struct cl *c)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES];
	struct dust_quic_client qc;
	struct dust_endpoint ep = c->a;
	uint64_t ok = rg_ctr(&H, 0, DGW_CTR_INTRO_OK);
	uint64_t held = rg_ctr(&H, 0, DGW_CTR_HELLO_HELD);
	uint64_t gone = rg_drop(&H, 0, DGW_DROP_HELLO_UNPAIRED);
	uint64_t closed = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_CLOSED);
	struct flights f;
	int n = dust_quic_intro_build(&c->inv, &c->id, &T.rng, rg_now_ms(), dg, sizeof(dg), &qc);

	printf("gw-quic: the second Initial lost: the resends, first's then second's, make it\n");
	ep.port = (uint16_t)(ep.port + 11);
	CHECK(n == DUST_QUIC_HELLO_BYTES &&
	          send_dg(&ep, QUIC_PORT, dg, DUST_QUIC_CLIENT_DGRAM) == 0,
	      "send the first Initial");
	for (int i = 0; i < 2; i++) {
		n = dust_quic_intro_resend(&qc, &T.rng, dg, sizeof(dg));
		CHECK(n == DUST_QUIC_CLIENT_DGRAM && send_dg(&ep, QUIC_PORT, dg, (size_t)n) == 0,
		      "send a resend");
		CHECK(settled(), "resend not read");
	}
	CHECK(ctr_reaches(DGW_CTR_INTRO_OK, ok + 1),
	      "a hello completed by its resends not accepted");
	CHECK(rg_ctr(&H, 0, DGW_CTR_HELLO_HELD) == held + 2,
	      "the first's resend not held in its place");
	CHECK(rg_drop(&H, 0, DGW_DROP_HELLO_UNPAIRED) == gone + 1,
	      "the replaced first Initial not counted as quic_hello_unpaired");
	/* the client gives up (its answer is not read here): the kept flight ends */
	n = dust_quic_intro_close(&qc, 4000000, dg, sizeof(dg));
	dust_quic_client_wipe(&qc);
	CHECK(n == DUST_QUIC_CLIENT_DGRAM && send_dg(&ep, QUIC_PORT, dg, (size_t)n) == 0,
	      "send the close");
	CHECK(ctr_reaches(DGW_CTR_QUIC_RTX_CLOSED, closed + 1), "the close did not end the flight");
	take_flights(ep.port, &f);
	CHECK(f.answers >= 1, "no flight for the hello its resends completed");
	return 0;
}

/*
 * A client whose flight was lost sends its hello again (same DCID, same
 * bytes here): the gateway acknowledges it as quic-go does (an ACK-only
 * Initial), not as a new session and not as a replay. With no word from the
 * client, the flight goes out again as quic-go resends its own (SPEC
 * §12.3): the Initial alone twice at one PTO after the flight (never
 * before), then the Handshake packet alone (new bytes) and the tail as
 * first sent, in turn, four times, within 3x what the address sent, until
 * it is given up; the client opens the resent parts. The same hello from
 * another port is a replay: no answer. Its first Initial alone from a
 * third port (a prober's replay) is not held for a second: judged a replay
 * at once (SPEC 12.5).
 */
static int resends(struct cl *c)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES];
	struct flights a, b;
	struct dust_endpoint other = c->a;
	uint64_t ok = rg_ctr(&H, 0, DGW_CTR_INTRO_OK), rtx = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_HELLO);
	uint64_t ans = rg_ctr(&H, 0, DGW_CTR_QUIC_ANSWER);
	uint64_t pto = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_PTO), t0, seen;
	uint64_t pto_hs = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_PTO_HS);
	uint64_t gone = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_EXPIRED), tx;
	uint64_t pair = rg_drop(&H, 0, DGW_DROP_QUIC_RTX_PAIR);
	uint64_t replayed = rg_drop(&H, 0, DGW_DROP_HELLO_REPLAYED), held;
	size_t sent = 0, got = 0, hs_at;
	int n = dust_quic_intro_build(&c->inv, &c->id, &T.rng, rg_now_ms(), dg, sizeof(dg), &c->qc);

	CHECK(n == DUST_QUIC_HELLO_BYTES, "intro build");
	t0 = rg_now_ms(); /* before the flight: no PTO resend may come 205 ms after it */
	CHECK(send_hello(&c->a, dg, (size_t)n) == 0, "send");
	CHECK(ctr_reaches(DGW_CTR_INTRO_OK, ok + 1), "hello not accepted");
	CHECK(ctr_reaches(DGW_CTR_QUIC_ANSWER, ans + 1),
	      "no flight for the hello"); /* see closes */
	take_flights(c->a.port, &a);
	CHECK(send_hello(&c->a, dg, (size_t)n) == 0, "send again");
	sent = 2 * (size_t)n;
	CHECK(settled(), "the hello again not read");
	take_flights(c->a.port, &b);
	got = a.bytes + b.bytes;
	CHECK(rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == ok + 1, "the hello again made a new session");
	CHECK(a.acks == 1 && a.answers == 1 && a.tails == 1 && a.other == 0,
	      "the hello not answered with a flight");
	/* quic-go's 1-RTT after a short tail (the default shape: 24 B after tails to 124 B) */
	CHECK(a.shorts == (a.tail_hs <= 124), "no 1-RTT datagram right after a short tail");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_HELLO) == rtx + 1 &&
	          rg_drop(&H, 0, DGW_DROP_QUIC_RTX_PAIR) == pair + 1,
	      "the hello again not answered once (its second Initial not passed by)");
	/* its packet numbers 1 and 2 again: the ACK is the flight's first's size */
	CHECK(b.acks == 1 && b.ack_len == 37 && b.answers == 0 && b.tails == 0 && b.hss == 0 &&
	          b.other == 0,
	      "the hello again not answered with an ACK-only Initial alone");

	printf("gw-quic: no confirmation: the flight again on the PTOs, then given up\n");
	CHECK(ctr_reaches(DGW_CTR_QUIC_RTX_PTO, pto + 1), "no PTO resend");
	seen = rg_now_ms();
	/* the flight went after t0: a PTO seen sooner than 205 ms after it fired early */
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_PTO) > pto + 1 || seen - t0 >= DGW_RTX_PTO_MS,
	      "PTO resend before the PTO");
	CHECK(ctr_reaches(DGW_CTR_QUIC_RTX_EXPIRED, gone + 1), "the flight never given up");
	take_flights(c->a.port, &b);
	got += b.bytes;
	pto = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_PTO) - pto;
	pto_hs = rg_ctr(&H, 0, DGW_CTR_QUIC_RTX_PTO_HS) - pto_hs;
	printf("gw-quic: %" PRIu64 " PTO resends (%" PRIu64
	       " of the Handshake), %zu bytes for %zu\n",
	       pto, pto_hs, got, sent);
	/* two hellos from the address: room under 3x for all four */
	CHECK(pto == DGW_RTX_PTO_MAX && pto_hs == pto / 2, "not the four PTO resends");
	CHECK(got <= 3 * sent, "resends over 3x what the address sent");
	CHECK(b.acks == 0 && b.answers == 0 && b.other == 0 && b.shorts == 0 && b.inits == 4 &&
	          b.hss == 2 && b.tails == 2,
	      "the PTO resends are not the Initial alone twice, then the Handshake and the tail");
	CHECK(same_server_hello(dg, a.answer[0], b.init) == 0, gw_why);
	/* the Handshake packet sent again: its size, other bytes; the tail as first sent */
	hs_at = DUST_QUIC_SERVER_DGRAM_MAX - b.hs_len;
	CHECK(b.hs_len > 1088 && memcmp(a.answer[0] + hs_at + 32, b.hs + 32, 64) != 0,
	      "the resent Handshake packet is not new bytes of the answer's size");
	CHECK(b.tail_hs == a.tail_hs, "the resent tail is not the first tail's size");
	CHECK(dust_quic_answer_open_parts(&c->qc, &H.gw->cfg.lim, (uint32_t)time(NULL), b.init,
	                                  DUST_QUIC_SERVER_DGRAM_MAX, b.hs, b.hs_len, b.tail,
	                                  b.tail_len, &c->cur) == DUST_OK,
	      "the resent flight does not open");
	CHECK(finished(c) == 0, gw_why);

	printf("gw-quic: the same hello from another port is a replay: no answer\n");
	other.port = (uint16_t)(other.port + 1);
	tx = rg_ctr(&H, 0, DGW_CTR_NET_TX);
	held = rg_ctr(&H, 0, DGW_CTR_HELLO_HELD);
	CHECK(send_hello(&other, dg, (size_t)n) == 0, "send from another port");
	CHECK(settled(), "replay not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_NET_TX) == tx, "a replay from another port got an answer");
	CHECK(rg_drop(&H, 0, DGW_DROP_HELLO_REPLAYED) == replayed + 1,
	      "the replay's first Initial not counted as quic_hello_replayed");
	printf("gw-quic: its first Initial alone from a third port: a replay at once, not held\n");
	other.port = (uint16_t)(other.port + 1);
	CHECK(send_dg(&other, QUIC_PORT, dg, DUST_QUIC_CLIENT_DGRAM) == 0, "send the first alone");
	CHECK(settled(), "the first alone not read");
	CHECK(rg_drop(&H, 0, DGW_DROP_HELLO_REPLAYED) == replayed + 2,
	      "a replayed first Initial alone not counted as quic_hello_replayed");
	CHECK(rg_ctr(&H, 0, DGW_CTR_HELLO_HELD) == held && rg_ctr(&H, 0, DGW_CTR_NET_TX) == tx,
	      "a replayed first Initial was held, or answered");
	return pto_limit(c);
}

static int phases(void)
{
	uint8_t ans[1500];
	size_t alen;
	struct dust_endpoint moved;

	printf("gw-quic: %d clients introduce on port %d\n", NQ, QUIC_PORT);
	/* the first flight's 1-RTT on its own, then coalesced behind the tail (SPEC §12.3) */
	for (unsigned i = 0; i < NQ; i++) {
		shape_coalesce(i == 0 ? 0 : 3);
		CHECK(intro(&T.c[i], ans, &alen) == 0, gw_why);
		CHECK(T.coalesced == (i > 0 ? i : 0), "the 1-RTT not coalesced as the shape says");
	}
	shape_coalesce(1); /* the default */
	CHECK(settled(), "intros not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == NQ, "intro_ok");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_ANSWER) == NQ, "quic_answers");
	/* each hello's first Initial held until its second (SPEC 12.2) */
	CHECK(rg_ctr(&H, 0, DGW_CTR_HELLO_HELD) == NQ && rg_ctr(&H, 0, DGW_CTR_HELLO_PAIRED) == NQ,
	      "hellos not held and paired");
	/* both Initials of each hello ran off the RX burst, in the intro share (slow.c) */
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_INITIAL_QUEUED) == 2 * NQ,
	      "hellos not run from the slow queue");

	printf("gw-quic: data both ways in 1-RTT short headers\n");
	for (unsigned i = 0; i < NQ; i++) {
		CHECK(send_data(&T.c[i], &T.c[i].a, (uint8_t)(0x10 + i)) == 0, gw_why);
		CHECK(expect_delivered(&T.c[i], (uint8_t)(0x10 + i)) == 0, gw_why);
		CHECK(reverse(&T.c[i], T.c[i].a.port, (uint8_t)(0x20 + i)) == 0, gw_why);
	}

	printf("gw-quic: client 0's NAT rebinds: its CID keeps the session, the new address\n"
	       "        gets 3x what it sent until it echoes the challenge\n");
	moved = T.c[0].a;
	moved.port = (uint16_t)(moved.port + 1000);
	CHECK(path_moved(&T.c[0], &moved) == 0, gw_why);
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_MIGRATED) == 1, "no move counted");
	CHECK(rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == NQ, "the move took a new intro");
	CHECK(reverse(&T.c[0], moved.port, 0x31) == 0, gw_why);

	printf("gw-quic: ACK-sized datagrams are counted and passed by\n");
	CHECK(acks(&T.c[2]) == 0, gw_why);

	printf("gw-quic: another invitation's Initial from client 1's address ends nothing\n");
	CHECK(endpoint_rule(&T.c[1], &T.c[2]) == 0, gw_why);

	printf("gw-quic: size bounds: server datagrams <= %d, ICMP for more, MSS clamped\n",
	       DUST_QUIC_SERVER_DGRAM_MAX);
	CHECK(bound_down(&T.c[1]) == 0, gw_why);
	CHECK(bound_icmp(&T.c[1], DUST_QUIC_S2C_INNER_MAX + 1) == 0, gw_why);
	CHECK(bound_icmp(&T.c[1], 1500) == 0, gw_why);
	CHECK(bound_mss(&T.c[1]) == 0, gw_why);

	printf("gw-quic: a lost flight: the hello again gets an ACK, no new session\n");
	CHECK(resends(&T.c[NQ + 1]) == 0, gw_why);

	printf("gw-quic: probes get nothing back\n");
	CHECK(probes() == 0, gw_why);

	printf("gw-quic: the random profile beside it on port %d\n", RANDOM_PORT);
	{
		struct cl *c = &T.c[NQ];
		uint8_t dg[1024], f[1600];
		int n = dust_intro_build(&c->inv, &c->id, &T.rng, &T.pad, rg_now_ms(), dg,
		                         sizeof(dg), &c->cur);
		size_t fl;

		CHECK(n > 0 && send_dg(&c->a, RANDOM_PORT, dg, (size_t)n) == 0, "random intro");
		fl = recv_ring(H.ntx[0], f, sizeof(f));
		CHECK(fl > 42 && be16(f + 34) == RANDOM_PORT, "random profile keepalive");
		CHECK(path_random(c, (size_t)n, f + 42, fl - 42) == 0, gw_why);
	}
	return 0;
}

/* ---- moves mode: RSS sends a moved client to another worker (issue 17 item 3) ---- */

enum { MQ = 4 }; /* workers in moves mode */

static int send_q(unsigned q, const struct dust_endpoint *from, const uint8_t *dg, size_t len)
{
	return rg_send(&H, q, from, QUIC_PORT, dg, len);
}

/* c's Handshake packet on worker q, answered with a keepalive. */
static int confirm_on(struct cl *c, unsigned q)
{
	uint8_t dg[1500], f[1600];
	size_t pre = dust_quic_hs_prefix(&c->cur);
	int n;

	n = dust_data_seal(&c->cur, &T.rng, &T.pad, (uint32_t)time(NULL), dg + pre, 0,
	                   sizeof(dg) - pre);
	CHECK(n > 0, "seal");
	dust_quic_hs_put(&c->cur, &T.rng, dg, (size_t)n);
	CHECK(send_q(q, &c->a, dg, pre + (size_t)n) == 0, "handshake");
	CHECK(recv_ring(H.ntx[q], f, sizeof(f)) > 43, "no keepalive for the Handshake packet");
	return 0;
}

/* The flight's Handshake tail from worker q, for c's session. */
static int tail_on(struct cl *c, unsigned q, uint8_t *ans, size_t alen)
{
	uint8_t f[1600];
	size_t fl = recv_ring(H.ntx[q], f, sizeof(f));

	CHECK(fl > 42 && dust_quic_answer_open(&c->qc, &H.gw->cfg.lim, (uint32_t)time(NULL), ans,
	                                       alen, f + 42, fl - 42, &c->cur) == DUST_OK,
	      "no flight tail that opens from the intro's worker");
	return 0;
}

/* c introduces on worker q (its session lives there), then sends its Handshake packet. */
static int intro_on(struct cl *c, unsigned q)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES], f[1600];
	int n = dust_quic_intro_build(&c->inv, &c->id, &T.rng, rg_now_ms(), dg, sizeof(dg), &c->qc);
	size_t fl;

	CHECK(n > 0 && send_q(q, &c->a, dg, DUST_QUIC_CLIENT_DGRAM) == 0 &&
	          send_q(q, &c->a, dg + DUST_QUIC_CLIENT_DGRAM, DUST_QUIC_CLIENT_DGRAM) == 0,
	      "intro");
	/* the flight (SPEC §12.3): an ACK-only Initial, the answer, a Handshake tail */
	fl = recv_ring(H.ntx[q], f, sizeof(f));
	CHECK(fl > 42 && dust_quic_is_flight_ack(f + 42, fl - 42),
	      "no ACK-only Initial from the intro's worker");
	fl = recv_ring(H.ntx[q], f, sizeof(f));
	CHECK(fl > 42 + DUST_QUIC_INITIAL_MIN, "no answer from the intro's worker");
	CHECK(tail_on(c, q, f + 42, fl - 42) == 0, gw_why);
	return confirm_on(c, q);
}

/*
 * F6 (issue 21): c's first use, and at once (one burst, so the binding is
 * still being written) a restarted Initial from the same address, as a
 * client that gave up on the first sends. The restart must be answered,
 * and the session it opens carry data: the abandoned Initial must not win.
 */
static int restart_pending(struct cl *c, unsigned q)
{
	uint8_t a[DUST_QUIC_HELLO_BYTES], b[DUST_QUIC_HELLO_BYTES], f[1600], flight[1600];
	size_t flen = 0;
	struct dust_quic_client old;
	uint64_t now = rg_now_ms();
	int na = dust_quic_intro_build(&c->inv, &c->id, &T.rng, now, a, sizeof(a), &old);
	int nb = dust_quic_intro_build(&c->inv, &c->id, &T.rng, now + 5, b, sizeof(b), &c->qc);
	struct rte_mbuf *m[4] = {NULL, NULL, NULL, NULL};
	const size_t one = DUST_QUIC_CLIENT_DGRAM;
	bool answered = false;
	size_t fl;

	dust_quic_client_wipe(&old);
	CHECK(na > 0 && nb > 0, "intro build");
	/* each hello's two Initials */
	m[0] = rg_dg_mbuf(&H, &c->a, QUIC_PORT, a, one);
	m[1] = rg_dg_mbuf(&H, &c->a, QUIC_PORT, a + one, one);
	m[2] = rg_dg_mbuf(&H, &c->a, QUIC_PORT, b, one);
	m[3] = rg_dg_mbuf(&H, &c->a, QUIC_PORT, b + one, one);
	CHECK(m[0] && m[1] && m[2] && m[3] &&
	          rte_ring_enqueue_burst(H.nrx[q], (void **)m, 4, NULL) == 4,
	      "enqueue");
	/* the abandoned Initial's flight may come first: the client ignores it */
	for (int k = 0; k < 12 && !answered && (fl = recv_ring(H.ntx[q], f, sizeof(f))) > 42; k++) {
		if (fl - 42 >= DUST_QUIC_INITIAL_MIN) { /* a flight's 1252 bytes: keep the last */
			memcpy(flight, f + 42, fl - 42);
			flen = fl - 42;
		} else if (flen && !dust_quic_is_flight_ack(f + 42, fl - 42)) {
			answered = dust_quic_answer_open(&c->qc, &H.gw->cfg.lim,
			                                 (uint32_t)time(NULL), flight, flen, f + 42,
			                                 fl - 42, &c->cur) == DUST_OK;
		}
	}
	CHECK(answered, "the restarted Initial got no answer: the abandoned one won");
	CHECK(confirm_on(c, q) == 0, gw_why);
	return 0;
}

/* c's inner packet (mark) from `from`, put on worker q's RX: delivered by worker dq. */
static int up_via(struct cl *c, const struct dust_endpoint *from, unsigned q, unsigned dq,
                  uint8_t mark)
{
	uint8_t pkt[1500], f[1600], want[128];
	size_t pre = dust_quic_tx_prefix(&c->cur), il = inner(c, true, mark, want), n;
	int k;

	memcpy(pkt + pre + DUST_DATA_PREFIX, want, il);
	k = dust_data_seal(&c->cur, &T.rng, &T.pad, (uint32_t)time(NULL), pkt + pre, il,
	                   sizeof(pkt) - pre);
	CHECK(k > 0, "seal");
	dust_quic_short_put(&c->cur, &T.rng, pkt);
	CHECK(send_q(q, from, pkt, pre + (size_t)k) == 0, "send");
	n = recv_ring(H.dtx[dq], f, sizeof(f));
	CHECK(n == 14 + il && memcmp(f + 14, want, il) == 0,
	      "a moved client's packet was not delivered by its session's worker");
	return 0;
}

/* Cleartext toward c put on worker q's delivery RX: c gets it at port, and it opens. */
static int down_via(struct cl *c, unsigned q, uint16_t port, uint8_t mark)
{
	uint8_t f[1600], ip[128];
	size_t il = inner(c, false, mark, ip), n, used = 0;
	struct dust_seg seg;

	eth(f, (const uint8_t[6]){2, 2, 2, 2, 2, 2}, (const uint8_t[6]){2, 2, 2, 2, 2, 2}, 0x0800);
	memcpy(f + 14, ip, il);
	CHECK(rg_put(&H, H.drx[q], f, 14 + il) == 0, "put");
	/* frames for the clients' old ports (their first flights' repeats) are not this */
	for (int k = 0; k < 8 && (n = recv_ring(H.ntx[q], f, sizeof(f))) > 42; k++)
		if (be16(f + 36) == port)
			break;
	CHECK(n > 43 && be16(f + 36) == port, "no reply toward the moved client's new port");
	CHECK(dust_quic_short_match(&c->cur, f + 42, n - 42) &&
	          dust_data_open(&c->cur, &H.gw->cfg.lim, (uint32_t)time(NULL), f + 43, n - 43,
	                         &seg, &used) == DUST_OK &&
	          seg.len == il && memcmp(f + 43 + seg.off, ip, il) == 0,
	      "the reply to the moved client does not open");
	return 0;
}

/* Until invitation idx's published session is the one at port (the main lcore publishes it). */
static bool published_at(uint32_t idx, uint16_t port)
{
	for (int i = 0; i < 20000; i++) {
		struct dust_session *s = atomic_load(&H.gw->pub[idx].s);

		if (s && s->peer.port == port)
			return true;
		rte_delay_us_sleep(500);
	}
	return false;
}

static uint64_t sum_ctr(unsigned c)
{
	uint64_t n = 0;

	for (unsigned w = 0; w < MQ; w++)
		n += rg_ctr(&H, w, c);
	return n;
}

/*
 * Every quic client introduces on its own worker, then its NAT moves and
 * RSS puts its datagrams on the next worker: they are handed to the
 * session's worker, which moves the session; data goes both ways; no
 * datagram is dropped as quic_no_session.
 */
static int phases_moves(void)
{
	uint64_t t0 = rg_now_ms();

	printf("gw-quic moves: %d clients on %d workers, each NAT moves to the next worker\n", NQ,
	       MQ);
	for (unsigned i = 0; i < NQ; i++)
		CHECK(intro_on(&T.c[i], i) == 0, gw_why);
	printf("gw-quic moves: (%" PRIu64
	       " ms) a restarted Initial while the first use is written\n",
	       rg_now_ms() - t0);
	CHECK(restart_pending(&T.c[NQ + 1], MQ - 1) == 0, gw_why);
	CHECK(up_via(&T.c[NQ + 1], &T.c[NQ + 1].a, MQ - 1, MQ - 1, 0x5f) == 0, gw_why);
	printf("gw-quic moves: (%" PRIu64 " ms) the moves\n", rg_now_ms() - t0);
	for (unsigned i = 0; i < NQ; i++) {
		struct cl *c = &T.c[i];
		struct dust_endpoint moved = c->a;
		unsigned other = (i + 1) % MQ, third = (i + 2) % MQ;

		moved.port = (uint16_t)(moved.port + 1000);
		CHECK(up_via(c, &moved, other, i, (uint8_t)(0x60 + i)) == 0, gw_why);
		CHECK(up_via(c, &moved, other, i, (uint8_t)(0x70 + i)) == 0, gw_why);
		CHECK(published_at(i, moved.port), "the moved session was never published");
		CHECK(down_via(c, third, moved.port, (uint8_t)(0x80 + i)) == 0, gw_why);
	}
	printf("gw-quic moves: (%" PRIu64 " ms) handed over %" PRIu64 ", taken %" PRIu64
	       ", moved %" PRIu64 "\n",
	       rg_now_ms() - t0, sum_ctr(DGW_CTR_HANDOFF_TX), sum_ctr(DGW_CTR_HANDOFF_RX),
	       sum_ctr(DGW_CTR_QUIC_MIGRATED));
	for (unsigned w = 0; w < MQ; w++)
		CHECK(rg_drop(&H, w, DGW_DROP_QUIC_NO_SESSION) == 0 &&
		          rg_drop(&H, w, DGW_DROP_HANDOFF_FULL) == 0,
		      "a moved client's datagram was dropped");
	CHECK(sum_ctr(DGW_CTR_HANDOFF_TX) == 2 * NQ && sum_ctr(DGW_CTR_HANDOFF_RX) == 2 * NQ,
	      "not every moved datagram crossed once");
	CHECK(sum_ctr(DGW_CTR_QUIC_MIGRATED) == NQ, "not every session moved once");
	/* each CID names the worker that holds its session (1 in 4^4 by chance without the pick) */
	for (unsigned i = 0; i < NQ; i++)
		CHECK(dgw_quic_cid_owner(H.gw, T.c[i].cur.cid) == i, "a CID names another worker");
	CHECK(dgw_quic_cid_owner(H.gw, T.c[NQ + 1].cur.cid) == MQ - 1,
	      "a CID names another worker");
	/* NQ first uses, and the restart's two (its first use, then its restart) */
	CHECK(sum_ctr(DGW_CTR_INTRO_OK) == NQ + 2, "a move took a new intro");
	return 0;
}

/* ---- acks mode: the gateway's ACK-sized datagrams (SPEC §12.4) ---- */

/*
 * With [quic] acks = cover, after every second data datagram from a client
 * the gateway sends it one datagram of the cover's downstream ACK sizes
 * (22..32 B: under any Dust packet behind the empty DCID), with the
 * client's short header; a datagram that asked for a keepalive gets the
 * keepalive instead. The other modes run with acks off: they count frames.
 */
static int phases_acks(void)
{
	struct cl *c = &T.c[0];
	uint8_t ans[1500];
	size_t alen;
	unsigned acks = 0, other = 0, bad = 0;
	struct rte_mbuf *m;

	printf("gw-quic acks: a client introduces, sends 10 data datagrams\n");
	CHECK(intro(c, ans, &alen) == 0, gw_why);
	for (unsigned i = 0; i < 10; i++) {
		CHECK(send_data(c, &c->a, (uint8_t)(0x50 + i)) == 0, gw_why);
		CHECK(expect_delivered(c, (uint8_t)(0x50 + i)) == 0, gw_why);
	}
	CHECK(settled(), "data not read");
	rte_delay_us_sleep(50000);
	while (rte_ring_dequeue(H.ntx[0], (void **)&m) == 0) {
		const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
		size_t n = rte_pktmbuf_data_len(m);

		if (n > 42 && be16(f + 36) == c->a.port &&
		    dust_quic_ack_match(&c->cur, f + 42, n - 42)) {
			acks++;
			bad += n - 42 < 22 || n - 42 > 32;
		} else {
			other++;
		}
		rte_pktmbuf_free(m);
	}
	printf("gw-quic acks: %u ACK-sized datagrams, %u other frames\n", acks, other);
	CHECK(acks == 5 && bad == 0, "not one 22..32-byte datagram per two data datagrams");
	CHECK(other == 0, "frames besides the ACK-sized ones");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_ACKS_TX) == 5, "quic_acks_tx");

	/*
	 * datagrams that carry only pure TCP ACKs call for none, as quic-go
	 * acknowledges no ACK-only packet (SPEC §12.4)
	 */
	printf("gw-quic acks: 10 datagrams of pure TCP ACKs\n");
	for (unsigned i = 0; i < 10; i++) {
		uint8_t ip[64], in[1600];

		tcp4(ip, c->inv.tunnel.a, FAR, 0x10, 1000 + i, 0); /* a pure ACK: 40 bytes */
		CHECK(up(c, ip, 40, in) == 40 && !memcmp(in, ip, 40), "a pure ACK not delivered");
	}
	CHECK(settled(), "ACKs not read");
	rte_delay_us_sleep(50000);
	CHECK(rte_ring_count(H.ntx[0]) == 0, "an ACK-sized datagram for pure TCP ACKs");
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_ACKS_TX) == 5, "quic_acks_tx moved for pure TCP ACKs");
	return 0;
}

/*
 * The next frame toward c: a path MTU probe of want bytes (SPEC §12.4), a
 * short header whose Dust packet opens as a path challenge; its cookie.
 */
static int probe_back(struct cl *c, size_t want, uint8_t cookie[DUST_PATH_COOKIE_BYTES])
{
	uint8_t f[2100];
	size_t n = recv_ring(H.ntx[0], f, sizeof(f)), used = 0;
	struct dust_seg seg;

	CHECK(n == 42 + want && dust_quic_short_match(&c->cur, f + 42, n - 42),
	      "no path MTU probe of the size quic-go's search tries next");
	CHECK(dust_data_open(&c->cur, &H.gw->cfg.lim, (uint32_t)time(NULL), f + 43, n - 43, &seg,
	                     &used) == DUST_OK &&
	          dust_path_msg_parse(f + 43 + seg.off, seg.len, cookie) == DUST_PATH_CHALLENGE,
	      "the probe is no path challenge");
	return 0;
}

/* c sends a data datagram (mark) after ms milliseconds; it is delivered. */
static int data_after(struct cl *c, unsigned ms, uint8_t mark)
{
	rte_delay_us_sleep(ms * 1000u);
	CHECK(send_data(c, &c->a, mark) == 0, gw_why);
	return expect_delivered(c, mark);
}

/*
 * [quic] pmtu = cover (SPEC §12.4): 30 ms after the path is valid, a client
 * datagram brings a 1352-byte probe; until its echo an inner packet over
 * the 1252 bound gets ICMP, after it one reaches the client in a datagram
 * over 1252 and at most 1352. Next, 25 ms on, 1402, left unanswered: after
 * 1 s it counts as lost and the search tries (1352 + 1402) / 2 = 1377.
 */
static int phases_pmtu(void)
{
	struct cl *c = &T.c[0];
	uint8_t ans[1500], cookie[DUST_PATH_COOKIE_BYTES], ip[1600], in[1600];
	size_t alen, il = DUST_QUIC_S2C_INNER_MAX + 100, dl;

	printf("gw-quic pmtu: a client introduces; 40 ms later its data brings a probe\n");
	CHECK(intro(c, ans, &alen) == 0, gw_why);
	CHECK(data_after(c, 40, 0x60) == 0, gw_why);
	CHECK(probe_back(c, 1352, cookie) == 0, gw_why);
	CHECK(rg_ctr(&H, 0, DGW_CTR_PMTU_PROBES) == 1, "pmtu_probes");
	CHECK(bound_icmp(c, il) == 0, gw_why);

	printf("gw-quic pmtu: its echo raises the bound to 1352\n");
	CHECK(path_msg_from(c, &c->a, DUST_PATH_RESPONSE, cookie) == 0, gw_why);
	CHECK(settled(), "echo not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_PMTU_RAISED) == 1, "pmtu_raised");
	ip_udp4_opt(ip, FAR, c->inv.tunnel.a, 9, 9, ip + 28, il - 28, 0,
	            FRAME_DF | FRAME_NO_UDP_CSUM);
	dl = down(c, ip, il, in);
	CHECK(dl > DUST_QUIC_SERVER_DGRAM_MAX && dl <= 1352 && !memcmp(in, ip, il),
	      "an inner packet the 1352 bound holds did not reach the client within it");

	printf("gw-quic pmtu: 1402 next; unanswered for 1 s, then 1377\n");
	CHECK(data_after(c, 30, 0x61) == 0, gw_why);
	CHECK(probe_back(c, 1402, cookie) == 0, gw_why);
	CHECK(data_after(c, 500, 0x62) == 0, gw_why);
	CHECK(rte_ring_count(H.ntx[0]) == 0, "a probe while one is in flight");
	CHECK(data_after(c, 600, 0x63) == 0, gw_why); /* the loss noted: nothing yet */
	CHECK(rte_ring_count(H.ntx[0]) == 0, "a probe at once after a loss");
	CHECK(data_after(c, 30, 0x64) == 0, gw_why);
	CHECK(probe_back(c, 1377, cookie) == 0, gw_why);
	CHECK(rg_ctr(&H, 0, DGW_CTR_PMTU_PROBES) == 3 && rg_ctr(&H, 0, DGW_CTR_PMTU_RAISED) == 1,
	      "pmtu_probes 3, pmtu_raised 1");
	return 0;
}

/*
 * With [quic] answer_hold = cover (SPEC §12.3) the first flight's ACK-only
 * Initial goes at once and the rest waits for the client's PTO probe: sent
 * a drawn 1..12 ms after it (caddy's answer delays), or 1 s after the
 * hello when no probe comes. The other modes run with the hold off: they
 * read the flight whole.
 */
static int held_rest(struct cl *c, uint8_t *ans, size_t *alen, uint64_t t_ack, uint64_t lo,
                     size_t ack)
{
	uint8_t f[1600];
	size_t fl = recv_ring(H.ntx[0], f, sizeof(f));
	uint64_t at = rg_now_ms() - t_ack;

	CHECK(fl == 42 + DUST_QUIC_SERVER_DGRAM_MAX && be16(f + 36) == c->a.port,
	      "the held answer (1252 bytes) did not come");
	printf("gw-quic hold: the answer %" PRIu64 " ms after the ACK (want %" PRIu64 " or more)\n",
	       at, lo);
	CHECK(at >= lo, "the held answer came too soon");
	*alen = fl - 42;
	memcpy(ans, f + 42, *alen);
	CHECK(flight_tail(c, ans, *alen, 3 * (size_t)DUST_QUIC_HELLO_BYTES - ack - *alen) == 0,
	      gw_why);
	return finished(c);
}

static int hello_acked(struct cl *c, uint64_t *t_ack)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES], f[1600];
	int n = dust_quic_intro_build(&c->inv, &c->id, &T.rng, rg_now_ms(), dg, sizeof(dg), &c->qc);
	size_t fl;

	CHECK(n == DUST_QUIC_HELLO_BYTES && send_hello(&c->a, dg, (size_t)n) == 0, "send");
	fl = recv_ring(H.ntx[0], f, sizeof(f));
	*t_ack = rg_now_ms();
	CHECK(fl == 42 + 37 && dust_quic_is_flight_ack(f + 42, fl - 42), "no ACK-only Initial");
	rte_delay_us_sleep(5000);
	CHECK(rte_ring_count(H.ntx[0]) == 0, "the rest of the flight came with its ACK");
	return 0;
}

static int phases_hold(void)
{
	struct cl *c = &T.c[0], *d = &T.c[1];
	uint8_t ans[1500], probe[DUST_QUIC_CLIENT_DGRAM];
	size_t alen;
	uint64_t t_ack;

	printf("gw-quic hold: a hello; its ACK alone, then a PTO probe brings the rest\n");
	CHECK(hello_acked(c, &t_ack) == 0, gw_why);
	c->qc.acked = true;
	CHECK(dust_quic_intro_resend(&c->qc, &T.rng, probe, sizeof(probe)) ==
	          DUST_QUIC_CLIENT_DGRAM,
	      "probe build");
	CHECK(send_dg(&c->a, QUIC_PORT, probe, sizeof(probe)) == 0, "send the probe");
	/*
	 * 0.7..11.1 ms of caddy's after the probe on the worker's millisecond
	 * clock; quic_probed shows it went by the probe, not the 1 s wait
	 * (a loaded machine may stretch either, so no upper bound is timed)
	 */
	CHECK(held_rest(c, ans, &alen, t_ack, 5, 37) == 0, gw_why);
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_HELD) == 1 && rg_ctr(&H, 0, DGW_CTR_QUIC_PROBED) == 1,
	      "quic_held 1, quic_probed 1");
	CHECK(send_data(c, &c->a, 0x70) == 0 && expect_delivered(c, 0x70) == 0, gw_why);

	printf("gw-quic hold: a hello and no probe: the rest 1 s after it\n");
	CHECK(hello_acked(d, &t_ack) == 0, gw_why);
	CHECK(held_rest(d, ans, &alen, t_ack, 950, 37) == 0, gw_why);
	CHECK(rg_ctr(&H, 0, DGW_CTR_QUIC_HELD) == 2 && rg_ctr(&H, 0, DGW_CTR_QUIC_PROBED) == 1,
	      "quic_held 2, quic_probed 1");
	CHECK(send_data(d, &d->a, 0x71) == 0 && expect_delivered(d, 0x71) == 0, gw_why);
	return 0;
}

static bool moves_mode, acks_mode, pmtu_mode, hold_mode;

static int driver(void *arg)
{
	(void)arg;
	if ((moves_mode  ? phases_moves()
	     : acks_mode ? phases_acks()
	     : pmtu_mode ? phases_pmtu()
	     : hold_mode ? phases_hold()
	                 : phases()) != 0 &&
	    !gw_why)
		gw_why = "a phase failed"; /* every failed CHECK sets it: a safety net */
	dgw_stop(H.gw);
	return 0;
}

static int make_client(struct dust_store *st, const struct dust_identity *srv, unsigned i,
                       uint8_t profile)
{
	struct cl *c = &T.c[i];

	if (rg_client_new(srv, i, profile ? QUIC_PORT : RANDOM_PORT, &c->inv, &c->id, &c->a))
		return -1;
	c->inv.profile = profile;
	if ((profile && dust_invite_cover_set(&c->inv, "www.example.org")) ||
	    dust_store_add(st, &c->inv))
		return -1;
	return 0;
}

static int make_store(const char *dir, struct dgw_config *cfg)
{
	struct dust_identity srv, other;
	struct dust_ipaddr addr, tun;
	struct dust_store *st = rg_store_new(dir, cfg, &srv);

	if (!st)
		return -1;
	for (unsigned i = 0; i <= NQ + 1; i++)
		if (make_client(st, &srv, i, i != NQ ? DUST_PROFILE_QUIC : DUST_PROFILE_RANDOM))
			return -1;
	/* the stranger's invitation names this gateway's key but is in no store */
	dust_ipaddr_parse(&addr, "10.0.0.1");
	dust_ipaddr_parse(&tun, "10.9.0.200");
	if (dust_identity_generate(&other) ||
	    dust_invite_new(&T.stranger, &srv, &addr, QUIC_PORT, &tun, 16, time(NULL) + 3600))
		return -1;
	T.stranger.profile = DUST_PROFILE_QUIC;
	if (dust_invite_cover_set(&T.stranger, "www.example.org") || dust_store_save(st))
		return -1;
	dust_store_close(st);
	return 0;
}

/* the quic port beside the random profile's; the store */
static int setup(struct dgw_config *cfg, char **args, int nargs)
{
	(void)nargs;
	cfg->udp_port = RANDOM_PORT;
	cfg->quic_port = QUIC_PORT;
	cfg->quic_acks = acks_mode;
	cfg->quic_pmtu = pmtu_mode; /* probes are timed: the other modes' frames stay as they are */
	cfg->quic_hold = hold_mode; /* likewise: the other modes read each flight whole */
	dust_rng_init(&T.rng);
	dust_pad_default(&T.pad);
	return make_store(args[0], cfg);
}

int main(int argc, char **argv)
{
	struct rg_test t = {.name = "gw-quic",
	                    .usage = "WORKDIR [moves|acks|pmtu|hold]",
	                    .driver_nth = 2,
	                    .queues = 1,
	                    .setup = setup,
	                    .driver = driver};

	/* moves: MQ workers (RINGGW_LCORES=MQ+2) */
	moves_mode = argc > 1 && !strcmp(argv[argc - 1], "moves");
	acks_mode = argc > 1 && !strcmp(argv[argc - 1], "acks");
	pmtu_mode = argc > 1 && !strcmp(argv[argc - 1], "pmtu");
	hold_mode = argc > 1 && !strcmp(argv[argc - 1], "hold");
	if (moves_mode) {
		t.driver_nth = MQ + 1;
		t.queues = MQ;
	}

	if (rg_main(&H, &t, argc, argv))
		return 1;
	dgw_destroy(H.gw);
	return gw_verdict("gw-quic");
}
