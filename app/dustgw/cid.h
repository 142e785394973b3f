/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cid.c: the quic profile's connection IDs (SPEC §12): per worker, a
 * session's server CID maps to the session (w->cid_map), and a short
 * header that RSS sent to another worker comes over the owner's handoff
 * ring (w->handoff, which quic.c fills and drains; cid.c makes and frees
 * it). Included by its users only: quic.c, lifecycle.c, rtx.c and the
 * worker's setup.
 */
#ifndef DGW_CID_H
#define DGW_CID_H

#include "dgw_pvt.h"

/* A short header for the worker that owns its CID, over that worker's handoff ring. */
enum { DGW_HANDOFF_RING = 1024 };
struct dgw_handoff {
	struct rte_mbuf *m;
	struct dgw_rx rx;
};

/* The CID table and handoff ring (none without a quic port): 0 or -ENOMEM. */
int dgw_quic_worker_init(struct dgw_worker *w);
/* At exit: what still waits on the handoff ring is dropped (NULL: nothing). */
void dgw_quic_worker_free(struct dgw_worker *w);
/* The worker a server CID names (a keyed hash of it). */
uint16_t dgw_quic_cid_owner(const struct dgw *gw, const uint8_t *cid);
/* A new random CID for s: one that names this worker and no other session of it. */
void dgw_quic_cid_pick(struct dgw_worker *w, struct dust_session *s);
void dgw_quic_cid_add(struct dgw_worker *w, struct dust_session *s);
/* Only while the entry still names s: a moved session's copy owns it now. */
void dgw_quic_cid_del(struct dgw_worker *w, const struct dust_session *s);
/* The session whose server CID starts a short header's dg (after its first byte), or NULL. */
struct dust_session *dgw_quic_cid_find(struct dgw_worker *w, const uint8_t *dg, uint16_t len);

#endif /* DGW_CID_H */
