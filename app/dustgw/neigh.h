/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * neigh.c: ARP and ND answers, built in place in the request's mbuf.
 */
#ifndef DGW_NEIGH_H
#define DGW_NEIGH_H

#include <rte_arp.h>

#include "dgw_pvt.h"

/* m's ARP request (Ethernet, IPv4, whole), or NULL when m holds none. */
struct rte_arp_hdr *dgw_arp_request(struct rte_mbuf *m);
/* Turns m's ARP request into the reply of mine, the owner of its target address. */
void dgw_arp_reply(struct rte_mbuf *m, const struct rte_ether_addr *mine);

/*
 * An ARP request or ND solicitation for our address (any address behind us
 * when any_target): answered from mine, true; otherwise false, m untouched.
 */
bool dgw_neigh_arp(struct dgw_worker *w, struct rte_mbuf *m, const struct rte_ether_addr *mine,
                   bool any_target);
bool dgw_neigh_ns(struct dgw_worker *w, struct rte_mbuf *m, const struct rte_ether_addr *mine,
                  bool any_target);

#endif
