/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * decode.c: the burst dispatch of what arrives on the net port, at the top
 * of the worker with inbox.c and encode.c; it runs what the parking queues
 * release (slow.c, pending.c). Included by its users only: the loop and
 * inbox.c (first uses released by DURABLE or expiry).
 */
#ifndef DGW_DECODE_H
#define DGW_DECODE_H

#include "dgw_pvt.h"

struct dgw_pending; /* pending.h */

/*
 * A datagram whose burst lookup missed, or whose session changed in this
 * burst; or one held while its endpoint's first use became durable.
 */
void dgw_decode_one(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx);
/* A burst from the net port; every mbuf is consumed. */
void dgw_decode_burst(struct dgw_worker *w, struct rte_mbuf **pkts, uint16_t n);
/* After a poll that took data_tsc: the slow queue's share of the worker (slow.c). */
void dgw_decode_slow(struct dgw_worker *w, uint64_t data_tsc, bool saturated);
/* First uses released by pending.c (DURABLE, or expired), finished in order. */
void dgw_decode_released(struct dgw_worker *w, struct dgw_pending *p, unsigned n,
                         enum dust_drop outcome);

#endif /* DGW_DECODE_H */
