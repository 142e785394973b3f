/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gateway tests' one check (test/e2e/gw/gw_*.c). A failed CHECK keeps
 * its reason, prints where it failed and returns -1 from the test
 * function: a caller's CHECK(step() == 0, gw_why) hands its callee's reason
 * up. gw_verdict ends the program: FAIL and the reason, or PASS.
 */
#ifndef GW_CHECK_H
#define GW_CHECK_H

#include <stdio.h>

static const char *gw_why;

#define CHECK(cond, msg)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			gw_why = (msg);                                                            \
			printf("check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);          \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

/* The exit status of a gateway test named name, its verdict printed. */
static inline int gw_verdict(const char *name)
{
	if (gw_why) {
		printf("FAIL: %s\n", gw_why);
		return 1;
	}
	printf("PASS %s\n", name);
	return 0;
}

#endif
