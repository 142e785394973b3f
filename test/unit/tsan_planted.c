/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A data race on purpose, built only under ThreadSanitizer: two threads add
 * to one plain counter. tsan-planted.sh runs it and wants TSan's report, so
 * that the CI stage that runs the unit suite under TSan (.ci/tsan.sh) is
 * shown to catch a race, not only to pass.
 */
#include <pthread.h>
#include <stdio.h>

static long counter; /* deliberately neither atomic nor locked */

static void *add(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100000; i++)
		counter++;
	return NULL;
}

int main(void)
{
	pthread_t a, b;

	if (pthread_create(&a, NULL, add, NULL) || pthread_create(&b, NULL, add, NULL))
		return 2;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("%ld\n", counter);
	return 0;
}
