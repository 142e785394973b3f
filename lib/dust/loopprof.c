/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The loop profile's per-thread counters (loopprof.h): a fixed array of
 * slots, one per thread that laps, summed for the report. Built into every
 * libdust so the report code links either way; it counts only with
 * DUST_LOOP_PROFILE.
 */
#include <string.h>

#include "dust_pvt.h"
#include "loopprof.h"

enum { PROF_THREADS = 64 };

static struct dust_prof slots[PROF_THREADS];
static unsigned nslots;

#ifdef DUST_LOOP_PROFILE
__thread struct dust_prof_thread dust_prof_me;
static struct dust_prof spill; /* threads past PROF_THREADS share it (racy, reported) */

struct dust_prof *dust_prof_join(void)
{
	unsigned i = __atomic_fetch_add(&nslots, 1, __ATOMIC_RELAXED);

	dust_prof_me.p = i < PROF_THREADS ? &slots[i] : &spill;
	return dust_prof_me.p;
}
#endif

DUST_EXPORT void dust_prof_sum(struct dust_prof *out)
{
	unsigned n = __atomic_load_n(&nslots, __ATOMIC_RELAXED);

	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < n && i < PROF_THREADS; i++)
		for (unsigned st = 0; st < DUST_PROF_MAX; st++) {
			out->cyc[st] += __atomic_load_n(&slots[i].cyc[st], __ATOMIC_RELAXED);
			out->laps[st] += __atomic_load_n(&slots[i].laps[st], __ATOMIC_RELAXED);
		}
}

DUST_EXPORT double dust_prof_lap_cycles(void)
{
#ifdef DUST_LOOP_PROFILE
	enum { N = 1 << 18, TRIES = 9 };
	uint64_t best = UINT64_MAX;

	DUST_PROF_LAP(OTHER); /* joins: the timed laps all count */
	/* the least of several tries: a try the thread was descheduled in says nothing */
	for (int t = 0; t < TRIES; t++) {
		uint64_t t0 = __rdtsc(), d;

		for (unsigned i = 0; i < N; i++)
			DUST_PROF_LAP(OTHER);
		d = __rdtsc() - t0;
		best = d < best ? d : best;
	}
	return (double)best / N;
#else
	return 0;
#endif
}

DUST_EXPORT const char *dust_prof_name(unsigned st)
{
	static const char *const names[DUST_PROF_MAX] = {
	    "rx",   "parse", "lookup", "hp",   "replay", "crypto",
	    "copy", "codec", "frame",  "csum", "tx",     "other",
	};

	return st < DUST_PROF_MAX ? names[st] : "?";
}
