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

/** A sender's own rate, per session, for dust_pace_cap. Zero it to start. */
struct dust_pace_rate {
	uint64_t start; /**< the current window's start */
	uint64_t cap;   /**< from the previous window: the ceiling on a gap */
	uint32_t n;     /**< datagrams so far in the current window */
};

/**
 * The ceiling on the next gap from the sender's own rate, quic-go's rule:
 * it paces at 5/4 of what it delivers, so the gap is at most 4/5 of the
 * mean interval between datagrams over the previous window; no ceiling
 * (UINT64_MAX) after a window of fewer than 2 or a silence. Below the
 * cover's rate the drawn gaps stand; above it the gaps follow the tunnel's
 * throughput and never hold it back. Call once per datagram; now and
 * window in any one unit.
 */
static inline uint64_t dust_pace_cap(struct dust_pace_rate *r, uint64_t now, uint64_t window)
{
	uint64_t span = now - r->start;

	if (span >= window) {
		r->cap =
		    r->n >= 2 && span < 2 * window ? span * 4 / (5 * (uint64_t)r->n) : UINT64_MAX;
		r->start = now;
		r->n = 0;
	}
	r->n++;
	return r->cap;
}

#endif
