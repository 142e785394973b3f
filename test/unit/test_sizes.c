/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic profile's size model (SPEC §12.4, sizes.c): every data datagram
 * has one of the cover's sizes for its direction (or the bound, for what is
 * bigger than every one of them), never more than the bound, and opens
 * intact; without the model the same traffic spreads over hundreds of sizes.
 */
#include "fixture.h"
#include "quic.h"
#include "gaps.h"
#include "quic_gaps.h"
#include "quic_sizes.h"

#define N_PKTS 20000

static bool in_table(const uint16_t *t, unsigned n, size_t v)
{
	for (unsigned i = 0; i < n; i++)
		if (t[i] == v)
			return true;
	return false;
}

/*
 * Seal N_PKTS packets of s with data lengths spread over 0..inner max, open
 * each at peer; count[size] (2048 of them, zeroed first) for each datagram
 * size (short header included); *bigger, where given, the packets whose
 * datagram is over 475 B before any padding.
 */
static void seal_spread(struct fixture *f, struct dust_session *s, struct dust_session *peer,
                        const struct dust_pad *pad, unsigned *count, size_t *bigger)
{
	static uint8_t pkt[2048];
	size_t pre = dust_quic_tx_prefix(s), inner = dust_quic_tx_inner_max(s);

	memset(count, 0, 2048 * sizeof(*count));
	if (bigger)
		*bigger = 0;
	for (unsigned i = 0; i < N_PKTS; i++) {
		/* half small (ACKs, keepalives), half anywhere up to the inner MTU */
		size_t len = i & 1 ? dust_rng_uniform(&f->rng, 120)
		                   : dust_rng_uniform(&f->rng, (uint32_t)inner + 1);
		struct dust_seg seg;
		size_t used = 0;
		int n;

		memset(pkt + pre + DUST_DATA_PREFIX, 0x5a, len);
		n = dust_data_seal(s, &f->rng, pad, FIX_NOW_S, pkt + pre, len,
		                   dust_quic_tx_cap(s, sizeof(pkt) - pre));
		CHECK(n > 0);
		if (n <= 0)
			return;
		CHECK(pre + (size_t)n <= dust_quic_tx_dgram_max(s));
		CHECK_EQ(
		    dust_data_open(peer, &f->lim, FIX_NOW_S, pkt + pre, (size_t)n, &seg, &used),
		    DUST_OK);
		CHECK_EQ(seg.len, len);
		count[pre + (size_t)n]++;
		if (bigger && len + DUST_DATA_OVERHEAD + pre > 475)
			(*bigger)++;
	}
}

static unsigned distinct(const unsigned *count)
{
	unsigned d = 0;

	for (unsigned i = 0; i < 2048; i++)
		d += count[i] != 0;
	return d;
}

/* Mean datagram size: what the shaping costs, side by side (printed, not asserted). */
static double mean_size(const unsigned *count)
{
	double sum = 0, n = 0;

	for (unsigned i = 0; i < 2048; i++) {
		sum += (double)i * count[i];
		n += count[i];
	}
	return n ? sum / n : 0;
}

static void quic_pair(struct fixture *f)
{
	fix_init(f);
	CHECK_EQ(fix_connect(f, FIX_NOW_MS), DUST_OK);
	/* the model reads only profile, role and CID length: make the pair quic's */
	f->cs.profile = f->ss.profile = DUST_PROFILE_QUIC;
	f->cs.cid_len = f->ss.cid_len = DUST_QUIC_SERVER_CID_LEN;
}

/*
 * Sessions built in uninitialised memory (a caller's stack) pad as any
 * other: nothing left over there (a path limit) may hold the padding back.
 */
static void test_fresh_session(void)
{
	static unsigned count[2048];
	struct fixture f;

	fix_init(&f);
	CHECK_EQ(fix_connect_dirty(&f, 0xef), DUST_OK);
	CHECK_EQ(f.ss.path_state, DUST_PATH_VALID);
	CHECK_EQ(f.cs.path_state, DUST_PATH_VALID);
	f.cs.profile = f.ss.profile = DUST_PROFILE_QUIC;
	f.cs.cid_len = f.ss.cid_len = DUST_QUIC_SERVER_CID_LEN;
	seal_spread(&f, &f.ss, &f.cs, &f.pad, count, NULL);
	for (unsigned v = 0; v < 2048; v++)
		if (count[v] && !in_table(quic_s2c_size, sizeof(quic_s2c_size) / 2, v)) {
			printf("  a %u-byte datagram from a fresh session: not a cover size\n", v);
			CHECK(0);
			break;
		}
	fix_fini(&f);
}

static void test_client_sizes(void)
{
	static unsigned count[2048];
	struct fixture f;
	size_t bigger;

	quic_pair(&f);
	seal_spread(&f, &f.cs, &f.ss, &f.pad, count, &bigger);
	for (unsigned v = 0; v < 2048; v++)
		if (count[v] && v != DUST_QUIC_CLIENT_DGRAM_MAX)
			CHECK(in_table(quic_c2s_size, sizeof(quic_c2s_size) / 2, v));
	/* what the cover never sent upstream (over 475 B) fills the bound, and only that */
	CHECK_EQ(count[DUST_QUIC_CLIENT_DGRAM_MAX], bigger);
	CHECK(distinct(count) <= sizeof(quic_c2s_size) / 2 + 1);
	printf("client: %u sizes over %d packets (%zu at the bound), mean %.0f B\n",
	       distinct(count), N_PKTS, bigger, mean_size(count));
	fix_fini(&f);
}

static void test_server_sizes(void)
{
	static unsigned count[2048];
	struct fixture f;

	quic_pair(&f);
	seal_spread(&f, &f.ss, &f.cs, &f.pad, count, NULL);
	for (unsigned v = 0; v < 2048; v++)
		if (count[v])
			CHECK(in_table(quic_s2c_size, sizeof(quic_s2c_size) / 2, v));
	CHECK(distinct(count) <= sizeof(quic_s2c_size) / 2);
	/* the cover's full-size datagrams are its commonest downstream: so are ours */
	CHECK(count[DUST_QUIC_SERVER_DGRAM_MAX] > N_PKTS / 4);
	printf("server: %u sizes over %d packets, mean %.0f B\n", distinct(count), N_PKTS,
	       mean_size(count));
	fix_fini(&f);
}

/* Small packets take the cover's small sizes in its proportions (a loose check). */
static void test_weights(void)
{
	static unsigned count[2048];
	struct fixture f;
	unsigned small = 0, total = 0, want = 0, fit = 0;
	double p, d;

	quic_pair(&f);
	memset(count, 0, sizeof(count));
	for (unsigned i = 0; i < N_PKTS; i++) {
		uint8_t pkt[1500];
		size_t pre = dust_quic_tx_prefix(&f.cs);
		int n = dust_data_seal(&f.cs, &f.rng, &f.pad, FIX_NOW_S, pkt + pre, 0,
		                       dust_quic_tx_cap(&f.cs, sizeof(pkt) - pre));

		CHECK(n > 0);
		count[pre + (size_t)(n > 0 ? n : 0)]++;
	}
	/*
	 * A keepalive (41 B behind a 9-byte short header) can take the cover's
	 * sizes from 43 B on: the small ones (43..47 B) as often, relative to the
	 * rest, as the cover sent them (22 of 214 of its datagrams of 41 B or
	 * more: 10.3%). Five standard deviations over N_PKTS draws: +-1.1%.
	 */
	for (unsigned i = 0; i < sizeof(quic_c2s_size) / 2; i++) {
		uint32_t k = quic_c2s_cum[i] - (i ? quic_c2s_cum[i - 1] : 0);

		if (quic_c2s_size[i] >= 41)
			fit += k;
		if (quic_c2s_size[i] >= 41 && quic_c2s_size[i] <= 47)
			want += k;
	}
	for (unsigned v = 43; v <= 47; v++)
		small += count[v];
	for (unsigned v = 0; v < 2048; v++)
		total += count[v];
	CHECK_EQ(total, N_PKTS);
	p = (double)want / fit;
	d = (double)small / total - p;
	printf("keepalives at 43..47 B: %.2f%% (cover: %.2f%%)\n", 100.0 * small / total, 100 * p);
	CHECK(d * d < 25 * p * (1 - p) / N_PKTS); /* |d| under five sigma */
	fix_fini(&f);
}

/*
 * An address not yet validated gets at most 3x what came from it (SPEC §9.1):
 * the model pads within what is left of that credit, so a small packet to a
 * new address still goes out instead of being refused for its padding.
 */
static void test_path_credit(void)
{
	static uint8_t pkt[2048];
	struct fixture f;
	size_t pre;
	unsigned sent = 0;

	quic_pair(&f);
	pre = dust_quic_tx_prefix(&f.ss);
	for (unsigned i = 0; i < 200; i++) {
		size_t len = dust_rng_uniform(&f.rng, 60);
		int n;

		/* 50 bytes came from the new address: 150 may go back */
		dust_path_start(&f.ss, DUST_PATH_AWAIT_ECHO, 50, &f.rng);
		n = dust_data_seal(&f.ss, &f.rng, &f.pad, FIX_NOW_S, pkt + pre, len,
		                   dust_quic_tx_cap(&f.ss, sizeof(pkt) - pre));
		CHECK(n > 0);
		CHECK(pre + (size_t)n <= 150);
		sent += dust_path_may_send(&f.ss, pre + (size_t)n);
	}
	CHECK_EQ(sent, 200);
	/* once valid, the whole cover range is open again */
	dust_path_start(&f.ss, DUST_PATH_VALID, 0, &f.rng);
	{
		size_t most = 0;

		for (unsigned i = 0; i < 200; i++) {
			int n = dust_data_seal(&f.ss, &f.rng, &f.pad, FIX_NOW_S, pkt + pre, 10,
			                       dust_quic_tx_cap(&f.ss, sizeof(pkt) - pre));

			CHECK(n > 0);
			if (pre + (size_t)n > most)
				most = pre + (size_t)n;
		}
		CHECK(most > 150);
	}
	fix_fini(&f);
}

/*
 * Path MTU discovery as quic-go's (SPEC §12.4): nothing before the path is
 * valid, from a client or off the quic profile; the search starts with the
 * first call, probes 30 ms on; each echo raises the bound (1352, 1402,
 * 1427, 1439, then no more: under 20 from 1452), a wrong cookie does not;
 * the server's sizes then reach over 1252 and stay within the bound, each
 * one the cover's; a probe unanswered for 1 s lowers the top; a new path
 * starts again at 1252.
 */
static void test_pmtu(void)
{
	static const uint16_t steps[] = {1352, 1402, 1427, 1439};
	static unsigned count[2048];
	uint8_t msg[DUST_PATH_MSG_BYTES], cookie[DUST_PATH_COOKIE_BYTES],
	    bad[DUST_PATH_COOKIE_BYTES];
	struct fixture f;
	uint64_t t = 1000000;
	unsigned over = 0;

	quic_pair(&f);
	CHECK_EQ(dust_pmtu_probe(&f.cs, &f.rng, t, msg), 0u); /* a client probes nothing */
	dust_path_start(&f.ss, DUST_PATH_AWAIT_ECHO, 50, &f.rng);
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t, msg), 0u);
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t + 100, msg), 0u); /* not while unproved */
	dust_path_start(&f.ss, DUST_PATH_VALID, 0, &f.rng);
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t, msg), 0u); /* starts */
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t + 29, msg), 0u);
	for (unsigned i = 0; i < 4; i++) {
		t += i ? 25 : 30;
		CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t, msg), (size_t)steps[i]);
		CHECK_EQ(dust_path_msg_parse(msg, sizeof(msg), cookie), DUST_PATH_CHALLENGE);
		CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t + 100, msg), 0u); /* one in flight */
		memcpy(bad, cookie, sizeof(bad));
		bad[3] ^= 1;
		CHECK(!dust_pmtu_echo(&f.ss, bad, t));
		CHECK(!dust_path_echo(&f.ss, cookie)); /* no move validated by it */
		CHECK(dust_pmtu_echo(&f.ss, cookie, t));
		CHECK(!dust_pmtu_echo(&f.ss, cookie, t)); /* once */
		CHECK_EQ(dust_quic_tx_dgram_max(&f.ss), (size_t)steps[i]);
		CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t + 24, msg), 0u);
	}
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t + 5000, msg), 0u); /* 1452 - 1439 < 20: done */
	CHECK_EQ(dust_quic_tx_dgram_max(&f.cs), (size_t)DUST_QUIC_CLIENT_DGRAM_MAX);
	seal_spread(&f, &f.ss, &f.cs, &f.pad, count, NULL);
	for (unsigned v = 0; v < 2048; v++) {
		if (count[v] &&
		    (v > 1439 || !in_table(quic_s2c_size, sizeof(quic_s2c_size) / 2, v)))
			CHECK(0);
		over += v > DUST_QUIC_SERVER_DGRAM_MAX ? count[v] : 0;
	}
	printf("  bound 1439: %u of %d server datagrams over 1252, mean %.0f B\n", over, N_PKTS,
	       mean_size(count));
	CHECK(over > N_PKTS / 10);

	/* a new path: 1252 again; this time 1352 is lost, so the next try is 1302 */
	dust_path_start(&f.ss, DUST_PATH_VALID, 0, &f.rng);
	CHECK_EQ(dust_quic_tx_dgram_max(&f.ss), (size_t)DUST_QUIC_SERVER_DGRAM_MAX);
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t, msg), 0u);
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t + 30, msg), 1352u);
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t + 1029, msg), 0u);
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t + 1030, msg), 0u); /* lost: the top is 1352 */
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t + 1054, msg), 0u);
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t + 1060, msg), 1302u);
	CHECK_EQ(dust_path_msg_parse(msg, sizeof(msg), cookie), DUST_PATH_CHALLENGE);
	CHECK(dust_pmtu_echo(&f.ss, cookie, t + 1061));
	CHECK_EQ(dust_pmtu_probe(&f.ss, &f.rng, t + 1100, msg), 1327u);
	fix_fini(&f);
}

/* [quic] sizes = padding: the uniform padding's hundreds of sizes (the model is what narrows them).
 */
static void test_model_off(void)
{
	static unsigned count[2048];
	struct fixture f;
	struct dust_pad pad;

	quic_pair(&f);
	pad = f.pad;
	pad.model = 0;
	seal_spread(&f, &f.cs, &f.ss, &pad, count, NULL);
	printf("model off: %u client sizes, mean %.0f B\n", distinct(count), mean_size(count));
	CHECK(distinct(count) > 400);
	fix_fini(&f);
}

/*
 * The pacer's gaps (gaps.c): each draw lies within half a microsecond of one
 * of the cover's gaps for the sender's direction, and the draws take the
 * cover's weights: the share at the server's commonest gap (5 us: 504 of
 * 1185) within five standard deviations.
 */
static bool gap_in_table(const uint16_t *t, unsigned n, uint32_t ns)
{
	for (unsigned i = 0; i < n; i++)
		if (ns >= t[i] * 1000u - 500u && ns < t[i] * 1000u + 500u)
			return true;
	return false;
}

static void test_gaps(void)
{
	struct dust_rng rng;
	unsigned bad_c = 0, bad_s = 0, at5 = 0;
	double p = (double)(quic_s2c_gap_cum[1] - quic_s2c_gap_cum[0]) / quic_s2c_gap_cum[40], d;

	dust_rng_init(&rng);
	CHECK_EQ(quic_s2c_gap_us[1], 5);
	for (unsigned i = 0; i < N_PKTS; i++) {
		uint32_t c = dust_quic_gap_ns(DUST_ROLE_CLIENT, &rng);
		uint32_t s = dust_quic_gap_ns(DUST_ROLE_SERVER, &rng);

		bad_c += !gap_in_table(quic_c2s_gap_us, sizeof(quic_c2s_gap_us) / 2, c);
		bad_s += !gap_in_table(quic_s2c_gap_us, sizeof(quic_s2c_gap_us) / 2, s);
		at5 += s >= 4500 && s < 5500;
	}
	CHECK_EQ(bad_c, 0);
	CHECK_EQ(bad_s, 0);
	d = (double)at5 / N_PKTS - p;
	printf("server gaps at 5 us: %.2f%% (cover: %.2f%%)\n", 100.0 * at5 / N_PKTS, 100 * p);
	CHECK(d * d < 25 * p * (1 - p) / N_PKTS);
	dust_rng_wipe(&rng);
}

/*
 * ACK-sized datagrams (dust_quic_ack_put): every one a cover size under any
 * Dust packet behind the sender's short header, with the peer's header (the
 * gateway finds the session by it), in the cover's proportions; none in the
 * random profile or where it does not fit.
 */
static void ack_sizes(struct fixture *f, const struct dust_session *s,
                      const struct dust_session *peer, const uint16_t *size, const uint32_t *cum,
                      unsigned nsizes)
{
	static unsigned count[2048];
	size_t pre = dust_quic_tx_prefix(s), floor = pre + DUST_DATA_MIN_BYTES;
	unsigned nsmall = 0, bad = 0;
	uint8_t dg[64];
	double p, d;

	memset(count, 0, sizeof(count));
	for (unsigned i = 0; i < N_PKTS; i++) {
		size_t len = dust_quic_ack_put(s, &f->rng, dg, sizeof(dg));

		bad += len < pre + 1 || len >= floor || !in_table(size, nsizes, len) ||
		       !dust_quic_ack_match(peer, dg, len) || dust_quic_short_match(peer, dg, len);
		count[len]++;
	}
	CHECK_EQ(bad, 0);
	while (nsmall < nsizes && size[nsmall] < floor)
		nsmall++;
	CHECK(nsmall > 0);
	/* the commonest small size as often as in the cover (5 sigma) */
	p = (double)cum[0] / cum[nsmall - 1];
	d = (double)count[size[0]] / N_PKTS - p;
	CHECK(d * d < 25 * p * (1 - p) / N_PKTS);
	printf("%s: ACK-sized %zu..%zu B, %u B %.1f%% (cover %.1f%%)\n",
	       s->role == DUST_ROLE_CLIENT ? "client" : "server", (size_t)size[0],
	       (size_t)size[nsmall - 1], size[0], 100.0 * count[size[0]] / N_PKTS, 100 * p);
	CHECK_EQ(dust_quic_ack_put(s, &f->rng, dg, size[0] - 1), 0); /* no room: none */
}

static void test_ack_sizes(void)
{
	struct fixture f;
	uint8_t dg[64];

	quic_pair(&f);
	ack_sizes(&f, &f.cs, &f.ss, quic_c2s_size, quic_c2s_cum, sizeof(quic_c2s_size) / 2);
	ack_sizes(&f, &f.ss, &f.cs, quic_s2c_size, quic_s2c_cum, sizeof(quic_s2c_size) / 2);
	f.cs.profile = DUST_PROFILE_RANDOM;
	CHECK_EQ(dust_quic_ack_put(&f.cs, &f.rng, dg, sizeof(dg)), 0);
	fix_fini(&f);
}

static const struct check_test tests[] = {
    {"client_sizes", test_client_sizes},
    {"server_sizes", test_server_sizes},
    {"weights", test_weights},
    {"path_credit", test_path_credit},
    {"model_off", test_model_off},
    {"gaps", test_gaps},
    {"fresh_session", test_fresh_session},
    {"ack_sizes", test_ack_sizes},
    {"pmtu", test_pmtu},
};

CHECK_MAIN(tests, NULL)
