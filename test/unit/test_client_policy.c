/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-client's policy (tools/dust-client/policy.c): which tunnel prefixes
 * an invitation may put on the TUN, the network each one routes, and which
 * packets from the gateway it writes to the TUN.
 */
#include "check.h"
#include "policy.h"

static struct dust_ipaddr ip(const char *text)
{
	struct dust_ipaddr a;

	CHECK(dust_ipaddr_parse(&a, text) == 0);
	return a;
}

static void test_prefix_allowed(void)
{
	static const struct {
		const char *addr;
		unsigned prefix;
		bool plain, wide; /* allowed without, and with --allow-wide-route */
	} t[] = {
	    {"128.0.0.1", 0, false, true},
	    {"128.0.0.1", 1, false, true},
	    {"10.0.0.2", 7, false, true},
	    {"10.0.0.2", 8, true, true},
	    {"10.9.0.2", 24, true, true},
	    {"10.9.0.2", 32, true, true},
	    {"2001:db8::2", 0, false, true},
	    {"2001:db8::2", 1, false, true},
	    {"2001:db8::2", 31, false, true},
	    {"2001:db8::2", 32, true, true},
	    {"2001:db8::2", 64, true, true},
	    {"2001:db8::2", 128, true, true},
	    /* taken for IPv4, too wide for IPv6: the minimum is the family's */
	    {"2001:db8::2", 8, false, true},
	    {"2001:db8::2", 24, false, true},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct dust_ipaddr a = ip(t[i].addr);

		if (client_prefix_allowed(&a, t[i].prefix, false) != t[i].plain ||
		    client_prefix_allowed(&a, t[i].prefix, true) != t[i].wide) {
			fprintf(stderr, "  case %zu: %s/%u\n", i, t[i].addr, t[i].prefix);
			CHECK(0);
		}
	}
	CHECK_EQ(client_prefix_min(&(struct dust_ipaddr){.family = 4}), 8);
	CHECK_EQ(client_prefix_min(&(struct dust_ipaddr){.family = 6}), 32);
}

static void test_net_of(void)
{
	static const struct {
		const char *addr;
		unsigned prefix;
		const char *net;
	} t[] = {
	    {"128.1.2.3", 0, "0.0.0.0"},
	    {"255.1.2.3", 1, "128.0.0.0"},
	    {"10.9.8.7", 8, "10.0.0.0"},
	    {"10.255.8.7", 13, "10.248.0.0"},
	    {"10.9.8.7", 24, "10.9.8.0"},
	    {"10.9.8.7", 31, "10.9.8.6"},
	    {"10.9.8.7", 32, "10.9.8.7"},
	    {"2001:db8:1:2::5", 0, "::"},
	    {"2001:db8:1:2::5", 32, "2001:db8::"},
	    {"2001:db8:1:2::5", 63, "2001:db8:1:2::"},
	    {"2001:db8:1:3::5", 63, "2001:db8:1:2::"},
	    {"2001:db8::ffff", 127, "2001:db8::fffe"},
	    {"2001:db8::ffff", 128, "2001:db8::ffff"},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct dust_ipaddr a = ip(t[i].addr), want = ip(t[i].net), got;
		char s[64];

		client_net_of(&a, t[i].prefix, &got);
		if (!dust_ipaddr_equal(&got, &want)) {
			fprintf(stderr, "  %s/%u: got %s, want %s\n", t[i].addr, t[i].prefix,
			        dust_ipaddr_format(&got, s, sizeof(s)), t[i].net);
			CHECK(0);
		}
	}
}

/* An IP header of version ver, len bytes, from src to dst (the rest zero). */
static size_t ip_packet(uint8_t *p, unsigned ver, size_t len, const char *src, const char *dst)
{
	struct dust_ipaddr s = ip(src), d = ip(dst);

	memset(p, 0, len);
	p[0] = (uint8_t)(ver << 4 | (ver == 4 ? 5 : 0));
	memcpy(p + (ver == 4 ? 12 : 8), s.a, ver == 4 ? 4 : 16);
	memcpy(p + (ver == 4 ? 16 : 24), d.a, ver == 4 ? 4 : 16);
	return len;
}

static void test_inner_check(void)
{
	static const struct {
		const char *tunnel;
		unsigned ver;
		size_t len;
		const char *src, *dst;
		enum client_inner want;
	} t[] = {
	    {"10.9.0.2", 4, 84, "10.9.0.1", "10.9.0.2", CLIENT_INNER_OK},
	    {"10.9.0.2", 4, 20, "8.8.8.8", "10.9.0.2", CLIENT_INNER_OK},
	    {"10.9.0.2", 4, 84, "10.9.0.1", "10.9.0.3", CLIENT_INNER_FOREIGN_DST},
	    {"10.9.0.2", 4, 84, "10.9.0.1", "192.168.1.1", CLIENT_INNER_FOREIGN_DST},
	    {"10.9.0.2", 4, 84, "10.9.0.1", "255.255.255.255", CLIENT_INNER_FOREIGN_DST},
	    /* our address as the source is no reason to take it */
	    {"10.9.0.2", 4, 84, "10.9.0.2", "10.9.0.1", CLIENT_INNER_FOREIGN_DST},
	    {"10.9.0.2", 4, 19, "10.9.0.1", "10.9.0.2", CLIENT_INNER_BAD},
	    {"10.9.0.2", 6, 80, "2001:db8::1", "2001:db8::2", CLIENT_INNER_FOREIGN_DST},
	    {"2001:db8::2", 6, 80, "2001:db8::1", "2001:db8::2", CLIENT_INNER_OK},
	    {"2001:db8::2", 6, 40, "2001:db8::1", "2001:db8::2", CLIENT_INNER_OK},
	    {"2001:db8::2", 6, 80, "2001:db8::1", "2001:db8::3", CLIENT_INNER_FOREIGN_DST},
	    {"2001:db8::2", 6, 80, "2001:db8::1", "3001:db8::2", CLIENT_INNER_FOREIGN_DST},
	    {"2001:db8::2", 6, 80, "2001:db8::2", "2001:db8::1", CLIENT_INNER_FOREIGN_DST},
	    {"2001:db8::2", 6, 39, "2001:db8::1", "2001:db8::2", CLIENT_INNER_BAD},
	    {"2001:db8::2", 4, 84, "10.9.0.1", "10.9.0.2", CLIENT_INNER_FOREIGN_DST},
	    /* the other family, with the tunnel address's bytes where its dst is */
	    {"10.9.0.2", 6, 80, "2001:db8::1", "a09:2::", CLIENT_INNER_FOREIGN_DST},
	    {"2001:db8::2", 4, 84, "10.9.0.1", "32.1.13.184", CLIENT_INNER_FOREIGN_DST},
	};
	struct dust_ipaddr tun = ip("10.9.0.2");
	uint8_t p[128];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t len = ip_packet(p, t[i].ver, t[i].len, t[i].src, t[i].dst);
		struct dust_ipaddr a = ip(t[i].tunnel);

		if (client_inner_check(&a, p, len) != t[i].want) {
			fprintf(stderr, "  case %zu: %s -> %s for %s\n", i, t[i].src, t[i].dst,
			        t[i].tunnel);
			CHECK(0);
		}
	}
	/* neither IPv4 nor IPv6, or nothing at all */
	ip_packet(p, 4, 84, "10.9.0.1", "10.9.0.2");
	p[0] = 0x55;
	CHECK_EQ(client_inner_check(&tun, p, 84), CLIENT_INNER_BAD);
	p[0] = 0x05;
	CHECK_EQ(client_inner_check(&tun, p, 84), CLIENT_INNER_BAD);
	CHECK_EQ(client_inner_check(&tun, p, 0), CLIENT_INNER_BAD);
}

static const struct check_test tests[] = {
    {"prefix_allowed", test_prefix_allowed},
    {"net_of", test_net_of},
    {"inner_check", test_inner_check},
};

CHECK_MAIN(tests, NULL)
