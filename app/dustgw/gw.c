/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Building and tearing down the gateway context: the server identity and
 * invitation store (shared by all workers through dust_server), one
 * session table per worker, the mbuf pool and the publication maps.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <rte_lcore.h>
#include <rte_malloc.h>

#include "adaptive.h"
#include "cid.h"
#include "dgw_pvt.h"
#include "eph.h"
#include "hello.h"
#include "lifecycle.h"
#include "pace_w.h"
#include "pending.h"
#include "pubwait.h"
#include "replay.h"
#include "rtx_w.h"
#include "sessmap.h"
#include "slow.h"

int dgw_logtype;
struct dgw *dgw_global;
/* readers: telemetry commands on their own thread; writer: create, destroy */
static pthread_rwlock_t global_lock = PTHREAD_RWLOCK_INITIALIZER;

static void global_set(struct dgw *gw)
{
	pthread_rwlock_wrlock(&global_lock);
	__atomic_store_n(&dgw_global, gw, __ATOMIC_RELEASE); /* the signal handler reads it */
	pthread_rwlock_unlock(&global_lock);
}

struct dgw *dgw_global_hold(void)
{
	struct dgw *gw;

	pthread_rwlock_rdlock(&global_lock);
	gw = dgw_global;
	if (!gw)
		pthread_rwlock_unlock(&global_lock);
	return gw;
}

void dgw_global_release(void)
{
	pthread_rwlock_unlock(&global_lock);
}

RTE_INIT(dgw_log_init)
{
	dgw_logtype = rte_log_register_type_and_pick_level("dustgw", RTE_LOG_INFO);
}

/*
 * Freshness records are not fsynced: a crash may lose the newest, and an
 * intro taken before it could then be taken again. After a run that did not
 * close cleanly, no intro of a bound invitation from before this start is
 * taken (SPEC §7); a client's next intro is newer.
 */
static int start_floor(struct dgw *gw)
{
	struct timespec ts;
	bool clean;
	int rc = dust_store_run_begin(gw->srv.store, &clean);

	if (rc != 0) {
		fprintf(stderr, "dustgw: invitation store %s: %s\n", gw->cfg.store_path,
		        dust_last_error());
		return rc;
	}
	if (clean)
		return 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	gw->srv.floor_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	DGW_LOG(NOTICE, "the last run did not close cleanly: intros of bound invitations "
	                "from before this start are refused (intro_early)\n");
	return 0;
}

static int load_server(struct dgw *gw)
{
	int rc = dust_identity_load(&gw->srv.id, gw->cfg.key_file);
	int flags = gw->cfg.clock == DGW_CLOCK_CAPTURE ? DUST_STORE_READONLY : 0;

	if (rc != 0) {
		fprintf(stderr, "dustgw: server key %s: %s%s\n", gw->cfg.key_file,
		        rc == -EPERM ? "readable by group or others (chmod 600 it)" : strerror(-rc),
		        rc == -ENOENT ? " (create one with dust-invite keygen)" : "");
		return rc;
	}
	/* Replay never writes the operator's store: bindings live in memory. */
	gw->srv.store = dust_store_open(gw->cfg.store_path, flags, &gw->srv.id);
	if (!gw->srv.store) {
		rc = -errno;
		fprintf(stderr, "dustgw: invitation store %s: %s\n", gw->cfg.store_path,
		        dust_last_error());
		return rc ? rc : -EINVAL;
	}
	gw->srv.lim = gw->cfg.lim;
	if (gw->cfg.clock == DGW_CLOCK_REAL && (rc = start_floor(gw)) != 0)
		return rc;
	dust_store_tick(gw->srv.store, (uint64_t)time(NULL));
	/* store I/O on the main lcore, first uses held until durable (pending.c) */
	gw->deferred = !(flags & DUST_STORE_READONLY);
	dust_store_set_deferred(gw->srv.store, gw->deferred);
	return 0;
}

static int workers_create(struct dgw *gw)
{
	for (unsigned i = 0; i < gw->nworkers; i++) {
		struct dgw_worker *w = rte_zmalloc("dgw_worker", sizeof(*w), RTE_CACHE_LINE_SIZE);

		if (!w)
			return -ENOMEM;
		gw->w[i] = w;
		w->gw = gw;
		w->wid = (uint16_t)i;
		w->lcore = LCORE_ID_ANY;
		w->tab = dust_session_table_create(gw->cfg.sessions_per_lcore);
		/* quic clients' compressed ACKs (SPEC §6.5): a context per session slot */
		if (w->tab && gw->cfg.quic_port && dust_session_table_ackz_enable(w->tab) != 0)
			return -ENOMEM;
		if (!w->tab || dgw_pending_init(w) != 0 || dgw_slow_init(w) != 0 ||
		    dgw_pubwait_init(w) != 0 || dgw_quic_worker_init(w) != 0 ||
		    dgw_pace_init(w) != 0 || dgw_hello_init(w) != 0 || dgw_rtx_init(w) != 0 ||
		    dgw_eph_init(w) != 0 || dgw_replay_init(w) != 0 || dgw_poll_init(w) != 0 ||
		    dgw_lifecycle_init(w) != 0)
			return -ENOMEM;
	}
	return 0;
}

/* The first flight's shape until the learner finds the cover server's: the configured one. */
static void shape_init(struct dgw *gw)
{
	struct dgw_shape sh = gw->cfg.shape;

	if (!sh.answer) /* an embedder's config without dgw_config_defaults */
		dgw_shape_default(&sh);
	dgw_shape_clamp(&sh);
	atomic_store(&gw->shape, dgw_shape_pack(&sh));
}

struct dgw *dgw_create(const struct dgw_config *cfg)
{
	struct dgw *gw = rte_zmalloc("dgw", sizeof(*gw), RTE_CACHE_LINE_SIZE);
	int rc;

	if (!gw) {
		errno = ENOMEM;
		return NULL;
	}
	gw->cfg = *cfg;
	gw->nworkers = cfg->queues;
	shape_init(gw);
	gw->pool = rte_pktmbuf_pool_create("dgw_mbufs", cfg->mbufs, RTE_MIN(256u, cfg->mbufs / 4),
	                                   0, RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (!gw->pool) {
		fprintf(stderr, "dustgw: cannot allocate %u mbufs: %s (raise EAL -m?)\n",
		        cfg->mbufs, rte_strerror(rte_errno));
		rc = -ENOMEM;
		goto err;
	}
	if ((rc = load_server(gw)) != 0)
		goto err;
	if (gw->cfg.quic_port && !(gw->hellos = dust_seen_new(DGW_HELLO_SEEN_LOG2))) {
		rc = -ENOMEM;
		fprintf(stderr, "dustgw: cannot allocate the quic hellos' set\n");
		goto err;
	}
	if ((rc = workers_create(gw)) != 0 || (rc = dgw_sessmap_create(gw)) != 0) {
		fprintf(stderr, "dustgw: cannot allocate session state: %s\n", strerror(-rc));
		goto err;
	}
	global_set(gw);
	return gw;
err:
	dgw_destroy(gw);
	errno = -rc;
	return NULL;
}

struct rte_mempool *dgw_pool(struct dgw *gw)
{
	return gw->pool;
}

void dgw_destroy(struct dgw *gw)
{
	if (!gw)
		return;
	/* waits for a telemetry command still reading this gateway (F5) */
	if (__atomic_load_n(&dgw_global, __ATOMIC_ACQUIRE) == gw)
		global_set(NULL);
	if (gw->ports_owned) {
		rte_eth_dev_stop(gw->net_port);
		rte_eth_dev_stop(gw->dlv_port);
	}
	dgw_cover_free(gw);
	dgw_sessmap_free(gw);
	dust_seen_free(gw->hellos);
	for (unsigned i = 0; i < gw->nworkers; i++) {
		struct dgw_worker *w = gw->w[i];

		if (!w)
			continue;
		dust_session_table_free(w->tab);
		dgw_pending_free(w);
		dgw_pubwait_free(w);
		dgw_slow_free(w);
		dgw_quic_worker_free(w);
		dgw_pace_free(w);
		dgw_hello_free(w);
		dgw_rtx_free(w);
		dgw_eph_free(w);
		dgw_replay_free(w);
		dgw_poll_free(w);
		dgw_lifecycle_free(w);
		rte_free(w->net_txb);
		rte_free(w->dlv_txb);
		dust_rng_wipe(&w->rng);
		rte_free(w);
	}
	if (gw->srv.store)
		dust_store_close(gw->srv.store);
	dust_identity_wipe(&gw->srv.id);
	rte_mempool_free(gw->pool);
	rte_free(gw);
}
