/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The first flight's shape learned from the cover server itself (learn.c,
 * SPEC §12.5): Chromium-shaped hellos from an address that never exists on
 * the wire, sent into the cover tap; what the kernel's server answers them
 * is read by header and never leaves the gateway. Bottom layer: it calls
 * nothing of the worker's.
 */
#ifndef DGW_LEARN_H
#define DGW_LEARN_H

#include <stdbool.h>
#include <stdint.h>

struct dgw;
struct dgw_worker;
struct rte_mbuf;

/** With [quic] cover = tap and cover_learn_s: the rings and the probe address. 0 or -errno. */
int dgw_learn_setup(struct dgw *gw);
void dgw_learn_free(struct dgw *gw);
/**
 * A frame from the cover tap (worker w's queue): a frame to the probe
 * address is the learner's (taken, true: it never goes out of the net
 * port), an ARP request for it answered back into the tap; else false.
 */
bool dgw_learn_catch(struct dgw_worker *w, struct rte_mbuf *m);
/** Worker 0: the probe frames the main lcore made go into the tap on its queue. */
void dgw_learn_send(struct dgw_worker *w);
/** Main lcore: start a round when due, read what came back, install the shape. */
void dgw_learn_tick(struct dgw *gw, uint64_t now_tsc);

#endif /* DGW_LEARN_H */
