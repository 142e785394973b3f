/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The random profile's answer (SPEC.md §5.1): one intro accepted twice (two
 * gateways of a cluster, or one gateway that lost its freshness in a crash)
 * never gives two sessions a common key, so no key and nonce is ever
 * sealed twice; the 0-RTT data of the intro opens, later data does not
 * without the answer; a floor at the server's start refuses every intro
 * from before it.
 */
#include "fixture.h"

#define SECRET "GET /secret HTTP/1.1 Host: bank.example Cookie: s=42"

static struct dust_server second_gateway(struct fixture *f)
{
	struct dust_server srv = f->srv;

	srv.store = dust_store_open(f->store_path, 0, &f->server);
	CHECK(srv.store != NULL);
	if (srv.store)
		CHECK(dust_store_tick(srv.store, FIX_NOW_S) >= 0);
	return srv;
}

static int build_intro(struct fixture *f, uint64_t ts_ms, uint8_t *out, size_t cap,
                       struct dust_session *cs)
{
	int n = dust_intro_build(&f->inv, &f->client, &f->rng, &f->pad, ts_ms, out, cap, cs);

	CHECK(n >= DUST_INTRO_MIN_BYTES);
	return n;
}

static enum dust_drop accept_at(struct dust_server *srv, const uint8_t *dg, int n, uint64_t now_ms,
                                struct dust_session *ss)
{
	struct dust_endpoint from = fix_endpoint("198.51.100.7", 40000);
	size_t used = 0;

	return dust_intro_accept(srv, dg, (size_t)n, now_ms, &from, NULL, ss, &used, NULL);
}

/* Seal text at counter 0 under s; the ciphertext (data bytes only) goes to ct. */
static void seal_at_zero(struct fixture *f, struct dust_session *s, const char *text, uint8_t *ct)
{
	struct dust_pad pad = {.kind = DUST_PAD_UNIFORM};
	uint8_t pkt[256];

	s->tx_counter = 0;
	memcpy(pkt + DUST_DATA_PREFIX, text, strlen(text));
	CHECK(dust_data_seal(s, &f->rng, &pad, FIX_NOW_S, pkt, strlen(text), sizeof(pkt)) > 0);
	memcpy(ct, pkt + DUST_DATA_PREFIX, strlen(text));
}

/* No key the two server sessions seal with, or would open later data with, is shared. */
static void check_disjoint(const struct dust_session *a, const struct dust_session *b)
{
	CHECK(sodium_memcmp(a->tx_key, b->tx_key, DUST_KEY_BYTES) != 0);
	CHECK(sodium_memcmp(a->tx_hp, b->tx_hp, DUST_HP_KEY_BYTES) != 0);
	CHECK(sodium_memcmp(a->tx_upd, b->tx_upd, DUST_KEY_BYTES) != 0);
	CHECK(sodium_memcmp(a->rx_upd, b->rx_upd, DUST_KEY_BYTES) != 0);
}

/*
 * The finding of the protocol review: the same intro bytes accepted at two
 * gateways gave both the same server-to-client key from counter 0; XOR of two
 * ciphertexts gave XOR of the plaintexts.
 */
static void test_two_gateways_no_common_key(void)
{
	struct fixture f;
	struct dust_server b;
	struct dust_session cs, sa, sb;
	uint8_t dg[2048], ca[64], cb[64], x[64], pad[64];
	int n;
	size_t len = strlen(SECRET);

	fix_init(&f);
	b = second_gateway(&f);
	n = build_intro(&f, FIX_NOW_MS, dg, sizeof(dg), &cs);
	/* A takes the intro; B has not heard of it yet (etcd watch delay, or an outage) */
	CHECK_EQ(accept_at(&f.srv, dg, n, FIX_NOW_MS, &sa), DUST_OK);
	CHECK_EQ(accept_at(&b, dg, n, FIX_NOW_MS + 5, &sb), DUST_OK);
	check_disjoint(&sa, &sb);
	/* the same plaintext under the same counter: the two ciphertexts are unrelated */
	seal_at_zero(&f, &sa, SECRET, ca);
	seal_at_zero(&f, &sb, SECRET, cb);
	for (size_t i = 0; i < len; i++)
		x[i] = ca[i] ^ cb[i];
	memset(pad, 0, sizeof(pad));
	CHECK(memcmp(x, pad, len) != 0); /* before the fix: the keystreams cancelled */
	CHECK(memcmp(ca, cb, len) != 0);
	/* the client takes A's answer; B's packets do not open at the client */
	fix_answer(&f, &sa, &cs, FIX_NOW_S);
	{
		uint8_t pkt[256];
		struct dust_seg seg;
		size_t used;
		int m;

		memcpy(pkt + DUST_DATA_PREFIX, SECRET, len);
		m = dust_data_seal(&sb, &f.rng, &f.pad, FIX_NOW_S, pkt, len, sizeof(pkt));
		CHECK(m > 0);
		CHECK(dust_data_open(&cs, &f.lim, FIX_NOW_S, pkt, (size_t)m, &seg, &used) !=
		      DUST_OK);
		/* and the client's data after the answer opens at A only, not at B */
		memcpy(pkt + DUST_DATA_PREFIX, "after", 5);
		m = dust_data_seal(&cs, &f.rng, &f.pad, FIX_NOW_S, pkt, 5, sizeof(pkt));
		CHECK(m > 0);
		CHECK_EQ(dust_data_open(&sb, &f.lim, FIX_NOW_S, pkt, (size_t)m, &seg, &used),
		         DUST_DROP_AUTH); /* B's header key is the same, its data key is not */
		CHECK_EQ(dust_data_open(&sa, &f.lim, FIX_NOW_S, pkt, (size_t)m, &seg, &used),
		         DUST_OK);
		CHECK(seg.len == 5 && memcmp(pkt + seg.off, "after", 5) == 0);
	}
	dust_store_close(b.store);
	fix_fini(&f);
}

/* Copy a file byte for byte (the store as it was on disk before a crash). */
static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	char buf[4096];
	size_t k;

	CHECK(in && out);
	while (in && out && (k = fread(buf, 1, sizeof(buf), in)) > 0)
		CHECK(fwrite(buf, 1, k, out) == k);
	if (in)
		fclose(in);
	if (out)
		fclose(out);
}

/*
 * A crash that lost the freshness line (it is not fsynced): the gateway
 * comes back within the window. Without a floor the intro is taken again,
 * now with keys of its own; with the floor at the restart it is refused.
 */
static void test_crash_restart(void)
{
	struct fixture f;
	struct dust_session cs, s1, s2;
	char bind[160], saved[160], saved_bind[160];
	uint8_t dg[2048];
	int n;

	fix_init(&f);
	snprintf(bind, sizeof(bind), "%s.bind", f.store_path);
	snprintf(saved, sizeof(saved), "%s.saved", f.store_path);
	snprintf(saved_bind, sizeof(saved_bind), "%s.bind.saved", f.store_path);
	/* bind the invitation first, so that only freshness is at stake */
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS - 20000), DUST_OK);
	dust_store_close(f.srv.store);
	copy_file(f.store_path, saved);
	copy_file(bind, saved_bind);
	f.srv.store = dust_store_open(f.store_path, 0, &f.server);
	CHECK(f.srv.store && dust_store_tick(f.srv.store, FIX_NOW_S) >= 0);

	n = build_intro(&f, FIX_NOW_MS, dg, sizeof(dg), &cs);
	CHECK_EQ(accept_at(&f.srv, dg, n, FIX_NOW_MS, &s1), DUST_OK);
	/* the crash: the journal as it was before this intro's freshness line */
	dust_store_close(f.srv.store);
	copy_file(saved, f.store_path);
	copy_file(saved_bind, bind);
	f.srv.store = dust_store_open(f.store_path, 0, &f.server);
	CHECK(f.srv.store && dust_store_tick(f.srv.store, FIX_NOW_S) >= 0);
	/* no floor: accepted a second time, but never with the first session's keys */
	CHECK_EQ(accept_at(&f.srv, dg, n, FIX_NOW_MS + 2000, &s2), DUST_OK);
	check_disjoint(&s1, &s2);
	/* with the floor at the restart, as dustgw sets it: refused, nothing changes */
	fix_reopen_store(&f);
	dust_store_close(f.srv.store);
	copy_file(saved, f.store_path);
	copy_file(saved_bind, bind);
	f.srv.store = dust_store_open(f.store_path, 0, &f.server);
	CHECK(f.srv.store && dust_store_tick(f.srv.store, FIX_NOW_S) >= 0);
	f.srv.floor_ms = FIX_NOW_MS + 1500;
	CHECK_EQ(accept_at(&f.srv, dg, n, FIX_NOW_MS + 2000, &s2), DUST_DROP_INTRO_EARLY);
	/* a fresh intro after the restart is welcome */
	n = build_intro(&f, FIX_NOW_MS + 1600, dg, sizeof(dg), &cs);
	CHECK_EQ(accept_at(&f.srv, dg, n, FIX_NOW_MS + 2000, &s2), DUST_OK);
	fix_fini(&f);
}

/* 0-RTT: the intro's chained data opens at once; the server's data waits for the answer. */
static void test_zero_rtt_and_answer(void)
{
	struct fixture f;
	struct dust_session cs, ss;
	uint8_t dg[2048], ans[512], bad[512];
	struct dust_seg seg[4];
	enum dust_drop drop;
	size_t used = 0;
	int n, m, a;

	fix_init(&f);
	n = build_intro(&f, FIX_NOW_MS, dg, sizeof(dg), &cs);
	CHECK_EQ(cs.hs_pending, 1);
	memcpy(dg + n + DUST_DATA_PREFIX, "early", 5);
	m = dust_data_seal(&cs, &f.rng, &f.pad, FIX_NOW_S, dg + n, 5, sizeof(dg) - (size_t)n);
	CHECK(m > 0);
	{
		struct dust_endpoint from = fix_endpoint("198.51.100.7", 40000);

		CHECK_EQ(dust_intro_accept(&f.srv, dg, (size_t)(n + m), FIX_NOW_MS, &from, NULL,
		                           &ss, &used, NULL),
		         DUST_OK);
	}
	CHECK_EQ(used, (size_t)n);
	CHECK_EQ(
	    dust_datagram_open(&ss, &f.lim, FIX_NOW_S, dg, (size_t)(n + m), used, seg, 4, &drop),
	    1u);
	CHECK(seg[0].len == 5 && memcmp(dg + seg[0].off, "early", 5) == 0);

	/* the client opens nothing before the answer */
	memcpy(ans + DUST_DATA_PREFIX, "down", 4);
	a = dust_data_seal(&ss, &f.rng, &f.pad, FIX_NOW_S, ans, 4, sizeof(ans));
	CHECK(a > 0);
	CHECK(dust_data_open(&cs, &f.lim, FIX_NOW_S, ans, (size_t)a, seg, &used) != DUST_OK);

	a = dust_intro_answer_build(&ss, &f.rng, &f.pad, FIX_NOW_S, ans, sizeof(ans));
	CHECK(a >= DUST_ANSWER_BYTES + DUST_DATA_MIN_BYTES);
	CHECK_EQ(ss.hs_pending, 0);
	/* sent once: nothing left to send again */
	CHECK(dust_intro_answer_build(&ss, &f.rng, &f.pad, FIX_NOW_S, bad, sizeof(bad)) < 0);
	/* a flipped bit anywhere in the block: refused, the client unchanged */
	for (int i = 0; i < DUST_ANSWER_BYTES; i += 7) {
		memcpy(bad, ans, (size_t)a);
		bad[i] ^= 0x10;
		CHECK_EQ(dust_intro_answer_open(&cs, bad, (size_t)a, &used), DUST_DROP_AUTH);
		CHECK_EQ(cs.hs_pending, 1);
	}
	CHECK_EQ(dust_intro_answer_open(&cs, ans, DUST_ANSWER_BYTES - 1, &used),
	         DUST_DROP_TRUNCATED);
	CHECK_EQ(dust_intro_answer_open(&cs, ans, (size_t)a, &used), DUST_OK);
	CHECK_EQ(cs.hs_pending, 0);
	CHECK(sodium_is_zero((const uint8_t *)&cs.hs, sizeof(cs.hs)));
	CHECK(cs.tx_counter >= DUST_KEY_EPOCH_PACKETS);
	/* the same answer again: the client has nothing pending any more */
	CHECK_EQ(dust_intro_answer_open(&cs, ans, (size_t)a, &used), DUST_DROP_AUTH);
	CHECK_EQ(dust_datagram_open(&cs, &f.lim, FIX_NOW_S, ans, (size_t)a, DUST_ANSWER_BYTES, seg,
	                            4, &drop),
	         1u);
	CHECK_EQ(drop, DUST_OK);
	fix_fini(&f);
}

/* The random path takes no quic-profile invitation (SPEC.md §12.2). */
static void test_quic_invitation_refused(void)
{
	struct fixture f;
	struct dust_session cs, ss;
	uint8_t dg[2048];
	int n;

	fix_init(&f);
	dust_store_close(f.srv.store);
	remove(f.store_path);
	f.inv.profile = DUST_PROFILE_QUIC;
	CHECK(dust_invite_cover_set(&f.inv, "www.example.com") == 0);
	f.srv.store = dust_store_open(f.store_path, DUST_STORE_CREATE, &f.server);
	CHECK(f.srv.store && dust_store_add(f.srv.store, &f.inv) == 0);
	CHECK(dust_store_tick(f.srv.store, FIX_NOW_S) >= 0);
	n = build_intro(&f, FIX_NOW_MS, dg, sizeof(dg), &cs);
	CHECK_EQ(accept_at(&f.srv, dg, n, FIX_NOW_MS, &ss), DUST_DROP_INTRO_UNKNOWN);
	fix_fini(&f);
}

static const struct check_test tests[] = {
    {"two_gateways_no_common_key", test_two_gateways_no_common_key},
    {"crash_restart", test_crash_restart},
    {"zero_rtt_and_answer", test_zero_rtt_and_answer},
    {"quic_invitation_refused", test_quic_invitation_refused},
};

CHECK_MAIN(tests, fix_dust_init)
