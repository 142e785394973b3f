/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Planted for the unit test check_cycles_planted, never built: up.c and
 * down.c call each other (a lower layer calling back up), leaf.c is only
 * called. tools/check-cycles must find exactly that one cycle.
 */
int down_work(int x);
int leaf_work(int x);

int up_work(int x)
{
	return x > 0 ? down_work(x - 1) : leaf_work(x);
}
