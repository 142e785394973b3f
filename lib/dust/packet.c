/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data packets (SPEC.md §6): seal and open, chaining, padding, header
 * protection, key epochs (§8.1). A burst's AEAD work goes to the backend
 * (aead.h) in one call. Opening decrypts out of place into a per-thread
 * scratch and copies the data back only once the tag verified and the
 * authenticated header was judged, so a failed packet leaves its buffer
 * untouched (the caller may still try it as an intro) and never yields
 * plaintext.
 */
#include <sodium.h>

#include "aead.h"
#include "dust_pvt.h"
#include "loopprof.h"
#include "siphash.h"

enum {
	RX_JOBS = 128,        /* packets opened per backend call */
	RX_DGS = 64,          /* datagrams judged per backend call */
	RX_SCRATCH = 1 << 17, /* plaintext room: any datagram fits (len < 2^16) */
	TX_CHUNK = 64,        /* packets sealed per backend call */
};

/* Out-of-place plaintext of the packets being opened on this thread. */
static __thread uint8_t rx_scratch[RX_SCRATCH] __attribute__((aligned(64)));

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
	static_assert(DUST_SAMPLE_BYTES == 16 && DUST_HDR_BYTES == 16 && DUST_HP_KEY_BYTES == 16,
	              "one SipHash-128 output over a 16-byte sample masks the header");
	dust_siphash128_16_xor(hdr, sample, hp);
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

/* ---- Key epochs (SPEC.md §8.1) ------------------------------------------------ */

static uint64_t forgery_limit(uint8_t suite)
{
	return suite == DUST_SUITE_AES256GCM ? DUST_FORGERY_LIMIT_AES256GCM
	                                     : DUST_FORGERY_LIMIT_CHACHA20POLY1305;
}

/* A cached send key of epoch ep, read under its sequence lock; false if absent. */
static bool txk_read(struct dust_txk *k, uint64_t ep, uint8_t key[DUST_KEY_BYTES])
{
	uint64_t seq = __atomic_load_n(&k->seq, __ATOMIC_ACQUIRE), w[DUST_KEY_BYTES / 8];

	if ((seq & 1) || __atomic_load_n(&k->epoch, __ATOMIC_RELAXED) != ep)
		return false;
	for (int i = 0; i < DUST_KEY_BYTES / 8; i++)
		w[i] = __atomic_load_n(&k->w[i], __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&k->seq, __ATOMIC_RELAXED) != seq)
		return false;
	memcpy(key, w, DUST_KEY_BYTES);
	sodium_memzero(w, sizeof(w));
	return true;
}

/* Publish a send key; a writer that loses the race leaves the slot to the winner. */
static void txk_publish(struct dust_txk *k, uint64_t ep, const uint8_t key[DUST_KEY_BYTES])
{
	uint64_t seq = __atomic_load_n(&k->seq, __ATOMIC_RELAXED), w[DUST_KEY_BYTES / 8];

	if ((seq & 1) || !__atomic_compare_exchange_n(&k->seq, &seq, seq + 1, false,
	                                              __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(w, key, DUST_KEY_BYTES);
	__atomic_store_n(&k->epoch, ep, __ATOMIC_RELAXED);
	for (int i = 0; i < DUST_KEY_BYTES / 8; i++)
		__atomic_store_n(&k->w[i], w[i], __ATOMIC_RELAXED);
	__atomic_store_n(&k->seq, seq + 2, __ATOMIC_RELEASE);
	sodium_memzero(w, sizeof(w));
}

/* A data key the session is done with: the AEAD backend drops its copies (AES-GCM's cache). */
static void key_retire(const struct dust_session *s, const uint8_t *key)
{
	if (s->suite == DUST_SUITE_AES256GCM)
		aead_forget(&key, 1);
}

static void tx_epoch_prepare(struct dust_session *s, uint64_t ep, uint8_t key[DUST_KEY_BYTES])
{
	/* epoch ep's slot held ep - 2, which no packet uses any more */
	if (ep == 2)
		key_retire(s, s->tx_key);
	if (ep > 2 && s->suite == DUST_SUITE_AES256GCM) {
		dust_epoch_key(key, s->tx_upd, ep - 2);
		key_retire(s, key);
	}
	dust_epoch_key(key, s->tx_upd, ep);
	txk_publish(&s->txk[ep & 1], ep, key);
}

/*
 * The send key for counter: epoch 0's is tx_key; a later one comes from the
 * cache, or is derived (once per epoch per racing thread). Halfway through
 * an epoch the sender derives the next one, so the switch costs no packet
 * a KDF call.
 */
static const uint8_t *tx_key_for(struct dust_session *s, uint64_t counter,
                                 uint8_t buf[DUST_KEY_BYTES])
{
	uint64_t ep = counter >> DUST_KEY_EPOCH_LOG;

	if ((counter & (DUST_KEY_EPOCH_PACKETS - 1)) == DUST_KEY_EPOCH_PACKETS / 2)
		tx_epoch_prepare(s, ep + 1, buf);
	if (ep == 0)
		return s->tx_key;
	if (!txk_read(&s->txk[ep & 1], ep, buf))
		tx_epoch_prepare(s, ep, buf);
	return buf;
}

/*
 * The receive key for epoch ep: those of rx_epoch - 1 .. rx_epoch + 1 are
 * held; a later one (a sender that jumped ahead, or 2^22 packets lost) is
 * derived into buf, one KDF call before the tag check. Earlier ones: NULL.
 */
static const uint8_t *rx_key_for(struct dust_session *s, uint64_t ep, uint8_t buf[DUST_KEY_BYTES])
{
	if (ep + 1 < s->rx_epoch)
		return NULL;
	if (ep == 0)
		return s->rx_key;
	if (s->rx_ek_epoch[ep % 3] == ep)
		return s->rx_ek[ep % 3];
	if (ep <= s->rx_epoch)
		return NULL;
	dust_epoch_key(buf, s->rx_upd, ep);
	return buf;
}

/*
 * An authenticated packet of a later epoch moves the receiver on: it keeps
 * that epoch's key (key) and the one before when it has it, and derives the
 * next one now, off the path of the packets that will need it.
 */
static void rx_epoch_advance(struct dust_session *s, uint64_t ep, const uint8_t *key)
{
	uint64_t next = ep + 1;

	if (ep <= s->rx_epoch)
		return;
	if (s->rx_ek_epoch[ep % 3] != ep) {
		if (s->rx_ek_epoch[ep % 3])
			key_retire(s, s->rx_ek[ep % 3]);
		memcpy(s->rx_ek[ep % 3], key, DUST_KEY_BYTES);
		s->rx_ek_epoch[ep % 3] = ep;
	}
	if (ep >= 2 && s->rx_epoch < 2)
		key_retire(s, s->rx_key); /* epoch 0 falls behind the window */
	s->rx_epoch = ep;
	if (s->rx_ek_epoch[next % 3] && s->rx_ek_epoch[next % 3] != next)
		key_retire(s, s->rx_ek[next % 3]);
	dust_epoch_key(s->rx_ek[next % 3], s->rx_upd, next);
	s->rx_ek_epoch[next % 3] = next;
}

/* ---- Sealing ------------------------------------------------------------------- */

/* Header, padding and AEAD input of one packet; -errno when it cannot be sealed. */
static int seal_prepare(struct dust_tx_pkt *p, struct dust_rng *rng, const struct dust_pad *pad,
                        uint32_t now_s, struct aead_op *op, uint8_t hdr[DUST_HDR_BYTES],
                        uint8_t keybuf[DUST_KEY_BYTES])
{
	size_t need = DUST_DATA_OVERHEAD + p->data_len, room, padlen, ctlen;
	uint8_t *ct = p->pkt + DUST_DATA_PREFIX;
	uint64_t counter;

	if (need > p->cap || p->data_len > DUST_PT_MAX)
		return -EMSGSIZE;
	room = p->cap;
	if (room > DUST_PT_MAX + DUST_DATA_OVERHEAD)
		room = DUST_PT_MAX + DUST_DATA_OVERHEAD;
	if (pad->model && p->s->profile == DUST_PROFILE_QUIC)
		padlen = dust_size_model_pad(p->s, rng, need,
		                             pad->mtu && pad->mtu < room ? pad->mtu : room);
	else
		padlen = pad_choose(pad, rng, need, room);
	ctlen = p->data_len + padlen;

	counter = __atomic_fetch_add(&p->s->tx_counter, 1, __ATOMIC_RELAXED);
	if (counter >= DUST_REJECT_AFTER_PACKETS)
		return -EKEYEXPIRED;

	/* Padding is encrypted, so its plaintext need not be random. */
	memset(ct + p->data_len, 0, padlen);
	le64_put(hdr, counter);
	le16_put(hdr + 8, (uint16_t)ctlen);
	le32_put(hdr + 10, now_s);
	le16_put(hdr + 14, (uint16_t)p->data_len);
	nonce_make(op->nonce, counter);
	op->key = tx_key_for(p->s, counter, keybuf);
	op->ad = hdr;
	op->src = ct;
	op->dst = ct;
	op->tag = ct + ctlen;
	op->len = (uint32_t)ctlen;
	op->suite = p->s->suite;
	return 0;
}

static unsigned seal_chunk(struct dust_tx_pkt *p, unsigned n, struct dust_rng *rng,
                           const struct dust_pad *pad, uint32_t now_s)
{
	struct aead_op op[TX_CHUNK];
	uint8_t hdr[TX_CHUNK][DUST_HDR_BYTES], key[TX_CHUNK][DUST_KEY_BYTES];
	uint8_t slot[TX_CHUNK], *hb[TX_CHUNK];
	const uint8_t *hs[TX_CHUNK], *hk[TX_CHUNK];
	unsigned k = 0, ok = 0;

	for (unsigned i = 0; i < n; i++) {
		p[i].result = seal_prepare(&p[i], rng, pad, now_s, &op[k], hdr[k], key[k]);
		if (p[i].result == 0)
			slot[k++] = (uint8_t)i;
	}
	DUST_PROF_LAP(CODEC);
	aead_seal_burst(op, k);
	DUST_PROF_LAP(CRYPTO);
	for (unsigned j = 0; j < k; j++) {
		struct dust_tx_pkt *t = &p[slot[j]];

		if (!op[j].ok) {
			t->result = -ENOTSUP;
			continue;
		}
		t->result = (int)(DUST_DATA_OVERHEAD + op[j].len);
		hb[ok] = hdr[j];
		hs[ok] = t->pkt + DUST_DATA_PREFIX;
		hk[ok++] = t->s->tx_hp;
	}
	/* The masks of the whole chunk at once (the sample is ciphertext: after the AEAD). */
	dust_siphash128_16_xor_burst(hb, hs, hk, ok);
	for (unsigned j = 0; j < ok; j++)
		memcpy((uint8_t *)hs[j] - DUST_DATA_PREFIX, hb[j], DUST_HDR_BYTES);
	DUST_PROF_LAP(HP);
	sodium_memzero(key, k * sizeof(key[0]));
	DUST_PROF_LAP(CODEC);
	return ok;
}

DUST_EXPORT unsigned dust_data_seal_burst(struct dust_tx_pkt *p, unsigned n, struct dust_rng *rng,
                                          const struct dust_pad *pad, uint32_t now_s)
{
	unsigned ok = 0;

	for (unsigned at = 0; at < n; at += TX_CHUNK)
		ok += seal_chunk(p + at, n - at < TX_CHUNK ? n - at : TX_CHUNK, rng, pad, now_s);
	return ok;
}

DUST_EXPORT int dust_data_seal(struct dust_session *s, struct dust_rng *rng,
                               const struct dust_pad *pad, uint32_t now_s, uint8_t *pkt,
                               size_t data_len, size_t cap)
{
	struct dust_tx_pkt p = {.s = s, .pkt = pkt, .data_len = data_len, .cap = cap};

	dust_data_seal_burst(&p, 1, rng, pad, now_s);
	if (p.result == -EMSGSIZE)
		return dust_fail(EMSGSIZE, "data of %zu bytes does not fit in %zu", data_len, cap);
	if (p.result == -EKEYEXPIRED)
		return dust_fail(EKEYEXPIRED, "session exhausted its packet counter");
	if (p.result == -ENOTSUP)
		return dust_fail(ENOTSUP, "cipher suite %s cannot run here (or its backend failed)",
		                 dust_suite_name(s->suite));
	return p.result;
}

/* ---- Opening --------------------------------------------------------------------- */

/*
 * The first keepalive of a random-profile session: the answer block sealed at
 * the intro (SPEC §5.1), then a data packet. Here, beside the seal it wraps:
 * this file opens answers with intro.c's help, so intro.c calls nothing here.
 */
DUST_EXPORT int dust_intro_answer_build(struct dust_session *s, struct dust_rng *rng,
                                        const struct dust_pad *pad, uint32_t now_s, uint8_t *out,
                                        size_t cap)
{
	int r;

	if (!s->hs_pending || s->role != DUST_ROLE_SERVER)
		return -EINVAL;
	if (cap < DUST_ANSWER_BYTES + DUST_DATA_MIN_BYTES)
		return -EMSGSIZE;
	r = dust_data_seal(s, rng, pad, now_s, out + DUST_ANSWER_BYTES, 0, cap - DUST_ANSWER_BYTES);
	if (r < 0)
		return r;
	memcpy(out, s->hs.answer, DUST_ANSWER_BYTES);
	sodium_memzero(&s->hs, sizeof(s->hs));
	s->hs_pending = 0;
	return DUST_ANSWER_BYTES + r;
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

/* One packet on its way through the backend. */
struct rx_meta {
	uint8_t hdr[DUST_HDR_BYTES]; /* unmasked: the AD, judged once it is authentic */
	uint8_t key[DUST_KEY_BYTES]; /* a key derived for this packet (rx_key_for) */
	uint64_t counter;
	uint32_t off; /* packet offset in its datagram */
};

/* One datagram: its packets are jobs first .. first + count - 1. */
struct rx_dg {
	struct dust_session *s;
	uint8_t *dg;
	struct dust_seg *segs;
	uint8_t *nseg;
	enum dust_drop *drop;
	size_t *end;        /* NULL, or where the last opened packet ends */
	const uint8_t *hdr; /* NULL, or the first packet's header, unmasked */
	uint16_t first, count;
	enum dust_drop stop; /* why the scan stopped; DUST_OK: every byte is a job */
};

struct rx_ctx {
	const struct dust_limits *lim;
	uint32_t now_s;
	unsigned njob, ndg;
	size_t used; /* of rx_scratch */
	struct aead_op op[RX_JOBS];
	struct rx_meta meta[RX_JOBS];
	struct rx_dg dg[RX_DGS];
};

/*
 * Unmask and check one packet's header and queue its AEAD job. Reads only:
 * the counter and length are not authentic yet.
 */
static enum dust_drop job_add(struct rx_ctx *c, struct dust_session *s, uint8_t *pkt, size_t len,
                              const uint8_t *hdr)
{
	struct rx_meta *m = &c->meta[c->njob];
	struct aead_op *op = &c->op[c->njob];
	uint8_t *ct = pkt + DUST_DATA_PREFIX;
	size_t ctlen;

	if (len < DUST_DATA_MIN_BYTES)
		return DUST_DROP_TRUNCATED;
	DUST_PROF_LAP(CODEC);
	if (hdr) {
		memcpy(m->hdr, hdr, DUST_HDR_BYTES); /* unmasked by hdr_first */
	} else {
		memcpy(m->hdr, pkt, DUST_HDR_BYTES);
		hdr_mask(m->hdr, ct, s->rx_hp);
	}
	DUST_PROF_LAP(HP);
	m->counter = le64_get(m->hdr);
	ctlen = le16_get(m->hdr + 8);
	if (DUST_DATA_OVERHEAD + ctlen > len)
		return DUST_DROP_TRUNCATED;
	if (!dust_replay_check(&s->replay, m->counter))
		return DUST_DROP_REPLAY;
	DUST_PROF_LAP(REPLAY);
	if (s->rx_forged >= forgery_limit(s->suite) ||
	    !(op->key = rx_key_for(s, m->counter >> DUST_KEY_EPOCH_LOG, m->key)))
		return DUST_DROP_AUTH;
	nonce_make(op->nonce, m->counter);
	op->ad = m->hdr;
	op->src = ct;
	op->dst = rx_scratch + c->used;
	op->tag = ct + ctlen;
	op->len = (uint32_t)ctlen;
	op->suite = s->suite;
	c->used += (ctlen + 63) & ~(size_t)63;
	c->njob++;
	DUST_PROF_LAP(CODEC);
	return DUST_OK;
}

/* Queue every chained packet of one datagram from off (at most max). */
static void dg_scan(struct rx_ctx *c, struct rx_dg *d, size_t len, size_t off, unsigned max,
                    bool chain)
{
	d->first = (uint16_t)c->njob;
	d->count = 0;
	d->stop = d->s ? DUST_OK : DUST_DROP_AUTH;
	while (d->s && off < len) {
		if (d->count == max) {
			d->stop = chain ? DUST_DROP_MALFORMED : DUST_OK;
			break;
		}
		d->stop = job_add(c, d->s, d->dg + off, len - off, d->count ? NULL : d->hdr);
		if (d->stop != DUST_OK)
			break;
		c->meta[c->njob - 1].off = (uint32_t)off;
		off += DUST_DATA_OVERHEAD + c->op[c->njob - 1].len;
		d->count++;
	}
}

/*
 * Judge one opened packet on its authenticated header and, if it passes,
 * commit: replay window, key epoch, last receive time, and the data copied
 * over its ciphertext.
 */
static enum dust_drop job_commit(struct rx_ctx *c, struct dust_session *s, unsigned j, uint8_t *dg,
                                 struct dust_seg *seg)
{
	struct rx_meta *m = &c->meta[j];
	struct aead_op *op = &c->op[j];
	size_t datalen = le16_get(m->hdr + 14);
	enum dust_drop d;

	/*
	 * The pre-check again, now that earlier packets of this burst are in the
	 * window: the verdicts stay those of opening one packet after another.
	 */
	if (!dust_replay_check(&s->replay, m->counter))
		return DUST_DROP_REPLAY;
	if (!op->ok) {
		s->rx_forged++;
		return DUST_DROP_AUTH;
	}
	d = ts_check(le32_get(m->hdr + 10), c->now_s, c->lim);
	if (d == DUST_OK && datalen > op->len)
		d = DUST_DROP_MALFORMED;
	if (d == DUST_OK && !dust_replay_update(&s->replay, m->counter))
		d = DUST_DROP_REPLAY;
	DUST_PROF_LAP(REPLAY);
	if (d != DUST_OK)
		return d;
	rx_epoch_advance(s, m->counter >> DUST_KEY_EPOCH_LOG, op->key);
	memcpy(dg + m->off + DUST_DATA_PREFIX, op->dst, datalen);
	DUST_PROF_LAP(COPY);
	s->last_rx_s = c->now_s;
	seg->off = (uint16_t)(m->off + DUST_DATA_PREFIX);
	seg->len = (uint16_t)datalen;
	return DUST_OK;
}

static void dg_judge(struct rx_ctx *c, struct rx_dg *d)
{
	unsigned k = 0;

	*d->nseg = 0;
	*d->drop = d->stop;
	for (; k < d->count; k++) {
		unsigned j = d->first + k;
		enum dust_drop r = job_commit(c, d->s, j, d->dg, &d->segs[*d->nseg]);

		if (r != DUST_OK) {
			*d->drop = r;
			break;
		}
		(*d->nseg)++;
		if (d->end)
			*d->end = c->meta[j].off + DUST_DATA_OVERHEAD + c->op[j].len;
	}
	/* No plaintext of a refused or unjudged packet stays behind. */
	for (; k < d->count; k++)
		if (c->op[d->first + k].ok)
			sodium_memzero(c->op[d->first + k].dst, c->op[d->first + k].len);
	DUST_PROF_LAP(CODEC);
}

static void rx_flush(struct rx_ctx *c)
{
	DUST_PROF_LAP(CODEC);
	aead_open_burst(c->op, c->njob);
	DUST_PROF_LAP(CRYPTO);
	for (unsigned i = 0; i < c->ndg; i++)
		dg_judge(c, &c->dg[i]);
	for (unsigned j = 0; j < c->njob; j++)
		if (c->op[j].key == c->meta[j].key)
			sodium_memzero(c->meta[j].key, DUST_KEY_BYTES);
	DUST_PROF_LAP(CODEC);
	c->njob = 0;
	c->ndg = 0;
	c->used = 0;
}

static bool rx_full(const struct rx_ctx *c, size_t len)
{
	return c->ndg == RX_DGS || c->njob + DUST_CHAIN_MAX > RX_JOBS ||
	       c->used + len + 64 * DUST_CHAIN_MAX > RX_SCRATCH;
}

static void rx_init(struct rx_ctx *c, const struct dust_limits *lim, uint32_t now_s)
{
	c->lim = lim;
	c->now_s = now_s;
	c->njob = c->ndg = 0;
	c->used = 0;
}

DUST_EXPORT enum dust_drop dust_data_open(struct dust_session *s, const struct dust_limits *lim,
                                          uint32_t now_s, uint8_t *pkt, size_t len,
                                          struct dust_seg *seg, size_t *consumed)
{
	struct rx_ctx c;
	enum dust_drop drop;
	uint8_t nseg;
	struct rx_dg *d = &c.dg[0];

	if (len < DUST_DATA_MIN_BYTES)
		return DUST_DROP_TRUNCATED;
	rx_init(&c, lim, now_s);
	*d = (struct rx_dg){
	    .s = s, .dg = pkt, .segs = seg, .nseg = &nseg, .drop = &drop, .end = consumed};
	dg_scan(&c, d, len, 0, 1, false);
	c.ndg = 1;
	rx_flush(&c);
	return drop;
}

DUST_EXPORT unsigned dust_datagram_open(struct dust_session *s, const struct dust_limits *lim,
                                        uint32_t now_s, uint8_t *dg, size_t len, size_t off,
                                        struct dust_seg *segs, unsigned max_segs,
                                        enum dust_drop *drop)
{
	struct rx_ctx c;
	uint8_t nseg;
	size_t used;

	/* a client awaiting its intro's answer: the datagram starts with it (§5.1) */
	if (s->hs_pending && s->role == DUST_ROLE_CLIENT) {
		*drop = off <= len ? dust_intro_answer_open(s, dg + off, len - off, &used)
		                   : DUST_DROP_TRUNCATED;
		if (*drop != DUST_OK)
			return 0;
		off += used;
	}
	rx_init(&c, lim, now_s);
	c.dg[0] = (struct rx_dg){.s = s, .dg = dg, .segs = segs, .nseg = &nseg, .drop = drop};
	dg_scan(&c, &c.dg[0], len, off, max_segs < DUST_CHAIN_MAX ? max_segs : DUST_CHAIN_MAX,
	        true);
	c.ndg = 1;
	rx_flush(&c);
	return nseg;
}

/*
 * Pull in a datagram ahead of its scan: every line of it, not only the first
 * (the header's sample crosses into the second, and the AEAD then reads the
 * rest from cache, not DRAM), and the session lines opening reads.
 */
static void rx_prefetch(const struct dust_session *s, const uint8_t *dg, uint16_t len)
{
	static const uint16_t at[] = {
	    offsetof(struct dust_session, rx_hp),     offsetof(struct dust_session, replay),
	    offsetof(struct dust_session, suite),     offsetof(struct dust_session, rx_epoch),
	    offsetof(struct dust_session, rx_forged),
	};

	for (unsigned o = 0; o < len; o += 64)
		__builtin_prefetch(dg + o);
	if (len)
		__builtin_prefetch(dg + len - 1);
	if (!s)
		return;
	for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		__builtin_prefetch((const uint8_t *)s + at[i]);
}

/*
 * Unmask the first packet's header of every datagram of a block at once
 * (SipHash eight at a time, siphash.c); dg_scan does the chained ones. Only
 * where job_add would unmask it: a session, and a datagram long enough.
 */
static void hdr_first(struct dust_session *const *s, uint8_t *const *dg, const uint16_t *len,
                      unsigned n, uint8_t (*hdr)[DUST_HDR_BYTES])
{
	uint8_t *hb[RX_DGS];
	const uint8_t *hs[RX_DGS], *hk[RX_DGS];
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		if (s[i]) {
			__builtin_prefetch(dg[i]);
			__builtin_prefetch(dg[i] + DUST_DATA_PREFIX + DUST_SAMPLE_BYTES - 1);
		}
	for (unsigned i = 0; i < n; i++) {
		if (!s[i] || len[i] < DUST_DATA_MIN_BYTES)
			continue;
		memcpy(hdr[i], dg[i], DUST_HDR_BYTES);
		hb[k] = hdr[i];
		hs[k] = dg[i] + DUST_DATA_PREFIX;
		hk[k++] = s[i]->rx_hp;
	}
	dust_siphash128_16_xor_burst(hb, hs, hk, k);
}

DUST_EXPORT uint16_t dust_datagram_open_burst(struct dust_session *const *s, uint8_t *const *dg,
                                              const uint16_t *len, uint16_t n,
                                              const struct dust_limits *lim, uint32_t now_s,
                                              struct dust_rx_result *res)
{
	enum { AHEAD = 3, BLOCK = 32 };
	uint8_t hdr[BLOCK][DUST_HDR_BYTES];
	struct rx_ctx c;
	uint16_t ok = 0;

	static_assert((int)BLOCK <= (int)RX_DGS, "hdr_first's arrays");
	rx_init(&c, lim, now_s);
	for (uint16_t i = 0; i < n && i < AHEAD; i++)
		rx_prefetch(s[i], dg[i], len[i]);
	for (uint16_t i = 0; i < n; i++) {
		struct rx_dg *d;

		if (i % BLOCK == 0) {
			hdr_first(s + i, dg + i, len + i, n - i < BLOCK ? n - i : BLOCK, hdr);
			DUST_PROF_LAP(HP);
		}
		if (i + AHEAD < n)
			rx_prefetch(s[i + AHEAD], dg[i + AHEAD], len[i + AHEAD]);
		if (rx_full(&c, len[i]))
			rx_flush(&c);
		d = &c.dg[c.ndg++];
		*d = (struct rx_dg){.s = s[i],
		                    .dg = dg[i],
		                    .segs = res[i].seg,
		                    .nseg = &res[i].nseg,
		                    .drop = &res[i].drop,
		                    .hdr = hdr[i % BLOCK]};
		dg_scan(&c, d, len[i], 0, DUST_CHAIN_MAX, true);
	}
	rx_flush(&c);
	for (uint16_t i = 0; i < n; i++)
		ok += res[i].nseg > 0;
	return ok;
}

/* ---- Compact packets (SPEC.md §6.5) ------------------------------------------------ */

/*
 * The AD of a compact packet: its full counter and ciphertext length, and
 * six 0xff bytes where a §6 header has its timestamp and data length (a §6
 * data length is never 0xffff with a length that fits a compact packet).
 */
static void compact_ad(uint8_t ad[DUST_HDR_BYTES], uint64_t counter, size_t ctlen)
{
	le64_put(ad, counter);
	le16_put(ad + 8, (uint16_t)ctlen);
	memset(ad + 10, 0xff, DUST_HDR_BYTES - 10);
}

/* The counter byte's mask: SipHash-2-4-128(hp, tag)'s first byte. */
static uint8_t compact_mask(const uint8_t *tag, const uint8_t hp[DUST_HP_KEY_BYTES])
{
	uint8_t m[DUST_HDR_BYTES] = {0};

	dust_siphash128_16_xor(m, tag, hp);
	return m[0];
}

/*
 * The counter whose low 8 bits are lsb closest to the next one expected
 * (RFC 9000 A.3's packet number decoding, 8 bits): a compact packet
 * reordered by under 128 packets, or after under 128 lost, finds its own.
 */
static uint64_t compact_counter(uint64_t expected, uint8_t lsb)
{
	uint64_t c = (expected & ~(uint64_t)0xff) | lsb;

	if (c + 128 <= expected && c < UINT64_MAX - 256)
		return c + 256;
	if (c > expected + 128 && c >= 256)
		return c - 256;
	return c;
}

DUST_EXPORT int dust_compact_seal(struct dust_session *s, const uint8_t *pt, size_t ptlen,
                                  size_t total, uint8_t *out)
{
	uint8_t ad[DUST_HDR_BYTES], keybuf[DUST_KEY_BYTES];
	size_t ctlen = total - DUST_COMPACT_OVERHEAD;
	struct aead_op op;
	uint64_t counter;

	if (!ptlen || total > DUST_COMPACT_MAX || total < DUST_COMPACT_OVERHEAD + ptlen)
		return -EMSGSIZE;
	counter = __atomic_fetch_add(&s->tx_counter, 1, __ATOMIC_RELAXED);
	if (counter >= DUST_REJECT_AFTER_PACKETS)
		return -EKEYEXPIRED;
	memmove(out + 1, pt, ptlen);
	memset(out + 1 + ptlen, 0, ctlen - ptlen);
	compact_ad(ad, counter, ctlen);
	op = (struct aead_op){.key = tx_key_for(s, counter, keybuf),
	                      .ad = ad,
	                      .src = out + 1,
	                      .dst = out + 1,
	                      .tag = out + 1 + ctlen,
	                      .len = (uint32_t)ctlen,
	                      .suite = s->suite};
	nonce_make(op.nonce, counter);
	aead_seal_burst(&op, 1);
	sodium_memzero(keybuf, sizeof(keybuf));
	if (!op.ok)
		return -ENOTSUP;
	out[0] = (uint8_t)counter ^ compact_mask(op.tag, s->tx_hp);
	return (int)total;
}

DUST_EXPORT enum dust_drop dust_compact_open(struct dust_session *s, uint32_t now_s,
                                             const uint8_t *pkt, size_t len, uint8_t *pt,
                                             size_t *ptlen)
{
	uint8_t ad[DUST_HDR_BYTES], keybuf[DUST_KEY_BYTES];
	const uint8_t *tag;
	struct aead_op op;
	uint64_t counter;
	size_t ctlen;

	if (len <= DUST_COMPACT_OVERHEAD || len > DUST_COMPACT_MAX)
		return DUST_DROP_TRUNCATED;
	ctlen = len - DUST_COMPACT_OVERHEAD;
	tag = pkt + len - DUST_MAC_BYTES;
	counter = compact_counter(s->replay.top, pkt[0] ^ compact_mask(tag, s->rx_hp));
	if (!dust_replay_check(&s->replay, counter))
		return DUST_DROP_REPLAY;
	if (s->rx_forged >= forgery_limit(s->suite))
		return DUST_DROP_AUTH;
	op = (struct aead_op){.key = rx_key_for(s, counter >> DUST_KEY_EPOCH_LOG, keybuf),
	                      .ad = ad,
	                      .src = pkt + 1,
	                      .dst = rx_scratch,
	                      .tag = (uint8_t *)tag,
	                      .len = (uint32_t)ctlen,
	                      .suite = s->suite};
	if (!op.key)
		return DUST_DROP_AUTH;
	compact_ad(ad, counter, ctlen);
	nonce_make(op.nonce, counter);
	aead_open_burst(&op, 1);
	if (!op.ok) {
		s->rx_forged++;
		sodium_memzero(keybuf, sizeof(keybuf));
		return DUST_DROP_AUTH;
	}
	if (!dust_replay_update(&s->replay, counter)) {
		sodium_memzero(rx_scratch, ctlen);
		sodium_memzero(keybuf, sizeof(keybuf));
		return DUST_DROP_REPLAY;
	}
	rx_epoch_advance(s, counter >> DUST_KEY_EPOCH_LOG, op.key);
	sodium_memzero(keybuf, sizeof(keybuf));
	memcpy(pt, rx_scratch, ctlen);
	sodium_memzero(rx_scratch, ctlen);
	s->last_rx_s = now_s;
	*ptlen = ctlen;
	return DUST_OK;
}
