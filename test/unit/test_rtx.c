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
 * A kept flight with a first PTO of pto_ms (0: the default, 205 ms) is
 * resent as caddy 2.6.2 (quic-go) resends its own: at 1, 2, 5 and 10 times
 * it after the flight, the Initial alone first, then the Handshake packet,
 * in turn; given up at 20 times it.
 */
static void pto_walk(uint64_t pto_ms)
{
	static const unsigned at[] = {1, 2, 5, 10};
	static const enum dgw_rtx_due kind[] = {DGW_RTX_PTO_INITIAL, DGW_RTX_PTO_HANDSHAKE,
	                                        DGW_RTX_PTO_INITIAL, DGW_RTX_PTO_HANDSHAKE};
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
	CHECK_EQ(DGW_RTX_PTO_MAX, 4);
	for (unsigned i = 0; i < DGW_RTX_PTO_MAX; i++) {
		CHECK_EQ(dgw_rtx_due(e, t + first * at[i] - 1), DGW_RTX_WAIT);
		CHECK_EQ(dgw_rtx_due(e, t + first * at[i]), kind[i]);
		CHECK_EQ(dgw_rtx_due(e, t + first * at[i]), DGW_RTX_WAIT); /* once */
		CHECK_EQ(e->ptos, i + 1);
	}
	CHECK_EQ(dgw_rtx_due(e, t + first * 20 - 1), DGW_RTX_WAIT);
	CHECK_EQ(dgw_rtx_due(e, t + first * 20), DGW_RTX_GIVE_UP);
	CHECK_EQ(e->ptos, DGW_RTX_PTO_MAX); /* giving up resends nothing more */
}

/* Resends at 205, 410, 1025 and 2050 ms after the flight; given up at 4100. */
static void test_pto(void)
{
	pto_walk(0);
}

/* A learned first PTO (the cover server's, learn.c): 300, 600, 1500, 3000 ms; given up at 6000. */
static void test_pto_learned(void)
{
	pto_walk(300);
}

/*
 * A retransmitted hello: its first Initial acknowledged, its second not;
 * both packet numbers seen. The PTOs still run from the flight, as
 * quic-go's did while Chromium's resends came (SPEC §12.3).
 */
static void test_hello(void)
{
	int key = 0;
	bool ev;
	struct dgw_rtx_e *e;

	memset(&R, 0, sizeof(R));
	e = dgw_rtx_put(&R, &key, 100, &ev);
	e->seen = 1u << 1 | 1u << 2;
	CHECK(dgw_rtx_hello_due(e, 4, 250));
	CHECK(!dgw_rtx_hello_due(e, 5, 251));
	CHECK(!dgw_rtx_hello_due(e, 99, 250 + DGW_RTX_PAIR_MS - 1)); /* 99: past what is kept */
	CHECK_EQ(e->seen, (uint64_t)(1u << 1 | 1u << 2 | 1u << 4 | 1u << 5));
	CHECK_EQ(dgw_rtx_due(e, 304), DGW_RTX_WAIT);
	CHECK_EQ(dgw_rtx_due(e, 305), DGW_RTX_PTO_INITIAL); /* 205 from the flight at 100 */
	CHECK(dgw_rtx_hello_due(e, 6, 900));                /* the next retransmission */
	CHECK(e->seen >> 6 & 1);
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

static const struct check_test tests[] = {
    {"bounded", test_bounded}, {"pto", test_pto},     {"pto_learned", test_pto_learned},
    {"hello", test_hello},     {"wiped", test_wiped},
};

CHECK_MAIN(tests, NULL)
