/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lifecycle.c: a worker's sessions from intro to retirement. Above the
 * parking queues and dispose.c, below the dispatch. Its state is its own
 * (struct dgw_lifecycle_w, behind w->life: the full table's eviction
 * cache). Included by its users only: the dispatch (decode.c, quic.c,
 * inbox.c) and the worker's setup.
 */
#ifndef DGW_LIFECYCLE_H
#define DGW_LIFECYCLE_H

#include "dgw_pvt.h"

/* 0 or -ENOMEM */
int dgw_lifecycle_init(struct dgw_worker *w);
/* At exit (NULL: nothing). */
void dgw_lifecycle_free(struct dgw_worker *w);
/* A datagram that may be an intro (old: the endpoint's session, old_drop its open's verdict). */
void dgw_intro_path(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                    struct dust_session *old, enum dust_drop old_drop);
/* An accepted intro's session goes live (s NULL: a slot made for tmp), its answer held. */
void dgw_intro_live(struct dgw_worker *w, struct dust_session *s, struct dust_session *tmp,
                    struct rte_mbuf *m, const struct dgw_rx *rx, size_t consumed,
                    const struct dust_quic_accept *acc, bool first_use);
/* A datagram of s, opened: held while s's intro is not answered yet, else disposed. */
void dgw_datagram_done(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                       struct dust_session *s, const struct dust_rx_result *res, bool ka);
/* s leaves the table: its held answer, CID and kept flight go, RETIRED is sent. */
void dgw_sess_retire(struct dgw_worker *w, struct dust_session *s);
/* Sessions idle past idle_timeout_s leave the table; returns how many. */
unsigned dgw_sess_expire(struct dgw_worker *w);

#endif /* DGW_LIFECYCLE_H */
