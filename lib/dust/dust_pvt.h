/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Private helpers shared by libdust's sources: byte order, error text,
 * key derivation. Not installed, not for callers.
 */
#ifndef DUST_PVT_H
#define DUST_PVT_H

#include <errno.h>
#include <string.h>

#include "dust.h"

#define DUST_EXPORT __attribute__((visibility("default")))

/* Record a reason for dust_last_error() and return -err. */
int dust_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline void le16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline uint16_t le16_get(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline void le32_put(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void le64_put(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t le64_get(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Bytes of a that hold the address: 16 for IPv6, 4 otherwise (the rest is unused). */
static inline size_t ipaddr_len(const struct dust_ipaddr *ip)
{
	return ip->family == 6 ? 16 : 4;
}

/*
 * dust_ipaddr_equal, inline for the session table's probe loop; constant
 * lengths so the compiler compares in place instead of calling memcmp.
 */
static inline bool ipaddr_eq(const struct dust_ipaddr *a, const struct dust_ipaddr *b)
{
	if (a->family != b->family)
		return false;
	return ipaddr_len(a) == 16 ? memcmp(a->a, b->a, 16) == 0 : memcmp(a->a, b->a, 4) == 0;
}

/* kdf.c: the session key schedule (SPEC.md §4). */
struct dust_session_keys {
	uint8_t c2s_data[DUST_KEY_BYTES];
	uint8_t s2c_data[DUST_KEY_BYTES];
	uint8_t c2s_hp[DUST_HP_KEY_BYTES];
	uint8_t s2c_hp[DUST_HP_KEY_BYTES];
	uint8_t confirm[DUST_KEY_BYTES];
	uint8_t c2s_upd[DUST_KEY_BYTES]; /* key-update secrets (SPEC.md §8.1) */
	uint8_t s2c_upd[DUST_KEY_BYTES];
};

/* One piece of a PRK's input: len bytes at p. */
struct kdf_part {
	const uint8_t *p;
	size_t len;
};
/* prk = BLAKE2b-256(key, label | parts[0] | ... | parts[n-1]): the PRKs of §4, §12.2, §12.3. */
void kdf_prk(uint8_t prk[DUST_KEY_BYTES], const uint8_t key[DUST_KEY_BYTES], const char *label,
             const struct kdf_part *parts, unsigned n);
/* An ACK-sized datagram's size for s (dust_quic_ack_put); 0 if the cover has none. */
size_t dust_size_model_ack(const struct dust_session *s, struct dust_rng *rng);
/* A compact packet's length for s (need .. DUST_COMPACT_MAX), drawn from the cover's sizes. */
size_t dust_size_model_compact(const struct dust_session *s, struct dust_rng *rng, size_t need);
/*
 * Padding for a quic session's data packet of need bytes under a cap of top
 * (sizes.c, SPEC §12.4): the datagram's size drawn from the cover's sizes
 * for s's direction that fit.
 */
size_t dust_size_model_pad(const struct dust_session *s, struct dust_rng *rng, size_t need,
                           size_t top);
/* s's path MTU search back to its start: bound 1252, nothing probed (path.c). */
void dust_pmtu_reset(struct dust_session *s);
/*
 * A weighted draw from a table of the cover's (sizes.c; its sizes, gaps.c's
 * gaps): the first index whose cumulative weight cum[i] is > r, for
 * r < cum[n - 1].
 */
unsigned dust_cum_index(const uint32_t *cum, unsigned n, uint32_t r);
/* One direction's table of the cover's: values, their cum[] weights, n of each. */
struct dust_cover_table {
	const uint16_t *v;
	const uint32_t *cum;
	unsigned n;
};
#define DUST_COVER_TABLE(v, cum)                                                                   \
	{                                                                                          \
		v, cum, sizeof(v) / sizeof((v)[0])                                                 \
	}

/* Every session key from one PRK (§4's split; the quic profile's prk2 too, §12.3). */
void dust_session_keys_split(struct dust_session_keys *k, const uint8_t prk[DUST_KEY_BYTES]);
/* The intro's PRK (§4): dh_es = DH(e, S), dh_cs = DH(c, S); transcript = bytes [0, PAD_OFF). */
void dust_intro_prk(uint8_t prk[DUST_KEY_BYTES], const uint8_t secret[DUST_KEY_BYTES],
                    const uint8_t dh_es[DUST_KEY_BYTES], const uint8_t dh_cs[DUST_KEY_BYTES],
                    const uint8_t server_pk[DUST_PK_BYTES], const uint8_t *transcript,
                    size_t transcript_len);
/* K_ans, the answer block's key, from the intro's PRK (§5.1). */
void dust_answer_key(uint8_t key[DUST_KEY_BYTES], const uint8_t prk[DUST_KEY_BYTES]);
/* The session PRK once the server's share is known: prk2 = f(prk, DH(e_s, E), E_s) (§5.1). */
void dust_answer_prk(uint8_t prk2[DUST_KEY_BYTES], const uint8_t prk[DUST_KEY_BYTES],
                     const uint8_t dh_ee[DUST_KEY_BYTES], const uint8_t share[DUST_PK_BYTES]);
/* Confirmation MAC over the intro's bytes before the confirm field. */
void dust_intro_confirm(const struct dust_session_keys *k, const uint8_t *intro, size_t len,
                        uint8_t out[DUST_CONFIRM_BYTES]);
/* Fill a session's keys for its role and suite from k, epochs 0 and 1 ready. */
void dust_session_keys_install(struct dust_session *s, const struct dust_session_keys *k,
                               enum dust_role role, uint8_t suite);
/* The data key of epoch >= 1: kdf(K_upd, epoch, "dustKUPD"). */
void dust_epoch_key(uint8_t key[DUST_KEY_BYTES], const uint8_t upd[DUST_KEY_BYTES], uint64_t epoch);
/* aead.c: the AEAD backend drops its copies of s's data keys (dust_session_wipe). */
void dust_aead_forget_session(const struct dust_session *s);

/* intro.c, shared with the quic profile's intro (quic_intro.c) */
void dust_intro_tag_mask(uint8_t tag[DUST_TAG_BYTES], const uint8_t nonce[DUST_XNONCE_BYTES],
                         const uint8_t server_pk[DUST_PK_BYTES]);
bool dust_intro_ts_ok(uint64_t ts_ms, uint64_t now_ms, const struct dust_limits *lim);
/*
 * The server's share of an authenticated intro: *eph, or (NULL) one made
 * in own, and *eph pointed at it; dh_ee = DH(e_s, peer). False if unusable.
 */
bool dust_share_dh(const struct dust_eph **eph, struct dust_eph *own,
                   const uint8_t peer[DUST_PK_BYTES], uint8_t dh_ee[DUST_KEY_BYTES]);
/*
 * An accepted intro's session s belongs to invitation e: its store index in
 * s and, when asked, in *info with what dust_store_commit said.
 */
void dust_intro_bind(struct dust_session *s, const struct dust_server *srv,
                     const struct dust_store_entry *e, struct dust_intro_info *info, bool first_use,
                     bool held);
struct dust_store_view;
enum dust_drop dust_intro_fresh(const struct dust_store_view *v, uint64_t ts_ms,
                                const uint8_t nonce[DUST_XNONCE_BYTES]);

/* Seconds/milliseconds since the epoch, for callers without a clock of their own. */
uint64_t dust_now_ms(void);

/*
 * store_seal.c: sealed store records (SPEC §7.6). A record's plaintext
 * (at most DUST_SEAL_PT_MAX bytes) goes out as the hex of nonce | AEAD
 * (DUST_SEAL_OVERHEAD bytes more), its kind and ID authenticated with it.
 * dust_unseal_hex returns the plaintext's length, or -1 (and a zeroed pt)
 * when the record was not sealed under key for that kind and ID.
 */
#define DUST_SEAL_OVERHEAD 40
#define DUST_SEAL_PT_MAX   256
void dust_store_key_derive(uint8_t key[DUST_KEY_BYTES], const uint8_t server_sk[DUST_KEY_BYTES]);
int dust_seal_hex(char *out, size_t cap, const uint8_t key[DUST_KEY_BYTES], char kind,
                  const uint8_t id[DUST_ID_BYTES], const uint8_t *pt, size_t len);
int dust_unseal_hex(uint8_t *pt, size_t cap, const uint8_t key[DUST_KEY_BYTES], char kind,
                    const uint8_t id[DUST_ID_BYTES], const char *hex);

/* store.c: the intro path's view of an entry, read and committed under the store lock. */
struct dust_store_view {
	bool bound;
	uint8_t client_pk[DUST_PK_BYTES];
	uint8_t static_ss[DUST_KEY_BYTES];
	uint64_t last_ts_ms;                   /* newest accepted intro: the replay pre-check */
	uint8_t last_nonce[DUST_XNONCE_BYTES]; /* its nonce: a retransmission is a no-op */
};
void dust_store_view_get(struct dust_store *st, const struct dust_store_entry *e,
                         struct dust_store_view *v);
/* Check freshness against the entry and commit (binding persisted first). */
enum dust_drop dust_store_commit(struct dust_store *st, struct dust_store_entry *e,
                                 const uint8_t client_pk[DUST_PK_BYTES],
                                 const uint8_t static_ss[DUST_KEY_BYTES], uint64_t ts_ms,
                                 const uint8_t nonce[DUST_XNONCE_BYTES], uint64_t now_s,
                                 bool *first_use, bool *held);

#endif /* DUST_PVT_H */
