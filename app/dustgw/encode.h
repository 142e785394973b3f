/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * encode.c: the reverse path, inner IP packets from the delivery port
 * sealed toward their clients, at the top of the worker with the burst
 * dispatch. Included by its users only: the loop.
 */
#ifndef DGW_ENCODE_H
#define DGW_ENCODE_H

#include "dgw_pvt.h"

/* A burst from the delivery port; every mbuf is consumed (sent, paced or dropped). */
void dgw_encode_burst(struct dgw_worker *w, struct rte_mbuf **pkts, uint16_t n);

#endif /* DGW_ENCODE_H */
