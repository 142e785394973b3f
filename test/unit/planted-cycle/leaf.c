/* SPDX-License-Identifier: BSD-3-Clause */
/* Planted for check_cycles_planted (see up.c): called, calls nothing. */
int leaf_work(int x)
{
	return x * 2;
}
