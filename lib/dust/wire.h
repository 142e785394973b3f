/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Dust v2 wire format: every byte layout a peer or a censor sees.
 * SPEC.md is normative; this header and SPEC.md must agree, and the
 * static_asserts pin each layout. Multi-byte integers are little-endian
 * except the invitation's server port, which is network order.
 */
#ifndef DUST_WIRE_H
#define DUST_WIRE_H

#include <assert.h>
#include <stdint.h>

/* Sizes of primitives (libsodium names in comments). */
enum dust_crypto_sizes {
	DUST_KEY_BYTES = 32,     /* crypto_aead_chacha20poly1305_ietf_KEYBYTES */
	DUST_PK_BYTES = 32,      /* crypto_scalarmult_BYTES */
	DUST_MAC_BYTES = 16,     /* crypto_aead_*_ABYTES */
	DUST_XNONCE_BYTES = 24,  /* crypto_aead_xchacha20poly1305_ietf_NPUBBYTES */
	DUST_NONCE_BYTES = 12,   /* crypto_aead_chacha20poly1305_ietf_NPUBBYTES */
	DUST_ID_BYTES = 16,      /* invitation ID: store key, never on the wire */
	DUST_TAG_BYTES = 16,     /* intro tag: rotating, derived from the invitation */
	DUST_SALT_BYTES = 16,    /* crypto_pwhash_SALTBYTES */
	DUST_CONFIRM_BYTES = 16, /* intro confirmation MAC */
	DUST_HP_KEY_BYTES = 16,  /* crypto_shorthash_siphashx24_KEYBYTES */
};

/* ---- Invitation (SPEC.md §3) ------------------------------------------ */

enum dust_invite_layout {
	DUST_INVITE_VERSION = 2,
	DUST_SUITE_CHACHA20POLY1305 = 0,
	DUST_SUITE_AES256GCM = 1, /* SPEC.md §6.4 */
	DUST_SUITE_COUNT = 2,
	DUST_INVITE_PT_BYTES = 128,
	/* sealed = salt | xnonce | E(pt) | mac, then base64url without padding */
	DUST_INVITE_SEALED_BYTES =
	    DUST_SALT_BYTES + DUST_XNONCE_BYTES + DUST_INVITE_PT_BYTES + DUST_MAC_BYTES,
	DUST_INVITE_TEXT_LEN = (DUST_INVITE_SEALED_BYTES * 4 + 2) / 3, /* 246 chars */
	/* quic profile (§12.1): a 64-byte cover block follows the 128 bytes */
	DUST_INVITE_COVER_BYTES = 64,
	DUST_INVITE_PT_MAX = DUST_INVITE_PT_BYTES + DUST_INVITE_COVER_BYTES,
	DUST_INVITE_SEALED_MAX = DUST_INVITE_SEALED_BYTES + DUST_INVITE_COVER_BYTES,
	DUST_INVITE_QUIC_TEXT_LEN = (DUST_INVITE_SEALED_MAX * 4 + 2) / 3, /* 331 chars */
	DUST_INVITE_TEXT_MAX = DUST_INVITE_QUIC_TEXT_LEN + 1,             /* with NUL */
};

struct dust_wire_invite {
	uint8_t version;         /* DUST_INVITE_VERSION */
	uint8_t suite;           /* DUST_SUITE_* */
	uint8_t server_family;   /* 4 or 6 */
	uint8_t tunnel_family;   /* 4 or 6 */
	uint8_t server_port[2];  /* network order */
	uint8_t tunnel_prefix;   /* prefix length of the tunnel network */
	uint8_t profile;         /* DUST_PROFILE_*: 0 random (v2), 1 quic (§12) */
	uint8_t server_addr[16]; /* IPv4 in the first 4 bytes, rest zero */
	uint8_t tunnel_addr[16]; /* the client's inner source address */
	uint8_t server_pk[DUST_PK_BYTES];
	uint8_t id[DUST_ID_BYTES];
	uint8_t secret[DUST_KEY_BYTES];
	uint8_t expiry[8]; /* unix seconds: last moment of first use */
};
static_assert(sizeof(struct dust_wire_invite) == DUST_INVITE_PT_BYTES,
              "invitation plaintext layout");

/* quic profile only: the cover the client's ClientHello names (§12.1). */
struct dust_wire_invite_cover {
	uint8_t sni_len; /* 1..62 */
	uint8_t sni[62]; /* host name, lowercase [a-z0-9.-], zero padded */
	uint8_t alpn;    /* 0 = "h3" (the only one defined) */
};
static_assert(sizeof(struct dust_wire_invite_cover) == DUST_INVITE_COVER_BYTES, "cover block");

/* ---- Intro (SPEC.md §5) ------------------------------------------------ */

enum dust_intro_layout {
	DUST_INTRO_TAG_OFF = 0,
	DUST_INTRO_NONCE_OFF = DUST_INTRO_TAG_OFF + DUST_TAG_BYTES,   /* 16 */
	DUST_INTRO_CT_OFF = DUST_INTRO_NONCE_OFF + DUST_XNONCE_BYTES, /* 40 */
	DUST_INTRO_PT_BYTES = 76,
	DUST_INTRO_CT_BYTES = DUST_INTRO_PT_BYTES + DUST_MAC_BYTES,     /* 92 */
	DUST_INTRO_PAD_OFF = DUST_INTRO_CT_OFF + DUST_INTRO_CT_BYTES,   /* 132 */
	DUST_INTRO_MIN_BYTES = DUST_INTRO_PAD_OFF + DUST_CONFIRM_BYTES, /* 148 */
	DUST_INTRO_PAD_MAX = 1024,
	DUST_EPOCH_S = 120, /* intro tag rotation period */
	/* flags: the client takes the server's share in the answer (§5.1); required */
	DUST_INTRO_FLAG_SHARE = 1,
};

/* Encrypted under K_intro (XChaCha20-Poly1305, AD = tag). */
struct dust_wire_intro_pt {
	uint8_t client_pk[DUST_PK_BYTES]; /* long-term client key C */
	uint8_t eph_pk[DUST_PK_BYTES];    /* fresh ephemeral E */
	uint8_t ts_ms[8];                 /* unix milliseconds */
	uint8_t pad_len[2];               /* random bytes after the ciphertext */
	uint8_t flags[2];                 /* zero in v2 */
};
static_assert(sizeof(struct dust_wire_intro_pt) == DUST_INTRO_PT_BYTES, "intro plaintext layout");

/*
 * The server's answer to an intro (SPEC.md §5.1): its fresh ephemeral E_s
 * sealed under K_ans, then data packets (at least a keepalive) under the
 * keys that take DH(e_s, E).
 */
enum dust_answer_layout {
	DUST_ANSWER_NONCE_OFF = 0, /* nonce = BLAKE2b-192(key = K_ans, E_s) */
	DUST_ANSWER_CT_OFF = DUST_ANSWER_NONCE_OFF + DUST_XNONCE_BYTES,          /* 24 */
	DUST_ANSWER_BYTES = DUST_ANSWER_CT_OFF + DUST_PK_BYTES + DUST_MAC_BYTES, /* 72 */
};

/* ---- Data packet (SPEC.md §6) ------------------------------------------ */

enum dust_data_layout {
	DUST_HDR_BYTES = 16,    /* masked: counter, length, ts_s, data_len */
	DUST_SAMPLE_BYTES = 16, /* header-protection sample, after header */
	/* mask = SipHash-2-4-128(HP key, sample), all 16 bytes */
	/* data starts right after the header: the ciphertext is data | padding */
	DUST_DATA_PREFIX = DUST_HDR_BYTES,                      /* 16 */
	DUST_DATA_OVERHEAD = DUST_DATA_PREFIX + DUST_MAC_BYTES, /* 32 */
	DUST_DATA_MIN_BYTES = DUST_DATA_OVERHEAD,               /* 32: a keepalive */
	DUST_PT_MAX = 65535, /* largest encrypted length (data + padding) */
	DUST_CHAIN_MAX = 16, /* most Dust packets decoded from one datagram */
};
static_assert((int)DUST_MAC_BYTES >= (int)DUST_SAMPLE_BYTES,
              "every data packet has a full sample after its header");

/*
 * Plaintext of the masked header; also the AEAD associated data, so every
 * field is authenticated and the ciphertext is the data and padding alone
 * (a 64-byte payload costs the AEAD two ChaCha20 blocks, as it does bare).
 */
struct dust_wire_hdr {
	uint8_t counter[8];  /* per-direction packet number; nonce = 0^4 | counter */
	uint8_t len[2];      /* encrypted length (data + padding), excluding the MAC */
	uint8_t ts_s[4];     /* unix seconds, low 32 bits */
	uint8_t data_len[2]; /* 0 = keepalive; at most len */
};
static_assert(sizeof(struct dust_wire_hdr) == DUST_HDR_BYTES, "data header");

/*
 * Compact packet (SPEC.md §6.5, quic profile): a counter's low byte, masked
 * with the tag as the sample, the ciphertext, the tag. It carries what fits
 * in under a §6 packet (a compressed inner ACK, ackz.h): its length alone,
 * under DUST_DATA_MIN_BYTES, tells it from one.
 */
enum dust_compact_layout {
	DUST_COMPACT_OVERHEAD = 1 + DUST_MAC_BYTES,                     /* 17 */
	DUST_COMPACT_MAX = DUST_DATA_MIN_BYTES - 1,                     /* 31 */
	DUST_COMPACT_PT_MAX = DUST_COMPACT_MAX - DUST_COMPACT_OVERHEAD, /* 14 */
};

/* ---- Limits (SPEC.md §8) ----------------------------------------------- */

#define DUST_REKEY_AFTER_PACKETS  (UINT64_C(1) << 56) /* client re-intros */
#define DUST_REJECT_AFTER_PACKETS (UINT64_C(1) << 60) /* sender refuses */

/*
 * Key update (SPEC.md §8.1): the data key changes every 2^22 packets, the
 * key epoch being counter >> DUST_KEY_EPOCH_LOG; half AES-GCM's
 * confidentiality limit of 2^23 packets (RFC 9001 §6.6).
 */
enum { DUST_KEY_EPOCH_LOG = 22 };
#define DUST_KEY_EPOCH_PACKETS (UINT64_C(1) << DUST_KEY_EPOCH_LOG)
/* Integrity limits (RFC 9001 §6.6): packets failing authentication per session. */
#define DUST_FORGERY_LIMIT_CHACHA20POLY1305 (UINT64_C(1) << 36)
#define DUST_FORGERY_LIMIT_AES256GCM        (UINT64_C(1) << 52)

/* KDF contexts (crypto_kdf_CONTEXTBYTES == 8) and subkey ids. */
#define DUST_KDF_CTX_INVITE  "dustINVT"
#define DUST_KDF_CTX_SESSION "dustSESS"
#define DUST_KDF_CTX_KEYUPD  "dustKUPD" /* epoch n >= 1 data key from K_upd */
enum dust_kdf_id {
	DUST_KDF_TAG = 1,      /* invitation -> K_tag */
	DUST_KDF_INTRO = 2,    /* invitation -> K_intro */
	DUST_KDF_C2S_DATA = 1, /* session -> client-to-server AEAD key */
	DUST_KDF_S2C_DATA = 2,
	DUST_KDF_C2S_HP = 3, /* header protection */
	DUST_KDF_S2C_HP = 4,
	DUST_KDF_CONFIRM = 5,
	DUST_KDF_C2S_UPD = 6, /* key-update secret, client to server */
	DUST_KDF_S2C_UPD = 7,
	DUST_KDF_ANSWER = 8, /* intro PRK -> K_ans, the answer's AEAD key (§5.1) */
};

#endif /* DUST_WIRE_H */
