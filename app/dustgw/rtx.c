/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Answered quic first flights until the client confirms (SPEC §12.3). A
 * real server keeps its first flight until the client's Handshake packet
 * comes: a retransmitted hello (same address, same DCID) is answered with
 * that flight again, and with no word from the client the flight goes out
 * again on the server's PTO, doubling each time. Dropping one datagram must
 * not show a censor a server that answers once and then falls silent, or
 * that takes a retransmission for a replay.
 *
 * Each entry keeps the accept's answer (the ServerHello's E_s, the masked
 * ML-KEM ciphertext) and a key for the ServerHello's random bytes, so that
 * every resend carries the same keys and the same ServerHello, only newer
 * packet numbers; nothing is authenticated or derived again. Entries are
 * bounded (DGW_RTX_MAX a worker, the oldest gives way), end when the
 * session proves its path (the client's first authenticated datagram), when
 * it retires, or after the last PTO; each end wipes the entry. A resend
 * stays within the 3x anti-amplification limit of what the address sent.
 */
#include <errno.h>

#include <sodium.h>

#include <rte_malloc.h>

#include "cid.h"
#include "dgw_pvt.h"
#include "dispose.h"
#include "rtx_w.h"

/* ---- the table (rtx.h): no packets, no worker ---- */

struct dgw_rtx_e *dgw_rtx_find(struct dgw_rtx *r, const void *s)
{
	for (unsigned i = 0; r->n && i < DGW_RTX_MAX; i++)
		if (r->e[i].s == s)
			return &r->e[i];
	return NULL;
}

void dgw_rtx_end(struct dgw_rtx *r, struct dgw_rtx_e *e)
{
	sodium_memzero(e, sizeof(*e));
	r->n--;
}

struct dgw_rtx_e *dgw_rtx_put(struct dgw_rtx *r, const void *s, uint64_t now_ms, bool *evicted)
{
	struct dgw_rtx_e *e = &r->e[0];

	*evicted = false;
	for (unsigned i = 0; i < DGW_RTX_MAX; i++) {
		if (!r->e[i].s) {
			e = &r->e[i];
			goto fill;
		}
		if (r->e[i].sent_ms < e->sent_ms)
			e = &r->e[i];
	}
	dgw_rtx_end(r, e);
	*evicted = true;
fill:
	r->n++;
	e->s = s;
	e->sent_ms = now_ms;
	e->pto_ms = DGW_RTX_PTO_MS;
	return e;
}

enum dgw_rtx_due dgw_rtx_due(struct dgw_rtx_e *e, uint64_t now_ms)
{
	/* when each resend is due, in first PTOs after the flight (rtx.h) */
	static const uint8_t at[DGW_RTX_PTO_MAX] = {1, 2, 5, 10};
	uint64_t since = now_ms - e->sent_ms;

	if (e->ptos == DGW_RTX_PTO_MAX)
		return since < (uint64_t)e->pto_ms * DGW_RTX_GIVE_UP_PTOS
		           ? DGW_RTX_WAIT
		           : DGW_RTX_GIVE_UP; /* as the cover server gives up its handshake */
	if (since < (uint64_t)e->pto_ms * at[e->ptos])
		return DGW_RTX_WAIT;
	/* quic-go's Initial and Handshake timers fire in turn: the Initial's first */
	return e->ptos++ % 2 ? DGW_RTX_PTO_HANDSHAKE : DGW_RTX_PTO_INITIAL;
}

bool dgw_rtx_hello_due(struct dgw_rtx_e *e, uint64_t pn, uint64_t now_ms)
{
	if (pn < 64)
		e->seen |= 1ull << pn;
	if (e->hello_ms && now_ms - e->hello_ms < DGW_RTX_PAIR_MS)
		return false;
	e->hello_ms = now_ms;
	return true;
}

/* ---- the worker's ---- */

DGW_WORKER_ALLOC(rtx, rtx)

void dgw_rtx_free(struct dgw_worker *w)
{
	if (!w->rtx)
		return;
	sodium_memzero(w->rtx, sizeof(*w->rtx));
	rte_free(w->rtx);
	w->rtx = NULL;
}

static void end(struct dgw_worker *w, struct dgw_rtx_e *e, unsigned ctr)
{
	dgw_rtx_end(w->rtx, e);
	dgw_ctr_inc(w, ctr);
}

/*
 * caddy acknowledges the hello's first Initial and, having lost the second
 * that came 0.05 ms behind it, answers only the client's PTO probe that
 * brings it again (SPEC §12.3): so the gateway holds all but the ACK until
 * that probe, then sends the rest a drawn delay later, as caddy answers.
 * Not under a replay's capture clock (nobody probes), nor for a cover
 * server that sends no ACK first (nothing arms the client's PTO).
 */
static bool hold(const struct dgw_worker *w, const struct dgw_shape *sh)
{
	return w->gw->cfg.quic_hold && w->gw->cfg.clock != DGW_CLOCK_CAPTURE && sh->ack_first;
}

static int answer(struct dgw_worker *w, struct dust_session *s, const struct dust_quic_accept *acc,
                  uint64_t mac)
{
	struct dgw_rtx_e *e = dgw_rtx_find(w->rtx, s);
	struct dgw_shape sh;
	bool evicted = false;

	if (e)
		dgw_rtx_end(w->rtx, e); /* cannot happen: a slot's flight ends with it */
	e = dgw_rtx_put(w->rtx, s, w->now_ms, &evicted);
	dgw_ctr_add(w, DGW_CTR_QUIC_RTX_EVICTED, evicted);
	e->acc = *acc;
	e->mac = mac;
	e->seen = 1ull << (acc->client_pn & 63) | 1ull << (acc->client_pn_lo & 63);
	dgw_shape_now(w->gw, &sh);
	e->pto_ms = sh.pto_ms; /* the cover server's, as learned */
	dust_rng_bytes(&w->rng, e->seed, sizeof(e->seed));
	if (!hold(w, &sh))
		return dgw_quic_flight(w, s, e, DGW_FLIGHT_ANSWER);
	/* the rest waits for the client's PTO probe (dgw_rtx_hello), or the longest wait */
	e->hold_ms = w->now_ms + dust_quic_answer_hold_max_ms();
	dgw_ctr_inc(w, DGW_CTR_QUIC_HELD);
	return dgw_quic_flight(w, s, e, DGW_FLIGHT_ACK_ALONE);
}

/* The first flight (pubwait.c, at PUBLISHED), kept for resends until the client confirms. */
void dgw_quic_answer(struct dgw_worker *w, struct rte_mbuf *m, struct dust_session *s,
                     const struct dust_quic_accept *acc, uint64_t mac)
{
	dgw_quic_cid_add(w, s);
	rte_pktmbuf_free(m); /* the hello's bytes are spent */
	if (answer(w, s, acc, mac) == 0)
		dgw_ctr_inc(w, DGW_CTR_QUIC_ANSWER);
}

void dgw_rtx_drop(struct dgw_worker *w, const struct dust_session *s)
{
	struct dgw_rtx_e *e = w->rtx && w->rtx->n ? dgw_rtx_find(w->rtx, s) : NULL;

	if (e)
		end(w, e, DGW_CTR_QUIC_RTX_DONE);
}

/* The hello's Initial names the DCID the flight answered (public bytes only). */
static bool same_dcid(const struct dgw_rtx_e *e, const struct dgw_rx *rx)
{
	return rx->len > 6u + e->acc.odcid_len && rx->dg[5] == e->acc.odcid_len &&
	       memcmp(rx->dg + 6, e->acc.odcid, e->acc.odcid_len) == 0;
}

bool dgw_rtx_hello(struct dgw_worker *w, struct rte_mbuf *m, const struct dgw_rx *rx,
                   struct dust_session *s)
{
	struct dgw_rtx_e *e = w->rtx->n ? dgw_rtx_find(w->rtx, s) : NULL;

	uint64_t pn;
	bool closed;

	if (!e || !same_dcid(e, rx))
		return false;
	/* a real server counts every byte from the address toward its 3x limit */
	dust_path_credit(s, rx->len);
	/* opened with the public Initial keys of its DCID, as anyone could */
	if (!dust_quic_client_initial_read(rx->dg, rx->len, &pn, &closed)) {
		dgw_drop_m(w, m, DUST_DROP_MALFORMED);
		return true;
	}
	/*
	 * The client gave the connection up (Chromium's close at its 4-second
	 * handshake timeout, SPEC §12.2): a real server drains, sending nothing
	 * more. Anyone can build one (public keys): it only ends the resends.
	 */
	if (closed) {
		rte_pktmbuf_free(m);
		end(w, e, DGW_CTR_QUIC_RTX_CLOSED);
		return true;
	}
	if (e->hold_ms) {
		/* the client's PTO probe: the held rest goes out as caddy answers it */
		uint64_t at = w->now_ms + dust_quic_answer_delay_ms(&w->rng);

		if (pn < 64)
			e->seen |= 1ull << pn;
		if (at < e->hold_ms) {
			e->hold_ms = at;
			dgw_ctr_inc(w, DGW_CTR_QUIC_PROBED);
		}
		rte_pktmbuf_free(m);
		return true;
	}
	if (!dgw_rtx_hello_due(e, pn, w->now_ms)) {
		dgw_drop_m(w, m,
		           DGW_DROP_QUIC_RTX_PAIR); /* the other Initial of one just answered */
		return true;
	}
	rte_pktmbuf_free(m);
	if (dgw_quic_flight(w, s, e, DGW_FLIGHT_AGAIN) == 0)
		dgw_ctr_inc(w, DGW_CTR_QUIC_RTX_HELLO);
	return true;
}

static void tick(struct dgw_worker *w, struct dgw_rtx_e *e)
{
	struct dust_session *s = (struct dust_session *)(uintptr_t)e->s;

	if (s->state != DUST_SESSION_LIVE ||
	    __atomic_load_n(&s->path_state, __ATOMIC_ACQUIRE) != DUST_PATH_AWAIT_DATA) {
		end(w, e, DGW_CTR_QUIC_RTX_DONE); /* confirmed: the client's data came */
		return;
	}
	if (e->hold_ms) {
		if (w->now_ms < e->hold_ms)
			return;
		/* its PTOs run from here, as the cover server's from its answer */
		e->hold_ms = 0;
		e->sent_ms = w->now_ms;
		(void)dgw_quic_flight(w, s, e, DGW_FLIGHT_HELD); /* refused: the 3x limit */
		return;
	}
	switch (dgw_rtx_due(e, w->now_ms)) {
	case DGW_RTX_WAIT:
		break;
	case DGW_RTX_GIVE_UP:
		end(w, e, DGW_CTR_QUIC_RTX_EXPIRED);
		break;
	case DGW_RTX_PTO_INITIAL:
		if (dgw_quic_flight(w, s, e, DGW_FLIGHT_PTO_INITIAL) == 0)
			dgw_ctr_inc(w, DGW_CTR_QUIC_RTX_PTO);
		break;
	case DGW_RTX_PTO_HANDSHAKE:
		if (dgw_quic_flight(w, s, e, DGW_FLIGHT_PTO_HANDSHAKE) == 0) {
			dgw_ctr_inc(w, DGW_CTR_QUIC_RTX_PTO);
			dgw_ctr_inc(w, DGW_CTR_QUIC_RTX_PTO_HS);
		}
		break;
	}
}

void dgw_rtx_run(struct dgw_worker *w)
{
	struct dgw_rtx *r = w->rtx;

	for (unsigned i = 0; r->n && i < DGW_RTX_MAX; i++)
		if (r->e[i].s)
			tick(w, &r->e[i]);
}
