/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker's pool of server ephemerals: every accepted intro (random and
 * quic profile) takes a fresh share (SPEC.md §5.1, §12.3). Housekeeping
 * makes them off the packet path; an intro only borrows the top one and
 * takes it once it was accepted, so a datagram that fails costs no keygen
 * and spends nothing from the pool.
 */
#include "dgw_pvt.h"

/* One X25519 base-point multiplication per call: housekeeping keeps the pool full. */
void dgw_eph_refill(struct dgw_worker *w)
{
	if (w->neph < DGW_EPH_POOL && dust_eph_generate(&w->eph[w->neph]) == 0)
		w->neph++;
}

/* The share an intro may use, or NULL (empty pool: libdust makes one after the checks). */
const struct dust_eph *dgw_eph_peek(const struct dgw_worker *w)
{
	return w->neph ? &w->eph[w->neph - 1] : NULL;
}

/* An accepted intro used the top share: it is never used again. */
void dgw_eph_spent(struct dgw_worker *w, const struct dust_eph *eph)
{
	if (eph && w->neph && eph == &w->eph[w->neph - 1])
		dust_eph_wipe(&w->eph[--w->neph]);
}

void dgw_eph_free(struct dgw_worker *w)
{
	for (unsigned i = 0; i < w->neph; i++)
		dust_eph_wipe(&w->eph[i]);
	w->neph = 0;
}
