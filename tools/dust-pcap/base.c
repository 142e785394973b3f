/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every dust-pcap command shares, at the bottom of its files: the
 * frame constants, the random generator and padding, and die(). The
 * commands call down into it and never back into dust-pcap.c, which only
 * parses options and dispatches (tools/check-cycles tools/dust-pcap).
 */
#include <stdio.h>
#include <stdlib.h>

#include "dust-pcap.h"

const uint8_t gw_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
const uint8_t far_ip[4] = {10, 200, 0, 1}; /* a host behind the gateway */

struct dust_rng rng;
struct dust_pad pad;

int die(const char *fmt, const char *arg)
{
	fprintf(stderr, "dust-pcap: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(1);
}
