/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An accepted intro's answer held until the main lcore has published its
 * session (PUBLISHED): before that, a reply to the client would find no
 * session and be dropped as no_session, so the client must not learn of
 * its session yet. Held here: the answer (keepalive, or the quic first
 * flight) with the intro's chained data, opened but not delivered, and up
 * to DGW_PENDING_HOLD later datagrams of the session, in order. No worker
 * waits: the entry is finished when the worker reads PUBLISHED in its inbox.
 * Above dispose.c only: what this queue cannot keep goes back to its caller.
 */
#include <stddef.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "dispose.h"
#include "pubwait.h"
#include "rtx_w.h"

/*
 * Entries never move: a list links them oldest first (expiry looks at the
 * head), a free list holds the rest, and an open-addressing map from the
 * session finds one. Every data datagram of a worker with an answer waiting
 * asks whether its session is one of them, and a message finishes one from
 * the middle: both O(1), where a scan cost 464 ns a packet with 1024
 * waiting and each unlink moved up to ~1.2 MB (issue 21, F3).
 */
enum { NIL = UINT16_MAX, MAP_SLOTS = 2 * DGW_PENDING_MAX, MAP_MASK = MAP_SLOTS - 1 };

/* An answer waiting for its session's publication. */
struct dgw_pubwait {
	struct dust_session *s; /* in the table, PUBLISH sent */
	struct rte_mbuf *m;     /* the intro datagram */
	struct dgw_rx rx;
	struct dust_rx_result res;   /* its chained data, opened, not delivered */
	struct dust_quic_accept acc; /* quic profile: what the answer needs */
	uint64_t since_tsc;
	uint16_t nheld;
	uint16_t prev, next; /* the list oldest first, or the free list (next only) */
	struct rte_mbuf *held[DGW_PENDING_HOLD]; /* later datagrams of s, opened */
	struct dgw_rx held_rx[DGW_PENDING_HOLD];
	struct dust_rx_result held_res[DGW_PENDING_HOLD];
};

struct dgw_pubwait_q {
	unsigned n;                /* entries waiting: written by the owner, read by any lcore */
	uint16_t head, tail, free; /* oldest, newest, a free entry */
	uint16_t map[MAP_SLOTS];   /* session -> entry + 1, open addressing */
	uint64_t probes;           /* map slots looked at (the owner's own count) */
	struct dgw_pubwait e[DGW_PENDING_MAX];
};

static void set_n(struct dgw_pubwait_q *q, unsigned n)
{
	__atomic_store_n(&q->n, n, __ATOMIC_RELAXED);
}

/* dgw_pubwait_count reads n through the struct's address */
_Static_assert(offsetof(struct dgw_pubwait_q, n) == 0, "n first");

static unsigned map_home(const struct dust_session *s)
{
	return (unsigned)(((uintptr_t)s >> 6) * 0x9e3779b97f4a7c15ull >> 40) & MAP_MASK;
}

int dgw_pubwait_init(struct dgw_worker *w)
{
	struct dgw_pubwait_q *q = rte_zmalloc("dgw_pubwait", sizeof(*q), RTE_CACHE_LINE_SIZE);

	if (!q)
		return -ENOMEM;
	for (unsigned i = 0; i < DGW_PENDING_MAX; i++)
		q->e[i].next = i + 1 < DGW_PENDING_MAX ? (uint16_t)(i + 1) : NIL;
	q->free = 0;
	q->head = q->tail = NIL;
	w->pubwait = q;
	return 0;
}

/* The map slot that holds s's entry, or -1. */
static int map_find(struct dgw_pubwait_q *q, const struct dust_session *s)
{
	for (unsigned h = map_home(s); q->map[h]; h = (h + 1) & MAP_MASK) {
		q->probes++;
		if (q->e[q->map[h] - 1].s == s)
			return (int)h;
	}
	return -1;
}

uint64_t dgw_pubwait_probes(const struct dgw_worker *w)
{
	return w->pubwait->probes;
}

static void map_add(struct dgw_pubwait_q *q, uint16_t e)
{
	unsigned h = map_home(q->e[e].s);

	while (q->map[h])
		h = (h + 1) & MAP_MASK;
	q->map[h] = (uint16_t)(e + 1);
}

/* Backward-shift deletion: every probe chain stays unbroken without tombstones. */
static void map_del(struct dgw_pubwait_q *q, unsigned hole)
{
	for (unsigned j = (hole + 1) & MAP_MASK; q->map[j]; j = (j + 1) & MAP_MASK) {
		unsigned home = map_home(q->e[q->map[j] - 1].s);

		/* j's entry may fill the hole if its home is not in (hole, j] */
		if (((j - home) & MAP_MASK) >= ((j - hole) & MAP_MASK)) {
			q->map[hole] = q->map[j];
			hole = j;
		}
	}
	q->map[hole] = 0;
}

static struct dgw_pubwait *find_s(struct dgw_pubwait_q *q, const struct dust_session *s)
{
	int h = q->n ? map_find(q, s) : -1;

	return h < 0 ? NULL : &q->e[q->map[h] - 1];
}

/* Take p off the list (the others keep their order); returns the copy in out. */
static void unlink_entry(struct dgw_pubwait_q *q, struct dgw_pubwait *p, struct dgw_pubwait *out)
{
	uint16_t e = (uint16_t)(p - q->e);

	map_del(q, (unsigned)map_find(q, p->s));
	*out = *p;
	if (p->prev != NIL)
		q->e[p->prev].next = p->next;
	else
		q->head = p->next;
	if (p->next != NIL)
		q->e[p->next].prev = p->prev;
	else
		q->tail = p->prev;
	p->s = NULL;
	p->next = q->free;
	q->free = e;
	set_n(q, q->n - 1);
}

bool dgw_pubwait_hold(struct dgw_worker *w, struct dust_session *s, struct rte_mbuf *m,
                      const struct dgw_rx *rx, const struct dust_rx_result *res,
                      const struct dust_quic_accept *acc)
{
	struct dgw_pubwait_q *q = w->pubwait;
	struct dgw_pubwait *p;
	uint16_t e = q->free;

	if (e == NIL)
		return false; /* the caller retires s, drops m */
	p = &q->e[e];
	q->free = p->next;
	p->s = s;
	p->m = m;
	p->rx = *rx;
	if (res)
		p->res = *res;
	if (acc)
		p->acc = *acc;
	p->nheld = 0;
	p->since_tsc = rte_rdtsc();
	p->prev = q->tail;
	p->next = NIL;
	if (q->tail != NIL)
		q->e[q->tail].next = e;
	else
		q->head = e;
	q->tail = e;
	map_add(q, e);
	set_n(q, q->n + 1);
	return true;
}

bool dgw_pubwait_take(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                      const struct dust_session *s, const struct dust_rx_result *res)
{
	struct dgw_pubwait *p = find_s(w->pubwait, s);

	/* only what opened with the session's keys: spoofed junk takes no place of the client's */
	if (!p || !res->nseg)
		return false;
	if (p->nheld == DGW_PENDING_HOLD) {
		if (res->drop != DUST_OK)
			dgw_count_drop(w, res->drop);
		dgw_drop_m(w, m, DGW_DROP_PENDING_FULL);
		return true;
	}
	p->held[p->nheld] = m;
	p->held_rx[p->nheld] = *rx;
	p->held_res[p->nheld++] = *res;
	return true;
}

static void drop_entry(struct dgw_worker *w, struct dgw_pubwait *p)
{
	dgw_drop_m(w, p->m, DGW_DROP_UNPUBLISHED);
	for (unsigned i = 0; i < p->nheld; i++)
		dgw_drop_m(w, p->held[i], DGW_DROP_UNPUBLISHED);
}

/* PUBLISHED(s): answer, deliver the chained data, then what was held, in order. */
void dgw_pubwait_done(struct dgw_worker *w, struct dust_session *s)
{
	struct dgw_pubwait *p = find_s(w->pubwait, s), e;

	if (!p)
		return; /* s was retired meanwhile: its entry went with it */
	unlink_entry(w->pubwait, p, &e);
	if (e.rx.profile == DUST_PROFILE_QUIC)
		dgw_quic_answer(w, e.m, s, &e.acc, e.rx.mac);
	else
		dgw_dispose(w, e.m, &e.rx, s, &e.res, true);
	for (unsigned i = 0; i < e.nheld; i++)
		dgw_dispose(w, e.held[i], &e.held_rx[i], s, &e.held_res[i], false);
}

/* s leaves the table (evicted, revoked instead of published, replaced): never answered. */
void dgw_pubwait_drop(struct dgw_worker *w, const struct dust_session *s)
{
	struct dgw_pubwait *p = find_s(w->pubwait, s), e;

	if (!p)
		return;
	unlink_entry(w->pubwait, p, &e);
	drop_entry(w, &e);
}

/*
 * A PUBLISHED that never came (main ring full): the session of the oldest
 * entry waiting DGW_PENDING_TIMEOUT_S at now_tsc, for the caller to retire
 * (which drops the entry), or NULL.
 */
struct dust_session *dgw_pubwait_expired(const struct dgw_worker *w, uint64_t now_tsc)
{
	const struct dgw_pubwait_q *q = w->pubwait;
	const struct dgw_pubwait *p = q->n ? &q->e[q->head] : NULL;
	uint64_t limit = DGW_PENDING_TIMEOUT_S * rte_get_tsc_hz();

	return p && now_tsc - p->since_tsc >= limit ? p->s : NULL;
}

/* At exit: what still waits is dropped, never answered. */
void dgw_pubwait_free(struct dgw_worker *w)
{
	struct dgw_pubwait_q *q = w->pubwait;

	if (!q)
		return;
	for (uint16_t e = q->n ? q->head : NIL; e != NIL; e = q->e[e].next) {
		rte_pktmbuf_free(q->e[e].m);
		for (unsigned k = 0; k < q->e[e].nheld; k++)
			rte_pktmbuf_free(q->e[e].held[k]);
	}
	rte_free(q);
	w->pubwait = NULL;
}
