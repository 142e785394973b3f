/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic profile's pacing (SPEC §12.4): the gap between two data
 * datagrams of one burst, drawn from the cover's own (quic_gaps.h). The
 * pacers that keep it live with their senders (dustgw's pace.c, the
 * client's send loop): this is only the draw.
 */
#ifndef DUST_GAPS_H
#define DUST_GAPS_H

#include <stdint.h>

#include "dust.h"

/**
 * Nanoseconds from one datagram's departure to the next one's in a burst
 * sent by role (enum dust_role): the client's gaps are Chromium's, the
 * server's caddy's (quic-go's), each as likely as it was in the cover.
 * The capture's microseconds are spread uniformly over their microsecond.
 */
uint32_t dust_quic_gap_ns(uint8_t role, struct dust_rng *rng);

#endif
