/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What an intro costs the server: crypto_scalarmult is interposed with a
 * counting wrapper, so the tests see that a replayed or retransmitted intro
 * is refused before any X25519, and that a returning client pays one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>

#include "fixture.h"
#include "quic.h"

static unsigned scalarmults, basemults;

typedef int scalarmult_fn(unsigned char *, const unsigned char *, const unsigned char *);

/* The executable's definition wins over libsodium's for libdust's calls. */
int crypto_scalarmult(unsigned char *q, const unsigned char *n, const unsigned char *p)
{
	static scalarmult_fn *real;

	if (!real)
		real = (scalarmult_fn *)dlsym(RTLD_NEXT, "crypto_scalarmult");
	scalarmults++;
	return real(q, n, p);
}

typedef int scalarmult_base_fn(unsigned char *, const unsigned char *);

/* Key generation: the server share of an acceptance made inside libdust. */
int crypto_scalarmult_base(unsigned char *q, const unsigned char *n)
{
	static scalarmult_base_fn *real;

	if (!real)
		real = (scalarmult_base_fn *)dlsym(RTLD_NEXT, "crypto_scalarmult_base");
	basemults++;
	return real(q, n);
}

static int build(struct fixture *f, uint64_t ts_ms, uint8_t *out, size_t cap)
{
	struct dust_session tmp;
	int n = dust_intro_build(&f->inv, &f->client, &f->rng, &f->pad, ts_ms, out, cap, &tmp);

	CHECK(n >= DUST_INTRO_MIN_BYTES);
	dust_session_wipe(&tmp);
	return n;
}

/* Server-side scalar multiplications one accept costs, and its verdict. */
static enum dust_drop accept_counted(struct fixture *f, const uint8_t *pkt, int n, uint64_t now,
                                     unsigned *cost)
{
	struct dust_endpoint from = fix_endpoint("198.51.100.7", 40000);
	struct dust_session s;
	size_t used = 0;
	enum dust_drop d;

	scalarmults = basemults = 0;
	d = dust_intro_accept(&f->srv, pkt, (size_t)n, now, &from, NULL, &s, &used, NULL);
	*cost = scalarmults + basemults;
	dust_session_wipe(&s);
	return d;
}

static void test_replay_costs_no_x25519(void)
{
	struct fixture f;
	uint8_t first[1024], old[1024], next[1024];
	int n1, n0, n2;
	unsigned cost;

	fix_init(&f);
	n0 = build(&f, FIX_NOW_MS - 5000, old, sizeof(old));
	n1 = build(&f, FIX_NOW_MS, first, sizeof(first));
	n2 = build(&f, FIX_NOW_MS + 3000, next, sizeof(next));
	/* first use: DH(s, E), DH(s, C), the server share e_s and DH(e_s, E) */
	CHECK_EQ(accept_counted(&f, first, n1, FIX_NOW_MS, &cost), DUST_OK);
	CHECK_EQ(cost, 4);
	/* the same bytes again (a retransmission or a replay): no X25519 */
	CHECK_EQ(accept_counted(&f, first, n1, FIX_NOW_MS + 10, &cost), DUST_DROP_INTRO_DUP);
	CHECK_EQ(cost, 0);
	/* an older intro of the bound client, authentic but replayed later: none */
	CHECK_EQ(accept_counted(&f, old, n0, FIX_NOW_MS + 20, &cost), DUST_DROP_INTRO_REPLAY);
	CHECK_EQ(cost, 0);
	/* a newer intro of the bound client: DH(s, C) is cached */
	CHECK_EQ(accept_counted(&f, next, n2, FIX_NOW_MS + 3000, &cost), DUST_OK);
	CHECK_EQ(cost, 3);
	/* and now the one before it is a replay too, still without an X25519 */
	CHECK_EQ(accept_counted(&f, first, n1, FIX_NOW_MS + 3100, &cost), DUST_DROP_INTRO_REPLAY);
	CHECK_EQ(cost, 0);
	fix_fini(&f);
}

/* After a restart the replay state comes from the journal: still no X25519. */
static void test_replay_after_reopen(void)
{
	struct fixture f;
	uint8_t first[1024];
	int n;
	unsigned cost;

	fix_init(&f);
	n = build(&f, FIX_NOW_MS, first, sizeof(first));
	CHECK_EQ(accept_counted(&f, first, n, FIX_NOW_MS, &cost), DUST_OK);
	fix_reopen_store(&f);
	CHECK_EQ(accept_counted(&f, first, n, FIX_NOW_MS + 10, &cost), DUST_DROP_INTRO_DUP);
	CHECK_EQ(cost, 0);
	fix_fini(&f);
}

/*
 * Junk shaped like a QUIC Initial, long or short, with no ready-made share:
 * no X25519 and no key generation at all (the share is made only for an
 * authenticated Initial).
 */
static void test_quic_junk_costs_nothing(void)
{
	struct fixture f;
	struct dust_endpoint from = fix_endpoint("198.51.100.7", 40000);
	struct dust_quic_accept acc;
	struct dust_session s;
	uint8_t junk[1250];

	fix_init(&f);
	for (unsigned i = 0; i < 64; i++) {
		size_t len = i % 2 ? sizeof(junk) : 7 + i;

		dust_rng_bytes(&f.rng, junk, sizeof(junk));
		junk[0] = 0xc0 | (junk[0] & 0x0f); /* long header, Initial */
		memcpy(junk + 1, "\x00\x00\x00\x01", 4);
		junk[5] = 8; /* DCID length */
		scalarmults = basemults = 0;
		CHECK(dust_quic_intro_accept(&f.srv, &f.rng, junk, len, FIX_NOW_MS, &from, NULL, &s,
		                             &acc, NULL) != DUST_OK);
		CHECK_EQ(scalarmults + basemults, 0);
	}
	fix_fini(&f);
}

int main(int argc, char **argv)
{
	static const struct check_test tests[] = {
	    {"replay_costs_no_x25519", test_replay_costs_no_x25519},
	    {"replay_after_reopen", test_replay_after_reopen},
	    {"quic_junk_costs_nothing", test_quic_junk_costs_nothing},
	};

	CHECK(dust_init() == 0);
	return check_run(tests, sizeof(tests) / sizeof(tests[0]), argc > 1 ? argv[1] : NULL);
}
