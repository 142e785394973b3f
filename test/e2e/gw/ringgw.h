/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared by the gateway tests that drive the real loop (dustgw_core) over
 * net_ring ports from a driver lcore: frames in, replies out, no capture.
 */
#ifndef RINGGW_H
#define RINGGW_H

#include <stddef.h>
#include <stdint.h>

#include <rte_mempool.h>
#include <rte_ring.h>

#include "dgw_pvt.h"

enum { RG_MAX_Q = 4 };

struct ringgw {
	struct dgw *gw;
	unsigned queues;
	/* per queue: net RX (into dustgw), net TX (its replies), delivery RX and TX */
	struct rte_ring *nrx[RG_MAX_Q], *ntx[RG_MAX_Q], *drx[RG_MAX_Q], *dtx[RG_MAX_Q];
	struct rte_mempool *pool; /* the driver's own frames */
};

uint64_t rg_now_ms(void);
/* Ethernet + IPv4 + UDP around pl (moved, may overlap f + 42); the frame's length. */
size_t rg_frame(uint8_t *f, const uint8_t sip[4], const uint8_t dip[4], uint16_t sp, uint16_t dp,
                const uint8_t *pl, size_t plen);
/* Copy a frame into an mbuf and queue it on r (waits while r is full). */
int rg_put(struct ringgw *h, struct rte_ring *r, const uint8_t *f, size_t len);
/* Rings, the two net_ring ports and the driver's pool, handed to h->gw. */
int rg_ports(struct ringgw *h, unsigned queues);
/* The driver lcore: the third worker lcore (after the gateway's two); RTE_MAX_LCORE if none. */
unsigned rg_driver_lcore(unsigned nth);
uint64_t rg_ctr(struct ringgw *h, unsigned w, unsigned c);
uint64_t rg_drop(struct ringgw *h, unsigned w, unsigned d);
/*
 * Call once worker w counted every frame sent: waits until it finished that
 * burst (it marks itself busy right after counting a burst in) and no first
 * use waits for its fsync (pending.c) nor any answer for its publication
 * (pubwait.c). False after 10 s.
 */
bool rg_worker_done(struct ringgw *h, unsigned w);
/*
 * Read every reply so far, a few (8) from each queue's rings in turn: net TX
 * frames go to reply() (then freed), delivery TX frames are freed. Taking
 * small batches in turn keeps the reordering between two lcores that seal
 * from one counter within a client's replay window (192).
 */
void rg_drain(struct ringgw *h, void (*reply)(struct rte_mbuf *m));

/*
 * The gateway's client side: a datagram from `from` to the gateway
 * (10.0.0.1:port) onto net RX queue q; the gateway's key file and a new store
 * under dir, named in cfg (srv: its identity); client i's invitation to
 * 10.0.0.1:port (tunnel 10.9.0.i+2, not yet in a store), key and address
 * 198.18.0.i:20000+i.
 */
int rg_send(struct ringgw *h, unsigned q, const struct dust_endpoint *from, uint16_t port,
            const uint8_t *dg, size_t len);
/* The same datagram's frame in an mbuf, for a driver that queues frames itself; NULL on failure. */
struct rte_mbuf *rg_dg_mbuf(struct ringgw *h, const struct dust_endpoint *from, uint16_t port,
                            const uint8_t *dg, size_t len);
struct dust_store *rg_store_new(const char *dir, struct dgw_config *cfg, struct dust_identity *srv);
int rg_client_new(const struct dust_identity *srv, unsigned i, uint16_t port,
                  struct dust_invite *inv, struct dust_identity *id, struct dust_endpoint *ep);

/*
 * A test's main, the part the ring tests share: EAL from argv (the test's
 * own arguments after "--", the work dir first), dust_init, a config
 * (gateway 10.0.0.1, queues) that setup finishes while it builds the store,
 * the gateway on its ports, the driver launched on the driver_nth worker
 * lcore; returns 0 once the driver stopped the loop and the stats are
 * printed (h->gw still to destroy), 1 after a usage or setup failure.
 */
struct rg_test {
	const char *name;    /* gw-lcores: for messages */
	const char *usage;   /* the test's own arguments, after "--" */
	unsigned driver_nth; /* the driver's worker lcore: the gateway's are before it */
	unsigned queues;
	int (*setup)(struct dgw_config *cfg, char **args, int nargs);
	int (*driver)(void *arg);
};
int rg_main(struct ringgw *h, const struct rg_test *t, int argc, char **argv);

#endif
