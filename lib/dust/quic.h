/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libdust's quic cover profile (SPEC.md §12): the intro as a QUIC v1 Initial
 * carrying a browser-shaped TLS ClientHello, the server's answer as a QUIC
 * server first flight (forward secret: a server ephemeral joins the keys),
 * and data as 1-RTT short-header packets around v2 data packets.
 */
#ifndef DUST_QUIC_H
#define DUST_QUIC_H

#include "dust.h"
#include "wire_quic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Initial packet protection (quic_initial.c; RFC 9001 §5) ------------- */

struct dust_quic_keys {
	uint8_t key[16];
	uint8_t iv[12];
	uint8_t hp[16];
};

/** Initial keys for one side ("client in" / "server in") from the first DCID. */
void dust_quic_initial_keys(const uint8_t *dcid, size_t dcid_len, bool server,
                            struct dust_quic_keys *k);

/* ---- Client ------------------------------------------------------------ */

/** The contiguous spans of the ClientHello one hello Initial carries (Chromium's: 2, then 1). */
enum { DUST_QUIC_HELLO_SPANS = 2 };

/** What a client keeps between its Initial and the server's answer. */
struct dust_quic_client {
	uint8_t esk[DUST_KEY_BYTES]; /**< ephemeral secret e, wiped once answered */
	/** ML-KEM-768 decapsulation key of the hello's X25519MLKEM768 share, wiped likewise */
	uint8_t dk[2400];
	uint8_t prk[DUST_KEY_BYTES]; /**< intro-stage key (es, cs, transcript) */
	uint8_t eph_pk[DUST_PK_BYTES];
	uint8_t dcid[DUST_QUIC_CID_MAX];
	uint8_t dcid_len;
	struct dust_ipaddr tunnel;
	struct dust_endpoint server;
	bool pending;
	uint8_t suite; /**< DUST_SUITE_* of the invitation */
	/** the hello's ClientHello, for its retransmissions (dust_quic_intro_resend) */
	uint8_t ch[2048];
	uint16_t ch_len;
	/** the next packet number: a PTO resend skips one first, the close does not */
	uint64_t next_pn;
	/** the ClientHello's spans (offset, length) each of the hello's Initials carried */
	uint16_t hello_spans[DUST_QUIC_HELLO_DGRAMS][DUST_QUIC_HELLO_SPANS][2];
	uint8_t hello_nspans[DUST_QUIC_HELLO_DGRAMS];
	uint8_t resends; /**< PTO resends so far */
	/** the server's ACK-only Initial came: the first Initial is acknowledged, not the second */
	bool acked;
};

/**
 * Build a quic-profile intro, the hello as Chromium 156 sends it: two
 * 1250-byte datagrams back to back at out (send out[0..1250) first, then
 * out[1250..2500)), QUIC v1 Initials with one DCID and packet numbers 1
 * and 2, whose CRYPTO frames carry a ClientHello for inv's cover name with
 * an X25519MLKEM768 share (a fresh ML-KEM-768 key pair: dk stays in qc).
 * qc keeps what the answer needs. Returns DUST_QUIC_HELLO_BYTES or -errno
 * (EMSGSIZE: cap < 2500; EINVAL: not a quic invitation).
 */
DUST_MUST_CHECK int dust_quic_intro_build(const struct dust_invite *inv,
                                          const struct dust_identity *client, struct dust_rng *rng,
                                          uint64_t now_ms, uint8_t *out, size_t cap,
                                          struct dust_quic_client *qc);

/**
 * Open the server's first flight (SPEC 12.3): dg, its Initial (ServerHello
 * with the server ephemeral) coalesced with the Handshake packet holding
 * the masked ML-KEM-768 ciphertext, and tail, the Handshake packet after it
 * holding a Dust keepalive under the hybrid session keys, alone in its
 * datagram or with one short header of 21..63 bytes behind it (the cover
 * server's small 1-RTT, passed by). The keepalive authenticates the whole. tail is opened in place.
 * On DUST_OK s is a live client session and qc is wiped; on any drop nothing changes and qc stays
 * pending (a later answer may still come).
 */
DUST_MUST_CHECK enum dust_drop dust_quic_answer_open(struct dust_quic_client *qc,
                                                     const struct dust_limits *lim, uint32_t now_s,
                                                     uint8_t *dg, size_t len, uint8_t *tail,
                                                     size_t tail_len, struct dust_session *s);

/**
 * The hello of qc again, as Chromium 156 retransmits it on its PTO (SPEC
 * §12.2): one 1250-byte Initial under the same DCID, its packet number one
 * past the next (Chromium skips one per PTO: 4, 6, 8 after 1 and 2), holding
 * the ClientHello spans of one of the hello's two Initials, cut into CRYPTO
 * frames afresh and laid out with new PINGs and PADDING: the first's on the
 * first resend, the second's on the next, and so on; once qc->acked (the
 * server acknowledged the first Initial alone), the second's first, as
 * Chromium's PTO probe carries only what is unacknowledged. A gateway that kept the one Initial
 * that came pairs it with the resend that carries the other. Nothing of the keys changes: the
 * answer to any copy opens. Returns DUST_QUIC_CLIENT_DGRAM or -errno (EINVAL: no hello pending;
 * EMSGSIZE: cap too small).
 */
DUST_MUST_CHECK int dust_quic_intro_resend(struct dust_quic_client *qc, struct dust_rng *rng,
                                           uint8_t *out, size_t cap);

/**
 * When Chromium 156 sends its first PTO probe (dust_quic_intro_resend) for
 * a hello the server acknowledged with its ACK-only Initial and has not
 * answered (SPEC §12.2): ms after the hello's first Initial, drawn from
 * the probes of the capture in quic_hello.h, never under three times
 * rtt_ms (the RTT that ACK measured: RFC 9002's PTO from a first sample,
 * smoothed RTT + 4 x its half).
 */
uint32_t dust_quic_pto_probe_ms(struct dust_rng *rng, uint32_t rtt_ms);
/**
 * The cover server's answer after the client Initial that lets it answer
 * (SPEC §12.3: the hello's second Initial, or the PTO probe that brings
 * it again): ms, drawn from caddy 2.6.2's in quic_hello.h (in us there),
 * rounded up to the millisecond clocks that hold the answer keep.
 */
uint32_t dust_quic_answer_delay_ms(struct dust_rng *rng);
/**
 * An answer held for the client's PTO probe (SPEC §12.3) goes out this
 * long after the hello when no Initial of the hello comes again, ms: 1 s,
 * as long as a lone first Initial is held for its second (12.2). caddy
 * answers only the Initial that brings the hello again, however late: a
 * probe at 3 x a long path's RTT, or a client's resend 300 ms on when its
 * probe was lost, or an older client's first resend; this only bounds a
 * client that sends none.
 */
uint32_t dust_quic_answer_hold_max_ms(void);

/**
 * Give the hello up as Chromium 156 does when no answer came within its
 * 4-second handshake idle timeout: one 1250-byte Initial (the next packet
 * number, two bytes wide) holding a CONNECTION_CLOSE (NO_ERROR) with
 * Chromium's reason phrase for the timeout (idle_us: microseconds since the
 * hello), then PADDING. qc is left as it was (an answer may still come).
 * Returns DUST_QUIC_CLIENT_DGRAM or -errno.
 */
DUST_MUST_CHECK int dust_quic_intro_close(struct dust_quic_client *qc, uint64_t idle_us,
                                          uint8_t *out, size_t cap);

/**
 * Server: is dg one client Initial (filling it) whose frames, under the
 * public Initial keys of its DCID, hold a CONNECTION_CLOSE? Nothing in it
 * is authenticated (anyone can build one): a caller only stops sending on it.
 */
bool dust_quic_is_client_close(const uint8_t *dg, size_t len);

void dust_quic_client_wipe(struct dust_quic_client *qc);

/* ---- Server ------------------------------------------------------------- */

/** What the answer needs from an accepted Initial. */
struct dust_quic_accept {
	uint8_t odcid[DUST_QUIC_CID_MAX]; /**< client's first DCID: Initial keys */
	uint8_t odcid_len;
	uint64_t client_pn;               /**< largest packet number to acknowledge */
	uint64_t client_pn_lo;            /**< the hello's other one (client_pn - 1) */
	uint8_t server_pk[DUST_PK_BYTES]; /**< the ephemeral put in the ServerHello */
	/**
	 * Initial packet number of the flight's ACK-only Initial; the answer's
	 * Initial takes the next. 0 at accept; a resent flight (SPEC §12.3)
	 * goes on from where the last one ended, as a real server's does.
	 */
	uint64_t server_pn;
	/**
	 * The answer's Handshake payload (SPEC 12.3), in the session keys: the
	 * ML-KEM-768 ciphertext to the hello's ek, masked, then random filler
	 */
	uint16_t flight_len;
	uint8_t flight[DUST_QUIC_FLIGHT_MAX];
	/**
	 * K_rs (SPEC 12.3): each send of the Handshake packet masks the flight
	 * afresh, as a real server's resend is a new packet; hs_sent counts
	 * them (the first, 0, goes unmasked).
	 */
	uint8_t hs_key[DUST_KEY_BYTES];
	uint8_t hs_sent;
};

/**
 * The invitation a hello names (its store index), or -1: the first
 * Initial's public-key decryption (dg may hold it alone, or the whole
 * hello) and the ClientHello's tag, unmasked and looked up; no AEAD, no
 * X25519, nothing changed. The gateway holds a first Initial for its
 * second only when this names an invitation. For the endpoint rule of
 * SPEC §9: an Initial from a live session's address that names another
 * invitation is not tried.
 */
int64_t dust_quic_intro_peek(struct dust_server *srv, const uint8_t *dg, size_t len);

/**
 * The hellos a gateway has seen (SPEC 12.2): at most 2^log2_slots, shared
 * by threads without a lock; a newer one may push an older out. NULL and
 * errno on failure (log2_slots outside 4..28, no memory).
 */
struct dust_seen;
struct dust_seen *dust_seen_new(unsigned log2_slots);
void dust_seen_free(struct dust_seen *s);
/** Adds k to the set; true when it was there already. */
bool dust_seen_add(struct dust_seen *s, const uint8_t *k, size_t len);

enum dust_quic_first {
	DUST_QUIC_FIRST_NONE,  /**< names no invitation (dust_quic_intro_peek's -1) */
	DUST_QUIC_FIRST_NEW,   /**< a hello's first Initial, not seen before: now in seen */
	DUST_QUIC_FIRST_AGAIN, /**< a copy of one already seen, or of the invitation's
	                            newest accepted intro (the store's, cluster-wide) */
};

/**
 * A hello's first Initial, judged before its second comes (SPEC 12.2):
 * dust_quic_intro_peek, then the hello's intro nonce (the client random's
 * nonce bytes and the DCID, which every copy of the hello shares and no
 * other hello has) against the invitation's newest accepted intro and
 * against seen (NULL: the store's alone). A prober's replay of a client's
 * first Initial is AGAIN at once; holding it for a second that never comes
 * would answer it a hold later than a real server does. Adds to seen.
 */
enum dust_quic_first dust_quic_hello_first(struct dust_server *srv, struct dust_seen *seen,
                                           const uint8_t *dg, size_t len);

/**
 * Accept a quic-profile intro: dg[0..len) is the hello, its two client
 * Initials back to back (the first's Length field says where it ends). The
 * checks and the commit follow SPEC §5 (tag, AEAD, expiry, bound key,
 * window, replay, binding), then the session keys also take DH(e_s, E) from
 * eph, which the caller wipes afterwards. On DUST_OK s is filled (server
 * role, profile quic, a fresh server CID) and acc tells the answer. Nothing
 * changes on any drop.
 */
DUST_MUST_CHECK enum dust_drop
dust_quic_intro_accept(struct dust_server *srv, struct dust_rng *rng, const uint8_t *dg, size_t len,
                       uint64_t now_ms, const struct dust_endpoint *from,
                       const struct dust_eph *eph, struct dust_session *s,
                       struct dust_quic_accept *acc, struct dust_intro_info *info);

/**
 * dust_quic_intro_accept with the answer's size: its Initial+Handshake
 * datagram will be answer_len bytes (the cover server's, DUST_QUIC_ANSWER_MIN
 * ..DUST_QUIC_ANSWER_MAX; raised to what the ML-KEM ciphertext needs, 1232
 * with a 4-byte CID). The size is fixed here: the Handshake payload is in the
 * session keys. dust_quic_intro_accept is this with DUST_QUIC_ANSWER_BYTES.
 */
DUST_MUST_CHECK enum dust_drop
dust_quic_intro_accept_sized(struct dust_server *srv, struct dust_rng *rng, const uint8_t *dg,
                             size_t len, uint64_t now_ms, const struct dust_endpoint *from,
                             const struct dust_eph *eph, size_t answer_len, struct dust_session *s,
                             struct dust_quic_accept *acc, struct dust_intro_info *info);

/**
 * Build the server's first flight for an accepted intro: an Initial with
 * ACK and a ServerHello, coalesced with a Handshake packet that carries
 * acc's flight (the masked ML-KEM ciphertext and filler): the size the accept
 * fixed, 1252 bytes by default as the cover server's (under the 3x
 * anti-amplification limit of the client's 1250). A client takes 1200..1252.
 * Returns its length or -errno. The flight's second datagram is
 * dust_quic_answer_tail_build's. Each call is a send of the Handshake
 * packet (acc->hs_sent moves on: no two carry the same bytes).
 */
DUST_MUST_CHECK int dust_quic_answer_build(struct dust_session *s, struct dust_quic_accept *acc,
                                           struct dust_rng *rng, uint32_t now_s, uint8_t *out,
                                           size_t cap);

/**
 * The first flight's second datagram, where the cover server sends the end
 * of its certificate chain: one Handshake packet (DCID empty, SCID the
 * server's CID) holding a Dust keepalive, 105..120 bytes in all (the
 * spread of caddy's Handshake packets there: its 131..141-byte tails are
 * one of those with its 24-byte 1-RTT packet coalesced behind).
 * dust_quic_answer_open opens it with the flight; a live client opens it as
 * data behind dust_quic_hs_match's header.
 * Returns its length or -errno.
 */
DUST_MUST_CHECK int dust_quic_answer_tail_build(struct dust_session *s, struct dust_rng *rng,
                                                uint32_t now_s, uint8_t *out, size_t cap);
/**
 * The same, lo..hi bytes in all (uniform; the cover server's spread), within
 * DUST_QUIC_TAIL_LEAST..DUST_QUIC_TAIL_MOST (else -EINVAL): a client takes
 * any of them. dust_quic_answer_tail_build is this with 105..120.
 */
DUST_MUST_CHECK int dust_quic_answer_tail_build_sized(struct dust_session *s, struct dust_rng *rng,
                                                      uint32_t now_s, size_t lo, size_t hi,
                                                      uint8_t *out, size_t cap);

/**
 * The first flight's first datagram, as the cover server sends it before its
 * 1252 bytes: an Initial (packet number 0, 2 bytes wide) holding only an ACK
 * of the hello's first Initial, 41 bytes with an 8-byte CID (with 4: 37,
 * caddy's). rng is unused (the ACK delay is 0, as caddy's).
 * Returns its length or -errno.
 */
DUST_MUST_CHECK int dust_quic_answer_ack_build(const struct dust_session *s,
                                               const struct dust_quic_accept *acc,
                                               struct dust_rng *rng, uint8_t *out, size_t cap);
/**
 * The first flight's Initial alone, as quic-go resends it on its first PTO
 * (SPEC 12.3): PADDING, then the answer's CRYPTO frame with its ServerHello
 * (the same bytes where rng is seeded as for the answer), no ACK, filling
 * the answer's size, packet number acc->server_pn (the caller moves it on).
 * A client takes the ServerHello from it as from the answer. Returns its
 * length or -errno.
 */
DUST_MUST_CHECK int dust_quic_answer_initial_build(const struct dust_session *s,
                                                   const struct dust_quic_accept *acc,
                                                   struct dust_rng *rng, uint8_t *out, size_t cap);
/**
 * The first flight's Handshake packet alone, as quic-go resends it on its
 * second PTO (SPEC 12.3): acc's flight masked for this send (acc->hs_sent
 * moves on), rng drawing nothing the client needs. A client takes it as the
 * answer's Handshake packet. Returns its length or -errno.
 */
DUST_MUST_CHECK int dust_quic_answer_hs_build(const struct dust_session *s,
                                              struct dust_quic_accept *acc, uint8_t *out,
                                              size_t cap);
/**
 * An ACK-only Initial acknowledging the client packet numbers in seen (bit
 * i: packet number i), as quic-go answers a client's retransmitted
 * Initial: 37 bytes for one range, 2 more for each further one with a
 * 4-byte CID. Packet number acc->server_pn (the caller moves it on).
 * Returns its length or -errno (EINVAL: seen empty).
 */
DUST_MUST_CHECK int dust_quic_answer_acks_build(const struct dust_session *s,
                                                const struct dust_quic_accept *acc, uint64_t seen,
                                                uint8_t *out, size_t cap);
/**
 * A client Initial that fills dg (opened with the public keys of its DCID):
 * its packet number, and whether it holds a CONNECTION_CLOSE. false: no
 * client Initial that opens.
 */
bool dust_quic_client_initial_read(const uint8_t *dg, size_t len, uint64_t *pn, bool *closed);

/** What a datagram from the server is of a first flight, by its headers alone (client). */
enum dust_quic_part {
	DUST_QUIC_PART_OTHER = 0, /**< none of these: maybe the tail */
	DUST_QUIC_PART_ANSWER,    /**< an Initial and the Handshake packet after it */
	DUST_QUIC_PART_INITIAL,   /**< an Initial alone, 1200 bytes or more (a PTO resend) */
	DUST_QUIC_PART_HANDSHAKE, /**< a Handshake packet alone that holds a flight */
};
enum dust_quic_part dust_quic_answer_part(const uint8_t *dg, size_t len);

/**
 * dust_quic_answer_open with the flight's two packets from two datagrams,
 * as PTO resends bring them: the ServerHello's Initial from init (an answer
 * or an Initial alone), the Handshake packet from hs (an answer or a
 * Handshake packet alone), the same server CID in both. dg and the tail as
 * there; dust_quic_answer_open(dg) is this with init = hs = dg.
 */
DUST_MUST_CHECK enum dust_drop
dust_quic_answer_open_parts(struct dust_quic_client *qc, const struct dust_limits *lim,
                            uint32_t now_s, const uint8_t *init, size_t init_len, const uint8_t *hs,
                            size_t hs_len, uint8_t *tail, size_t tail_len, struct dust_session *s);

/**
 * Client: is dg shaped as a server's ACK-only Initial (long header, Initial,
 * v1, DCID empty, no token, under 1200 bytes)? Such a datagram carries no
 * keys and changes nothing: a client passes it by uncounted.
 */
bool dust_quic_is_flight_ack(const uint8_t *dg, size_t len);

/** Is dg a client Initial of QUIC v1 (header only, nothing authenticated)? */
bool dust_quic_is_initial(const uint8_t *dg, size_t len);

/* ---- 1-RTT data (short header around v2 data packets) ----------------- */

/** Short-header bytes before the Dust packet on what s sends (1 + DCID). */
static inline size_t dust_quic_tx_prefix(const struct dust_session *s)
{
	if (s->profile != DUST_PROFILE_QUIC)
		return 0;
	return 1 + (s->role == DUST_ROLE_CLIENT ? s->cid_len : 0);
}

/** Short-header bytes before the Dust packet on what s receives. */
static inline size_t dust_quic_rx_prefix(const struct dust_session *s)
{
	if (s->profile != DUST_PROFILE_QUIC)
		return 0;
	return 1 + (s->role == DUST_ROLE_SERVER ? s->cid_len : 0);
}

/**
 * The profile's bound on one datagram s sends (SPEC §12.4): 1250 from a
 * client, 1252 from a server until path MTU discovery raises it (up to
 * 1439, dust_pmtu_probe); 0 in the random profile (no bound).
 */
static inline size_t dust_quic_tx_dgram_max(const struct dust_session *s)
{
	if (s->profile != DUST_PROFILE_QUIC)
		return 0;
	if (s->role == DUST_ROLE_CLIENT)
		return DUST_QUIC_CLIENT_DGRAM_MAX;
	/* the bound path MTU discovery found (dust_pmtu_probe) */
	uint16_t pmtu = __atomic_load_n(&s->pmtu, __ATOMIC_RELAXED);

	return pmtu ? (size_t)pmtu : (size_t)DUST_QUIC_SERVER_DGRAM_MAX;
}

/**
 * The cap to seal with behind s's short header: room, lowered to what the
 * bound leaves after the short header. Padding stays within the cap
 * (dust_data_seal), so the datagram keeps the bound.
 */
static inline size_t dust_quic_tx_cap(const struct dust_session *s, size_t room)
{
	size_t max = dust_quic_tx_dgram_max(s);

	if (!max)
		return room;
	max -= dust_quic_tx_prefix(s);
	return room < max ? room : max;
}

/** Largest inner packet s sends in one short-header datagram; 0 = no bound. */
static inline size_t dust_quic_tx_inner_max(const struct dust_session *s)
{
	size_t max = dust_quic_tx_dgram_max(s);

	return max ? max - dust_quic_tx_prefix(s) - DUST_DATA_OVERHEAD : 0;
}

/** Largest inner packet s's peer sends it in one short-header datagram; 0 = no bound. */
static inline size_t dust_quic_rx_inner_max(const struct dust_session *s)
{
	size_t max;

	if (s->profile != DUST_PROFILE_QUIC)
		return 0;
	max = s->role == DUST_ROLE_CLIENT ? DUST_QUIC_SERVER_DGRAM_MAX : DUST_QUIC_CLIENT_DGRAM_MAX;
	return max - dust_quic_rx_prefix(s) - DUST_DATA_OVERHEAD;
}

/**
 * Write the short header at pkt (dust_quic_tx_prefix(s) bytes): fixed bit,
 * the connection's spin bit, five random bits (what header protection
 * leaves visible of key phase, reserved and packet-number length), DCID.
 */
void dust_quic_short_put(const struct dust_session *s, struct dust_rng *rng, uint8_t *pkt);

/**
 * An ACK-sized datagram from s (SPEC §12.4) at dg: the short header, then
 * random bytes, to a size drawn from the cover's sizes in s's direction
 * that are under every Dust packet behind the header (tx prefix +
 * DUST_DATA_MIN_BYTES), each as likely as it was in the cover. It carries
 * nothing; the peer counts it and passes it by. Returns its length (at
 * most cap), 0 if the cover sent none that small or cap is too short.
 */
size_t dust_quic_ack_put(const struct dust_session *s, struct dust_rng *rng, uint8_t *dg,
                         size_t cap);

/**
 * A compact packet (SPEC §6.5) of pt[0..ptlen) behind s's short header at
 * dg (cap bytes): the datagram takes one of the cover's sizes for s's
 * direction that lie under a §6 packet and hold it, the plaintext padded
 * with zeros. Returns the datagram's length, or -errno (dust_compact_seal;
 * -EINVAL for a random-profile session or ptlen over DUST_COMPACT_PT_MAX).
 */
int dust_quic_compact_put(struct dust_session *s, struct dust_rng *rng, const uint8_t *pt,
                          size_t ptlen, uint8_t *dg, size_t cap);

/**
 * s opened a short-header datagram of data: is an ACK-sized datagram due
 * (dust_quic_ack_put)? Every second one, as Chromium and quic-go
 * acknowledge every second packet they receive. Only s's receiver calls it
 * (rx half).
 */
static inline bool dust_quic_ack_due(struct dust_session *s)
{
	if (++s->rx_unacked < 2)
		return false;
	s->rx_unacked = 0;
	return true;
}

/**
 * Does dg start with a short header for s (form, fixed bit, DCID)? Public
 * bytes only: the Dust packet after it is what authenticates.
 */
bool dust_quic_short_match(const struct dust_session *s, const uint8_t *dg, size_t len);

/**
 * Does dg start with a short header for s and end before any Dust packet
 * could (an ACK-sized datagram, dust_quic_ack_put)? Public bytes only.
 */
bool dust_quic_ack_match(const struct dust_session *s, const uint8_t *dg, size_t len);

/* ---- the client's Handshake packet (SPEC §12.3) ------------------------ */

/*
 * A real client answers the server's first flight with a Handshake packet
 * (its Finished) before 1-RTT: the quic-profile client sends its first Dust
 * packet after the answer inside one. Long header: type Handshake, DCID the
 * server's CID, SCID empty, a 2-byte Length, then the Dust packet(s).
 */
size_t dust_quic_hs_prefix(const struct dust_session *s);
/** Write the header at pkt (dust_quic_hs_prefix(s) bytes) for dust_len bytes after it. */
void dust_quic_hs_put(const struct dust_session *s, struct dust_rng *rng, uint8_t *pkt,
                      size_t dust_len);
/**
 * The header length if dg is a Handshake packet of s's peer (server: from
 * its client; client: the first flight's tail from its server), else 0.
 */
size_t dust_quic_hs_match(const struct dust_session *s, const uint8_t *dg, size_t len);
/**
 * Server: quic-go's acknowledgement of the client's Handshake packets, which
 * caddy sends at once after the client's second flight (SPEC 12.3): one
 * Handshake packet alone, its 2-byte packet number, 5-byte ACK frame and
 * tag random to anyone without the handshake keys; 36 bytes with a 4-byte
 * CID, as caddy's in every load of test/data/chromium156-caddy-loads.pcap.
 * Returns its length or -errno.
 */
DUST_MUST_CHECK int dust_quic_hs_ack_build(const struct dust_session *s, struct dust_rng *rng,
                                           uint8_t *out, size_t cap);
/**
 * Client: is dg that Handshake ACK from s's server (a Handshake packet from
 * its CID that fills dg, too short for a Dust packet)? It carries nothing
 * for Dust: passed by.
 */
bool dust_quic_is_hs_ack(const struct dust_session *s, const uint8_t *dg, size_t len);

/*
 * What caddy 2.6.2 sends after a browser's second flight, behind its
 * Handshake ACK (SPEC 12.3), in 18 of the 20 loads of
 * test/data/chromium156-caddy-loads.pcap: a 1-RTT datagram of 24 bytes (25
 * in 4 of the 18; its HANDSHAKE_DONE), then one of 287 (a session ticket).
 * A gateway sends the first as random bytes behind the short header (a
 * client passes it by: under a Dust packet's size), and seals the
 * keepalive that answers the second flight to the second's size.
 */
enum {
	DUST_QUIC_DONE_BYTES = 24,
	DUST_QUIC_DONE_LONG_IN_18 = 4, /* how often 25 */
	DUST_QUIC_TICKET_BYTES = 287,
};
/**
 * Server: that HANDSHAKE_DONE datagram for s at dg: s's short header, then
 * random bytes to 24 bytes, or 25 as often as caddy's. Returns its length,
 * 0 if cap is too short or s is no quic server session.
 */
size_t dust_quic_done_put(const struct dust_session *s, struct dust_rng *rng, uint8_t *dg,
                          size_t cap);
/**
 * The padding that makes one data packet of data_len bytes behind s's
 * short header a datagram of exactly dgram bytes (a path MTU probe, the
 * ticket-sized keepalive): *pad set, true; false when dgram cannot hold it.
 * Seal it with a cap of dgram - dust_quic_tx_prefix(s).
 */
bool dust_quic_pad_exact(struct dust_pad *pad, const struct dust_session *s, size_t dgram,
                         size_t data_len);

/* ---- the client's second flight (SPEC §12.3; quic_confirm.c) -------------- */

/*
 * A client answers the server's first flight as Chromium 156 answers its
 * cover server's: a 1250-byte datagram, an Initial (ACK of the server's
 * Initials, PADDING) coalesced with a Handshake packet (its ACK), then a
 * 133..148-byte datagram, a Handshake packet (its Finished) coalesced with
 * a 1-RTT packet, where Dust's first packet rides.
 */

/** What the second flight keeps of the hello: public values only. */
struct dust_quic_confirm {
	uint8_t odcid[DUST_QUIC_CID_MAX]; /**< the hello's DCID: the Initial keys */
	uint8_t odcid_len;
	uint64_t pn; /**< the client's next Initial packet number */
	/**
	 * The server Initials received (dust_quic_confirm_saw), least and
	 * greatest packet number; none noted: 0 and 1, the cover server's pair.
	 */
	uint64_t srv_lo, srv_hi;
	bool srv_saw;
};

/** Keep what the second flight needs from qc; call before dust_quic_answer_open wipes it. */
void dust_quic_confirm_init(const struct dust_quic_client *qc, struct dust_quic_confirm *cf);

/**
 * Note a server Initial of the first flight that the second flight's ACK
 * acknowledges, as a browser acknowledges what it received: dg begins with
 * it (the ACK-only Initial, or the answer's), under the server Initial keys
 * of cf's DCID. A cover server that sends no ACK-only Initial numbers its
 * answer 0, and the ACK then says 0 alone. 0, or -EINVAL when dg holds no
 * such Initial (another hello's, junk): nothing noted.
 */
int dust_quic_confirm_saw(struct dust_quic_confirm *cf, const uint8_t *dg, size_t len);

/**
 * The second flight's first datagram for the live client session s:
 * exactly 1250 bytes, the Initial (packet number cf->pn, DCID the server's
 * CID, under the client Initial keys of cf's DCID) holding an ACK of the
 * server's Initials noted (0 and 1 if none) and PADDING, then a Handshake packet of
 * Length 23 whose protected bytes are random. Nothing in it is Dust's.
 * Returns its length or -errno.
 */
DUST_MUST_CHECK int dust_quic_confirm_ack_build(const struct dust_quic_confirm *cf,
                                                const struct dust_session *s, struct dust_rng *rng,
                                                uint8_t *out, size_t cap);

/**
 * The second datagram, 133..148 bytes: a Handshake packet of Length 56
 * (random protected bytes), then a 1-RTT short header and one Dust packet:
 * held[0..held_len) when it fits (*carried set), else a keepalive; a held
 * packet that did not ride follows as ordinary data. Returns its length or
 * -errno.
 */
DUST_MUST_CHECK int dust_quic_confirm_build(struct dust_session *s, struct dust_rng *rng,
                                            uint32_t now_s, const uint8_t *held, size_t held_len,
                                            uint8_t *out, size_t cap, bool *carried);

/** What a long header to a server session's CID is (dust_quic_confirm_kind). */
enum dust_quic_confirm_kind {
	DUST_QUIC_CONFIRM_NONE = 0, /**< not a long header to s's CID: none of these */
	DUST_QUIC_CONFIRM_ACK,      /**< the second flight's first datagram: nothing for Dust */
	DUST_QUIC_CONFIRM_DATA,     /**< its second: a Dust packet at *off */
	DUST_QUIC_CONFIRM_OLD,      /**< a previous release's Handshake packet: Dust data at *off */
	DUST_QUIC_CONFIRM_BAD,      /**< to s's CID, but none of these shapes */
};

/**
 * Server: classify dg from s's client on public bytes (no keys); the Dust
 * data that DATA and OLD name still has to open under s's keys.
 */
enum dust_quic_confirm_kind dust_quic_confirm_kind(const struct dust_session *s, const uint8_t *dg,
                                                   size_t len, size_t *off);

#ifdef __cplusplus
}
#endif

#endif /* DUST_QUIC_H */
