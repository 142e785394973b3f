/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inner.c: the TCP MSS clamp (IPv4 and IPv6 SYNs, the option at even and
 * odd offsets, what must stay untouched) and the ICMP errors for packets
 * over the bound. Checksums are verified by a full recomputation written
 * here, not by inner.c's incremental update.
 */
#include <sodium.h>

#include "check.h"
#include "csum_ref.h"
#include "dust.h"
#include "inner.h"
#include "quic.h"

/* The transport checksum over l4[0..len) with the pseudo-header of ip verifies. */
static bool l4_ok(const uint8_t *ip, const uint8_t *l4, size_t len, uint8_t proto)
{
	uint64_t s = ref_sum(l4, len) + proto + len;

	s += ip[0] >> 4 == 4 ? ref_sum(ip + 12, 8) : ref_sum(ip + 8, 32);
	return ref_fold(s) == 0xffff;
}

static bool ip4_hdr_ok(const uint8_t *ip)
{
	return ref_fold(ref_sum(ip, (size_t)(ip[0] & 0xf) * 4)) == 0xffff;
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static unsigned get16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static const uint8_t A4[4] = {10, 9, 0, 7}, B4[4] = {10, 10, 0, 2};
static const uint8_t A6[16] = {0xfd, 0, 0, 9, [15] = 7}, B6[16] = {0xfd, 0, 0, 10, [15] = 2};

/* IPv4 header for a payload of plen bytes of protocol proto; returns 20. */
static size_t ip4(uint8_t *p, uint8_t proto, size_t plen, const uint8_t *src, const uint8_t *dst)
{
	uint16_t c;

	memset(p, 0, 20);
	p[0] = 0x45;
	put16(p + 2, (unsigned)(20 + plen));
	put16(p + 6, 0x4000); /* DF */
	p[8] = 64;
	p[9] = proto;
	memcpy(p + 12, src, 4);
	memcpy(p + 16, dst, 4);
	c = (uint16_t)~ref_fold(ref_sum(p, 20));
	put16(p + 10, c);
	return 20;
}

static size_t ip6(uint8_t *p, uint8_t nh, size_t plen, const uint8_t *src, const uint8_t *dst)
{
	memset(p, 0, 40);
	p[0] = 0x60;
	put16(p + 4, (unsigned)plen);
	p[6] = nh;
	p[7] = 64;
	memcpy(p + 8, src, 16);
	memcpy(p + 24, dst, 16);
	return 40;
}

/* A TCP header with flags and the options opts[0..olen) (a multiple of 4) at tcp. */
static size_t tcp_put(uint8_t *tcp, uint8_t flags, const uint8_t *opts, size_t olen)
{
	memset(tcp, 0, 20);
	put16(tcp, 40000);
	put16(tcp + 2, 443);
	tcp[4] = 0x12;
	tcp[12] = (uint8_t)((20 + olen) / 4 << 4);
	tcp[13] = flags;
	put16(tcp + 14, 64240);
	memcpy(tcp + 20, opts, olen);
	return 20 + olen;
}

static void tcp_csum(const uint8_t *ip, uint8_t *tcp, size_t len)
{
	put16(tcp + 16, 0);
	put16(tcp + 16,
	      (uint16_t)~ref_fold(ref_sum(tcp, len) + 6 + len +
	                          (ip[0] >> 4 == 4 ? ref_sum(ip + 12, 8) : ref_sum(ip + 8, 32))));
}

/* Linux's SYN options: MSS, SACK permitted, timestamps, NOP, window scale. */
static const uint8_t linux_opts[20] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 1, 2,
                                       3, 4, 0,    0,    0, 0, 1, 3,  3, 7};
/* The MSS after one NOP: its value at an odd offset from the TCP header. */
static const uint8_t odd_opts[8] = {1, 2, 4, 0x05, 0xb4, 1, 1, 0};

static size_t syn4(uint8_t *p, uint8_t flags, const uint8_t *opts, size_t olen, size_t pay)
{
	size_t h = ip4(p, 6, 20 + olen + pay, A4, B4), t = tcp_put(p + h, flags, opts, olen);

	memset(p + h + t, 0xab, pay);
	tcp_csum(p, p + h, t + pay);
	return h + t + pay;
}

static void test_mss_ipv4(void)
{
	uint8_t p[256];
	size_t n = syn4(p, 0x02, linux_opts, sizeof(linux_opts), 0);

	CHECK(l4_ok(p, p + 20, n - 20, 6));
	CHECK(dust_inner_mss_clamp(p, n, 1219));
	CHECK_EQ(get16(p + 20 + 22), 1219 - 40);
	CHECK(l4_ok(p, p + 20, n - 20, 6));
	CHECK(ip4_hdr_ok(p));
	/* again: already within, nothing to do */
	CHECK(!dust_inner_mss_clamp(p, n, 1219));
	CHECK_EQ(get16(p + 20 + 22), 1179);
	/* a SYN-ACK, with data after the header (checksum covers it) */
	n = syn4(p, 0x12, linux_opts, sizeof(linux_opts), 33);
	CHECK(dust_inner_mss_clamp(p, n, 1197));
	CHECK_EQ(get16(p + 20 + 22), 1157);
	CHECK(l4_ok(p, p + 20, n - 20, 6));
}

static void test_mss_odd_offset(void)
{
	uint8_t p[256];

	for (unsigned mss = 1180; mss < 1180 + 600; mss += 7) {
		uint8_t o[8];
		size_t n;

		memcpy(o, odd_opts, sizeof(o));
		put16(o + 3, mss);
		n = syn4(p, 0x02, o, sizeof(o), mss & 3);
		CHECK(dust_inner_mss_clamp(p, n, 1219));
		CHECK_EQ(get16(p + 20 + 23), 1179);
		CHECK(l4_ok(p, p + 20, n - 20, 6));
	}
}

static void test_mss_untouched(void)
{
	static const uint8_t no_mss[4] = {1, 1, 4, 2};
	static const uint8_t bad_len[8] = {1, 2, 0, 0x05, 0xb4, 0, 0, 0}; /* option length 0 */
	static const uint8_t past_end[4] = {1, 1, 2, 9};
	static const struct {
		uint8_t flags;
		const uint8_t *opts;
		size_t olen;
	} t[] = {
	    {0x10, linux_opts, sizeof(linux_opts)}, /* ACK, no SYN */
	    {0x02, no_mss, sizeof(no_mss)},
	    {0x02, bad_len, sizeof(bad_len)},
	    {0x02, past_end, sizeof(past_end)},
	};
	uint8_t p[256], q[256];
	size_t n;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		n = syn4(p, t[i].flags, t[i].opts, t[i].olen, 0);
		memcpy(q, p, n);
		CHECK(!dust_inner_mss_clamp(p, n, 1219) && !memcmp(p, q, n));
	}
	/* a later fragment: its "TCP header" is payload */
	n = syn4(p, 0x02, linux_opts, sizeof(linux_opts), 0);
	put16(p + 6, 0x0010);
	memcpy(q, p, n);
	CHECK(!dust_inner_mss_clamp(p, n, 1219) && !memcmp(p, q, n));
	/* UDP, truncated, empty */
	n = syn4(p, 0x02, linux_opts, sizeof(linux_opts), 0);
	p[9] = 17;
	CHECK(!dust_inner_mss_clamp(p, n, 1219));
	n = syn4(p, 0x02, linux_opts, sizeof(linux_opts), 0);
	CHECK(!dust_inner_mss_clamp(p, 30, 1219));
	CHECK(!dust_inner_mss_clamp(p, 0, 1219));
}

/* IPv6, a hop-by-hop header of 8 bytes (PadN), then a TCP header at p + 48; its length. */
static size_t tcp6_hbh(uint8_t *p, uint8_t flags, const uint8_t *opts, size_t olen)
{
	size_t t = tcp_put(p + 48, flags, opts, olen);

	ip6(p, 0, 8 + t, A6, B6);
	memset(p + 40, 0, 8);
	p[40] = 6;
	p[42] = 1;
	p[43] = 4;
	return t;
}

static void test_mss_ipv6(void)
{
	uint8_t p[256];
	size_t t;

	/* bare */
	t = tcp_put(p + 40, 0x02, linux_opts, sizeof(linux_opts));
	ip6(p, 6, t, A6, B6);
	tcp_csum(p, p + 40, t);
	CHECK(dust_inner_mss_clamp(p, 40 + t, 1197));
	CHECK_EQ(get16(p + 40 + 22), 1197 - 60);
	CHECK(l4_ok(p, p + 40, t, 6));
	/* behind a hop-by-hop header of 8 bytes (PadN) */
	t = tcp6_hbh(p, 0x02, odd_opts, sizeof(odd_opts));
	tcp_csum(p, p + 48, t);
	CHECK(dust_inner_mss_clamp(p, 48 + t, 1219));
	CHECK_EQ(get16(p + 48 + 23), 1219 - 60);
	CHECK(l4_ok(p, p + 48, t, 6));
}

/* Random option layouts with the MSS somewhere: a clamp keeps the checksum valid. */
static void test_mss_random(void)
{
	struct dust_rng rng;
	unsigned clamped = 0;

	dust_rng_init(&rng);
	for (int i = 0; i < 20000; i++) {
		uint8_t p[256], o[40];
		size_t olen = 4 * (1 + dust_rng_uniform(&rng, 10)), at, n;
		unsigned mss = 500 + dust_rng_uniform(&rng, 1500),
		         mtu = 1100 + dust_rng_uniform(&rng, 200);

		memset(o, 1, sizeof(o)); /* NOPs */
		at = dust_rng_uniform(&rng, (uint32_t)(olen - 3));
		o[at] = 2;
		o[at + 1] = 4;
		put16(o + at + 2, mss);
		n = syn4(p, 0x02, o, olen, dust_rng_uniform(&rng, 40));
		if (dust_inner_mss_clamp(p, n, mtu)) {
			clamped++;
			CHECK(mss > mtu - 40);
			CHECK_EQ(get16(p + 40 + at + 2), mtu - 40);
		} else {
			CHECK(mss <= mtu - 40);
		}
		CHECK(l4_ok(p, p + 20, n - 20, 6));
	}
	CHECK(clamped > 1000);
	dust_rng_wipe(&rng);
}

/* ---- the quic bounds: sealing to dust_quic_tx_cap keeps them, padding included ---- */

static void quic_session(struct dust_session *s, uint8_t role, uint8_t cid_len)
{
	memset(s, 0, sizeof(*s));
	randombytes_buf(s->tx_key, sizeof(s->tx_key));
	randombytes_buf(s->tx_hp, sizeof(s->tx_hp));
	s->role = role;
	s->profile = DUST_PROFILE_QUIC;
	s->cid_len = cid_len;
	s->state = DUST_SESSION_LIVE;
}

/* Every inner size up to the inner MTU, three paddings: no datagram over its bound. */
static void seal_sizes(struct dust_session *s, struct dust_rng *rng, const struct dust_pad *pad,
                       size_t bound)
{
	static uint8_t dg[2048];
	size_t pre = dust_quic_tx_prefix(s), max = dust_quic_tx_inner_max(s), top = 0;

	for (size_t len = 0; len <= max + 1; len += len < max - 70 ? 37 : 1) {
		int n = dust_data_seal(s, rng, pad, 1000, dg + pre, len,
		                       dust_quic_tx_cap(s, sizeof(dg) - pre));

		if (len > max) {
			CHECK_EQ(n, -EMSGSIZE);
			continue;
		}
		CHECK(n > 0 && pre + (size_t)n <= bound);
		if (n > 0 && pre + (size_t)n > top)
			top = pre + (size_t)n;
	}
	CHECK_EQ(top, bound); /* a full-size packet reaches it: the bound is no lower either */
}

static void test_quic_bounds(void)
{
	struct dust_pad pads[3];
	struct dust_session s;
	struct dust_rng rng;

	dust_rng_init(&rng);
	dust_pad_default(&pads[0]);
	pads[1] = (struct dust_pad){.kind = DUST_PAD_UNIFORM, .min = 0, .max = 1000};
	pads[2] = (struct dust_pad){.kind = DUST_PAD_FILL, .mtu = 1472};
	for (unsigned k = 0; k < 3; k++) {
		for (uint8_t cid = 8; cid <= 20; cid += 12) {
			quic_session(&s, DUST_ROLE_CLIENT, cid);
			CHECK_EQ(dust_quic_tx_inner_max(&s), 1250u - 1 - cid - 32);
			seal_sizes(&s, &rng, &pads[k], DUST_QUIC_CLIENT_DGRAM_MAX);
			quic_session(&s, DUST_ROLE_SERVER, cid);
			CHECK_EQ(dust_quic_tx_inner_max(&s), 1219);
			CHECK_EQ(dust_quic_rx_inner_max(&s), 1250u - 1 - cid - 32);
			seal_sizes(&s, &rng, &pads[k], DUST_QUIC_SERVER_DGRAM_MAX);
		}
	}
	/* the random profile has no bound: the cap passes through */
	quic_session(&s, DUST_ROLE_SERVER, 0);
	s.profile = DUST_PROFILE_RANDOM;
	CHECK_EQ(dust_quic_tx_cap(&s, 1900), 1900);
	CHECK_EQ(dust_quic_tx_inner_max(&s), 0);
	CHECK_EQ(dust_quic_rx_inner_max(&s), 0);
	dust_session_wipe(&s);
	dust_rng_wipe(&rng);
}

/* ---- ICMP errors ---- */

static size_t udp4(uint8_t *p, size_t total, const uint8_t *src, const uint8_t *dst)
{
	size_t h = ip4(p, 17, total - 20, src, dst);

	memset(p + h, 0x5a, total - h);
	put16(p + h + 4, (unsigned)(total - h));
	return total;
}

static void test_too_big_ipv4(void)
{
	uint8_t p[1500], e[DUST_INNER_ICMP_MAX];
	size_t n = udp4(p, 1428, A4, B4);
	int r = dust_inner_too_big(p, n, 1219, e, sizeof(e));

	CHECK_EQ(r, DUST_INNER_ICMP4_MAX);
	CHECK(ip4_hdr_ok(e));
	CHECK_EQ(e[9], 1);
	CHECK_EQ(get16(e + 2), r);
	CHECK(!memcmp(e + 12, B4, 4) && !memcmp(e + 16, A4, 4));
	CHECK_EQ(e[20], 3);
	CHECK_EQ(e[21], 4);
	CHECK_EQ(get16(e + 26), 1219);
	CHECK(!memcmp(e + 28, p, (size_t)r - 28));
	CHECK_EQ(ref_fold(ref_sum(e + 20, (size_t)r - 20)), 0xffff);
	/* a short packet is quoted whole */
	n = udp4(p, 100, A4, B4);
	r = dust_inner_too_big(p, n, 90, e, sizeof(e));
	CHECK_EQ(r, 28 + 100);
	CHECK(!memcmp(e + 28, p, 100));
	CHECK_EQ(ref_fold(ref_sum(e + 20, (size_t)r - 20)), 0xffff);
}

static void test_too_big_none_due(void)
{
	static const uint8_t zero[4], mcast[4] = {224, 0, 0, 9};
	uint8_t p[1500], e[DUST_INNER_ICMP_MAX];
	size_t n;

	n = udp4(p, 1428, zero, B4);
	CHECK_EQ(dust_inner_too_big(p, n, 1219, e, sizeof(e)), 0);
	n = udp4(p, 1428, A4, mcast);
	CHECK_EQ(dust_inner_too_big(p, n, 1219, e, sizeof(e)), 0);
	n = udp4(p, 1428, A4, B4);
	put16(p + 6, 0x00b9); /* a later fragment */
	CHECK_EQ(dust_inner_too_big(p, n, 1219, e, sizeof(e)), 0);
	/* an ICMP error gets none; an echo request does */
	n = udp4(p, 1428, A4, B4);
	p[9] = 1;
	p[20] = 3;
	CHECK_EQ(dust_inner_too_big(p, n, 1219, e, sizeof(e)), 0);
	p[20] = 8;
	CHECK_EQ(dust_inner_too_big(p, n, 1219, e, sizeof(e)), DUST_INNER_ICMP4_MAX);
	/* no room, no IP */
	CHECK_EQ(dust_inner_too_big(p, n, 1219, e, 576), -EMSGSIZE);
	memset(p, 0, 64);
	CHECK_EQ(dust_inner_too_big(p, 64, 1219, e, sizeof(e)), -EINVAL);
	CHECK_EQ(dust_inner_too_big(p, 0, 1219, e, sizeof(e)), -EINVAL);
	/* total length beyond the bytes given */
	n = udp4(p, 1428, A4, B4);
	CHECK_EQ(dust_inner_too_big(p, 1000, 1219, e, sizeof(e)), -EINVAL);
}

static void test_too_big_ipv6(void)
{
	uint8_t p[1500], e[DUST_INNER_ICMP_MAX];
	size_t n = 1400;
	int r;

	ip6(p, 17, n - 40, A6, B6);
	memset(p + 40, 0x77, n - 40);
	r = dust_inner_too_big(p, n, 1219, e, sizeof(e));
	CHECK_EQ(r, DUST_INNER_ICMP_MAX);
	CHECK_EQ(e[0] >> 4, 6);
	CHECK_EQ(get16(e + 4), r - 40);
	CHECK_EQ(e[6], 58);
	CHECK(!memcmp(e + 8, B6, 16) && !memcmp(e + 24, A6, 16));
	CHECK_EQ(e[40], 2);
	CHECK_EQ(e[41], 0);
	CHECK_EQ(get16(e + 44) << 16 | get16(e + 46), 1219);
	CHECK(!memcmp(e + 48, p, (size_t)r - 48));
	CHECK(l4_ok(e, e + 40, (size_t)r - 40, 58));
	/* an ICMPv6 error gets none, an echo request does, a multicast source none */
	p[6] = 58;
	p[40] = 1;
	CHECK_EQ(dust_inner_too_big(p, n, 1219, e, sizeof(e)), 0);
	p[40] = 128;
	CHECK_EQ(dust_inner_too_big(p, n, 1219, e, sizeof(e)), DUST_INNER_ICMP_MAX);
	p[8] = 0xff;
	CHECK_EQ(dust_inner_too_big(p, n, 1219, e, sizeof(e)), 0);
}

/* ---- ACK thinning (SPEC §9.2) ---- */

/* Linux's ACK options: NOP, NOP, timestamps. */
static const uint8_t ts_opts[12] = {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2};
/* A SACK block after the timestamps: a loss report. */
static const uint8_t sack_opts[24] = {1, 1, 8, 10, 0, 0, 0,    1, 0, 0, 0,    2,
                                      1, 1, 5, 10, 0, 0, 0x10, 0, 0, 0, 0x20, 0};

/* An IPv4 TCP segment 10.9.0.7:sport -> 10.10.0.2:443 acknowledging ack; its length. */
static size_t seg4(uint8_t *p, uint16_t sport, uint8_t flags, uint32_t ack, const uint8_t *opts,
                   size_t olen, size_t pay)
{
	size_t n = syn4(p, flags, opts, olen, pay);

	put16(p + 20, sport);
	put16(p + 28, ack >> 16);
	put16(p + 30, ack & 0xffff);
	tcp_csum(p, p + 20, n - 20);
	return n;
}

static bool read_seg(const uint8_t *p, size_t n, struct dust_inner_tcp *t)
{
	return dust_inner_tcp_read(p, n, t);
}

static void test_ack_read(void)
{
	uint8_t p[256];
	struct dust_inner_tcp t;
	size_t n;

	/* Linux's pure ACK: 52 bytes, the timestamps only */
	n = seg4(p, 40000, 0x10, 1000, ts_opts, sizeof(ts_opts), 0);
	CHECK_EQ(n, 52u);
	CHECK(read_seg(p, n, &t) && t.pure_ack && t.ack == 1000 && t.flow_len == 12);
	CHECK(memcmp(t.flow, A4, 4) == 0 && memcmp(t.flow + 4, B4, 4) == 0);
	CHECK(get16(t.flow + 8) == 40000 && get16(t.flow + 10) == 443);
	/* no options at all */
	n = seg4(p, 40000, 0x10, 1000, ts_opts, 0, 0);
	CHECK(read_seg(p, n, &t) && t.pure_ack);
	/* a payload, a SACK block, any flag beside ACK: read, but never pure */
	n = seg4(p, 40000, 0x10, 1000, ts_opts, sizeof(ts_opts), 1);
	CHECK(read_seg(p, n, &t) && !t.pure_ack);
	n = seg4(p, 40000, 0x10, 1000, sack_opts, sizeof(sack_opts), 0);
	CHECK(read_seg(p, n, &t) && !t.pure_ack);
	for (unsigned f = 0; f < 8; f++) {
		if (1u << f == 0x10)
			continue;
		n = seg4(p, 40000, (uint8_t)(0x10 | 1u << f), 1000, ts_opts, sizeof(ts_opts), 0);
		CHECK(read_seg(p, n, &t) && !t.pure_ack);
	}
	/* the AE (AccECN) bit */
	n = seg4(p, 40000, 0x10, 1000, ts_opts, sizeof(ts_opts), 0);
	p[20 + 12] |= 1;
	CHECK(read_seg(p, n, &t) && !t.pure_ack);
	/* a first fragment (MF) is TCP but no pure ACK; a later one is no TCP segment */
	n = seg4(p, 40000, 0x10, 1000, ts_opts, sizeof(ts_opts), 0);
	put16(p + 6, 0x2000);
	CHECK(read_seg(p, n, &t) && !t.pure_ack);
	put16(p + 6, 0x0001);
	CHECK(!read_seg(p, n, &t));
	/* cut short, or bytes beyond the IP length: the IP length decides */
	n = seg4(p, 40000, 0x10, 1000, ts_opts, sizeof(ts_opts), 0);
	CHECK(!read_seg(p, n - 1, &t));
	CHECK(read_seg(p, n + 8, &t) && t.pure_ack);
	/* not TCP */
	n = udp4(p, 60, A4, B4);
	CHECK(!read_seg(p, n, &t));
	/* IPv6: plain, then behind a hop-by-hop header (read, never pure) */
	n = tcp_put(p + 40, 0x10, ts_opts, sizeof(ts_opts));
	ip6(p, 6, n, A6, B6);
	CHECK(read_seg(p, 40 + n, &t) && t.pure_ack && t.flow_len == 36);
	CHECK(memcmp(t.flow, A6, 16) == 0 && memcmp(t.flow + 16, B6, 16) == 0);
	n = tcp6_hbh(p, 0x10, ts_opts, sizeof(ts_opts));
	CHECK(read_seg(p, 48 + n, &t) && !t.pure_ack);
}

static void test_ack_supersedes(void)
{
	uint8_t p[256];
	struct dust_inner_tcp a, b;

	CHECK(read_seg(p, seg4(p, 40000, 0x10, 1000, ts_opts, sizeof(ts_opts), 0), &a));
	/* strictly ahead: yes; the same number (a duplicate ACK) or behind: no */
	CHECK(read_seg(p, seg4(p, 40000, 0x10, 2448, ts_opts, sizeof(ts_opts), 0), &b));
	CHECK(dust_inner_ack_supersedes(&b, &a));
	CHECK(!dust_inner_ack_supersedes(&a, &b));
	CHECK(read_seg(p, seg4(p, 40000, 0x10, 1000, ts_opts, sizeof(ts_opts), 0), &b));
	CHECK(!dust_inner_ack_supersedes(&b, &a));
	/* across the wrap of the sequence space, and never by 2^31 or more */
	CHECK(read_seg(p, seg4(p, 40000, 0x10, 0xfffffff0u, ts_opts, 0, 0), &a));
	CHECK(read_seg(p, seg4(p, 40000, 0x10, 0x10, ts_opts, 0, 0), &b));
	CHECK(dust_inner_ack_supersedes(&b, &a) && !dust_inner_ack_supersedes(&a, &b));
	CHECK(read_seg(p, seg4(p, 40000, 0x10, 0x7ffffff0u, ts_opts, 0, 0), &b));
	CHECK(!dust_inner_ack_supersedes(&b, &a));
	/* another connection, or a newer segment that is no pure ACK */
	CHECK(read_seg(p, seg4(p, 40000, 0x10, 1000, ts_opts, 0, 0), &a));
	CHECK(read_seg(p, seg4(p, 40001, 0x10, 2000, ts_opts, 0, 0), &b));
	CHECK(!dust_inner_ack_supersedes(&b, &a));
	CHECK(read_seg(p, seg4(p, 40000, 0x10, 2000, sack_opts, sizeof(sack_opts), 0), &b));
	CHECK(!dust_inner_ack_supersedes(&b, &a));
	CHECK(read_seg(p, seg4(p, 40000, 0x18, 2000, ts_opts, 0, 0), &b));
	CHECK(!dust_inner_ack_supersedes(&b, &a));
}

/* What calls for an ACK-sized datagram (SPEC §12.4): all but a pure TCP ACK. */
static void test_elicits(void)
{
	uint8_t p[256];
	size_t n;

	n = seg4(p, 40000, 0x10, 1000, ts_opts, sizeof(ts_opts), 0);
	CHECK(!dust_inner_elicits(p, n));
	/* data, a SACK block, a SYN or FIN */
	CHECK(dust_inner_elicits(p, seg4(p, 40000, 0x10, 1000, ts_opts, sizeof(ts_opts), 1)));
	CHECK(dust_inner_elicits(p, seg4(p, 40000, 0x10, 1000, sack_opts, sizeof(sack_opts), 0)));
	CHECK(dust_inner_elicits(p, seg4(p, 40000, 0x12, 1000, ts_opts, sizeof(ts_opts), 0)));
	CHECK(dust_inner_elicits(p, seg4(p, 40000, 0x11, 1000, ts_opts, sizeof(ts_opts), 0)));
	/* no TCP segment at all: UDP, a later fragment, cut short */
	CHECK(dust_inner_elicits(p, udp4(p, 60, A4, B4)));
	n = seg4(p, 40000, 0x10, 1000, ts_opts, sizeof(ts_opts), 0);
	CHECK(dust_inner_elicits(p, n - 1));
	put16(p + 6, 0x0001);
	CHECK(dust_inner_elicits(p, n));
}

static const struct check_test tests[] = {
    {"mss_ipv4", test_mss_ipv4},
    {"mss_odd_offset", test_mss_odd_offset},
    {"mss_untouched", test_mss_untouched},
    {"mss_ipv6", test_mss_ipv6},
    {"mss_random", test_mss_random},
    {"too_big_ipv4", test_too_big_ipv4},
    {"too_big_none_due", test_too_big_none_due},
    {"too_big_ipv6", test_too_big_ipv6},
    {"quic_bounds", test_quic_bounds},
    {"ack_read", test_ack_read},
    {"ack_supersedes", test_ack_supersedes},
    {"elicits", test_elicits},
};

int main(int argc, char **argv)
{
	if (dust_init() != 0)
		return 1;
	return check_main(argc, argv, tests, CHECK_COUNT(tests), NULL);
}
