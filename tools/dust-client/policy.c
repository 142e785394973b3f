/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-client's checks on what an invitation and a gateway give it (policy.h).
 */
#include <string.h>

#include "policy.h"

unsigned client_prefix_min(const struct dust_ipaddr *addr)
{
	return addr->family == 4 ? CLIENT_PREFIX_MIN4 : CLIENT_PREFIX_MIN6;
}

bool client_prefix_allowed(const struct dust_ipaddr *tunnel, unsigned prefix, bool allow_wide)
{
	return allow_wide || prefix >= client_prefix_min(tunnel);
}

void client_net_of(const struct dust_ipaddr *addr, unsigned prefix, struct dust_ipaddr *net)
{
	unsigned bits = addr->family == 4 ? 32 : 128;

	*net = *addr;
	if (prefix > bits)
		prefix = bits;
	for (unsigned i = prefix / 8; i < bits / 8; i++)
		net->a[i] &= i == prefix / 8 ? (uint8_t)(0xff00 >> (prefix % 8)) : 0;
}

/*
 * The gateway decides what it sends, so the client checks: only packets
 * for its own tunnel address reach the TUN, never one the kernel would
 * forward or take for another local address.
 */
enum client_inner client_inner_check(const struct dust_ipaddr *tunnel, const uint8_t *p, size_t len)
{
	unsigned ver = len ? p[0] >> 4 : 0;

	if (ver == 4 && len >= 20)
		return tunnel->family == 4 && memcmp(p + 16, tunnel->a, 4) == 0
		           ? CLIENT_INNER_OK
		           : CLIENT_INNER_FOREIGN_DST;
	if (ver == 6 && len >= 40)
		return tunnel->family == 6 && memcmp(p + 24, tunnel->a, 16) == 0
		           ? CLIENT_INNER_OK
		           : CLIENT_INNER_FOREIGN_DST;
	return CLIENT_INNER_BAD;
}
