/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The table of answered quic first flights (app/dustgw/rtx.c, SPEC §12.3)
 * on a fake clock in milliseconds: bounded (a full table gives up its
 * oldest, wiped), the PTO at 205 ms doubling three times then given up, a
 * retransmitted hello's second Initial not answered again, and every entry
 * that ends zeroed to the last byte.
 */
#include <stdint.h>

#include "check.h"
#include "rtx.h"

static struct dgw_rtx R;

static bool zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static void fill(struct dgw_rtx_e *e, uint8_t v)
{
	memset(&e->acc, v, sizeof(e->acc));
	memset(e->seed, v, sizeof(e->seed));
	e->mac = v;
}

/*
 * DGW_RTX_MAX entries fit; the next pushes out the oldest (wherever it
 * lies), wiped; a lookup finds each.
 */
static void test_bounded(void)
{
	static int key[DGW_RTX_MAX + 2];
	struct dgw_rtx_e *e, *old;
	bool ev;

	memset(&R, 0, sizeof(R));
	for (unsigned i = 0; i < DGW_RTX_MAX; i++) {
		e = dgw_rtx_put(&R, &key[i], 1000 + i, &ev);
		CHECK(!ev);
		fill(e, (uint8_t)(i + 1));
	}
	CHECK_EQ(R.n, DGW_RTX_MAX);
	/* the first place freed and taken by a newer one: the oldest is now the second */
	dgw_rtx_end(&R, dgw_rtx_find(&R, &key[0]));
	e = dgw_rtx_put(&R, &key[DGW_RTX_MAX], 3000, &ev);
	CHECK(!ev);
	fill(e, 0xee);
	old = dgw_rtx_find(&R, &key[1]);
	CHECK(old != NULL);
	e = dgw_rtx_put(&R, &key[DGW_RTX_MAX + 1], 3001, &ev);
	CHECK(ev);
	CHECK(e == old);
	CHECK_EQ(R.n, DGW_RTX_MAX);
	CHECK(dgw_rtx_find(&R, &key[1]) == NULL);
	/* the oldest's answer and seed are gone before the new one is filled */
	CHECK(zero(&e->acc, sizeof(e->acc)) && zero(e->seed, sizeof(e->seed)) && e->mac == 0);
	CHECK(e->s == &key[DGW_RTX_MAX + 1] && e->sent_ms == 3001 && e->ptos == 0);
	for (unsigned i = 2; i <= DGW_RTX_MAX + 1; i++)
		CHECK(dgw_rtx_find(&R, &key[i]) != NULL);
}

/*
 * A kept flight with a first PTO of pto_ms (0: the default, 205 ms) is due
 * at pto_ms after the send, then twice and four times that after each
 * resend, and given up eight times pto_ms after the last.
 */
static void pto_walk(uint64_t pto_ms)
{
	uint64_t first = pto_ms ? pto_ms : 205;
	int key = 0;
	bool ev;
	struct dgw_rtx_e *e;
	uint64_t t = 5000;

	memset(&R, 0, sizeof(R));
	e = dgw_rtx_put(&R, &key, t, &ev);
	CHECK_EQ(e->pto_ms, DGW_RTX_PTO_MS);
	if (pto_ms)
		e->pto_ms = (uint16_t)pto_ms;
	for (unsigned i = 0; i < DGW_RTX_PTO_MAX; i++) {
		uint64_t gap = first << i;

		CHECK_EQ(dgw_rtx_due(e, t + gap - 1), DGW_RTX_WAIT);
		CHECK_EQ(dgw_rtx_due(e, t + gap), DGW_RTX_PTO);
		CHECK_EQ(e->ptos, i + 1);
		t += gap;
	}
	CHECK_EQ(dgw_rtx_due(e, t + (first << DGW_RTX_PTO_MAX) - 1), DGW_RTX_WAIT);
	CHECK_EQ(dgw_rtx_due(e, t + (first << DGW_RTX_PTO_MAX)), DGW_RTX_GIVE_UP);
	CHECK_EQ(e->ptos, DGW_RTX_PTO_MAX); /* giving up resends nothing more */
}

/* PTO at 205 ms after the send, then 410, 820 after each resend; given up 1640 after the last. */
static void test_pto(void)
{
	pto_walk(0);
}

/* A learned first PTO (the cover server's, learn.c): 300 ms, then 600, 1200; given up at 2400. */
static void test_pto_learned(void)
{
	pto_walk(300);
}

/* A retransmitted hello: its first Initial answered (the PTO restarts), its second not. */
static void test_hello(void)
{
	int key = 0;
	bool ev;
	struct dgw_rtx_e *e;

	memset(&R, 0, sizeof(R));
	e = dgw_rtx_put(&R, &key, 100, &ev);
	CHECK(dgw_rtx_hello_due(e, 250));
	CHECK(!dgw_rtx_hello_due(e, 251));
	CHECK(!dgw_rtx_hello_due(e, 250 + DGW_RTX_PAIR_MS - 1));
	CHECK_EQ(dgw_rtx_due(e, 304), DGW_RTX_WAIT); /* 205 from the hello's answer, not from 100 */
	CHECK_EQ(dgw_rtx_due(e, 455), DGW_RTX_PTO);
	CHECK(dgw_rtx_hello_due(e, 900)); /* the next retransmission */
}

/* An entry that ends is zeroed whole and its place reused. */
static void test_wiped(void)
{
	int a = 0, b = 0;
	bool ev;
	struct dgw_rtx_e *e;

	memset(&R, 0, sizeof(R));
	e = dgw_rtx_put(&R, &a, 7, &ev);
	fill(e, 0xa5);
	e->hello_ms = 9;
	dgw_rtx_end(&R, e);
	CHECK_EQ(R.n, 0);
	CHECK(zero(e, sizeof(*e)));
	CHECK(dgw_rtx_find(&R, &a) == NULL);
	CHECK(dgw_rtx_put(&R, &b, 8, &ev) == e && !ev);
}

int main(int argc, char **argv)
{
	static const struct check_test tests[] = {
	    {"bounded", test_bounded}, {"pto", test_pto},     {"pto_learned", test_pto_learned},
	    {"hello", test_hello},     {"wiped", test_wiped},
	};

	return check_run(tests, sizeof(tests) / sizeof(tests[0]), argc > 1 ? argv[1] : NULL);
}
