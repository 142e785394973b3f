/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic hello's two Initials (SPEC §12.2): Chromium 156's hello with its
 * X25519MLKEM768 share spans two 1250-byte datagrams with one DCID, and a
 * Dust hello looks the same. A first Initial whose tag names an invitation
 * (dust_quic_intro_peek: the public Initial keys and a lookup, nothing
 * changed) waits here, in a small table per worker, until its second comes
 * from the same source endpoint with the same DCID; the two then go to the
 * intro path back to back. One whose tag names nothing is not held: it
 * goes on as every other Initial (the cover server's, or dropped). A held
 * one whose second does not come within DGW_HELLO_HOLD_MS, or that a full
 * table pushes out, goes to the cover server (with one) or is dropped,
 * counted as hello_unpaired.
 *
 * A first Initial is held once: a copy of one seen before (the set
 * gw->hellos, every worker's, or the invitation's newest accepted intro in
 * the store) from another endpoint is a replay, a prober's most likely,
 * and goes on at once, counted as hello_replayed. Held, it would reach the
 * cover server a hold late, where a real server answers at once (SPEC
 * §12.5's replay probe).
 */
#include <errno.h>

#include <rte_malloc.h>

#include "dgw_pvt.h"
#include "hello.h"

struct held {
	struct rte_mbuf *m; /* NULL: a free entry */
	struct dgw_rx rx;
	uint64_t since_ms;
	uint8_t dcid[DUST_QUIC_CID_MAX];
	uint8_t dcid_len;
};

struct dgw_hello {
	struct held e[DGW_HELLO_MAX];
	unsigned n;
	uint8_t buf[2 * 1500]; /* the two Initials back to back */
};

DGW_WORKER_ALLOC(hello, hello)

void dgw_hello_free(struct dgw_worker *w)
{
	if (!w->hello)
		return;
	for (unsigned i = 0; i < DGW_HELLO_MAX; i++)
		rte_pktmbuf_free(w->hello->e[i].m);
	rte_free(w->hello);
	w->hello = NULL;
}

/* A first Initial that will not be a hello's: the cover server's, else dropped. */
static void not_hello(struct dgw_worker *w, struct rte_mbuf *m, const struct dust_endpoint *ep,
                      unsigned ctr, unsigned drop)
{
	if (dgw_cover_on(w) && !dust_session_table_lookup(w->tab, ep)) {
		dgw_ctr_inc(w, ctr);
		dgw_cover_take(w, m, ep);
		return;
	}
	dgw_drop_m(w, m, drop);
}

/* A held first Initial that found no second. */
static void unpaired(struct dgw_worker *w, struct held *e)
{
	struct rte_mbuf *m = e->m;

	e->m = NULL;
	w->hello->n--;
	not_hello(w, m, &e->rx.ep, DGW_CTR_HELLO_UNPAIRED, DGW_DROP_HELLO_UNPAIRED);
}

void dgw_hello_expire(struct dgw_worker *w)
{
	struct dgw_hello *h = w->hello;

	for (unsigned i = 0; h->n && i < DGW_HELLO_MAX; i++)
		if (h->e[i].m && w->now_ms - h->e[i].since_ms >= DGW_HELLO_HOLD_MS)
			unpaired(w, &h->e[i]);
}

static bool same_flow(const struct held *e, const struct dgw_rx *rx, const uint8_t *dcid,
                      uint8_t dcid_len)
{
	return e->m && e->rx.ep.port == rx->ep.port &&
	       dust_ipaddr_equal(&e->rx.ep.ip, &rx->ep.ip) && e->dcid_len == dcid_len &&
	       memcmp(e->dcid, dcid, dcid_len) == 0;
}

/* A place for a new first Initial: a free entry, else the oldest gives way. */
static struct held *slot(struct dgw_worker *w)
{
	struct dgw_hello *h = w->hello;
	struct held *old = &h->e[0];

	for (unsigned i = 0; i < DGW_HELLO_MAX; i++) {
		if (!h->e[i].m)
			return &h->e[i];
		if (h->e[i].since_ms < old->since_ms)
			old = &h->e[i];
	}
	unpaired(w, old);
	return old;
}

/*
 * The two Initials back to back in *both, as one hello for the intro path;
 * the first's mbuf waits in w->hello_first until dgw_hello_done.
 */
static void pair(struct dgw_worker *w, struct held *e, const struct dgw_rx *rx, struct dgw_rx *both)
{
	struct dgw_hello *h = w->hello;

	memcpy(h->buf, e->rx.dg, e->rx.len);
	memcpy(h->buf + e->rx.len, rx->dg, rx->len);
	*both = *rx;
	both->dg = h->buf;
	both->len = (uint16_t)(e->rx.len + rx->len);
	w->hello_first = e->m;
	e->m = NULL;
	h->n--;
	dgw_ctr_inc(w, DGW_CTR_HELLO_PAIRED);
}

void dgw_hello_done(struct dgw_worker *w)
{
	/* accepted or dropped: its bytes were the hello's, the second datagram counted it */
	rte_pktmbuf_free(w->hello_first);
	w->hello_first = NULL;
}

/* A client Initial with a whole DCID of at most QUIC's 20 bytes (the hold keeps a copy). */
static bool dcid_whole(const struct dgw_rx *rx)
{
	return rx->len >= 6 && rx->dg[5] <= DUST_QUIC_CID_MAX && rx->len >= 6u + rx->dg[5];
}

/* The held first Initial whose second rx is (same address, port and DCID), or NULL. */
static struct held *first_of(struct dgw_hello *h, const struct dgw_rx *rx)
{
	for (unsigned i = 0; h->n && i < DGW_HELLO_MAX; i++)
		if (same_flow(&h->e[i], rx, rx->dg + 6, rx->dg[5]))
			return &h->e[i];
	return NULL;
}

bool dgw_hello_pairs(const struct dgw_worker *w, const struct dgw_rx *rx)
{
	return dcid_whole(rx) && first_of(w->hello, rx);
}

enum dgw_hello_verdict dgw_hello_take(struct dgw_worker *w, struct rte_mbuf *m,
                                      const struct dgw_rx *rx, struct dgw_rx *both)
{
	struct dgw_hello *h = w->hello;
	struct held *e;
	enum dust_quic_first k;
	bool first;

	if (!dcid_whole(rx) || rx->len > 1500)
		return DGW_HELLO_NONE;
	e = first_of(h, rx);
	k = dust_quic_hello_first(&w->gw->srv, w->gw->hellos, rx->dg, rx->len);
	first = k != DUST_QUIC_FIRST_NONE;
	if (e && !first) {
		pair(w, e, rx, both);
		return DGW_HELLO_PAIRED;
	}
	/* not held unless its tag names an invitation: everything else goes on as before */
	if (!first)
		return DGW_HELLO_NONE;
	if (e) {
		/*
		 * The first Initial's spans again: Chromium's first PTO resend
		 * (SPEC §12.2) when the second was lost. It takes the held one's
		 * place and waits for the second's spans, which come next.
		 */
		dgw_drop_m(w, e->m, DGW_DROP_HELLO_UNPAIRED);
		e->m = NULL;
		h->n--;
	} else if (k == DUST_QUIC_FIRST_AGAIN) {
		not_hello(w, m, &rx->ep, DGW_CTR_HELLO_REPLAYED, DGW_DROP_HELLO_REPLAYED);
		return DGW_HELLO_REPLAYED;
	} else {
		e = slot(w);
	}
	e->m = m;
	e->rx = *rx;
	e->since_ms = w->now_ms;
	e->dcid_len = rx->dg[5];
	memcpy(e->dcid, rx->dg + 6, e->dcid_len);
	h->n++;
	dgw_ctr_inc(w, DGW_CTR_HELLO_HELD);
	return DGW_HELLO_HELD;
}
