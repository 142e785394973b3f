/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internals shared by the files of dustgw_core: the gateway context, the
 * per-worker state, the messages between lcores and the inline helpers.
 * Each file's functions are declared in a header of its own (below). Not
 * for bench/ or other embedders (see dustgw.h; tests read depths through
 * dgw_worker_depths, counters through dgw_stats_get).
 *
 * Conventions of app/dustgw:
 * - A worker module owns its state: a struct defined in its .c, behind one
 *   pointer in struct dgw_worker, opaque in the module's header with the
 *   functions its users call (cover.h, pending.h, pubwait.h, slow.h,
 *   hello.h, eph.h, replay.h, lifecycle.h, adaptive.h for poll.c, and
 *   rtx_w.h and pace_w.h: rtx.h and pace.h are the DPDK-free table and
 *   wheel that test_rtx and test_pace build against); only its users
 *   include that header. Counts that other lcores read are read through
 *   the module's accessor (an __atomic load inside), never through the
 *   struct. cid.h's table and handoff ring stay plain pointers here: other
 *   workers write the ring. Files with no worker state have a header of
 *   their own all the same (net.h, neigh.h, dispose.h, sessmap.h,
 *   quic_w.h, decode.h, inbox.h, encode.h, hints.h, live.h, telemetry.h,
 *   cfgcheck.h for check.c). gw.c's dgw_global_hold stays here, with the
 *   context it lends.
 * - Setup that can fail (_init, _create, _setup): 0 or -errno (-ENOMEM
 *   for memory); its _free takes whatever a failed setup left, NULL
 *   pointers included.
 * - A function handed an mbuf consumes it (sends, holds or drops it), or
 *   returns bool: true when it took m, false when m is still the caller's.
 * - One drop helper, dgw_drop_m (count the reason, free m). A function
 *   that must return a verdict after a drop wraps it (net.c: DGW_RX_DONE,
 *   encode.c: -1) and never counts or frees by itself.
 * - A queue hands back what it releases (pending.c: entries into *out,
 *   slow.c: the popped entry) for its caller to finish: no queue calls up.
 */
#ifndef DGW_PVT_H
#define DGW_PVT_H

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_hash.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include "cover.h"
#include "dustgw.h"
#include "learn.h"
#include "quic.h"

extern int dgw_logtype;
#define DGW_LOG(level, fmt, ...)                                                                   \
	rte_log(RTE_LOG_##level, dgw_logtype, "dustgw: " fmt "\n", ##__VA_ARGS__)

enum {
	DGW_BURST = 32,
	DGW_PREFETCH_AHEAD = 8,
	DGW_ETH_LEN = 14,
	DGW_OUTER4_LEN = 14 + 20 + 8,
	DGW_OUTER6_LEN = 14 + 40 + 8,
};

/* Messages between lcores (see sessmap.c for the protocol). */
enum dgw_msg_type {
	DGW_MSG_PUBLISH = 1, /* worker -> main: s is the live session of idx */
	DGW_MSG_RETIRED,     /* worker -> main: s left the worker's table */
	DGW_MSG_EVICT,       /* main -> worker: idx moved elsewhere, retire s */
	DGW_MSG_RELEASE,     /* main -> worker: grace period over, free s's slot */
	DGW_MSG_REVOKE,      /* main -> worker: idx was revoked, retire s */
	DGW_MSG_PERSIST,     /* worker -> main: write and fsync idx's pending binding */
	DGW_MSG_FRESH,       /* worker -> main: journal idx's newest intro (not fsynced) */
	DGW_MSG_DURABLE,     /* main -> worker: idx's binding durable (mac DUST_OK) or its drop */
	DGW_MSG_PUBLISHED,   /* main -> worker: s is published, its answer may go (pubwait.c) */
};

struct dgw_msg {
	uint8_t type;
	uint8_t wid;
	uint16_t unused;
	uint32_t idx;
	struct dust_session *s;
	uint64_t mac; /* PUBLISH: the client's source MAC */
};

/*
 * tunnel_map key: an inner address padded to a multiple of 4 bytes, since
 * rte_jhash reads whole 32-bit words. Zero every byte before use.
 */
struct dgw_tkey {
	struct dust_ipaddr ip;
	uint8_t pad[3];
} __attribute__((aligned(4)));

/* Per invitation: the published session, read by any encoder without locks. */
struct dgw_pub {
	struct dust_session *_Atomic s; /* written by the main lcore only */
	_Atomic uint64_t mac;           /* client's last source MAC, written by the owner */
	uint16_t wid;                   /* owner worker (main-lcore / telemetry view) */
	struct dust_endpoint peer;      /* copy for telemetry, under gw->pub_lock */
};

/* Where a parsed net-side datagram came from. */
struct dgw_rx {
	struct dust_endpoint ep;
	uint64_t mac; /* source MAC, 6 bytes in the low bits (memcpy order) */
	uint8_t *dg;  /* UDP payload (quic data: after the short header) */
	uint16_t len;
	uint8_t profile; /* enum dust_profile, from the UDP port */
	bool handed;     /* came over the handoff ring: never handed on again (quic.c) */
	bool ticket; /* the client's second flight: a keepalive back takes caddy's ticket size */
};

#define DGW_BUSY UINT64_MAX

struct dgw_hello; /* hello.h */

/*
 * The parking queues' bounds (pending.c, pubwait.c): entries, later
 * datagrams held behind each, and how long one may wait. The rings between
 * lcores are sized from them (sessmap.c).
 */
enum { DGW_PENDING_MAX = 1024, DGW_PENDING_HOLD = 8, DGW_PENDING_TIMEOUT_S = 10 };

/* Each module's own state, behind the worker's pointer to it (the module's header). */
struct dgw_pending_q;
struct dgw_pubwait_q;
struct dgw_slow_q;
struct dgw_sess_bl;
struct dgw_eph_pool;
struct dgw_replay_w;
struct dgw_poll_w;
struct dgw_lifecycle_w;
struct dgw_rtx; /* rtx.h, its worker side in rtx_w.h */
struct dgw_pace_w;

/*
 * dgw_PART_init of a module whose worker state is one zeroed, cache-aligned
 * allocation ("dgw_PART") behind w->FIELD; DGW_WORKER_PART adds the
 * dgw_PART_free of one that owns nothing else. The file that uses them
 * includes rte_malloc.h.
 */
#define DGW_WORKER_ALLOC(part, field)                                                              \
	int dgw_##part##_init(struct dgw_worker *w)                                                \
	{                                                                                          \
		w->field = rte_zmalloc("dgw_" #part, sizeof(*w->field), RTE_CACHE_LINE_SIZE);      \
		return w->field ? 0 : -ENOMEM;                                                     \
	}
#define DGW_WORKER_PART(part, field)                                                               \
	DGW_WORKER_ALLOC(part, field)                                                              \
	void dgw_##part##_free(struct dgw_worker *w)                                               \
	{                                                                                          \
		rte_free(w->field);                                                                \
		w->field = NULL;                                                                   \
	}

struct dgw_worker {
	struct dgw *gw;
	unsigned lcore;
	uint16_t wid;
	struct dust_session_table *tab;
	struct rte_ring *inbox; /* main -> this worker, SP/SC */
	struct rte_eth_dev_tx_buffer *net_txb;
	struct rte_eth_dev_tx_buffer *dlv_txb;
	struct dust_rng rng;
	struct dgw_eph_pool *eph; /* server ephemerals made off the packet path (eph.h) */
	struct rte_hash *cid_map; /* server CID -> quic session, for address moves (cid.h) */
	struct dgw_hello *hello;  /* quic hellos' first Initials (hello.c) */
	struct dgw_rtx *rtx;      /* answered quic flights awaiting confirmation (rtx_w.h) */
	/* a paired hello's first Initial while the hello is on the intro path */
	struct rte_mbuf *hello_first;
	struct rte_ring *handoff; /* this worker's CIDs' short headers from others, MP/SC (cid.h) */
	uint32_t now_s;
	uint64_t now_ms;
	/* TSC when the last RX burst was done; DGW_BUSY while one is handled */
	_Atomic uint64_t last_net_rx_tsc;
	_Atomic uint64_t last_dlv_rx_tsc;
	uint64_t first_rx_tsc;         /* for the summary's packet rate */
	struct dgw_replay_w *replay;   /* the capture's clock (replay.h) */
	struct dgw_lifecycle_w *life;  /* the full table's eviction cache (lifecycle.h) */
	struct dgw_poll_w *poll;       /* adaptive polling: idle since, the next nap (adaptive.h) */
	struct dgw_pending_q *pending; /* first uses waiting for durability (pending.h) */
	struct dgw_pubwait_q *pubwait; /* answers waiting for publication (pubwait.h) */
	struct dgw_slow_q *slow;       /* datagrams with no session, for their turn (slow.h) */
	struct dgw_sess_bl *bl;        /* RETIRED/RELEASE waiting for ring room (sessmap.c) */
	uint64_t pub_sent;             /* PUBLISH messages sent */
	_Atomic uint64_t pub_done;     /* of which the main lcore handled (written by main only) */
	struct dgw_cover_w *cover;     /* the exception path's flows, buckets, tap TX (cover.c) */
	struct dgw_pace_w *pace;       /* quic downstream pacing, or NULL when off (pace_w.h) */
	struct dgw_stats st;
} __rte_cache_aligned;

struct dgw {
	struct dgw_config cfg;
	struct dust_server srv;
	uint16_t net_port, dlv_port;
	uint16_t cover_port; /* the cover server's tap, when cover_on (cover.c) */
	bool cover_on;
	struct dgw_learn *learn;  /* the cover server's shape, learned (learn.c); NULL: off */
	struct dust_seen *hellos; /* quic hellos' first Initials seen (hello.c); shared */
	/*
	 * The first flight's shape (dgw_shape_pack): the configured one, then the
	 * learned. Written by the main lcore, read per answer by the workers.
	 */
	_Atomic uint64_t shape;
	uint32_t cid_seed; /* secret: which worker a server CID names (cid.c) */
	bool ports_owned;
	struct rte_ether_addr net_mac, dlv_mac;
	struct rte_ether_addr dlv_dst;
	struct rte_mempool *pool;
	unsigned nworkers;
	struct dgw_worker *w[DGW_MAX_WORKERS];
	/* session publication (sessmap.c) */
	uint32_t ninv;               /* invitations merged from the store (under pub_lock) */
	uint32_t pub_cap;            /* entries of pub[] */
	struct dgw_pub *pub;         /* swapped when it grows (see sessmap.c) */
	struct rte_hash *tunnel_map; /* struct dust_ipaddr -> invitation index; swapped too */
	unsigned maps_made;          /* tunnel maps created, for unique names */
	bool reload_failing;         /* live.c: the last reload failed (logged once) */
	bool revoke_retry;           /* sessmap.c: a REVOKE found its inbox full: scan again */
	uint64_t store_refused;      /* live.c: forged store records logged so far */
	bool store_down;             /* sessmap.c: etcd refused a binding (logged once) */
	bool deferred;               /* store commits on the main lcore (pending.c) */
	struct rte_ring *to_main;    /* workers -> main, MP/SC */
	struct rte_rcu_qsbr *rcu;
	struct rte_rcu_qsbr_dq *dq;
	/*
	 * main vs telemetry on pub[].wid/peer. A mutex, not a spinlock: both
	 * threads run on the main lcore's CPU, where a spinner can keep a
	 * preempted holder off the CPU for whole timeslices.
	 */
	pthread_mutex_t pub_lock;
	uint32_t published;
	_Atomic bool stop;     /* main lcore, a signal handler, a test driver: read by workers */
	_Atomic bool dlv_open; /* replay: delivery RX allowed */
	uint64_t start_tsc;
	/* replay.c: mbuf timestamp field and flag; tag index epoch asked / built */
	int ts_off;
	uint64_t ts_flag;
	_Atomic uint64_t want_epoch, tick_epoch;
	uint8_t net_csum; /* cfg.udp_csum resolved for the net port (never AUTO) */
	uint64_t csum_logged, csum_log_tsc; /* udp_csum drops at the last hint, and when */
};

extern struct dgw *dgw_global; /* for telemetry callbacks and signals */
/*
 * The global gateway held for reading from another thread (telemetry), or
 * NULL; dgw_destroy waits until every holder has released it.
 */
struct dgw *dgw_global_hold(void);
void dgw_global_release(void);

/*
 * The worker's layers, bottom up; each file calls only those below it
 * (tools/check-cycles checks it):
 *   sessmap.c, cid.c, eph.c, net.c (neigh.c)   publication, tables, wire
 *   dispose.c                                  drop, open, deliver, answer
 *   pending.c, pubwait.c, slow.c, pace.c       parking queues: hand back
 *   replay.c                                   the capture's clock
 *   lifecycle.c                                intro, live, retire, expire
 *   quic.c                                     the quic profile's dispatch
 *   decode.c, inbox.c, encode.c, worker.c      dispatch and the loop
 */

/* The lcore a worker runs on (LCORE_ID_ANY before dgw_run launches it): telemetry reads it. */
static inline unsigned dgw_worker_lcore(const struct dgw_worker *w)
{
	return __atomic_load_n(&w->lcore, __ATOMIC_RELAXED);
}

/* Whether dgw_stop was called: the loops' exit test. */
static inline bool dgw_stopping(const struct dgw *gw)
{
	return atomic_load_explicit(&gw->stop, memory_order_relaxed);
}

/* The first flight's shape now (learn.c installs the cover server's). */
static inline void dgw_shape_now(const struct dgw *gw, struct dgw_shape *sh)
{
	dgw_shape_unpack(atomic_load_explicit(&gw->shape, memory_order_relaxed), sh);
}

/* cover.c: is the exception path on? (then w->cover is set) */
static inline bool dgw_cover_on(const struct dgw_worker *w)
{
	return w->cover != NULL;
}

/*
 * stats.c / telemetry.c. A worker's counters have one writer, its own lcore,
 * and are read from other threads (telemetry, Prometheus, the main lcore's
 * summary): a write is a relaxed atomic load and store, with no locked
 * read-modify-write since no one else writes, and a read is a relaxed load.
 * On x86-64 that is a mov, an add and a mov, no lock prefix; but no data race
 * (C11 5.1.2.4, what ThreadSanitizer flags), and the compiler may not tear,
 * merge or drop the store. Only these helpers write them (tools/check-shared).
 */
static inline void dgw_stat_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static inline void dgw_ctr_add(struct dgw_worker *w, unsigned c, uint64_t n)
{
	dgw_stat_add(&w->st.ctr[c], n);
}

/* Take back n counted too early (a burst the tx queue did not take). */
static inline void dgw_ctr_sub(struct dgw_worker *w, unsigned c, uint64_t n)
{
	dgw_stat_add(&w->st.ctr[c], -n);
}

static inline void dgw_ctr_inc(struct dgw_worker *w, unsigned c)
{
	dgw_stat_add(&w->st.ctr[c], 1);
}

static inline void dgw_count_drops(struct dgw_worker *w, unsigned reason, uint64_t n)
{
	dgw_stat_add(&w->st.drop[reason], n);
}

static inline void dgw_count_drop(struct dgw_worker *w, unsigned reason)
{
	dgw_stat_add(&w->st.drop[reason], 1);
}

/* The one drop helper: m is counted under reason and freed (NULL: only counted). */
static inline void dgw_drop_m(struct dgw_worker *w, struct rte_mbuf *m, unsigned reason)
{
	dgw_count_drop(w, reason);
	rte_pktmbuf_free(m);
}

/*
 * Start loading the mbuf headers of a whole RX burst: the loops read each
 * one's data pointer to prefetch its data a few packets ahead, and an mbuf
 * header not in cache stalled that on every packet.
 */
static inline void dgw_prefetch_mbufs(struct rte_mbuf *const *pkts, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++)
		rte_prefetch0(pkts[i]);
}

/* s's address is new: limited until proved as st says, unless path_validation is off. */
static inline void dgw_path_start(struct dgw_worker *w, struct dust_session *s,
                                  enum dust_path_state st, size_t rx_bytes)
{
	dust_path_start(s, w->gw->cfg.path_validation ? st : DUST_PATH_VALID, rx_bytes, &w->rng);
}

static inline uint64_t dgw_mac_load(const struct rte_ether_addr *a)
{
	uint64_t v = 0;

	memcpy(&v, a->addr_bytes, 6);
	return v;
}

static inline void dgw_mac_store(struct rte_ether_addr *a, uint64_t v)
{
	memcpy(a->addr_bytes, &v, 6);
}

#endif /* DGW_PVT_H */
