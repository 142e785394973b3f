/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A worker's sessions from intro to retirement: an intro accepted (into a
 * free slot, or one made by retiring the idlest session), held for its
 * binding (pending.c) or put live and published with its answer held for
 * PUBLISHED (pubwait.c); retired and expired. Above the parking queues and
 * dispose.c, below the dispatch (decode.c, quic.c, inbox.c).
 */
#include <rte_malloc.h>

#include "cid.h"
#include "dgw_pvt.h"
#include "dispose.h"
#include "eph.h"
#include "lifecycle.h"
#include "pending.h"
#include "pubwait.h"
#include "replay.h"
#include "rtx_w.h"
#include "sessmap.h"

/* A full table: the oldest last_rx_s seen by the last scan, and when (evict_possible). */
struct dgw_lifecycle_w {
	uint32_t evict_oldest_s, evict_scan_s;
	bool evict_scanned;
};

DGW_WORKER_PART(lifecycle, life)

/* s was already taken out of the table (RETIRING). */
static void retired(struct dust_session *s, void *arg)
{
	struct dgw_worker *w = arg;

	if (dgw_pubwait_count(w))
		dgw_pubwait_drop(w, s);
	dgw_quic_cid_del(w, s);
	dgw_rtx_drop(w, s);
	dgw_sess_retired(w, s);
}

void dgw_sess_retire(struct dgw_worker *w, struct dust_session *s)
{
	dust_session_table_remove(w->tab, s);
	retired(s, w);
}

unsigned dgw_sess_expire(struct dgw_worker *w)
{
	return dust_session_table_expire(w->tab, w->now_s, w->gw->cfg.idle_timeout_s, retired, w);
}

void dgw_datagram_done(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                       struct dust_session *s, const struct dust_rx_result *res, bool ka)
{
	/* nothing of s leaves before the answer */
	if (unlikely(dgw_pubwait_count(w)) && dgw_pubwait_take(w, m, rx, s, res))
		return;
	dgw_dispose(w, m, rx, s, res, ka);
}

/*
 * May a full table make room? Before authentication this must stay cheap
 * (a flood of datagrams that look like intros): the oldest last_rx_s is
 * scanned for at most once a second and cached. Sessions only get younger
 * or leave, so the cache may say yes where the scan after authentication
 * then says no (counted as table_full), never the reverse.
 */
static bool evict_possible(struct dgw_worker *w)
{
	struct dgw_lifecycle_w *l = w->life;

	if (l->evict_scan_s != w->now_s || !l->evict_scanned) {
		struct dust_session *v = dust_session_table_idlest(w->tab, w->now_s);

		l->evict_oldest_s = v ? v->last_rx_s : w->now_s;
		l->evict_scan_s = w->now_s;
		l->evict_scanned = true;
	}
	return w->now_s - l->evict_oldest_s >= w->gw->cfg.evict_idle_s;
}

/*
 * A slot for an authenticated intro's session, now in tmp. In a full table
 * the session idle longest is retired (if idle evict_idle_s or more) and a
 * spare slot holds tmp while the victim's slot waits out its grace period.
 */
static struct dust_session *make_room(struct dgw_worker *w, struct dust_session *tmp)
{
	struct dust_session *s = dust_session_table_reserve(w->tab), *v;

	if (!s) {
		v = dust_session_table_idlest(w->tab, w->now_s);
		if (v && w->now_s - v->last_rx_s >= w->gw->cfg.evict_idle_s) {
			dgw_sess_retire(w, v);
			dgw_ctr_inc(w, DGW_CTR_SESS_EVICTED_IDLE);
			w->life->evict_scanned = false;
			s = dust_session_table_reserve(w->tab);
		}
	}
	if (s)
		*s = *tmp;
	dust_session_wipe(tmp);
	return s;
}

static enum dust_drop quic_accept(struct dgw_worker *w, const struct dgw_rx *rx,
                                  struct dust_session *s, struct dust_quic_accept *acc,
                                  struct dust_intro_info *info)
{
	const struct dust_eph *eph = dgw_eph_peek(w);
	struct dgw_shape sh;
	enum dust_drop d;

	dgw_shape_now(w->gw, &sh); /* the answer's size is fixed here: it is in the keys */
	d = dust_quic_intro_accept_sized(&w->gw->srv, &w->rng, rx->dg, rx->len, w->now_ms, &rx->ep,
	                                 eph, sh.answer, s, acc, info);
	if (d == DUST_OK)
		dgw_eph_spent(w, eph);
	return d;
}

/*
 * An intro from the address of old that names another invitation: the
 * session there is another client's, and an intro (authentic or not: anyone
 * holding an invitation can send one from a spoofed address) must not end
 * it while it is in use (SPEC §9). Once it is idle evict_idle_s, the new
 * client may take the address. Decided before any X25519 and before the
 * store is touched (quic: the Initial's public-key decryption, then the tag).
 */
static bool endpoint_busy(struct dgw_worker *w, const struct dgw_rx *rx,
                          const struct dust_session *old)
{
	int64_t idx;

	if (w->now_s - old->last_rx_s >= w->gw->cfg.evict_idle_s)
		return false;
	idx = rx->profile == DUST_PROFILE_QUIC ? dust_quic_intro_peek(&w->gw->srv, rx->dg, rx->len)
	                                       : dust_intro_peek(&w->gw->srv, rx->dg, rx->len);
	return idx >= 0 && (uint32_t)idx != old->invite_idx;
}

/*
 * An intro from rx->ep. old is the live session of that endpoint when the
 * datagram failed as data (a client re-introducing from the same address);
 * then, if it is no intro either, the data failure old_drop is what counts.
 * In a full table the intro is opened into a stack session: only once it
 * authenticated may it retire anything (old, or the idlest session).
 */
void dgw_intro_path(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                    struct dust_session *old, enum dust_drop old_drop)
{
	struct dust_session tmp, *s = dust_session_table_reserve(w->tab);
	struct dust_intro_info info;
	struct dust_quic_accept acc;
	size_t consumed = 0;
	unsigned npend = dgw_pending_count(w);
	enum dust_drop d;

	/* first uses waiting for their fsync hold places in the table too */
	if (s && npend &&
	    dust_session_table_live(w->tab) + npend >= dust_session_table_capacity(w->tab))
		s = NULL;
	if (!s && !old && !evict_possible(w)) {
		dgw_drop_m(w, m, DGW_DROP_TABLE_FULL);
		return;
	}
	if (old && endpoint_busy(w, rx, old)) {
		if (s)
			dust_session_table_release(w->tab, s);
		dgw_drop_m(w, m, DGW_DROP_ENDPOINT_BUSY);
		return;
	}
	if (!s)
		memset(&tmp, 0, sizeof(tmp));
	if (rx->profile == DUST_PROFILE_QUIC) {
		d = quic_accept(w, rx, s ? s : &tmp, &acc, &info);
	} else {
		const struct dust_eph *eph = dgw_eph_peek(w);

		d = dust_intro_accept(&w->gw->srv, rx->dg, rx->len, w->now_ms, &rx->ep, eph,
		                      s ? s : &tmp, &consumed, &info);
		if (d == DUST_OK)
			dgw_eph_spent(w, eph);
	}
	if (d != DUST_OK) {
		if (s)
			dust_session_table_release(w->tab, s);
		else
			dust_session_wipe(&tmp);
		/* From a live endpoint, a datagram that is no intro either was bad data. */
		if (old && old_drop != DUST_OK &&
		    (d == DUST_DROP_INTRO_UNKNOWN || d == DUST_DROP_TRUNCATED))
			d = old_drop;
		if (rx->profile == DUST_PROFILE_QUIC && dgw_cover_intro(w, m, &rx->ep, old, d))
			return; /* not Dust: the cover server's (SPEC §12.5) */
		dgw_drop_m(w, m, d);
		return;
	}
	if (old)
		dgw_sess_retire(w, old);
	if (w->gw->deferred && info.held) {
		/*
		 * answered once the binding is durable, or (etcd) the returning
		 * client's freshness is committed cluster-wide (pending.c)
		 */
		dgw_pending_hold(w, s ? s : &tmp, m, rx, consumed, &acc, info.first_use);
		return;
	}
	if (w->gw->deferred)
		dgw_store_fresh(w, info.invite_idx);
	dgw_intro_live(w, s, &tmp, m, rx, consumed, &acc, info.first_use);
}

/* The answer waits in pubwait.c for PUBLISHED; replay waits for it right here. */
static void answer_hold(struct dgw_worker *w, struct dust_session *s, struct rte_mbuf *m,
                        const struct dgw_rx *rx, const struct dust_rx_result *res,
                        const struct dust_quic_accept *acc)
{
	if (!dgw_pubwait_hold(w, s, m, rx, res, acc)) {
		/* never answered: the client retries its intro */
		dgw_sess_retire(w, s);
		dgw_drop_m(w, m, DGW_DROP_PENDING_FULL);
		return;
	}
	if (w->gw->cfg.clock == DGW_CLOCK_CAPTURE)
		dgw_replay_publish_wait(w, s);
}

/*
 * An accepted intro's session goes live: into slot s, or (s NULL) a slot
 * made for tmp; published. Its answer (SPEC §5.1, or the quic first
 * flight) and any chained data wait until the main lcore says PUBLISHED
 * (pubwait.c): a reply to the client must find its session.
 */
void dgw_intro_live(struct dgw_worker *w, struct dust_session *s, struct dust_session *tmp,
                    struct rte_mbuf *m, const struct dgw_rx *rx, size_t consumed,
                    const struct dust_quic_accept *acc, bool first_use)
{
	struct dust_rx_result res;

	if (!s && !(s = make_room(w, tmp))) {
		dgw_drop_m(w, m, DGW_DROP_TABLE_FULL);
		return;
	}
	if (dust_session_table_insert(w->tab, s) != 0) {
		/* Cannot happen: the endpoint's only session was just retired. */
		dust_session_table_release(w->tab, s);
		dgw_drop_m(w, m, DUST_DROP_MALFORMED);
		return;
	}
	dgw_ctr_inc(w, DGW_CTR_INTRO_OK);
	dgw_ctr_add(w, DGW_CTR_INTRO_FIRST, first_use);
	/* a CID that names this worker, before any other lcore can read s (encoders seal with it)
	 */
	if (rx->profile == DUST_PROFILE_QUIC)
		dgw_quic_cid_pick(w, s);
	dgw_sess_publish(w, s, rx->mac);
	/* Until the client shows it receives at this address, 3x what came from it (§9.1). */
	if (rx->profile == DUST_PROFILE_QUIC) {
		dgw_path_start(w, s, DUST_PATH_AWAIT_DATA, rx->len);
		/* No chained data (SPEC §12.3): the answer is the server's first flight. */
		answer_hold(w, s, m, rx, NULL, acc);
		return;
	}
	dgw_open(w, s, rx, consumed, &res);
	/* a datagram whose chained data opened is credited whole when it is disposed */
	dgw_path_start(w, s, DUST_PATH_AWAIT_EPOCH, res.nseg ? 0 : rx->len);
	/* The answer (SPEC §5.1) tells the client its session is up and brings its keys. */
	answer_hold(w, s, m, rx, &res, NULL);
}
