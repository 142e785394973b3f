/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pubwait.c: an accepted intro's answer held until the main lcore has
 * published its session (PUBLISHED). The queue's state is its own (struct
 * dgw_pubwait_q, behind w->pubwait). Included by its users only: the intro
 * path and the session lifecycle, the inbox, replay and the worker's setup.
 */
#ifndef DGW_PUBWAIT_H
#define DGW_PUBWAIT_H

#include "dgw_pvt.h"

struct dgw_pubwait_q;

/* 0 or -ENOMEM */
int dgw_pubwait_init(struct dgw_worker *w);
/* At exit: what still waits is dropped, never answered. */
void dgw_pubwait_free(struct dgw_worker *w);
/*
 * Hold s's answer (m, its chained data res, the quic accept acc) until
 * PUBLISHED(s). Full (DGW_PENDING_MAX): false, and the caller retires s and
 * drops m.
 */
bool dgw_pubwait_hold(struct dgw_worker *w, struct dust_session *s, struct rte_mbuf *m,
                      const struct dgw_rx *rx, const struct dust_rx_result *res,
                      const struct dust_quic_accept *acc);
/*
 * A datagram of s, opened as res: held behind s's answer (true), or dropped
 * and counted pending_full (true: DGW_PENDING_HOLD held already); false
 * when s's answer does not wait, or when nothing of it opened.
 */
bool dgw_pubwait_take(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                      const struct dust_session *s, const struct dust_rx_result *res);
/* PUBLISHED(s): the answer goes, then what was held, in order (dispose.c). */
void dgw_pubwait_done(struct dgw_worker *w, struct dust_session *s);
/* s leaves the table: its answer and what was held are dropped, counted unpublished. */
void dgw_pubwait_drop(struct dgw_worker *w, const struct dust_session *s);
/*
 * The session of the oldest answer, when it has waited DGW_PENDING_TIMEOUT_S
 * or longer at now_tsc, for the caller to retire; else NULL.
 */
struct dust_session *dgw_pubwait_expired(const struct dgw_worker *w, uint64_t now_tsc);
/*
 * Map slots looked at so far by the owner's lookups (each a probe of the
 * open-addressing index): the unit test's check that asking whether a
 * session waits stays a few probes with DGW_PENDING_MAX waiting (issue 21
 * F3), where a scan of the list took one per waiting answer. Owner only.
 */
uint64_t dgw_pubwait_probes(const struct dgw_worker *w);
/*
 * How many answers wait; any lcore may ask. Inline, for the data path: the count
 * is the first member of struct dgw_pubwait_q (a pointer to a struct points to
 * its first member; pubwait.c asserts the offset).
 */
static inline unsigned dgw_pubwait_count(const struct dgw_worker *w)
{
	return __atomic_load_n((const unsigned *)(const void *)w->pubwait, __ATOMIC_RELAXED);
}

#endif /* DGW_PUBWAIT_H */
