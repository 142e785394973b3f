/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker's pool of server ephemerals: every accepted intro (random and
 * quic profile) takes a fresh share (SPEC.md §5.1, §12.3). Housekeeping
 * makes them off the packet path; an intro only borrows the top one and
 * takes it once it was accepted, so a datagram that fails costs no keygen
 * and spends nothing from the pool.
 */
#include <rte_malloc.h>

#include "dgw_pvt.h"
#include "eph.h"

enum { EPH_POOL = 16 };

struct dgw_eph_pool {
	struct dust_eph eph[EPH_POOL];
	unsigned n;
};

DGW_WORKER_ALLOC(eph, eph)

void dgw_eph_refill(struct dgw_worker *w)
{
	struct dgw_eph_pool *p = w->eph;

	if (p->n < EPH_POOL && dust_eph_generate(&p->eph[p->n]) == 0)
		p->n++;
}

const struct dust_eph *dgw_eph_peek(const struct dgw_worker *w)
{
	const struct dgw_eph_pool *p = w->eph;

	return p->n ? &p->eph[p->n - 1] : NULL;
}

void dgw_eph_spent(struct dgw_worker *w, const struct dust_eph *eph)
{
	struct dgw_eph_pool *p = w->eph;

	if (eph && p->n && eph == &p->eph[p->n - 1])
		dust_eph_wipe(&p->eph[--p->n]);
}

void dgw_eph_free(struct dgw_worker *w)
{
	struct dgw_eph_pool *p = w->eph;

	if (!p)
		return;
	for (unsigned i = 0; i < p->n; i++)
		dust_eph_wipe(&p->eph[i]);
	p->n = 0;
	rte_free(p);
	w->eph = NULL;
}
