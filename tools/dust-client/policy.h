/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What dust-client takes from an invitation it did not write and from the
 * gateway: the tunnel network it routes through the TUN, the packets it
 * writes there. Apart from the TUN and socket code so that a unit test calls
 * it directly (test/unit/test_client_policy.c).
 */
#ifndef DUST_CLIENT_POLICY_H
#define DUST_CLIENT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dust.h"

/* Shortest tunnel prefix taken without --allow-wide-route. */
enum { CLIENT_PREFIX_MIN4 = 8, CLIENT_PREFIX_MIN6 = 32 };

/* The shortest prefix of addr's family that the client routes unasked. */
unsigned client_prefix_min(const struct dust_ipaddr *addr);
/* May the TUN take tunnel/prefix (its network is routed there)? */
bool client_prefix_allowed(const struct dust_ipaddr *tunnel, unsigned prefix, bool allow_wide);

/* addr/prefix with the host bits cleared: the network a route for it covers. */
void client_net_of(const struct dust_ipaddr *addr, unsigned prefix, struct dust_ipaddr *net);

/* What the client does with a packet the gateway sent for the TUN. */
enum client_inner {
	CLIENT_INNER_OK,          /* an IP packet for our tunnel address: write it */
	CLIENT_INNER_BAD,         /* not IPv4 or IPv6, or shorter than its header */
	CLIENT_INNER_FOREIGN_DST, /* for another address, or of the other family */
};

enum client_inner client_inner_check(const struct dust_ipaddr *tunnel, const uint8_t *p,
                                     size_t len);

#endif /* DUST_CLIENT_POLICY_H */
