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
#include <rte_cycles.h>
#include <rte_malloc.h>

#include "dgw_pvt.h"

/*
 * Entries never move: a list links them oldest first (expiry looks at the
 * head), a free list holds the rest, and an open-addressing map from the
 * session finds one. Every data datagram of a worker with an answer waiting
 * asks whether its session is one of them, and a message finishes one from
 * the middle: both O(1), where a scan cost 464 ns a packet with 1024
 * waiting and each unlink moved up to ~1.2 MB (issue 21, F3).
 */
enum { NIL = UINT16_MAX, MAP_SLOTS = 2 * DGW_PENDING_MAX, MAP_MASK = MAP_SLOTS - 1 };

static unsigned map_home(const struct dust_session *s)
{
	return (unsigned)(((uintptr_t)s >> 6) * 0x9e3779b97f4a7c15ull >> 40) & MAP_MASK;
}

int dgw_pubwait_init(struct dgw_worker *w)
{
	w->pubw = rte_zmalloc("dgw_pubwait", sizeof(*w->pubw) * DGW_PENDING_MAX, 0);
	w->pubw_map = rte_zmalloc("dgw_pubwait_map", sizeof(*w->pubw_map) * MAP_SLOTS, 0);
	if (!w->pubw || !w->pubw_map)
		return -ENOMEM;
	for (unsigned i = 0; i < DGW_PENDING_MAX; i++)
		w->pubw[i].next = i + 1 < DGW_PENDING_MAX ? (uint16_t)(i + 1) : NIL;
	w->pubw_free = 0;
	w->pubw_head = w->pubw_tail = NIL;
	return 0;
}

/* The map slot that holds s's entry, or -1. */
static int map_find(const struct dgw_worker *w, const struct dust_session *s)
{
	for (unsigned h = map_home(s); w->pubw_map[h]; h = (h + 1) & MAP_MASK)
		if (w->pubw[w->pubw_map[h] - 1].s == s)
			return (int)h;
	return -1;
}

static void map_add(struct dgw_worker *w, uint16_t e)
{
	unsigned h = map_home(w->pubw[e].s);

	while (w->pubw_map[h])
		h = (h + 1) & MAP_MASK;
	w->pubw_map[h] = (uint16_t)(e + 1);
}

/* Backward-shift deletion: every probe chain stays unbroken without tombstones. */
static void map_del(struct dgw_worker *w, unsigned hole)
{
	for (unsigned j = (hole + 1) & MAP_MASK; w->pubw_map[j]; j = (j + 1) & MAP_MASK) {
		unsigned home = map_home(w->pubw[w->pubw_map[j] - 1].s);

		/* j's entry may fill the hole if its home is not in (hole, j] */
		if (((j - home) & MAP_MASK) >= ((j - hole) & MAP_MASK)) {
			w->pubw_map[hole] = w->pubw_map[j];
			hole = j;
		}
	}
	w->pubw_map[hole] = 0;
}

static struct dgw_pubwait *find_s(struct dgw_worker *w, const struct dust_session *s)
{
	int h = map_find(w, s);

	return h < 0 ? NULL : &w->pubw[w->pubw_map[h] - 1];
}

/* Take p off the list (the others keep their order); returns the copy in out. */
static void unlink_entry(struct dgw_worker *w, struct dgw_pubwait *p, struct dgw_pubwait *out)
{
	uint16_t e = (uint16_t)(p - w->pubw);

	map_del(w, (unsigned)map_find(w, p->s));
	*out = *p;
	if (p->prev != NIL)
		w->pubw[p->prev].next = p->next;
	else
		w->pubw_head = p->next;
	if (p->next != NIL)
		w->pubw[p->next].prev = p->prev;
	else
		w->pubw_tail = p->prev;
	p->s = NULL;
	p->next = w->pubw_free;
	w->pubw_free = e;
	w->nwait--;
}

bool dgw_pubwait_hold(struct dgw_worker *w, struct dust_session *s, struct rte_mbuf *m,
                      const struct dgw_rx *rx, const struct dust_rx_result *res,
                      const struct dust_quic_accept *acc)
{
	struct dgw_pubwait *p;
	uint16_t e = w->pubw_free;

	if (e == NIL)
		return false; /* the caller retires s, drops m */
	p = &w->pubw[e];
	w->pubw_free = p->next;
	p->s = s;
	p->m = m;
	p->rx = *rx;
	if (res)
		p->res = *res;
	if (acc)
		p->acc = *acc;
	p->nheld = 0;
	p->since_tsc = rte_rdtsc();
	p->prev = w->pubw_tail;
	p->next = NIL;
	if (w->pubw_tail != NIL)
		w->pubw[w->pubw_tail].next = e;
	else
		w->pubw_head = e;
	w->pubw_tail = e;
	map_add(w, e);
	w->nwait++;
	return true;
}

bool dgw_pubwait_take(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                      const struct dust_session *s, const struct dust_rx_result *res)
{
	struct dgw_pubwait *p = find_s(w, s);

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
	struct dgw_pubwait *p = w->nwait ? find_s(w, s) : NULL, e;

	if (!p)
		return; /* s was retired meanwhile: its entry went with it */
	unlink_entry(w, p, &e);
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
	struct dgw_pubwait *p = find_s(w, s), e;

	if (!p)
		return;
	unlink_entry(w, p, &e);
	drop_entry(w, &e);
}

/*
 * A PUBLISHED that never came (main ring full): the session of the oldest
 * entry waiting DGW_PENDING_TIMEOUT_S at now_tsc, for the caller to retire
 * (which drops the entry), or NULL.
 */
struct dust_session *dgw_pubwait_expired(const struct dgw_worker *w, uint64_t now_tsc)
{
	uint64_t limit = DGW_PENDING_TIMEOUT_S * rte_get_tsc_hz();

	const struct dgw_pubwait *p = w->nwait ? &w->pubw[w->pubw_head] : NULL;

	return p && now_tsc - p->since_tsc >= limit ? p->s : NULL;
}

/* At exit: what still waits is dropped, never answered. */
void dgw_pubwait_free(struct dgw_worker *w)
{
	for (uint16_t e = w->nwait ? w->pubw_head : NIL; e != NIL; e = w->pubw[e].next) {
		rte_pktmbuf_free(w->pubw[e].m);
		for (unsigned k = 0; k < w->pubw[e].nheld; k++)
			rte_pktmbuf_free(w->pubw[e].held[k]);
	}
	w->nwait = 0;
	rte_free(w->pubw);
	rte_free(w->pubw_map);
	w->pubw = NULL;
	w->pubw_map = NULL;
}
