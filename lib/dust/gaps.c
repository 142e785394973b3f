/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic profile's pacing gaps (SPEC §12.4): drawn from the cover's
 * inter-departure gaps within a burst for the sender's direction
 * (quic_gaps.h, from the same capture as the size model).
 */
#include "dust_pvt.h"
#include "gaps.h"
#include "quic_gaps.h"

/* the gaps in microseconds (v) each way: [0] the client's, [1] the server's */
static const struct dust_cover_table models[2] = {
    DUST_COVER_TABLE(quic_c2s_gap_us, quic_c2s_gap_cum),
    DUST_COVER_TABLE(quic_s2c_gap_us, quic_s2c_gap_cum),
};

DUST_EXPORT uint32_t dust_quic_gap_ns(uint8_t role, struct dust_rng *rng)
{
	const struct dust_cover_table *m = &models[role == DUST_ROLE_CLIENT ? 0 : 1];
	uint32_t us = m->v[dust_cum_index(m->cum, m->n, dust_rng_uniform(rng, m->cum[m->n - 1]))];

	/* a stamp of k us is a gap anywhere in [k - 0.5, k + 0.5) us */
	return us * 1000u - 500u + dust_rng_uniform(rng, 1000);
}
