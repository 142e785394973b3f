/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The AEAD backends and suites (SPEC.md §6.4) and key update (§8.1): both
 * backends give the same bytes for both suites; a burst with a forged packet
 * leaves it untouched; one session crosses several key epochs both ways with
 * reordering around each switch and loses nothing; the integrity limit.
 */
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

	if (!have_ipsecmb()) {
		printf("     (libipsec-mb not built in: nothing to compare)\n");
		return;
	}
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
	if (!dust_suite_available(DUST_SUITE_AES256GCM))
		return;
	backends_agree(DUST_SUITE_AES256GCM);
}

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
}

int main(int argc, char **argv)
{
	static const struct check_test tests[] = {
	    {"suite_names", test_suite_names},
	    {"siphash_inline", test_siphash_inline},
	    {"backends_agree_chacha", test_backends_agree_chacha},
	    {"backends_agree_aesgcm", test_backends_agree_aesgcm},
	    {"burst_forgery", test_burst_forgery},
	    {"many_sessions", test_many_sessions},
	    {"key_update_chacha", test_key_update_chacha},
	    {"key_update_aesgcm", test_key_update_aesgcm},
	    {"integrity_limit", test_integrity_limit},
	};

	return check_run(tests, sizeof(tests) / sizeof(tests[0]), argc > 1 ? argv[1] : NULL);
}
