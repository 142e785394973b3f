/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Print every event counter and drop reason by the name the gateway's
 * telemetry, Prometheus endpoint and summaries use (dgw_ctr_name and
 * dgw_drop_name over their enums), one "ctr NAME" or "drop NAME" a line,
 * for the docs-counters test to hold docs/counters.md against.
 */
#include <stdio.h>

#include "dustgw.h"

int main(void)
{
	for (unsigned c = 0; c < DGW_CTR_MAX; c++)
		printf("ctr %s\n", dgw_ctr_name(c));
	for (unsigned d = 1; d < DGW_DROP_MAX; d++)
		printf("drop %s\n", dgw_drop_name(d));
	return 0;
}
