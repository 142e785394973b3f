/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replay.c: the capture's clock ([runtime] clock = capture, or --replay).
 * A worker's clock state is its own (struct dgw_replay_w, behind
 * w->replay); the tag index's epoch, asked and built, is the gateway's
 * (struct dgw). Included by its users only: the ports' setup, the loop,
 * the intro path and the worker's setup.
 */
#ifndef DGW_REPLAY_H
#define DGW_REPLAY_H

#include "dgw_pvt.h"

/* 0 or -ENOMEM: the worker's capture clock at zero */
int dgw_replay_init(struct dgw_worker *w);
/* At exit (NULL: nothing). */
void dgw_replay_free(struct dgw_worker *w);
/* The net port's timestamps found (clock = capture only); 0 or -ENOTSUP with a message. */
int dgw_replay_setup(struct dgw *gw);
/* The worker's clock from a burst's timestamps; true when idle expiry is due. */
bool dgw_replay_clock(struct dgw_worker *w, struct rte_mbuf **pkts, uint16_t n);
/* An intro's answer waits for the main lcore to handle the worker's PUBLISH. */
void dgw_replay_publish_wait(struct dgw_worker *w, struct dust_session *s);
/* The main lcore builds the tag index a worker asked for. */
void dgw_replay_main(struct dgw *gw);

#endif /* DGW_REPLAY_H */
