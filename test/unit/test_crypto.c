/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The AEAD backends and suites (SPEC.md §6.4) and key update (§8.1): both
 * backends give the same bytes for both suites; a burst with a forged packet
 * leaves it untouched; one session crosses several key epochs both ways with
 * reordering around each switch and loses nothing; the integrity limit.
 */
#include <pthread.h>

#include "aead.h"
#include "fixture.h"
#include "siphash.h"

static void fix_suite(struct fixture *f, uint8_t suite)
{
	fix_init(f);
	f->inv.suite = suite;
	dust_store_at(f->srv.store, 0)->inv.suite = suite;
	CHECK_EQ(fix_connect(f, FIX_NOW_MS), DUST_OK);
	CHECK_EQ(f->cs.suite, suite);
	CHECK_EQ(f->ss.suite, suite);
}

static bool have_ipsecmb(void)
{
	return dust_crypto_select("ipsec-mb") == 0;
}

#ifdef DUST_TEST_IPSECMB /* two backends to compare */
/* Seal one packet of len bytes at counter with the chosen backend; returns its length. */
static int seal_with(const char *backend, struct fixture *f, uint64_t counter, uint8_t *out,
                     size_t len)
{
	struct dust_pad nopad = {.kind = DUST_PAD_UNIFORM};

	CHECK(dust_crypto_select(backend) == 0);
	f->cs.tx_counter = counter;
	for (size_t i = 0; i < len; i++)
		out[DUST_DATA_PREFIX + i] = (uint8_t)(i * 7 + counter);
	return dust_data_seal(&f->cs, &f->rng, &nopad, FIX_NOW_S, out, len, 4096);
}

static void backends_agree(uint8_t suite)
{
	static const size_t lens[] = {0, 1, 15, 16, 17, 63, 64, 65, 255, 512, 1400, 2047};
	uint8_t a[4096], b[4096];
	struct fixture f;

	/* registered only in a build with libipsec-mb (main): there it must load */
	CHECK(have_ipsecmb());
	if (!have_ipsecmb())
		return;
	fix_suite(&f, suite);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		/* counters in epochs 0 and 2: the update keys agree too */
		for (uint64_t c = 3; c < 3 * DUST_KEY_EPOCH_PACKETS;
		     c += 2 * DUST_KEY_EPOCH_PACKETS) {
			int na = seal_with("ipsec-mb", &f, c, a, lens[i]);
			int nb = seal_with("sodium", &f, c, b, lens[i]);
			struct dust_seg seg;
			size_t used;

			CHECK(na > 0 && na == nb);
			CHECK(memcmp(a, b, (size_t)na) == 0);
			/* and each opens what the other sealed (server side moves to the epoch) */
			if (c >> DUST_KEY_EPOCH_LOG != 0)
				continue;
			for (int k = 0; k < 2; k++) {
				memcpy(b, a, (size_t)na);
				dust_replay_init(&f.ss.replay);
				CHECK(dust_crypto_select(k ? "sodium" : "ipsec-mb") == 0);
				CHECK_EQ(dust_data_open(&f.ss, &f.lim, FIX_NOW_S, b, (size_t)na,
				                        &seg, &used),
				         DUST_OK);
				CHECK(seg.len == lens[i]);
			}
		}
	}
	dust_crypto_select("ipsec-mb");
	fix_fini(&f);
}

static void test_backends_agree_chacha(void)
{
	backends_agree(DUST_SUITE_CHACHA20POLY1305);
}

static void test_backends_agree_aesgcm(void)
{
	/* libipsec-mb's AES-256-GCM does not depend on the CPU as libsodium's does */
	CHECK(dust_suite_available(DUST_SUITE_AES256GCM));
	backends_agree(DUST_SUITE_AES256GCM);
}
#endif

/*
 * A burst of datagrams, one forged in the middle: the others open, the
 * forged one keeps its bytes exactly (the gateway may try it as an intro).
 */
static void burst_forgery(uint8_t suite)
{
	enum { N = 8 };
	uint8_t buf[N][1500], copy[1500];
	struct dust_session *sess[N];
	uint8_t *dg[N];
	uint16_t len[N];
	struct dust_rx_result res[N];
	struct fixture f;

	fix_suite(&f, suite);
	for (int i = 0; i < N; i++) {
		int n;

		memset(buf[i] + DUST_DATA_PREFIX, 'a' + i, 1000);
		n = dust_data_seal(&f.cs, &f.rng, &f.pad, FIX_NOW_S, buf[i], 1000, sizeof(buf[i]));
		CHECK(n > 0);
		sess[i] = &f.ss;
		dg[i] = buf[i];
		len[i] = (uint16_t)n;
	}
	buf[3][len[3] - 1] ^= 1; /* the tag */
	memcpy(copy, buf[3], len[3]);
	CHECK_EQ(dust_datagram_open_burst(sess, dg, len, N, &f.lim, FIX_NOW_S, res), N - 1);
	for (int i = 0; i < N; i++) {
		if (i == 3) {
			CHECK_EQ(res[i].drop, DUST_DROP_AUTH);
			CHECK_EQ(res[i].nseg, 0);
			CHECK(memcmp(copy, buf[3], len[3]) == 0);
			continue;
		}
		CHECK_EQ(res[i].drop, DUST_OK);
		CHECK_EQ(res[i].nseg, 1);
		CHECK_EQ(res[i].seg[0].len, 1000);
		CHECK(buf[i][res[i].seg[0].off] == 'a' + i);
		CHECK(buf[i][res[i].seg[0].off + 999] == 'a' + i);
	}
	CHECK_EQ(f.ss.rx_forged, 1);
	fix_fini(&f);
}

static void test_burst_forgery(void)
{
	burst_forgery(DUST_SUITE_CHACHA20POLY1305);
	if (dust_suite_available(DUST_SUITE_AES256GCM))
		burst_forgery(DUST_SUITE_AES256GCM);
}

/*
 * 100 sessions with their own keys in one burst: AES-GCM's per-thread cache
 * of expanded keys (2-way sets) must split the burst where a set is full.
 */
static void many_sessions(uint8_t suite)
{
	enum { N = 100 };
	static struct dust_session cs[N], ss[N];
	static uint8_t buf[N][256];
	struct dust_session *sess[N];
	uint8_t *dg[N];
	uint16_t len[N];
	static struct dust_rx_result res[N];
	struct dust_rng rng;
	struct dust_pad pad;
	unsigned ok = 0;

	fix_rng_seed(&rng, 9);
	dust_pad_default(&pad);
	for (int i = 0; i < N; i++) {
		int n;

		memset(&cs[i], 0, sizeof(cs[i]));
		randombytes_buf(cs[i].tx_key, sizeof(cs[i].tx_key));
		/* every 5th key in one cache set: a chunk meets a full set and splits */
		if (i % 5 == 0)
			cs[i].tx_key[0] = cs[i].tx_key[1] = 0;
		randombytes_buf(cs[i].tx_hp, sizeof(cs[i].tx_hp));
		cs[i].suite = suite;
		ss[i] = cs[i];
		memcpy(ss[i].rx_key, cs[i].tx_key, DUST_KEY_BYTES);
		memcpy(ss[i].rx_hp, cs[i].tx_hp, DUST_HP_KEY_BYTES);
		memset(buf[i] + DUST_DATA_PREFIX, i, 100);
		n = dust_data_seal(&cs[i], &rng, &pad, FIX_NOW_S, buf[i], 100, sizeof(buf[i]));
		CHECK(n > 0);
		sess[i] = &ss[i];
		dg[i] = buf[i];
		len[i] = (uint16_t)n;
	}
	struct dust_limits lim;

	dust_limits_default(&lim);
	CHECK_EQ(dust_datagram_open_burst(sess, dg, len, N, &lim, FIX_NOW_S, res), N);
	for (int i = 0; i < N; i++)
		ok += res[i].drop == DUST_OK && res[i].nseg == 1 &&
		      buf[i][res[i].seg[0].off + 99] == (uint8_t)i;
	CHECK_EQ(ok, N);
}

static void test_many_sessions(void)
{
	many_sessions(DUST_SUITE_CHACHA20POLY1305);
	if (dust_suite_available(DUST_SUITE_AES256GCM))
		many_sessions(DUST_SUITE_AES256GCM);
}

/* A tiny deterministic shuffle within windows of w: reordering that stays in the replay window. */
static void shuffle(unsigned *v, unsigned n, unsigned w, uint32_t *seed)
{
	for (unsigned base = 0; base < n; base += w)
		for (unsigned i = base; i < base + w && i < n; i++) {
			unsigned lim = (base + w < n ? base + w : n) - base, j;

			*seed = *seed * 1103515245u + 12345u;
			j = base + (*seed >> 8) % lim;
			unsigned t = v[i];
			v[i] = v[j];
			v[j] = t;
		}
}

/*
 * From tx->tx_counter, send n packets, deliver them to rx in a shuffled
 * order (windows of 24 straddling the epoch switch), expect every one once.
 */
static void cross(struct fixture *f, struct dust_session *tx, struct dust_session *rx, unsigned n,
                  uint32_t *seed)
{
	enum { MAXN = 96 };
	static uint8_t pkt[MAXN][256];
	unsigned order[MAXN], got = 0;
	int plen[MAXN];

	for (unsigned i = 0; i < n; i++) {
		memset(pkt[i] + DUST_DATA_PREFIX, (int)i, 40);
		plen[i] =
		    dust_data_seal(tx, &f->rng, &f->pad, FIX_NOW_S, pkt[i], 40, sizeof(pkt[i]));
		CHECK(plen[i] > 0);
		order[i] = i;
	}
	shuffle(order, n, 24, seed);
	for (unsigned k = 0; k < n; k++) {
		unsigned i = order[k];
		struct dust_seg seg;
		size_t used;
		uint8_t work[256];
		enum dust_drop d;

		memcpy(work, pkt[i], (size_t)plen[i]);
		d = dust_data_open(rx, &f->lim, FIX_NOW_S, work, (size_t)plen[i], &seg, &used);
		CHECK_EQ(d, DUST_OK);
		if (d == DUST_OK && seg.len == 40 && work[seg.off] == (uint8_t)i)
			got++;
		/* a replayed copy is still refused across the switch */
		if (k % 17 == 0)
			CHECK_EQ(dust_data_open(rx, &f->lim, FIX_NOW_S, pkt[i], (size_t)plen[i],
			                        &seg, &used),
			         DUST_DROP_REPLAY);
	}
	CHECK_EQ(got, n);
}

static void key_update(uint8_t suite)
{
	struct fixture f;
	uint32_t seed = 1;

	fix_suite(&f, suite);
	for (uint64_t e = 1; e <= 5; e++) {
		/* test hook: jump each sender to 40 packets before the next epoch */
		f.cs.tx_counter = e * DUST_KEY_EPOCH_PACKETS - 40;
		f.ss.tx_counter = e * DUST_KEY_EPOCH_PACKETS - 40;
		cross(&f, &f.cs, &f.ss, 80, &seed);
		cross(&f, &f.ss, &f.cs, 80, &seed);
		CHECK_EQ(f.ss.rx_epoch, e);
		CHECK_EQ(f.cs.rx_epoch, e);
	}
	/*
	 * A sender that jumps epochs ahead (a migrated quic session moves its
	 * counter 2^32 on): the receiver derives that key and follows; a forged
	 * packet of a far epoch moves nothing; the old epoch is then refused.
	 */
	{
		uint8_t pkt[256], bad[256], old[256];
		struct dust_seg seg;
		size_t used;
		int n, no;

		f.cs.tx_counter = 5 * DUST_KEY_EPOCH_PACKETS + 100;
		no = dust_data_seal(&f.cs, &f.rng, &f.pad, FIX_NOW_S, old, 10, sizeof(old));
		f.cs.tx_counter = 5 * DUST_KEY_EPOCH_PACKETS + (UINT64_C(1) << 32);
		n = dust_data_seal(&f.cs, &f.rng, &f.pad, FIX_NOW_S, pkt, 10, sizeof(pkt));
		CHECK(n > 0 && no > 0);
		memcpy(bad, pkt, (size_t)n);
		bad[n - 1] ^= 4;
		CHECK_EQ(dust_data_open(&f.ss, &f.lim, FIX_NOW_S, bad, (size_t)n, &seg, &used),
		         DUST_DROP_AUTH);
		CHECK_EQ(f.ss.rx_epoch, 5);
		CHECK_EQ(dust_data_open(&f.ss, &f.lim, FIX_NOW_S, pkt, (size_t)n, &seg, &used),
		         DUST_OK);
		CHECK_EQ(f.ss.rx_epoch, 5 + 1024);
		CHECK(dust_data_open(&f.ss, &f.lim, FIX_NOW_S, old, (size_t)no, &seg, &used) !=
		      DUST_OK);
		cross(&f, &f.cs, &f.ss, 80, &seed);
	}
	/* epoch keys differ from epoch 0's and between directions */
	CHECK(memcmp(f.cs.rx_ek[0], f.cs.rx_key, DUST_KEY_BYTES) != 0);
	CHECK(memcmp(f.cs.rx_ek[0], f.ss.rx_ek[0], DUST_KEY_BYTES) != 0);
	fix_fini(&f);
}

static void test_key_update_chacha(void)
{
	key_update(DUST_SUITE_CHACHA20POLY1305);
}

static void test_key_update_aesgcm(void)
{
	if (dust_suite_available(DUST_SUITE_AES256GCM))
		key_update(DUST_SUITE_AES256GCM);
}

/* Past the integrity limit a session opens nothing, so its client re-intros. */
static void test_integrity_limit(void)
{
	struct fixture f;
	uint8_t pkt[256], bad[256];
	struct dust_seg seg;
	size_t used;
	int n;

	fix_suite(&f, DUST_SUITE_CHACHA20POLY1305);
	f.ss.rx_forged = DUST_FORGERY_LIMIT_CHACHA20POLY1305 - 1;
	n = dust_data_seal(&f.cs, &f.rng, &f.pad, FIX_NOW_S, pkt, 10, sizeof(pkt));
	CHECK(n > 0);
	memcpy(bad, pkt, (size_t)n);
	bad[n - 1] ^= 0x80;
	CHECK_EQ(dust_data_open(&f.ss, &f.lim, FIX_NOW_S, bad, (size_t)n, &seg, &used),
	         DUST_DROP_AUTH);
	CHECK(f.ss.rx_forged == DUST_FORGERY_LIMIT_CHACHA20POLY1305);
	CHECK_EQ(dust_data_open(&f.ss, &f.lim, FIX_NOW_S, pkt, (size_t)n, &seg, &used),
	         DUST_DROP_AUTH);
	fix_fini(&f);
}

/* ---- AES-GCM's expanded-key cache (aead_ipsecmb.c) --------------------------- */

enum { GCM_PT = 64, GCM_BUF = GCM_PT + DUST_MAC_BYTES, GCM_KEYS = 600 };

static bool gcm_cache_here(void)
{
	CHECK(dust_init() == 0); /* libsodium's AES-GCM (the reference) needs it */
	if (have_ipsecmb() && dust_suite_available(DUST_SUITE_AES256GCM))
		return true;
	printf("     (no libipsec-mb AES-GCM here: no cache to test)\n");
	return false;
}

/* Seal buffer i under keys[i] on backend, all n in one burst. */
/* Op i of a burst: sealed in place, GCM_PT bytes of buf then the tag, nonce i. */
static void op_fill(struct aead_op *op, const uint8_t *key, const uint8_t *ad, uint8_t *buf,
                    unsigned i, uint8_t suite)
{
	*op = (struct aead_op){.key = key,
	                       .ad = ad,
	                       .src = buf,
	                       .dst = buf,
	                       .tag = buf + GCM_PT,
	                       .len = GCM_PT,
	                       .suite = suite};
	memcpy(op->nonce, &i, sizeof(i));
}

static void gcm_seal(const char *backend, uint8_t (*keys)[DUST_KEY_BYTES], unsigned n,
                     uint8_t (*buf)[GCM_BUF])
{
	static struct aead_op op[GCM_KEYS];
	uint8_t ad[AEAD_AD_BYTES] = {7};

	CHECK(dust_crypto_select(backend) == 0);
	for (unsigned i = 0; i < n; i++) {
		memset(buf[i], (int)i, GCM_PT);
		op_fill(&op[i], keys[i], ad, buf[i], i, DUST_SUITE_AES256GCM);
	}
	aead_seal_burst(op, n);
	for (unsigned i = 0; i < n; i++)
		CHECK(op[i].ok);
	dust_crypto_select("ipsec-mb");
}

static unsigned gcm_cached(uint8_t (*keys)[DUST_KEY_BYTES], unsigned n)
{
	unsigned c = 0;

	for (unsigned i = 0; i < n; i++)
		c += aead_key_cached(keys[i]);
	return c;
}

/*
 * Keys alike in their first 16 bytes: once they all went to one cache set
 * (its index was two key bytes), so a thread kept two of them. Sets are now
 * a keyed hash of the whole key: 600 such keys (over twice the cache) seal
 * as libsodium does, and 16 of them fit side by side.
 */
static void test_gcm_cache_alike_keys(void)
{
	static uint8_t keys[GCM_KEYS][DUST_KEY_BYTES], a[GCM_KEYS][GCM_BUF], b[GCM_KEYS][GCM_BUF];
	unsigned c;

	if (!gcm_cache_here())
		return;
	randombytes_buf(keys, sizeof(keys));
	for (unsigned i = 1; i < GCM_KEYS; i++)
		memcpy(keys[i], keys[0], 16);
	for (int round = 0; round < 2; round++) { /* the second one meets a full cache */
		gcm_seal("ipsec-mb", keys, GCM_KEYS, a);
		gcm_seal("sodium", keys, GCM_KEYS, b);
		CHECK(memcmp(a, b, sizeof(a)) == 0);
	}
	gcm_seal("ipsec-mb", keys, 16, a);
	c = gcm_cached(keys, 16);
	printf("     16 keys alike in 16 bytes: %u cached (a key-byte index gave them one 2-way "
	       "set)\n",
	       c);
	CHECK(c >= 12);
}

/* A forgotten key leaves this thread's cache at once, and comes back when used. */
static void test_gcm_cache_forget(void)
{
	static uint8_t keys[2][DUST_KEY_BYTES], a[2][GCM_BUF], b[2][GCM_BUF];
	const uint8_t *k0 = keys[0];

	if (!gcm_cache_here())
		return;
	randombytes_buf(keys, sizeof(keys));
	gcm_seal("ipsec-mb", keys, 2, a);
	CHECK_EQ(gcm_cached(keys, 2), 2);
	aead_forget(&k0, 1);
	CHECK(!aead_key_cached(keys[0]));
	CHECK(aead_key_cached(keys[1]));
	gcm_seal("ipsec-mb", keys, 2, a);
	gcm_seal("sodium", keys, 2, b);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	CHECK_EQ(gcm_cached(keys, 2), 2);
}

/*
 * The data key a packet of this counter uses (SPEC §8.1): a client is at key
 * epoch 1 from its intro's answer on (§5.1), a server at 0.
 */
static const uint8_t *tx_key_of(const struct dust_session *s, uint64_t counter)
{
	uint64_t ep = counter >> DUST_KEY_EPOCH_LOG;

	return ep ? (const uint8_t *)s->txk[ep & 1].w : s->tx_key;
}

static const uint8_t *rx_key_of(const struct dust_session *s, uint64_t counter)
{
	uint64_t ep = counter >> DUST_KEY_EPOCH_LOG;

	return ep ? s->rx_ek[ep % 3] : s->rx_key;
}

/* dust_session_wipe takes a session's keys out of the cache; a live copy re-expands them. */
static void test_gcm_cache_session_wipe(void)
{
	struct dust_session copy;
	struct fixture f;
	uint8_t pkt[256];
	struct dust_seg seg;
	size_t used;
	int n;

	if (!gcm_cache_here())
		return;
	fix_suite(&f, DUST_SUITE_AES256GCM);
	for (int dir = 0; dir < 2; dir++) {
		struct dust_session *tx = dir ? &f.ss : &f.cs, *rx = dir ? &f.cs : &f.ss;
		uint64_t c = tx->tx_counter;

		n = dust_data_seal(tx, &f.rng, &f.pad, FIX_NOW_S, pkt, 10, sizeof(pkt));
		CHECK(n > 0);
		CHECK(aead_key_cached(tx_key_of(tx, c)));
		copy = *tx;
		dust_session_wipe(&copy);
		CHECK(!aead_key_cached(tx_key_of(tx, c)));
		CHECK_EQ(dust_data_open(rx, &f.lim, FIX_NOW_S, pkt, (size_t)n, &seg, &used),
		         DUST_OK);
		CHECK(aead_key_cached(rx_key_of(rx, c)));
	}
	fix_fini(&f);
}

/*
 * Keys a session leaves behind as it moves through the key epochs (§8.1)
 * leave the cache then: the sender's epoch e - 2 when it prepares e, the
 * receiver's epoch 0 once it is out of the window, and the epoch whose slot
 * the next one takes.
 */
static void test_gcm_cache_epochs(void)
{
	static const uint64_t at[] = {3, DUST_KEY_EPOCH_PACKETS + 3, 2 * DUST_KEY_EPOCH_PACKETS + 3,
	                              3 * DUST_KEY_EPOCH_PACKETS + 3};
	uint8_t pkt[4][256], k0[DUST_KEY_BYTES], k1[DUST_KEY_BYTES];
	struct dust_seg seg;
	struct fixture f;
	size_t used;
	int n[4];

	if (!gcm_cache_here())
		return;
	fix_suite(&f, DUST_SUITE_AES256GCM);
	memcpy(k0, f.cs.tx_key, sizeof(k0));
	memcpy(k1, f.cs.txk[1].w, sizeof(k1)); /* epoch 1, ready from the start */
	for (int i = 0; i < 4; i++) {
		f.cs.tx_counter = at[i];
		n[i] = dust_data_seal(&f.cs, &f.rng, &f.pad, FIX_NOW_S, pkt[i], 10, sizeof(pkt[i]));
		CHECK(n[i] > 0);
		CHECK_EQ(aead_key_cached(k0), i < 2);
		CHECK_EQ(aead_key_cached(k1), i == 1 || i == 2);
	}
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(
		    dust_data_open(&f.ss, &f.lim, FIX_NOW_S, pkt[i], (size_t)n[i], &seg, &used),
		    DUST_OK);
		CHECK_EQ(aead_key_cached(k0), i < 2);
		CHECK_EQ(aead_key_cached(k1), i == 1 || i == 2);
	}
	fix_fini(&f);
}

/* Another thread's cache: its copies go before its next burst; too far behind, all go. */
struct gcm_peer {
	pthread_barrier_t step;
	uint8_t keys[4][DUST_KEY_BYTES];
	bool before, after, kept, ring_kept, ring_new;
};

static void *gcm_peer_main(void *arg)
{
	struct gcm_peer *p = arg;
	uint8_t buf[2][GCM_BUF];

	gcm_seal("ipsec-mb", p->keys, 2, buf); /* caches 0 and 1 */
	pthread_barrier_wait(&p->step);        /* main forgets key 0 */
	pthread_barrier_wait(&p->step);
	p->before = aead_key_cached(p->keys[0]);
	gcm_seal("ipsec-mb", &p->keys[2], 1, buf);
	p->after = aead_key_cached(p->keys[0]);
	p->kept = aead_key_cached(p->keys[1]);
	pthread_barrier_wait(&p->step); /* main forgets more than the ring holds */
	pthread_barrier_wait(&p->step);
	gcm_seal("ipsec-mb", &p->keys[3], 1, buf);
	p->ring_kept = aead_key_cached(p->keys[1]);
	p->ring_new = aead_key_cached(p->keys[3]);
	return NULL;
}

static void test_gcm_cache_forget_threads(void)
{
	static uint8_t many[1500][DUST_KEY_BYTES];
	const uint8_t *k[1500];
	struct gcm_peer p = {0};
	pthread_t th;

	if (!gcm_cache_here())
		return;
	randombytes_buf(p.keys, sizeof(p.keys));
	randombytes_buf(many, sizeof(many));
	pthread_barrier_init(&p.step, NULL, 2);
	CHECK(pthread_create(&th, NULL, gcm_peer_main, &p) == 0);
	pthread_barrier_wait(&p.step);
	k[0] = p.keys[0];
	aead_forget(k, 1);
	pthread_barrier_wait(&p.step);
	pthread_barrier_wait(&p.step);
	for (int i = 0; i < 1500; i++)
		k[i] = many[i];
	aead_forget(k, 1500);
	pthread_barrier_wait(&p.step);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&p.step);
	CHECK(p.before); /* not touched from here: a job of its may use it */
	CHECK(!p.after);
	CHECK(p.kept);
	CHECK(!p.ring_kept); /* 1500 forgotten > the ring: it could not tell which */
	CHECK(p.ring_new);
}

/*
 * A chunk the manager takes and does not hand back whole: here it refuses
 * the submission (one job has no source). Its seals fail rather than being
 * sealed again in place on libsodium (which would read the NULL source);
 * the ops after it, never submitted, are sealed on libsodium as before; the
 * thread then leaves its manager alone (libsodium, no cached key).
 */
struct lost_chunk {
	unsigned ok_first, ok_rest, right_rest, right_after;
	bool cached_after;
};

static void *lost_chunk_main(void *arg)
{
	enum { N = 100, BAD = 5 }; /* chunk 0: ops 0..63, with BAD; 64..99 wait */
	static uint8_t keys[N][DUST_KEY_BYTES], buf[N][GCM_BUF], ref[N][GCM_BUF];
	static struct aead_op op[N];
	struct lost_chunk *r = arg;
	uint8_t ad[AEAD_AD_BYTES] = {9};

	randombytes_buf(keys, sizeof(keys));
	for (unsigned i = 0; i < N; i++) {
		memset(buf[i], (int)i, GCM_PT);
		memcpy(ref[i], buf[i], GCM_PT);
		op_fill(&op[i], keys[i], ad, buf[i], i, DUST_SUITE_CHACHA20POLY1305);
	}
	for (unsigned i = 0; i < N; i++) {
		struct aead_op o = op[i];

		o.src = o.dst = ref[i];
		o.tag = ref[i] + GCM_PT;
		aead_sodium_seal(&o);
	}
	op[BAD].src = NULL;
	aead_seal_burst(op, N);
	for (unsigned i = 0; i < N; i++) {
		bool right = op[i].ok && memcmp(buf[i], ref[i], GCM_BUF) == 0;

		if (i < 64)
			r->ok_first += op[i].ok;
		else
			r->ok_rest += op[i].ok, r->right_rest += right;
	}
	/* the next burst: libsodium's bytes, nothing in the manager's cache */
	for (unsigned i = 0; i < 2; i++) {
		memset(buf[i], (int)i, GCM_PT);
		op_fill(&op[i], keys[i], ad, buf[i], i, DUST_SUITE_CHACHA20POLY1305);
	}
	op[1].suite = DUST_SUITE_AES256GCM;
	memcpy(ref[1], buf[1], GCM_PT);
	{
		struct aead_op o = op[1];

		o.src = o.dst = ref[1];
		o.tag = ref[1] + GCM_PT;
		aead_sodium_seal(&o);
	}
	aead_seal_burst(op, 2);
	r->right_after = (op[0].ok && memcmp(buf[0], ref[0], GCM_BUF) == 0) +
	                 (op[1].ok && memcmp(buf[1], ref[1], GCM_BUF) == 0);
	r->cached_after = aead_key_cached(keys[1]);
	return NULL;
}

static void test_lost_chunk(void)
{
	struct lost_chunk r = {0};
	pthread_t th;

	if (!gcm_cache_here())
		return;
	/* on a thread of its own: it leaves its manager, the tests after keep theirs */
	CHECK(pthread_create(&th, NULL, lost_chunk_main, &r) == 0);
	pthread_join(th, NULL);
	CHECK_EQ(r.ok_first, 0);
	CHECK_EQ(r.ok_rest, 36);
	CHECK_EQ(r.right_rest, 36);
	CHECK_EQ(r.right_after, 2);
	CHECK(!r.cached_after);
}

static void test_suite_names(void)
{
	CHECK_EQ(dust_suite_parse("aes-256-gcm"), DUST_SUITE_AES256GCM);
	CHECK_EQ(dust_suite_parse("chacha20-poly1305"), DUST_SUITE_CHACHA20POLY1305);
	CHECK_EQ(dust_suite_parse("rot13"), -EINVAL);
	CHECK(dust_suite_available(DUST_SUITE_CHACHA20POLY1305));
	CHECK(!dust_suite_available(DUST_SUITE_COUNT));
	printf("     backend: %s\n", dust_crypto_backend_name());
}

/*
 * The header-protection mask, one packet inline and a burst (AVX-512 lanes
 * where the CPU has them, any count): libsodium's siphashx24 on 16 bytes,
 * XORed in, each packet with its own key.
 */
static void test_siphash_inline(void)
{
	enum { N = 21 };
	uint8_t key[N][16], in[N][16], a[N][16], b[N][16], c[N][16], *pa[N];
	const uint8_t *pin[N], *pkey[N];

	for (int r = 0; r < 500; r++) {
		unsigned n = (unsigned)r % (N + 1);

		randombytes_buf(key, sizeof(key));
		randombytes_buf(in, sizeof(in));
		randombytes_buf(a, sizeof(a));
		if (r == 0)
			memset(key, 0, sizeof(key)), memset(in, 0xff, sizeof(in));
		memcpy(c, a, sizeof(a));
		for (unsigned i = 0; i < N; i++) {
			crypto_shorthash_siphashx24(b[i], in[i], sizeof(in[i]), key[i]);
			for (int j = 0; j < 16; j++)
				b[i][j] ^= a[i][j];
			pa[i] = a[i], pin[i] = in[i], pkey[i] = key[i];
		}
		dust_siphash128_16_xor_burst(pa, pin, pkey, n);
		CHECK(memcmp(a, b, n * sizeof(a[0])) == 0);
		CHECK(memcmp(a[n], c[n], (N - n) * sizeof(a[0])) == 0); /* the rest untouched */
		dust_siphash128_16_xor(c[0], in[0], key[0]);
		CHECK(memcmp(c[0], b[0], 16) == 0);
	}
	/* the 64-bit form over 32 bytes (the AES-GCM cache's set index) */
	for (int r = 0; r < 500; r++) {
		uint8_t k[16], m[32], want[8];
		uint64_t got;

		randombytes_buf(k, sizeof(k));
		randombytes_buf(m, sizeof(m));
		crypto_shorthash_siphash24(want, m, sizeof(m), k);
		got = htole64(dust_siphash64_32(m, k));
		CHECK(memcmp(&got, want, 8) == 0);
	}
}

static const struct check_test tests[] = {
    {"suite_names", test_suite_names},
    {"siphash_inline", test_siphash_inline},
#ifdef DUST_TEST_IPSECMB
    {"backends_agree_chacha", test_backends_agree_chacha},
    {"backends_agree_aesgcm", test_backends_agree_aesgcm},
#endif
    {"burst_forgery", test_burst_forgery},
    {"many_sessions", test_many_sessions},
    {"key_update_chacha", test_key_update_chacha},
    {"key_update_aesgcm", test_key_update_aesgcm},
    {"integrity_limit", test_integrity_limit},
    {"gcm_cache_alike_keys", test_gcm_cache_alike_keys},
    {"gcm_cache_forget", test_gcm_cache_forget},
    {"gcm_cache_session_wipe", test_gcm_cache_session_wipe},
    {"gcm_cache_epochs", test_gcm_cache_epochs},
    {"gcm_cache_forget_threads", test_gcm_cache_forget_threads},
    {"lost_chunk", test_lost_chunk},
};

int main(int argc, char **argv)
{
	/* before anything asks dust_suite_available: libsodium's AES probe needs sodium_init */
	CHECK(dust_init() == 0);
#ifndef DUST_TEST_IPSECMB
	printf("not registered: backends_agree_chacha, backends_agree_aesgcm (this build has no "
	       "libipsec-mb, -Dcrypto=sodium: one backend, nothing to compare)\n");
#endif
	return check_main(argc, argv, tests, CHECK_COUNT(tests), NULL);
}
