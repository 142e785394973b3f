/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-dpi checks: the statistics a DPI box can run on UDP payloads. Each
 * failing check has a false-positive rate of at most alpha on payloads that
 * are uniform random bytes (independent, any lengths); the bound used for
 * each one is stated beside it, and README.md restates them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpi.h"

enum { BIT_BYTES = 64, LEN_VALUES = 65536 };

#define SET(r, v, ...) ((r)->verdict = (v), snprintf((r)->detail, sizeof((r)->detail), __VA_ARGS__))

/* ln C(n, k) */
static double ln_choose(double n, double k)
{
	return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1);
}

/*
 * Per-bit bias: for each of the 512 bits in payload bytes 0..63, the share
 * of ones among payloads long enough to have that bit. Hoeffding gives
 * P(|z| >= t) <= 2 exp(-t^2 / 2) for z = (ones - n/2) / sqrt(n/4), whatever
 * n is, so with a Bonferroni split over 512 bits the threshold
 * t = sqrt(2 ln(1024 / alpha)) keeps the family-wise rate below alpha.
 */
void dpi_check_bits(const struct dpi_capture *c, const struct dpi_params *p, struct dpi_result *r)
{
	static uint64_t ones[BIT_BYTES][8], n[BIT_BYTES];
	double t = sqrt(2 * log(2.0 * BIT_BYTES * 8 / p->alpha)), worst = 0;
	unsigned flagged = 0, wpos = 0, wbit = 0, tested = 0;

	r->name = "bit-bias";
	memset(ones, 0, sizeof(ones));
	memset(n, 0, sizeof(n));
	for (size_t i = 0; i < c->n; i++) {
		const struct dpi_dgram *d = &c->dg[i];

		for (unsigned pos = 0; pos < BIT_BYTES && pos < d->len; pos++) {
			n[pos]++;
			for (unsigned b = 0; b < 8; b++)
				ones[pos][b] += (d->data[pos] >> b) & 1;
		}
	}
	for (unsigned pos = 0; pos < BIT_BYTES; pos++) {
		/* below t^2 samples even a constant bit cannot reach t */
		if ((double)n[pos] < t * t)
			continue;
		tested++;
		for (unsigned b = 0; b < 8; b++) {
			double z = ((double)ones[pos][b] - n[pos] / 2.0) / sqrt(n[pos] / 4.0);

			if (fabs(z) >= t)
				flagged++;
			if (fabs(z) > fabs(worst)) {
				worst = z;
				wpos = pos;
				wbit = b;
			}
		}
	}
	if (!tested) {
		SET(r, DPI_SKIP, "needs >= %.0f payloads", ceil(t * t));
		return;
	}
	SET(r, flagged ? DPI_FLAG : DPI_PASS,
	    "%u of %u bits biased; max |z| = %.2f at byte %u bit %u (%.1f%% ones of %llu);"
	    " threshold %.2f",
	    flagged, tested * 8, fabs(worst), wpos, wbit,
	    100.0 * ones[wpos][wbit] / (double)(n[wpos] ? n[wpos] : 1),
	    (unsigned long long)n[wpos], t);
}

/* Upper tail of N(0,1). */
static double normal_sf(double z)
{
	return 0.5 * erfc(z / sqrt(2.0));
}

/*
 * Byte chi-square over every payload byte, 255 degrees of freedom. The
 * p-value uses the Wilson-Hilferty cube-root normal approximation, accurate
 * to a few percent of p at this many degrees of freedom; it needs >= 5
 * expected counts per byte value.
 */
void dpi_check_chi2(const struct dpi_capture *c, const struct dpi_params *p, struct dpi_result *r)
{
	uint64_t count[256] = {0}, total = 0;
	double x2 = 0, e, k = 255, z, pv;

	r->name = "byte-chi2";
	for (size_t i = 0; i < c->n; i++) {
		for (uint32_t j = 0; j < c->dg[i].len; j++)
			count[c->dg[i].data[j]]++;
		total += c->dg[i].len;
	}
	if (total < 256 * 5) {
		SET(r, DPI_SKIP, "needs >= 1280 payload bytes, has %llu", (unsigned long long)total);
		return;
	}
	e = total / 256.0;
	for (unsigned v = 0; v < 256; v++)
		x2 += ((double)count[v] - e) * ((double)count[v] - e) / e;
	z = (cbrt(x2 / k) - (1 - 2 / (9 * k))) / sqrt(2 / (9 * k));
	pv = normal_sf(z);
	SET(r, pv < p->alpha ? DPI_FLAG : DPI_PASS,
	    "X2 = %.1f over %llu bytes, 255 dof, p = %.3g (flag below %g)", x2,
	    (unsigned long long)total, pv, p->alpha);
}

/* Kullback-Leibler divergence of Bernoulli(q) from Bernoulli(p0), q > p0. */
static double kl_bern(double q, double p0)
{
	double a = q > 0 ? q * log(q / p0) : 0;
	double b = q < 1 ? (1 - q) * log((1 - q) / (1 - p0)) : 0;

	return a + b;
}

/*
 * Most common length. Null: no length has probability above p0. Chernoff:
 * P(Binom(n, p0) >= c) <= exp(-n KL(c/n || p0)); a union over all 65536
 * lengths bounds the chance that any length reaches c. Flag when that
 * bound is below alpha: the capture has fewer than ~1/p0 effective lengths.
 */
void dpi_check_lengths(const struct dpi_capture *c, const struct dpi_params *p,
		       struct dpi_result *r)
{
	uint32_t *count = calloc(LEN_VALUES, sizeof(*count));
	uint32_t best = 0, distinct = 0;
	double share, bound;

	r->name = "length-mode";
	if (!count) {
		SET(r, DPI_SKIP, "out of memory");
		return;
	}
	for (size_t i = 0; i < c->n; i++)
		count[c->dg[i].len < LEN_VALUES ? c->dg[i].len : LEN_VALUES - 1]++;
	for (uint32_t l = 0; l < LEN_VALUES; l++) {
		distinct += count[l] != 0;
		if (count[l] > count[best])
			best = l;
	}
	share = c->n ? (double)count[best] / (double)c->n : 0;
	/* even one length in every payload cannot beat the bound this early */
	if (c->n * log(1 / p->len_share) <= log(LEN_VALUES / p->alpha)) {
		SET(r, DPI_SKIP, "too few payloads (%zu)", c->n);
		free(count);
		return;
	}
	bound = share > p->len_share ? LEN_VALUES * exp(-(double)c->n * kl_bern(share, p->len_share))
				     : 1.0;
	SET(r, bound < p->alpha ? DPI_FLAG : DPI_PASS,
	    "%u distinct lengths; most common %u B holds %.2f%% of %zu; bound p <= %.3g"
	    " (flag if a share above %.2f%% is shown at alpha %g)",
	    distinct, best, 100 * share, c->n, bound > 1 ? 1.0 : bound, 100 * p->len_share,
	    p->alpha);
	free(count);
}

/* ---- shared prefixes ------------------------------------------------------ */

struct pref {
	uint8_t b[16];
	uint32_t flow;
};

static unsigned pref_len;

static int pref_cmp(const void *a, const void *b)
{
	const struct pref *x = a, *y = b;
	int d = memcmp(x->b, y->b, pref_len);

	if (d)
		return d;
	return (x->flow > y->flow) - (x->flow < y->flow);
}

/* Largest number of distinct flows sharing one L-byte prefix; its example in *ex. */
static unsigned prefix_max_flows(const struct dpi_capture *c, unsigned L, size_t *nl,
				 struct pref *ex)
{
	struct pref *v = malloc((c->n ? c->n : 1) * sizeof(*v));
	size_t m = 0;
	unsigned best = 0;

	if (!v)
		return 0;
	for (size_t i = 0; i < c->n; i++) {
		if (c->dg[i].len < L)
			continue;
		memset(v[m].b, 0, sizeof(v[m].b));
		memcpy(v[m].b, c->dg[i].data, L);
		v[m++].flow = c->dg[i].flow;
	}
	pref_len = L;
	qsort(v, m, sizeof(*v), pref_cmp);
	for (size_t i = 0; i < m;) {
		size_t j = i + 1;
		unsigned flows = 1;

		for (; j < m && !memcmp(v[j].b, v[i].b, L); j++)
			flows += v[j].flow != v[j - 1].flow;
		if (flows > best) {
			best = flows;
			*ex = v[i];
		}
		i = j;
	}
	*nl = m;
	free(v);
	return best;
}

/*
 * Shared prefixes across flows, for prefixes of 4, 8 and 16 bytes. Under the
 * null, P(some L-byte value starts >= k of N payloads) <= C(N, k) 2^(-8L(k-1));
 * k_L is the least k that brings this below alpha/3 (a third per L).
 */
void dpi_check_prefixes(const struct dpi_capture *c, const struct dpi_params *p,
			struct dpi_result *r)
{
	static const unsigned lens[] = {4, 8, 16};
	char *d = r->detail;
	size_t room = sizeof(r->detail);
	bool flag = false, any = false;

	r->name = "shared-prefix";
	r->detail[0] = 0;
	for (unsigned i = 0; i < 3; i++) {
		unsigned L = lens[i], k = 2, best;
		struct pref ex = {0};
		size_t nl = 0;
		int w;

		while (k < 1000 && ln_choose((double)c->n, k) - 8.0 * L * (k - 1) * log(2) >
					   log(p->alpha / 3))
			k++;
		best = prefix_max_flows(c, L, &nl, &ex);
		if (nl < k || c->nflows < k) {
			w = snprintf(d, room, "%s%uB: n/a (needs %u flows)", i ? "; " : "", L, k);
		} else {
			any = true;
			flag |= best >= k;
			if (best < 2)
				w = snprintf(d, room, "%s%uB: none shared (flag at %u)", i ? "; " : "",
					     L, k);
			else
				w = snprintf(d, room,
					     "%s%uB: %u flows share %02x%02x%02x%02x.. (flag at %u)",
					     i ? "; " : "", L, best, ex.b[0], ex.b[1], ex.b[2],
					     ex.b[3], k);
		}
		if (w < 0 || (size_t)w >= room)
			break;
		d += w;
		room -= (size_t)w;
	}
	r->verdict = flag ? DPI_FLAG : any ? DPI_PASS : DPI_SKIP;
}

/* ---- repeated payloads ------------------------------------------------------ */

static const struct dpi_dgram *rep_base;

static int rep_cmp(const void *a, const void *b)
{
	const struct dpi_dgram *x = &rep_base[*(const uint32_t *)a];
	const struct dpi_dgram *y = &rep_base[*(const uint32_t *)b];

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->data, y->data, x->len);
}

/*
 * Identical payloads. Two uniform payloads of length l collide with chance
 * 256^-l, so the n_l payloads of that length collide with chance at most
 * C(n_l, 2) 256^-l. A length is tested when that is below alpha / D (D: the
 * lengths with two or more payloads); any repeat at a tested length flags.
 */
void dpi_check_repeats(const struct dpi_capture *c, const struct dpi_params *p,
		       struct dpi_result *r)
{
	uint32_t *idx = malloc((c->n ? c->n : 1) * sizeof(*idx));
	size_t rep_tested = 0, rep_all = 0, untested = 0, D = 0, example = 0;

	r->name = "repeats";
	if (!idx) {
		SET(r, DPI_SKIP, "out of memory");
		return;
	}
	for (size_t i = 0; i < c->n; i++)
		idx[i] = (uint32_t)i;
	rep_base = c->dg;
	qsort(idx, c->n, sizeof(*idx), rep_cmp);
	for (size_t i = 0; i < c->n;) {
		size_t j = i;

		while (j < c->n && c->dg[idx[j]].len == c->dg[idx[i]].len)
			j++;
		D += j - i >= 2;
		i = j;
	}
	for (size_t i = 0; i < c->n;) {
		uint32_t len = c->dg[idx[i]].len;
		size_t j = i, reps = 0;
		double lnp;

		while (j < c->n && c->dg[idx[j]].len == len)
			j++;
		for (size_t k = i + 1; k < j; k++)
			reps += !rep_cmp(&idx[k - 1], &idx[k]);
		lnp = j - i >= 2 ? ln_choose((double)(j - i), 2) - len * log(256.0) : -INFINITY;
		rep_all += reps;
		if (lnp <= log(p->alpha / (double)(D ? D : 1))) {
			if (reps && !rep_tested)
				example = len;
			rep_tested += reps;
		} else {
			untested++;
		}
		i = j;
	}
	free(idx);
	if (rep_tested)
		SET(r, DPI_FLAG, "%zu repeated payloads (e.g. of %zu B); %zu lengths too short to test",
		    rep_tested, example, untested);
	else
		SET(r, DPI_PASS, "no repeat at a testable length (%zu repeats at %zu short lengths)",
		    rep_all, untested);
}

/* ---- the GFW's fully-encrypted-traffic rule (Wu et al. 2023) -------------- */

static bool printable(uint8_t b)
{
	return b >= 0x20 && b <= 0x7e;
}

/* Which exemption a first payload meets (0 = none: the GFW would block it). */
static int gfw_exemption(const uint8_t *d, uint32_t len)
{
	unsigned bits = 0, pr = 0, run = 0, longest = 0;
	double avg;

	for (uint32_t i = 0; i < len; i++) {
		bits += (unsigned)__builtin_popcount(d[i]);
		pr += printable(d[i]);
		run = printable(d[i]) ? run + 1 : 0;
		longest = run > longest ? run : longest;
	}
	avg = len ? (double)bits / len : 0;
	if (avg <= 3.4 || avg >= 4.6)
		return 1;
	if (len >= 6 && printable(d[0]) && printable(d[1]) && printable(d[2]) &&
	    printable(d[3]) && printable(d[4]) && printable(d[5]))
		return 2;
	if (2 * pr > len)
		return 3;
	if (longest > 20)
		return 4;
	/* Ex5: TLS records (handshake / application data) are let through */
	if (len >= 3 && (d[0] == 0x16 || d[0] == 0x17) && d[1] == 0x03 && d[2] <= 0x04)
		return 5;
	return 0;
}

/*
 * Wu et al. observed this on TCP (first data packet of a connection, blocked
 * with probability ~26%); we apply it to each flow's first UDP payload and to
 * every payload. Random-looking traffic is expected to meet no exemption.
 */
void dpi_check_gfw(const struct dpi_capture *c, const struct dpi_params *p, struct dpi_result *r)
{
	uint8_t *seen = calloc(c->nflows ? c->nflows : 1, 1);
	size_t first_block = 0, all_block = 0, ex[6] = {0};

	(void)p;
	r->name = "gfw-fet";
	if (!seen) {
		SET(r, DPI_SKIP, "out of memory");
		return;
	}
	for (size_t i = 0; i < c->n; i++) {
		int e = gfw_exemption(c->dg[i].data, c->dg[i].len);

		all_block += e == 0;
		ex[e]++;
		if (!seen[c->dg[i].flow]) {
			seen[c->dg[i].flow] = 1;
			first_block += e == 0;
		}
	}
	free(seen);
	SET(r, DPI_INFO,
	    "would block %zu of %zu flows on their first payload; %zu of %zu payloads meet no"
	    " exemption (ex1 popcount %zu, ex2 prefix %zu, ex3 half %zu, ex4 run %zu, ex5 tls %zu)",
	    first_block, c->nflows, all_block, c->n, ex[1], ex[2], ex[3], ex[4], ex[5]);
}
