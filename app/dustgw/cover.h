/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cover server's exception path (SPEC §12.5): frames to the gateway's
 * address that are not Dust go to a kernel interface (a net_tap port)
 * where a real web server listens, and what the kernel sends there goes
 * out of the net port. Bottom layer: it calls nothing of the worker's.
 */
#ifndef DGW_COVER_H
#define DGW_COVER_H

#include <stdbool.h>
#include <stdint.h>

struct dgw;
struct dgw_worker;
struct dust_endpoint;
struct dust_session;
enum dust_drop;
struct rte_mbuf;

/** Create, configure and start the tap port and each worker's state. 0 or -errno. */
int dgw_cover_setup(struct dgw *gw);
/** Stop the tap port and free each worker's state. */
void dgw_cover_free(struct dgw *gw);

/** Is ep (on the quic port) a flow already handed to the cover server? */
bool dgw_cover_flow(struct dgw_worker *w, const struct dust_endpoint *ep);
/**
 * Hand frame m (its Ethernet header at the data offset) to the kernel,
 * or count it rate-dropped. With flow (a quic-port datagram's source) the
 * flow is remembered: its later datagrams follow without a Dust try.
 */
void dgw_cover_take(struct dgw_worker *w, struct rte_mbuf *m, const struct dust_endpoint *flow);
/**
 * A quic intro from ep refused with d (old: the live session of ep, or
 * NULL): taken for the cover server (true) when it is not Dust's, else
 * left to the caller to drop.
 */
bool dgw_cover_intro(struct dgw_worker *w, struct rte_mbuf *m, const struct dust_endpoint *ep,
                     const struct dust_session *old, enum dust_drop d);
/** Housekeeping: what the kernel sent out of the tap goes out of the net port. */
void dgw_cover_poll(struct dgw_worker *w);
/** Once a second: flows idle past the limit are forgotten (a slice per call). */
void dgw_cover_expire(struct dgw_worker *w);

#endif /* DGW_COVER_H */
