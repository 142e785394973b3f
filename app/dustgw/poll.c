/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Adaptive polling ([runtime] poll = adaptive): a worker whose queues stay
 * empty spins for 1 ms, then naps, each nap twice the last up to
 * poll_nap_max_us, so an idle gateway costs little CPU and a packet after
 * a silence waits at most one nap. Buffered TX is flushed before a nap.
 * (RX interrupts would wake sooner, but DPDK 22.11's net_af_packet has none.)
 */
#include <sys/prctl.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "adaptive.h"
#include "dgw_pvt.h"

enum {
	SPIN_US = 1000, /* empty polls for this long before the first nap: gaps in
	                   traffic shorter than this never meet a nap */
	NAP_MIN_US = 5, /* the first nap */
	SLACK_NS = 1000 /* timer slack of a napping worker (Linux default: 50 us) */
};

struct dgw_poll_w {
	bool adaptive;
	uint64_t idle_since; /* TSC of the first empty poll; 0: not idle */
	uint32_t nap_us;     /* the last nap; 0: none since the last packet */
};

static bool is_replay(const struct dgw_config *cfg)
{
	return cfg->exit_on_idle_ms || cfg->dlv_hold_ms || cfg->clock == DGW_CLOCK_CAPTURE;
}

DGW_WORKER_PART(poll, poll)

void dgw_poll_start(struct dgw_worker *w)
{
	const struct dgw_config *cfg = &w->gw->cfg;
	struct dgw_poll_w *p = w->poll;

	p->adaptive =
	    cfg->poll == DGW_POLL_ADAPTIVE || (cfg->poll == DGW_POLL_AUTO && !is_replay(cfg));
	p->idle_since = 0;
	p->nap_us = 0;
	/* a nap of 5 us must not become 55: the slack bounds the wake-up */
	if (p->adaptive)
		(void)prctl(PR_SET_TIMERSLACK, SLACK_NS, 0, 0, 0);
}

bool dgw_poll_adaptive(const struct dgw_worker *w)
{
	return w->poll->adaptive;
}

static void nap(uint32_t us)
{
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};

	nanosleep(&ts, NULL);
}

void dgw_poll_idle(struct dgw_worker *w, uint16_t got, uint64_t now_tsc)
{
	struct dgw *gw = w->gw;
	struct dgw_poll_w *p = w->poll;

	if (!p->adaptive)
		return;
	if (got) {
		p->idle_since = 0;
		p->nap_us = 0;
		return;
	}
	if (!p->idle_since) {
		p->idle_since = now_tsc;
		return;
	}
	if (now_tsc - p->idle_since < SPIN_US * rte_get_tsc_hz() / 1000000)
		return;
	if (!p->nap_us) {
		/* nothing buffered may wait out the naps */
		rte_eth_tx_buffer_flush(gw->net_port, w->wid, w->net_txb);
		rte_eth_tx_buffer_flush(gw->dlv_port, w->wid, w->dlv_txb);
	}
	p->nap_us = p->nap_us ? RTE_MIN(p->nap_us * 2, gw->cfg.poll_nap_max_us) : NAP_MIN_US;
	nap(p->nap_us);
}
