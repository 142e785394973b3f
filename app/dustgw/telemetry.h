/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * telemetry.c: the gateway's DPDK telemetry commands (/dustgw/stats,
 * /dustgw/sessions, /dustgw/store), which read the gateway through
 * dgw_global_hold. Included by its users only: main.c.
 */
#ifndef DGW_TELEMETRY_H
#define DGW_TELEMETRY_H

/* Register the commands, after EAL is up: 0, or rte_telemetry_register_cmd's error. */
int dgw_telemetry_register(void);

#endif /* DGW_TELEMETRY_H */
