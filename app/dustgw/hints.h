/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hints.c: the outer UDP checksum policy each port type needs, and the
 * log line that names cause and fix when datagrams are dropped for their
 * checksum. Included by its users only: the ports' setup and the main
 * lcore's loop.
 */
#ifndef DGW_HINTS_H
#define DGW_HINTS_H

#include "dgw_pvt.h"

/* gw->net_csum from [gateway] udp_checksum and the net port's driver (never AUTO). */
void dgw_csum_resolve(struct dgw *gw);
/* Main lcore: the first udp_csum drops at once, then at most one line a minute. */
void dgw_hint_csum(struct dgw *gw, uint64_t now_tsc);

#endif /* DGW_HINTS_H */
