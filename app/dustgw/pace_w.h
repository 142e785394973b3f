/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pace.c's worker side: quic datagrams toward clients leave at the cover's
 * gaps (SPEC §12.4), one timing wheel (pace.h) per worker, behind w->pace
 * (NULL when pacing is off). pace.h stays free of DPDK and the worker for
 * test_pace. Included by its users only: the encoder, the loop and the
 * worker's setup.
 */
#ifndef DGW_PACE_W_H
#define DGW_PACE_W_H

#include "dgw_pvt.h"

/* 0 or -ENOMEM; w->pace stays NULL when pacing is off (or the clock is the capture's). */
int dgw_pace_init(struct dgw_worker *w);
/* At exit: what the wheel still holds is freed unsent (NULL: nothing). */
void dgw_pace_free(struct dgw_worker *w);
/* With w->pace set: m, sealed for s, leaves now or at its departure; m is consumed. */
void dgw_pace_tx(struct dgw_worker *w, struct rte_mbuf *m, const struct dust_session *s);
/*
 * With w->pace set: what is due by now_tsc leaves (all of it at UINT64_MAX,
 * at stop); returns what it sent plus what it still holds (a worker holding
 * datagrams does not nap).
 */
unsigned dgw_pace_run(struct dgw_worker *w, uint64_t now_tsc);

#endif /* DGW_PACE_W_H */
