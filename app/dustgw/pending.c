/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * First uses held until their binding is durable (SPEC §7): the worker
 * accepts a first-use intro in memory only, keeps the session, its datagram
 * (with any chained data) and later datagrams from the same endpoint here,
 * and asks the main lcore to write and fsync the binding. Nothing is
 * answered until the main lcore says DURABLE; then the session goes live
 * and the held datagrams are decoded in order (by the caller, decode.c:
 * this queue only hands back what it releases). No worker waits on a disk.
 */
#include <stddef.h>

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <sodium.h>

#include "pending.h"

/*
 * Entries never move: a list links them in arrival order and a free list
 * holds the rest, so a DURABLE takes its entries out without shifting the
 * others (a compaction copied up to ~1.2 MB per message with 1024 held,
 * issue 21 F3). The second half of e[] is scratch for what is released.
 */
enum { NIL = UINT16_MAX };

struct dgw_pending_q {
	unsigned n;                /* entries waiting: written by the owner, read by any lcore */
	uint16_t head, tail, free; /* oldest, newest, a free entry */
	struct dgw_pending e[2 * DGW_PENDING_MAX];
};

static void set_n(struct dgw_pending_q *q, unsigned n)
{
	__atomic_store_n(&q->n, n, __ATOMIC_RELAXED);
}

/* dgw_pending_count reads n through the struct's address */
_Static_assert(offsetof(struct dgw_pending_q, n) == 0, "n first");

int dgw_pending_init(struct dgw_worker *w)
{
	struct dgw_pending_q *q = rte_zmalloc("dgw_pending", sizeof(*q), RTE_CACHE_LINE_SIZE);

	if (!q)
		return -ENOMEM;
	for (unsigned i = 0; i < DGW_PENDING_MAX; i++)
		q->e[i].next = i + 1 < DGW_PENDING_MAX ? (uint16_t)(i + 1) : NIL;
	q->free = 0;
	q->head = q->tail = NIL;
	w->pending = q;
	return 0;
}

static struct dgw_pending *find_ep(struct dgw_pending_q *q, const struct dust_endpoint *ep)
{
	for (uint16_t i = q->n ? q->head : NIL; i != NIL; i = q->e[i].next) {
		struct dust_endpoint *e = &q->e[i].rx.ep;

		if (e->port == ep->port && dust_ipaddr_equal(&e->ip, &ep->ip))
			return &q->e[i];
	}
	return NULL;
}

/* Take entry i off the list onto the free list; its session is wiped. */
static void unlink_entry(struct dgw_pending_q *q, uint16_t i)
{
	struct dgw_pending *p = &q->e[i];

	if (p->prev != NIL)
		q->e[p->prev].next = p->next;
	else
		q->head = p->next;
	if (p->next != NIL)
		q->e[p->next].prev = p->prev;
	else
		q->tail = p->prev;
	dust_session_wipe(&p->s);
	p->next = q->free;
	q->free = i;
	set_n(q, q->n - 1);
}

static void to_main(struct dgw_worker *w, uint8_t type, uint32_t idx)
{
	struct dgw_msg m = {.type = type, .wid = (uint8_t)w->wid, .idx = idx};

	if (rte_ring_enqueue_elem(w->gw->to_main, &m, sizeof(m)) != 0)
		DGW_LOG(ERR, "main ring full, store message %u from worker %u lost", type, w->wid);
}

void dgw_store_fresh(struct dgw_worker *w, uint32_t idx)
{
	to_main(w, DGW_MSG_FRESH, idx);
}

bool dgw_pending_hold(struct dgw_worker *w, struct dust_session *s, struct rte_mbuf *m,
                      const struct dgw_rx *rx, size_t consumed, const struct dust_quic_accept *acc,
                      bool first_use)
{
	struct dgw_pending_q *q = w->pending;
	struct dgw_pending *p;
	uint16_t i = q->free;

	if (i == NIL) {
		dust_session_wipe(s);
		dgw_drop_m(w, m, DGW_DROP_PENDING_FULL);
		return false;
	}
	p = &q->e[i];
	q->free = p->next;
	p->prev = q->tail;
	p->next = NIL;
	if (q->tail != NIL)
		q->e[q->tail].next = i;
	else
		q->head = i;
	q->tail = i;
	set_n(q, q->n + 1);
	p->s = *s;
	dust_session_wipe(s); /* a reserved slot goes back to FREE */
	p->m = m;
	p->rx = *rx;
	p->consumed = (uint16_t)consumed;
	p->first_use = first_use;
	p->nheld = 0;
	p->since_tsc = rte_rdtsc();
	if (acc)
		p->acc = *acc;
	to_main(w, DGW_MSG_PERSIST, p->s.invite_idx);
	return true;
}

/* An Initial with the DCID of one already held: a hello's second (SPEC §12.2). */
static bool second_initial(const struct dgw_pending *p, const struct dgw_rx *rx)
{
	for (unsigned i = 0; i < p->nheld; i++) {
		const struct dgw_rx *h = &p->held_rx[i];

		if (rx->len > 6 && h->len > 6 && rx->dg[5] == h->dg[5] &&
		    rx->dg[5] <= DUST_QUIC_CID_MAX && rx->len >= 6u + rx->dg[5] &&
		    h->len >= 6u + h->dg[5] && memcmp(rx->dg + 6, h->dg + 6, rx->dg[5]) == 0)
			return true;
	}
	return false;
}

/*
 * Does a datagram from a held client's address belong to it: does it open
 * with the held session's keys (tried on copies: nothing changes), or is it
 * an intro of the same invitation (a retransmission, a newer intro)? Spoofed
 * junk from the address takes none of the client's slots.
 */
static bool belongs(struct dgw_worker *w, const struct dgw_pending *p, const struct dgw_rx *rx)
{
	struct dust_session s;
	struct dust_seg seg[DUST_CHAIN_MAX];
	uint8_t dg[DGW_PENDING_CHECK_MAX];
	enum dust_drop d;
	unsigned n;

	/*
	 * quic: only an Initial of the same invitation (a retransmission, or a
	 * restart), or the second Initial of such a hello (no tag of its own)
	 */
	if (rx->profile == DUST_PROFILE_QUIC)
		return dust_quic_intro_peek(&w->gw->srv, rx->dg, rx->len) ==
		           (int64_t)p->s.invite_idx ||
		       second_initial(p, rx);
	if (rx->len > sizeof(dg))
		return true;
	if (dust_intro_peek(&w->gw->srv, rx->dg, rx->len) == (int64_t)p->s.invite_idx)
		return true;
	s = p->s;
	memcpy(dg, rx->dg, rx->len);
	n = dust_datagram_open(&s, &w->gw->cfg.lim, w->now_s, dg, rx->len, 0, seg, DUST_CHAIN_MAX,
	                       &d);
	sodium_memzero(&s, sizeof(s));
	sodium_memzero(dg, rx->len);
	return n > 0;
}

/* Does a first use from ep wait for its binding? */
bool dgw_pending_holds(struct dgw_worker *w, const struct dust_endpoint *ep)
{
	return w->pending->n && find_ep(w->pending, ep);
}

bool dgw_pending_take(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx)
{
	struct dgw_pending *p = w->pending->n ? find_ep(w->pending, &rx->ep) : NULL;

	if (!p)
		return false;
	if (!belongs(w, p, rx)) {
		/* quic: the intro path decides (another invitation's, or the cover server's) */
		if (rx->profile == DUST_PROFILE_QUIC)
			return false;
		dgw_drop_m(w, m, DUST_DROP_AUTH);
		return true;
	}
	if (p->nheld == DGW_PENDING_HOLD) {
		dgw_drop_m(w, m, DGW_DROP_PENDING_FULL);
		return true;
	}
	p->held[p->nheld] = m;
	p->held_rx[p->nheld++] = *rx;
	return true;
}

/*
 * Take every entry that done() picks off the list, in arrival order (a
 * client that moved while its first use waited: its later intro must win),
 * keeping the others in order too. Picked entries are copied out to the
 * worker's scratch half, *out: finishing one decodes held datagrams, which
 * must not find it still pending. The caller finishes and wipes them.
 */
static unsigned release_where(struct dgw_pending_q *q,
                              bool (*done)(const struct dgw_pending *, void *), void *arg,
                              struct dgw_pending **out)
{
	unsigned nout = 0;
	uint16_t i = q->n ? q->head : NIL, next;

	*out = q->e + DGW_PENDING_MAX;
	for (; i != NIL; i = next) {
		next = q->e[i].next;
		if (!done(&q->e[i], arg))
			continue;
		(*out)[nout++] = q->e[i];
		unlink_entry(q, i);
	}
	return nout;
}

static bool is_idx(const struct dgw_pending *p, void *arg)
{
	return p->s.invite_idx == *(const uint32_t *)arg;
}

/* DURABLE(idx): the entries of idx, released to *out; returns how many. */
unsigned dgw_pending_done(struct dgw_worker *w, uint32_t idx, struct dgw_pending **out)
{
	return release_where(w->pending, is_idx, &idx, out);
}

/*
 * A DURABLE that never came (main ring full), or an fsync slower than any
 * client waits: released after DGW_PENDING_TIMEOUT_S, to be refused.
 */
static bool is_old(const struct dgw_pending *p, void *arg)
{
	return *(const uint64_t *)arg - p->since_tsc >= DGW_PENDING_TIMEOUT_S * rte_get_tsc_hz();
}

unsigned dgw_pending_expire(struct dgw_worker *w, uint64_t now_tsc, struct dgw_pending **out)
{
	return release_where(w->pending, is_old, &now_tsc, out);
}

/* At exit: what still waits is dropped (never answered), its keys wiped. */
void dgw_pending_free(struct dgw_worker *w)
{
	struct dgw_pending_q *q = w->pending;

	if (!q)
		return;
	for (uint16_t i = q->n ? q->head : NIL; i != NIL; i = q->e[i].next) {
		struct dgw_pending *p = &q->e[i];

		rte_pktmbuf_free(p->m);
		for (unsigned k = 0; k < p->nheld; k++)
			rte_pktmbuf_free(p->held[k]);
		dust_session_wipe(&p->s);
	}
	rte_free(q);
	w->pending = NULL;
}
