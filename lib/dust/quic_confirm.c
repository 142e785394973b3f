/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic client's second flight (SPEC.md §12.3), as Chromium 156 answers
 * the cover server's first flight (test/data/chromium156-caddy-loads.pcap,
 * 18 of 20 loads): a 1250-byte datagram, an Initial acknowledging the
 * server's Initials (ACK, PADDING) coalesced with a Handshake packet (its
 * ACK), then a 133..148-byte datagram, a Handshake packet (the Finished)
 * coalesced with a 1-RTT packet. Dust's first packet rides in the 1-RTT
 * packet; the bytes no observer can read in the Handshake packets are
 * random, as every such byte of Dust's. The gateway side tells the new
 * form, the previous release's (one Handshake packet of Dust data) and a
 * malformed one apart on public bytes; only the Dust packet authenticates.
 */
#include <sodium.h>
#include <string.h>

#include "quic_pvt.h"

enum {
	/* the server's Initials when none was noted: the ACK-only one took 0, the flight's 1 */
	SERVER_INITIAL_LARGEST = 1,
	/* an ACK's packet numbers here are one-byte varints */
	SERVER_INITIAL_MOST = 63,
	/* Handshake Length fields as Chromium's: its ACK (36 B with a 4-byte CID)... */
	HS_ACK_LENGTH = 23,
	/* ...and its Finished (69 B) */
	HS_FINISHED_LENGTH = 56,
	/* Chromium's second datagram: 133..148 bytes */
	FINISHED_DGRAM_MIN = 133,
	FINISHED_DGRAM_SPREAD = 16,
	/* client long header before Length: first, version, DCID, SCID (empty) */
	HS_HDR_FIXED = 1 + 4 + 1 + 1 + 2,
};

DUST_EXPORT void dust_quic_confirm_init(const struct dust_quic_client *qc,
                                        struct dust_quic_confirm *cf)
{
	memset(cf, 0, sizeof(*cf));
	memcpy(cf->odcid, qc->dcid, qc->dcid_len);
	cf->odcid_len = qc->dcid_len;
	/* after the hello's Initials (1, 2), and after its retransmissions' (3, 4, ...) */
	cf->pn = qc->next_pn;
}

/*
 * The Initial's long header toward s's server (DCID its CID, SCID empty, as
 * Chromium's, no token), Length in 2 bytes; returns where PN goes.
 */
static size_t initial_header(uint8_t *out, const struct dust_session *s, size_t length)
{
	size_t pos = 0;

	out[pos++] = 0xc0;
	memcpy(out + pos, "\x00\x00\x00\x01", 4);
	pos += 4;
	out[pos++] = s->cid_len;
	memcpy(out + pos, s->cid, s->cid_len);
	pos += s->cid_len;
	out[pos++] = 0; /* SCID: empty */
	out[pos++] = 0; /* token: none */
	return pos + quic_varint_put(out + pos, length, 2);
}

/*
 * A Handshake packet of Length length whose protected bytes are random (the
 * client's Handshake header, dust_quic_hs_put); its size.
 */
static size_t hs_random(const struct dust_session *s, struct dust_rng *rng, uint8_t *out,
                        size_t length)
{
	size_t pre = dust_quic_hs_prefix(s);

	dust_quic_hs_put(s, rng, out, length);
	dust_rng_bytes(rng, out + pre, length);
	return pre + length;
}

DUST_EXPORT int dust_quic_confirm_saw(struct dust_quic_confirm *cf, const uint8_t *dg, size_t len)
{
	struct dust_quic_keys k;
	struct quic_long h;
	uint8_t frames[1500];
	uint64_t pn = 0;
	size_t plen = 0;
	bool ok;

	if (!cf->odcid_len || !quic_long_parse(dg, len, &h) || h.type != DUST_QUIC_TYPE_INITIAL ||
	    h.length > sizeof(frames))
		return -EINVAL;
	dust_quic_initial_keys(cf->odcid, cf->odcid_len, true, &k);
	ok = quic_unprotect(&k, dg, h.pn_off, h.length, &pn, frames, &plen);
	sodium_memzero(&k, sizeof(k));
	if (!ok || pn > SERVER_INITIAL_MOST)
		return -EINVAL;
	cf->srv_lo = cf->srv_saw && cf->srv_lo < pn ? cf->srv_lo : pn;
	cf->srv_hi = cf->srv_saw && cf->srv_hi > pn ? cf->srv_hi : pn;
	cf->srv_saw = true;
	return 0;
}

/* ACK of the server's Initials (cf's, or 0 and 1), then PADDING up to n bytes of frames. */
static void initial_frames(const struct dust_quic_confirm *cf, uint8_t *f, size_t n,
                           struct dust_rng *rng)
{
	uint64_t hi = cf->srv_saw ? cf->srv_hi : SERVER_INITIAL_LARGEST,
	         lo = cf->srv_saw ? cf->srv_lo : 0;

	memset(f, DUST_QUIC_FRAME_PADDING, n);
	f[0] = DUST_QUIC_FRAME_ACK;
	f[1] = (uint8_t)hi;                        /* largest acknowledged */
	f[2] = (uint8_t)dust_rng_uniform(rng, 64); /* ack delay */
	f[3] = 0;                                  /* range count */
	f[4] = (uint8_t)(hi - lo);                 /* first range: lo..hi */
}

DUST_EXPORT int dust_quic_confirm_ack_build(const struct dust_quic_confirm *cf,
                                            const struct dust_session *s, struct dust_rng *rng,
                                            uint8_t *out, size_t cap)
{
	size_t total = DUST_QUIC_CLIENT_DGRAM_MAX,
	       hs_len = HS_HDR_FIXED + s->cid_len + HS_ACK_LENGTH;
	size_t pn_off, ilen, n;
	struct dust_quic_keys k;
	bool ok;

	if (s->profile != DUST_PROFILE_QUIC || s->role != DUST_ROLE_CLIENT || !cf->odcid_len)
		return -EINVAL;
	if (cap < total)
		return -EMSGSIZE;
	/* the Initial fills what the Handshake ACK leaves: PADDING, as RFC 9000 §14.1 asks */
	ilen = total - hs_len;
	pn_off = initial_header(out, s, 0);
	n = ilen - pn_off - 1 - DUST_QUIC_AEAD_TAG;
	quic_varint_put(out + pn_off - 2, 1 + n + DUST_QUIC_AEAD_TAG, 2);
	initial_frames(cf, out + pn_off + 1, n, rng);
	dust_quic_initial_keys(cf->odcid, cf->odcid_len, false, &k);
	ok = quic_protect(&k, out, pn_off, 1, cf->pn, n);
	sodium_memzero(&k, sizeof(k));
	if (!ok)
		return -EIO;
	hs_random(s, rng, out + ilen, HS_ACK_LENGTH);
	return (int)total;
}

DUST_EXPORT int dust_quic_confirm_build(struct dust_session *s, struct dust_rng *rng,
                                        uint32_t now_s, const uint8_t *held, size_t held_len,
                                        uint8_t *out, size_t cap, bool *carried)
{
	struct dust_pad pad = {.kind = DUST_PAD_UNIFORM};
	size_t total = FINISHED_DGRAM_MIN + dust_rng_uniform(rng, FINISHED_DGRAM_SPREAD);
	size_t hs_len = HS_HDR_FIXED + s->cid_len + HS_FINISHED_LENGTH, off, room;
	int r;

	*carried = false;
	if (s->profile != DUST_PROFILE_QUIC || s->role != DUST_ROLE_CLIENT)
		return -EINVAL;
	if (cap < total || total < hs_len + dust_quic_tx_prefix(s) + DUST_DATA_OVERHEAD)
		return -EMSGSIZE;
	hs_random(s, rng, out, HS_FINISHED_LENGTH);
	/* the 1-RTT packet: a short header, then the held packet when it fits, else a keepalive */
	off = hs_len + dust_quic_tx_prefix(s);
	room = total - off - DUST_DATA_OVERHEAD;
	if (held_len && held_len <= room) {
		memcpy(out + off + DUST_DATA_PREFIX, held, held_len);
		*carried = true;
	}
	pad.min = pad.max = (uint16_t)(room - (*carried ? held_len : 0));
	dust_quic_short_put(s, rng, out + hs_len);
	r = dust_data_seal(s, rng, &pad, now_s, out + off, *carried ? held_len : 0, total - off);
	if (r < 0)
		*carried = false;
	return r < 0 ? r : (int)total;
}

/* Does the long header h name s's CID as a client's does (DCID it, SCID empty)? */
static bool to_server(const struct dust_session *s, const struct quic_long *h)
{
	return h->version == DUST_QUIC_VERSION && h->dcid_len == s->cid_len && h->scid_len == 0 &&
	       memcmp(h->dcid, s->cid, s->cid_len) == 0;
}

/* The second flight's first datagram: Initial, then a Handshake packet to its end. */
static bool confirm_ack_shape(const struct dust_session *s, const uint8_t *dg, size_t len,
                              const struct quic_long *h)
{
	struct quic_long hs;
	size_t next = h->pn_off + h->length;

	return len >= DUST_QUIC_INITIAL_MIN && len <= DUST_QUIC_CLIENT_DGRAM_MAX &&
	       h->token_len == 0 && next < len && quic_long_parse(dg + next, len - next, &hs) &&
	       hs.type == DUST_QUIC_TYPE_HANDSHAKE && to_server(s, &hs) &&
	       hs.length == len - next - hs.pn_off;
}

/* Its second: a Handshake packet, then a 1-RTT packet to s's CID; where the Dust packet is. */
static size_t confirm_data_off(const struct dust_session *s, const uint8_t *dg, size_t len,
                               const struct quic_long *h)
{
	size_t next = h->pn_off + h->length;

	if (next >= len || !dust_quic_short_match(s, dg + next, len - next) ||
	    len - next > DUST_QUIC_CLIENT_DGRAM_MAX)
		return 0;
	return next + dust_quic_rx_prefix(s);
}

DUST_EXPORT enum dust_quic_confirm_kind
dust_quic_confirm_kind(const struct dust_session *s, const uint8_t *dg, size_t len, size_t *off)
{
	struct quic_long h;

	*off = 0;
	if (s->profile != DUST_PROFILE_QUIC || s->role != DUST_ROLE_SERVER ||
	    !quic_long_parse(dg, len, &h) || !to_server(s, &h))
		return DUST_QUIC_CONFIRM_NONE;
	if (h.type == DUST_QUIC_TYPE_INITIAL)
		return confirm_ack_shape(s, dg, len, &h) ? DUST_QUIC_CONFIRM_ACK
		                                         : DUST_QUIC_CONFIRM_BAD;
	if (h.type != DUST_QUIC_TYPE_HANDSHAKE)
		return DUST_QUIC_CONFIRM_BAD;
	/* the previous release's: one Handshake packet of Dust data fills the datagram */
	if ((*off = dust_quic_hs_match(s, dg, len)) != 0)
		return DUST_QUIC_CONFIRM_OLD;
	*off = confirm_data_off(s, dg, len, &h);
	return *off ? DUST_QUIC_CONFIRM_DATA : DUST_QUIC_CONFIRM_BAD;
}
