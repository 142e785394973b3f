/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic profile's handshake (SPEC.md §12.3-§12.5): the client's intro as
 * a QUIC v1 Initial with a mirrored ClientHello, the server's answer as a
 * QUIC first flight (Initial with ServerHello, coalesced Handshake packet
 * holding a Dust keepalive), and the 1-RTT short header around data. The
 * server computes on the stack and commits only after the confirmation
 * verifies and the intro is fresh, as in §5; the session keys also take
 * DH(server ephemeral, client ephemeral), for forward secrecy.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>

#include <sodium.h>

#include "mlkem.h"
#include "quic_hello.h"
#include "quic_pvt.h"

static_assert(sizeof(((struct dust_quic_client *)0)->dk) == DUST_MLKEM768_DKBYTES,
              "qc keeps a whole dk");

enum {
	ECH_PAYLOAD_MIN = 144, /* Chromium: 144, 176, 208 or 240 bytes */
	ECH_PAYLOAD_STEP = 32,
	ECH_PAYLOAD_SIZES = 4,
	CLIENT_PN = 1,     /* Chromium numbers its hello's Initials 1 and 2 */
	HDR_CLIENT = 18,   /* first byte, version, DCID(8), SCID(0), token(0), Length(2) */
	ANSWER_MIN = 1200, /* a server's first datagram a client takes: 1200..1252 bytes */
	ANSWER_SPREAD = 53,
};
static_assert((int)ANSWER_MIN == (int)DUST_QUIC_ANSWER_MIN &&
                  (int)ANSWER_MIN + ANSWER_SPREAD - 1 == (int)DUST_QUIC_ANSWER_MAX,
              "a client opens what a server may send");

/* ---- keys ------------------------------------------------------------------ */

static void intro_prk(uint8_t prk[DUST_KEY_BYTES], const uint8_t secret[DUST_KEY_BYTES],
                      const uint8_t es[DUST_KEY_BYTES], const uint8_t cs[DUST_KEY_BYTES],
                      const uint8_t server_pk[DUST_PK_BYTES], const uint8_t *dcid,
                      const struct tls_hello_dust *h, const uint8_t ct[DUST_QI_CT_BYTES])
{
	const struct kdf_part parts[] = {{es, DUST_KEY_BYTES},
	                                 {cs, DUST_KEY_BYTES},
	                                 {server_pk, DUST_PK_BYTES},
	                                 {dcid, DUST_QUIC_CLIENT_DCID},
	                                 {h->random, DUST_TLS_RANDOM_BYTES},
	                                 {h->x25519, DUST_PK_BYTES},
	                                 {ct, DUST_QI_CT_BYTES}};

	kdf_prk(prk, secret, DUST_QUIC_INTRO_LABEL, parts, sizeof(parts) / sizeof(parts[0]));
}

/* confirm = BLAKE2b-128(K_conf, DCID | ClientHello with the confirm bytes zero) */
static void intro_confirm(const uint8_t prk[DUST_KEY_BYTES], const uint8_t *dcid, const uint8_t *ch,
                          size_t ch_len, uint8_t out[DUST_CONFIRM_BYTES])
{
	crypto_generichash_state st;
	uint8_t kc[DUST_KEY_BYTES];

	crypto_kdf_derive_from_key(kc, sizeof(kc), DUST_KDF_CONFIRM, DUST_KDF_CTX_SESSION, prk);
	crypto_generichash_init(&st, kc, sizeof(kc), DUST_CONFIRM_BYTES);
	crypto_generichash_update(&st, dcid, DUST_QUIC_CLIENT_DCID);
	crypto_generichash_update(&st, ch, ch_len);
	crypto_generichash_final(&st, out, DUST_CONFIRM_BYTES);
	sodium_memzero(kc, sizeof(kc));
	sodium_memzero(&st, sizeof(st));
}

/*
 * Session keys (hybrid, SPEC 12.3): prk2 = BLAKE2b-256(key = prk, label |
 * DH(e_s, E) | E_s | ss_mlkem | the flight's Handshake payload), split as
 * §4. prk already holds es and cs; ss_mlkem is the ML-KEM-768 secret of
 * the client's ek, so the keys stay secret while either X25519 or ML-KEM
 * holds. The payload (the masked ciphertext and its filler) binds every
 * byte of it.
 */
static void session_keys(struct dust_session_keys *k, const uint8_t prk[DUST_KEY_BYTES],
                         const uint8_t ee[DUST_KEY_BYTES], const uint8_t server_eph[DUST_PK_BYTES],
                         const uint8_t ss[DUST_MLKEM768_SSBYTES], const uint8_t *flight,
                         size_t flight_len)
{
	const struct kdf_part parts[] = {{ee, DUST_KEY_BYTES},
	                                 {server_eph, DUST_PK_BYTES},
	                                 {ss, DUST_MLKEM768_SSBYTES},
	                                 {flight, flight_len}};
	uint8_t prk2[DUST_KEY_BYTES];

	kdf_prk(prk2, prk, DUST_QUIC_SESSION_LABEL, parts, sizeof(parts) / sizeof(parts[0]));
	dust_session_keys_split(k, prk2);
	/* the quic intro's confirmation key comes from the intro-stage prk (12.2) */
	sodium_memzero(k->confirm, sizeof(k->confirm));
	sodium_memzero(prk2, sizeof(prk2));
}

/*
 * The ML-KEM ciphertext rides masked (12.3): its compressed coefficients are
 * not uniform bytes, what a real server's encrypted certificate chain is.
 * mask[64i..64i+64) = BLAKE2b-512(key = K_pq, le32(i)), K_pq = KDF(prk, 6).
 */
static void ct_mask(const uint8_t prk[DUST_KEY_BYTES], uint8_t ct[DUST_MLKEM768_CTBYTES])
{
	uint8_t kp[DUST_KEY_BYTES], blk[64], ctr[4];

	crypto_kdf_derive_from_key(kp, sizeof(kp), DUST_KDF_PQ_MASK, DUST_KDF_CTX_SESSION, prk);
	for (size_t at = 0; at < DUST_MLKEM768_CTBYTES; at += sizeof(blk)) {
		size_t n = DUST_MLKEM768_CTBYTES - at < sizeof(blk) ? DUST_MLKEM768_CTBYTES - at
		                                                    : sizeof(blk);

		le32_put(ctr, (uint32_t)(at / sizeof(blk)));
		crypto_generichash(blk, sizeof(blk), ctr, sizeof(ctr), kp, sizeof(kp));
		for (size_t i = 0; i < n; i++)
			ct[at + i] ^= blk[i];
	}
	sodium_memzero(kp, sizeof(kp));
	sodium_memzero(blk, sizeof(blk));
}

static void intro_nonce(uint8_t nonce[DUST_XNONCE_BYTES], const uint8_t random[32],
                        const uint8_t *dcid)
{
	memcpy(nonce, random + DUST_QI_NONCE_OFF, 16);
	memcpy(nonce + 16, dcid, DUST_QUIC_CLIENT_DCID);
}

static void intro_ad(uint8_t ad[DUST_TAG_BYTES + DUST_PK_BYTES], const struct tls_hello_dust *h)
{
	memcpy(ad, h->random + DUST_QI_TAG_OFF, DUST_TAG_BYTES);
	memcpy(ad + DUST_TAG_BYTES, h->x25519, DUST_PK_BYTES);
}

/* ---- client Initials ---------------------------------------------------------- */

struct item {
	uint16_t off, len; /* CRYPTO: ClientHello range; PING: len 0 off 1; PADDING: off 0 */
	uint8_t kind;
};

enum {
	ITEM_CRYPTO,
	ITEM_PING,
	ITEM_PAD,
	ITEMS_MAX = 48,
	CHUNKS_MAX = 24,
	/* handshake header, legacy version, random: the first Initial carries them (the tag) */
	HELLO_HEAD = 4 + 2 + DUST_TLS_RANDOM_BYTES,
	DEAL_TRIES = 16,
	/*
	 * Chromium 156's hello Initials (SPEC §12.2, six captured hellos and
	 * their resends): the first carries the ClientHello's head [0, a), a in
	 * 58..84, and its tail, the second the middle; each Initial's spans cut
	 * into 3-12 CRYPTO frames among 2-10 PINGs and 2-6 runs of PADDING.
	 */
	HEAD_MIN = 58,
	HEAD_SPREAD = 84 - HEAD_MIN + 1,
	CHUNKS_MIN = 3,
	CHUNKS_SPREAD = 12 - CHUNKS_MIN + 1,
	PINGS_MIN = 2,
	PINGS_SPREAD = 10 - PINGS_MIN + 1,
	PADS_MIN = 2,
	PADS_SPREAD = 6 - PADS_MIN + 1,
};
static_assert(HELLO_HEAD <= HEAD_MIN, "the first Initial's head holds the random");

static size_t crypto_frame_len(size_t off, size_t len)
{
	return 1 + quic_varint_len(off) + quic_varint_len(len) + len;
}

static void shuffle_items(struct dust_rng *rng, size_t *idx, size_t n)
{
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = dust_rng_uniform(rng, (uint32_t)i + 1), t = idx[i];

		idx[i] = idx[j];
		idx[j] = t;
	}
}

/* One packet's payload: its CRYPTO chunks in it[0..n), then PINGs and PADDING runs. */
struct packet_plan {
	struct item it[ITEMS_MAX];
	size_t n, used, pings, pads;
};

/*
 * The order of p's items: its CRYPTO frames and PINGs (the first m) in
 * shuffled order, and its runs of PADDING (the rest, up to n) each in a gap
 * of its own between them, the gaps drawn at random: two runs side by side
 * would read as one on the wire, where Chromium's Initials show 2..7. Every
 * order without adjacent runs is as likely as any other.
 */
static void order_items(struct dust_rng *rng, size_t *order, size_t m, size_t n)
{
	size_t idx[ITEMS_MAX], gap[ITEMS_MAX + 1], k = 0, next_pad = m;
	bool chosen[ITEMS_MAX + 1] = {false};

	shuffle_items(rng, idx, m);
	shuffle_items(rng, gap, m + 1);
	for (size_t i = 0; i < n - m && i <= m; i++)
		chosen[gap[i]] = true;
	for (size_t g = 0; g <= m; g++) {
		if (chosen[g])
			order[k++] = next_pad++;
		if (g < m)
			order[k++] = idx[g];
	}
	while (next_pad < n) /* more runs than gaps: never with Chromium's counts */
		order[k++] = next_pad++;
}

/*
 * Lay one Initial's payload out as Chromium does: its CRYPTO frames, PING
 * frames and runs of PADDING in shuffled order, no two runs side by side,
 * filled to exactly room bytes.
 */
static bool packet_frames(struct dust_rng *rng, struct packet_plan *p, const uint8_t *ch,
                          uint8_t *out, size_t room)
{
	size_t idx[ITEMS_MAX], pos = 0, n = p->n, left, m;

	for (size_t i = 0; i < p->pings; i++)
		p->it[n++] = (struct item){0, 1, ITEM_PING};
	m = n;
	if (p->used + p->pings + p->pads > room)
		return false;
	left = room - p->used - p->pings;
	for (size_t i = 0; i < p->pads; i++) {
		size_t take = i + 1 == p->pads
		                  ? left
		                  : 1 + dust_rng_uniform(rng, (uint32_t)(left - (p->pads - i) + 1));

		p->it[n++] = (struct item){0, (uint16_t)take, ITEM_PAD};
		left -= take;
	}
	order_items(rng, idx, m, n);
	for (size_t k = 0; k < n; k++) {
		const struct item *x = &p->it[idx[k]];

		if (x->kind == ITEM_CRYPTO) {
			out[pos++] = DUST_QUIC_FRAME_CRYPTO;
			pos += quic_varint_put(out + pos, x->off, quic_varint_len(x->off));
			pos += quic_varint_put(out + pos, x->len, quic_varint_len(x->len));
			memcpy(out + pos, ch + x->off, x->len);
			pos += x->len;
		} else if (x->kind == ITEM_PING) {
			out[pos++] = DUST_QUIC_FRAME_PING;
		} else {
			memset(out + pos, DUST_QUIC_FRAME_PADDING, x->len);
			pos += x->len;
		}
	}
	return pos == room;
}

/*
 * Cut spans (offset, length: in order, disjoint, none empty) into n CRYPTO
 * frames at n - nspans distinct points drawn inside them, into p (emptied).
 */
static void chop(struct dust_rng *rng, const uint16_t spans[][2], size_t nspans, size_t n,
                 struct packet_plan *p)
{
	size_t total = 0, cut[CHUNKS_MAX], ncut = 0, base = 0, k = 0;

	for (size_t i = 0; i < nspans; i++)
		total += spans[i][1];
	if (n > total || n > CHUNKS_MAX)
		n = total < CHUNKS_MAX ? total : CHUNKS_MAX;
	/* cut points in the spans' concatenation: 1..total-1, none where a span ends */
	while (ncut + nspans < n) {
		size_t c = 1 + dust_rng_uniform(rng, (uint32_t)total - 1), end = 0;
		bool taken = false;

		for (size_t i = 0; i < nspans && !taken; i++)
			taken = c == (end += spans[i][1]);
		for (size_t j = 0; j < ncut && !taken; j++)
			taken = cut[j] == c;
		if (!taken)
			cut[ncut++] = c;
	}
	for (size_t i = 1; i < ncut; i++) /* sort the cut points */
		for (size_t j = i; j > 0 && cut[j - 1] > cut[j]; j--) {
			size_t t = cut[j];

			cut[j] = cut[j - 1];
			cut[j - 1] = t;
		}
	p->n = p->used = 0;
	for (size_t i = 0; i < nspans; base += spans[i][1], i++)
		for (size_t at = 0; at < spans[i][1];) {
			size_t to =
			    k < ncut && cut[k] < base + spans[i][1] ? cut[k++] - base : spans[i][1];
			uint16_t off = (uint16_t)(spans[i][0] + at), len = (uint16_t)(to - at);

			p->it[p->n++] = (struct item){off, len, ITEM_CRYPTO};
			p->used += crypto_frame_len(off, len);
			at = to;
		}
}

/* Draw one Initial's frames over its spans; false if they do not fit in room. */
static bool packet_plan_draw(struct dust_rng *rng, const uint16_t spans[][2], size_t nspans,
                             size_t room, struct packet_plan *p)
{
	chop(rng, spans, nspans, CHUNKS_MIN + dust_rng_uniform(rng, CHUNKS_SPREAD), p);
	p->pings = PINGS_MIN + dust_rng_uniform(rng, PINGS_SPREAD);
	p->pads = PADS_MIN + dust_rng_uniform(rng, PADS_SPREAD);
	return p->used + p->pings + p->pads <= room;
}

/*
 * Deal the ClientHello to the hello's two Initials as Chromium 156 does:
 * the first gets its head [0, a) and its tail [b, ch_len), the second the
 * middle [a, b), four bytes more than the first (rounded up): Chromium's
 * split in every capture. The head holds HELLO_HEAD, where the gateway
 * checks the tag before it holds the datagram for the second. false if
 * this draw does not fit (drawn again).
 */
static bool hello_deal(struct dust_rng *rng, size_t ch_len, size_t room, struct packet_plan p[2],
                       struct dust_quic_client *qc)
{
	size_t a = HEAD_MIN + dust_rng_uniform(rng, HEAD_SPREAD), b = a + (ch_len + 5) / 2;

	if (b >= ch_len)
		return false;
	qc->hello_nspans[0] = 2;
	qc->hello_spans[0][0][0] = 0;
	qc->hello_spans[0][0][1] = (uint16_t)a;
	qc->hello_spans[0][1][0] = (uint16_t)b;
	qc->hello_spans[0][1][1] = (uint16_t)(ch_len - b);
	qc->hello_nspans[1] = 1;
	qc->hello_spans[1][0][0] = (uint16_t)a;
	qc->hello_spans[1][0][1] = (uint16_t)(b - a);
	for (int k = 0; k < DUST_QUIC_HELLO_DGRAMS; k++)
		if (!packet_plan_draw(rng, qc->hello_spans[k], qc->hello_nspans[k], room, &p[k]))
			return false;
	return true;
}

/*
 * Header and protection of one client Initial (packet number pn, pn_len
 * bytes wide) around its room bytes of frames at out + HDR_CLIENT + pn_len.
 */
static int client_initial(const uint8_t *dcid, uint64_t pn, size_t pn_len, size_t room,
                          uint8_t *out)
{
	struct dust_quic_keys k;
	bool ok;

	out[0] = (uint8_t)(0xc0 | (pn_len - 1)); /* long, fixed, Initial */
	memcpy(out + 1, "\x00\x00\x00\x01", 4);
	out[5] = DUST_QUIC_CLIENT_DCID;
	memcpy(out + 6, dcid, DUST_QUIC_CLIENT_DCID);
	out[14] = 0; /* SCID length */
	out[15] = 0; /* token length */
	quic_varint_put(out + 16, pn_len + room + DUST_QUIC_AEAD_TAG, 2);
	dust_quic_initial_keys(dcid, DUST_QUIC_CLIENT_DCID, false, &k);
	ok = quic_protect(&k, out, HDR_CLIENT, pn_len, pn, room);
	sodium_memzero(&k, sizeof(k));
	return ok ? DUST_QUIC_CLIENT_DGRAM : -EIO;
}

/* Frames of one hello Initial (1-byte packet numbers, as Chromium's) fill this. */
#define HELLO_ROOM (DUST_QUIC_CLIENT_DGRAM - HDR_CLIENT - 1 - DUST_QUIC_AEAD_TAG)

/*
 * The hello: two 1250-byte Initials (packet numbers pn and pn + 1, one
 * DCID) at out; qc keeps which ClientHello spans each carried, for the resends.
 */
static int client_hello(struct dust_rng *rng, const uint8_t *dcid, const uint8_t *ch, size_t ch_len,
                        uint64_t pn, uint8_t *out, struct dust_quic_client *qc)
{
	struct packet_plan p[2];
	int tries = 0;

	while (!hello_deal(rng, ch_len, HELLO_ROOM, p, qc))
		if (++tries == DEAL_TRIES)
			return -EMSGSIZE;
	for (int k = 0; k < DUST_QUIC_HELLO_DGRAMS; k++) {
		uint8_t *dg = out + (size_t)k * DUST_QUIC_CLIENT_DGRAM;
		int r;

		if (!packet_frames(rng, &p[k], ch, dg + HDR_CLIENT + 1, HELLO_ROOM))
			return -EMSGSIZE;
		r = client_initial(dcid, pn + (uint64_t)k, 1, HELLO_ROOM, dg);
		if (r < 0)
			return r;
	}
	return DUST_QUIC_HELLO_BYTES;
}

/*
 * One hello Initial again (packet number pn), as Chromium resends one: the
 * ClientHello spans that Initial k carried, cut into CRYPTO frames afresh,
 * with PINGs and PADDING drawn afresh and all shuffled.
 */
static int client_hello_again(struct dust_rng *rng, const struct dust_quic_client *qc, int k,
                              uint64_t pn, uint8_t *out)
{
	struct packet_plan p;

	for (int tries = 0; tries < DEAL_TRIES; tries++)
		if (packet_plan_draw(rng, qc->hello_spans[k], qc->hello_nspans[k], HELLO_ROOM,
		                     &p) &&
		    packet_frames(rng, &p, qc->ch, out + HDR_CLIENT + 1, HELLO_ROOM))
			return client_initial(qc->dcid, pn, 1, HELLO_ROOM, out);
	return -EMSGSIZE;
}

/* Fill h (random, E, ECH enc) and the intro ciphertext; returns 0 or -errno. */
static int intro_fields(const struct dust_invite *inv, const struct dust_identity *client,
                        struct dust_rng *rng, uint64_t now_ms, const uint8_t *dcid,
                        const uint8_t esk[DUST_KEY_BYTES], struct tls_hello_dust *h,
                        uint8_t ct[DUST_QI_CT_BYTES])
{
	struct dust_invite_keys ik;
	uint8_t pt[DUST_QI_PT_BYTES], nonce[DUST_XNONCE_BYTES], ad[DUST_TAG_BYTES + DUST_PK_BYTES];
	uint8_t junk[DUST_KEY_BYTES];
	int rc = 0;

	dust_rng_bytes(rng, junk, sizeof(junk));
	if (crypto_scalarmult_base(h->x25519, esk) != 0 ||
	    crypto_scalarmult_base(h->ech_enc, junk) != 0)
		rc = dust_fail(EINVAL, "X25519 failed");
	dust_rng_bytes(rng, h->random + DUST_QI_NONCE_OFF, 16);
	intro_nonce(nonce, h->random, dcid);
	dust_invite_derive(inv, &ik);
	dust_intro_tag(&ik, now_ms / 1000 / DUST_EPOCH_S, h->random + DUST_QI_TAG_OFF);
	dust_intro_tag_mask(h->random + DUST_QI_TAG_OFF, nonce, inv->server_pk);
	memcpy(pt, client->pk, DUST_PK_BYTES);
	le64_put(pt + DUST_PK_BYTES, now_ms);
	le16_put(pt + DUST_PK_BYTES + 8, 0); /* flags */
	intro_ad(ad, h);
	crypto_aead_xchacha20poly1305_ietf_encrypt(ct, NULL, pt, sizeof(pt), ad, sizeof(ad), NULL,
	                                           nonce, ik.intro_key);
	sodium_memzero(&ik, sizeof(ik));
	sodium_memzero(pt, sizeof(pt));
	sodium_memzero(junk, sizeof(junk));
	return rc;
}

/*
 * The X25519MLKEM768 share (ek | x25519): ek is the client's ML-KEM-768 key
 * (dk kept in qc), the x25519 half a key of its own, unused (as Chromium's
 * would be when the server picks group 29).
 */
static int hybrid_share(struct dust_rng *rng, struct dust_quic_client *qc,
                        uint8_t share[DUST_TLS_HYBRID_SHARE_BYTES])
{
	uint8_t junk[DUST_KEY_BYTES];
	int rc = 0;

	if (dust_mlkem768_keypair(share, qc->dk, rng) != 0)
		rc = dust_fail(EIO, "ML-KEM-768 key generation failed");
	dust_rng_bytes(rng, junk, sizeof(junk));
	if (!rc && crypto_scalarmult_base(share + DUST_TLS_HYBRID_EK_BYTES, junk) != 0)
		rc = dust_fail(EINVAL, "X25519 failed");
	sodium_memzero(junk, sizeof(junk));
	return rc;
}

DUST_EXPORT int dust_quic_intro_build(const struct dust_invite *inv,
                                      const struct dust_identity *client, struct dust_rng *rng,
                                      uint64_t now_ms, uint8_t *out, size_t cap,
                                      struct dust_quic_client *qc)
{
	struct tls_hello_dust h;
	uint8_t ch[2048], ct[DUST_QI_CT_BYTES], es[DUST_KEY_BYTES], cs[DUST_KEY_BYTES];
	uint8_t dcid[DUST_QUIC_CLIENT_DCID], share[DUST_TLS_HYBRID_SHARE_BYTES];
	size_t ech_len, ch_len, at = 0;
	int rc;

	if (inv->profile != DUST_PROFILE_QUIC)
		return dust_fail(EINVAL, "not a quic-profile invitation");
	if (cap < DUST_QUIC_HELLO_BYTES)
		return dust_fail(EMSGSIZE, "a quic intro needs %d bytes", DUST_QUIC_HELLO_BYTES);
	memset(&h, 0, sizeof(h));
	dust_quic_client_wipe(qc);
	ech_len = ECH_PAYLOAD_MIN + ECH_PAYLOAD_STEP * dust_rng_uniform(rng, ECH_PAYLOAD_SIZES);
	dust_rng_bytes(rng, dcid, sizeof(dcid));
	dust_rng_bytes(rng, qc->esk, sizeof(qc->esk));
	rc = hybrid_share(rng, qc, share);
	if (!rc)
		rc = intro_fields(inv, client, rng, now_ms, dcid, qc->esk, &h, ct);
	if (!rc && (crypto_scalarmult(es, qc->esk, inv->server_pk) != 0 ||
	            crypto_scalarmult(cs, client->sk, inv->server_pk) != 0))
		rc = dust_fail(EINVAL, "server public key in the invitation is unusable");
	if (rc)
		goto out_wipe;
	h.hybrid = share;
	memcpy(h.sni, inv->cover_sni, sizeof(h.sni));
	ch_len = tls_client_hello_build(rng, &h, ech_len, ch, sizeof(ch), &at);
	if (!ch_len) {
		rc = dust_fail(EMSGSIZE, "ClientHello does not fit");
		goto out_wipe;
	}
	/* ECH payload: ct | confirm | random filler */
	memcpy(ch + at, ct, DUST_QI_CT_BYTES);
	memset(ch + at + DUST_QI_CONFIRM_OFF, 0, DUST_CONFIRM_BYTES);
	dust_rng_bytes(rng, ch + at + DUST_QI_MIN_ECH, ech_len - DUST_QI_MIN_ECH);
	intro_prk(qc->prk, inv->secret, es, cs, inv->server_pk, dcid, &h, ct);
	intro_confirm(qc->prk, dcid, ch, ch_len, ch + at + DUST_QI_CONFIRM_OFF);
	rc = client_hello(rng, dcid, ch, ch_len, CLIENT_PN, out, qc);
	if (rc < 0) {
		dust_fail(-rc, "could not build the Initials");
		goto out_wipe;
	}
	memcpy(qc->eph_pk, h.x25519, DUST_PK_BYTES);
	memcpy(qc->dcid, dcid, sizeof(dcid));
	qc->dcid_len = sizeof(dcid);
	qc->tunnel = inv->tunnel;
	qc->suite = inv->suite;
	qc->server.ip = inv->server;
	qc->server.port = inv->port;
	qc->pending = true;
	memcpy(qc->ch, ch, ch_len);
	qc->ch_len = (uint16_t)ch_len;
	qc->next_pn = CLIENT_PN + DUST_QUIC_HELLO_DGRAMS;
out_wipe:
	if (rc < 0)
		dust_quic_client_wipe(qc);
	sodium_memzero(es, sizeof(es));
	sodium_memzero(cs, sizeof(cs));
	sodium_memzero(ch, sizeof(ch));
	sodium_memzero(share, sizeof(share));
	return rc;
}

DUST_EXPORT int dust_quic_intro_resend(struct dust_quic_client *qc, struct dust_rng *rng,
                                       uint8_t *out, size_t cap)
{
	uint64_t pn = qc->next_pn + 1; /* Chromium skips one packet number per PTO */
	int rc;

	if (!qc->pending || !qc->ch_len)
		return dust_fail(EINVAL, "no quic hello to retransmit");
	if (cap < DUST_QUIC_CLIENT_DGRAM)
		return dust_fail(EMSGSIZE, "a quic resend needs %d bytes", DUST_QUIC_CLIENT_DGRAM);
	if (pn >= 64) /* a hello's packet numbers stay one byte wide (the server's check) */
		return dust_fail(ERANGE, "no packet number left for a resend");
	rc = client_hello_again(rng, qc, (qc->resends + qc->acked) % 2, pn, out);
	if (rc < 0)
		return dust_fail(-rc, "could not build the Initial");
	qc->next_pn = pn + 1;
	qc->resends++;
	return rc;
}

#define N(a) (unsigned)(sizeof(a) / sizeof((a)[0]))

/* A draw from a sorted table of n samples: linear between two neighbours. */
static uint32_t draw_between(struct dust_rng *rng, const uint32_t *v, unsigned n)
{
	uint32_t u = dust_rng_uniform(rng, (n - 1) << 16), i = u >> 16, f = u & 0xffff;

	return v[i] + (uint32_t)(((uint64_t)(v[i + 1] - v[i]) * f) >> 16);
}

DUST_EXPORT uint32_t dust_quic_pto_probe_ms(struct dust_rng *rng, uint32_t rtt_ms)
{
	uint32_t ms = (draw_between(rng, quic_pto_probe_us, N(quic_pto_probe_us)) + 999) / 1000;

	if (rtt_ms > 60000)
		rtt_ms = 60000; /* Chromium's PTOs are bounded long before */
	return ms < 3 * rtt_ms ? 3 * rtt_ms : ms;
}

DUST_EXPORT uint32_t dust_quic_answer_delay_ms(struct dust_rng *rng)
{
	return (draw_between(rng, quic_answer_us, N(quic_answer_us)) + 999) / 1000;
}

DUST_EXPORT uint32_t dust_quic_answer_hold_max_ms(void)
{
	return 1000;
}

/* Chromium 156's reason phrase when its 4-second handshake idle timeout ends a connection */
#define CLOSE_REASON                                                                               \
	"25:No recent network activity after %" PRIu64 "us. Timeout:4s "                           \
	"num_undecryptable_packets: 0 {}"

DUST_EXPORT int dust_quic_intro_close(struct dust_quic_client *qc, uint64_t idle_us, uint8_t *out,
                                      size_t cap)
{
	enum {
		PN_LEN = 2,
		ROOM = DUST_QUIC_CLIENT_DGRAM - HDR_CLIENT - PN_LEN - DUST_QUIC_AEAD_TAG
	};
	char reason[128];
	uint8_t *f = out + HDR_CLIENT + PN_LEN;
	size_t pos = 0;
	int n, rc;

	if (!qc->pending || !qc->ch_len)
		return dust_fail(EINVAL, "no quic hello to give up");
	if (cap < DUST_QUIC_CLIENT_DGRAM)
		return dust_fail(EMSGSIZE, "a quic close needs %d bytes", DUST_QUIC_CLIENT_DGRAM);
	n = snprintf(reason, sizeof(reason), CLOSE_REASON, idle_us);
	if (n < 0 || (size_t)n >= sizeof(reason))
		return dust_fail(EINVAL, "close reason does not fit");
	f[pos++] = DUST_QUIC_FRAME_CONNECTION_CLOSE;
	f[pos++] = 0; /* NO_ERROR */
	f[pos++] = 0; /* frame type: none */
	pos += quic_varint_put(f + pos, (uint64_t)n, quic_varint_len((uint64_t)n));
	memcpy(f + pos, reason, (size_t)n);
	pos += (size_t)n;
	memset(f + pos, DUST_QUIC_FRAME_PADDING, ROOM - pos);
	rc = client_initial(qc->dcid, qc->next_pn, PN_LEN, ROOM, out);
	if (rc < 0)
		return dust_fail(-rc, "could not build the Initial");
	qc->next_pn++;
	return rc;
}

DUST_EXPORT void dust_quic_client_wipe(struct dust_quic_client *qc)
{
	sodium_memzero(qc, sizeof(*qc));
}

/* ---- server: reading the Initial ------------------------------------------ */

/*
 * Walk an Initial's frames, only those an Initial may hold; CRYPTO data goes
 * to cb unless it is NULL. A CONNECTION_CLOSE, whole, ends the walk where
 * the caller looks for one (closed: set), and refuses the payload otherwise.
 */
static bool initial_walk(const uint8_t *f, size_t n, struct quic_crypto_buf *cb, bool *closed)
{
	size_t pos = 0;

	while (pos < n) {
		uint64_t off, len;

		switch (f[pos]) {
		case DUST_QUIC_FRAME_PADDING:
		case DUST_QUIC_FRAME_PING:
			pos++;
			break;
		case DUST_QUIC_FRAME_ACK:
		case DUST_QUIC_FRAME_ACK + 1:
			if (!quic_ack_skip(f, n, &pos, 64))
				return false;
			break;
		case DUST_QUIC_FRAME_CRYPTO:
			pos++;
			if (!quic_varint_get(f, n, &pos, &off) ||
			    !quic_varint_get(f, n, &pos, &len) || len > n - pos ||
			    (cb && !quic_crypto_store(cb, off, f + pos, len)))
				return false;
			pos += len;
			break;
		case DUST_QUIC_FRAME_CONNECTION_CLOSE:
			pos++;
			/* error code, frame type, reason phrase */
			if (!closed || !quic_varint_get(f, n, &pos, &off) ||
			    !quic_varint_get(f, n, &pos, &off) ||
			    !quic_varint_get(f, n, &pos, &len) || len > n - pos)
				return false;
			*closed = true;
			return true;
		default:
			return false;
		}
	}
	return true;
}

DUST_EXPORT bool dust_quic_is_initial(const uint8_t *dg, size_t len)
{
	return len >= 7 && (dg[0] & 0xf0) == 0xc0 && dg[1] == 0 && dg[2] == 0 && dg[3] == 0 &&
	       dg[4] == 1;
}

/*
 * Header-check and decrypt one client Initial that fills dg[0..len) exactly
 * into frames. Without want, the Initial keys of its DCID are derived into
 * *k; with want, its DCID must be want's and *k holds that DCID's keys
 * already (five HMACs saved on the hello's second Initial). The caller
 * wipes *k. Returns the payload length, or 0.
 */
static size_t open_client_initial(const uint8_t *dg, size_t len, const struct quic_long *want,
                                  struct quic_long *h, uint64_t *pn, uint8_t frames[1500],
                                  struct dust_quic_keys *k)
{
	size_t plen = 0;
	bool ok;

	if (len < DUST_QUIC_INITIAL_MIN || len > 1500 || !dust_quic_is_initial(dg, len) ||
	    !quic_long_parse(dg, len, h) || h->dcid_len < DUST_QUIC_CLIENT_DCID ||
	    h->length != len - h->pn_off)
		return 0;
	if (want && (h->dcid_len != want->dcid_len || memcmp(h->dcid, want->dcid, h->dcid_len)))
		return 0;
	if (!want)
		dust_quic_initial_keys(h->dcid, h->dcid_len, false, k);
	ok = quic_unprotect(k, dg, h->pn_off, h->length, pn, frames, &plen);
	return ok ? plen : 0;
}

DUST_EXPORT bool dust_quic_client_initial_read(const uint8_t *dg, size_t len, uint64_t *pn,
                                               bool *closed)
{
	struct dust_quic_keys k;
	struct quic_long h;
	uint8_t frames[1500];
	size_t plen = open_client_initial(dg, len, NULL, &h, pn, frames, &k);
	bool ok;

	*closed = false;
	ok = plen && initial_walk(frames, plen, NULL, closed);
	sodium_memzero(frames, sizeof(frames));
	sodium_memzero(&k, sizeof(k));
	return ok;
}

DUST_EXPORT bool dust_quic_is_client_close(const uint8_t *dg, size_t len)
{
	uint64_t pn;
	bool closed;

	return dust_quic_client_initial_read(dg, len, &pn, &closed) && closed;
}

/* Where the hello's first Initial ends in dg: its Length field (the two are back to back). */
static size_t first_initial_len(const uint8_t *dg, size_t len)
{
	struct quic_long h;

	if (!dust_quic_is_initial(dg, len) || !quic_long_parse(dg, len, &h))
		return 0;
	return h.pn_off + h.length;
}

/*
 * Whether the CRYPTO stream read so far holds the ClientHello's head, through
 * its random (the tag): the hello's first Initial must, so that the gateway
 * can name the invitation from it alone (dust_quic_intro_peek) and an intro
 * it accepts is one the peek names.
 */
static bool hello_head_in(const struct quic_crypto_buf *cb)
{
	return quic_crypto_complete(cb, HELLO_HEAD);
}

/*
 * The hello (SPEC 12.2): two client Initials back to back in dg (each
 * filling its datagram, one DCID, two packet numbers), their CRYPTO frames
 * reassembled into cb. Returns the ClientHello's length, or 0. *pn is the
 * larger packet number (what the answer acknowledges), *pn_lo the smaller.
 */
static size_t read_client_hello(const uint8_t *dg, size_t len, struct quic_long *h, uint64_t *pn,
                                uint64_t *pn_lo, struct quic_crypto_buf *cb)
{
	struct quic_long h2;
	struct dust_quic_keys k;
	uint8_t frames[1500];
	size_t n1 = first_initial_len(dg, len), plen;
	uint64_t pn2 = 0;
	bool ok;

	quic_crypto_reset(cb);
	if (n1 < DUST_QUIC_INITIAL_MIN || n1 >= len)
		return 0;
	plen = open_client_initial(dg, n1, NULL, h, pn, frames, &k);
	ok = plen && initial_walk(frames, plen, cb, NULL) && hello_head_in(cb);
	plen = ok ? open_client_initial(dg + n1, len - n1, h, &h2, &pn2, frames, &k) : 0;
	/* one-byte packet numbers, as Chromium's (1 and 2): the answer's ACK has a known size */
	ok = plen && pn2 != *pn && pn2 < 64 && *pn < 64 && initial_walk(frames, plen, cb, NULL);
	sodium_memzero(frames, sizeof(frames));
	sodium_memzero(&k, sizeof(k));
	if (!ok)
		return 0;
	*pn_lo = pn2 < *pn ? pn2 : *pn;
	*pn = pn2 > *pn ? pn2 : *pn;
	return quic_crypto_message(cb, DUST_TLS_CLIENT_HELLO);
}

/*
 * The ClientHello's random from the hello's first Initial alone (dg may hold
 * only it): the head of the CRYPTO stream, through random, must be there.
 */
static bool read_hello_random(const uint8_t *dg, size_t len, struct quic_long *h,
                              struct quic_crypto_buf *cb, uint8_t random[DUST_TLS_RANDOM_BYTES])
{
	struct dust_quic_keys k;
	uint8_t frames[1500];
	size_t n1 = first_initial_len(dg, len), plen;
	uint64_t pn;
	bool ok;

	quic_crypto_reset(cb);
	if (n1 < DUST_QUIC_INITIAL_MIN || n1 > len)
		return false;
	plen = open_client_initial(dg, n1, NULL, h, &pn, frames, &k);
	ok = plen && initial_walk(frames, plen, cb, NULL) && hello_head_in(cb);
	sodium_memzero(frames, sizeof(frames));
	sodium_memzero(&k, sizeof(k));
	if (!ok || cb->b[0] != DUST_TLS_CLIENT_HELLO ||
	    be16_get(cb->b + 4) != DUST_TLS_LEGACY_VERSION)
		return false;
	memcpy(random, cb->b + 6, DUST_TLS_RANDOM_BYTES);
	return true;
}

/*
 * One length for every connection of the gateway, as a real server has: a
 * length fixed per invitation linked a client's flows and showed up to 13
 * lengths on one address.
 */
static uint8_t server_cid_len(void)
{
	return DUST_QUIC_SERVER_CID_LEN;
}

struct accept_tmp {
	struct quic_crypto_buf cb;
	struct tls_hello_dust h;
	struct dust_store_view v;
	struct dust_session_keys k;
	uint8_t pt[DUST_QI_PT_BYTES];
	uint8_t nonce[DUST_XNONCE_BYTES];
	uint8_t es[DUST_KEY_BYTES], cs[DUST_KEY_BYTES], ee[DUST_KEY_BYTES];
	uint8_t pq_ss[DUST_MLKEM768_SSBYTES]; /* ML-KEM-768 secret encapsulated to the hello's ek */
	uint8_t prk[DUST_KEY_BYTES];
	struct dust_eph eph; /* made here when the caller has none */
	uint8_t confirm[DUST_CONFIRM_BYTES], mac[DUST_CONFIRM_BYTES];
	uint8_t tag[DUST_TAG_BYTES], ad[DUST_TAG_BYTES + DUST_PK_BYTES]; /* open_fields */
};

/* The invitation whose tag the ClientHello carries (quic profile), or NULL. */
static struct dust_store_entry *hello_invitation(struct dust_server *srv,
                                                 const struct quic_long *qh, struct accept_tmp *t)
{
	struct dust_store_entry *e;

	intro_nonce(t->nonce, t->h.random, qh->dcid);
	memcpy(t->tag, t->h.random + DUST_QI_TAG_OFF, sizeof(t->tag));
	dust_intro_tag_mask(t->tag, t->nonce, srv->id.pk);
	e = dust_store_lookup_tag(srv->store, t->tag);
	return e && e->inv.profile == DUST_PROFILE_QUIC ? e : NULL;
}

/* Steps 2-3 of §5 on the ClientHello's fields: the invitation and the plaintext. */
static enum dust_drop open_fields(struct dust_server *srv, const struct quic_long *qh,
                                  struct accept_tmp *t, struct dust_store_entry **ep)
{
	struct dust_store_entry *e;

	if (t->h.ech_payload_len < DUST_QI_MIN_ECH)
		return DUST_DROP_MALFORMED;
	if (!(e = hello_invitation(srv, qh, t)))
		return DUST_DROP_INTRO_UNKNOWN;
	/* a revoked invitation costs no crypto at all (checked again at commit) */
	if (__atomic_load_n(&e->revoked, __ATOMIC_ACQUIRE))
		return DUST_DROP_INTRO_REVOKED;
	intro_ad(t->ad, &t->h);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(t->pt, NULL, NULL, t->h.ech_payload,
	                                               DUST_QI_CT_BYTES, t->ad, sizeof(t->ad),
	                                               t->nonce, e->keys.intro_key) != 0)
		return DUST_DROP_INTRO_AUTH;
	*ep = e;
	return le16_get(t->pt + DUST_PK_BYTES + 8) ? DUST_DROP_MALFORMED : DUST_OK;
}

/* Steps 4-7 of §5: expiry, bound key, window, DH and the confirmation. */
static enum dust_drop check_intro(struct dust_server *srv, const struct quic_long *qh,
                                  struct accept_tmp *t, struct dust_store_entry *e, size_t ch_len,
                                  uint64_t now_ms)
{
	const uint8_t *client_pk = t->pt;
	uint8_t *conf = t->cb.b + t->h.ech_payload_off + DUST_QI_CONFIRM_OFF;
	enum dust_drop d;

	dust_store_view_get(srv->store, e, &t->v);
	if (!t->v.bound && now_ms / 1000 > e->inv.expiry)
		return DUST_DROP_INTRO_EXPIRED;
	if (t->v.bound && sodium_memcmp(t->v.client_pk, client_pk, DUST_PK_BYTES) != 0)
		return DUST_DROP_INTRO_WRONG_KEY;
	if (!dust_intro_ts_ok(le64_get(t->pt + DUST_PK_BYTES), now_ms, &srv->lim))
		return DUST_DROP_INTRO_STALE;
	if (t->v.bound && le64_get(t->pt + DUST_PK_BYTES) <= srv->floor_ms)
		return DUST_DROP_INTRO_EARLY;
	/* a replayed or duplicated Initial costs no X25519 (checked again at commit) */
	d = dust_intro_fresh(&t->v, le64_get(t->pt + DUST_PK_BYTES), t->nonce);
	if (d != DUST_OK)
		return d;
	if (crypto_scalarmult(t->es, srv->id.sk, t->h.x25519) != 0)
		return DUST_DROP_INTRO_AUTH;
	if (t->v.bound && !sodium_is_zero(t->v.static_ss, DUST_KEY_BYTES))
		memcpy(t->cs, t->v.static_ss, DUST_KEY_BYTES);
	else if (crypto_scalarmult(t->cs, srv->id.sk, client_pk) != 0)
		return DUST_DROP_INTRO_AUTH;
	intro_prk(t->prk, e->inv.secret, t->es, t->cs, srv->id.pk, qh->dcid, &t->h,
	          t->h.ech_payload);
	memcpy(t->confirm, conf, DUST_CONFIRM_BYTES);
	memset(conf, 0, DUST_CONFIRM_BYTES);
	intro_confirm(t->prk, qh->dcid, t->cb.b, ch_len, t->mac);
	return crypto_verify_16(t->mac, t->confirm) == 0 ? DUST_OK : DUST_DROP_INTRO_AUTH;
}

static void server_session(struct dust_session *s, struct dust_rng *rng,
                           const struct dust_session_keys *k, const struct dust_store_entry *e)
{
	uint8_t spin;

	dust_session_keys_install(s, k, DUST_ROLE_SERVER, e->inv.suite);
	s->profile = DUST_PROFILE_QUIC;
	s->cid_len = server_cid_len();
	dust_rng_bytes(rng, s->cid, s->cid_len);
	dust_rng_bytes(rng, &spin, 1);
	s->spin = spin & DUST_QUIC_SPIN;
	s->tunnel = e->inv.tunnel;
}

/* Length of ack_frame's ACK of the hello's Initials. */
static size_t ack_frame_len(const struct dust_quic_accept *acc)
{
	size_t n = 1 + quic_varint_len(acc->client_pn) + 1 + 2;

	if (acc->client_pn - acc->client_pn_lo != 1)
		n += quic_varint_len(acc->client_pn - acc->client_pn_lo - 2) + 1;
	return n;
}

enum {
	SERVER_HELLO_LEN = 90, /* tls_server_hello_build's, x25519 share */
	/* first byte, version, DCID length (0), SCID length, Length (2): then the SCID */
	HS_HDR_FIXED = 1 + 4 + 1 + 1 + 2,
	/*
	 * The server Initials' packet numbers are 2 bytes wide, as quic-go's
	 * (caddy 2.6.2's ACK-only Initial is 37 bytes for it, 20 of 20 in
	 * test/data/chromium156-caddy-loads.pcap; 1-byte ones made it 36).
	 */
	SERVER_PN_LEN = 2,
	/* the Handshake packet's sends told apart (hs_packet): its first byte's low bits */
	HS_SEND_MASK = 0x0f,
};

/* The answer's Initial (server_initial): long header with a token length, pn, frames, tag. */
static size_t answer_initial_len(const struct dust_quic_accept *acc, size_t cid_len)
{
	return HS_HDR_FIXED + 1 + cid_len + SERVER_PN_LEN + ack_frame_len(acc) + 4 +
	       SERVER_HELLO_LEN + DUST_QUIC_AEAD_TAG;
}

/*
 * The answer's Handshake payload: the masked ciphertext in flight[0..1088),
 * random filler to the end of the answer's answer_len bytes (the cover
 * server's; raised to what the ciphertext needs, never over the bound).
 */
static void flight_fill(struct dust_rng *rng, struct dust_quic_accept *acc, size_t answer_len)
{
	size_t used = answer_initial_len(acc, DUST_QUIC_SERVER_CID_LEN) + HS_HDR_FIXED +
	              DUST_QUIC_SERVER_CID_LEN;
	size_t n = answer_len > DUST_QUIC_ANSWER_MAX ? DUST_QUIC_ANSWER_MAX : answer_len;

	n = n > used + DUST_MLKEM768_CTBYTES ? n - used : DUST_MLKEM768_CTBYTES;
	acc->flight_len = (uint16_t)(n > DUST_QUIC_FLIGHT_MAX ? DUST_QUIC_FLIGHT_MAX : n);
	dust_rng_bytes(rng, acc->flight + DUST_MLKEM768_CTBYTES,
	               acc->flight_len - DUST_MLKEM768_CTBYTES);
}

/*
 * One Initial, not a whole hello: a browser's (its tag names nothing:
 * unknown, as a one-Initial hello was), one that does not decrypt
 * (malformed), or a Dust hello's first alone (truncated). Nothing changes.
 */
static enum dust_drop lone_initial(struct dust_server *srv, const uint8_t *dg, size_t len)
{
	struct accept_tmp tmp, *t = &tmp;
	struct quic_long qh;
	enum dust_drop d = DUST_DROP_MALFORMED;

	if (read_hello_random(dg, len, &qh, &t->cb, t->h.random))
		d = hello_invitation(srv, &qh, t) ? DUST_DROP_TRUNCATED : DUST_DROP_INTRO_UNKNOWN;
	sodium_memzero(t, sizeof(*t));
	return d;
}

DUST_EXPORT enum dust_drop
dust_quic_intro_accept(struct dust_server *srv, struct dust_rng *rng, const uint8_t *dg, size_t len,
                       uint64_t now_ms, const struct dust_endpoint *from,
                       const struct dust_eph *eph, struct dust_session *s,
                       struct dust_quic_accept *acc, struct dust_intro_info *info)
{
	return dust_quic_intro_accept_sized(srv, rng, dg, len, now_ms, from, eph,
	                                    DUST_QUIC_ANSWER_BYTES, s, acc, info);
}

DUST_EXPORT enum dust_drop
dust_quic_intro_accept_sized(struct dust_server *srv, struct dust_rng *rng, const uint8_t *dg,
                             size_t len, uint64_t now_ms, const struct dust_endpoint *from,
                             const struct dust_eph *eph, size_t answer_len, struct dust_session *s,
                             struct dust_quic_accept *acc, struct dust_intro_info *info)
{
	/* on the stack (5 KiB): an allocation per Initial would cost a flood more than it */
	struct accept_tmp tmp, *t = &tmp;
	struct dust_store_entry *e = NULL;
	struct quic_long qh;
	uint64_t pn = 0, pn_lo = 0;
	size_t ch_len;
	bool first_use = false, held = false;
	enum dust_drop d;

	/* each client Initial fills 1200 bytes (RFC 9000 §14.1): shorter is no intro, and
	 * costs nothing */
	if (len < DUST_QUIC_INITIAL_MIN)
		return DUST_DROP_TRUNCATED;
	if (len < DUST_QUIC_HELLO_DGRAMS * DUST_QUIC_INITIAL_MIN)
		return lone_initial(srv, dg, len);
	ch_len = read_client_hello(dg, len, &qh, &pn, &pn_lo, &t->cb);
	if (!ch_len || !tls_client_hello_parse(t->cb.b, ch_len, &t->h)) {
		d = DUST_DROP_MALFORMED;
		goto out_wipe;
	}
	d = open_fields(srv, &qh, t, &e);
	if (d == DUST_OK)
		d = check_intro(srv, &qh, t, e, ch_len, now_ms);
	if (d == DUST_OK && !dust_share_dh(&eph, &t->eph, t->h.x25519, t->ee))
		d = DUST_DROP_INTRO_AUTH;
	/*
	 * authenticated (the confirmation covers the ek): encapsulate to it, before
	 * the store changes; an ek with a coefficient >= q fails FIPS 203's check
	 */
	if (d == DUST_OK && dust_mlkem768_enc(acc->flight, t->pq_ss, t->h.hybrid, rng) != 0)
		d = DUST_DROP_MALFORMED;
	if (d == DUST_OK)
		d = dust_store_commit(srv->store, e, t->pt, t->cs, le64_get(t->pt + DUST_PK_BYTES),
		                      t->nonce, now_ms / 1000, &first_use, &held);
	if (d != DUST_OK)
		goto out_wipe;
	memcpy(acc->odcid, qh.dcid, qh.dcid_len);
	acc->odcid_len = qh.dcid_len;
	acc->client_pn = pn;
	acc->client_pn_lo = pn_lo;
	acc->server_pn = 0;
	memcpy(acc->server_pk, eph->pk, DUST_PK_BYTES);
	ct_mask(t->prk, acc->flight);
	flight_fill(rng, acc, answer_len);
	crypto_kdf_derive_from_key(acc->hs_key, sizeof(acc->hs_key), DUST_KDF_HS_RESEND,
	                           DUST_KDF_CTX_SESSION, t->prk);
	acc->hs_sent = 0;
	session_keys(&t->k, t->prk, t->ee, eph->pk, t->pq_ss, acc->flight, acc->flight_len);
	server_session(s, rng, &t->k, e);
	s->peer = *from;
	s->last_rx_s = (uint32_t)(now_ms / 1000);
	dust_intro_bind(s, srv, e, info, first_use, held);
out_wipe:
	if (d != DUST_OK)
		sodium_memzero(acc, sizeof(*acc));
	sodium_memzero(t, sizeof(*t));
	return d;
}

DUST_EXPORT int64_t dust_quic_intro_peek(struct dust_server *srv, const uint8_t *dg, size_t len)
{
	struct accept_tmp tmp, *t = &tmp;
	struct dust_store_entry *e = NULL;
	struct quic_long qh;

	if (read_hello_random(dg, len, &qh, &t->cb, t->h.random))
		e = hello_invitation(srv, &qh, t);
	sodium_memzero(t, sizeof(*t));
	return e ? (int64_t)dust_store_index(srv->store, e) : -1;
}

DUST_EXPORT enum dust_quic_first dust_quic_hello_first(struct dust_server *srv,
                                                       struct dust_seen *seen, const uint8_t *dg,
                                                       size_t len)
{
	struct accept_tmp tmp, *t = &tmp;
	struct dust_store_entry *e = NULL;
	struct quic_long qh;
	enum dust_quic_first r = DUST_QUIC_FIRST_NONE;

	if (read_hello_random(dg, len, &qh, &t->cb, t->h.random))
		e = hello_invitation(srv, &qh, t);
	if (e) {
		/* both, always: the set learns this hello even when the store knew it */
		bool in_set = seen && dust_seen_add(seen, t->nonce, sizeof(t->nonce));
		bool newest;

		dust_store_view_get(srv->store, e, &t->v);
		newest = sodium_memcmp(t->nonce, t->v.last_nonce, sizeof(t->nonce)) == 0;
		r = in_set || newest ? DUST_QUIC_FIRST_AGAIN : DUST_QUIC_FIRST_NEW;
	}
	sodium_memzero(t, sizeof(*t));
	return r;
}

/* ---- server answer ----------------------------------------------------------- */

/* Long header without token handling for the server: returns where the PN goes. */
static size_t long_header(uint8_t *out, uint8_t first, const struct dust_session *s, bool token,
                          size_t length)
{
	size_t pos = 0;

	out[pos++] = first;
	memcpy(out + pos, "\x00\x00\x00\x01", 4);
	pos += 4;
	out[pos++] = 0; /* DCID: the client's SCID, empty (Chromium) */
	out[pos++] = s->cid_len;
	memcpy(out + pos, s->cid, s->cid_len);
	pos += s->cid_len;
	if (token)
		out[pos++] = 0;
	pos += quic_varint_put(out + pos, length, 2);
	return pos;
}

/* An ACK frame of the client's Initial at f; its length. */
static size_t ack_frame(uint8_t *f, const struct dust_quic_accept *acc, struct dust_rng *rng)
{
	size_t n = 0;

	f[n++] = DUST_QUIC_FRAME_ACK;
	n += quic_varint_put(f + n, acc->client_pn, quic_varint_len(acc->client_pn));
	n += quic_varint_put(f + n, dust_rng_uniform(rng, 64), 1); /* ack delay */
	if (acc->client_pn - acc->client_pn_lo == 1) {             /* both Initials of the hello */
		f[n++] = 0;                                        /* range count */
		f[n++] = 1;                                        /* first range */
	} else {
		uint64_t gap = acc->client_pn - acc->client_pn_lo - 2;

		f[n++] = 1; /* range count */
		f[n++] = 0; /* first range */
		n += quic_varint_put(f + n, gap, quic_varint_len(gap));
		f[n++] = 0; /* the range of the other */
	}
	return n;
}

/* A server Initial of packet number pn holding the n bytes of frames at f. */
static int initial_packet(const struct dust_session *s, const struct dust_quic_accept *acc,
                          uint64_t pn, const uint8_t *f, size_t n, uint8_t *out, size_t cap)
{
	struct dust_quic_keys k;
	size_t pn_off;
	bool ok;

	if (cap < 32 + s->cid_len + n + DUST_QUIC_AEAD_TAG)
		return -EMSGSIZE;
	pn_off = long_header(out, 0xc0 | (SERVER_PN_LEN - 1), s, true,
	                     SERVER_PN_LEN + n + DUST_QUIC_AEAD_TAG);
	memcpy(out + pn_off + SERVER_PN_LEN, f, n);
	dust_quic_initial_keys(acc->odcid, acc->odcid_len, true, &k);
	ok = quic_protect(&k, out, pn_off, SERVER_PN_LEN, pn, n);
	sodium_memzero(&k, sizeof(k));
	return ok ? (int)(pn_off + SERVER_PN_LEN + n + DUST_QUIC_AEAD_TAG) : -EIO;
}

DUST_EXPORT int dust_quic_answer_ack_build(const struct dust_session *s,
                                           const struct dust_quic_accept *acc, struct dust_rng *rng,
                                           uint8_t *out, size_t cap)
{
	uint8_t f[32];
	size_t n = 0;

	/*
	 * quic-go acknowledges the hello's first Initial as it arrives, alone:
	 * ACK of the smaller packet number, no delay, no other range (caddy's
	 * in 20 of 20 loads of the capture). The answer's ACK takes both.
	 */
	f[n++] = DUST_QUIC_FRAME_ACK;
	n += quic_varint_put(f + n, acc->client_pn_lo, quic_varint_len(acc->client_pn_lo));
	f[n++] = 0; /* ack delay */
	f[n++] = 0; /* range count */
	f[n++] = 0; /* first range */
	(void)rng;
	return initial_packet(s, acc, acc->server_pn, f, n, out, cap);
}

DUST_EXPORT bool dust_quic_is_flight_ack(const uint8_t *dg, size_t len)
{
	struct quic_long h;

	return len < ANSWER_MIN && quic_long_parse(dg, len, &h) &&
	       h.type == DUST_QUIC_TYPE_INITIAL && h.version == DUST_QUIC_VERSION &&
	       h.dcid_len == 0 && h.token_len == 0 && h.length == len - h.pn_off;
}

/* The answer Initial's frames at f: ACK, CRYPTO with the ServerHello; their length or 0. */
static size_t server_initial_frames(const struct dust_quic_accept *acc, struct dust_rng *rng,
                                    uint8_t *f, size_t cap)
{
	size_t n = ack_frame(f, acc, rng), sh_len;

	f[n++] = DUST_QUIC_FRAME_CRYPTO;
	f[n++] = 0; /* offset */
	sh_len = tls_server_hello_build(rng, acc->server_pk, f + n + 2, cap - n - 2);
	if (sh_len != SERVER_HELLO_LEN)
		return 0;
	n += quic_varint_put(f + n, sh_len, 2);
	return n + sh_len;
}

static int server_initial(const struct dust_session *s, const struct dust_quic_accept *acc,
                          struct dust_rng *rng, uint8_t *out, size_t cap)
{
	uint8_t f[160];
	size_t n = server_initial_frames(acc, rng, f, sizeof(f));

	if (!n)
		return -EMSGSIZE;
	/* the ACK-only Initial before it took server_pn, as the cover server's */
	return initial_packet(s, acc, acc->server_pn + 1, f, n, out, cap);
}

/*
 * The Handshake packet of the answer, sent again (SPEC 12.3): a real
 * server's resend is a new packet, so no two sends carry the same bytes.
 * The j-th send (j = acc->hs_sent, from 0) carries the flight XOR R_j (R_0
 * = 0), and its first byte's four low bits, header-protected on a real
 * server and so random to an observer, are j XOR a mask of the payload's
 * first 16 bytes, as QUIC's header protection samples its ciphertext:
 * K_rs = KDF(prk, 10); R_j[64i..64i+64) = BLAKE2b-512(key = K_rs, "R" |
 * le32(j) | le32(i)); mask = BLAKE2b-128(key = K_rs, "M" | payload[0..16))
 * [0] & 15. The client reads j, removes R_j, and has the flight the keys
 * were derived from.
 */
static void hs_stream(const uint8_t krs[DUST_KEY_BYTES], unsigned j, uint8_t *p, size_t n)
{
	uint8_t blk[64], in[9] = {'R'};

	for (size_t at = 0; at < n; at += sizeof(blk)) {
		size_t m = n - at < sizeof(blk) ? n - at : sizeof(blk);

		le32_put(in + 1, j);
		le32_put(in + 5, (uint32_t)(at / sizeof(blk)));
		crypto_generichash(blk, sizeof(blk), in, sizeof(in), krs, DUST_KEY_BYTES);
		for (size_t i = 0; i < m; i++)
			p[at + i] ^= blk[i];
	}
	sodium_memzero(blk, sizeof(blk));
}

static unsigned hs_mask(const uint8_t krs[DUST_KEY_BYTES], const uint8_t *payload)
{
	uint8_t out[16], in[1 + 16] = {'M'};

	memcpy(in + 1, payload, 16);
	crypto_generichash(out, sizeof(out), in, sizeof(in), krs, DUST_KEY_BYTES);
	return out[0] & HS_SEND_MASK;
}

/* The Handshake packet holding acc's flight for its next send at out; its length. */
static size_t hs_packet(const struct dust_session *s, struct dust_quic_accept *acc, uint8_t *out)
{
	unsigned j = acc->hs_sent++ & HS_SEND_MASK;
	size_t hdr = long_header(out, 0xe0, s, false, acc->flight_len);

	memcpy(out + hdr, acc->flight, acc->flight_len);
	if (j)
		hs_stream(acc->hs_key, j, out + hdr, acc->flight_len);
	out[0] = (uint8_t)(0xe0 | (j ^ hs_mask(acc->hs_key, out + hdr)));
	return hdr + acc->flight_len;
}

/* The answer's size for acc: its Initial, then the Handshake packet. */
static size_t answer_len_of(const struct dust_session *s, const struct dust_quic_accept *acc)
{
	return answer_initial_len(acc, s->cid_len) + HS_HDR_FIXED + s->cid_len + acc->flight_len;
}

DUST_EXPORT int dust_quic_answer_build(struct dust_session *s, struct dust_quic_accept *acc,
                                       struct dust_rng *rng, uint32_t now_s, uint8_t *out,
                                       size_t cap)
{
	/* the payload's size was fixed at accept (it is in the keys), and with it the total */
	size_t total = answer_len_of(s, acc);
	uint8_t first;
	int ni;

	(void)now_s;
	if (cap < total)
		return -EMSGSIZE;
	if (total > DUST_QUIC_ANSWER_MAX)
		return -EIO;
	ni = server_initial(s, acc, rng, out, cap);
	if (ni < 0)
		return ni;
	if ((size_t)ni != answer_initial_len(acc, s->cid_len))
		return -EIO;
	/*
	 * Handshake packet: where the cover server's certificate chain is, the
	 * masked ML-KEM ciphertext and filler (one draw kept: the answer's
	 * other bytes stay those of earlier releases for the same rng)
	 */
	dust_rng_bytes(rng, &first, 1);
	(void)hs_packet(s, acc, out + ni);
	return (int)total;
}

DUST_EXPORT int dust_quic_answer_initial_build(const struct dust_session *s,
                                               const struct dust_quic_accept *acc,
                                               struct dust_rng *rng, uint8_t *out, size_t cap)
{
	size_t total = answer_len_of(s, acc);
	uint8_t f[DUST_QUIC_ANSWER_MAX], g[DUST_QUIC_ANSWER_MAX];
	size_t n, a = ack_frame_len(acc), room;
	int r;

	if (total > DUST_QUIC_ANSWER_MAX || cap < total)
		return -EMSGSIZE;
	/* the answer's frames, drawn as for it: the same ServerHello from the same seed */
	n = server_initial_frames(acc, rng, f, sizeof(f));
	/* behind the long header (a token length, a 2-byte Length) the frames fill the rest */
	room = total - (HS_HDR_FIXED + 1 + s->cid_len) - SERVER_PN_LEN - DUST_QUIC_AEAD_TAG;
	if (!n || n <= a || room < n - a)
		return -EMSGSIZE;
	/*
	 * quic-go's probe: PADDING, then the CRYPTO frame with the ServerHello,
	 * no ACK (caddy 2.6.2's, decrypted: bench/cover/caddy-resends.sh)
	 */
	memset(g, DUST_QUIC_FRAME_PADDING, room - (n - a));
	memcpy(g + room - (n - a), f + a, n - a);
	r = initial_packet(s, acc, acc->server_pn, g, room, out, cap);
	sodium_memzero(f, sizeof(f));
	sodium_memzero(g, sizeof(g));
	return r;
}

DUST_EXPORT int dust_quic_answer_hs_build(const struct dust_session *s,
                                          struct dust_quic_accept *acc, uint8_t *out, size_t cap)
{
	if (cap < (size_t)HS_HDR_FIXED + s->cid_len + acc->flight_len)
		return -EMSGSIZE;
	return (int)hs_packet(s, acc, out);
}

DUST_EXPORT int dust_quic_answer_acks_build(const struct dust_session *s,
                                            const struct dust_quic_accept *acc, uint64_t seen,
                                            uint8_t *out, size_t cap)
{
	uint8_t f[1 + 8 + 1 + 8 + 8 + 64 * 2];
	size_t n = 0, nr = 0, at_count;
	int top, i;

	if (!seen)
		return -EINVAL;
	top = 63 - __builtin_clzll(seen);
	f[n++] = DUST_QUIC_FRAME_ACK;
	n += quic_varint_put(f + n, (uint64_t)top, quic_varint_len((uint64_t)top));
	f[n++] = 0;     /* ack delay, as the flight's ACK-only Initial */
	at_count = n++; /* range count: below */
	/* ranges from the top down (RFC 9000 §19.3.1): lengths less one, gaps less one */
	for (i = top; i >= 0 && (seen >> i & 1); i--)
		;
	f[n++] = (uint8_t)(top - i - 1); /* first range, under 64 */
	while (i >= 0) {
		int gap_top = i, run_top;

		for (; i >= 0 && !(seen >> i & 1); i--)
			;
		if (i < 0)
			break;
		f[n++] = (uint8_t)(gap_top - i - 1); /* gap */
		run_top = i;
		for (; i >= 0 && (seen >> i & 1); i--)
			;
		f[n++] = (uint8_t)(run_top - i - 1); /* range */
		nr++;
	}
	f[at_count] = (uint8_t)nr;
	return initial_packet(s, acc, acc->server_pn, f, n, out, cap);
}

/* ---- client: reading the answer ---------------------------------------------- */

/*
 * The answer's shapes (12.3), checked before any key is derived: an Initial
 * (DCID empty, no token, the server's CID) in a datagram of 1200..1252
 * bytes, alone (a PTO resend) or with the Handshake packet after it that
 * fills the rest; a Handshake packet holding a flight (the masked
 * ciphertext and filler) after it or alone in its datagram. A datagram that
 * fails costs these comparisons, not an Initial decryption, an allocation
 * or an X25519.
 */
static bool init_shape(const uint8_t *dg, size_t len, struct quic_long *h)
{
	return len >= ANSWER_MIN && len < ANSWER_MIN + ANSWER_SPREAD &&
	       quic_long_parse(dg, len, h) && h->type == DUST_QUIC_TYPE_INITIAL &&
	       h->version == DUST_QUIC_VERSION && h->dcid_len == 0 &&
	       h->scid_len >= DUST_QUIC_SERVER_CID_MIN && h->token_len == 0 &&
	       h->length <= len - h->pn_off;
}

static bool flight_shape(const uint8_t *p, size_t n, struct quic_long *hs)
{
	return quic_long_parse(p, n, hs) && hs->type == DUST_QUIC_TYPE_HANDSHAKE &&
	       hs->version == DUST_QUIC_VERSION && hs->dcid_len == 0 &&
	       hs->scid_len >= DUST_QUIC_SERVER_CID_MIN && hs->length == n - hs->pn_off &&
	       hs->length >= DUST_MLKEM768_CTBYTES && hs->length <= DUST_QUIC_FLIGHT_MAX;
}

/* Where dg's flight packet begins (*at): behind an answer's Initial, or at 0 alone. */
static bool flight_in(const uint8_t *dg, size_t len, size_t *at, struct quic_long *hs)
{
	struct quic_long h;

	*at = 0;
	if (init_shape(dg, len, &h)) {
		*at = h.pn_off + h.length;
		if (*at == len)
			return false;
	}
	return flight_shape(dg + *at, len - *at, hs);
}

DUST_EXPORT enum dust_quic_part dust_quic_answer_part(const uint8_t *dg, size_t len)
{
	struct quic_long h, hs;
	size_t at;

	if (init_shape(dg, len, &h) && h.pn_off + h.length == len)
		return DUST_QUIC_PART_INITIAL;
	if (!flight_in(dg, len, &at, &hs))
		return DUST_QUIC_PART_OTHER;
	return at ? DUST_QUIC_PART_ANSWER : DUST_QUIC_PART_HANDSHAKE;
}

/* The server ephemeral from the Initial's ServerHello, once the Initial opens. */
static bool answer_server_hello(struct dust_quic_client *qc, const uint8_t *dg,
                                const struct quic_long *h, uint8_t server_pk[DUST_PK_BYTES])
{
	struct dust_quic_keys k;
	struct quic_crypto_buf *cb;
	uint8_t frames[1500];
	uint64_t pn;
	size_t plen = 0, sh_len;
	bool ok;

	if (h->length > sizeof(frames))
		return false;
	dust_quic_initial_keys(qc->dcid, qc->dcid_len, true, &k);
	ok = quic_unprotect(&k, dg, h->pn_off, h->length, &pn, frames, &plen);
	sodium_memzero(&k, sizeof(k));
	/* the Initial's AEAD needs the client's DCID: an off-path sender stops here */
	if (!ok)
		return false;
	cb = sodium_malloc(sizeof(*cb));
	if (!cb)
		return false;
	quic_crypto_reset(cb);
	sh_len = initial_walk(frames, plen, cb, NULL)
	             ? quic_crypto_message(cb, DUST_TLS_SERVER_HELLO)
	             : 0;
	ok = sh_len && tls_server_hello_parse(cb->b, sh_len, server_pk);
	sodium_free(cb);
	return ok;
}

/*
 * The flight's tail: a Handshake packet from the answer's SCID, filling
 * tail[0..len), or followed by one small 1-RTT packet (a short header, as
 * quic-go coalesces its first 1-RTT behind the tail in about a third of its
 * flights: SPEC §12.3), which carries nothing for us.
 */
static bool tail_shape(const uint8_t *tail, size_t len, const struct quic_long *h,
                       struct quic_long *tl)
{
	size_t rest;

	if (!quic_long_parse(tail, len, tl) || tl->type != DUST_QUIC_TYPE_HANDSHAKE ||
	    tl->version != DUST_QUIC_VERSION || tl->dcid_len != 0 || tl->scid_len != h->scid_len ||
	    memcmp(tl->scid, h->scid, h->scid_len) != 0 || tl->length < DUST_DATA_MIN_BYTES ||
	    tl->length > len - tl->pn_off)
		return false;
	rest = len - tl->pn_off - tl->length;
	return rest == 0 ||
	       (rest >= DUST_QUIC_TAIL_SHORT_LEAST && rest <= DUST_QUIC_TAIL_SHORT_MOST &&
	        (tail[len - rest] & 0xc0) == 0x40);
}

/*
 * Which send j of the flight the Handshake packet at p is (hs_packet): its
 * first byte's low bits under the payload's mask. The caller removes R_j
 * and tries j, then 0 (a gateway of an earlier release: random bits there,
 * the flight unmasked).
 */
static unsigned flight_send(const uint8_t krs[DUST_KEY_BYTES], const uint8_t *p,
                            const struct quic_long *hs)
{
	return ((unsigned)p[0] ^ hs_mask(krs, p + hs->pn_off)) & HS_SEND_MASK;
}

/* Session keys from the flight and the ServerHello's key; the tail's keepalive must open. */
static enum dust_drop flight_open(struct dust_quic_client *qc, const struct dust_limits *lim,
                                  uint32_t now_s, const struct quic_long *h,
                                  const uint8_t server_pk[DUST_PK_BYTES],
                                  const uint8_t ee[DUST_KEY_BYTES], const uint8_t *flight,
                                  size_t flight_len, uint8_t *tail, const struct quic_long *tl,
                                  struct dust_session *t)
{
	struct dust_session_keys k;
	struct dust_seg seg;
	uint8_t ss[DUST_MLKEM768_SSBYTES], ct[DUST_MLKEM768_CTBYTES];
	size_t consumed = 0;
	enum dust_drop d = DUST_DROP_AUTH;

	memcpy(ct, flight, sizeof(ct));
	ct_mask(qc->prk, ct);
	memset(t, 0, sizeof(*t));
	/* implicit rejection: an altered ciphertext decapsulates to a secret of its own */
	if (dust_mlkem768_dec(ss, ct, qc->dk) == 0) {
		session_keys(&k, qc->prk, ee, server_pk, ss, flight, flight_len);
		dust_session_keys_install(t, &k, DUST_ROLE_CLIENT, qc->suite);
		t->profile = DUST_PROFILE_QUIC;
		t->cid_len = h->scid_len;
		memcpy(t->cid, h->scid, h->scid_len);
		d = dust_data_open(t, lim, now_s, tail + tl->pn_off, tl->length, &seg, &consumed);
		if (d == DUST_OK && (seg.len != 0 || consumed != tl->length))
			d = DUST_DROP_MALFORMED;
		else if (d !=
		         DUST_OK) /* the keys (the flight, its ciphertext) were not the server's */
			d = DUST_DROP_AUTH;
	}
	sodium_memzero(&k, sizeof(k));
	sodium_memzero(ss, sizeof(ss));
	sodium_memzero(ct, sizeof(ct));
	return d;
}

/*
 * Cheapest first: the shapes, then the Initial (public keys of our DCID),
 * and only then the X25519 and the ML-KEM decapsulation that the session
 * keys need; the tail's keepalive, under those keys, authenticates it all.
 */
DUST_EXPORT enum dust_drop dust_quic_answer_open_parts(struct dust_quic_client *qc,
                                                       const struct dust_limits *lim,
                                                       uint32_t now_s, const uint8_t *init,
                                                       size_t init_len, const uint8_t *hsdg,
                                                       size_t hs_len, uint8_t *tail,
                                                       size_t tail_len, struct dust_session *s)
{
	struct dust_session t;
	struct quic_long h, hs, tl;
	uint8_t server_pk[DUST_PK_BYTES], ee[DUST_KEY_BYTES], krs[DUST_KEY_BYTES];
	uint8_t flight[DUST_QUIC_FLIGHT_MAX];
	const uint8_t *p;
	size_t at;
	unsigned j;
	enum dust_drop d;

	if (!qc->pending)
		return DUST_DROP_AUTH;
	if (!init_shape(init, init_len, &h) || !flight_in(hsdg, hs_len, &at, &hs) ||
	    hs.scid_len != h.scid_len || memcmp(hs.scid, h.scid, h.scid_len) != 0 ||
	    !tail_shape(tail, tail_len, &h, &tl))
		return DUST_DROP_MALFORMED;
	if (!answer_server_hello(qc, init, &h, server_pk))
		return DUST_DROP_AUTH;
	if (crypto_scalarmult(ee, qc->esk, server_pk) != 0)
		return DUST_DROP_AUTH;
	p = hsdg + at;
	crypto_kdf_derive_from_key(krs, sizeof(krs), DUST_KDF_HS_RESEND, DUST_KDF_CTX_SESSION,
	                           qc->prk);
	j = flight_send(krs, p, &hs);
	memcpy(flight, p + hs.pn_off, hs.length);
	if (j)
		hs_stream(krs, j, flight, hs.length);
	d = flight_open(qc, lim, now_s, &h, server_pk, ee, flight, hs.length, tail, &tl, &t);
	if (d == DUST_DROP_AUTH && j) {
		memcpy(flight, p + hs.pn_off, hs.length);
		d = flight_open(qc, lim, now_s, &h, server_pk, ee, flight, hs.length, tail, &tl,
		                &t);
	}
	if (d == DUST_OK) {
		uint8_t spin;

		randombytes_buf(&spin, 1);
		t.spin = spin & DUST_QUIC_SPIN;
		t.tunnel = qc->tunnel;
		t.peer = qc->server;
		t.last_rx_s = now_s;
		t.state = DUST_SESSION_LIVE;
		*s = t;
		dust_quic_client_wipe(qc);
	}
	sodium_memzero(&t, sizeof(t));
	sodium_memzero(ee, sizeof(ee));
	sodium_memzero(krs, sizeof(krs));
	sodium_memzero(flight, sizeof(flight));
	return d;
}

DUST_EXPORT enum dust_drop dust_quic_answer_open(struct dust_quic_client *qc,
                                                 const struct dust_limits *lim, uint32_t now_s,
                                                 uint8_t *dg, size_t len, uint8_t *tail,
                                                 size_t tail_len, struct dust_session *s)
{
	struct quic_long h;

	/* one datagram: the answer itself, an Initial and the flight behind it */
	if (!init_shape(dg, len, &h) || h.pn_off + h.length == len)
		return DUST_DROP_MALFORMED;
	return dust_quic_answer_open_parts(qc, lim, now_s, dg, len, dg, len, tail, tail_len, s);
}

/* ---- 1-RTT short header ------------------------------------------------------ */

/*
 * Copy a server CID (4..20 bytes) with fixed-size moves: a memcpy of a
 * run-time length is a library call that cost 8% of a 64-byte packet's seal
 * in bench/dust_bench (quic_paired_seal), these cost nothing. dustgw's are
 * 4 bytes; 8..20, overlapping 8-byte moves.
 */
static inline void cid_copy(uint8_t *dst, const uint8_t *src, size_t len)
{
	static_assert(DUST_QUIC_SERVER_CID_MIN >= 4 && DUST_QUIC_CID_MAX <= 24, "4..24 bytes");
	if (len == 4) {
		memcpy(dst, src, 4);
		return;
	}
	if (len < 8) { /* never read before src */
		memcpy(dst, src, len);
		return;
	}
	memcpy(dst, src, 8);
	if (len > 16)
		memcpy(dst + 8, src + 8, 8);
	memcpy(dst + len - 8, src + len - 8, 8);
}

/*
 * Compare a CID the same way (public bytes: no constant time needed). The
 * memcmp call cost ~20 ns a packet, 3% of a 1400-byte open on the AES-GCM
 * backend; these loads cost ~2 ns.
 */
static inline bool cid_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
	uint64_t x[3], y[3];
	uint32_t p, q;

	if (len == 4) {
		memcpy(&p, a, 4);
		memcpy(&q, b, 4);
		return p == q;
	}
	if (len < 8)
		return memcmp(a, b, len) == 0;
	memcpy(&x[0], a, 8);
	memcpy(&y[0], b, 8);
	memcpy(&x[1], a + (len > 16 ? 8 : len - 8), 8);
	memcpy(&y[1], b + (len > 16 ? 8 : len - 8), 8);
	memcpy(&x[2], a + len - 8, 8);
	memcpy(&y[2], b + len - 8, 8);
	return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2])) == 0;
}

DUST_EXPORT void dust_quic_short_put(const struct dust_session *s, struct dust_rng *rng,
                                     uint8_t *pkt)
{
	uint8_t r;

	dust_rng_bytes(rng, &r, 1);
	pkt[0] = (uint8_t)(DUST_QUIC_FIXED | s->spin | (r & 0x1f));
	if (s->role == DUST_ROLE_CLIENT)
		cid_copy(pkt + 1, s->cid, s->cid_len);
}

/* dg (at least dust_quic_rx_prefix(s) bytes) starts with s's short header: form, fixed bit, DCID.
 */
static bool short_header_of(const struct dust_session *s, const uint8_t *dg)
{
	if ((dg[0] & (DUST_QUIC_LONG | DUST_QUIC_FIXED)) != DUST_QUIC_FIXED)
		return false;
	return s->role == DUST_ROLE_CLIENT || cid_equal(dg + 1, s->cid, s->cid_len);
}

DUST_EXPORT bool dust_quic_short_match(const struct dust_session *s, const uint8_t *dg, size_t len)
{
	return len >= dust_quic_rx_prefix(s) + DUST_DATA_MIN_BYTES && short_header_of(s, dg);
}

DUST_EXPORT size_t dust_quic_ack_put(const struct dust_session *s, struct dust_rng *rng,
                                     uint8_t *dg, size_t cap)
{
	size_t pre = dust_quic_tx_prefix(s), len;

	if (s->profile != DUST_PROFILE_QUIC)
		return 0;
	len = dust_size_model_ack(s, rng);
	if (len > cap || len <= pre)
		return 0;
	dust_quic_short_put(s, rng, dg);
	dust_rng_bytes(rng, dg + pre, len - pre);
	return len;
}

DUST_EXPORT int dust_quic_compact_put(struct dust_session *s, struct dust_rng *rng,
                                      const uint8_t *pt, size_t ptlen, uint8_t *dg, size_t cap)
{
	size_t pre = dust_quic_tx_prefix(s), total;
	int r;

	if (s->profile != DUST_PROFILE_QUIC || ptlen > DUST_COMPACT_PT_MAX)
		return -EINVAL;
	total = dust_size_model_compact(s, rng, DUST_COMPACT_OVERHEAD + ptlen);
	if (pre + total > cap)
		return -EMSGSIZE;
	r = dust_compact_seal(s, pt, ptlen, total, dg + pre);
	if (r < 0)
		return r;
	dust_quic_short_put(s, rng, dg);
	return (int)(pre + total);
}

DUST_EXPORT bool dust_quic_ack_match(const struct dust_session *s, const uint8_t *dg, size_t len)
{
	size_t pre = dust_quic_rx_prefix(s);

	return len > pre && len < pre + DUST_DATA_MIN_BYTES && short_header_of(s, dg);
}

/* ---- the client's Handshake packet ------------------------------------------- */

DUST_EXPORT size_t dust_quic_hs_prefix(const struct dust_session *s)
{
	return 1 + 4 + 1 + (size_t)s->cid_len + 1 + 2;
}

/*
 * Client to server: DCID the server's CID, SCID empty. Server to client (the
 * first flight's tail): DCID empty (the client's SCID), SCID the server's CID.
 */
DUST_EXPORT void dust_quic_hs_put(const struct dust_session *s, struct dust_rng *rng, uint8_t *pkt,
                                  size_t dust_len)
{
	uint8_t r;
	size_t pos = 0;

	dust_rng_bytes(rng, &r, 1);
	pkt[pos++] = (uint8_t)(0xe0 | (r & 0x0f)); /* Handshake; protected bits look random */
	memcpy(pkt + pos, "\x00\x00\x00\x01", 4);
	pos += 4;
	if (s->role == DUST_ROLE_SERVER)
		pkt[pos++] = 0; /* DCID: the client's SCID, empty */
	pkt[pos++] = s->cid_len;
	memcpy(pkt + pos, s->cid, s->cid_len);
	pos += s->cid_len;
	if (s->role != DUST_ROLE_SERVER)
		pkt[pos++] = 0; /* SCID: empty */
	quic_varint_put(pkt + pos, dust_len, 2);
}

DUST_EXPORT size_t dust_quic_hs_match(const struct dust_session *s, const uint8_t *dg, size_t len)
{
	struct quic_long h;
	bool srv = s->role == DUST_ROLE_SERVER;
	const uint8_t *cid;

	if (s->profile != DUST_PROFILE_QUIC || !quic_long_parse(dg, len, &h) ||
	    h.type != DUST_QUIC_TYPE_HANDSHAKE || h.version != DUST_QUIC_VERSION ||
	    (srv ? h.dcid_len : h.scid_len) != s->cid_len || (srv ? h.scid_len : h.dcid_len) != 0 ||
	    h.length != len - h.pn_off || h.length < DUST_DATA_MIN_BYTES)
		return 0;
	cid = srv ? h.dcid : h.scid;
	return memcmp(cid, s->cid, s->cid_len) == 0 ? h.pn_off : 0;
}

enum { HS_ACK_PAYLOAD = 2 + 5 + DUST_QUIC_AEAD_TAG }; /* packet number, ACK frame, tag */

DUST_EXPORT int dust_quic_hs_ack_build(const struct dust_session *s, struct dust_rng *rng,
                                       uint8_t *out, size_t cap)
{
	size_t pre = dust_quic_hs_prefix(s);

	if (s->role != DUST_ROLE_SERVER || cap < pre + HS_ACK_PAYLOAD)
		return -EMSGSIZE;
	dust_quic_hs_put(s, rng, out, HS_ACK_PAYLOAD);
	dust_rng_bytes(rng, out + pre, HS_ACK_PAYLOAD);
	return (int)(pre + HS_ACK_PAYLOAD);
}

DUST_EXPORT size_t dust_quic_done_put(const struct dust_session *s, struct dust_rng *rng,
                                      uint8_t *dg, size_t cap)
{
	size_t pre = dust_quic_tx_prefix(s), len = DUST_QUIC_DONE_BYTES;

	static_assert(DUST_QUIC_DONE_BYTES + 1 < 1 + DUST_DATA_MIN_BYTES,
	              "under a Dust packet: clients pass it by");
	if (s->profile != DUST_PROFILE_QUIC || s->role != DUST_ROLE_SERVER)
		return 0;
	if (dust_rng_uniform(rng, 18) < DUST_QUIC_DONE_LONG_IN_18)
		len++;
	if (cap < len || len <= pre)
		return 0;
	dust_quic_short_put(s, rng, dg);
	dust_rng_bytes(rng, dg + pre, len - pre);
	return len;
}

DUST_EXPORT bool dust_quic_pad_exact(struct dust_pad *pad, const struct dust_session *s,
                                     size_t dgram, size_t data_len)
{
	size_t least = dust_quic_tx_prefix(s) + DUST_DATA_OVERHEAD + data_len;

	if (s->profile != DUST_PROFILE_QUIC || dgram < least || dgram - least > UINT16_MAX)
		return false;
	*pad = (struct dust_pad){.kind = DUST_PAD_UNIFORM};
	pad->min = pad->max = (uint16_t)(dgram - least);
	return true;
}

DUST_EXPORT bool dust_quic_is_hs_ack(const struct dust_session *s, const uint8_t *dg, size_t len)
{
	struct quic_long h;

	return s->profile == DUST_PROFILE_QUIC && s->role == DUST_ROLE_CLIENT &&
	       quic_long_parse(dg, len, &h) && h.type == DUST_QUIC_TYPE_HANDSHAKE &&
	       h.version == DUST_QUIC_VERSION && h.dcid_len == 0 && h.scid_len == s->cid_len &&
	       memcmp(h.scid, s->cid, s->cid_len) == 0 && h.length == len - h.pn_off &&
	       h.length < DUST_DATA_MIN_BYTES;
}

DUST_EXPORT int dust_quic_answer_tail_build(struct dust_session *s, struct dust_rng *rng,
                                            uint32_t now_s, uint8_t *out, size_t cap)
{
	return dust_quic_answer_tail_build_sized(s, rng, now_s, DUST_QUIC_TAIL_DEFAULT_MIN,
	                                         DUST_QUIC_TAIL_DEFAULT_MAX, out, cap);
}

DUST_EXPORT int dust_quic_answer_tail_build_sized(struct dust_session *s, struct dust_rng *rng,
                                                  uint32_t now_s, size_t lo, size_t hi,
                                                  uint8_t *out, size_t cap)
{
	size_t pre = dust_quic_hs_prefix(s), total;
	struct dust_pad pad = {.kind = DUST_PAD_UNIFORM};
	int r;

	if (s->profile != DUST_PROFILE_QUIC || s->role != DUST_ROLE_SERVER || lo > hi ||
	    lo < DUST_QUIC_TAIL_LEAST || hi > DUST_QUIC_TAIL_MOST)
		return -EINVAL;
	total = lo + dust_rng_uniform(rng, (uint32_t)(hi - lo + 1));
	if (total < pre + DUST_DATA_OVERHEAD) /* a 20-byte CID and a tail under 61 bytes */
		total = pre + DUST_DATA_OVERHEAD;
	if (cap < total)
		return -EMSGSIZE;
	pad.min = pad.max = (uint16_t)(total - pre - DUST_DATA_OVERHEAD);
	dust_quic_hs_put(s, rng, out, total - pre);
	r = dust_data_seal(s, rng, &pad, now_s, out + pre, 0, total - pre);
	return r < 0 ? r : (int)total;
}
