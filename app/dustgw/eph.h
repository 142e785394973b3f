/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * eph.c: the worker's pool of server ephemerals, made by housekeeping off
 * the packet path and taken by accepted intros (SPEC.md §5.1, §12.3). The
 * pool is its own (struct dgw_eph_pool, behind w->eph). Included by its
 * users only: the intro path, the loop's housekeeping and the worker's setup.
 */
#ifndef DGW_EPH_H
#define DGW_EPH_H

#include "dgw_pvt.h"

/* 0 or -ENOMEM: an empty pool */
int dgw_eph_init(struct dgw_worker *w);
/* At exit: every share left is wiped, the pool freed (NULL: nothing). */
void dgw_eph_free(struct dgw_worker *w);
/* One X25519 base-point multiplication per call: housekeeping keeps the pool full. */
void dgw_eph_refill(struct dgw_worker *w);
/* The share an intro may use, or NULL (empty pool: libdust makes one after the checks). */
const struct dust_eph *dgw_eph_peek(const struct dgw_worker *w);
/* An accepted intro used the top share: it is never used again. */
void dgw_eph_spent(struct dgw_worker *w, const struct dust_eph *eph);

#endif /* DGW_EPH_H */
