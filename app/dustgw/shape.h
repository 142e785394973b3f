/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shape of the cover server's first flight (SPEC §12.3, §12.5): what the
 * gateway's answer to a quic intro takes from it, read from the datagrams
 * the cover server sent a probe hello (learn.c) or from the configuration.
 * Plain C, no DPDK: the unit test and the fuzz harness link it alone.
 */
#ifndef DGW_SHAPE_H
#define DGW_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What the answer builder varies (dispose.c, lifecycle.c, rtx.c). */
struct dgw_shape {
	uint16_t answer;   /**< the Initial+Handshake datagram's size, 1200..1252 */
	uint16_t tail_min; /**< the Handshake tail's sizes, tail_min..tail_max */
	uint16_t tail_max;
	uint16_t pto_ms; /**< the first PTO; each resend doubles it */
	bool ack_first;  /**< an ACK-only Initial goes before the answer */
	/**
	 * A small 1-RTT datagram of this size right after a tail of at most
	 * short_tail bytes (0: never). quic-go sends one (24 B) in the first
	 * burst after its shorter certificate-chain ends, none after the longer.
	 */
	uint8_t short_len;
	uint16_t short_tail;
	/**
	 * Of the flights with that 1-RTT, how many thirds coalesce it behind
	 * the tail in one datagram (0..3): quic-go does in 7 of 19.
	 */
	uint8_t coalesce;
};

enum {
	DGW_SHAPE_PTO_MIN = 50,
	DGW_SHAPE_PTO_MAX = 2000,
	DGW_SHAPE_DG_MAX = 16,   /* datagrams recorded per probe */
	DGW_SHAPE_BURST_MS = 50, /* a datagram this much after the last is a resend */
	DGW_SHAPE_ANSWER_MIN = 1200,
	DGW_SHAPE_ANSWER_MAX = 1252,
	DGW_SHAPE_TAIL_LEAST = 64,
	DGW_SHAPE_TAIL_MOST = 1199,
	DGW_SHAPE_SHORT_LEAST = 21, /* 1-byte header, 4 bytes of sample room, a 16-byte tag */
	DGW_SHAPE_SHORT_MOST = 63,  /* under a Dust packet: no client takes it for data */
	DGW_SHAPE_COALESCE_MAX = 3, /* thirds */
};

/**
 * caddy 2.6.2's (quic-go): 1252, a Handshake tail of 105..120, 205 ms, ACK,
 * a 24 B 1-RTT after tails to 124 (after every one of those), coalesced
 * behind the tail in a third of the flights.
 */
void dgw_shape_default(struct dgw_shape *sh);

/** What dgw_shape_clamp changed (a bit per field). */
enum {
	DGW_SHAPE_CL_ANSWER = 1,
	DGW_SHAPE_CL_TAIL = 2,
	DGW_SHAPE_CL_PTO = 4,
	DGW_SHAPE_CL_SHORT = 8,
};
/** Bring sh into what every client opens; returns the DGW_SHAPE_CL_* bits it changed. */
unsigned dgw_shape_clamp(struct dgw_shape *sh);

/** One word, for an atomic swap between the learner and the workers. */
uint64_t dgw_shape_pack(const struct dgw_shape *sh);
void dgw_shape_unpack(uint64_t v, struct dgw_shape *sh);

/* QUIC packet kinds in a datagram (a bit each) */
enum dgw_qkind {
	DGW_QK_INITIAL = 1,
	DGW_QK_0RTT = 2,
	DGW_QK_HANDSHAKE = 4,
	DGW_QK_RETRY = 8,
	DGW_QK_SHORT = 16,
	DGW_QK_VN = 32,    /* Version Negotiation */
	DGW_QK_OTHER = 64, /* another version's long header */
};

/** One datagram the cover server sent: its header facts, nothing decrypted. */
struct dgw_shape_dg {
	uint16_t len;
	uint8_t first;      /**< the first packet's DGW_QK_* */
	uint8_t kinds;      /**< every packet's DGW_QK_* */
	uint8_t npkts;      /**< coalesced packets read */
	uint16_t first_len; /**< the first packet's size (all of len when it takes the rest) */
	uint32_t t_ms;      /**< arrival, milliseconds after the probe went out */
};

/**
 * Read the long headers of a datagram (RFC 9000 §17.2: form, version, CIDs,
 * an Initial's token, Length) and walk its coalesced packets. Headers only:
 * the payloads are encrypted. false if the first packet's header does not
 * fit dg or states lengths past it (*out then says nothing).
 */
bool dgw_shape_dgram(const uint8_t *dg, size_t len, struct dgw_shape_dg *out);

/** The datagrams that answered one probe hello, in arrival order. */
struct dgw_shape_probe {
	struct dgw_shape_dg dg[DGW_SHAPE_DG_MAX];
	unsigned n;
};

/**
 * Derive a shape from n probes' answers. Per probe: the answer is the first
 * datagram of 1200 bytes or more whose first packet is an Initial; an
 * ACK-only Initial (one Initial, under 1200) before it; the tail is the
 * first datagram after it that starts with a Handshake packet and holds no
 * Initial, its size that Handshake packet's; the short datagram is a 1-RTT
 * packet of at most DGW_SHAPE_SHORT_MOST coalesced behind that packet (as
 * quic-go coalesces it after its longer chain ends), or else a lone 1-RTT
 * packet in the first burst after the tail; the PTO is the time from the
 * last datagram of the first burst to the first answer-sized Initial after
 * it. Over the probes: the answer size the most of them sent (the larger on
 * a tie), the tails' smallest and largest, the ACK if most sent one, the
 * shortest PTO; the short datagram's size the smallest seen, after tails up
 * to halfway between the largest tail with one and the smallest without.
 * Where the probes show one side only, *cur's rule stays if they agree with
 * it (every tail had one, none over cur's bound; no tail had one, none
 * within it), else: after every tail seen, or none. What no probe showed (a
 * tail, a PTO) stays as in *cur. Returns the probes that had an answer (0:
 * *out is *cur). Not clamped.
 */
unsigned dgw_shape_derive(const struct dgw_shape_probe *p, unsigned n, const struct dgw_shape *cur,
                          struct dgw_shape *out);

#ifdef __cplusplus
}
#endif

#endif /* DGW_SHAPE_H */
