/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic profile's size model (SPEC §12.4): a data datagram's size is
 * drawn from the cover's own 1-RTT sizes for its direction (quic_sizes.h,
 * from real Chromium 156 <-> caddy page loads), among those the packet fits
 * in, each as likely as it was in the cover; a packet bigger than every
 * size the cover sent in that direction fills the bound, as a browser's
 * upload does. Sizes then come from the cover's set, not from a uniform
 * spread: the cover's 44 upstream sizes, not hundreds.
 */
#include "dust_pvt.h"
#include "quic.h"
#include "quic_sizes.h"

/* the sizes (v) each way: [0] the client's, [1] the server's */
static const struct dust_cover_table models[2] = {
    DUST_COVER_TABLE(quic_c2s_size, quic_c2s_cum),
    DUST_COVER_TABLE(quic_s2c_size, quic_s2c_cum),
};

/* The first index whose size is >= len; m->n if none. */
static unsigned first_at_least(const struct dust_cover_table *m, size_t len)
{
	unsigned lo = 0, hi = m->n;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (m->v[mid] < len)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

unsigned dust_cum_index(const uint32_t *cum, unsigned n, uint32_t r)
{
	unsigned lo = 0, hi = n - 1;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (cum[mid] <= r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t dust_size_model_ack(const struct dust_session *s, struct dust_rng *rng)
{
	const struct dust_cover_table *m = &models[s->role == DUST_ROLE_CLIENT ? 0 : 1];
	/* the sizes under a Dust packet behind s's short header */
	unsigned n = first_at_least(m, dust_quic_tx_prefix(s) + DUST_DATA_MIN_BYTES);

	if (n == 0)
		return 0;
	return m->v[dust_cum_index(m->cum, n, dust_rng_uniform(rng, m->cum[n - 1]))];
}

size_t dust_size_model_compact(const struct dust_session *s, struct dust_rng *rng, size_t need)
{
	const struct dust_cover_table *m = &models[s->role == DUST_ROLE_CLIENT ? 0 : 1];
	size_t pre = dust_quic_tx_prefix(s);
	/* the cover's sizes a compact packet of need bytes can take: lo .. hi - 1 */
	unsigned lo = first_at_least(m, pre + need),
	         hi = first_at_least(m, pre + DUST_COMPACT_MAX + 1);
	uint32_t base;

	if (hi <= lo)
		return need;
	base = lo ? m->cum[lo - 1] : 0;
	return m->v[dust_cum_index(m->cum, m->n,
	                           base + dust_rng_uniform(rng, m->cum[hi - 1] - base))] -
	       pre;
}

size_t dust_size_model_pad(const struct dust_session *s, struct dust_rng *rng, size_t need,
                           size_t top)
{
	const struct dust_cover_table *m = &models[s->role == DUST_ROLE_CLIENT ? 0 : 1];
	size_t pre = dust_quic_tx_prefix(s), want = pre + need;
	unsigned lo, hi;
	uint32_t base;

	/* an address not yet validated: the padding spends no more than its credit (SPEC §9.1) */
	if (__atomic_load_n(&s->path_state, __ATOMIC_ACQUIRE) != DUST_PATH_VALID) {
		int64_t left = __atomic_load_n(&s->path_credit, __ATOMIC_RELAXED) - (int64_t)pre;

		if (left < (int64_t)top)
			top = left > (int64_t)need ? (size_t)left : need;
	}
	if (need >= top)
		return 0;
	lo = first_at_least(m, want);
	if (lo == m->n)
		return top - need;             /* bigger than the cover ever sent this way: fill */
	hi = first_at_least(m, pre + top + 1); /* sizes within the cap lie below hi */
	if (hi <= lo)
		return 0; /* the cap is under the next cover size: nothing fits */
	base = lo ? m->cum[lo - 1] : 0;
	return m->v[dust_cum_index(m->cum, m->n,
	                           base + dust_rng_uniform(rng, m->cum[hi - 1] - base))] -
	       want;
}
