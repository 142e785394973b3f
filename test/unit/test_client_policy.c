/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-client's policy (tools/dust-client/policy.c): which tunnel prefixes
 * an invitation may put on the TUN, and the network each one routes.
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

int main(int argc, char **argv)
{
	static const struct check_test tests[] = {
	    {"prefix_allowed", test_prefix_allowed},
	    {"net_of", test_net_of},
	};

	return check_run(tests, sizeof(tests) / sizeof(tests[0]), argc > 1 ? argv[1] : NULL);
}
