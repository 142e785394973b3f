/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-stage TSC cycles of the packet loop, for bench/loop_profile only. Built
 * in with -Dloop_profile=true (DUST_LOOP_PROFILE); otherwise DUST_PROF_LAP is
 * empty and the production loop carries no stamp. Each thread laps one stamp:
 * the cycles since its previous lap are charged to the stage the lap names.
 */
#ifndef DUST_LOOPPROF_H
#define DUST_LOOPPROF_H

#include <stdint.h>

enum dust_prof_stage {
	DUST_PROF_RX,     /* RX burst from the port */
	DUST_PROF_PARSE,  /* outer headers (decode), inner IP header (encode) */
	DUST_PROF_LOOKUP, /* session table (decode), tunnel map and published session (encode) */
	DUST_PROF_HP,     /* header protection: the SipHash mask */
	DUST_PROF_REPLAY, /* replay window check and update, timestamp */
	DUST_PROF_CRYPTO, /* the AEAD backend's burst call */
	DUST_PROF_COPY,   /* plaintext from the scratch into the packet, wipes */
	DUST_PROF_CODEC,  /* the rest of the codec: lengths, keys, nonces, padding, verdicts */
	DUST_PROF_FRAME,  /* inner check and Ethernet (decode), outer headers (encode) */
	DUST_PROF_CSUM,   /* software checksums */
	DUST_PROF_TX,     /* TX buffering and bursts into the port */
	DUST_PROF_OTHER,  /* the loop itself, housekeeping, stats */
	DUST_PROF_MAX,
};

struct dust_prof {
	uint64_t cyc[DUST_PROF_MAX];
	uint64_t laps[DUST_PROF_MAX];
};

#ifdef DUST_LOOP_PROFILE
#include <x86intrin.h>

struct dust_prof_thread {
	uint64_t last;
	struct dust_prof *p;
};
extern __thread struct dust_prof_thread dust_prof_me;
struct dust_prof *dust_prof_join(void);

static inline void dust_prof_lap(enum dust_prof_stage st)
{
	uint64_t now = __rdtsc();
	struct dust_prof *p = dust_prof_me.p;

	if (__builtin_expect(!p, 0))
		p = dust_prof_join();
	else {
		__atomic_store_n(&p->cyc[st], p->cyc[st] + (now - dust_prof_me.last),
		                 __ATOMIC_RELAXED);
		__atomic_store_n(&p->laps[st], p->laps[st] + 1, __ATOMIC_RELAXED);
	}
	dust_prof_me.last = now;
}
#define DUST_PROF_LAP(st) dust_prof_lap(DUST_PROF_##st)
#else
#define DUST_PROF_LAP(st) ((void)0)
#endif

/* The sum over every thread so far (zeros in a build without the profile). */
void dust_prof_sum(struct dust_prof *out);
/* TSC cycles one lap adds, measured back to back on the calling thread (0 without). */
double dust_prof_lap_cycles(void);
/* Stage names for reports: "rx", "parse", ... */
const char *dust_prof_name(unsigned st);

#endif /* DUST_LOOPPROF_H */
