/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sessmap.c: session publication, the tunnel map and RCU, at the bottom of
 * the worker; the messages between lcores and their protocol are written
 * at the top of sessmap.c (the enum and struct dgw_pub stay in dgw_pvt.h,
 * read by the encoders and telemetry). Included by its users only: the
 * session lifecycle and quic.c (PUBLISH, RETIRED), dispose.c (the client's
 * MAC), inbox.c (the RETIRED backlog), the main lcore's loop, live.c, the
 * gateway's setup and the tests that drive the messages (gw_msgs.c).
 */
#ifndef DGW_SESSMAP_H
#define DGW_SESSMAP_H

#include "dgw_pvt.h"

/* pub[], the tunnel map, RCU and its defer queue, the rings, the workers' backlogs: 0 or -errno */
int dgw_sessmap_create(struct dgw *gw);
/* At exit: whatever a failed create left, NULL pointers included. */
void dgw_sessmap_free(struct dgw *gw);

/* A worker's: s is the live session of its invitation (PUBLISH, from the client's mac). */
void dgw_sess_publish(struct dgw_worker *w, struct dust_session *s, uint64_t mac);
/* s left its owner's table (lifecycle.c): main unpublishes it and defers its slot. */
void dgw_sess_retired(struct dgw_worker *w, struct dust_session *s);
/* RETIREDs that waited for room in the main ring, oldest first (housekeeping). */
void dgw_sess_backlog_flush(struct dgw_worker *w);
/* The client's source MAC for replies, when s is its invitation's published session. */
void dgw_sess_note_mac(struct dgw_worker *w, const struct dust_session *s, uint64_t mac);

/* The main lcore's: the workers' messages, the deferred releases and their backlog. */
void dgw_main_messages(struct dgw *gw);
/* The store's new invitations into pub[] and the tunnel map (live.c): 0 or -errno. */
int dgw_sessmap_merge(struct dgw *gw);
/* REVOKE to the owner of every published session of a revoked invitation; returns how many. */
unsigned dgw_sessmap_revoke(struct dgw *gw);

#endif /* DGW_SESSMAP_H */
