/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Live invitations: the main lcore looks at the store's files a few times a
 * second (dust-invite create and revoke write them while dustgw runs),
 * merges what changed and keeps the tag index on the current epoch. A
 * revoked invitation loses its session at once. Workers never wait for any
 * of it: they see new entries through the index, revocations through a flag.
 */
#include <inttypes.h>
#include <time.h>

#include "dgw_pvt.h"
#include "live.h"
#include "sessmap.h"

/*
 * What the store merged: > 0 entries changed, 0 nothing, < 0 the reload
 * failed part-way. A failed reload may still have indexed new invitations
 * and applied revocations before its bad line (the file is read in order,
 * an etcd batch record by record): the caller finishes with what it took.
 */
static int reload(struct dgw *gw)
{
	int changed = dust_store_reload(gw->srv.store);

	if (changed < 0) {
		if (!gw->reload_failing)
			DGW_LOG(WARNING, "store %s: %s (serving what was loaded)",
			        gw->cfg.store_path, dust_last_error());
		gw->reload_failing = true;
		return changed;
	}
	if (gw->reload_failing)
		DGW_LOG(INFO, "store %s: read again", gw->cfg.store_path);
	gw->reload_failing = false;
	if (dust_store_refused(gw->srv.store) != gw->store_refused) {
		gw->store_refused = dust_store_refused(gw->srv.store);
		DGW_LOG(WARNING,
		        "store %s: %" PRIu64 " record(s) refused in all: not sealed under the "
		        "server key (written by someone without it)",
		        gw->cfg.store_path, gw->store_refused);
	}
	return changed;
}

/*
 * Invitations the store indexed and pub[] does not cover yet. Checked on
 * every poll, not only after a clean reload: a worker finds an indexed
 * invitation by its tag whatever the reload returned, and the main lcore
 * drops messages for an index past gw->ninv. A merge that failed (no
 * memory) is tried again on the next poll.
 */
static void merge(struct dgw *gw)
{
	int rc;

	if (dust_store_count(gw->srv.store) > gw->ninv && (rc = dgw_sessmap_merge(gw)) != 0)
		DGW_LOG(ERR, "new invitations not served: %s", strerror(-rc));
}

void dgw_store_poll(struct dgw *gw)
{
	struct dust_store *st = gw->srv.store;
	int changed = reload(gw);
	unsigned revoked = 0;

	/* pub[] and the tunnel map first: a new entry is findable after the tick */
	merge(gw);
	if (dust_store_tick(st, (uint64_t)time(NULL)) == 1) {
		/* no lookup can still hold the replaced index once each worker passed a QS */
		rte_rcu_qsbr_synchronize(gw->rcu, RTE_QSBR_THRID_INVALID);
		dust_store_reclaim(st);
	}
	/* a failed reload may have applied revocations before its bad record */
	if (changed != 0 || gw->revoke_retry) {
		revoked = dgw_sessmap_revoke(gw);
		if (changed > 0 || revoked)
			DGW_LOG(INFO,
			        "store generation %" PRIu64
			        ": %u invitations, %u session(s) revoked",
			        dust_store_generation(st), gw->ninv, revoked);
	}
}
