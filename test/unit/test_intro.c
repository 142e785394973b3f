/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What an intro costs the server and in which order it happens:
 * crypto_scalarmult, the intro's AEAD open and fdatasync are interposed with
 * counting wrappers, so the tests see that a replayed, retransmitted or
 * revoked intro is refused before any X25519 (a revoked one before any AEAD
 * too), that a returning client pays one, and that a first use's binding is
 * on disk and fsynced before the intro is accepted and its answer sealed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <sys/stat.h>

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

typedef int aead_open_fn(unsigned char *, unsigned long long *, unsigned char *,
                         const unsigned char *, unsigned long long, const unsigned char *,
                         unsigned long long, const unsigned char *, const unsigned char *);

static unsigned aead_opens;

/* The intro's AEAD (both profiles seal the intro with XChaCha20-Poly1305). */
int crypto_aead_xchacha20poly1305_ietf_decrypt(unsigned char *m, unsigned long long *mlen,
                                               unsigned char *nsec, const unsigned char *c,
                                               unsigned long long clen, const unsigned char *ad,
                                               unsigned long long adlen, const unsigned char *npub,
                                               const unsigned char *k)
{
	static aead_open_fn *real;

	if (!real)
		real =
		    (aead_open_fn *)dlsym(RTLD_NEXT, "crypto_aead_xchacha20poly1305_ietf_decrypt");
	aead_opens++;
	return real(m, mlen, nsec, c, clen, ad, adlen, npub, k);
}

/*
 * fdatasync, watched: each call records how many binding ("B ") lines the
 * file held at that moment, so a test sees which write an fsync covered.
 */
static unsigned syncs, synced_bindings;

static unsigned binding_lines(int fd)
{
	char buf[65536];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	unsigned lines = 0;

	if (n <= 0)
		return 0;
	buf[n] = 0;
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		lines += strncmp(p, "B ", 2) == 0;
	return lines;
}

int fdatasync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	syncs++;
	synced_bindings = binding_lines(fd);
	return real(fd);
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

	scalarmults = basemults = aead_opens = 0;
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

/* SPEC §7: a revoked invitation accepts no intro, checked right after the tag lookup. */
static void test_revoked_costs_no_crypto(void)
{
	struct fixture f;
	uint8_t pkt[1024];
	struct dust_store_entry *e;
	unsigned cost;
	int n;

	fix_init(&f);
	n = build(&f, FIX_NOW_MS, pkt, sizeof(pkt));
	e = dust_store_find(f.srv.store, f.inv.id);
	CHECK(e != NULL);
	if (e)
		CHECK_EQ(dust_store_revoke(f.srv.store, e, FIX_NOW_S), 0);
	CHECK_EQ(accept_counted(&f, pkt, n, FIX_NOW_MS, &cost), DUST_DROP_INTRO_REVOKED);
	CHECK_EQ(cost, 0);
	CHECK_EQ(aead_opens, 0);
	fix_fini(&f);
}

/* The same for a quic invitation's Initial (§12.2 takes §7's rule). */
static void test_quic_revoked_costs_no_crypto(void)
{
	struct fixture f;
	struct dust_endpoint from = fix_endpoint("198.51.100.7", 40000);
	struct dust_quic_client qc;
	struct dust_quic_accept acc;
	struct dust_store_entry *e;
	struct dust_session s;
	struct dust_store *st;
	uint8_t dg[DUST_QUIC_HELLO_BYTES];
	int n;

	fix_init(&f);
	f.inv.profile = DUST_PROFILE_QUIC;
	f.inv.port = 443;
	CHECK(dust_invite_cover_set(&f.inv, "www.example.com") == 0);
	dust_store_close(f.srv.store);
	CHECK(unlink(f.store_path) == 0);
	st = dust_store_open(f.store_path, DUST_STORE_CREATE, &f.server);
	CHECK(st && dust_store_add(st, &f.inv) == 0 && dust_store_save(st) == 0);
	CHECK(dust_store_tick(st, FIX_NOW_S) >= 0);
	f.srv.store = st;
	n = dust_quic_intro_build(&f.inv, &f.client, &f.rng, FIX_NOW_MS, dg, sizeof(dg), &qc);
	CHECK_EQ(n, DUST_QUIC_HELLO_BYTES);
	e = dust_store_find(st, f.inv.id);
	CHECK(e != NULL);
	if (e)
		CHECK_EQ(dust_store_revoke(st, e, FIX_NOW_S), 0);
	scalarmults = basemults = aead_opens = 0;
	CHECK_EQ(dust_quic_intro_accept(&f.srv, &f.rng, dg, (size_t)n, FIX_NOW_MS, &from, NULL, &s,
	                                &acc, NULL),
	         DUST_DROP_INTRO_REVOKED);
	CHECK_EQ(scalarmults + basemults, 0);
	CHECK_EQ(aead_opens, 0);
	dust_session_wipe(&s);
	fix_fini(&f);
}

/*
 * SPEC §5 step 7 and §7: only a strictly newer intro creates a session. One
 * with the newest accepted timestamp but another nonce (authentic: the
 * client's, replayed with a fresh nonce, or a second intro in the same
 * millisecond) is a replay, refused before any X25519.
 */
static void test_same_ts_new_nonce_costs_no_x25519(void)
{
	struct fixture f;
	uint8_t a[1024], b[1024];
	unsigned cost;
	int na, nb;

	fix_init(&f);
	na = build(&f, FIX_NOW_MS, a, sizeof(a));
	nb = build(&f, FIX_NOW_MS, b, sizeof(b));
	/* same timestamp, another nonce */
	CHECK(memcmp(a + DUST_INTRO_NONCE_OFF, b + DUST_INTRO_NONCE_OFF, DUST_XNONCE_BYTES) != 0);
	CHECK_EQ(accept_counted(&f, a, na, FIX_NOW_MS, &cost), DUST_OK);
	CHECK_EQ(accept_counted(&f, b, nb, FIX_NOW_MS + 5, &cost), DUST_DROP_INTRO_REPLAY);
	CHECK_EQ(cost, 0);
	fix_fini(&f);
}

/*
 * SPEC §4: the expiry is the last second (unix seconds) the invitation may
 * be first used: accepted through its last millisecond, refused a second on.
 */
static enum dust_drop accept_at(uint64_t now_ms, unsigned *cost)
{
	struct fixture f;
	uint8_t pkt[1024];
	enum dust_drop d;
	int n;

	fix_init(&f);
	CHECK_EQ(f.inv.expiry, FIX_NOW_S + 3600);
	/* the store's tags follow the clock (epochs of §4) */
	CHECK(dust_store_tick(f.srv.store, (uint32_t)(now_ms / 1000)) >= 0);
	n = build(&f, now_ms, pkt, sizeof(pkt));
	d = accept_counted(&f, pkt, n, now_ms, cost);
	fix_fini(&f);
	return d;
}

static void test_expiry_boundary(void)
{
	uint64_t exp_ms = (uint64_t)(FIX_NOW_S + 3600) * 1000;
	unsigned cost;

	CHECK_EQ(accept_at(exp_ms - 1000, &cost), DUST_OK);
	CHECK_EQ(accept_at(exp_ms, &cost), DUST_OK);
	CHECK_EQ(accept_at(exp_ms + 999, &cost), DUST_OK);
	CHECK_EQ(accept_at(exp_ms + 1000, &cost), DUST_DROP_INTRO_EXPIRED);
	CHECK_EQ(cost, 0);
}

/*
 * SPEC §5 step 9 and §7: a first use's binding is appended to the journal
 * and fsynced before the intro is accepted (and its answer sealed); a
 * returning client's intro needs no fsync.
 */
static void test_binding_fsynced_before_answer(void)
{
	struct fixture f;
	struct dust_endpoint from = fix_endpoint("198.51.100.7", 40000);
	struct dust_session s;
	uint8_t pkt[1024], next[1024];
	size_t used = 0;
	int n, n2;

	fix_init(&f);
	n = build(&f, FIX_NOW_MS, pkt, sizeof(pkt));
	n2 = build(&f, FIX_NOW_MS + 1000, next, sizeof(next));
	memset(&s, 0, sizeof(s));
	syncs = synced_bindings = 0;
	CHECK_EQ(
	    dust_intro_accept(&f.srv, pkt, (size_t)n, FIX_NOW_MS, &from, NULL, &s, &used, NULL),
	    DUST_OK);
	/* by the time the answer exists, an fsync has covered the binding line */
	CHECK(s.hs_pending);
	CHECK(!sodium_is_zero(s.hs.answer, sizeof(s.hs.answer)));
	CHECK_EQ(syncs, 1);
	CHECK_EQ(synced_bindings, 1);
	dust_session_wipe(&s);
	/* a returning client: no binding to persist, no fsync on its path */
	syncs = 0;
	CHECK_EQ(dust_intro_accept(&f.srv, next, (size_t)n2, FIX_NOW_MS + 1000, &from, NULL, &s,
	                           &used, NULL),
	         DUST_OK);
	CHECK_EQ(syncs, 0);
	dust_session_wipe(&s);
	fix_fini(&f);
}

static const struct check_test tests[] = {
    {"replay_costs_no_x25519", test_replay_costs_no_x25519},
    {"replay_after_reopen", test_replay_after_reopen},
    {"quic_junk_costs_nothing", test_quic_junk_costs_nothing},
    {"revoked_costs_no_crypto", test_revoked_costs_no_crypto},
    {"quic_revoked_costs_no_crypto", test_quic_revoked_costs_no_crypto},
    {"same_ts_new_nonce_costs_no_x25519", test_same_ts_new_nonce_costs_no_x25519},
    {"expiry_boundary", test_expiry_boundary},
    {"binding_fsynced_before_answer", test_binding_fsynced_before_answer},
};

CHECK_MAIN(tests, fix_dust_init)
