/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The session table: insert, lookup (single and bulk), v4 and v6 keys,
 * full-table refusal, removal with probe chains kept intact, idle expiry
 * and slot reuse, the idlest session and room made by retiring it, with a randomised cross-check
 * against a plain array.
 */
#include "fixture.h"

static struct dust_session *add(struct dust_session_table *t, const struct dust_endpoint *ep,
                                uint32_t now)
{
	struct dust_session *s = dust_session_table_reserve(t);

	if (!s)
		return NULL;
	s->peer = *ep;
	s->last_rx_s = now;
	if (dust_session_table_insert(t, s) != 0)
		return NULL;
	return s;
}

static struct dust_endpoint ep_n(uint32_t n, bool v6)
{
	struct dust_endpoint ep = {.port = (uint16_t)(1000 + n % 50000)};

	ep.ip.family = v6 ? 6 : 4;
	ep.ip.a[0] = v6 ? 0x20 : 10;
	memcpy(ep.ip.a + (v6 ? 12 : 1), &n, v6 ? 4 : 3);
	return ep;
}

static void test_basic(void)
{
	struct dust_session_table *t = dust_session_table_create(4);
	struct dust_endpoint a = ep_n(1, false), b = ep_n(1, true), c = ep_n(2, false);
	struct dust_endpoint d = ep_n(3, false), e = ep_n(4, false);
	struct dust_session *sa;

	CHECK(t != NULL);
	sa = add(t, &a, 100);
	CHECK(sa != NULL);
	CHECK(add(t, &b, 100) != NULL);
	CHECK(dust_session_table_lookup(t, &a) == sa);
	CHECK(dust_session_table_lookup(t, &c) == NULL);
	/* v4 and v6 endpoints with equal bytes are different keys */
	CHECK(dust_session_table_lookup(t, &b) != sa);
	/* an IPv4 key is its 4 address bytes: the unused 12 do not matter */
	{
		struct dust_endpoint a2 = a;

		a2.ip.a[9] = 0x55;
		CHECK(dust_session_table_lookup(t, &a2) == sa);
	}
	/* a duplicate endpoint is refused */
	{
		struct dust_session *s = dust_session_table_reserve(t);

		s->peer = a;
		CHECK_EQ(dust_session_table_insert(t, s), -EEXIST);
	}
	CHECK(add(t, &c, 100) != NULL);
	CHECK(add(t, &d, 100) != NULL);
	CHECK(dust_session_table_reserve(t) == NULL); /* full */
	CHECK(add(t, &e, 100) == NULL);
	CHECK_EQ(dust_session_table_live(t), 4);
	dust_session_table_release(t, sa);
	CHECK(dust_session_table_lookup(t, &a) == NULL);
	CHECK(add(t, &e, 100) != NULL);
	CHECK(dust_session_table_lookup(t, &c) != NULL);
	dust_session_table_free(t);
}

static unsigned expired_cb_count;
static void expired_cb(struct dust_session *s, void *arg)
{
	CHECK_EQ(s->state, DUST_SESSION_RETIRING);
	expired_cb_count++;
	dust_session_table_release(arg, s);
}

static void test_expire(void)
{
	struct dust_session_table *t = dust_session_table_create(100);

	for (uint32_t i = 0; i < 100; i++) {
		struct dust_endpoint ep = ep_n(i, i & 1);

		CHECK(add(t, &ep, i < 30 ? 1000 : 1100) != NULL);
	}
	CHECK_EQ(dust_session_table_expire(t, 1200, 150, expired_cb, t), 30);
	CHECK_EQ(expired_cb_count, 30);
	CHECK_EQ(dust_session_table_live(t), 70);
	for (uint32_t i = 0; i < 100; i++) {
		struct dust_endpoint ep = ep_n(i, i & 1);

		CHECK((dust_session_table_lookup(t, &ep) != NULL) == (i >= 30));
	}
	for (uint32_t i = 100; i < 130; i++) {
		struct dust_endpoint ep = ep_n(i, false);

		CHECK(add(t, &ep, 1200) != NULL);
	}
	CHECK(dust_session_table_reserve(t) == NULL);
	dust_session_table_free(t);
}

/*
 * A full table names its idlest session; retiring it (not yet released, as
 * under a grace period) makes room at once from the spare slots.
 */
static void test_idlest_and_spare(void)
{
	enum { CAP = 50 };
	struct dust_session_table *t = dust_session_table_create(CAP);
	struct dust_session *s[CAP], *v, *n;
	uint32_t spare;

	CHECK(dust_session_table_idlest(t, 1000) == NULL);
	for (uint32_t i = 0; i < CAP; i++) {
		struct dust_endpoint ep = ep_n(i, i & 1);

		/* ages spread out; the idlest is number 17 */
		s[i] = add(t, &ep, i == 17 ? 400 : 500 + (i * 7) % 13);
		CHECK(s[i] != NULL);
	}
	CHECK(dust_session_table_reserve(t) == NULL);
	CHECK(dust_session_table_idlest(t, 1000) == s[17]);
	/* a clock that stepped back: last_rx_s in the future is not idle */
	s[3]->last_rx_s = 2000;
	CHECK(dust_session_table_idlest(t, 1000) == s[17]);
	spare = dust_session_table_slots(t) - CAP;
	CHECK(spare >= 8);
	/* retire one idlest after another: each retirement gives one slot */
	for (uint32_t k = 0; k < spare; k++) {
		v = dust_session_table_idlest(t, 1000);
		CHECK(v != NULL);
		dust_session_table_remove(t, v);
		CHECK_EQ(v->state, DUST_SESSION_RETIRING);
		n = dust_session_table_reserve(t);
		CHECK(n != NULL && n != v);
		if (!n)
			break;
		n->peer = ep_n(1000 + k, false);
		n->last_rx_s = 1000;
		CHECK_EQ(dust_session_table_insert(t, n), 0);
		CHECK(dust_session_table_reserve(t) == NULL);
	}
	CHECK_EQ(dust_session_table_live(t), CAP);
	/* every spare holds a retiring session: no room until one is released */
	v = dust_session_table_idlest(t, 1000);
	dust_session_table_remove(t, v);
	CHECK(dust_session_table_reserve(t) == NULL);
	dust_session_table_release(t, v);
	CHECK(dust_session_table_reserve(t) != NULL);
	dust_session_table_free(t);
}

/* Random inserts and removals checked against a plain array of truths. */
static void test_random_against_model(void)
{
	enum { CAP = 2000, OPS = 40000 };
	struct dust_session_table *t = dust_session_table_create(CAP);
	static struct dust_session *model[CAP * 4];
	struct dust_rng rng;

	fix_rng_seed(&rng, 3);
	for (int op = 0; op < OPS; op++) {
		uint32_t k = dust_rng_uniform(&rng, CAP * 4);
		struct dust_endpoint ep = ep_n(k, k & 1);
		struct dust_session *got = dust_session_table_lookup(t, &ep);

		CHECK(got == model[k]);
		if (model[k] && dust_rng_uniform(&rng, 2)) {
			dust_session_table_release(t, model[k]);
			model[k] = NULL;
		} else if (!model[k]) {
			model[k] = add(t, &ep, 1);
			CHECK(model[k] != NULL || dust_session_table_live(t) == CAP);
		}
	}
	/* bulk lookup agrees with the model */
	{
		struct dust_endpoint eps[100];
		const struct dust_endpoint *p[100];
		struct dust_session *out[100];
		unsigned hits = 0;

		for (uint32_t i = 0; i < 100; i++) {
			eps[i] = ep_n(i, i & 1);
			p[i] = &eps[i];
			hits += model[i] != NULL;
		}
		CHECK_EQ(dust_session_table_lookup_bulk(t, p, 100, out), hits);
		for (uint32_t i = 0; i < 100; i++)
			CHECK(out[i] == model[i]);
	}
	dust_session_table_free(t);
}

static void test_bytes_per_session(void)
{
	struct dust_session_table *t = dust_session_table_create(1000000);
	double per;

	CHECK(t != NULL);
	per = (double)dust_session_table_bytes(t) / 1e6;
	printf("     %.1f bytes per session at 1M (sizeof session %zu)\n", per,
	       sizeof(struct dust_session));
	/*
	 * Under 300 B before key update; its state (two update secrets, three
	 * receive and two cached send keys, epoch, forgery count) adds 289 B
	 * (SPEC.md §8.1), the answer's (the sealed server share until it is
	 * sent, a client's e and PRK until it opens) 73 B (§5.1).
	 */
	CHECK(per < 680);
	dust_session_table_free(t);
	CHECK(dust_session_table_create(0) == NULL);
}

static const struct check_test tests[] = {
    {"basic", test_basic},
    {"expire", test_expire},
    {"idlest_and_spare", test_idlest_and_spare},
    {"random_against_model", test_random_against_model},
    {"bytes_per_session", test_bytes_per_session},
};

CHECK_MAIN(tests, fix_dust_init)
