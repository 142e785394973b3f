/* SPDX-License-Identifier: BSD-3-Clause */
/* Planted for check_cycles_planted (see up.c): calls back up into up.c. */
int up_work(int x);
int leaf_work(int x);

int down_work(int x)
{
	return up_work(x) + leaf_work(x);
}
