/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * quic.c: the quic profile's dispatch (SPEC §12), below the burst dispatch
 * and above the session lifecycle; its CIDs and handoff ring are cid.h's.
 * Named for the worker's side, as rtx_w.h and pace_w.h: quic.h is
 * libdust's. Included by its users only: decode.c and the loop.
 */
#ifndef DGW_QUIC_W_H
#define DGW_QUIC_W_H

#include "dgw_pvt.h"

/* *s's short header (a Dust packet or an ACK-sized datagram behind it) stripped; else *s = NULL */
bool dgw_quic_short(struct dgw_rx *rx, struct dust_session **s);
/* After dgw_quic_short: a client's ACK-sized datagram (counted and freed)? */
bool dgw_quic_ack(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                  struct dust_session *s);
/* Short headers other workers handed here, run as this worker's own misses; returns how many. */
unsigned dgw_quic_handoff_poll(struct dgw_worker *w);
/*
 * A quic-port datagram that no short header of a known session took: an
 * Initial, the client's second flight, a moved session's data (by its
 * CID), or the cover server's; m is consumed.
 */
void dgw_quic_miss(struct dgw_worker *w, struct rte_mbuf *m, struct dgw_rx *rx);
/* A client Initial that waited in the slow queue, run now (its session looked up again). */
void dgw_quic_initial_run(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx);

#endif /* DGW_QUIC_W_H */
