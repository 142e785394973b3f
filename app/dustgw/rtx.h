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
 * PTO: caddy 2.6.2's (quic-go) first resend, about 205 ms after its flight
 * (issue 17's measurement), doubling each time, PTO_MAX resends; a hello's
 * second Initial within PAIR_MS of the first is not answered again. An entry
 * takes its first PTO from the shape when it is put (learn.c measures the
 * cover server's); DGW_RTX_PTO_MS is the default.
 */
enum { DGW_RTX_MAX = 64, DGW_RTX_PTO_MS = 205, DGW_RTX_PTO_MAX = 3, DGW_RTX_PAIR_MS = 50 };

struct dgw_rtx_e {
	const void *s; /* the session; NULL: a free entry */
	struct dust_quic_accept acc;
	uint8_t seed[DUST_KEY_BYTES]; /* the ServerHello's random bytes (dust_rng_seed) */
	uint64_t mac;
	uint64_t sent_ms;  /* the last send: the PTO runs from it */
	uint64_t hello_ms; /* the last retransmitted hello answered; 0: none */
	uint16_t pto_ms;   /* the first PTO (DGW_RTX_PTO_MS unless the caller sets another) */
	uint8_t ptos;      /* PTO resends so far */
};

struct dgw_rtx {
	struct dgw_rtx_e e[DGW_RTX_MAX];
	unsigned n;
};

enum dgw_rtx_due {
	DGW_RTX_WAIT = 0,    /* nothing due */
	DGW_RTX_PTO = 1,     /* resend now (counted in ptos) */
	DGW_RTX_GIVE_UP = 2, /* the last PTO passed unconfirmed: wipe it */
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
/** What e's PTO timer says at now_ms; DGW_RTX_PTO also counts the resend and restarts it. */
enum dgw_rtx_due dgw_rtx_due(struct dgw_rtx_e *e, uint64_t now_ms);
/** A retransmitted hello's Initial at now_ms: answer it (true), or its pair's second (false). */
bool dgw_rtx_hello_due(struct dgw_rtx_e *e, uint64_t now_ms);

#endif /* DGW_RTX_H */
