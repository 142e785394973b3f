/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A worker's side of the messages from the main lcore (sessmap.c has the
 * protocol) and its once-a-second expiry: the top of the worker with the
 * burst dispatch. Queues hand back what they release; it is run from here.
 */
#include <rte_cycles.h>

#include "decode.h"
#include "dgw_pvt.h"
#include "inbox.h"
#include "lifecycle.h"
#include "pending.h"
#include "pubwait.h"
#include "sessmap.h"

/*
 * Once a second: first uses whose DURABLE never came (main ring full) or
 * came too late are refused, answers whose PUBLISHED never came retire
 * their session, idle sessions leave.
 */
void dgw_worker_expire(struct dgw_worker *w)
{
	struct dgw_pending *p;
	struct dust_session *s;
	uint64_t now;

	if (dgw_pending_count(w)) {
		unsigned n = dgw_pending_expire(w, rte_rdtsc(), &p);

		dgw_decode_released(w, p, n, DUST_DROP_INTRO_PERSIST);
	}
	now = rte_rdtsc();
	while (dgw_pubwait_count(w) && (s = dgw_pubwait_expired(w, now)))
		dgw_sess_retire(w, s); /* drops the entry (dgw_pubwait_drop) */
	dgw_ctr_add(w, DGW_CTR_SESS_EXPIRED, dgw_sess_expire(w));
}

void dgw_worker_inbox(struct dgw_worker *w)
{
	struct dgw_msg m[32];
	unsigned n;

	dgw_sess_backlog_flush(w); /* RETIREDs the main ring had no room for */
	n = rte_ring_dequeue_burst_elem(w->inbox, m, sizeof(m[0]), RTE_DIM(m), NULL);
	for (unsigned i = 0; i < n; i++) {
		struct dust_session *s = m[i].s;

		if (m[i].type == DGW_MSG_RELEASE) {
			dust_session_table_release(w->tab, s);
		} else if (m[i].type == DGW_MSG_PUBLISHED) {
			dgw_pubwait_done(w, s);
		} else if (m[i].type == DGW_MSG_DURABLE) {
			struct dgw_pending *p;
			unsigned np = dgw_pending_done(w, m[i].idx, &p);

			dgw_decode_released(w, p, np, (enum dust_drop)m[i].mac);
		} else if ((m[i].type == DGW_MSG_EVICT || m[i].type == DGW_MSG_REVOKE) &&
		           s->state == DUST_SESSION_LIVE && s->invite_idx == m[i].idx) {
			dgw_sess_retire(w, s);
			dgw_ctr_inc(w, m[i].type == DGW_MSG_EVICT ? DGW_CTR_SESS_EVICTED
			                                          : DGW_CTR_SESS_REVOKED);
		}
	}
}
