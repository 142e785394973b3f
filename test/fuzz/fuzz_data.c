/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: data-packet decode with a live session, in two modes.
 * Raw (first byte != 0xff): the input is one UDP payload opened by the server
 * end of a fixed session pair at a fixed clock; seeds from mkcorpus are valid
 * packets, so mutations start past the tag check. Checked: segments stay in
 * the datagram, a failed open leaves the session as it was, and the same
 * bytes opened twice yield nothing the second time. An input under a §6
 * packet is opened as a compact packet (SPEC §6.5) too, with the same
 * checks, and its plaintext fed to the compressed-ACK rebuilder (ackz.h).
 * Structured (first byte 0xff): the input describes a chain of packets
 * (counter, timestamp, lengths, faults); the harness seals them with its own
 * reference sealer (SPEC.md §6: AEAD layout, nonce, AD, SipHash header
 * protection as libdust now does it) and checks libdust's verdict,
 * segments and plaintext against a model of §6 and §7. This reaches every
 * post-authentication branch, which random bytes never could.
 */
#include "fuzz_fixture.h"

enum { REC_BYTES = 8, MAX_RECS = 20, WINDOW = 192 };

static struct dust_session tmpl;
static struct dust_limits lim;
static uint8_t buf[65536], orig[65536];
static bool verbose; /* FUZZ_VERBOSE=1: print each input's outcome (seed checks) */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct dust_session c;

	(void)argc, (void)argv;
	if (dust_init() < 0)
		abort();
	fz_session_pair(&c, &tmpl);
	dust_limits_default(&lim);
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	return 0;
}

static unsigned open_all(struct dust_session *s, const uint8_t *data, size_t size,
                         struct dust_seg *segs, enum dust_drop *drop)
{
	memcpy(buf, data, size);
	return dust_datagram_open(s, &lim, FZ_NOW_S, buf, size, 0, segs, DUST_CHAIN_MAX, drop);
}

/*
 * A refused datagram changes nothing in the session but rx_forged, the
 * count of packets that failed their tag (the AEAD's integrity limit,
 * SPEC §8.1), and that by at most one: opening stops at the first failure.
 */
static bool unchanged_but_forged(const struct dust_session *a, const struct dust_session *b)
{
	struct dust_session x = *a;

	if (x.rx_forged != b->rx_forged && x.rx_forged != b->rx_forged + 1)
		return false;
	x.rx_forged = b->rx_forged;
	return memcmp(&x, b, sizeof(x)) == 0;
}

/* A compact packet: refused ones change nothing but rx_forged, none opens twice. */
static void raw_compact(const uint8_t *data, size_t size)
{
	uint8_t pt[DUST_COMPACT_PT_MAX], ip[DUST_ACKZ_IP_MAX];
	struct dust_session s = tmpl, before;
	struct dust_ackz z;
	size_t ptlen = 0;
	enum dust_drop drop = dust_compact_open(&s, FZ_NOW_S, data, size, pt, &ptlen);

	if (verbose)
		fprintf(stderr, "compact: %zu bytes: %s\n", size, dust_drop_name(drop));
	if (drop >= DUST_DROP_MAX)
		abort();
	if (drop != DUST_OK) {
		if (!unchanged_but_forged(&s, &tmpl))
			abort();
		dust_session_wipe(&s);
		return;
	}
	if (ptlen != size - DUST_COMPACT_OVERHEAD)
		abort();
	before = s;
	if (dust_compact_open(&s, FZ_NOW_S, data, size, pt, &ptlen) != DUST_DROP_REPLAY ||
	    memcmp(&s, &before, sizeof(s)) != 0)
		abort();
	dust_ackz_init(&z);
	if (dust_ackz_expand(&z, pt, ptlen, ip, sizeof(ip)) > DUST_ACKZ_IP_MAX)
		abort();
	dust_session_wipe(&s);
}

static void raw(const uint8_t *data, size_t size)
{
	struct dust_seg segs[DUST_CHAIN_MAX];
	struct dust_session s = tmpl;
	enum dust_drop drop;
	unsigned n;

	if (size < DUST_DATA_MIN_BYTES)
		raw_compact(data, size);
	n = open_all(&s, data, size, segs, &drop);
	if (verbose)
		fprintf(stderr, "data: %zu bytes: %u segs, %s\n", size, n, dust_drop_name(drop));
	if (drop >= DUST_DROP_MAX || (n == 0 && drop == DUST_OK && size != 0))
		abort();
	for (unsigned i = 0; i < n; i++)
		if ((size_t)segs[i].off + segs[i].len > size || segs[i].off < DUST_DATA_PREFIX)
			abort();
	if (n == 0 && !unchanged_but_forged(&s, &tmpl))
		abort();
	if (n > 0) {
		struct dust_session before = s;

		if (open_all(&s, data, size, segs, &drop) != 0 || drop != DUST_DROP_REPLAY)
			abort();
		if (memcmp(&s, &before, sizeof(s)) != 0)
			abort();
	}
	dust_session_wipe(&s);
}

/* ---- structured mode ------------------------------------------------------ */

struct rec {
	uint64_t counter;
	int8_t ts_delta;
	uint16_t data_len, ptlen;
	bool lie, bad_tag, cut;
	size_t off; /* where the packet starts in the datagram */
};

static void le_put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void rec_parse(struct rec *r, const uint8_t *in, bool last)
{
	r->counter = (uint64_t)(in[0] | in[1] << 8) << (in[2] % 64);
	r->ts_delta = (int8_t)in[3];
	r->data_len = (uint16_t)((in[4] | in[5] << 8) % 1400);
	r->ptlen = (uint16_t)(r->data_len + in[6]);
	r->lie = in[7] & 1;
	r->bad_tag = in[7] & 2;
	r->cut = last && (in[7] & 4);
}

static uint8_t pattern(size_t i, unsigned k)
{
	return (uint8_t)(i * 7 + k * 31 + 1);
}

/* Reference sealer, written from the wire layout (not libdust's code): returns the length. */
static size_t ref_seal(const struct rec *r, unsigned k, uint8_t *p)
{
	uint8_t hdr[DUST_HDR_BYTES], nonce[DUST_NONCE_BYTES] = {0}, *ct = p + DUST_HDR_BYTES;
	uint8_t mask[crypto_shorthash_siphashx24_BYTES], key[DUST_KEY_BYTES];
	uint16_t claimed = r->lie ? (uint16_t)(r->ptlen + 1) : r->data_len;
	uint64_t epoch = r->counter >> DUST_KEY_EPOCH_LOG;

	for (size_t i = 0; i < r->data_len; i++)
		ct[i] = pattern(i, k);
	memset(ct + r->data_len, 0, r->ptlen - r->data_len);
	/* header: counter, len, ts_s, data_len; all of it is the AD */
	le_put(hdr, r->counter, 8);
	le_put(hdr + 8, r->ptlen, 2);
	le_put(hdr + 10, (uint32_t)((int64_t)FZ_NOW_S + r->ts_delta), 4);
	le_put(hdr + 14, claimed, 2);
	le_put(nonce + 4, r->counter, 8);
	/* SPEC §8.1: epoch 0 uses the data key, epoch n >= 1 kdf(K_upd, n, "dustKUPD") */
	if (epoch)
		crypto_kdf_derive_from_key(key, sizeof(key), epoch, DUST_KDF_CTX_KEYUPD,
		                           tmpl.rx_upd);
	else
		memcpy(key, tmpl.rx_key, sizeof(key));
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(ct, ct + r->ptlen, NULL, ct, r->ptlen,
	                                                   hdr, sizeof(hdr), NULL, nonce, key);
	if (r->bad_tag)
		ct[r->ptlen] ^= 0x01;
	/* header protection: XOR with SipHash-2-4-128(HP key, sample = ct|tag [0..16]) */
	crypto_shorthash_siphashx24(mask, ct, DUST_SAMPLE_BYTES, tmpl.rx_hp);
	for (int i = 0; i < DUST_HDR_BYTES; i++)
		p[i] = hdr[i] ^ mask[i];
	return DUST_HDR_BYTES + r->ptlen + DUST_MAC_BYTES;
}

/*
 * The model of §6/§7: the verdict for r given the window state (top, seen)
 * left by the datagram's earlier packets. A datagram's packets go through
 * the AEAD as one burst, but each is judged in order as if opened alone:
 * the replay check against the window its predecessors left, then its tag,
 * then its authenticated header.
 */
static enum dust_drop model(const struct rec *r, uint64_t top, const uint64_t *seen, unsigned ns)
{
	bool dup = false;

	if (r->cut)
		return DUST_DROP_TRUNCATED;
	for (unsigned i = 0; i < ns; i++)
		dup |= seen[i] == r->counter;
	if (r->counter >= DUST_REJECT_AFTER_PACKETS ||
	    (r->counter < top && (top - r->counter > WINDOW || dup)))
		return DUST_DROP_REPLAY;
	if (r->bad_tag)
		return DUST_DROP_AUTH;
	if (r->ts_delta > (int)lim.ts_window_s)
		return DUST_DROP_FUTURE;
	if (r->ts_delta < -(int)lim.ts_window_s)
		return DUST_DROP_STALE;
	if (r->lie)
		return DUST_DROP_MALFORMED;
	return DUST_OK;
}

/* A failing packet is judged before anything is decrypted: its bytes are untouched. */
static void check_failed(const struct rec *r, size_t len)
{
	size_t end = r->off + DUST_DATA_OVERHEAD + r->ptlen;

	if (end > len)
		end = len; /* the cut record */
	if (memcmp(buf + r->off, orig + r->off, end - r->off) != 0)
		abort();
}

static void structured(const uint8_t *data, size_t size)
{
	struct rec r[MAX_RECS];
	struct dust_seg segs[DUST_CHAIN_MAX];
	struct dust_session s = tmpl;
	uint64_t top = 0, seen[MAX_RECS];
	unsigned nr = (unsigned)(size / REC_BYTES), ns = 0, n, want_n = 0;
	enum dust_drop drop, want = DUST_OK;
	size_t len = 0;

	if (nr > MAX_RECS)
		nr = MAX_RECS;
	for (unsigned k = 0; k < nr; k++) {
		rec_parse(&r[k], data + k * REC_BYTES, k == nr - 1);
		r[k].off = len;
		len += ref_seal(&r[k], k, orig + len);
	}
	if (nr && r[nr - 1].cut)
		len--;
	memcpy(buf, orig, len);
	n = dust_datagram_open(&s, &lim, FZ_NOW_S, buf, len, 0, segs, DUST_CHAIN_MAX, &drop);
	for (unsigned k = 0; k < nr && want == DUST_OK; k++) {
		want = k == DUST_CHAIN_MAX ? DUST_DROP_MALFORMED : model(&r[k], top, seen, ns);
		if (want != DUST_OK)
			break;
		seen[ns++] = r[k].counter;
		top = r[k].counter >= top ? r[k].counter + 1 : top;
		want_n++;
	}
	if (verbose)
		fprintf(stderr, "structured: %u packets: %u segs %s (model %u %s)\n", nr, n,
		        dust_drop_name(drop), want_n, dust_drop_name(want));
	if (n != want_n || drop != want)
		abort();
	for (unsigned k = 0; k < n; k++) {
		if (segs[k].off != r[k].off + DUST_DATA_PREFIX || segs[k].len != r[k].data_len)
			abort();
		for (size_t i = 0; i < r[k].data_len; i++)
			if (buf[segs[k].off + i] != pattern(i, k))
				abort();
	}
	if (want != DUST_OK && n < nr && n < DUST_CHAIN_MAX)
		check_failed(&r[n], len);
	if (s.replay.top != top)
		abort();
	dust_session_wipe(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65535)
		return -1;
	if (size > 0 && data[0] == 0xff)
		structured(data + 1, size - 1);
	else
		raw(data, size);
	return 0;
}
