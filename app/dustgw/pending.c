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
#include <rte_cycles.h>
#include <rte_malloc.h>
#include <sodium.h>

#include "dgw_pvt.h"

static struct dgw_pending *find_ep(struct dgw_worker *w, const struct dust_endpoint *ep)
{
	for (unsigned i = 0; i < w->npend; i++) {
		struct dust_endpoint *e = &w->pend[i].rx.ep;

		if (e->port == ep->port && dust_ipaddr_equal(&e->ip, &ep->ip))
			return &w->pend[i];
	}
	return NULL;
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

/* Replay opens delivery only once no first use waits (its replies need the session). */
bool dgw_pending_any(struct dgw *gw)
{
	for (unsigned i = 0; i < gw->nworkers; i++)
		if (__atomic_load_n(&gw->w[i]->npend, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&gw->w[i]->nwait, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&gw->w[i]->slow_n, __ATOMIC_RELAXED) ||
		    rte_ring_count(gw->w[i]->inbox))
			return true;
	return false;
}

bool dgw_pending_hold(struct dgw_worker *w, struct dust_session *s, struct rte_mbuf *m,
                      const struct dgw_rx *rx, size_t consumed, const struct dust_quic_accept *acc,
                      bool first_use)
{
	struct dgw_pending *p;

	if (w->npend == DGW_PENDING_MAX) {
		dust_session_wipe(s);
		dgw_drop_m(w, m, DGW_DROP_PENDING_FULL);
		return false;
	}
	p = &w->pend[w->npend++];
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

	/* quic: only an Initial of the same invitation (a retransmission, or a restart) */
	if (rx->profile == DUST_PROFILE_QUIC)
		return dust_quic_intro_peek(&w->gw->srv, rx->dg, rx->len) ==
		       (int64_t)p->s.invite_idx;
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
	return w->npend && find_ep(w, ep);
}

bool dgw_pending_take(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx)
{
	struct dgw_pending *p = w->npend ? find_ep(w, &rx->ep) : NULL;

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
static unsigned release_where(struct dgw_worker *w,
                              bool (*done)(const struct dgw_pending *, void *), void *arg,
                              struct dgw_pending **out)
{
	unsigned keep = 0, nout = 0, n = w->npend;

	*out = w->pend + DGW_PENDING_MAX;
	for (unsigned i = 0; i < n; i++) {
		struct dgw_pending *p = &w->pend[i];

		if (done(p, arg))
			(*out)[nout++] = *p;
		else if (keep++ != i)
			w->pend[keep - 1] = *p;
	}
	for (unsigned i = keep; i < n; i++)
		dust_session_wipe(&w->pend[i].s);
	w->npend = keep;
	return nout;
}

static bool is_idx(const struct dgw_pending *p, void *arg)
{
	return p->s.invite_idx == *(const uint32_t *)arg;
}

/* DURABLE(idx): the entries of idx, released to *out; returns how many. */
unsigned dgw_pending_done(struct dgw_worker *w, uint32_t idx, struct dgw_pending **out)
{
	return release_where(w, is_idx, &idx, out);
}

/*
 * A DURABLE that never came (main ring full), or an fsync slower than any
 * client waits: released after DGW_PENDING_TIMEOUT_S, to be refused.
 */
static bool is_old(const struct dgw_pending *p, void *arg)
{
	return *(const uint64_t *)arg - p->since_tsc >= DGW_PENDING_TIMEOUT_S * rte_get_tsc_hz();
}

unsigned dgw_pending_expire(struct dgw_worker *w, struct dgw_pending **out)
{
	uint64_t now = rte_rdtsc();

	return release_where(w, is_old, &now, out);
}

/* At exit: what still waits is dropped (never answered), its keys wiped. */
void dgw_pending_free(struct dgw_worker *w)
{
	if (!w->pend)
		return;
	for (unsigned i = 0; i < w->npend; i++) {
		struct dgw_pending *p = &w->pend[i];

		rte_pktmbuf_free(p->m);
		for (unsigned k = 0; k < p->nheld; k++)
			rte_pktmbuf_free(p->held[k]);
		dust_session_wipe(&p->s);
	}
	w->npend = 0;
	rte_free(w->pend);
	w->pend = NULL;
}
