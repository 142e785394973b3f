/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Replay mode ([runtime] clock = capture, or --replay): the gateway's clock
 * is the capture's, read from the RX timestamps net_pcap puts in each mbuf,
 * so a capture replays the same on any day, at any speed, any number of
 * times (the store is read-only meanwhile, see gw.c).
 *
 * Each worker's clock is the newest timestamp it has seen, taken per RX
 * burst: Dust timestamps, intro windows, invitation expiry and idle expiry
 * (checked once per capture second) all read it. The store's tag index is
 * shared, so it follows the newest epoch any worker has reached: the main
 * lcore rebuilds it when a worker asks, and the worker waits for that
 * before it decodes the burst, which keeps the result independent of timing.
 */
#include <rte_malloc.h>
#include <rte_mbuf_dyn.h>
#include <rte_pause.h>

#include "dgw_pvt.h"
#include "pubwait.h"
#include "replay.h"

/* A worker's capture clock. */
struct dgw_replay_w {
	uint64_t us;            /* the newest timestamp seen (microseconds) */
	uint64_t next_expire_s; /* the next idle expiry, in capture seconds (0: none yet) */
	uint64_t no_ts;         /* net packets without a timestamp (the first is logged) */
};

DGW_WORKER_PART(replay, replay)

int dgw_replay_setup(struct dgw *gw)
{
	struct rte_eth_dev_info info;
	int off = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, NULL);
	int bit = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, NULL);

	if (gw->cfg.clock != DGW_CLOCK_CAPTURE)
		return 0;
	/*
	 * Only net_pcap stamps packets with the capture's wall-clock time (in
	 * microseconds); a NIC's RX timestamps count its own clock instead.
	 */
	if (rte_eth_dev_info_get(gw->net_port, &info) != 0 ||
	    strcmp(info.driver_name, "net_pcap") || off < 0 || bit < 0) {
		DGW_LOG(ERR,
		        "replay (clock = capture): net port %u (%s) gives no capture timestamps; "
		        "replay a capture with --vdev net_pcap0,rx_pcap=FILE, or set clock = real",
		        gw->net_port, info.driver_name ? info.driver_name : "?");
		return -ENOTSUP;
	}
	gw->ts_off = off;
	gw->ts_flag = UINT64_C(1) << bit;
	DGW_LOG(INFO, "replay: clock from the capture's timestamps, store read-only");
	return 0;
}

/* Wait until the main lcore has built the tag index for epoch e (or later). */
static void epoch_follow(struct dgw_worker *w, uint64_t e)
{
	struct dgw *gw = w->gw;
	uint64_t want = atomic_load_explicit(&gw->want_epoch, memory_order_relaxed);

	if (e <= atomic_load_explicit(&gw->tick_epoch, memory_order_acquire))
		return;
	while (want < e && !atomic_compare_exchange_weak(&gw->want_epoch, &want, e))
		;
	while (atomic_load_explicit(&gw->tick_epoch, memory_order_acquire) < e &&
	       !dgw_stopping(gw)) {
		/* No session is held here: the main lcore's RCU wait must not stall on us. */
		rte_rcu_qsbr_quiescent(gw->rcu, w->wid);
		rte_pause();
	}
}

/*
 * Replay: an intro's answer goes out where it always did, right after the
 * intro, once the main lcore has handled this worker's PUBLISH (the same in
 * every run). Only own-table slots are held here, none another lcore frees.
 */
void dgw_replay_publish_wait(struct dgw_worker *w, struct dust_session *s)
{
	uint64_t end = rte_rdtsc() + DGW_PENDING_TIMEOUT_S * rte_get_tsc_hz();

	while (atomic_load_explicit(&w->pub_done, memory_order_acquire) != w->pub_sent &&
	       !dgw_stopping(w->gw) && rte_rdtsc() < end) {
		rte_rcu_qsbr_quiescent(w->gw->rcu, w->wid);
		rte_pause();
	}
	if (atomic_load_explicit(&w->gw->pub[s->invite_idx].s, memory_order_acquire) == s)
		dgw_pubwait_done(w, s);
}

bool dgw_replay_clock(struct dgw_worker *w, struct rte_mbuf **pkts, uint16_t n)
{
	struct dgw *gw = w->gw;
	struct dgw_replay_w *r = w->replay;
	uint64_t us = r->us;
	bool due;

	for (uint16_t i = 0; i < n; i++) {
		if (likely(pkts[i]->ol_flags & gw->ts_flag))
			us = RTE_MAX(
			    us, *RTE_MBUF_DYNFIELD(pkts[i], gw->ts_off, rte_mbuf_timestamp_t *));
		else if (pkts[i]->port == gw->net_port && r->no_ts++ == 0)
			DGW_LOG(WARNING,
			        "replay: worker %u got a packet without a timestamp (port %u)",
			        w->wid, pkts[i]->port);
	}
	if (us == r->us)
		return false;
	r->us = us;
	__atomic_store_n(&w->now_ms, us / 1000, __ATOMIC_RELAXED);
	w->now_s = (uint32_t)(us / 1000000);
	epoch_follow(w, w->now_s / DUST_EPOCH_S);
	if (w->now_s < r->next_expire_s)
		return false;
	due = r->next_expire_s != 0;
	r->next_expire_s = (uint64_t)w->now_s + 1;
	return due;
}

void dgw_replay_main(struct dgw *gw)
{
	uint64_t want = atomic_load_explicit(&gw->want_epoch, memory_order_acquire);
	int rc;

	if (want <= atomic_load_explicit(&gw->tick_epoch, memory_order_relaxed))
		return;
	rc = dust_store_tick(gw->srv.store, want * DUST_EPOCH_S);
	if (rc < 0)
		DGW_LOG(ERR, "replay: tag index for epoch %" PRIu64 ": %s", want,
		        dust_last_error());
	if (rc == 1) {
		/* no lookup still holds the replaced index once each worker passed a QS */
		rte_rcu_qsbr_synchronize(gw->rcu, RTE_QSBR_THRID_INVALID);
		dust_store_reclaim(gw->srv.store);
	}
	atomic_store_explicit(&gw->tick_epoch, want, memory_order_release);
}
