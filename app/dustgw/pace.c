/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic profile's pacer (SPEC §12.4): caddy (quic-go) sends a burst's
 * datagrams some microseconds apart, where the gateway's TX burst would
 * send them back to back. Each worker keeps a timing wheel of one-
 * microsecond slots; a quic session's sealed datagram leaves at
 * max(now, its session's last departure + a gap drawn from the cover's,
 * capped at 4/5 of its own mean interval over the last millisecond: the
 * tunnel's throughput is never held under what it brings, gaps.h) and the
 * loop releases what is due. Push and release are O(1) per
 * datagram (release also steps over empty slots, one per microsecond
 * passed, at most the wheel's size); the wheel holds at most cap mbufs
 * and a datagram past its horizon or its cap is dropped and counted, as a
 * full queue drops: the tunnel's TCP then slows to the paced rate.
 */
#include <errno.h>
#include <stdlib.h>

#include <rte_cycles.h>

#include "dgw_pvt.h"
#include "gaps.h"
#include "net.h"
#include "pace.h"
#include "pace_w.h"

int dgw_pacer_init(struct dgw_pacer *p, uint32_t slots, uint32_t lanes, uint32_t cap, uint64_t tick,
                   uint64_t now)
{
	memset(p, 0, sizeof(*p));
	p->head = calloc(slots, sizeof(*p->head));
	p->tail = calloc(slots, sizeof(*p->tail));
	p->last = calloc(lanes, sizeof(*p->last));
	p->ent = calloc(cap, sizeof(*p->ent));
	if (!p->head || !p->tail || !p->last || !p->ent) {
		dgw_pacer_fini(p);
		return -ENOMEM;
	}
	p->tick = tick;
	p->done = now / tick;
	p->slots = slots;
	p->lanes = lanes;
	p->cap = cap;
	for (uint32_t i = 0; i < cap; i++)
		p->ent[i].next = i + 2 <= cap ? i + 2 : 0;
	p->free = cap ? 1 : 0;
	return 0;
}

void dgw_pacer_fini(struct dgw_pacer *p)
{
	free(p->head);
	free(p->tail);
	free(p->last);
	free(p->ent);
	memset(p, 0, sizeof(*p));
}

enum dgw_pace_verdict dgw_pacer_push(struct dgw_pacer *p, uint32_t lane, uint64_t now, uint64_t gap,
                                     void *item)
{
	uint64_t *last = &p->last[lane & (p->lanes - 1)];
	uint64_t dep = RTE_MAX(now, *last + gap), at = dep / p->tick;
	uint32_t slot, e;

	if (!p->n && p->done < now / p->tick)
		p->done = now / p->tick; /* nothing held: the wheel is where the clock is */
	if (at <= p->done) {
		*last = dep;
		return DGW_PACE_NOW;
	}
	if (at - p->done >= p->slots || !p->free)
		return DGW_PACE_FULL; /* the lane's last stays: the next one may fit */
	*last = dep;
	e = p->free - 1;
	p->free = p->ent[e].next;
	p->ent[e].item = item;
	p->ent[e].next = 0;
	slot = (uint32_t)(at & (p->slots - 1));
	if (p->tail[slot])
		p->ent[p->tail[slot] - 1].next = e + 1;
	else
		p->head[slot] = e + 1;
	p->tail[slot] = e + 1;
	p->n++;
	return DGW_PACE_HELD;
}

/* Pop slot's entries into out[got..max); true when the slot is empty. */
static bool slot_drain(struct dgw_pacer *p, uint32_t slot, void **out, unsigned *got, unsigned max)
{
	while (p->head[slot] && *got < max) {
		uint32_t e = p->head[slot] - 1;

		out[(*got)++] = p->ent[e].item;
		p->head[slot] = p->ent[e].next;
		p->ent[e].next = p->free;
		p->free = e + 1;
		p->n--;
	}
	if (p->head[slot])
		return false;
	p->tail[slot] = 0;
	return true;
}

unsigned dgw_pacer_release(struct dgw_pacer *p, uint64_t now, void **out, unsigned max)
{
	uint64_t to = now / p->tick;
	unsigned got = 0;

	/* every entry lies within slots ticks of done: past that, nothing to walk */
	while (p->done < to && p->n) {
		if (!slot_drain(p, (uint32_t)((p->done + 1) & (p->slots - 1)), out, &got, max))
			return got;
		p->done++;
	}
	if (p->done < to)
		p->done = to;
	return got;
}

/* ---- The gateway's side: one wheel per worker, TSC time ---------------------------------- */

enum {
	PACE_SLOTS = 8192,   /* of 1 us: an 8 ms horizon */
	PACE_LANES = 4096,   /* sessions by invitation index; a shared lane paces both */
	PACE_CAP_MIN = 64,   /* mbufs held per worker, at least */
	PACE_CAP_MAX = 4096, /* and at most: never more than a quarter of the pool */
};

struct dgw_pace_w {
	struct dgw_pacer wheel;
	struct dust_pace_rate rate[PACE_LANES]; /* per lane, in TSC cycles */
	uint64_t hz;                            /* TSC cycles per second */
	bool pending;                           /* sent into the TX buffer since the last flush */
};

int dgw_pace_init(struct dgw_worker *w)
{
	const struct dgw_config *cfg = &w->gw->cfg;
	uint32_t cap = cfg->mbufs / (4 * w->gw->nworkers);
	uint64_t hz = rte_get_tsc_hz();
	struct dgw_pace_w *p;

	/* the capture's clock is no time to wait for: replay sends unpaced */
	if (!cfg->pacing || !cfg->quic_port || cfg->clock == DGW_CLOCK_CAPTURE)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	cap = RTE_MAX(RTE_MIN(cap, (uint32_t)PACE_CAP_MAX), (uint32_t)PACE_CAP_MIN);
	if (dgw_pacer_init(&p->wheel, PACE_SLOTS, PACE_LANES, cap, (hz + 999999) / 1000000,
	                   rte_rdtsc()) != 0) {
		free(p);
		return -ENOMEM;
	}
	p->hz = hz;
	w->pace = p;
	return 0;
}

void dgw_pace_free(struct dgw_worker *w)
{
	void *out[DGW_BURST];
	unsigned n;

	if (!w->pace)
		return;
	while ((n = dgw_pacer_release(&w->pace->wheel, UINT64_MAX, out, DGW_BURST)) != 0)
		for (unsigned i = 0; i < n; i++)
			rte_pktmbuf_free(out[i]);
	dgw_pacer_fini(&w->pace->wheel);
	free(w->pace);
	w->pace = NULL;
}

void dgw_pace_tx(struct dgw_worker *w, struct rte_mbuf *m, const struct dust_session *s)
{
	struct dgw_pace_w *p = w->pace;
	uint64_t now = rte_rdtsc();
	uint64_t gap = (uint64_t)dust_quic_gap_ns(DUST_ROLE_SERVER, &w->rng) * p->hz / 1000000000u;
	uint64_t cap = dust_pace_cap(&p->rate[s->invite_idx & (PACE_LANES - 1)], now, p->hz / 1000);

	switch (dgw_pacer_push(&p->wheel, s->invite_idx, now, RTE_MIN(gap, cap), m)) {
	case DGW_PACE_NOW:
		p->pending = true;
		dgw_net_tx(w, m);
		break;
	case DGW_PACE_HELD:
		dgw_ctr_inc(w, DGW_CTR_PACED);
		break;
	case DGW_PACE_FULL:
		dgw_drop_m(w, m, DGW_DROP_PACE_FULL);
		break;
	}
}

/*
 * Send what is due by now (all of it when now is UINT64_MAX, at stop).
 * A released datagram leaves at once: the TX buffer is flushed behind it,
 * not on the drain deadline that would bunch a burst up again.
 */
unsigned dgw_pace_run(struct dgw_worker *w, uint64_t now)
{
	struct dgw_pace_w *p = w->pace;
	void *out[DGW_BURST];
	unsigned n, sent = 0;

	do {
		n = dgw_pacer_release(&p->wheel, now, out, DGW_BURST);
		for (unsigned i = 0; i < n; i++)
			dgw_net_tx(w, out[i]);
		sent += n;
	} while (n == DGW_BURST);
	if (sent || p->pending)
		rte_eth_tx_buffer_flush(w->gw->net_port, w->wid, w->net_txb);
	p->pending = false;
	return sent + dgw_pacer_held(&p->wheel);
}
