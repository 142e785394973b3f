/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker loop (one per lcore, one RX/TX queue pair per port) and the
 * main lcore's loop: RX burst, decode or encode, buffered TX drained on a
 * TSC deadline; housekeeping (clock, inbox, expiry, stats) on the same
 * deadline; an RCU quiescent state every iteration.
 */
#include <time.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "adaptive.h"
#include "decode.h"
#include "dgw_pvt.h"
#include "encode.h"
#include "eph.h"
#include "hello.h"
#include "hints.h"
#include "inbox.h"
#include "live.h"
#include "loopprof.h"
#include "pace_w.h"
#include "quic_w.h"
#include "replay.h"
#include "rtx_w.h"
#include "sessmap.h"
#include "slow.h"

static void clock_update(struct dgw_worker *w)
{
	struct timespec ts;

	if (w->gw->cfg.clock == DGW_CLOCK_CAPTURE)
		return; /* replay: the clock moves with the packets (replay.c) */
	clock_gettime(CLOCK_REALTIME, &ts);
	w->now_s = (uint32_t)ts.tv_sec;
	__atomic_store_n(&w->now_ms, (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000,
	                 __ATOMIC_RELAXED);
}

static void housekeeping(struct dgw_worker *w, uint64_t now_tsc, uint64_t *next_expire)
{
	struct dgw *gw = w->gw;

	DUST_PROF_LAP(OTHER);
	if (dgw_cover_on(w))
		dgw_cover_poll(w); /* the kernel's answers, into the net TX flushed next */
	rte_eth_tx_buffer_flush(gw->net_port, w->wid, w->net_txb);
	rte_eth_tx_buffer_flush(gw->dlv_port, w->wid, w->dlv_txb);
	DUST_PROF_LAP(TX);
	clock_update(w);
	dgw_worker_inbox(w);
	dgw_eph_refill(w);
	if (gw->cfg.clock == DGW_CLOCK_REAL) {
		dgw_rtx_run(w); /* PTO resends: every pass, a 205 ms timer needs more than 1 Hz */
		/*
		 * A held first Initial goes to the cover server when its hold ends,
		 * not up to a second later: a prober's replayed Initial is answered
		 * by the cover server about DGW_HELLO_HOLD_MS after it came.
		 */
		dgw_hello_expire(w);
	}
	if (now_tsc >= *next_expire && gw->cfg.clock == DGW_CLOCK_REAL) {
		dgw_worker_expire(w);
		dgw_cover_expire(w);
		*next_expire = now_tsc + rte_get_tsc_hz();
	}
	__atomic_store_n(&w->st.sessions, dust_session_table_live(w->tab), __ATOMIC_RELAXED);
}

/* One RX burst on each port; returns the frames read (adaptive polling). */
static uint16_t poll_once(struct dgw_worker *w, uint64_t now_tsc)
{
	struct dgw *gw = w->gw;
	struct rte_mbuf *pkts[DGW_BURST];
	uint16_t n, got;

	DUST_PROF_LAP(OTHER);
	n = got = rte_eth_rx_burst(gw->net_port, w->wid, pkts, DGW_BURST);
	DUST_PROF_LAP(RX);
	if (n) {
		if (unlikely(!w->first_rx_tsc))
			w->first_rx_tsc = now_tsc;
		dgw_ctr_add(w, DGW_CTR_NET_RX, n);
		if (gw->cfg.clock == DGW_CLOCK_CAPTURE && dgw_replay_clock(w, pkts, n))
			dgw_worker_expire(w);
		/*
		 * Busy while the burst is decoded, idle from when it is done: a
		 * burst of first-use intros (an fsync each) can outlast the idle
		 * limit, and replay must not stop or open delivery meanwhile.
		 */
		atomic_store_explicit(&w->last_net_rx_tsc, DGW_BUSY, memory_order_relaxed);
		dgw_decode_burst(w, pkts, n);
		atomic_store_explicit(&w->last_net_rx_tsc, rte_rdtsc(), memory_order_relaxed);
	}
	if (!atomic_load_explicit(&gw->dlv_open, memory_order_relaxed))
		return got;
	DUST_PROF_LAP(OTHER);
	n = rte_eth_rx_burst(gw->dlv_port, w->wid, pkts, DGW_BURST);
	DUST_PROF_LAP(RX);
	got += n;
	if (n) {
		dgw_ctr_add(w, DGW_CTR_DLV_RX, n);
		if (gw->cfg.clock == DGW_CLOCK_CAPTURE && dgw_replay_clock(w, pkts, n))
			dgw_worker_expire(w);
		atomic_store_explicit(&w->last_dlv_rx_tsc, DGW_BUSY, memory_order_relaxed);
		dgw_encode_burst(w, pkts, n);
		atomic_store_explicit(&w->last_dlv_rx_tsc, rte_rdtsc(), memory_order_relaxed);
	}
	return got;
}

int dgw_worker_main(void *arg)
{
	struct dgw_worker *w = arg;
	struct dgw *gw = w->gw;
	uint64_t drain = (rte_get_tsc_hz() + 999999) / 1000000 * gw->cfg.drain_us;
	uint64_t prev = 0, next_expire = 0;

	dust_rng_init(&w->rng);
	clock_update(w);
	rte_rcu_qsbr_thread_register(gw->rcu, w->wid);
	rte_rcu_qsbr_thread_online(gw->rcu, w->wid);
	dgw_poll_start(w);
	DGW_LOG(INFO, "worker %u on lcore %u: net queue %u, delivery queue %u, %s polling", w->wid,
	        w->lcore, w->wid, w->wid, dgw_poll_adaptive(w) ? "adaptive" : "busy");
	while (!dgw_stopping(gw)) {
		uint64_t now = rte_rdtsc();
		uint16_t got;

		if (now - prev >= drain) {
			housekeeping(w, now, &next_expire);
			prev = now;
		}
		got = poll_once(w, now);
		if (w->handoff)
			got += (uint16_t)dgw_quic_handoff_poll(w);
		if (dgw_slow_count(w))
			dgw_decode_slow(w, rte_rdtsc() - now, got >= DGW_BURST);
		if (w->pace)
			got += (uint16_t)RTE_MIN(dgw_pace_run(w, rte_rdtsc()), (unsigned)DGW_BURST);
		rte_rcu_qsbr_quiescent(gw->rcu, w->wid);
		dgw_poll_idle(w, got ? got : (uint16_t)(dgw_slow_count(w) != 0), now);
	}
	dgw_cover_poll(w);
	if (w->pace)
		dgw_pace_run(w, UINT64_MAX); /* what the wheel held goes now */
	rte_eth_tx_buffer_flush(gw->net_port, w->wid, w->net_txb);
	rte_eth_tx_buffer_flush(gw->dlv_port, w->wid, w->dlv_txb);
	rte_rcu_qsbr_thread_offline(gw->rcu, w->wid);
	rte_rcu_qsbr_thread_unregister(gw->rcu, w->wid);
	__atomic_store_n(&w->st.sessions, dust_session_table_live(w->tab), __ATOMIC_RELAXED);
	return 0;
}

void *dgw_worker_arg(struct dgw *gw, unsigned w)
{
	return w < gw->nworkers ? gw->w[w] : NULL;
}

void dgw_stop(struct dgw *gw)
{
	atomic_store_explicit(&gw->stop, true, memory_order_relaxed);
}

/*
 * Does anything still wait on a worker: a first use for its binding, an
 * answer for its publication, a queued datagram, a message? Replay opens
 * delivery only once nothing does (the replies need the sessions), and an
 * idle exit would lose it.
 */
static bool queued(const struct dgw *gw)
{
	for (unsigned i = 0; i < gw->nworkers; i++) {
		struct dgw_depths d;

		dgw_worker_depths(gw, i, &d);
		if (d.pending || d.pubwait || d.slow || d.inbox)
			return true;
	}
	return false;
}

/*
 * Milliseconds since the most recent RX burst on any worker was done (or
 * since start); 0 while a worker is in a burst. A worker's stamp may be
 * later than the now this lcore read (another CPU, a store since): not idle.
 */
static uint64_t idle_ms(struct dgw *gw, bool net_only)
{
	uint64_t last = gw->start_tsc, now;

	for (unsigned i = 0; i < gw->nworkers; i++) {
		last = RTE_MAX(
		    last, atomic_load_explicit(&gw->w[i]->last_net_rx_tsc, memory_order_relaxed));
		if (!net_only)
			last = RTE_MAX(last, atomic_load_explicit(&gw->w[i]->last_dlv_rx_tsc,
			                                          memory_order_relaxed));
	}
	now = rte_rdtsc();
	return now > last ? (now - last) * 1000 / rte_get_tsc_hz() : 0;
}

static void main_tick(struct dgw *gw, uint64_t now, uint64_t *next_store)
{
	dgw_main_messages(gw);
	dgw_hint_csum(gw, now);
	dgw_learn_tick(gw, now); /* the cover server's first-flight shape (learn.c) */
	if (gw->cfg.clock == DGW_CLOCK_CAPTURE)
		dgw_replay_main(gw);
	else if (now >= *next_store) {
		dgw_store_poll(gw); /* live.c: dust-invite create/revoke within 200 ms */
		*next_store = now + rte_get_tsc_hz() / 5;
	}
	if (!atomic_load_explicit(&gw->dlv_open, memory_order_relaxed) &&
	    idle_ms(gw, true) >= gw->cfg.dlv_hold_ms && rte_ring_count(gw->to_main) == 0 &&
	    !queued(gw)) {
		DGW_LOG(INFO, "delivery RX open");
		atomic_store_explicit(&gw->dlv_open, true, memory_order_release);
	}
	/* first uses held for their fsync are not done yet: stopping would lose them */
	if (gw->cfg.exit_on_idle_ms && idle_ms(gw, false) >= gw->cfg.exit_on_idle_ms &&
	    atomic_load_explicit(&gw->dlv_open, memory_order_relaxed) && !queued(gw)) {
		DGW_LOG(INFO, "idle for %u ms: stopping", gw->cfg.exit_on_idle_ms);
		dgw_stop(gw);
	}
}

int dgw_run(struct dgw *gw)
{
	unsigned lcore, i = 0;
	uint64_t next_store = 0;

	if (rte_lcore_count() < gw->nworkers + 1) {
		DGW_LOG(ERR, "%u queues need %u worker lcores plus the main lcore (have %u lcores)",
		        gw->nworkers, gw->nworkers, rte_lcore_count());
		return -EINVAL;
	}
	gw->start_tsc = rte_rdtsc();
	atomic_store(&gw->dlv_open, gw->cfg.dlv_hold_ms == 0);
	RTE_LCORE_FOREACH_WORKER(lcore)
	{
		if (i == gw->nworkers)
			break;
		/* telemetry may read it already */
		__atomic_store_n(&gw->w[i]->lcore, lcore, __ATOMIC_RELAXED);
		rte_eal_remote_launch(dgw_worker_main, gw->w[i++], lcore);
	}
	while (!dgw_stopping(gw)) {
		main_tick(gw, rte_rdtsc(), &next_store);
		rte_delay_us_sleep(200);
	}
	rte_eal_mp_wait_lcore();
	dgw_main_messages(gw);
	dgw_hint_csum(gw, rte_rdtsc());
	return 0;
}
