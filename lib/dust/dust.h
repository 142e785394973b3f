/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libdust public API: the Dust v2 protocol over libsodium, with no DPDK.
 * Used by the gateway (app/dustgw), the tools and the tests. Wire layouts
 * are in wire.h; the normative description is SPEC.md.
 *
 * Conventions: constructors return a pointer or NULL with errno set;
 * others return 0 or -errno; packet functions return an enum dust_drop.
 * A human-readable reason for the last failure of a non-packet call is in
 * dust_last_error() (thread-local).
 */
#ifndef DUST_H
#define DUST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ackz.h"
#include "wire.h"
#include "wire_quic.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DUST_MUST_CHECK __attribute__((warn_unused_result))

/** Initialise libsodium; call once before anything else. 0 or -1. */
int dust_init(void);
/**
 * No core dump of this process, whatever the core pattern (a file, or a
 * pipe to systemd-coredump): RLIMIT_CORE 0 and PR_SET_DUMPABLE 0. For the
 * programs that hold the server key, the store or a client's key (SPEC §7).
 * 0 or -errno.
 */
int dust_core_dumps_off(void);
/**
 * Open a file of secrets (a key, a store) for reading: the file itself, not
 * a symbolic link (-ELOOP), a regular file owned by this user or root, with
 * no access by group or others (-EPERM); a FIFO is refused, never waited on.
 * fd or -errno, the reason in dust_last_error().
 */
int dust_file_open_private(const char *path);
/**
 * Read a small file that holds a secret (a password file) whole into buf,
 * NUL-terminated. It must be the file itself (not a symbolic link: -ELOOP),
 * a regular file (a FIFO is refused, never waited on) owned by this user or
 * root (-EPERM). A file that does not fit in cap - 1 bytes is refused
 * (-EFBIG), never cut. *shared (if given) is set when group or others may
 * read it, for the caller to warn. 0 or -errno, the reason in
 * dust_last_error().
 */
int dust_secret_read(const char *path, char *buf, size_t cap, bool *shared);
/**
 * Open, creating it 0600 if missing, a file of secrets to append to (a
 * client's record of the invitations it used): the same rules, and no
 * access by group or others. fd or -errno.
 */
int dust_file_append_private(const char *path);

/** Reason for the last failed non-packet call on this thread. */
const char *dust_last_error(void);

/* ---- Crypto backend (aead.c) ------------------------------------------------ */

/**
 * The data-packet AEAD's backend and code path, e.g. "ipsec-mb 1.3.0 (AVX-512)"
 * or "libsodium 1.0.18 (AES-NI)". A per-thread buffer, valid until the next call.
 */
const char *dust_crypto_backend_name(void);
/**
 * Choose the backend at run time: "ipsec-mb" or "sodium" (the default is the
 * best one built in). For tests and benchmarks; call before packets flow.
 * 0, or -ENOTSUP when that backend is not built in or cannot run here.
 */
int dust_crypto_select(const char *name);
/** Can this process seal and open data packets of suite (DUST_SUITE_*)? */
bool dust_suite_available(uint8_t suite);
/** "chacha20-poly1305", "aes-256-gcm", or "unknown". */
const char *dust_suite_name(uint8_t suite);
/** DUST_SUITE_* for a name above; -EINVAL when unknown. */
int dust_suite_parse(const char *name);

/* ---- Results ------------------------------------------------------------ */

/** Why a packet was not accepted. One name per reason in dust_drop_name(). */
enum dust_drop {
	DUST_OK = 0,
	DUST_DROP_TRUNCATED,       /**< too short, or a chained length past the end */
	DUST_DROP_AUTH,            /**< data packet failed its tag */
	DUST_DROP_REPLAY,          /**< counter already seen or left of the window */
	DUST_DROP_STALE,           /**< timestamp older than the window */
	DUST_DROP_FUTURE,          /**< timestamp ahead of the window */
	DUST_DROP_MALFORMED,       /**< authenticated, but inner lengths inconsistent */
	DUST_DROP_KEY_EXHAUSTED,   /**< sender reached DUST_REJECT_AFTER_PACKETS */
	DUST_DROP_INTRO_UNKNOWN,   /**< intro tag matches no live invitation */
	DUST_DROP_INTRO_AUTH,      /**< intro ciphertext or confirmation failed */
	DUST_DROP_INTRO_EXPIRED,   /**< unused invitation past its expiry */
	DUST_DROP_INTRO_WRONG_KEY, /**< invitation bound to another client key */
	DUST_DROP_INTRO_STALE,     /**< intro timestamp outside the window */
	DUST_DROP_INTRO_REPLAY,    /**< intro not newer than the last accepted one */
	DUST_DROP_INTRO_DUP,       /**< the very intro already accepted: no-op */
	DUST_DROP_INTRO_PERSIST,   /**< first binding could not be written to disk */
	DUST_DROP_INTRO_REVOKED,   /**< invitation revoked (dust-invite revoke) */
	/** etcd store: no quorum (or no member) to commit a first binding */
	DUST_DROP_STORE_UNAVAILABLE,
	/** intro older than the server's start: a crash may have lost its freshness */
	DUST_DROP_INTRO_EARLY,
	DUST_DROP_MAX
};

/** Static name of a drop reason ("auth", "replay", ...). */
const char *dust_drop_name(enum dust_drop d);

/* ---- Addresses ------------------------------------------------------------ */

/** An IPv4 or IPv6 address; IPv4 lives in a[0..3], the rest zero. */
struct dust_ipaddr {
	uint8_t family; /**< 4 or 6; 0 = unset */
	uint8_t a[16];
};

/** An outer UDP endpoint, the session table's key. */
struct dust_endpoint {
	struct dust_ipaddr ip;
	uint16_t port; /**< host order */
};

/** Parse "1.2.3.4" or "fe80::1" (no port). 0 or -EINVAL. */
int dust_ipaddr_parse(struct dust_ipaddr *out, const char *text);
/** Format into buf (at least 46 bytes). Returns buf. */
const char *dust_ipaddr_format(const struct dust_ipaddr *ip, char *buf, size_t len);
bool dust_ipaddr_equal(const struct dust_ipaddr *a, const struct dust_ipaddr *b);

/* ---- Fast CSPRNG (rng.c) --------------------------------------------------- */

enum { DUST_RNG_BUF_BYTES = 1024 };

/**
 * Per-thread ChaCha20 generator with fast key erasure, seeded from the OS.
 * Not thread-safe: one per lcore or thread. Costs one getrandom at init.
 */
struct dust_rng {
	uint8_t key[DUST_KEY_BYTES];
	uint32_t pos;
	uint8_t buf[DUST_RNG_BUF_BYTES];
};

void dust_rng_init(struct dust_rng *rng);
/**
 * A generator whose output is fixed by key: the same key gives the same
 * bytes (the gateway rebuilds a resent first flight's ServerHello bit for
 * bit from a key it drew for that flight alone). key comes from a seeded
 * generator and serves nothing else.
 */
void dust_rng_seed(struct dust_rng *rng, const uint8_t key[DUST_KEY_BYTES]);
void dust_rng_bytes(struct dust_rng *rng, void *out, size_t len);
/** Uniform in [0, upper) without modulo bias; upper 0 returns 0. */
uint32_t dust_rng_uniform(struct dust_rng *rng, uint32_t upper);
void dust_rng_wipe(struct dust_rng *rng);

/* ---- Padding --------------------------------------------------------------- */

enum dust_pad_kind {
	DUST_PAD_UNIFORM = 0, /**< pad length uniform in [min, max] */
	DUST_PAD_FILL = 1,    /**< total packet length uniform in [needed, mtu] */
};

struct dust_pad {
	uint8_t kind;  /**< enum dust_pad_kind */
	uint8_t model; /**< quic sessions: datagram sizes from the cover's (SPEC §12.4) */
	uint16_t min;  /**< UNIFORM: smallest pad */
	uint16_t max;  /**< UNIFORM: largest pad */
	uint16_t mtu;  /**< cap on the whole datagram's Dust bytes; 0 = none */
};

/** Defaults: uniform 0..63 bytes, no MTU cap; quic sessions take the size model. */
void dust_pad_default(struct dust_pad *pad);

/* ---- Server identity (identity.c) ----------------------------------------- */

struct dust_identity {
	uint8_t pk[DUST_PK_BYTES];
	uint8_t sk[DUST_KEY_BYTES];
};

int dust_identity_generate(struct dust_identity *id);
/** Write sk to path (mode 0600, write-then-rename, fsync); pk is derived. */
DUST_MUST_CHECK int dust_identity_save(const struct dust_identity *id, const char *path);
/** Load; refuses a file readable or writable by group/others (-EPERM). */
DUST_MUST_CHECK int dust_identity_load(struct dust_identity *id, const char *path);
void dust_identity_wipe(struct dust_identity *id);

/* ---- Invitations (invite.c) ----------------------------------------------- */

enum { DUST_COVER_SNI_MAX = 62 };

struct dust_invite {
	uint8_t suite;
	uint8_t profile;                        /**< enum dust_profile: random (0) or quic (1) */
	char cover_sni[DUST_COVER_SNI_MAX + 1]; /**< quic: SNI of the cover, NUL-terminated */
	struct dust_ipaddr server;
	uint16_t port; /**< host order */
	struct dust_ipaddr tunnel;
	uint8_t tunnel_prefix;
	uint8_t server_pk[DUST_PK_BYTES];
	uint8_t id[DUST_ID_BYTES];
	uint8_t secret[DUST_KEY_BYTES];
	uint64_t expiry; /**< unix seconds */
};

/** Fill a fresh invitation (random id and secret) for this server. */
DUST_MUST_CHECK int dust_invite_new(struct dust_invite *inv, const struct dust_identity *server,
                                    const struct dust_ipaddr *addr, uint16_t port,
                                    const struct dust_ipaddr *tunnel, uint8_t tunnel_prefix,
                                    uint64_t expiry);

/** 128-byte plaintext form (wire.h struct dust_wire_invite). */
void dust_invite_pack(const struct dust_invite *inv, uint8_t out[DUST_INVITE_PT_BYTES]);
/** -EINVAL for a bad version, family, prefix or nonzero reserved byte. */
DUST_MUST_CHECK int dust_invite_unpack(struct dust_invite *inv,
                                       const uint8_t in[DUST_INVITE_PT_BYTES]);

/** Plaintext length of inv: 128, or 192 with the quic cover block. */
size_t dust_invite_pt_len(const struct dust_invite *inv);
/** Set the quic cover name (a host name, [a-z0-9.-], 1..62 chars). 0 or -EINVAL. */
DUST_MUST_CHECK int dust_invite_cover_set(struct dust_invite *inv, const char *sni);
/** 128 bytes, then the 64-byte cover block for a quic invitation. */
void dust_invite_pack_full(const struct dust_invite *inv, uint8_t out[DUST_INVITE_PT_MAX]);
/** Unpack 128 (random profile) or 192 (quic) bytes; -EINVAL on any mismatch. */
DUST_MUST_CHECK int dust_invite_unpack_full(struct dust_invite *inv, const uint8_t *in, size_t len);

/** Argon2id-seal under password and base64url-encode into text (DUST_INVITE_TEXT_MAX). */
DUST_MUST_CHECK int dust_invite_seal(const struct dust_invite *inv, const char *password,
                                     size_t password_len, char *text, size_t text_cap);
/**
 * Decode and open invitation text. Whitespace in text is ignored.
 * -EINVAL: not an invitation (bad characters or length);
 * -EBADMSG: wrong password or corrupted; -ENOMEM: Argon2id could not allocate.
 */
DUST_MUST_CHECK int dust_invite_open(struct dust_invite *inv, const char *text,
                                     const char *password, size_t password_len);
void dust_invite_wipe(struct dust_invite *inv);

/** Keys precomputed from an invitation when it loads (never per packet). */
struct dust_invite_keys {
	uint8_t tag_key[DUST_KEY_BYTES];   /**< K_tag: intro tag PRF */
	uint8_t intro_key[DUST_KEY_BYTES]; /**< K_intro: intro AEAD */
};

void dust_invite_derive(const struct dust_invite *inv, struct dust_invite_keys *keys);
/** Intro tag for an epoch (floor(unix_s / DUST_EPOCH_S)). */
void dust_intro_tag(const struct dust_invite_keys *keys, uint64_t epoch,
                    uint8_t tag[DUST_TAG_BYTES]);

/* ---- Sessions ---------------------------------------------------------------- */

enum { DUST_REPLAY_WORDS = 4 }; /* 256-bit bitmap: window of 192 packets */

/** RFC 6479 sliding window (replay.c). */
struct dust_replay {
	uint64_t top; /**< highest counter accepted + 1; 0 = none yet */
	uint64_t bitmap[DUST_REPLAY_WORDS];
};

void dust_replay_init(struct dust_replay *r);
/** Cheap pre-decryption check: true if counter may be fresh. */
bool dust_replay_check(const struct dust_replay *r, uint64_t counter);
/** After authentication: record counter; false if it was a replay. */
bool dust_replay_update(struct dust_replay *r, uint64_t counter);

enum dust_role { DUST_ROLE_CLIENT = 1, DUST_ROLE_SERVER = 2 };

enum dust_session_state {
	DUST_SESSION_FREE = 0,
	DUST_SESSION_LIVE = 1,
	DUST_SESSION_RETIRING = 2, /**< out of the index, slot not yet reusable */
};

/* Path validation (SPEC.md §9.1): a server session's peer address. */
enum dust_path_state {
	DUST_PATH_VALID = 0,       /**< proved: no limit */
	DUST_PATH_AWAIT_DATA = 1,  /**< quic intro: any authenticated packet proves it */
	DUST_PATH_AWAIT_EPOCH = 2, /**< random intro: a packet under the answer's keys */
	DUST_PATH_AWAIT_ECHO = 3,  /**< moved: the echo of a challenge */
};
enum { DUST_PATH_COOKIE_BYTES = 8, DUST_PATH_MSG_BYTES = 1 + DUST_PATH_COOKIE_BYTES };
/*
 * A data segment whose first byte is below this is a path message, not an
 * inner packet: every IPv4 packet starts 0x4_, every IPv6 packet 0x6_.
 */
enum { DUST_PATH_IP_FIRST_MIN = 0x40 };
/* Until validated, a server sends at most this many times what it received. */
enum { DUST_PATH_AMPLIFY = 3 };

/**
 * One end of a Dust session. The rx half (rx keys, replay, last_rx) is
 * written only by its owner thread; the tx half (tx keys, tx_counter) may be
 * sealed from several threads: tx_counter advances with an atomic add.
 */
struct dust_session {
	uint8_t rx_key[DUST_KEY_BYTES];
	uint8_t rx_hp[DUST_HP_KEY_BYTES];
	uint8_t tx_key[DUST_KEY_BYTES];
	uint8_t tx_hp[DUST_HP_KEY_BYTES];
	struct dust_replay replay;
	uint64_t tx_counter;       /**< next counter to send; atomic */
	struct dust_endpoint peer; /**< outer address of the peer */
	struct dust_ipaddr tunnel; /**< client's inner address */
	/*
	 * quic server: path MTU discovery as quic-go's (SPEC.md §12.4): the
	 * datagram bound found so far (0: DUST_QUIC_SERVER_DGRAM_MAX), read by
	 * encoders on any lcore (atomic). The search's state (pmtu_max,
	 * pmtu_probe, pmtu_at_ms, path_cookie) is the session's worker's alone.
	 * The fields fill holes: the session stays 616 bytes.
	 */
	uint16_t pmtu;
	uint32_t last_rx_s;  /**< unix seconds of the last authenticated packet */
	uint32_t invite_idx; /**< server: index in the store */
	uint8_t role;        /**< enum dust_role */
	uint8_t state;       /**< enum dust_session_state */
	uint8_t profile;     /**< enum dust_profile (wire_quic.h) */
	uint8_t spin;        /**< quic: this connection's spin bit (0 or 0x20) */
	uint8_t cid_len;     /**< quic: server-chosen connection ID */
	uint8_t cid[20];
	uint8_t suite; /**< DUST_SUITE_* of the data AEAD */
	uint8_t
	    rx_unacked; /**< quic: data datagrams opened since the last ACK-sized one (rx half) */
	/*
	 * Server: has the peer's address shown that it receives what is sent
	 * there (SPEC.md §9.1)? Until it has, at most path_credit bytes may go
	 * to it: three times what came from it. path_state and path_credit are
	 * read and spent by encoders on any lcore (atomics).
	 */
	uint8_t path_state; /**< enum dust_path_state */
	/** the challenge in flight: AWAIT_ECHO's, or while VALID a path MTU probe's */
	uint8_t path_cookie[DUST_PATH_COOKIE_BYTES];
	uint16_t pmtu_max;   /**< the search's top, not yet refused; 0: not started */
	uint16_t pmtu_probe; /**< the size of the probe in flight; 0: none */
	int64_t path_credit; /**< bytes that may still be sent */
	/*
	 * Key update (SPEC.md §8.1). rx_key and tx_key are epoch 0's keys; the
	 * key of epoch n >= 1 is kdf(K_upd, n). The receiver holds the keys of
	 * epochs rx_epoch - 1 .. rx_epoch + 1 in rx_ek[n % 3] (rx_ek_epoch
	 * says which); senders cache two epochs in txk[n % 2] under a
	 * sequence lock, since several threads may seal on one session.
	 */
	uint8_t rx_upd[DUST_KEY_BYTES]; /**< K_upd of the receive direction */
	uint8_t tx_upd[DUST_KEY_BYTES]; /**< K_upd of the send direction */
	uint64_t rx_epoch;              /**< epoch of the newest authenticated packet */
	uint64_t rx_ek_epoch[3];
	uint8_t rx_ek[3][DUST_KEY_BYTES];
	uint64_t rx_forged; /**< packets that failed their tag (integrity limit) */
	struct dust_txk {
		uint64_t seq;   /**< odd while a writer fills the slot */
		uint64_t epoch; /**< 0 = empty */
		uint64_t w[DUST_KEY_BYTES / 8];
	} txk[2];
	/*
	 * The random profile's answer (SPEC.md §5.1), while hs_pending: a
	 * client holds its ephemeral secret and the intro's PRK until the
	 * answer opens; a server holds the sealed answer block until it is sent.
	 */
	uint8_t hs_pending;
	union {
		struct {
			uint8_t esk[DUST_KEY_BYTES]; /**< client: e */
			uint8_t prk[DUST_KEY_BYTES]; /**< client: the intro's PRK (§4) */
		} intro;
		uint8_t answer[DUST_ANSWER_BYTES]; /**< server: the answer block */
	} hs;
	uint16_t pmtu_at_ms; /**< ms (mod 2^16) the search started, a probe went or was answered */
};

void dust_session_wipe(struct dust_session *s);

/* ---- Path validation (path.c, SPEC.md §9.1) -------------------------------- */

/** A path message: one data segment of DUST_PATH_MSG_BYTES, type byte first. */
enum dust_path_msg { DUST_PATH_NONE = 0, DUST_PATH_CHALLENGE = 1, DUST_PATH_RESPONSE = 2 };

/**
 * The type of a data segment that is a path message (its cookie in cookie),
 * or DUST_PATH_NONE for anything else (an inner IP packet starts 0x4_ or 0x6_).
 */
enum dust_path_msg dust_path_msg_parse(const uint8_t *seg, size_t len,
                                       uint8_t cookie[DUST_PATH_COOKIE_BYTES]);
/** Write a path message of type t into out[0..DUST_PATH_MSG_BYTES). */
void dust_path_msg_put(uint8_t *out, enum dust_path_msg t,
                       const uint8_t cookie[DUST_PATH_COOKIE_BYTES]);

/**
 * Server: s's peer address is new. A random-profile session is validated by
 * the client's first packet under its answer's keys (key epoch >= 1, which
 * needs E_s, sent only to that address), a quic session by its first
 * authenticated packet (its keys need the server's first flight), a moved
 * session (AWAIT_ECHO) by the echo of a fresh challenge (cookie drawn from
 * rng). Until then the credit is 3 x rx_bytes.
 */
void dust_path_start(struct dust_session *s, enum dust_path_state st, size_t rx_bytes,
                     struct dust_rng *rng);
/**
 * Server, after a datagram of rx_bytes from the peer authenticated on s:
 * validates AWAIT_DATA and AWAIT_EPOCH as above, else adds 3 x rx_bytes of
 * credit. Returns true when this datagram validated the path.
 */
bool dust_path_rx(struct dust_session *s, size_t rx_bytes);
/** Server: a RESPONSE's cookie; true (and validated) if it echoes s's challenge. */
bool dust_path_echo(struct dust_session *s, const uint8_t cookie[DUST_PATH_COOKIE_BYTES]);

/*
 * Path MTU discovery for quic server sessions (SPEC.md §12.4), as quic-go
 * (caddy) runs it: once the path is valid, probes of (bound + top) / 2
 * bytes, 1252 -> 1352 -> 1402 -> 1427 -> 1439 on a 1500-byte path, each
 * a PATH_CHALLENGE padded to the size; the client's RESPONSE raises the
 * bound to it, a probe unanswered for DUST_PMTU_LOST_MS lowers the top to
 * it; the search ends when top and bound are under DUST_PMTU_STOP_DIFF
 * apart. A moved session starts again at 1252 (dust_path_start).
 */
enum {
	DUST_PMTU_MAX = 1452,     /**< quic-go's largest datagram (IPv4 on a 1500-byte link) */
	DUST_PMTU_STOP_DIFF = 20, /**< quic-go's end of the search */
	DUST_PMTU_FIRST_MS = 30,  /**< the first probe after the search starts (caddy's 30..70) */
	DUST_PMTU_NEXT_MS = 25,   /**< the next after an answer (caddy's 25..35) */
	DUST_PMTU_LOST_MS = 1000, /**< a probe unanswered this long did not pass */
};
/**
 * Server, s's worker, with each authenticated datagram from s's peer at
 * now_ms: is a probe due? Then a PATH_CHALLENGE with a fresh cookie is
 * written at msg and the size its datagram must take is returned (seal msg
 * padded to it); else 0. The first call on a valid path starts the search.
 */
size_t dust_pmtu_probe(struct dust_session *s, struct dust_rng *rng, uint64_t now_ms,
                       uint8_t msg[DUST_PATH_MSG_BYTES]);
/**
 * Server: a RESPONSE's cookie at now_ms; true (s's bound raised to the
 * probe's size) if it answers the probe in flight.
 */
bool dust_pmtu_echo(struct dust_session *s, const uint8_t cookie[DUST_PATH_COOKIE_BYTES],
                    uint64_t now_ms);
/**
 * Server, any lcore: may n bytes go to s's peer now? Spends them from the
 * credit if so. Validated paths always may.
 */
bool dust_path_may_send(struct dust_session *s, size_t n);
/**
 * The same as quic-go checks its first flight's resends: n goes out while
 * less than three times what the address sent has gone (the last datagram
 * may pass the limit, by one datagram at most), and is then spent.
 */
bool dust_path_may_resend(struct dust_session *s, size_t n);
/**
 * rx_bytes came from s's peer address but opened nothing of s (a quic
 * client's retransmitted hello): credit for the 3x limit, never proof.
 */
void dust_path_credit(struct dust_session *s, size_t rx_bytes);
/** Server: n bytes sent whatever the credit (an intro's answer); spent. */
void dust_path_spent(struct dust_session *s, size_t n);

/** Limits the decoder applies. */
struct dust_limits {
	uint32_t ts_window_s; /**< accept |ts - now| <= window; default 60 */
};
void dust_limits_default(struct dust_limits *lim);

/* ---- Data packets (packet.c) ---------------------------------------------- */

/** One decoded piece of cleartext inside a datagram buffer (decrypted in place). */
struct dust_seg {
	uint16_t off; /**< data offset in the datagram */
	uint16_t len; /**< 0 = keepalive */
};

/**
 * Seal one data packet in place. The caller puts data_len bytes at
 * pkt + DUST_DATA_PREFIX; cap is the room from pkt on. Writes header,
 * padding and MAC. Returns the packet length (> 0), -EMSGSIZE if cap cannot
 * hold data + overhead, or -EKEYEXPIRED past DUST_REJECT_AFTER_PACKETS.
 */
DUST_MUST_CHECK int dust_data_seal(struct dust_session *s, struct dust_rng *rng,
                                   const struct dust_pad *pad, uint32_t now_s, uint8_t *pkt,
                                   size_t data_len, size_t cap);

/** One packet of a sealing burst (dust_data_seal_burst). */
struct dust_tx_pkt {
	struct dust_session *s;
	uint8_t *pkt; /**< data_len bytes of data at pkt + DUST_DATA_PREFIX */
	size_t data_len;
	size_t cap; /**< room from pkt on */
	int result; /**< out: packet length, or -errno as dust_data_seal */
};

/**
 * Seal a burst of data packets in place, each on its own session, with one
 * call into the AEAD backend. Returns how many were sealed (result > 0).
 */
unsigned dust_data_seal_burst(struct dust_tx_pkt *p, unsigned n, struct dust_rng *rng,
                              const struct dust_pad *pad, uint32_t now_s);

/**
 * Open one data packet at pkt[0..len) in place. On DUST_OK, seg gives the
 * cleartext and *consumed the packet's length (for chaining). On any drop
 * pkt keeps its bytes as they came and nothing in s changes but rx_forged
 * (a failed tag counts toward the integrity limit, SPEC.md §8.1).
 */
DUST_MUST_CHECK enum dust_drop dust_data_open(struct dust_session *s, const struct dust_limits *lim,
                                              uint32_t now_s, uint8_t *pkt, size_t len,
                                              struct dust_seg *seg, size_t *consumed);

/**
 * Open every chained data packet of a datagram starting at off. Stops at the
 * first failure (returned in *drop; DUST_OK when all bytes were consumed).
 * A client session awaiting its intro's answer (hs_pending) takes the answer
 * block at off first (dust_intro_answer_open); if it fails, nothing opens.
 * Returns the number of segs filled.
 */
unsigned dust_datagram_open(struct dust_session *s, const struct dust_limits *lim, uint32_t now_s,
                            uint8_t *dg, size_t len, size_t off, struct dust_seg *segs,
                            unsigned max_segs, enum dust_drop *drop);

/**
 * Seal a compact packet (SPEC.md §6.5) of total bytes at out (the
 * ciphertext of pt[0..ptlen) and zero padding): total lies in
 * DUST_COMPACT_OVERHEAD + ptlen .. DUST_COMPACT_MAX. It takes a counter of
 * the session's send counter, as dust_data_seal does. pt may be at out + 1.
 * Returns total, -EMSGSIZE, -EKEYEXPIRED or -ENOTSUP as dust_data_seal.
 */
DUST_MUST_CHECK int dust_compact_seal(struct dust_session *s, const uint8_t *pt, size_t ptlen,
                                      size_t total, uint8_t *out);

/**
 * Open a compact packet pkt[0..len): its plaintext (data and padding) to
 * pt (DUST_COMPACT_PT_MAX bytes), its length to *ptlen. The counter is the
 * one closest to the next expected whose low byte the packet carries; then
 * as dust_data_open: replay pre-check, the tag in constant time before
 * anything else, the window updated only after. No timestamp: the replay
 * window alone refuses a replay. On a drop nothing in s changes but
 * rx_forged.
 */
DUST_MUST_CHECK enum dust_drop dust_compact_open(struct dust_session *s, uint32_t now_s,
                                                 const uint8_t *pkt, size_t len, uint8_t *pt,
                                                 size_t *ptlen);

/**
 * Datagrams a client could not open yet because its intro's answer has not
 * arrived (a multi-queue gateway's data may overtake it): kept, in arrival
 * order, and taken again once the answer has opened. who tells the sessions
 * of one stash apart (a client index; 0 for one session). When full, the
 * oldest is dropped (counted).
 */
enum { DUST_EARLY_MAX = 8, DUST_EARLY_BYTES = 2048 };
struct dust_early {
	unsigned n;
	uint64_t dropped;
	uint32_t who[DUST_EARLY_MAX];
	uint16_t len[DUST_EARLY_MAX];
	uint8_t b[DUST_EARLY_MAX][DUST_EARLY_BYTES];
};

/** Keep a copy of dg (at most DUST_EARLY_BYTES, else nothing is kept). */
void dust_early_keep(struct dust_early *e, uint32_t who, const uint8_t *dg, size_t len);
/** The oldest datagram kept for who, copied to out: its length, or 0 if none. */
size_t dust_early_take(struct dust_early *e, uint32_t who, uint8_t *out, size_t cap);

/** Per-datagram result of a burst. */
struct dust_rx_result {
	enum dust_drop drop; /**< first failure, or DUST_OK */
	uint8_t nseg;
	struct dust_seg seg[DUST_CHAIN_MAX];
};

/**
 * Open a burst of datagrams, each against its own session (NULL session:
 * result is DUST_DROP_AUTH without touching the bytes). Prefetches ahead.
 * Returns the number of datagrams with at least one segment.
 */
uint16_t dust_datagram_open_burst(struct dust_session *const *s, uint8_t *const *dg,
                                  const uint16_t *len, uint16_t n, const struct dust_limits *lim,
                                  uint32_t now_s, struct dust_rx_result *res);

/* ---- Invitation store (store.c) ---------------------------------------------- */

/** One invitation as the server holds it. */
struct dust_store_entry {
	struct dust_invite inv;
	struct dust_invite_keys keys;
	uint8_t bound;                         /**< atomic: a client key is bound */
	uint8_t client_pk[DUST_PK_BYTES];      /**< bound long-term key */
	uint8_t static_ss[DUST_KEY_BYTES];     /**< cached DH(s, C) once bound */
	uint64_t last_ts_ms;                   /**< newest accepted intro */
	uint8_t last_nonce[DUST_XNONCE_BYTES]; /**< its nonce: spots a duplicate */
	uint64_t bound_at;                     /**< unix seconds of first use */
	uint64_t revoked_at;                   /**< unix seconds of the revocation */
	uint32_t idx;                          /**< index in the store, for ever */
	uint8_t revoked;                       /**< atomic: no intro is accepted any more */
	uint8_t bind_pending;                  /**< deferred store: bound, not yet durable */
	/** etcd: a returning client's intro accepted here, its freshness not yet committed */
	uint8_t fresh_pending;
	/**
	 * The store's own: a spin lock over the fields an intro reads and writes
	 * (bound .. last_nonce, bound_at, bind_pending, fresh_pending). A
	 * worker's intro takes only this, never the store's mutex (SPEC §7.7).
	 */
	uint8_t lk;
};

struct dust_store;

enum dust_store_flags {
	DUST_STORE_CREATE = 1, /**< create an empty store if the file is missing */
	/**
	 * Read the files, never write them (replay): bindings and intro freshness
	 * change in memory only; no journal is opened, compacted or fsynced and
	 * dust_store_save() refuses with -EROFS.
	 */
	DUST_STORE_READONLY = 2,
	/**
	 * Read a store from before sealing (SPEC §7.6) and rewrite it sealed:
	 * only by a process alone with the store (-EBUSY otherwise). Without
	 * it such a store is refused with -EPROTO.
	 */
	DUST_STORE_MIGRATE = 4,
};

/**
 * Open the store at path (invitations) and path + ".bind" (journal of
 * bindings), its records sealed under a storage key derived from server's
 * secret key (SPEC §7.6): records that do not open under it are skipped and
 * counted (dust_store_refused). Refuses files readable by group/others.
 * NULL with errno and dust_last_error() on failure.
 */
struct dust_store *dust_store_open(const char *path, int flags, const struct dust_identity *server);
/** Records refused since open (at load, reload or watch): not sealed under our key. */
uint64_t dust_store_refused(const struct dust_store *st);
void dust_store_close(struct dust_store *st);
/**
 * A server that records intro freshness starts its run: *was_clean says
 * whether every run before closed with its journal synced (so no accepted
 * intro's freshness can have been lost), and the journal is marked dirty
 * (durably) until this store closes. An etcd or read-only store is never
 * clean. 0 or -errno.
 */
DUST_MUST_CHECK int dust_store_run_begin(struct dust_store *st, bool *was_clean);
size_t dust_store_count(const struct dust_store *st);
struct dust_store_entry *dust_store_at(struct dust_store *st, size_t idx);
/** Add in memory (no duplicate id: -EEXIST). */
DUST_MUST_CHECK int dust_store_add(struct dust_store *st, const struct dust_invite *inv);
/**
 * Rewrite the invitations file: write-then-rename, fsync file and dir. It
 * first merges what other processes saved since this one read the file, all
 * under the store's writer lock, so concurrent savers lose nothing.
 */
DUST_MUST_CHECK int dust_store_save(struct dust_store *st);
/**
 * Take the store's writer lock and merge what other processes saved: for a
 * read-modify-write of the invitations (dust-invite create picks free tunnel
 * addresses from them, then saves). Held until dust_store_unlock() or close;
 * dust_store_save() inside it keeps it. Waits while another writer holds it;
 * a gateway never takes it. No-op on etcd; -EROFS on a read-only store.
 */
DUST_MUST_CHECK int dust_store_lock(struct dust_store *st);
void dust_store_unlock(struct dust_store *st);
/**
 * Close st; remove its files if they hold no invitation and no record and no
 * other process has the store open (a failed first create leaves nothing).
 */
void dust_store_discard(struct dust_store *st);
/**
 * Rebuild the tag index for now_s's epoch (and its neighbours) if the epoch
 * changed; index entries added since. Call from one thread. Returns 1 when
 * a new index was swapped in: lookups on other threads may still read the
 * old one, freed by dust_store_reclaim() or else at the next rebuild.
 */
int dust_store_tick(struct dust_store *st, uint64_t now_s);
/** Entry whose tag for epoch-1..epoch+1 equals tag; NULL if none. Thread-safe. */
struct dust_store_entry *dust_store_lookup_tag(struct dust_store *st,
                                               const uint8_t tag[DUST_TAG_BYTES]);
/** Index of an entry. */
uint32_t dust_store_index(const struct dust_store *st, const struct dust_store_entry *e);
/** The entry with this invitation id, or NULL. */
struct dust_store_entry *dust_store_find(struct dust_store *st, const uint8_t id[DUST_ID_BYTES]);
/**
 * Revoke: a journal record, fsynced, then no intro of e is accepted any
 * more. -EALREADY if it was; -EROFS on a read-only store.
 */
DUST_MUST_CHECK int dust_store_revoke(struct dust_store *st, struct dust_store_entry *e,
                                      uint64_t now_s);
/**
 * Merge what changed on disk since the last look, from the thread that
 * ticks: invitations added to the file (appended: indexes unchanged) and
 * journal records of other processes (revocations). Cheap when nothing
 * changed (one stat, one pread). Entries never move. New entries are found
 * by intro tag after the next dust_store_tick(). Returns how many entries
 * changed (0: nothing new) or -errno.
 */
int dust_store_reload(struct dust_store *st);
/** Free the tag index a rebuild replaced (dust_store_tick/_reload returned a swap). */
void dust_store_reclaim(struct dust_store *st);
/**
 * Deferred commits (dustgw: no worker may wait on a disk): dust_intro_accept
 * changes the store in memory only. A first binding stays pending, and
 * every intro of it reports first_use so that its session waits, until the
 * one thread that persists (the only journal writer) commits it through
 * dust_store_persist_submit and _poll below, the same for both backends.
 * Accepted intros' freshness goes through dust_store_persist_fresh (not
 * fsynced, as in SPEC §7).
 */
void dust_store_set_deferred(struct dust_store *st, bool deferred);
/** fdatasync what this process appended to the journal (freshness); no-op on etcd. */
DUST_MUST_CHECK int dust_store_sync(struct dust_store *st);
void dust_store_persist_fresh(struct dust_store *st, struct dust_store_entry *e);
/** How many reloads changed something since open (telemetry). */
uint64_t dust_store_generation(const struct dust_store *st);
/**
 * Journal compactions this process did (SPEC §7): whoever appends compacts
 * once the journal outgrew its live records, while others keep it open.
 */
uint64_t dust_store_compactions(const struct dust_store *st);

/*
 * The asynchronous commit of a held acceptance (SPEC §7.7), one protocol for
 * both backends: dust_store_persist_submit queues it (a first use's binding;
 * on etcd also a returning client's freshness), dust_store_persist_poll
 * hands back outcomes, each submit's exactly once with its cookie, already
 * applied to the entry: DUST_OK (durable: the file store's fdatasync
 * returned, or an etcd quorum committed), DUST_DROP_INTRO_PERSIST (file: the
 * journal write or its fdatasync failed), DUST_DROP_INTRO_WRONG_KEY (etcd:
 * another key won cluster-wide), DUST_DROP_INTRO_REVOKED,
 * DUST_DROP_STORE_UNAVAILABLE (etcd: nothing committed). Anything but
 * DUST_OK leaves the invitation unused again here. The file store writes
 * the binding at submit and makes every binding submitted so far durable
 * with one fdatasync in the poll that starts a round (group commit); etcd's
 * own threads commit (path "etcd://HOST:PORT[,HOST:PORT...]/PREFIX", SPEC
 * §7.5). Neither waits on the network; only the file store's poll waits on
 * its disk. Both calls from one thread only.
 */
struct dust_store_outcome {
	uint32_t idx, cookie;
	enum dust_drop drop;
};
/**
 * The store's backend, "file" or "etcd" (SPEC §7): whether it keeps files
 * beside its path (the journal) or lives on a cluster. For displays and
 * checks only; the interface is the same for both.
 */
const char *dust_store_backend(const struct dust_store *st);
/**
 * Queue e's held acceptance; cookie comes back with its outcome. -ENOBUFS
 * (etcd queue full) or -ENOMEM: nothing queued, the binding undone.
 */
DUST_MUST_CHECK int dust_store_persist_submit(struct dust_store *st, struct dust_store_entry *e,
                                              uint32_t cookie);
unsigned dust_store_persist_poll(struct dust_store *st, struct dust_store_outcome *out,
                                 unsigned max);
/** The etcd revision the store has followed to; -1 for the file store. */
int64_t dust_store_revision(const struct dust_store *st);

/* ---- Intro (intro.c) -------------------------------------------------------- */

/** Server side context for accepting intros. */
struct dust_server {
	struct dust_identity id;
	struct dust_store *store;
	struct dust_limits lim;
	/**
	 * Intros of a bound invitation with a timestamp at or before this
	 * (unix ms) are refused [intro_early]: set to the server's start when
	 * the freshness it had before may be lost (a crash), so no intro
	 * accepted before the start is accepted again. An unbound invitation
	 * never had an intro accepted (the binding is durable first). 0: none.
	 */
	uint64_t floor_ms;
};

/** A server ephemeral key pair (the answer's share), made off the packet path. */
struct dust_eph {
	uint8_t sk[DUST_KEY_BYTES];
	uint8_t pk[DUST_PK_BYTES];
};

int dust_eph_generate(struct dust_eph *eph);
void dust_eph_wipe(struct dust_eph *eph);

/**
 * Client: build an intro for inv at out (cap bytes of room), with a fresh
 * ephemeral key, and fill s (client role) with the intro's keys. Data may be
 * chained after it with dust_data_seal(s, ..., out + return value, ...):
 * sealed under the 0-RTT key (replayable, SPEC.md §5.1), as is anything s
 * seals before the answer. s opens nothing until dust_intro_answer_open.
 * Returns the intro's length or -errno.
 */
DUST_MUST_CHECK int dust_intro_build(const struct dust_invite *inv,
                                     const struct dust_identity *client, struct dust_rng *rng,
                                     const struct dust_pad *pad, uint64_t now_ms, uint8_t *out,
                                     size_t cap, struct dust_session *s);

/** Extra facts about an accepted intro. */
struct dust_intro_info {
	uint32_t invite_idx; /**< store index */
	bool first_use;      /**< this intro bound the invitation */
	/**
	 * The acceptance waits for the store (dust_store_persist_submit, then its
	 * outcome) before the session may answer anything: a first use in a
	 * deferred store, or any intro in an etcd store (its freshness commits
	 * cluster-wide first, SPEC §7.5).
	 */
	bool held;
};

/**
 * Server: accept the intro at pkt[0..len). Thread-safe (commit is serialised
 * inside the store). Nothing changes unless the intro authenticates and is
 * newer than the last one for its invitation; then the binding is persisted
 * (first use), the replay state advances and s is filled (server role, peer
 * set from from) with its answer pending. *consumed is the intro's length:
 * chained data follows. eph is the server share of this acceptance, used
 * only once the intro is authenticated and never again by the caller if
 * DUST_OK; NULL: one is made here (then, and only then, a keygen).
 */
DUST_MUST_CHECK enum dust_drop dust_intro_accept(struct dust_server *srv, const uint8_t *pkt,
                                                 size_t len, uint64_t now_ms,
                                                 const struct dust_endpoint *from,
                                                 const struct dust_eph *eph, struct dust_session *s,
                                                 size_t *consumed, struct dust_intro_info *info);

/**
 * Server: the store index of the invitation whose tag an intro at pkt
 * carries, or -1. One BLAKE2b and a lookup: no AEAD, no X25519, and nothing
 * is authenticated (an attacker who knows the tag can forge it).
 */
int64_t dust_intro_peek(struct dust_server *srv, const uint8_t *pkt, size_t len);

/**
 * Server: write s's answer at out (cap bytes): the answer block, then a
 * keepalive sealed as dust_data_seal would. Only while s->hs_pending; the
 * block is wiped from s once written. Returns the length or -errno.
 */
DUST_MUST_CHECK int dust_intro_answer_build(struct dust_session *s, struct dust_rng *rng,
                                            const struct dust_pad *pad, uint32_t now_s,
                                            uint8_t *out, size_t cap);

/**
 * Client: open the answer block at dg[0..len) for s (hs_pending). On DUST_OK
 * s holds the session's keys (receive, and send from key epoch 1 on), its
 * pending secrets are wiped and *consumed is the block's length: the data
 * packets after it open with dust_datagram_open. On any drop s is unchanged.
 */
DUST_MUST_CHECK enum dust_drop dust_intro_answer_open(struct dust_session *s, const uint8_t *dg,
                                                      size_t len, size_t *consumed);

/* ---- Session table (session.c) ---------------------------------------------- */

/**
 * Sessions keyed by outer endpoint, one owner thread, no locks. Capacity is
 * fixed at creation; slots live in one array (mlocked where allowed).
 */
struct dust_session_table;

struct dust_session_table *dust_session_table_create(uint32_t capacity);
void dust_session_table_free(struct dust_session_table *t);
uint32_t dust_session_table_capacity(const struct dust_session_table *t);
uint32_t dust_session_table_live(const struct dust_session_table *t);
/** Slots allocated: the capacity plus spares that hold retiring sessions. */
uint32_t dust_session_table_slots(const struct dust_session_table *t);
/** Bytes allocated (slots + index), for memory-per-session reports. */
size_t dust_session_table_bytes(const struct dust_session_table *t);
/**
 * Give each slot a compressed-ACK context (ackz.h, SPEC §6.5): the inner
 * TCP connections as a quic peer's compressed ACKs reference them, apart
 * from the sessions (sizeof(struct dust_ackz) a slot, only where quic
 * sessions are served). Emptied when a slot is reserved. 0, or -ENOMEM.
 */
int dust_session_table_ackz_enable(struct dust_session_table *t);
/** s's context (s a slot of t; its receiver's thread only); NULL unless enabled. */
struct dust_ackz *dust_session_table_ackz(struct dust_session_table *t,
                                          const struct dust_session *s);
/** Live session for ep, or NULL. */
struct dust_session *dust_session_table_lookup(struct dust_session_table *t,
                                               const struct dust_endpoint *ep);
/** Bulk lookup: out[i] for eps[i]; returns hits. */
unsigned dust_session_table_lookup_bulk(struct dust_session_table *t,
                                        const struct dust_endpoint *const *eps, unsigned n,
                                        struct dust_session **out);
/** A free slot to fill before insert, or NULL when capacity sessions are live (full). */
struct dust_session *dust_session_table_reserve(struct dust_session_table *t);
/** Insert a filled reserved slot under s->peer (replacing nothing: -EEXIST). */
DUST_MUST_CHECK int dust_session_table_insert(struct dust_session_table *t, struct dust_session *s);
/** Take s out of the index; it becomes RETIRING until released. */
void dust_session_table_remove(struct dust_session_table *t, struct dust_session *s);
/** Wipe a RETIRING (or reserved) slot and make it reusable. */
void dust_session_table_release(struct dust_session_table *t, struct dust_session *s);
/**
 * The live session idle longest at now_s (smallest last_rx_s), or NULL when
 * none is live. A full scan: for making room in a full table.
 */
struct dust_session *dust_session_table_idlest(struct dust_session_table *t, uint32_t now_s);
/**
 * Remove sessions idle for more than idle_s; cb(s, arg) is called for each
 * (now RETIRING): it must release it, now or after a grace period.
 * Returns how many expired.
 */
unsigned dust_session_table_expire(struct dust_session_table *t, uint32_t now_s, uint32_t idle_s,
                                   void (*cb)(struct dust_session *s, void *arg), void *arg);

#ifdef __cplusplus
}
#endif

#endif /* DUST_H */
