/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pending.c: first uses held until their binding is durable (SPEC §7). The
 * queue's state is its own (struct dgw_pending_q, behind w->pending); what
 * it releases (DURABLE, expiry) goes back to the caller as struct
 * dgw_pending entries, for the caller to finish and wipe. Included by its
 * users only: the intro path, the dispatch, the inbox and the worker's setup.
 */
#ifndef DGW_PENDING_H
#define DGW_PENDING_H

#include "dgw_pvt.h"

/* a held first use checks that a datagram is its client's up to this size */
enum { DGW_PENDING_CHECK_MAX = 2048 };

/* A first use released to the caller: finished (live, or refused) and wiped there. */
struct dgw_pending {
	struct dust_session s; /* accepted, not in the table yet */
	struct rte_mbuf *m;    /* its intro datagram (chained data after consumed) */
	struct dgw_rx rx;
	uint16_t consumed;
	uint16_t nheld;
	uint16_t prev, next; /* the queue's own links (arrival order, or its free list) */
	bool first_use;      /* a binding; else an etcd returning client's freshness */
	uint64_t since_tsc;
	struct dust_quic_accept acc;             /* quic profile: what the answer needs */
	struct rte_mbuf *held[DGW_PENDING_HOLD]; /* later datagrams from the endpoint */
	struct dgw_rx held_rx[DGW_PENDING_HOLD];
};

struct dgw_pending_q;

/* 0 or -ENOMEM */
int dgw_pending_init(struct dgw_worker *w);
/* At exit: what still waits is dropped (never answered), its keys wiped. */
void dgw_pending_free(struct dgw_worker *w);
/*
 * Hold first use s (copied, then wiped) with its intro datagram m and send
 * PERSIST for its binding. Full (DGW_PENDING_MAX): false, m dropped and
 * counted pending_full, s wiped.
 */
bool dgw_pending_hold(struct dgw_worker *w, struct dust_session *s, struct rte_mbuf *m,
                      const struct dgw_rx *rx, size_t consumed, const struct dust_quic_accept *acc,
                      bool first_use);
/*
 * A datagram from the endpoint of a held first use: held behind it (true),
 * dropped and counted (true: not the client's, or DGW_PENDING_HOLD held
 * already), or not this queue's (false: no first use from there, or a quic
 * datagram the intro path decides on).
 */
bool dgw_pending_take(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx);
/* Does a first use from ep wait for its binding? */
bool dgw_pending_holds(struct dgw_worker *w, const struct dust_endpoint *ep);
/*
 * DURABLE(idx): the entries of invitation idx leave the queue, in arrival
 * order, into *out (scratch of the queue's, valid until the next release);
 * returns how many. The caller finishes and wipes each.
 */
unsigned dgw_pending_done(struct dgw_worker *w, uint32_t idx, struct dgw_pending **out);
/* The same for entries held DGW_PENDING_TIMEOUT_S or longer at now_tsc (rte_rdtsc). */
unsigned dgw_pending_expire(struct dgw_worker *w, uint64_t now_tsc, struct dgw_pending **out);
/*
 * How many first uses wait; any lcore may ask. Inline, for the data path: the count
 * is the first member of struct dgw_pending_q (a pointer to a struct points to
 * its first member; pending.c asserts the offset).
 */
static inline unsigned dgw_pending_count(const struct dgw_worker *w)
{
	return __atomic_load_n((const unsigned *)(const void *)w->pending, __ATOMIC_RELAXED);
}

/* FRESH(idx) to the main lcore: journal a returning client's newest intro. */
void dgw_store_fresh(struct dgw_worker *w, uint32_t idx);

#endif /* DGW_PENDING_H */
