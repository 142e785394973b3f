/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inbox.c: a worker's side of the messages from the main lcore (sessmap.c
 * has the protocol) and its once-a-second expiry, at the top of the worker
 * with the burst dispatch. Included by its users only: the loop and the
 * tests that drive the messages (gw_msgs.c).
 */
#ifndef DGW_INBOX_H
#define DGW_INBOX_H

#include "dgw_pvt.h"

/* The main lcore's messages in w->inbox, after the RETIREDs the main ring had no room for. */
void dgw_worker_inbox(struct dgw_worker *w);
/*
 * Once a second: first uses whose DURABLE never came are refused, answers
 * whose PUBLISHED never came retire their session, idle sessions leave.
 */
void dgw_worker_expire(struct dgw_worker *w);

#endif /* DGW_INBOX_H */
