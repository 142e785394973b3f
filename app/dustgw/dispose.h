/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dispose.c: the bottom of the decode path, what becomes of a datagram once
 * its fate is known (drops: dgw_drop_m in dgw_pvt.h), and the quic first
 * flight's datagrams. It calls nothing above it. Included by its users
 * only: the dispatch (decode.c, quic.c), the session lifecycle, pubwait.c
 * and rtx.c (the first flights it keeps).
 */
#ifndef DGW_DISPOSE_H
#define DGW_DISPOSE_H

#include "dgw_pvt.h"

/* Open the chained Dust packets of rx->dg from off with s (one datagram, off the burst). */
void dgw_open(struct dgw_worker *w, struct dust_session *s, const struct dgw_rx *rx, size_t off,
              struct dust_rx_result *res);
/* Deliver the segments of an opened datagram, then any keepalive it asks for; m is consumed. */
void dgw_dispose(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                 struct dust_session *s, const struct dust_rx_result *res, bool ka);
/*
 * A datagram of s's, from its address, under any §6 packet: if it opens as
 * a compact packet (SPEC §6.5), its compressed inner ACK is rebuilt and
 * delivered (a copy: the caller frees the datagram) and true returned;
 * false when it does not open (a client's ACK-sized datagram), s untouched.
 */
bool dgw_dispose_compact(struct dgw_worker *w, struct dust_session *s, const struct dgw_rx *rx);
/* s moved to a new address: ask it to echo a fresh cookie (SPEC §9.1). */
void dgw_path_challenge(struct dgw_worker *w, struct dust_session *s, uint64_t mac);

/* Which sends of a first flight kept until the client confirms (rtx.c, SPEC §12.3) */
enum dgw_flight {
	DGW_FLIGHT_ANSWER,        /* the answer to an accepted hello: ACK, answer, tail (, 1-RTT) */
	DGW_FLIGHT_AGAIN,         /* a retransmitted hello: an ACK-only Initial of what came */
	DGW_FLIGHT_PTO_INITIAL,   /* on the PTO: the Initial alone twice, within the limit */
	DGW_FLIGHT_PTO_HANDSHAKE, /* on the next: the Handshake packet alone, then the tail */
	DGW_FLIGHT_ACK_ALONE,     /* ANSWER's ACK-only Initial alone: the rest is held */
	DGW_FLIGHT_HELD,          /* then the rest of ANSWER: answer, tail (, 1-RTT) */
};
/* One first flight of s toward its peer, kept in e (rtx.h); 0 when all of it went out. */
struct dgw_rtx_e;
int dgw_quic_flight(struct dgw_worker *w, struct dust_session *s, struct dgw_rtx_e *e,
                    enum dgw_flight kind);
/* The Handshake ACK after s's client's second flight opened (SPEC §12.3). */
void dgw_quic_hs_ack(struct dgw_worker *w, struct dust_session *s, uint64_t mac);
/* caddy's HANDSHAKE_DONE after it, 24 or 25 bytes of nothing (DUST_QUIC_DONE_BYTES). */
void dgw_quic_done(struct dgw_worker *w, struct dust_session *s, uint64_t mac);

#endif /* DGW_DISPOSE_H */
