/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Numbers on command lines, checked: the whole argument must be one decimal
 * number within the option's range, or the program says which option and
 * what it wants. strtoul(optarg, NULL, 10) took "12x" as 12, "x" as 0 and
 * "-1" as 2^64 - 1, silently.
 */
#ifndef TOOLS_NUMOPT_H
#define TOOLS_NUMOPT_H

#include <stdbool.h>

/*
 * *out = the value of s if it is a whole unsigned decimal in [lo, hi], and
 * true; else a line on stderr ("PROG: --OPT 'S': want a whole number in
 * LO..HI") and false, *out unchanged.
 */
bool numopt_ull(const char *prog, const char *opt, const char *s, unsigned long long lo,
                unsigned long long hi, unsigned long long *out);
bool numopt_uint(const char *prog, const char *opt, const char *s, unsigned lo, unsigned hi,
                 unsigned *out);
/* The same for a finite decimal number (fractions allowed) in [lo, hi]. */
bool numopt_double(const char *prog, const char *opt, const char *s, double lo, double hi,
                   double *out);

#endif
