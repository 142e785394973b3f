/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A minimal test harness: CHECK records a failure and carries on, each test
 * is a function, and the runner prints one line per test and a closing
 * "N passed, N failed" line. A CHECK that failed outside any test (in main,
 * before check_run: a failed dust_init) fails the run too.
 */
#ifndef DUST_CHECK_H
#define DUST_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (a_ != b_) {                                                                    \
			fprintf(stderr, "  %s:%d: %s == %lld, expected %s == %lld\n", __FILE__,    \
			        __LINE__, #a, a_, #b, b_);                                         \
			check_failures++;                                                          \
		}                                                                                  \
	} while (0)

struct check_test {
	const char *name;
	void (*fn)(void);
};

static int check_run(const struct check_test *tests, size_t n, const char *only)
{
	int passed = 0, failed = 0, outside = check_failures;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (outside)
		printf("FAIL %d check%s outside any test (setup in main)\n", outside,
		       outside > 1 ? "s" : "");

	for (size_t i = 0; i < n; i++) {
		int before = check_failures;

		if (only && strcmp(only, tests[i].name) != 0)
			continue;
		tests[i].fn();
		if (check_failures == before) {
			printf("ok   %s\n", tests[i].name);
			passed++;
		} else {
			printf("FAIL %s\n", tests[i].name);
			failed++;
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed || outside ? 1 : 0;
}

/* The number of entries in a table of tests. */
#define CHECK_COUNT(tests) (sizeof(tests) / sizeof((tests)[0]))

/*
 * A test file's main, all but the table: setup (NULL for none) runs first,
 * outside any test, so that a CHECK failing there (a failed dust_init) fails
 * the run; then every test, or only the one argv[1] names.
 */
static inline int check_main(int argc, char **argv, const struct check_test *tests, size_t n,
                             void (*setup)(void))
{
	if (setup)
		setup();
	return check_run(tests, n, argc > 1 ? argv[1] : NULL);
}

/* main for a file-scope table of tests, with check_main's setup. */
#define CHECK_MAIN(tests, setup)                                                                   \
	int main(int argc, char **argv)                                                            \
	{                                                                                          \
		return check_main(argc, argv, tests, CHECK_COUNT(tests), setup);                   \
	}

#endif
