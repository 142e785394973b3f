/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What dust-client takes from an invitation it did not write: the tunnel
 * network it routes through the TUN. Apart from the TUN and socket code so
 * that a unit test calls it directly (test/unit/test_client_policy.c).
 */
#ifndef DUST_CLIENT_POLICY_H
#define DUST_CLIENT_POLICY_H

#include <stdbool.h>

#include "dust.h"

/* Shortest tunnel prefix taken without --allow-wide-route. */
enum { CLIENT_PREFIX_MIN4 = 8, CLIENT_PREFIX_MIN6 = 32 };

/* The shortest prefix of addr's family that the client routes unasked. */
unsigned client_prefix_min(const struct dust_ipaddr *addr);
/* May the TUN take tunnel/prefix (its network is routed there)? */
bool client_prefix_allowed(const struct dust_ipaddr *tunnel, unsigned prefix, bool allow_wide);

/* addr/prefix with the host bits cleared: the network a route for it covers. */
void client_net_of(const struct dust_ipaddr *addr, unsigned prefix, struct dust_ipaddr *net);

#endif /* DUST_CLIENT_POLICY_H */
