/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Intro packets (SPEC.md §5): the client's first packet, carrying its
 * long-term and ephemeral keys under the invitation's intro key. The server
 * computes everything on the stack and commits only after the confirmation
 * MAC verifies and the intro is fresh; one exit path wipes every temporary.
 */
#include <sodium.h>

#include "dust_pvt.h"

static size_t intro_pad_len(const struct dust_pad *pad, struct dust_rng *rng, size_t cap)
{
	size_t room = cap - DUST_INTRO_MIN_BYTES, hi, lo;

	if (pad->kind == DUST_PAD_FILL) {
		lo = 0;
		hi = pad->mtu && pad->mtu > DUST_INTRO_MIN_BYTES ? pad->mtu - DUST_INTRO_MIN_BYTES
		                                                 : 255;
	} else {
		lo = pad->min;
		hi = pad->max > pad->min ? pad->max : pad->min;
	}
	if (hi > DUST_INTRO_PAD_MAX)
		hi = DUST_INTRO_PAD_MAX;
	if (hi > room)
		hi = room;
	if (lo > hi)
		lo = hi;
	return lo + dust_rng_uniform(rng, (uint32_t)(hi - lo + 1));
}

/*
 * The tag is the same for every intro of an invitation within an epoch; masking
 * it with a PRF of the intro's random nonce under the server's public key (known
 * only to invitees) makes each intro's first bytes fresh on the wire.
 */
void dust_intro_tag_mask(uint8_t tag[DUST_TAG_BYTES], const uint8_t nonce[DUST_XNONCE_BYTES],
                         const uint8_t server_pk[DUST_PK_BYTES])
{
	uint8_t m[DUST_TAG_BYTES];

	crypto_generichash(m, sizeof(m), nonce, DUST_XNONCE_BYTES, server_pk, DUST_PK_BYTES);
	for (int i = 0; i < DUST_TAG_BYTES; i++)
		tag[i] ^= m[i];
}

/*
 * The session's keys from the intro's (k0) and the answer's (k2) key sets
 * (SPEC.md §5.1): client to server, epoch 0 (the 0-RTT key) and header
 * protection come from k0; every later client key and every server key
 * from k2, which takes the server's share.
 */
static void keys_install(struct dust_session *s, const struct dust_session_keys *k0,
                         const struct dust_session_keys *k2, enum dust_role role, uint8_t suite)
{
	struct dust_session_keys k = *k2;

	memcpy(k.c2s_data, k0->c2s_data, DUST_KEY_BYTES);
	memcpy(k.c2s_hp, k0->c2s_hp, DUST_HP_KEY_BYTES);
	dust_session_keys_install(s, &k, role, suite);
	sodium_memzero(&k, sizeof(k));
}

static void session_fill(struct dust_session *s, const struct dust_invite *inv, uint32_t now_s)
{
	s->tunnel = inv->tunnel;
	s->last_rx_s = now_s;
	/* the random profile: no short header, whatever the slot held before */
	s->profile = DUST_PROFILE_RANDOM;
	s->cid_len = 0;
	s->spin = 0;
	memset(s->cid, 0, sizeof(s->cid));
}

/*
 * Until the answer, the client's receive keys are random: nothing opens
 * under them, and its sends after epoch 0 would go under a placeholder
 * the server never holds (the answer moves it to epoch 1 first).
 */
static void client_fill(struct dust_session *s, struct dust_rng *rng,
                        const uint8_t prk[DUST_KEY_BYTES], const uint8_t esk[DUST_KEY_BYTES],
                        const struct dust_invite *inv, uint32_t now_s)
{
	struct dust_session_keys k0, k2;

	dust_session_keys_split(&k0, prk);
	dust_rng_bytes(rng, &k2, sizeof(k2));
	memcpy(k2.c2s_upd, k0.c2s_upd, DUST_KEY_BYTES);
	keys_install(s, &k0, &k2, DUST_ROLE_CLIENT, inv->suite);
	session_fill(s, inv, now_s);
	memcpy(s->hs.intro.esk, esk, DUST_KEY_BYTES);
	memcpy(s->hs.intro.prk, prk, DUST_KEY_BYTES);
	s->hs_pending = 1;
	sodium_memzero(&k0, sizeof(k0));
	sodium_memzero(&k2, sizeof(k2));
}

DUST_EXPORT int dust_intro_build(const struct dust_invite *inv, const struct dust_identity *client,
                                 struct dust_rng *rng, const struct dust_pad *pad, uint64_t now_ms,
                                 uint8_t *out, size_t cap, struct dust_session *s)
{
	struct dust_invite_keys ik;
	struct dust_session_keys k;
	struct dust_wire_intro_pt pt;
	uint8_t esk[DUST_KEY_BYTES], dh_es[DUST_KEY_BYTES], dh_cs[DUST_KEY_BYTES];
	uint8_t prk[DUST_KEY_BYTES];
	uint8_t *tag = out + DUST_INTRO_TAG_OFF, *nonce = out + DUST_INTRO_NONCE_OFF;
	size_t padlen;
	int rc = 0;

	if (cap < DUST_INTRO_MIN_BYTES)
		return dust_fail(EMSGSIZE, "intro needs %d bytes of room", DUST_INTRO_MIN_BYTES);
	if (!dust_suite_available(inv->suite))
		return dust_fail(ENOTSUP,
		                 "the invitation uses %s, which this build cannot run on this CPU "
		                 "(AES-256-GCM needs AES-NI or libipsec-mb)",
		                 dust_suite_name(inv->suite));
	padlen = intro_pad_len(pad, rng, cap);
	dust_invite_derive(inv, &ik);
	dust_rng_bytes(rng, esk, sizeof(esk));
	memcpy(pt.client_pk, client->pk, DUST_PK_BYTES);
	if (crypto_scalarmult_base(pt.eph_pk, esk) != 0 ||
	    crypto_scalarmult(dh_es, esk, inv->server_pk) != 0 ||
	    crypto_scalarmult(dh_cs, client->sk, inv->server_pk) != 0) {
		rc = dust_fail(EINVAL, "server public key in the invitation is unusable");
		goto out_wipe;
	}
	le64_put(pt.ts_ms, now_ms);
	le16_put(pt.pad_len, (uint16_t)padlen);
	le16_put(pt.flags, DUST_INTRO_FLAG_SHARE);

	dust_rng_bytes(rng, nonce, DUST_XNONCE_BYTES);
	dust_intro_tag(&ik, now_ms / 1000 / DUST_EPOCH_S, tag);
	dust_intro_tag_mask(tag, nonce, inv->server_pk);
	crypto_aead_xchacha20poly1305_ietf_encrypt(out + DUST_INTRO_CT_OFF, NULL,
	                                           (const uint8_t *)&pt, sizeof(pt), tag,
	                                           DUST_TAG_BYTES, NULL, nonce, ik.intro_key);
	/* Padding travels in clear: it must be random bytes, not zeros. */
	dust_rng_bytes(rng, out + DUST_INTRO_PAD_OFF, padlen);
	dust_intro_prk(prk, inv->secret, dh_es, dh_cs, inv->server_pk, out, DUST_INTRO_PAD_OFF);
	dust_session_keys_split(&k, prk);
	dust_intro_confirm(&k, out, DUST_INTRO_PAD_OFF + padlen, out + DUST_INTRO_PAD_OFF + padlen);

	client_fill(s, rng, prk, esk, inv, (uint32_t)(now_ms / 1000));
	s->peer.ip = inv->server;
	s->peer.port = inv->port;
	s->state = DUST_SESSION_LIVE;
	rc = (int)(DUST_INTRO_MIN_BYTES + padlen);
out_wipe:
	sodium_memzero(&ik, sizeof(ik));
	sodium_memzero(&k, sizeof(k));
	sodium_memzero(&pt, sizeof(pt));
	sodium_memzero(esk, sizeof(esk));
	sodium_memzero(dh_es, sizeof(dh_es));
	sodium_memzero(dh_cs, sizeof(dh_cs));
	sodium_memzero(prk, sizeof(prk));
	return rc;
}

bool dust_intro_ts_ok(uint64_t ts_ms, uint64_t now_ms, const struct dust_limits *lim)
{
	uint64_t w = (uint64_t)lim->ts_window_s * 1000;

	return ts_ms + w >= now_ms && ts_ms <= now_ms + w;
}

/*
 * The replay check against the invitation's last accepted intro, before any
 * X25519: a captured intro replayed at the gateway costs one AEAD open, not
 * a scalar multiplication. dust_store_commit checks again under the lock.
 */
enum dust_drop dust_intro_fresh(const struct dust_store_view *v, uint64_t ts_ms,
                                const uint8_t nonce[DUST_XNONCE_BYTES])
{
	if (ts_ms == v->last_ts_ms && sodium_memcmp(nonce, v->last_nonce, DUST_XNONCE_BYTES) == 0)
		return DUST_DROP_INTRO_DUP;
	return ts_ms <= v->last_ts_ms ? DUST_DROP_INTRO_REPLAY : DUST_OK;
}

/* What an acceptance computes on the stack; wiped whatever the outcome. */
struct accept_tmp {
	struct dust_store_view v;
	struct dust_session_keys k0, k2;
	struct dust_wire_intro_pt pt;
	struct dust_eph eph; /* made here when the caller has none */
	uint8_t dh_es[DUST_KEY_BYTES], dh_cs[DUST_KEY_BYTES], dh_ee[DUST_KEY_BYTES];
	uint8_t prk[DUST_KEY_BYTES], prk2[DUST_KEY_BYTES], k_ans[DUST_KEY_BYTES];
	uint8_t mac[DUST_CONFIRM_BYTES];
};

/* Step 2 of §5: the random-profile invitation whose tag the intro carries, or NULL. */
static struct dust_store_entry *intro_invitation(struct dust_server *srv, const uint8_t *pkt)
{
	uint8_t tag[DUST_TAG_BYTES];
	struct dust_store_entry *e;

	memcpy(tag, pkt + DUST_INTRO_TAG_OFF, sizeof(tag));
	dust_intro_tag_mask(tag, pkt + DUST_INTRO_NONCE_OFF, srv->id.pk);
	e = dust_store_lookup_tag(srv->store, tag);
	sodium_memzero(tag, sizeof(tag));
	/* a quic invitation's intros come as QUIC Initials only (§12.2) */
	return e && e->inv.profile == DUST_PROFILE_RANDOM ? e : NULL;
}

/* Steps 4-7 of §5 on the opened intro: nothing but compares, no X25519. */
static enum dust_drop accept_checks(const struct dust_server *srv, const struct dust_store_entry *e,
                                    const struct accept_tmp *t, const uint8_t *nonce, size_t len,
                                    uint64_t now_ms)
{
	uint64_t ts_ms = le64_get(t->pt.ts_ms);
	size_t padlen = le16_get(t->pt.pad_len);

	if (padlen > DUST_INTRO_PAD_MAX || le16_get(t->pt.flags) != DUST_INTRO_FLAG_SHARE)
		return DUST_DROP_MALFORMED;
	if (DUST_INTRO_MIN_BYTES + padlen > len)
		return DUST_DROP_TRUNCATED;
	if (!t->v.bound && now_ms / 1000 > e->inv.expiry)
		return DUST_DROP_INTRO_EXPIRED;
	if (t->v.bound && sodium_memcmp(t->v.client_pk, t->pt.client_pk, DUST_PK_BYTES) != 0)
		return DUST_DROP_INTRO_WRONG_KEY;
	if (!dust_intro_ts_ok(ts_ms, now_ms, &srv->lim))
		return DUST_DROP_INTRO_STALE;
	/* only a bound invitation had intros accepted, whose freshness a crash may lose */
	if (t->v.bound && ts_ms <= srv->floor_ms)
		return DUST_DROP_INTRO_EARLY;
	return dust_intro_fresh(&t->v, ts_ms, nonce);
}

/* Step 8: es, cs, the intro's keys and its confirmation, in constant time. */
static enum dust_drop accept_confirm(const struct dust_server *srv,
                                     const struct dust_store_entry *e, struct accept_tmp *t,
                                     const uint8_t *pkt)
{
	size_t conf_off = DUST_INTRO_PAD_OFF + le16_get(t->pt.pad_len);

	if (crypto_scalarmult(t->dh_es, srv->id.sk, t->pt.eph_pk) != 0)
		return DUST_DROP_INTRO_AUTH;
	/* DH(s, C) is static per binding: computed once, then cached in the store. */
	if (t->v.bound && !sodium_is_zero(t->v.static_ss, DUST_KEY_BYTES))
		memcpy(t->dh_cs, t->v.static_ss, DUST_KEY_BYTES);
	else if (crypto_scalarmult(t->dh_cs, srv->id.sk, t->pt.client_pk) != 0)
		return DUST_DROP_INTRO_AUTH;
	dust_intro_prk(t->prk, e->inv.secret, t->dh_es, t->dh_cs, srv->id.pk, pkt,
	               DUST_INTRO_PAD_OFF);
	dust_session_keys_split(&t->k0, t->prk);
	dust_intro_confirm(&t->k0, pkt, conf_off, t->mac);
	return crypto_verify_16(t->mac, pkt + conf_off) == 0 ? DUST_OK : DUST_DROP_INTRO_AUTH;
}

/* The answer block: E_s sealed under K_ans, its nonce a PRF of E_s (§5.1). */
static void answer_seal(uint8_t out[DUST_ANSWER_BYTES], const uint8_t k_ans[DUST_KEY_BYTES],
                        const uint8_t share[DUST_PK_BYTES])
{
	crypto_generichash(out + DUST_ANSWER_NONCE_OFF, DUST_XNONCE_BYTES, share, DUST_PK_BYTES,
	                   k_ans, DUST_KEY_BYTES);
	crypto_aead_xchacha20poly1305_ietf_encrypt(out + DUST_ANSWER_CT_OFF, NULL, share,
	                                           DUST_PK_BYTES, NULL, 0, NULL,
	                                           out + DUST_ANSWER_NONCE_OFF, k_ans);
}

void dust_intro_bind(struct dust_session *s, const struct dust_server *srv,
                     const struct dust_store_entry *e, struct dust_intro_info *info, bool first_use,
                     bool held)
{
	s->invite_idx = dust_store_index(srv->store, e);
	if (info) {
		info->invite_idx = s->invite_idx;
		info->first_use = first_use;
		info->held = held;
	}
}

DUST_EXPORT enum dust_drop dust_intro_accept(struct dust_server *srv, const uint8_t *pkt,
                                             size_t len, uint64_t now_ms,
                                             const struct dust_endpoint *from,
                                             const struct dust_eph *eph, struct dust_session *s,
                                             size_t *consumed, struct dust_intro_info *info)
{
	struct accept_tmp tmp, *t = &tmp;
	struct dust_store_entry *e;
	const uint8_t *nonce = pkt + DUST_INTRO_NONCE_OFF;
	bool first_use = false, held = false;
	enum dust_drop d;

	if (len < DUST_INTRO_MIN_BYTES)
		return DUST_DROP_TRUNCATED;
	memset(t, 0, sizeof(*t));
	e = intro_invitation(srv, pkt);
	if (!e) {
		d = DUST_DROP_INTRO_UNKNOWN;
		goto out_wipe;
	}
	if (__atomic_load_n(&e->revoked, __ATOMIC_ACQUIRE)) {
		d = DUST_DROP_INTRO_REVOKED;
		goto out_wipe;
	}
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(
	        (uint8_t *)&t->pt, NULL, NULL, pkt + DUST_INTRO_CT_OFF, DUST_INTRO_CT_BYTES, pkt,
	        DUST_TAG_BYTES, nonce, e->keys.intro_key) != 0) {
		d = DUST_DROP_INTRO_AUTH;
		goto out_wipe;
	}
	dust_store_view_get(srv->store, e, &t->v);
	d = accept_checks(srv, e, t, nonce, len, now_ms);
	if (d == DUST_OK)
		d = accept_confirm(srv, e, t, pkt);
	if (d == DUST_OK && !dust_share_dh(&eph, &t->eph, t->pt.eph_pk, t->dh_ee))
		d = DUST_DROP_INTRO_AUTH;
	if (d == DUST_OK)
		d = dust_store_commit(srv->store, e, t->pt.client_pk, t->dh_cs,
		                      le64_get(t->pt.ts_ms), nonce, now_ms / 1000, &first_use,
		                      &held);
	if (d != DUST_OK)
		goto out_wipe;

	dust_answer_prk(t->prk2, t->prk, t->dh_ee, eph->pk);
	dust_session_keys_split(&t->k2, t->prk2);
	keys_install(s, &t->k0, &t->k2, DUST_ROLE_SERVER, e->inv.suite);
	session_fill(s, &e->inv, (uint32_t)(now_ms / 1000));
	dust_answer_key(t->k_ans, t->prk);
	answer_seal(s->hs.answer, t->k_ans, eph->pk);
	s->hs_pending = 1;
	s->peer = *from;
	*consumed = DUST_INTRO_MIN_BYTES + le16_get(t->pt.pad_len);
	dust_intro_bind(s, srv, e, info, first_use, held);
out_wipe:
	sodium_memzero(t, sizeof(*t));
	return d;
}

DUST_EXPORT enum dust_drop dust_intro_answer_open(struct dust_session *s, const uint8_t *dg,
                                                  size_t len, size_t *consumed)
{
	struct dust_session_keys k0, k2;
	uint8_t k_ans[DUST_KEY_BYTES], share[DUST_PK_BYTES], dh_ee[DUST_KEY_BYTES];
	uint8_t prk2[DUST_KEY_BYTES];
	uint64_t sent = __atomic_load_n(&s->tx_counter, __ATOMIC_RELAXED);
	enum dust_drop d = DUST_OK;

	if (!s->hs_pending || s->role != DUST_ROLE_CLIENT)
		return DUST_DROP_AUTH;
	if (len < DUST_ANSWER_BYTES)
		return DUST_DROP_TRUNCATED;
	dust_answer_key(k_ans, s->hs.intro.prk);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(share, NULL, NULL, dg + DUST_ANSWER_CT_OFF,
	                                               DUST_PK_BYTES + DUST_MAC_BYTES, NULL, 0,
	                                               dg + DUST_ANSWER_NONCE_OFF, k_ans) != 0 ||
	    crypto_scalarmult(dh_ee, s->hs.intro.esk, share) != 0) {
		d = DUST_DROP_AUTH;
		goto out_wipe;
	}
	dust_session_keys_split(&k0, s->hs.intro.prk);
	dust_answer_prk(prk2, s->hs.intro.prk, dh_ee, share);
	dust_session_keys_split(&k2, prk2);
	/* the install wipes e and the PRK (hs) and ends hs_pending */
	keys_install(s, &k0, &k2, DUST_ROLE_CLIENT, s->suite);
	/* what it sends from now on is of key epoch 1 or later: the 0-RTT key is done */
	if (sent < DUST_KEY_EPOCH_PACKETS)
		sent = DUST_KEY_EPOCH_PACKETS;
	__atomic_store_n(&s->tx_counter, sent, __ATOMIC_RELAXED);
	*consumed = DUST_ANSWER_BYTES;
out_wipe:
	sodium_memzero(&k0, sizeof(k0));
	sodium_memzero(&k2, sizeof(k2));
	sodium_memzero(k_ans, sizeof(k_ans));
	sodium_memzero(dh_ee, sizeof(dh_ee));
	sodium_memzero(prk2, sizeof(prk2));
	sodium_memzero(share, sizeof(share));
	return d;
}

DUST_EXPORT int64_t dust_intro_peek(struct dust_server *srv, const uint8_t *pkt, size_t len)
{
	struct dust_store_entry *e =
	    len >= DUST_INTRO_MIN_BYTES ? intro_invitation(srv, pkt) : NULL;

	return e ? (int64_t)dust_store_index(srv->store, e) : -1;
}

/* Called only once the intro authenticated: a share made here costs no failed datagram. */
bool dust_share_dh(const struct dust_eph **eph, struct dust_eph *own,
                   const uint8_t peer[DUST_PK_BYTES], uint8_t dh_ee[DUST_KEY_BYTES])
{
	if (!*eph) {
		if (dust_eph_generate(own) != 0)
			return false;
		*eph = own;
	}
	return crypto_scalarmult(dh_ee, (*eph)->sk, peer) == 0;
}

DUST_EXPORT int dust_eph_generate(struct dust_eph *eph)
{
	randombytes_buf(eph->sk, sizeof(eph->sk));
	return crypto_scalarmult_base(eph->pk, eph->sk) == 0 ? 0 : -EINVAL;
}

DUST_EXPORT void dust_eph_wipe(struct dust_eph *eph)
{
	sodium_memzero(eph, sizeof(*eph));
}
