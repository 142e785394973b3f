/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rtx.c's worker side: each worker's table of answered quic first flights
 * (struct dgw_rtx of rtx.h, behind w->rtx), their resends and their end
 * (SPEC §12.3). rtx.h stays free of DPDK and the worker for test_rtx.
 * Included by its users only: pubwait.c (the answer at PUBLISHED), quic.c
 * (a retransmitted hello), the session lifecycle, the loop and the
 * worker's setup.
 */
#ifndef DGW_RTX_W_H
#define DGW_RTX_W_H

#include "dgw_pvt.h"
#include "rtx.h"

/* 0 or -ENOMEM */
int dgw_rtx_init(struct dgw_worker *w);
/* At exit: every kept flight wiped (NULL: nothing). */
void dgw_rtx_free(struct dgw_worker *w);
/* s's first flight, sent at PUBLISHED (pubwait.c) and kept for resends; m is spent. */
void dgw_quic_answer(struct dgw_worker *w, struct rte_mbuf *m, struct dust_session *s,
                     const struct dust_quic_accept *acc, uint64_t mac);
/* An Initial from s's address with the DCID s's flight answered: answered again, m consumed. */
bool dgw_rtx_hello(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                   struct dust_session *s);
/* s leaves the table: its kept flight is wiped. */
void dgw_rtx_drop(struct dgw_worker *w, const struct dust_session *s);
/* The PTO timers: resends, confirmations, expiry. */
void dgw_rtx_run(struct dgw_worker *w);

#endif /* DGW_RTX_W_H */
