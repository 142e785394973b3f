/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hello.c: first Initials of quic hellos waiting for their second (SPEC
 * §12.2), and the hellos seen gateway-wide (a replayed first Initial goes
 * to the cover server at once). The queue's state is its own (struct
 * dgw_hello, behind w->hello). Included by its users only: the quic intro
 * path, the worker's loop and setup.
 */
#ifndef DGW_HELLO_H
#define DGW_HELLO_H

#include "dgw_pvt.h"

/* the hellos seen, gateway-wide: 2^18 (2 MiB), a few minutes of first uses at ISP rates */
enum { DGW_HELLO_MAX = 64, DGW_HELLO_HOLD_MS = 1000, DGW_HELLO_SEEN_LOG2 = 18 };
int dgw_hello_init(struct dgw_worker *w);
void dgw_hello_free(struct dgw_worker *w);
enum dgw_hello_verdict {
	DGW_HELLO_NONE,     /* no hello's: go on as before */
	DGW_HELLO_HELD,     /* a first Initial, held for its second */
	DGW_HELLO_PAIRED,   /* the second: *both holds the two, then dgw_hello_done */
	DGW_HELLO_REPLAYED, /* a first Initial seen before: the cover server's, or dropped */
};
/*
 * A client Initial from rx->ep. PAIRED: the intro path takes *both (the two
 * Initials back to back, valid until the next call), the first's mbuf waits
 * in w->hello_first (the cover server's first if the hello is not Dust),
 * and dgw_hello_done frees what is left.
 */
enum dgw_hello_verdict dgw_hello_take(struct dgw_worker *w, struct rte_mbuf *m,
                                      const struct dgw_rx *rx, struct dgw_rx *both);
void dgw_hello_done(struct dgw_worker *w);
/* Is rx the second Initial of a held first (same address, port and DCID)? */
bool dgw_hello_pairs(const struct dgw_worker *w, const struct dgw_rx *rx);
/* Held first Initials past DGW_HELLO_HOLD_MS: the cover server's, or dropped. */
void dgw_hello_expire(struct dgw_worker *w);

#endif
