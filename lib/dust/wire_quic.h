/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic cover profile's wire constants (SPEC.md §12): QUIC v1 (RFC 9000,
 * RFC 9001) and TLS 1.3 (RFC 8446) numbers, and where Dust's intro fields
 * ride inside a browser-shaped ClientHello. QUIC and TLS integers are big
 * endian; Dust's own fields keep their little-endian layouts.
 */
#ifndef DUST_WIRE_QUIC_H
#define DUST_WIRE_QUIC_H

#include <assert.h>
#include <stdint.h>

#include "wire.h"

enum dust_profile {
	DUST_PROFILE_RANDOM = 0, /* v2 as in §5-§6: uniform random bytes */
	DUST_PROFILE_QUIC = 1,   /* §12: QUIC v1 Initial, then 1-RTT short headers */
	DUST_PROFILE_MAX
};

/* ---- QUIC v1 (RFC 9000 §17, RFC 9001 §5) --------------------------------- */

enum dust_quic_wire {
	DUST_QUIC_VERSION = 1,
	DUST_QUIC_LONG = 0x80,      /* header form bit */
	DUST_QUIC_FIXED = 0x40,     /* fixed bit, set in every packet */
	DUST_QUIC_SPIN = 0x20,      /* short header: latency spin bit (unprotected) */
	DUST_QUIC_TYPE_MASK = 0x30, /* long header: packet type */
	DUST_QUIC_TYPE_INITIAL = 0x00,
	DUST_QUIC_TYPE_HANDSHAKE = 0x20,
	DUST_QUIC_CID_MAX = 20,    /* RFC 9000 §17.2 */
	DUST_QUIC_CLIENT_DCID = 8, /* Chromium's first DCID length */
	DUST_QUIC_SERVER_CID_MIN = 4,
	DUST_QUIC_SERVER_CID_LEN = 4,  /* what dustgw sends, as the cover (quic-go) does */
	DUST_QUIC_INITIAL_MIN = 1200,  /* RFC 9000 §14.1 */
	DUST_QUIC_CLIENT_DGRAM = 1250, /* Chromium 156: every Initial datagram */
	/* Chromium 156's hello with its X25519MLKEM768 share: two Initials, one DCID */
	DUST_QUIC_HELLO_DGRAMS = 2,
	DUST_QUIC_HELLO_BYTES = DUST_QUIC_HELLO_DGRAMS * DUST_QUIC_CLIENT_DGRAM,
	DUST_QUIC_AEAD_TAG = 16, /* AES-128-GCM tag of Initial protection */
	DUST_QUIC_HP_SAMPLE = 16,
	DUST_QUIC_FRAME_PADDING = 0x00,
	DUST_QUIC_FRAME_PING = 0x01,
	DUST_QUIC_FRAME_ACK = 0x02,
	DUST_QUIC_FRAME_CRYPTO = 0x06,
	DUST_QUIC_FRAME_CONNECTION_CLOSE = 0x1c, /* transport error; 0x1d: application */
	DUST_QUIC_CRYPTO_MAX = 4096,             /* largest ClientHello the server reassembles */
};

/* ---- Datagram size bounds (SPEC.md §12.4) --------------------------------- */

/*
 * Hard limits on every quic-profile datagram, handshake and data alike, at
 * what the cover's stacks send: Chromium 156 sends no UDP payload above
 * 1250 bytes, quic-go (the cover server) none above 1252 before path MTU
 * discovery. One bigger datagram marks a flow (issue 22: a client datagram
 * over 1250 flagged every Dust session and no Chromium connection). The
 * inner MTU follows from them: the bound less the short header and the
 * Dust packet's 32 bytes, no room kept for padding (padding only fills
 * what the bound leaves).
 */
enum dust_quic_bound {
	DUST_QUIC_CLIENT_DGRAM_MAX = 1250,               /* Chromium 156, every datagram */
	DUST_QUIC_SERVER_DGRAM_MAX = 1252,               /* quic-go before path MTU discovery */
	DUST_QUIC_SHORT_C2S_MAX = 1 + DUST_QUIC_CID_MAX, /* first byte, longest server CID */
	DUST_QUIC_SHORT_S2C = 1,                         /* first byte, DCID empty */
	/* largest inner packet one datagram carries, client to server (any CID): 1197 */
	DUST_QUIC_C2S_INNER_MAX =
	    DUST_QUIC_CLIENT_DGRAM_MAX - DUST_QUIC_SHORT_C2S_MAX - DUST_DATA_OVERHEAD,
	/* and server to client: 1219 */
	DUST_QUIC_S2C_INNER_MAX =
	    DUST_QUIC_SERVER_DGRAM_MAX - DUST_QUIC_SHORT_S2C - DUST_DATA_OVERHEAD,
};
/*
 * The server's first flight (SPEC.md §12.3): its Initial+Handshake datagram
 * and the Handshake tail after it, sized as the cover server sends them. The
 * defaults are caddy 2.6.2's (quic-go); dustgw learns its own cover server's
 * ([quic] cover_learn_s) or takes a configured shape. A client opens an
 * answer of ANSWER_MIN..ANSWER_MAX bytes (the ML-KEM ciphertext needs 1232
 * of them with a 4-byte CID: a smaller size asked for is raised to that) and
 * a tail of TAIL_LEAST..TAIL_MOST (a datagram of 1200 or more is taken for
 * an answer).
 */
enum dust_quic_flight_size {
	DUST_QUIC_ANSWER_MIN = 1200,
	DUST_QUIC_ANSWER_MAX = DUST_QUIC_SERVER_DGRAM_MAX,
	DUST_QUIC_ANSWER_BYTES = 1252, /* caddy 2.6.2's, the default */
	DUST_QUIC_TAIL_DEFAULT_MIN = 105,
	DUST_QUIC_TAIL_DEFAULT_MAX = 120,
	DUST_QUIC_TAIL_LEAST = 64,  /* a Handshake header with a 20-byte CID and a keepalive */
	DUST_QUIC_TAIL_MOST = 1199, /* under DUST_QUIC_ANSWER_MIN */
	/* a 1-RTT packet coalesced behind the tail: a short header, a sample, a tag; under a Dust
	   packet */
	DUST_QUIC_TAIL_SHORT_LEAST = 21,
	DUST_QUIC_TAIL_SHORT_MOST = 63,
};
static_assert((int)DUST_QUIC_CLIENT_DGRAM <= (int)DUST_QUIC_CLIENT_DGRAM_MAX,
              "the client Initial keeps the client bound");
static_assert(DUST_QUIC_C2S_INNER_MAX == 1197 && DUST_QUIC_S2C_INNER_MAX == 1219,
              "inner MTUs as SPEC §12.4 gives them");

/* ---- TLS 1.3 numbers used by the mirrored ClientHello -------------------- */

enum dust_tls_wire {
	DUST_TLS_CLIENT_HELLO = 1,
	DUST_TLS_SERVER_HELLO = 2,
	DUST_TLS_LEGACY_VERSION = 0x0303,
	DUST_TLS_V13 = 0x0304,
	DUST_TLS_AES_128_GCM_SHA256 = 0x1301,
	DUST_TLS_GROUP_X25519 = 0x001d,
	DUST_TLS_GROUP_X25519MLKEM768 = 0x11ec, /* draft-ietf-tls-ecdhe-mlkem */
	/* its client share: ML-KEM-768 encapsulation key (1184), then an x25519 share */
	DUST_TLS_HYBRID_EK_BYTES = 1184,
	DUST_TLS_HYBRID_SHARE_BYTES = DUST_TLS_HYBRID_EK_BYTES + 32,
	DUST_TLS_RANDOM_BYTES = 32,
	/* extension types, as Chromium 156 sends them in its QUIC ClientHello */
	DUST_TLS_EXT_SERVER_NAME = 0,
	DUST_TLS_EXT_SUPPORTED_GROUPS = 10,
	DUST_TLS_EXT_SIG_ALGS = 13,
	DUST_TLS_EXT_ALPN = 16,
	DUST_TLS_EXT_COMPRESS_CERT = 27,
	DUST_TLS_EXT_SUPPORTED_VERSIONS = 43,
	DUST_TLS_EXT_PSK_MODES = 45,
	DUST_TLS_EXT_KEY_SHARE = 51,
	DUST_TLS_EXT_QUIC_TP = 57,
	DUST_TLS_EXT_ALPS = 17613,
	DUST_TLS_EXT_ECH = 65037, /* GREASE encrypted_client_hello (outer) */
	DUST_TLS_EXT_CHROME_51764 = 51764,
};

/* ---- Dust intro inside the ClientHello (SPEC.md §12.2) ------------------- */

/*
 * random[0..16)   masked tag (as §5, mask keyed by S over the 24-byte nonce)
 * random[16..32)  first 16 bytes of the XChaCha20 nonce
 * DCID[0..8)      last 8 bytes of the nonce
 * key_share x25519 = the client's ephemeral E
 * ECH payload: ct[58] = XChaCha20-Poly1305(K_intro, nonce,
 *              ad = masked tag | E, pt = C | ts_ms | flags), confirm[16], filler
 */
enum dust_quic_intro_layout {
	DUST_QI_TAG_OFF = 0,                                        /* in random */
	DUST_QI_NONCE_OFF = 16,                                     /* in random */
	DUST_QI_PT_BYTES = DUST_PK_BYTES + 8 + 2,                   /* C, ts_ms, flags: 42 */
	DUST_QI_CT_BYTES = DUST_QI_PT_BYTES + DUST_MAC_BYTES,       /* 58 */
	DUST_QI_CONFIRM_OFF = DUST_QI_CT_BYTES,                     /* in the ECH payload */
	DUST_QI_MIN_ECH = DUST_QI_CONFIRM_OFF + DUST_CONFIRM_BYTES, /* 74 */
	DUST_QI_ECH_ENC_BYTES = 32,                                 /* GREASE enc: an X25519 key */
};
static_assert(DUST_QI_NONCE_OFF + 16 + DUST_QUIC_CLIENT_DCID ==
                  DUST_QI_NONCE_OFF + DUST_XNONCE_BYTES,
              "nonce = random[16..32) | DCID[0..8)");

/* quic intro PRK -> K_pq, the mask of the ML-KEM ciphertext in the first flight (§12.3) */
enum { DUST_KDF_PQ_MASK = 9 };
/* quic intro PRK -> K_rs, the mask of the first flight's resent Handshake packets (§12.3) */
enum { DUST_KDF_HS_RESEND = 10 };
/* the first flight's Handshake payload (masked ML-KEM ciphertext, filler): at most this */
enum { DUST_QUIC_FLIGHT_MAX = 1120, DUST_QUIC_PQ_CT_BYTES = 1088 };

/* Key schedule labels (SPEC.md §12.4). */
#define DUST_QUIC_INTRO_LABEL   "dust quic intro"
#define DUST_QUIC_SESSION_LABEL "dust quic session"

#endif /* DUST_WIRE_QUIC_H */
