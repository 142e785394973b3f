/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who owns a session across lcores, and how sessions are published and
 * retired. No lock is taken on the fast path.
 *
 * - The rx half (rx keys, replay window, last_rx_s, the table slot) belongs
 *   to the worker whose net RX queue the client's outer 4-tuple lands on
 *   (RSS). Only that worker inserts, looks up, expires, removes and
 *   releases it, in its own dust_session_table.
 * - The tx half (tx keys, peer, tx_counter) is used by every worker's
 *   encode path, since cleartext for any client may arrive on any delivery
 *   queue. Keys and peer never change after the intro; tx_counter advances
 *   with an atomic add inside dust_data_seal, so several lcores (the owner
 *   sending keepalives, others sealing replies) may seal for one session.
 * - Publication: pub[invite_idx].s is the session encoders use for that
 *   invitation. Only the main lcore writes it (release store); encoders
 *   read it (acquire load). tunnel_map, an rte_hash created with
 *   RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF, maps the inner (tunnel) address
 *   to invite_idx; it is filled from the store at start by the main lcore,
 *   its only writer, so readers never block.
 * - Messages, worker -> main (one MP/SC ring): PUBLISH(idx, s, mac) after
 *   an accepted intro; RETIRED(idx, s) whenever s leaves its owner's table
 *   (idle expiry, replacement from the same address, eviction).
 *   Main -> worker (one SP/SC inbox per worker): PUBLISHED(idx, s) once s
 *   is in pub[] (the worker holds the intro's answer until then, pubwait.c:
 *   a client never learns of a session that replies cannot find yet);
 *   EVICT(idx, s) when idx was published anew by an intro elsewhere;
 *   RELEASE(s) when s's grace period is over.
 * - Retirement: on RETIRED the main lcore clears pub[idx] if it still holds
 *   s, then defers s on an rte_rcu_qsbr defer queue. Every worker reports
 *   a quiescent state once per loop iteration and holds no session pointer
 *   across iterations, so once the token is seen no encoder can still hold
 *   s; the defer queue's callback sends RELEASE to the owner, which wipes
 *   the slot and makes it reusable. A slot is never reused under a reader.
 * - Live invitations (main lcore, dgw_sessmap_merge): new invitations are
 *   appended to the store (entries never move); pub[] grows by copy, the
 *   new array swapped in and the old one freed after an RCU grace period
 *   (a worker's MAC hint written to the old copy meanwhile is lost, and
 *   written again by the client's next datagram); their tunnel addresses
 *   are added to tunnel_map, or a bigger map is built and swapped the same
 *   way. The telemetry thread is no RCU reader: it takes pub_lock, under
 *   which both swaps happen. A revoked invitation's published session gets
 *   REVOKE (as EVICT); a PUBLISH for a revoked invitation is answered with
 *   REVOKE instead of being published.
 * - No slot is lost to a full ring: RETIRED (worker -> main) and RELEASE
 *   (main -> worker) that find their ring full wait in a backlog of their
 *   sender's, oldest first, and go before anything else of theirs once
 *   there is room (the worker's housekeeping, the main loop). A slot has
 *   at most one of each outstanding, so a backlog of one place per slot
 *   never overflows: sized, not guessed. Only the delay is unbounded. A
 *   RETIRED or RELEASE that waits only goes later than messages about
 *   other slots, which is harmless (a stale EVICT finds its slot RETIRING).
 *   Other messages are still dropped on a full ring, each with a recovery:
 *   PUBLISH and PUBLISHED by pubwait's timeout, PERSIST and DURABLE by
 *   pending's, REVOKE by the next store poll (gw->revoke_retry); a lost
 *   EVICT leaves the old session until its idle expiry.
 * - Ordering: main is the only producer of a worker's inbox, and it sends
 *   EVICT(s) (if at all) before it can have deferred s, so an EVICT always
 *   arrives before the RELEASE of the same slot: a stale EVICT finds the
 *   slot RETIRING (or the idx changed) and is ignored.
 */
#include <errno.h>
#include <stdio.h>

#include <rte_jhash.h>
#include <rte_malloc.h>

#include "dgw_pvt.h"
#include "sessmap.h"

/*
 * A worker's messages that must never be lost, waiting for ring room,
 * oldest first. Each holds at most one per session slot (a slot retires
 * once, then waits for its RELEASE), so slots entries never overflow.
 * The worker writes the first half, the main lcore the second: a cache
 * line each.
 */
struct dgw_sess_bl {
	struct dgw_msg *retired; /* RETIRED for the main ring (the worker's) */
	unsigned nretired;
	struct dgw_msg *release __rte_cache_aligned; /* RELEASE for the worker's inbox (main's) */
	unsigned nrelease;
};

/* RELEASEs that waited for room in w's inbox, oldest first (main lcore). */
static void release_flush(struct dgw_worker *w)
{
	struct dgw_sess_bl *bl = w->bl;
	unsigned n = rte_ring_enqueue_burst_elem(w->inbox, bl->release, sizeof(bl->release[0]),
	                                         bl->nrelease, NULL);

	memmove(bl->release, bl->release + n, sizeof(bl->release[0]) * (bl->nrelease - n));
	bl->nrelease -= n;
}

/* A RELEASE is never lost: behind the others waiting, or at once. */
static void send_release(struct dgw *gw, struct dgw_msg *m)
{
	struct dgw_worker *w = m->wid < gw->nworkers ? gw->w[m->wid] : NULL;
	struct dgw_sess_bl *bl = w ? w->bl : NULL;

	if (!w)
		return;
	if (bl->nrelease)
		release_flush(w);
	if (!bl->nrelease && rte_ring_enqueue_elem(w->inbox, m, sizeof(*m)) == 0)
		return;
	if (bl->nrelease == dust_session_table_slots(w->tab)) {
		/* more RELEASEs than slots: a slot was released twice, a bug */
		DGW_LOG(ERR, "release backlog of worker %u full, message lost", m->wid);
		return;
	}
	if (!bl->nrelease)
		DGW_LOG(WARNING, "inbox of worker %u full: slot releases wait", m->wid);
	bl->release[bl->nrelease++] = *m;
}

static int send_inbox(struct dgw *gw, uint16_t wid, struct dgw_msg *m)
{
	if (wid >= gw->nworkers || rte_ring_enqueue_elem(gw->w[wid]->inbox, m, sizeof(*m)) != 0) {
		/* Rings are sized for two messages per slot: this is a bug. */
		DGW_LOG(ERR, "inbox of worker %u full, message %u lost", wid, m->type);
		return -ENOBUFS;
	}
	return 0;
}

static void dq_free(void *p, void *e, unsigned int n)
{
	struct dgw *gw = p;
	struct dgw_msg *m = e;

	for (unsigned i = 0; i < n; i++) {
		m[i].type = DGW_MSG_RELEASE;
		send_release(gw, &m[i]);
	}
}

/* Map the tunnel addresses of invitations [from, to) to their index. */
static int tunnel_map_fill(struct dgw *gw, struct rte_hash *map, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to; i++) {
		struct dust_store_entry *e = dust_store_at(gw->srv.store, i);
		struct dgw_tkey key;
		void *old;

		memset(&key, 0, sizeof(key));
		key.ip.family = e->inv.tunnel.family;
		memcpy(key.ip.a, e->inv.tunnel.a, key.ip.family == 4 ? 4 : 16);
		if (rte_hash_lookup_data(map, &key, &old) >= 0) {
			char buf[64];

			DGW_LOG(WARNING,
			        "invitations %u and %u share tunnel address %s: keeping %u",
			        (unsigned)(uintptr_t)old, i,
			        dust_ipaddr_format(&key.ip, buf, sizeof(buf)),
			        (unsigned)(uintptr_t)old);
			continue;
		}
		if (rte_hash_add_key_data(map, &key, (void *)(uintptr_t)i) != 0)
			return -ENOSPC;
	}
	return 0;
}

/* A tunnel map with room for twice n invitations, filled with the first n. */
static struct rte_hash *tunnel_map_new(struct dgw *gw, uint32_t n)
{
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters hp = {
	    .name = name,
	    .entries = RTE_MAX(n, 64u) * 2,
	    .key_len = sizeof(struct dgw_tkey),
	    .hash_func = rte_jhash,
	    .socket_id = (int)rte_socket_id(),
	    .extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF,
	};
	struct rte_hash *map;

	snprintf(name, sizeof(name), "dgw_tunnel%u", gw->maps_made++);
	map = rte_hash_create(&hp);
	if (map && tunnel_map_fill(gw, map, 0, n) != 0) {
		rte_hash_free(map);
		map = NULL;
	}
	return map;
}

static int maps_create(struct dgw *gw)
{
	gw->pub_cap = RTE_MAX(2 * gw->ninv, 1024u);
	gw->pub = rte_zmalloc("dgw_pub", sizeof(*gw->pub) * gw->pub_cap, 0);
	gw->tunnel_map = tunnel_map_new(gw, gw->ninv);
	return gw->pub && gw->tunnel_map ? 0 : -ENOMEM;
}

static int rcu_create(struct dgw *gw, uint32_t slots)
{
	size_t sz = rte_rcu_qsbr_get_memsize(gw->nworkers);
	struct rte_rcu_qsbr_dq_parameters dp = {
	    .name = "dgw_dq",
	    .flags = RTE_RCU_QSBR_DQ_MT_UNSAFE, /* only the main lcore uses it */
	    .size = slots + 1,
	    .esize = sizeof(struct dgw_msg),
	    .trigger_reclaim_limit = slots + 2, /* no auto reclaim: main loop does it */
	    .max_reclaim_size = 64,
	    .free_fn = dq_free,
	    .p = gw,
	};

	gw->rcu = rte_zmalloc("dgw_rcu", sz, RTE_CACHE_LINE_SIZE);
	if (!gw->rcu || rte_rcu_qsbr_init(gw->rcu, gw->nworkers) != 0)
		return -ENOMEM;
	dp.v = gw->rcu;
	gw->dq = rte_rcu_qsbr_dq_create(&dp);
	return gw->dq ? 0 : -ENOMEM;
}

/* A worker's backlogs, per messages each, in one allocation. */
static struct dgw_sess_bl *bl_create(uint32_t per)
{
	struct dgw_sess_bl *bl = rte_zmalloc(
	    "dgw_sess_bl", sizeof(*bl) + 2 * sizeof(struct dgw_msg) * per, RTE_CACHE_LINE_SIZE);

	if (!bl)
		return NULL;
	bl->retired = (struct dgw_msg *)(bl + 1);
	bl->release = bl->retired + per;
	return bl;
}

int dgw_sessmap_create(struct dgw *gw)
{
	uint32_t per = dust_session_table_slots(gw->w[0]->tab), slots = per * gw->nworkers;
	int rc;

	gw->ninv = (uint32_t)dust_store_count(gw->srv.store);
	pthread_mutex_init(&gw->pub_lock, NULL);
	if ((rc = maps_create(gw)) || (rc = rcu_create(gw, slots)))
		return rc;
	gw->to_main = rte_ring_create_elem("dgw_to_main", sizeof(struct dgw_msg),
	                                   rte_align32pow2(2 * slots + 64), (int)rte_socket_id(),
	                                   RING_F_SC_DEQ);
	if (!gw->to_main)
		return -ENOMEM;
	for (unsigned i = 0; i < gw->nworkers; i++) {
		char name[32];

		snprintf(name, sizeof(name), "dgw_inbox%u", i);
		gw->w[i]->inbox =
		    rte_ring_create_elem(name, sizeof(struct dgw_msg),
		                         rte_align32pow2(2 * per + 3 * DGW_PENDING_MAX + 64),
		                         (int)rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!gw->w[i]->inbox)
			return -ENOMEM;
		gw->w[i]->bl = bl_create(per);
		if (!gw->w[i]->bl)
			return -ENOMEM;
	}
	return 0;
}

void dgw_sessmap_free(struct dgw *gw)
{
	if (gw->dq)
		rte_rcu_qsbr_dq_delete(gw->dq);
	for (unsigned i = 0; i < gw->nworkers; i++)
		if (gw->w[i]) {
			rte_ring_free(gw->w[i]->inbox);
			rte_free(gw->w[i]->bl);
			gw->w[i]->bl = NULL;
		}
	rte_ring_free(gw->to_main);
	rte_hash_free(gw->tunnel_map);
	rte_free(gw->rcu);
	rte_free(gw->pub);
}

static int to_main(struct dgw_worker *w, uint8_t type, struct dust_session *s, uint64_t mac)
{
	struct dgw_msg m = {
	    .type = type, .wid = (uint8_t)w->wid, .idx = s->invite_idx, .s = s, .mac = mac};

	if (rte_ring_enqueue_elem(w->gw->to_main, &m, sizeof(m)) == 0)
		return 0;
	DGW_LOG(ERR, "main ring full, message %u from worker %u lost", type, w->wid);
	return -ENOBUFS;
}

/* RETIREDs that waited for room in the main ring, oldest first (housekeeping). */
void dgw_sess_backlog_flush(struct dgw_worker *w)
{
	struct dgw_sess_bl *bl = w->bl;
	unsigned n;

	if (!bl->nretired)
		return;
	n = rte_ring_enqueue_burst_elem(w->gw->to_main, bl->retired, sizeof(bl->retired[0]),
	                                bl->nretired, NULL);
	memmove(bl->retired, bl->retired + n, sizeof(bl->retired[0]) * (bl->nretired - n));
	bl->nretired -= n;
}

void dgw_sess_publish(struct dgw_worker *w, struct dust_session *s, uint64_t mac)
{
	/* only what the ring took: replay waits for main to have handled as many (replay.c) */
	if (to_main(w, DGW_MSG_PUBLISH, s, mac) == 0)
		dgw_stat_add(&w->pub_sent, 1);
}

/* s left its owner's table (lifecycle.c): main unpublishes it and defers its slot. */
void dgw_sess_retired(struct dgw_worker *w, struct dust_session *s)
{
	struct dgw_sess_bl *bl = w->bl;
	struct dgw_msg m = {
	    .type = DGW_MSG_RETIRED, .wid = (uint8_t)w->wid, .idx = s->invite_idx, .s = s};

	/* never lost, never ahead of an older one: its slot comes back only through it */
	dgw_sess_backlog_flush(w);
	if (!bl->nretired && rte_ring_enqueue_elem(w->gw->to_main, &m, sizeof(m)) == 0)
		return;
	if (bl->nretired == dust_session_table_slots(w->tab)) {
		DGW_LOG(ERR, "retired backlog of worker %u full, a slot lost", w->wid); /* a bug */
		return;
	}
	bl->retired[bl->nretired++] = m;
	dgw_ctr_inc(w, DGW_CTR_MSG_BACKLOG);
}

void dgw_sess_note_mac(struct dgw_worker *w, const struct dust_session *s, uint64_t mac)
{
	struct dgw_pub *p = &w->gw->pub[s->invite_idx];

	/* Only the published session steers replies; compare first to keep the line shared. */
	if (atomic_load_explicit(&p->mac, memory_order_relaxed) != mac &&
	    atomic_load_explicit(&p->s, memory_order_relaxed) == s)
		atomic_store_explicit(&p->mac, mac, memory_order_relaxed);
}

/* PUBLISH handled, for a replaying worker that waits on it (replay.c) */
static void published(struct dgw *gw, uint8_t wid)
{
	if (wid < gw->nworkers)
		atomic_fetch_add_explicit(&gw->w[wid]->pub_done, 1, memory_order_release);
}

static void main_publish(struct dgw *gw, const struct dgw_msg *m)
{
	struct dgw_pub *p;
	struct dust_session *old;
	uint16_t old_wid;
	struct dgw_msg pd = *m;

	/*
	 * Past pub[] (its merge failed), or s already retired (its RETIRED is
	 * behind this in the ring, or in the worker's backlog): never
	 * published, and the session published now keeps its place, but
	 * handled (replay counts them). s's slot is still readable: it is
	 * released only after its RETIRED, which the worker sent after this.
	 */
	if (m->idx >= gw->ninv ||
	    __atomic_load_n(&m->s->state, __ATOMIC_ACQUIRE) != DUST_SESSION_LIVE) {
		published(gw, m->wid);
		return;
	}
	p = &gw->pub[m->idx];
	old = atomic_load_explicit(&p->s, memory_order_relaxed);
	old_wid = p->wid;

	/* accepted just before its revocation reached the worker: never published */
	if (__atomic_load_n(&dust_store_at(gw->srv.store, m->idx)->revoked, __ATOMIC_ACQUIRE)) {
		struct dgw_msg rv = {
		    .type = DGW_MSG_REVOKE, .wid = m->wid, .idx = m->idx, .s = m->s};

		send_inbox(gw, m->wid, &rv);
		published(gw, m->wid);
		return;
	}

	/* The MAC first: an encoder that sees s must also see where to send. */
	atomic_store_explicit(&p->mac, m->mac, memory_order_relaxed);
	atomic_store_explicit(&p->s, m->s, memory_order_release);
	pthread_mutex_lock(&gw->pub_lock);
	p->wid = m->wid;
	p->peer = m->s->peer;
	gw->published += !old;
	pthread_mutex_unlock(&gw->pub_lock);
	pd.type = DGW_MSG_PUBLISHED;
	send_inbox(gw, m->wid, &pd);
	published(gw, m->wid);
	if (old && old != m->s) {
		struct dgw_msg ev = {
		    .type = DGW_MSG_EVICT, .wid = (uint8_t)old_wid, .idx = m->idx, .s = old};

		send_inbox(gw, old_wid, &ev);
	}
}

static void main_retired(struct dgw *gw, struct dgw_msg *m)
{
	struct dgw_pub *p = m->idx < gw->ninv ? &gw->pub[m->idx] : NULL;

	/* an index past ninv was never published (its merge failed): the slot still comes back */
	if (p && atomic_load_explicit(&p->s, memory_order_relaxed) == m->s) {
		atomic_store_explicit(&p->s, NULL, memory_order_release);
		pthread_mutex_lock(&gw->pub_lock);
		gw->published--;
		pthread_mutex_unlock(&gw->pub_lock);
	}
	if (rte_rcu_qsbr_dq_enqueue(gw->dq, m) != 0) {
		/* Cannot happen with the queue sized to every slot; wait instead. */
		rte_rcu_qsbr_synchronize(gw->rcu, RTE_QSBR_THRID_INVALID);
		dq_free(gw, m, 1);
	}
}

static void durable_send(struct dgw *gw, const struct dust_store_outcome *o)
{
	struct dgw_msg r = {
	    .type = DGW_MSG_DURABLE, .wid = (uint8_t)o->cookie, .idx = o->idx, .mac = o->drop};

	send_inbox(gw, r.wid, &r);
}

/*
 * A held acceptance to the store (SPEC §7.7): the file store writes the
 * binding now and makes it durable at the next poll, with one fdatasync for
 * all (group commit); etcd's own threads commit it (a quorum). The main
 * lcore is the store's only committer: no worker waits on a disk or the
 * network. A store that cannot take it refuses the first use at once.
 */
static void main_submit(struct dgw *gw, const struct dgw_msg *m, struct dust_store_entry *e)
{
	struct dust_store_outcome o = {
	    .idx = m->idx, .cookie = m->wid, .drop = DUST_DROP_STORE_UNAVAILABLE};

	if (dust_store_persist_submit(gw->srv.store, e, m->wid) == 0)
		return;
	DGW_LOG(ERR, "store: %s", dust_last_error());
	durable_send(gw, &o);
}

static void outcome_log(struct dgw *gw, enum dust_drop drop, unsigned *persist_failed)
{
	if (drop == DUST_DROP_STORE_UNAVAILABLE && !gw->store_down)
		DGW_LOG(WARNING, "store: the cluster did not commit a binding: first "
		                 "uses refused (store_unavailable) until it does");
	__atomic_store_n(&gw->store_down, drop == DUST_DROP_STORE_UNAVAILABLE, __ATOMIC_RELAXED);
	*persist_failed += drop == DUST_DROP_INTRO_PERSIST;
}

/* Every outcome the store has (a file store's poll runs its group commit first). */
static void main_outcomes(struct dgw *gw)
{
	struct dust_store_outcome o[64];
	unsigned n, failed = 0;

	do {
		n = dust_store_persist_poll(gw->srv.store, o, RTE_DIM(o));
		for (unsigned i = 0; i < n; i++) {
			outcome_log(gw, o[i].drop, &failed);
			durable_send(gw, &o[i]);
		}
	} while (n == RTE_DIM(o));
	if (failed)
		DGW_LOG(ERR, "store journal fsync: %s: %u first use(s) refused", dust_last_error(),
		        failed);
}

static void main_store(struct dgw *gw, const struct dgw_msg *m)
{
	struct dust_store *st = gw->srv.store;
	struct dust_store_entry *e = dust_store_at(st, m->idx);

	if (m->type == DGW_MSG_FRESH)
		dust_store_persist_fresh(st, e);
	else
		main_submit(gw, m, e);
}

void dgw_main_messages(struct dgw *gw)
{
	struct dgw_msg m[64];
	unsigned n;

	for (unsigned i = 0; i < gw->nworkers; i++)
		if (gw->w[i]->bl->nrelease)
			release_flush(gw->w[i]);
	do {
		n = rte_ring_dequeue_burst_elem(gw->to_main, m, sizeof(m[0]), RTE_DIM(m), NULL);
		for (unsigned i = 0; i < n; i++) {
			if (m[i].type == DGW_MSG_RETIRED)
				main_retired(gw, &m[i]);
			else if (m[i].type == DGW_MSG_PUBLISH)
				main_publish(gw, &m[i]);
			else if (m[i].idx >= gw->ninv)
				continue;
			else if (m[i].type == DGW_MSG_PERSIST || m[i].type == DGW_MSG_FRESH)
				main_store(gw, &m[i]);
		}
	} while (n == RTE_DIM(m));
	main_outcomes(gw);
	rte_rcu_qsbr_dq_reclaim(gw->dq, 256, NULL, NULL, NULL);
}

/* pub[] for at least n invitations: a bigger copy, swapped under pub_lock. */
static int pub_grow(struct dgw *gw, uint32_t n)
{
	uint32_t cap = RTE_MAX(2 * n, gw->pub_cap);
	struct dgw_pub *np = rte_zmalloc("dgw_pub", sizeof(*np) * cap, 0), *old = gw->pub;

	if (!np)
		return -ENOMEM;
	pthread_mutex_lock(&gw->pub_lock);
	memcpy(np, old, sizeof(*np) * gw->ninv);
	__atomic_store_n(&gw->pub, np, __ATOMIC_RELEASE);
	gw->pub_cap = cap;
	pthread_mutex_unlock(&gw->pub_lock);
	rte_rcu_qsbr_synchronize(gw->rcu, RTE_QSBR_THRID_INVALID);
	rte_free(old);
	return 0;
}

/* Map the new invitations' tunnel addresses; a full map is rebuilt bigger. */
static int tunnel_map_extend(struct dgw *gw, uint32_t n)
{
	struct rte_hash *map, *old = gw->tunnel_map;

	if (tunnel_map_fill(gw, old, gw->ninv, n) == 0)
		return 0;
	map = tunnel_map_new(gw, n);
	if (!map)
		return -ENOMEM;
	pthread_mutex_lock(&gw->pub_lock);
	__atomic_store_n(&gw->tunnel_map, map, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&gw->pub_lock);
	rte_rcu_qsbr_synchronize(gw->rcu, RTE_QSBR_THRID_INVALID);
	rte_hash_free(old);
	return 0;
}

int dgw_sessmap_merge(struct dgw *gw)
{
	uint32_t n = (uint32_t)dust_store_count(gw->srv.store);
	int rc;

	if (n <= gw->ninv)
		return 0;
	if (n > gw->pub_cap && (rc = pub_grow(gw, n)) != 0)
		return rc;
	if ((rc = tunnel_map_extend(gw, n)) != 0)
		return rc;
	pthread_mutex_lock(&gw->pub_lock);
	gw->ninv = n;
	pthread_mutex_unlock(&gw->pub_lock);
	return 0;
}

/*
 * REVOKE to the owner of every published session of a revoked invitation.
 * One that finds its inbox full is sent again by the next scan, which
 * live.c runs while gw->revoke_retry is set: a revoked session is never
 * left up for want of ring room (a duplicate REVOKE is ignored).
 */
unsigned dgw_sessmap_revoke(struct dgw *gw)
{
	unsigned sent = 0;

	gw->revoke_retry = false;
	for (uint32_t i = 0; i < gw->ninv; i++) {
		struct dust_store_entry *e = dust_store_at(gw->srv.store, i);
		struct dgw_pub *p = &gw->pub[i];
		struct dust_session *s;

		if (!__atomic_load_n(&e->revoked, __ATOMIC_ACQUIRE))
			continue;
		s = atomic_load_explicit(&p->s, memory_order_relaxed);
		if (s) {
			struct dgw_msg rv = {
			    .type = DGW_MSG_REVOKE, .wid = (uint8_t)p->wid, .idx = i, .s = s};

			if (send_inbox(gw, p->wid, &rv) == 0)
				sent++;
			else
				gw->revoke_retry = true;
		}
	}
	return sent;
}
