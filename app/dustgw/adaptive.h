/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * poll.c: adaptive polling ([runtime] poll): an idle worker naps. Its state
 * is its own (struct dgw_poll_w, behind w->poll). Included by its users
 * only: the worker's loop and setup. Not named poll.h: app/dustgw is on
 * the include path, and <poll.h> must stay the system's (prom.c).
 */
#ifndef DGW_ADAPTIVE_H
#define DGW_ADAPTIVE_H

#include "dgw_pvt.h"

/* 0 or -ENOMEM; the mode is chosen by dgw_poll_start */
int dgw_poll_init(struct dgw_worker *w);
/* At exit (NULL: nothing). */
void dgw_poll_free(struct dgw_worker *w);
/* On the worker's lcore, before its loop: busy or adaptive, from the config. */
void dgw_poll_start(struct dgw_worker *w);
/* After dgw_poll_start: does the worker nap when idle? */
bool dgw_poll_adaptive(const struct dgw_worker *w);
/* After each poll: got = packets read. Naps when the worker is idle. */
void dgw_poll_idle(struct dgw_worker *w, uint16_t got, uint64_t now_tsc);

#endif /* DGW_ADAPTIVE_H */
