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

static void session_fill(struct dust_session *s, const struct dust_session_keys *k,
                         enum dust_role role, const struct dust_invite *inv, uint32_t now_s)
{
	const struct dust_ipaddr *tunnel = &inv->tunnel;

	dust_session_keys_install(s, k, role, inv->suite);
	s->tunnel = *tunnel;
	s->last_rx_s = now_s;
	/* the random profile: no short header, whatever the slot held before */
	s->profile = DUST_PROFILE_RANDOM;
	s->cid_len = 0;
	s->spin = 0;
	memset(s->cid, 0, sizeof(s->cid));
}

DUST_EXPORT int dust_intro_build(const struct dust_invite *inv, const struct dust_identity *client,
                                 struct dust_rng *rng, const struct dust_pad *pad, uint64_t now_ms,
                                 uint8_t *out, size_t cap, struct dust_session *s)
{
	struct dust_invite_keys ik;
	struct dust_session_keys k;
	struct dust_wire_intro_pt pt;
	uint8_t esk[DUST_KEY_BYTES], dh_es[DUST_KEY_BYTES], dh_cs[DUST_KEY_BYTES];
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
	memset(pt.flags, 0, sizeof(pt.flags));

	dust_rng_bytes(rng, nonce, DUST_XNONCE_BYTES);
	dust_intro_tag(&ik, now_ms / 1000 / DUST_EPOCH_S, tag);
	dust_intro_tag_mask(tag, nonce, inv->server_pk);
	crypto_aead_xchacha20poly1305_ietf_encrypt(out + DUST_INTRO_CT_OFF, NULL,
	                                           (const uint8_t *)&pt, sizeof(pt), tag,
	                                           DUST_TAG_BYTES, NULL, nonce, ik.intro_key);
	/* Padding travels in clear: it must be random bytes, not zeros. */
	dust_rng_bytes(rng, out + DUST_INTRO_PAD_OFF, padlen);
	dust_session_keys_derive(&k, inv->secret, dh_es, dh_cs, inv->server_pk, out,
	                         DUST_INTRO_PAD_OFF);
	dust_intro_confirm(&k, out, DUST_INTRO_PAD_OFF + padlen, out + DUST_INTRO_PAD_OFF + padlen);

	session_fill(s, &k, DUST_ROLE_CLIENT, inv, (uint32_t)(now_ms / 1000));
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

DUST_EXPORT enum dust_drop dust_intro_accept(struct dust_server *srv, const uint8_t *pkt,
                                             size_t len, uint64_t now_ms,
                                             const struct dust_endpoint *from,
                                             struct dust_session *s, size_t *consumed,
                                             struct dust_intro_info *info)
{
	struct dust_store_entry *e;
	struct dust_store_view v;
	struct dust_session_keys k;
	struct dust_wire_intro_pt pt;
	uint8_t dh_es[DUST_KEY_BYTES], dh_cs[DUST_KEY_BYTES], mac[DUST_CONFIRM_BYTES];
	uint8_t tag[DUST_TAG_BYTES];
	const uint8_t *nonce = pkt + DUST_INTRO_NONCE_OFF;
	uint64_t ts_ms, now_s = now_ms / 1000;
	size_t padlen, total;
	bool first_use = false;
	enum dust_drop d;

	if (len < DUST_INTRO_MIN_BYTES)
		return DUST_DROP_TRUNCATED;
	memcpy(tag, pkt + DUST_INTRO_TAG_OFF, sizeof(tag));
	dust_intro_tag_mask(tag, nonce, srv->id.pk);
	e = dust_store_lookup_tag(srv->store, tag);
	if (!e)
		return DUST_DROP_INTRO_UNKNOWN;
	if (__atomic_load_n(&e->revoked, __ATOMIC_ACQUIRE))
		return DUST_DROP_INTRO_REVOKED;
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(
	        (uint8_t *)&pt, NULL, NULL, pkt + DUST_INTRO_CT_OFF, DUST_INTRO_CT_BYTES, pkt,
	        DUST_TAG_BYTES, nonce, e->keys.intro_key) != 0)
		return DUST_DROP_INTRO_AUTH;

	dust_store_view_get(srv->store, e, &v);
	ts_ms = le64_get(pt.ts_ms);
	padlen = le16_get(pt.pad_len);
	total = DUST_INTRO_MIN_BYTES + padlen;
	if (padlen > DUST_INTRO_PAD_MAX || le16_get(pt.flags) != 0)
		d = DUST_DROP_MALFORMED;
	else if (total > len)
		d = DUST_DROP_TRUNCATED;
	else if (!v.bound && now_s > e->inv.expiry)
		d = DUST_DROP_INTRO_EXPIRED;
	else if (v.bound && sodium_memcmp(v.client_pk, pt.client_pk, DUST_PK_BYTES) != 0)
		d = DUST_DROP_INTRO_WRONG_KEY;
	else if (!dust_intro_ts_ok(ts_ms, now_ms, &srv->lim))
		d = DUST_DROP_INTRO_STALE;
	else
		d = dust_intro_fresh(&v, ts_ms, nonce);
	if (d == DUST_OK && crypto_scalarmult(dh_es, srv->id.sk, pt.eph_pk) != 0)
		d = DUST_DROP_INTRO_AUTH;
	if (d != DUST_OK)
		goto out_wipe;

	/* DH(s, C) is static per binding: computed once, then cached in the store. */
	if (v.bound && !sodium_is_zero(v.static_ss, DUST_KEY_BYTES))
		memcpy(dh_cs, v.static_ss, DUST_KEY_BYTES);
	else if (crypto_scalarmult(dh_cs, srv->id.sk, pt.client_pk) != 0) {
		d = DUST_DROP_INTRO_AUTH;
		goto out_wipe;
	}
	dust_session_keys_derive(&k, e->inv.secret, dh_es, dh_cs, srv->id.pk, pkt,
	                         DUST_INTRO_PAD_OFF);
	dust_intro_confirm(&k, pkt, DUST_INTRO_PAD_OFF + padlen, mac);
	if (crypto_verify_16(mac, pkt + DUST_INTRO_PAD_OFF + padlen) != 0) {
		d = DUST_DROP_INTRO_AUTH;
		goto out_wipe;
	}
	d = dust_store_commit(srv->store, e, pt.client_pk, dh_cs, ts_ms, nonce, now_s, &first_use);
	if (d != DUST_OK)
		goto out_wipe;

	session_fill(s, &k, DUST_ROLE_SERVER, &e->inv, (uint32_t)now_s);
	s->peer = *from;
	s->invite_idx = dust_store_index(srv->store, e);
	*consumed = total;
	if (info) {
		info->invite_idx = s->invite_idx;
		info->first_use = first_use;
	}
out_wipe:
	sodium_memzero(&k, sizeof(k));
	sodium_memzero(&pt, sizeof(pt));
	sodium_memzero(&v, sizeof(v));
	sodium_memzero(dh_es, sizeof(dh_es));
	sodium_memzero(dh_cs, sizeof(dh_cs));
	return d;
}
