/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slow.c: the slow path's queue (SPEC §7), datagrams from endpoints with no
 * session waiting for their turn in a bounded share of the worker. It holds
 * and hands back: the caller opens what it pops. The queue's state is its
 * own (struct dgw_slow_q, behind w->slow). Included by its users only: the
 * dispatch (decode.c, quic.c), the loop and the worker's setup.
 */
#ifndef DGW_SLOW_H
#define DGW_SLOW_H

#include "dgw_pvt.h"

enum { DGW_SLOW_MAX = 1024, DGW_SLOW_EPS = 4096 };

/* An entry, handed back to the caller by dgw_slow_pop. */
struct dgw_slow {
	struct rte_mbuf *m;
	struct dgw_rx rx;
};

struct dgw_slow_q;

/* 0 or -ENOMEM */
int dgw_slow_init(struct dgw_worker *w);
/* At exit: what still waits is dropped unread. */
void dgw_slow_free(struct dgw_worker *w);
/* Does a datagram from ep still wait (a hash collision may say yes for nothing)? */
bool dgw_slow_holds(const struct dgw_worker *w, const struct dust_endpoint *ep);
/* May a datagram queue now? Not while an entry runs, nor with no share. */
bool dgw_slow_accepts(const struct dgw_worker *w);
/* Full: the caller pops and runs the oldest before it pushes. */
bool dgw_slow_full(const struct dgw_worker *w);
/* Queued behind the others (never when full). */
void dgw_slow_push(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx);
/* The oldest entry into *e, for the caller to run; then dgw_slow_popped. */
void dgw_slow_pop(struct dgw_worker *w, struct dgw_slow *e);
void dgw_slow_popped(struct dgw_worker *w);
/* The queue's credit after a poll that took data_tsc (saturated: a full burst). */
void dgw_slow_earn(struct dgw_worker *w, uint64_t data_tsc, bool saturated);
/* Is an entry waiting, and credit left to run it? */
bool dgw_slow_due(const struct dgw_worker *w);
/* An entry took tsc cycles of the credit. */
void dgw_slow_spend(struct dgw_worker *w, uint64_t tsc);
/*
 * How many datagrams wait (the one running included); any lcore may ask. Inline, for the data path:
 * the count is the first member of struct dgw_slow_q (a pointer to a struct points to its first
 * member; slow.c asserts the offset).
 */
static inline unsigned dgw_slow_count(const struct dgw_worker *w)
{
	return __atomic_load_n((const unsigned *)(const void *)w->slow, __ATOMIC_RELAXED);
}

#endif /* DGW_SLOW_H */
