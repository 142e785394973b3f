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

int dgw_pubwait_init(struct dgw_worker *w)
{
	w->pubw = rte_zmalloc("dgw_pubwait", sizeof(*w->pubw) * DGW_PENDING_MAX, 0);
	return w->pubw ? 0 : -ENOMEM;
}

static struct dgw_pubwait *find_s(struct dgw_worker *w, const struct dust_session *s)
{
	for (unsigned i = 0; i < w->nwait; i++)
		if (w->pubw[i].s == s)
			return &w->pubw[i];
	return NULL;
}

/* Take p off the list (keeping the others' order); returns the copy in out. */
static void unlink_entry(struct dgw_worker *w, struct dgw_pubwait *p, struct dgw_pubwait *out)
{
	unsigned i = (unsigned)(p - w->pubw);

	*out = *p;
	memmove(p, p + 1, sizeof(*p) * (w->nwait - i - 1));
	w->nwait--;
}

bool dgw_pubwait_hold(struct dgw_worker *w, struct dust_session *s, struct rte_mbuf *m,
                      const struct dgw_rx *rx, const struct dust_rx_result *res,
                      const struct dust_quic_accept *acc)
{
	struct dgw_pubwait *p;

	if (w->nwait == DGW_PENDING_MAX)
		return false; /* the caller retires s, drops m */
	p = &w->pubw[w->nwait++];
	p->s = s;
	p->m = m;
	p->rx = *rx;
	if (res)
		p->res = *res;
	if (acc)
		p->acc = *acc;
	p->nheld = 0;
	p->since_tsc = rte_rdtsc();
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

	return w->nwait && now_tsc - w->pubw[0].since_tsc >= limit ? w->pubw[0].s : NULL;
}

/* At exit: what still waits is dropped, never answered. */
void dgw_pubwait_free(struct dgw_worker *w)
{
	for (unsigned i = 0; i < w->nwait; i++) {
		rte_pktmbuf_free(w->pubw[i].m);
		for (unsigned k = 0; k < w->pubw[i].nheld; k++)
			rte_pktmbuf_free(w->pubw[i].held[k]);
	}
	w->nwait = 0;
	rte_free(w->pubw);
	w->pubw = NULL;
}
