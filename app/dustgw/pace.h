/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic profile's downstream pacer (SPEC §12.4): a timing wheel that
 * holds a worker's sealed datagrams until their departure time, each lane
 * (session) spaced by gaps drawn from the cover's. The wheel knows no
 * packets and no clock: items are pointers, times are whatever unit the
 * caller counts in (TSC cycles in the gateway, a fake clock in its test).
 */
#ifndef DGW_PACE_H
#define DGW_PACE_H

#include <stdbool.h>
#include <stdint.h>

enum dgw_pace_verdict {
	DGW_PACE_NOW = 0,  /* due already: send it now, after what the wheel released */
	DGW_PACE_HELD = 1, /* in the wheel until its departure */
	DGW_PACE_FULL = 2, /* no room (entries, or past the wheel's horizon): drop it */
};

struct dgw_pace_ent {
	void *item;
	uint32_t next; /* the next entry of its slot (or of the free list) + 1; 0 = none */
};

struct dgw_pacer {
	uint64_t tick;  /* clock units per slot */
	uint64_t done;  /* every slot up to this absolute tick is released */
	uint32_t slots; /* a power of two: the horizon is slots * tick */
	uint32_t lanes; /* a power of two */
	uint32_t cap, n;
	uint32_t free;  /* the free list's first entry + 1 */
	uint32_t *head; /* per slot: its first and last entry + 1, FIFO */
	uint32_t *tail;
	uint64_t *last; /* per lane: the latest departure given */
	struct dgw_pace_ent *ent;
};

/* 0 or -ENOMEM; slots and lanes powers of two; now is the clock at start */
int dgw_pacer_init(struct dgw_pacer *p, uint32_t slots, uint32_t lanes, uint32_t cap, uint64_t tick,
                   uint64_t now);
void dgw_pacer_fini(struct dgw_pacer *p);

/*
 * item of lane leaves at max(now, the lane's last departure + gap). The
 * lane's order is kept: departures never go back, a slot is first in,
 * first out, and NOW comes only once every earlier slot is released.
 */
enum dgw_pace_verdict dgw_pacer_push(struct dgw_pacer *p, uint32_t lane, uint64_t now, uint64_t gap,
                                     void *item);

/*
 * Up to max items due by now into out, in departure order; the rest stay
 * for the next call. Returns how many.
 */
unsigned dgw_pacer_release(struct dgw_pacer *p, uint64_t now, void **out, unsigned max);

static inline unsigned dgw_pacer_held(const struct dgw_pacer *p)
{
	return p->n;
}

#endif /* DGW_PACE_H */
