/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The table of answered quic first flights awaiting the client's
 * confirmation (rtx.c, SPEC §12.3): bounded, the oldest gives way, each
 * entry wiped when it ends. It knows no packets and no worker: sessions are
 * opaque keys, times are milliseconds given by the caller (the worker's
 * clock in the gateway, a fake one in its test).
 */
#ifndef DGW_RTX_H
#define DGW_RTX_H

#include <stdbool.h>
#include <stdint.h>

#include "quic.h"

/*
 * PTO: caddy 2.6.2's (quic-go) resends of a flight the client never
 * confirms, measured (SPEC §12.3): at 1, 2, 5 and 10 times its first PTO
 * after the flight (about 200, 400, 1000, 2000 ms), the Initial alone twice,
 * then the Handshake packet alone and the tail, then again; given up at 20
 * times it (Chromium closes at 4 s). A client's retransmitted Initial
 * moves none of them. An entry takes its first PTO from the shape when it
 * is put (learn.c measures the cover server's); DGW_RTX_PTO_MS is the
 * default. A hello's second Initial within PAIR_MS of the first is not
 * answered again.
 */
enum {
	DGW_RTX_MAX = 64,
	DGW_RTX_PTO_MS = 205,
	DGW_RTX_PTO_MAX = 4,
	DGW_RTX_GIVE_UP_PTOS = 20,
	DGW_RTX_PAIR_MS = 50,
};

struct dgw_rtx_e {
	const void *s; /* the session; NULL: a free entry */
	struct dust_quic_accept acc;
	uint8_t seed[DUST_KEY_BYTES]; /* the ServerHello's random bytes (dust_rng_seed) */
	uint64_t mac;
	uint64_t sent_ms;  /* the flight's first send: the PTOs run from it */
	uint64_t hello_ms; /* the last retransmitted hello answered; 0: none */
	uint64_t hold_ms;  /* the flight after its ACK goes out then (SPEC §12.3); 0: sent */
	uint64_t seen;     /* the client's Initial packet numbers received (bit i: i < 64) */
	uint16_t pto_ms;   /* the first PTO (DGW_RTX_PTO_MS unless the caller sets another) */
	uint16_t tail_len; /* the tail's Handshake packet, as first sent (quic-go resends it so) */
	uint8_t ptos;      /* PTO resends so far */
};

struct dgw_rtx {
	struct dgw_rtx_e e[DGW_RTX_MAX];
	unsigned n;
};

enum dgw_rtx_due {
	DGW_RTX_WAIT = 0,          /* nothing due */
	DGW_RTX_PTO_INITIAL = 1,   /* resend the Initial alone, twice, now (counted in ptos) */
	DGW_RTX_PTO_HANDSHAKE = 2, /* resend the Handshake packet alone and the tail now */
	DGW_RTX_GIVE_UP = 3,       /* the last PTO passed unconfirmed: wipe it */
};

/** The entry of session s, or NULL. */
struct dgw_rtx_e *dgw_rtx_find(struct dgw_rtx *r, const void *s);
/**
 * A new entry for s at now_ms (seed, acc and mac for the caller to fill): a
 * free one, else the oldest, wiped first (*evicted set).
 */
struct dgw_rtx_e *dgw_rtx_put(struct dgw_rtx *r, const void *s, uint64_t now_ms, bool *evicted);
/** End e: every byte of it zeroed, its place free. */
void dgw_rtx_end(struct dgw_rtx *r, struct dgw_rtx_e *e);
/** What e's PTO timer says at now_ms; a resend due is also counted in e->ptos. */
enum dgw_rtx_due dgw_rtx_due(struct dgw_rtx_e *e, uint64_t now_ms);
/**
 * A retransmitted hello's Initial of packet number pn at now_ms: acknowledge
 * it (true), or its pair's second (false). Either way pn is seen.
 */
bool dgw_rtx_hello_due(struct dgw_rtx_e *e, uint64_t pn, uint64_t now_ms);

#endif /* DGW_RTX_H */
