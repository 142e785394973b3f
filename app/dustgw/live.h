/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * live.c: the main lcore follows the store (dust-invite create and revoke
 * while dustgw runs). Included by its users only: the main lcore's loop
 * and the tests that drive it.
 */
#ifndef DGW_LIVE_H
#define DGW_LIVE_H

#include "dgw_pvt.h"

/* Reload the store, merge new invitations, move the tag index, cut revoked sessions. */
void dgw_store_poll(struct dgw *gw);

#endif /* DGW_LIVE_H */
