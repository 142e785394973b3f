/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/common: checksums against known values, frames built and parsed
 * back, and pcap files written and read back (micro- and nanosecond).
 */
#include <stdint.h>
#include <unistd.h>

#include "capfile.h"
#include "check.h"
#include "frame.h"

static const uint8_t mac_d[6] = {2, 0, 0, 0, 0, 1}, mac_s[6] = {2, 0, 0, 0, 0, 2};
static const uint8_t ip4_a[4] = {192, 0, 2, 1}, ip4_b[4] = {198, 51, 100, 7};
static const uint8_t ip6_a[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
static const uint8_t ip6_b[16] = {0x20, 0x01, 0x0d, 0xb8, [14] = 0xab, [15] = 0xcd};

static uint16_t at16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* RFC 1071 section 3's example, then the same bytes less the last (zero padded). */
static void test_sum(void)
{
	static const uint8_t b[8] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};

	CHECK_EQ(fold(sum16(b, 8, 0)), 0x220d);
	CHECK_EQ(fold(sum16(b, 7, 0)), 0x2304);
	CHECK_EQ(fold(sum16(b, 0, 0)), 0xffff);
	/* a sum carried in: two halves give the whole */
	CHECK_EQ(fold(sum16(b + 4, 4, sum16(b, 4, 0))), 0x220d);
}

/* The IPv4 header of the textbook example (192.168.0.1 -> .199, 115 bytes, DF): 0xb861. */
static void test_ip4_hdr(void)
{
	static const uint8_t want[20] = {0x45, 0,    0,   0x73, 0, 0, 0x40, 0,   0x40, 0x11,
	                                 0xb8, 0x61, 192, 168,  0, 1, 192,  168, 0,    199};
	uint8_t h[20];

	CHECK_EQ(ip4_hdr(h, want + 12, want + 16, 17, 0x73, 0, FRAME_DF), 20);
	CHECK(memcmp(h, want, 20) == 0);
	ip4_hdr(h, want + 12, want + 16, 17, 0x73, 0x1234, 0);
	CHECK_EQ(at16(h + 4), 0x1234);
	CHECK_EQ(h[6], 0);
	CHECK_EQ(fold(sum16(h, 20, 0)), 0); /* a right checksum sums to all ones */
}

/* UDP checksums of "hello" (odd length), checked by tshark (udp.check_checksum). */
static void test_udp_csum(void)
{
	uint8_t p[128];
	size_t n;

	n = ip_udp4(p, ip4_a, ip4_b, 40000, 4433, (const uint8_t *)"hello", 5);
	CHECK_EQ(n, 33);
	CHECK_EQ(at16(p + 10), 0x4e90);
	CHECK_EQ(at16(p + 26), 0x2234);
	n = ip_udp6(p, ip6_a, ip6_b, 40000, 4433, (const uint8_t *)"hello", 5);
	CHECK_EQ(n, 53);
	CHECK_EQ(at16(p + 4), 13);
	CHECK_EQ(at16(p + 46), 0x0730);
	CHECK_EQ(fold(sum16(p + 40, 13, sum_ip6_pseudo(p, 13, 17))), 0);
	n = ip_udp4_opt(p, ip4_a, ip4_b, 1, 2, (const uint8_t *)"hello", 5, 7, FRAME_NO_UDP_CSUM);
	CHECK_EQ(at16(p + 26), 0);
	CHECK_EQ(at16(p + 4), 7);
}

/* A sum of zero is sent as 0xffff (0 would say "no checksum"), in IPv4 and IPv6. */
static void test_udp_csum_zero(void)
{
	uint8_t pl[2] = {0, 0}, p[64];

	ip_udp4(p, ip4_a, ip4_b, 1, 2, pl, 2);
	put16(pl, at16(p + 26)); /* adds ~sum: the new sum is all ones */
	ip_udp4(p, ip4_a, ip4_b, 1, 2, pl, 2);
	CHECK_EQ(at16(p + 26), 0xffff);
	pl[0] = pl[1] = 0;
	ip_udp6(p, ip6_a, ip6_b, 1, 2, pl, 2);
	put16(pl, at16(p + 46));
	ip_udp6(p, ip6_a, ip6_b, 1, 2, pl, 2);
	CHECK_EQ(at16(p + 46), 0xffff);
}

/* The payload may already sit where it goes, or overlap it. */
static void test_overlap(void)
{
	uint8_t a[64], b[64];

	memcpy(a + 28, "payload", 7);
	ip_udp4(a, ip4_a, ip4_b, 5, 6, a + 28, 7);
	ip_udp4(b, ip4_a, ip4_b, 5, 6, (const uint8_t *)"payload", 7);
	CHECK(memcmp(a, b, 35) == 0);
	memcpy(a, "payload", 7);
	ip_udp4(a, ip4_a, ip4_b, 5, 6, a, 7);
	CHECK(memcmp(a, b, 35) == 0);
}

static void test_parse(void)
{
	uint8_t f[128];
	struct frame_udp u;
	size_t n;

	n = eth(f, mac_d, mac_s, 0x0800);
	n += ip_udp4(f + n, ip4_a, ip4_b, 40000, 4433, (const uint8_t *)"hello", 5);
	CHECK_EQ(frame_udp_parse(f, n, &u), 0);
	CHECK_EQ(u.family, 4);
	CHECK(!memcmp(u.sip, ip4_a, 4) && !memcmp(u.dip, ip4_b, 4));
	CHECK_EQ(u.sport, 40000);
	CHECK_EQ(u.dport, 4433);
	CHECK(u.plen == 5 && !memcmp(u.pl, "hello", 5));
	CHECK_EQ(frame_udp_parse(f, n - 1, &u), -1); /* the UDP length does not fit */
	CHECK_EQ(frame_udp_parse(f, n + 10, &u), 0); /* trailing padding is fine */
	CHECK_EQ(u.plen, 5);
	f[23] = 6; /* TCP */
	CHECK_EQ(frame_udp_parse(f, n, &u), -1);
	/* IHL 4 is no IPv4 header, though a "UDP length" (the source port, 16) would fit */
	ip_udp4(f + 14, ip4_a, ip4_b, 16, 4433, (const uint8_t *)"hello", 5);
	CHECK_EQ(frame_udp_parse(f, n, &u), 0);
	f[14] = 0x44;
	CHECK_EQ(frame_udp_parse(f, n, &u), -1);

	n = eth(f, mac_d, mac_s, 0x86dd);
	n += ip_udp6(f + n, ip6_a, ip6_b, 7, 8, (const uint8_t *)"hello", 5);
	CHECK_EQ(frame_udp_parse(f, n, &u), 0);
	CHECK_EQ(u.family, 6);
	CHECK(!memcmp(u.sip, ip6_a, 16) && !memcmp(u.dip, ip6_b, 16));
	CHECK(u.sport == 7 && u.dport == 8 && u.plen == 5 && !memcmp(u.pl, "hello", 5));
	put16(f + 58, 7); /* UDP length below its own header */
	CHECK_EQ(frame_udp_parse(f, n, &u), -1);
	CHECK_EQ(frame_udp_parse(f, 20, &u), -1);
}

/* Three frames written stamped ts[], read back; a microsecond file cuts the ns. */
static void round_trip(bool nsec)
{
	static const uint64_t ts[3] = {1700000000123456789ull, 1700000001000000001ull, 999};
	char path[] = "/tmp/test_frame.XXXXXX";
	struct capfile_out o;
	struct capfile_in in;
	struct capfile_rec r;
	uint8_t f[3][80];
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(capfile_create(&o, path, 65535, nsec), 0);
	for (unsigned i = 0; i < 3; i++) {
		size_t n = eth(f[i], mac_d, mac_s, 0x0800);

		n += ip_udp4(f[i] + n, ip4_a, ip4_b, (uint16_t)i, 9, (const uint8_t *)"abcdef", i);
		capfile_put(&o, ts[i], f[i], n);
	}
	CHECK_EQ(capfile_close(&o), 0);
	CHECK_EQ(capfile_open(&in, path), 0);
	CHECK_EQ(in.dlt, DLT_EN10MB);
	for (unsigned i = 0; i < 3; i++) {
		CHECK_EQ(capfile_next(&in, &r), 1);
		CHECK_EQ(r.caplen, 42 + i);
		CHECK_EQ(r.len, 42 + i);
		CHECK(!memcmp(r.f, f[i], r.caplen));
		CHECK_EQ(r.ts_ns, nsec ? ts[i] : ts[i] / 1000 * 1000);
	}
	CHECK_EQ(capfile_next(&in, &r), 0);
	capfile_done(&in);
	/* cut in the last record: two frames, then an error that says so */
	CHECK_EQ(truncate(path, 24 + 2 * 16 + 42 + 43 + 16 + 5), 0);
	CHECK_EQ(capfile_open(&in, path), 0);
	CHECK_EQ(capfile_next(&in, &r), 1);
	CHECK_EQ(capfile_next(&in, &r), 1);
	CHECK_EQ(capfile_next(&in, &r), -1);
	CHECK(in.err[0] != 0);
	capfile_done(&in);
	unlink(path);
}

static void test_capfile(void)
{
	round_trip(false);
	round_trip(true);
}

static void test_capfile_errors(void)
{
	char path[] = "/tmp/test_frame.XXXXXX";
	int fd = mkstemp(path);
	struct capfile_out o;
	struct capfile_in in;

	CHECK_EQ(capfile_create(&o, "/nonexistent-dir/x.pcap", 65535, false), -1);
	CHECK(strstr(o.err, "nonexistent-dir") != NULL);
	CHECK_EQ(capfile_open(&in, "/nonexistent-dir/x.pcap"), -1);
	CHECK(in.err[0] != 0);
	CHECK(in.err[0] != 0);
	CHECK(fd >= 0 && write(fd, "not a capture, only text\n", 26) == 26);
	close(fd);
	CHECK_EQ(capfile_open(&in, path), -1);
	CHECK(in.err[0] != 0);
	unlink(path);
}

static const struct check_test tests[] = {
    {"frame_sum", test_sum},
    {"frame_ip4_hdr", test_ip4_hdr},
    {"frame_udp_csum", test_udp_csum},
    {"frame_udp_csum_zero", test_udp_csum_zero},
    {"frame_overlap", test_overlap},
    {"frame_parse", test_parse},
    {"capfile_round_trip", test_capfile},
    {"capfile_errors", test_capfile_errors},
};

CHECK_MAIN(tests, NULL)
