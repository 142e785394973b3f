/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data packets (SPEC.md §6): seal and open in place, chaining, padding,
 * header protection. Opening verifies the Poly1305 tag and judges the
 * authenticated header before a single byte is decrypted, so a failed
 * packet leaves its buffer untouched (the caller may still try it as an
 * intro) and never yields plaintext.
 */
#include <sodium.h>

#include "dust_pvt.h"

static void nonce_make(uint8_t n[DUST_NONCE_BYTES], uint64_t counter)
{
	memset(n, 0, 4);
	le64_put(n + 4, counter);
}

/*
 * XOR the 16 header bytes with SipHash-2-4-128(hp, sample). A PRF of the
 * ciphertext under a key of its own, as obfs4 masks lengths; a ChaCha20 block
 * here cost a third of a 64-byte packet's AEAD, SipHash costs under a tenth.
 */
static void hdr_mask(uint8_t hdr[DUST_HDR_BYTES], const uint8_t sample[DUST_SAMPLE_BYTES],
                     const uint8_t hp[DUST_HP_KEY_BYTES])
{
	uint8_t m[crypto_shorthash_siphashx24_BYTES];

	static_assert(sizeof(m) >= DUST_HDR_BYTES, "mask covers the header");
	crypto_shorthash_siphashx24(m, sample, DUST_SAMPLE_BYTES, hp);
	for (int i = 0; i < DUST_HDR_BYTES; i++)
		hdr[i] ^= m[i];
}

static size_t pad_choose(const struct dust_pad *pad, struct dust_rng *rng, size_t need, size_t room)
{
	size_t p, lo, hi, top = room;

	if (pad->mtu && pad->mtu < top)
		top = pad->mtu;
	if (need >= top)
		return 0;
	if (pad->kind == DUST_PAD_FILL)
		return dust_rng_uniform(rng, (uint32_t)(top - need + 1));
	/*
	 * Draw within the room that is left: clamping an oversized draw to
	 * top - need would put every such draw on one length (the MTU), a spike
	 * a censor sees (dust-dpi flagged 36% of bulk datagrams at 1472 bytes).
	 */
	hi = pad->max > pad->min ? pad->max : pad->min;
	if (hi > top - need)
		hi = top - need;
	lo = pad->min < hi ? pad->min : hi;
	p = lo + dust_rng_uniform(rng, (uint32_t)(hi - lo) + 1);
	return p;
}

DUST_EXPORT int dust_data_seal(struct dust_session *s, struct dust_rng *rng,
                               const struct dust_pad *pad, uint32_t now_s, uint8_t *pkt,
                               size_t data_len, size_t cap)
{
	size_t need = DUST_DATA_OVERHEAD + data_len, room, padlen, ctlen;
	uint8_t hdr[DUST_HDR_BYTES], nonce[DUST_NONCE_BYTES];
	uint8_t *ct = pkt + DUST_DATA_PREFIX;
	uint64_t counter;

	if (need > cap || data_len > DUST_PT_MAX)
		return dust_fail(EMSGSIZE, "data of %zu bytes does not fit in %zu", data_len, cap);
	room = cap;
	if (room > DUST_PT_MAX + DUST_DATA_OVERHEAD)
		room = DUST_PT_MAX + DUST_DATA_OVERHEAD;
	padlen = pad_choose(pad, rng, need, room);
	ctlen = data_len + padlen;

	counter = __atomic_fetch_add(&s->tx_counter, 1, __ATOMIC_RELAXED);
	if (counter >= DUST_REJECT_AFTER_PACKETS)
		return dust_fail(EKEYEXPIRED, "session exhausted its packet counter");

	/* Padding is encrypted, so its plaintext need not be random. */
	memset(ct + data_len, 0, padlen);
	le64_put(hdr, counter);
	le16_put(hdr + 8, (uint16_t)ctlen);
	le32_put(hdr + 10, now_s);
	le16_put(hdr + 14, (uint16_t)data_len);
	nonce_make(nonce, counter);
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(ct, ct + ctlen, NULL, ct, ctlen, hdr,
	                                                   sizeof(hdr), NULL, nonce, s->tx_key);
	hdr_mask(hdr, ct, s->tx_hp);
	memcpy(pkt, hdr, sizeof(hdr));
	return (int)(DUST_DATA_OVERHEAD + ctlen);
}

/* RFC 8439 §2.8 tag over ad and ct, as libsodium's IETF construction computes it. */
static int tag_verify(const uint8_t *ct, size_t ctlen, const uint8_t *ad, size_t adlen,
                      const uint8_t *tag, const uint8_t nonce[DUST_NONCE_BYTES],
                      const uint8_t key[DUST_KEY_BYTES])
{
	static const uint8_t zeros[16];
	crypto_onetimeauth_poly1305_state st;
	uint8_t block0[64], lens[16], mac[DUST_MAC_BYTES];
	int rc;

	crypto_stream_chacha20_ietf(block0, sizeof(block0), nonce, key);
	crypto_onetimeauth_poly1305_init(&st, block0);
	crypto_onetimeauth_poly1305_update(&st, ad, adlen);
	crypto_onetimeauth_poly1305_update(&st, zeros, (16 - adlen % 16) % 16);
	crypto_onetimeauth_poly1305_update(&st, ct, ctlen);
	crypto_onetimeauth_poly1305_update(&st, zeros, (16 - ctlen % 16) % 16);
	le64_put(lens, adlen);
	le64_put(lens + 8, ctlen);
	crypto_onetimeauth_poly1305_update(&st, lens, sizeof(lens));
	crypto_onetimeauth_poly1305_final(&st, mac);
	rc = crypto_verify_16(mac, tag);
	sodium_memzero(block0, sizeof(block0));
	sodium_memzero(&st, sizeof(st));
	return rc;
}

static enum dust_drop ts_check(uint32_t ts, uint32_t now_s, const struct dust_limits *lim)
{
	int64_t d = (int32_t)(ts - now_s);

	if (d > (int64_t)lim->ts_window_s)
		return DUST_DROP_FUTURE;
	if (d < -(int64_t)lim->ts_window_s)
		return DUST_DROP_STALE;
	return DUST_OK;
}

DUST_EXPORT enum dust_drop dust_data_open(struct dust_session *s, const struct dust_limits *lim,
                                          uint32_t now_s, uint8_t *pkt, size_t len,
                                          struct dust_seg *seg, size_t *consumed)
{
	uint8_t hdr[DUST_HDR_BYTES], nonce[DUST_NONCE_BYTES];
	uint8_t *ct = pkt + DUST_DATA_PREFIX;
	uint64_t counter;
	size_t ctlen, datalen;
	enum dust_drop d;

	if (len < DUST_DATA_MIN_BYTES)
		return DUST_DROP_TRUNCATED;
	memcpy(hdr, pkt, sizeof(hdr));
	hdr_mask(hdr, ct, s->rx_hp);
	counter = le64_get(hdr);
	ctlen = le16_get(hdr + 8);
	if (DUST_DATA_OVERHEAD + ctlen > len)
		return DUST_DROP_TRUNCATED;
	if (!dust_replay_check(&s->replay, counter))
		return DUST_DROP_REPLAY;
	nonce_make(nonce, counter);
	if (tag_verify(ct, ctlen, hdr, sizeof(hdr), ct + ctlen, nonce, s->rx_key) != 0)
		return DUST_DROP_AUTH;
	/*
	 * The header is authenticated now: judge it before decrypting, so a
	 * stale, lying or replayed packet leaves its bytes as they came.
	 */
	datalen = le16_get(hdr + 14);
	d = ts_check(le32_get(hdr + 10), now_s, lim);
	if (d == DUST_OK && datalen > ctlen)
		d = DUST_DROP_MALFORMED;
	if (d == DUST_OK && !dust_replay_update(&s->replay, counter))
		d = DUST_DROP_REPLAY;
	if (d != DUST_OK)
		return d;
	/* Only the data: padding is never needed in clear. */
	crypto_stream_chacha20_ietf_xor_ic(ct, ct, datalen, nonce, 1, s->rx_key);
	s->last_rx_s = now_s;
	seg->off = DUST_DATA_PREFIX;
	seg->len = (uint16_t)datalen;
	*consumed = DUST_DATA_OVERHEAD + ctlen;
	return DUST_OK;
}

DUST_EXPORT unsigned dust_datagram_open(struct dust_session *s, const struct dust_limits *lim,
                                        uint32_t now_s, uint8_t *dg, size_t len, size_t off,
                                        struct dust_seg *segs, unsigned max_segs,
                                        enum dust_drop *drop)
{
	unsigned n = 0;

	*drop = DUST_OK;
	while (off < len) {
		size_t used;
		struct dust_seg seg;

		if (n == max_segs) {
			*drop = DUST_DROP_MALFORMED;
			break;
		}
		*drop = dust_data_open(s, lim, now_s, dg + off, len - off, &seg, &used);
		if (*drop != DUST_OK)
			break;
		segs[n].off = (uint16_t)(off + seg.off);
		segs[n].len = seg.len;
		n++;
		off += used;
	}
	return n;
}

DUST_EXPORT uint16_t dust_datagram_open_burst(struct dust_session *const *s, uint8_t *const *dg,
                                              const uint16_t *len, uint16_t n,
                                              const struct dust_limits *lim, uint32_t now_s,
                                              struct dust_rx_result *res)
{
	enum { AHEAD = 3 };
	uint16_t ok = 0;

	for (uint16_t i = 0; i < n && i < AHEAD; i++)
		__builtin_prefetch(dg[i]);
	for (uint16_t i = 0; i < n; i++) {
		if (i + AHEAD < n) {
			__builtin_prefetch(dg[i + AHEAD]);
			if (s[i + AHEAD])
				__builtin_prefetch(s[i + AHEAD]);
		}
		/*
		 * Pull in the whole next datagram, not only its first line: at
		 * 1400 bytes the hardware prefetcher left the loop ~600 ns/packet
		 * behind the bare AEAD on memory stalls (bench/README.md).
		 */
		if (i + 1 < n)
			for (unsigned o = 64; o < len[i + 1]; o += 64)
				__builtin_prefetch(dg[i + 1] + o);
		if (!s[i]) {
			res[i].drop = DUST_DROP_AUTH;
			res[i].nseg = 0;
			continue;
		}
		res[i].nseg = (uint8_t)dust_datagram_open(s[i], lim, now_s, dg[i], len[i], 0,
		                                          res[i].seg, DUST_CHAIN_MAX, &res[i].drop);
		ok += res[i].nseg > 0;
	}
	return ok;
}
