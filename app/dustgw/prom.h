/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Prometheus endpoint ([telemetry] prometheus = ADDR:PORT): GET /metrics
 * served by a control thread, never by a worker lcore (prom.c).
 */
#ifndef DGW_PROM_H
#define DGW_PROM_H

struct dgw;
struct dgw_prom;

/**
 * Bind and listen on addr, before the gateway exists, so that a port in
 * use stops dustgw before it opens the store. NULL with errno and a
 * message on stderr.
 */
struct dgw_prom *dgw_prom_open(const char *addr);
/** Start the thread that serves gw's metrics. 0 or -errno with a message. */
int dgw_prom_start(struct dgw_prom *p, struct dgw *gw);
/** Stop the thread and close the socket (NULL: nothing). */
void dgw_prom_stop(struct dgw_prom *p);

#endif /* DGW_PROM_H */
