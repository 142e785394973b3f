/* SPDX-License-Identifier: BSD-3-Clause */
#include "numopt.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

bool numopt_ull(const char *prog, const char *opt, const char *s, unsigned long long lo,
                unsigned long long hi, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	/* strtoull skips blanks and takes a sign: neither is a count */
	if (!s || !isdigit((unsigned char)s[0]))
		goto bad;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		goto bad;
	*out = v;
	return true;
bad:
	fprintf(stderr, "%s: --%s '%s': want a whole number in %llu..%llu\n", prog, opt, s ? s : "",
	        lo, hi);
	return false;
}

bool numopt_uint(const char *prog, const char *opt, const char *s, unsigned lo, unsigned hi,
                 unsigned *out)
{
	unsigned long long v;

	if (!numopt_ull(prog, opt, s, lo, hi, &v))
		return false;
	*out = (unsigned)v;
	return true;
}

bool numopt_double(const char *prog, const char *opt, const char *s, double lo, double hi,
                   double *out)
{
	double v;
	char *end;

	errno = 0;
	if (!s || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
		goto bad;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < lo || v > hi)
		goto bad;
	*out = v;
	return true;
bad:
	fprintf(stderr, "%s: --%s '%s': want a number in %g..%g\n", prog, opt, s ? s : "", lo, hi);
	return false;
}
