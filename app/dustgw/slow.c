/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The slow path's queue (SPEC §7): datagrams from endpoints with no session
 * (intros, mostly: a first use costs two X25519s) wait here in arrival order,
 * and the worker opens them in a bounded share of its time, so established
 * sessions' data keeps flowing through a burst of first uses. The queue
 * only holds and hands back: decode.c opens what it pops.
 */
#include <errno.h>
#include <stddef.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "slow.h"

/* With the worker not saturated, this much per poll goes to the queue. */
#define SLICE_US 200

struct dgw_slow_q {
	unsigned n;     /* entries (the running one too): written by the owner, read by any lcore */
	unsigned head;  /* the oldest entry of the ring e[] */
	int64_t credit; /* TSC cycles the queue may still take */
	bool running;   /* an entry popped, not done yet */
	uint16_t eps[DGW_SLOW_EPS]; /* queued datagrams per endpoint hash */
	struct dgw_slow e[DGW_SLOW_MAX];
};

static void set_n(struct dgw_slow_q *q, unsigned n)
{
	__atomic_store_n(&q->n, n, __ATOMIC_RELAXED);
}

/* dgw_slow_count reads n through the struct's address */
_Static_assert(offsetof(struct dgw_slow_q, n) == 0, "n first");

DGW_WORKER_ALLOC(slow, slow)

static unsigned ep_hash(const struct dust_endpoint *ep)
{
	uint32_t h = 2166136261u ^ ep->ip.family;

	for (unsigned i = 0; i < sizeof(ep->ip.a); i++)
		h = (h ^ ep->ip.a[i]) * 16777619u;
	h = (h ^ ep->port) * 16777619u;
	return (h ^ (h >> 16)) % DGW_SLOW_EPS;
}

/*
 * Does a datagram from this endpoint still wait in the queue? Its session
 * may have come up meanwhile (an intro opened from the queue, a first use
 * made durable), yet a later datagram decoded now would overtake it: it
 * queues behind instead. A hash collision only queues a datagram for nothing.
 */
bool dgw_slow_holds(const struct dgw_worker *w, const struct dust_endpoint *ep)
{
	return w->slow->n && w->slow->eps[ep_hash(ep)];
}

/* Replay's clock moves with the packets: it opens intros in the burst, as they came. */
static unsigned share(const struct dgw_worker *w)
{
	if (w->gw->cfg.clock == DGW_CLOCK_CAPTURE)
		return 0;
	return __atomic_load_n(&w->gw->cfg.intro_share, __ATOMIC_RELAXED);
}

/* May a datagram queue now? Not while an entry runs, nor with no share. */
bool dgw_slow_accepts(const struct dgw_worker *w)
{
	return !w->slow->running && share(w);
}

bool dgw_slow_full(const struct dgw_worker *w)
{
	return w->slow->n == DGW_SLOW_MAX;
}

/*
 * Queued behind the others, in arrival order. A full queue has its oldest
 * entry run first (the caller pops it): intros then take what they need
 * (as before the queue), and nothing is dropped or reordered.
 */
void dgw_slow_push(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx)
{
	struct dgw_slow_q *q = w->slow;

	q->e[(q->head + q->n) % DGW_SLOW_MAX] = (struct dgw_slow){.m = m, .rx = *rx};
	q->eps[ep_hash(&rx->ep)]++;
	set_n(q, q->n + 1);
}

/* The oldest entry, for the caller to open now; the count goes down at dgw_slow_popped. */
void dgw_slow_pop(struct dgw_worker *w, struct dgw_slow *e)
{
	struct dgw_slow_q *q = w->slow;

	*e = q->e[q->head];
	q->running = true;
	q->head = (q->head + 1) % DGW_SLOW_MAX;
	q->eps[ep_hash(&e->rx.ep)]--;
}

void dgw_slow_popped(struct dgw_worker *w)
{
	/* a test that waits for an empty queue then sees the entry's effects */
	set_n(w->slow, w->slow->n - 1);
	w->slow->running = false;
}

/*
 * After a poll that took data_tsc: with a full burst (data waiting) the
 * queue earns share/(100 - share) of the data's time, so data keeps
 * (100 - share)% of the worker (an intro that overran is a debt paid from
 * later earnings); otherwise it gets a slice of spare time. An entry runs
 * whenever the credit is positive (dgw_slow_due): the queue always moves.
 */
void dgw_slow_earn(struct dgw_worker *w, uint64_t data_tsc, bool saturated)
{
	uint64_t hz = rte_get_tsc_hz(), slice = hz / 1000000 * SLICE_US;
	unsigned sh = share(w);

	if (saturated && sh) /* no credit saved from spare time: a debt is kept */
		w->slow->credit = RTE_MIN(w->slow->credit, 0) +
		                  (int64_t)(data_tsc * sh / (100 - RTE_MIN(sh, 99u)));
	else
		w->slow->credit = (int64_t)slice;
}

bool dgw_slow_due(const struct dgw_worker *w)
{
	return w->slow->n && w->slow->credit > 0;
}

/* An entry took tsc cycles. */
void dgw_slow_spend(struct dgw_worker *w, uint64_t tsc)
{
	w->slow->credit -= (int64_t)tsc;
}

/* At exit: what still waits is dropped unread. */
void dgw_slow_free(struct dgw_worker *w)
{
	struct dgw_slow_q *q = w->slow;

	if (!q)
		return;
	for (unsigned i = 0; i < q->n; i++)
		rte_pktmbuf_free(q->e[(q->head + i) % DGW_SLOW_MAX].m);
	rte_free(q);
	w->slow = NULL;
}
