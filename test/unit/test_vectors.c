/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Golden vectors: a deterministic intro chained with data, a reply, and an
 * invitation text, all built from fixed keys and a seeded RNG. This test
 * checks the codec still produces the committed bytes (and opens them);
 * test/vectors/refdecode.py checks the same file with an independent
 * implementation. `test_vectors --write FILE` regenerates it.
 * The quic profile's vectors (SPEC.md §12) live in their own file,
 * dust-quic.txt (`test_vectors --write-quic FILE`), checked by refquic.py.
 */
#include "fixture.h"
#include "quic.h"

#define VEC_NOW_MS   UINT64_C(1800000123456)
#define VEC_PASSWORD "dust vector password"

struct vec {
	char server_sk[65], client_sk[65];
	char intro_dg[4096]; /* intro + 2 data, hex */
	char eph_sk[65];
	char answer[1024], reply[1024];
	char e1_c2s[1024], e1_s2c[1024]; /* suite 1 file: data of key epoch 1 (§8.1) */
	char invite_text[DUST_INVITE_TEXT_MAX];
	struct dust_invite inv;
};

static void hex(char *out, size_t cap, const uint8_t *b, size_t n)
{
	sodium_bin2hex(out, cap, b, n);
}

static void fixed_identity(struct dust_identity *id, uint8_t seed)
{
	for (int i = 0; i < DUST_KEY_BYTES; i++)
		id->sk[i] = (uint8_t)(seed + i);
	CHECK(crypto_scalarmult_base(id->pk, id->sk) == 0);
}

/* A data packet of key epoch 1 (counter 2^22 + at), hex. */
static void epoch1_packet(struct dust_session *s, struct dust_rng *rng, uint64_t at,
                          const char *text, char *out, size_t cap)
{
	struct dust_pad pad = {.kind = DUST_PAD_UNIFORM, .min = 0, .max = 40};
	uint8_t pkt[256];
	int m;

	s->tx_counter = DUST_KEY_EPOCH_PACKETS + at;
	memcpy(pkt + DUST_DATA_PREFIX, text, strlen(text));
	m = dust_data_seal(s, rng, &pad, (uint32_t)(VEC_NOW_MS / 1000), pkt, strlen(text),
	                   sizeof(pkt));
	CHECK(m > 0);
	hex(out, cap, pkt, m > 0 ? (size_t)m : 0);
}

static void build(struct vec *v, struct fixture *f, uint8_t suite)
{
	struct dust_identity server, client;
	struct dust_ipaddr addr, tun;
	struct dust_rng rng;
	struct dust_pad pad = {.kind = DUST_PAD_UNIFORM, .min = 0, .max = 40};
	struct dust_session cs;
	uint8_t dg[1500];
	int n, m;
	size_t off;

	fixed_identity(&server, 0x10);
	fixed_identity(&client, 0x80);
	hex(v->server_sk, sizeof(v->server_sk), server.sk, 32);
	hex(v->client_sk, sizeof(v->client_sk), client.sk, 32);
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0 &&
	      dust_ipaddr_parse(&tun, "10.9.0.2") == 0);
	CHECK(dust_invite_new(&v->inv, &server, &addr, 4433, &tun, 24, 1900000000) == 0);
	v->inv.suite = suite;
	for (int i = 0; i < DUST_ID_BYTES; i++)
		v->inv.id[i] = (uint8_t)(0xa0 + i);
	for (int i = 0; i < DUST_KEY_BYTES; i++)
		v->inv.secret[i] = (uint8_t)(0x40 + i);
	fix_rng_seed(&rng, 0x33);
	n = dust_intro_build(&v->inv, &client, &rng, &pad, VEC_NOW_MS, dg, sizeof(dg), &cs);
	CHECK(n > 0);
	off = (size_t)n;
	memcpy(dg + off + DUST_DATA_PREFIX, "first data", 10);
	m = dust_data_seal(&cs, &rng, &pad, (uint32_t)(VEC_NOW_MS / 1000), dg + off, 10,
	                   sizeof(dg) - off);
	CHECK(m > 0);
	off += (size_t)m;
	memcpy(dg + off + DUST_DATA_PREFIX, "second", 6);
	m = dust_data_seal(&cs, &rng, &pad, (uint32_t)(VEC_NOW_MS / 1000), dg + off, 6,
	                   sizeof(dg) - off);
	CHECK(m > 0);
	off += (size_t)m;
	hex(v->intro_dg, sizeof(v->intro_dg), dg, off);

	/* the server's answer and reply, through the real accept path, with a fixed share */
	{
		struct dust_session ss;
		struct dust_endpoint from = fix_endpoint("198.51.100.7", 40000);
		struct dust_eph eph;
		size_t used;

		for (int i = 0; i < DUST_KEY_BYTES; i++)
			eph.sk[i] = (uint8_t)(0x60 + i);
		CHECK(crypto_scalarmult_base(eph.pk, eph.sk) == 0);
		hex(v->eph_sk, sizeof(v->eph_sk), eph.sk, sizeof(eph.sk));

		f->srv.id = server;
		dust_store_close(f->srv.store);
		f->srv.store = dust_store_open(f->store_path, 0, &f->server);
		CHECK(f->srv.store != NULL);
		/* replace the fixture's invitation by the vector's */
		remove(f->store_path);
		dust_store_close(f->srv.store);
		f->srv.store = dust_store_open(f->store_path, DUST_STORE_CREATE, &f->server);
		CHECK(dust_store_add(f->srv.store, &v->inv) == 0);
		CHECK(dust_store_tick(f->srv.store, VEC_NOW_MS / 1000) >= 0);
		CHECK_EQ(
		    dust_intro_accept(&f->srv, dg, off, VEC_NOW_MS, &from, &eph, &ss, &used, NULL),
		    DUST_OK);
		m = dust_intro_answer_build(&ss, &rng, &pad, (uint32_t)(VEC_NOW_MS / 1000), dg,
		                            sizeof(dg));
		CHECK(m > DUST_ANSWER_BYTES);
		hex(v->answer, sizeof(v->answer), dg, m > 0 ? (size_t)m : 0);
		CHECK_EQ(dust_intro_answer_open(&cs, dg, (size_t)m, &used), DUST_OK);
		memcpy(dg + DUST_DATA_PREFIX, "reply", 5);
		m = dust_data_seal(&ss, &rng, &pad, (uint32_t)(VEC_NOW_MS / 1000), dg, 5,
		                   sizeof(dg));
		CHECK(m > 0);
		hex(v->reply, sizeof(v->reply), dg, (size_t)m);
		if (suite != DUST_SUITE_CHACHA20POLY1305) {
			epoch1_packet(&cs, &rng, 5, "epoch one up", v->e1_c2s, sizeof(v->e1_c2s));
			epoch1_packet(&ss, &rng, 9, "epoch one down", v->e1_s2c, sizeof(v->e1_s2c));
		}
	}
}

static void write_file(const struct vec *v, const char *path)
{
	FILE *f = fopen(path, "w");
	uint8_t pt[DUST_INVITE_PT_BYTES];
	char pthex[2 * DUST_INVITE_PT_BYTES + 1];

	dust_invite_pack(&v->inv, pt);
	hex(pthex, sizeof(pthex), pt, sizeof(pt));
	if (v->inv.suite == DUST_SUITE_CHACHA20POLY1305)
		fprintf(f,
		        "# Dust v2 golden vectors (SPEC.md §10). Written by test_vectors --write;\n"
		        "# checked by test_vectors (C) and refdecode.py (independent Python).\n");
	else
		fprintf(
		    f,
		    "# Dust v2 golden vectors, suite 1 = AES-256-GCM (SPEC.md §6.4, §10), with\n"
		    "# a data packet of key epoch 1 each way (§8.1). Written by test_vectors\n"
		    "# --write-aesgcm; checked by test_vectors (C) and refdecode.py (Python).\n");
	fprintf(f, "now_ms: %llu\n", (unsigned long long)VEC_NOW_MS);
	fprintf(f, "server_sk: %s\nclient_sk: %s\n", v->server_sk, v->client_sk);
	fprintf(f, "invite_pt: %s\n", pthex);
	fprintf(f, "intro_datagram: %s\n", v->intro_dg);
	fprintf(f, "expect_data: first data|second\n");
	fprintf(f, "server_eph_sk: %s\n", v->eph_sk);
	fprintf(f, "answer: %s\n", v->answer);
	fprintf(f, "reply: %s\n", v->reply);
	fprintf(f, "expect_reply: reply\n");
	fprintf(f, "password: %s\n", VEC_PASSWORD);
	fprintf(f, "invite_text: %s\n", v->invite_text);
	if (v->inv.suite != DUST_SUITE_CHACHA20POLY1305)
		fprintf(f,
		        "epoch1_c2s: %s\nexpect_epoch1_c2s: epoch one up\n"
		        "epoch1_s2c: %s\nexpect_epoch1_s2c: epoch one down\n",
		        v->e1_c2s, v->e1_s2c);
	fclose(f);
}

static const char *field(const char *file, const char *key, char *out, size_t cap)
{
	const char *p = strstr(file, key);

	if (!p)
		return NULL;
	p += strlen(key);
	snprintf(out, cap, "%.*s", (int)strcspn(p, "\n"), p);
	return out;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[65536];
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The golden file that env names, read; NULL (a failed CHECK) where it cannot be. */
static char *golden_file(const char *env)
{
	const char *path = getenv(env);
	char *file = path ? slurp(path) : NULL;

	CHECK(file != NULL);
	return file;
}

/* The file's value for key is want (what this build made again). */
static bool field_is(const char *file, const char *key, const char *want)
{
	char got[8192]; /* the longest value: a quic hello's 2 x 1250 bytes, in hex */

	return field(file, key, got, sizeof(got)) && strcmp(got, want) == 0;
}

static struct vec vec;

/*
 * fix_init, v built again under suite, and the exchange's three datagrams
 * (intro, answer, reply) compared with the golden file env names: the file,
 * for the suite's own fields, or NULL.
 */
static char *golden_exchange(struct vec *v, struct fixture *f, uint8_t suite, const char *env)
{
	char *file;

	fix_init(f);
	build(v, f, suite);
	file = golden_file(env);
	if (file) {
		CHECK(field_is(file, "intro_datagram: ", v->intro_dg));
		CHECK(field_is(file, "answer: ", v->answer));
		CHECK(field_is(file, "reply: ", v->reply));
	}
	return file;
}

static void test_golden_bytes(void)
{
	struct fixture f;
	char *file = golden_exchange(&vec, &f, DUST_SUITE_CHACHA20POLY1305, "DUST_VECTORS");

	if (file)
		CHECK(field_is(file, "server_sk: ", vec.server_sk));
	fix_fini(&f);
}

static struct vec gvec;

/* Suite 1: the same exchange under AES-256-GCM, and packets of key epoch 1. */
static void test_aesgcm_golden_bytes(void)
{
	struct fixture f;
	char *file;

	/* registered only where the suite exists (main's build always): see main */
	CHECK(dust_suite_available(DUST_SUITE_AES256GCM));
	file = golden_exchange(&gvec, &f, DUST_SUITE_AES256GCM, "DUST_AESGCM_VECTORS");
	if (file) {
		CHECK(field_is(file, "epoch1_c2s: ", gvec.e1_c2s));
		CHECK(field_is(file, "epoch1_s2c: ", gvec.e1_s2c));
		/* and it differs from suite 0's: the suite byte reached the AEAD */
		CHECK(strcmp(gvec.intro_dg, vec.intro_dg) != 0);
	}
	fix_fini(&f);
}

static void test_invite_text_opens(void)
{
	const char *path = getenv("DUST_VECTORS");
	char *file = path ? slurp(path) : NULL, text[512];
	struct dust_invite inv;

	CHECK(file && field(file, "invite_text: ", text, sizeof(text)));
	if (!file)
		return;
	CHECK(dust_invite_open(&inv, text, VEC_PASSWORD, strlen(VEC_PASSWORD)) == 0);
	CHECK(memcmp(inv.secret, vec.inv.secret, DUST_KEY_BYTES) == 0);
	CHECK(inv.port == 4433 && inv.expiry == 1900000000);
}

/* ---- quic profile (SPEC.md §12) ------------------------------------------ */

#define QVEC_COVER "www.example.com"

struct qvec {
	char invite_pt[2 * DUST_INVITE_PT_MAX + 1];
	char eph_sk[65];
	char initial[2 * DUST_QUIC_HELLO_BYTES + 1], answer[2 * 1500 + 1], tail[2 * 256 + 1];
	char dk[2 * 2400 + 1];
	char c2s[1024], s2c[1024];
};

/* A session end's data packet behind its 1-RTT short header. */
static void short_packet(struct dust_session *s, struct dust_rng *rng, const char *text, char *out,
                         size_t cap)
{
	struct dust_pad pad = {.kind = DUST_PAD_UNIFORM, .min = 0, .max = 40};
	uint8_t pkt[256];
	size_t pre = dust_quic_tx_prefix(s), len = strlen(text);
	int m;

	memcpy(pkt + pre + DUST_DATA_PREFIX, text, len);
	m = dust_data_seal(s, rng, &pad, (uint32_t)(VEC_NOW_MS / 1000), pkt + pre, len,
	                   sizeof(pkt) - pre);
	CHECK(m > 0);
	if (m <= 0)
		return;
	dust_quic_short_put(s, rng, pkt);
	hex(out, cap, pkt, pre + (size_t)m);
}

/*
 * The fixed quic handshake: the same keys as the v2 vectors, a quic
 * invitation for QVEC_COVER on 443, a hand-made server ephemeral, and one
 * seeded rng for both ends (the client's, then the server's draws).
 */
static void build_quic(struct qvec *q, struct fixture *f)
{
	struct dust_identity server, client;
	struct dust_invite inv;
	struct dust_ipaddr addr, tun;
	struct dust_quic_client qc;
	struct dust_eph eph;
	struct dust_quic_accept acc;
	struct dust_session cs, ss;
	struct dust_endpoint from = fix_endpoint("198.51.100.7", 40000);
	struct dust_rng rng;
	uint8_t pt[DUST_INVITE_PT_MAX], dg[DUST_QUIC_HELLO_BYTES], answer[1500], tail[256];
	int n, a, t;

	fixed_identity(&server, 0x10);
	fixed_identity(&client, 0x80);
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0 &&
	      dust_ipaddr_parse(&tun, "10.9.0.2") == 0);
	CHECK(dust_invite_new(&inv, &server, &addr, 443, &tun, 24, 1900000000) == 0);
	for (int i = 0; i < DUST_ID_BYTES; i++)
		inv.id[i] = (uint8_t)(0xb0 + i);
	for (int i = 0; i < DUST_KEY_BYTES; i++)
		inv.secret[i] = (uint8_t)(0x50 + i);
	inv.profile = DUST_PROFILE_QUIC;
	CHECK(dust_invite_cover_set(&inv, QVEC_COVER) == 0);
	CHECK_EQ(dust_invite_pt_len(&inv), (size_t)DUST_INVITE_PT_MAX);
	dust_invite_pack_full(&inv, pt);
	hex(q->invite_pt, sizeof(q->invite_pt), pt, sizeof(pt));
	for (int i = 0; i < DUST_KEY_BYTES; i++)
		eph.sk[i] = (uint8_t)(0x60 + i);
	CHECK(crypto_scalarmult_base(eph.pk, eph.sk) == 0);
	hex(q->eph_sk, sizeof(q->eph_sk), eph.sk, sizeof(eph.sk));

	fix_rng_seed(&rng, 0x44);
	n = dust_quic_intro_build(&inv, &client, &rng, VEC_NOW_MS, dg, sizeof(dg), &qc);
	CHECK_EQ(n, DUST_QUIC_HELLO_BYTES);
	if (n <= 0)
		return;
	hex(q->initial, sizeof(q->initial), dg, (size_t)n);

	f->srv.id = server;
	dust_store_close(f->srv.store);
	remove(f->store_path);
	f->srv.store = dust_store_open(f->store_path, DUST_STORE_CREATE, &f->server);
	CHECK(f->srv.store && dust_store_add(f->srv.store, &inv) == 0);
	CHECK(dust_store_tick(f->srv.store, VEC_NOW_MS / 1000) >= 0);
	CHECK_EQ(dust_quic_intro_accept(&f->srv, &rng, dg, (size_t)n, VEC_NOW_MS, &from, &eph, &ss,
	                                &acc, NULL),
	         DUST_OK);
	a = dust_quic_answer_build(&ss, &acc, &rng, (uint32_t)(VEC_NOW_MS / 1000), answer,
	                           sizeof(answer));
	CHECK(a > 0);
	if (a <= 0)
		return;
	hex(q->answer, sizeof(q->answer), answer, (size_t)a);
	t = dust_quic_answer_tail_build(&ss, &rng, (uint32_t)(VEC_NOW_MS / 1000), tail,
	                                sizeof(tail));
	CHECK(t > 0);
	if (t <= 0)
		return;
	hex(q->tail, sizeof(q->tail), tail, (size_t)t);
	/* the client's ML-KEM key: what the reference decoder decapsulates with */
	hex(q->dk, sizeof(q->dk), qc.dk, sizeof(qc.dk));
	CHECK_EQ(dust_quic_answer_open(&qc, &f->lim, (uint32_t)(VEC_NOW_MS / 1000), answer,
	                               (size_t)a, tail, (size_t)t, &cs),
	         DUST_OK);
	/* the client draws its spin bit from the system rng: fix it for the vector */
	cs.spin = 0;
	short_packet(&cs, &rng, "quic c2s", q->c2s, sizeof(q->c2s));
	short_packet(&ss, &rng, "quic s2c", q->s2c, sizeof(q->s2c));
}

static void write_quic_file(const struct vec *v, const struct qvec *q, const char *path)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	if (!f)
		return;
	fprintf(f, "# Dust quic-profile golden vectors (SPEC.md §12). Written by\n"
	           "# test_vectors --write-quic; checked by test_vectors (C) and\n"
	           "# refquic.py (independent Python).\n");
	fprintf(f, "now_ms: %llu\n", (unsigned long long)VEC_NOW_MS);
	fprintf(f, "server_sk: %s\nclient_sk: %s\n", v->server_sk, v->client_sk);
	fprintf(f, "invite_pt: %s\n", q->invite_pt);
	fprintf(f, "cover_sni: %s\n", QVEC_COVER);
	fprintf(f, "server_eph_sk: %s\n", q->eph_sk);
	fprintf(f, "client_initial: %s\n", q->initial);
	fprintf(f, "server_answer: %s\n", q->answer);
	fprintf(f, "server_answer_tail: %s\n", q->tail);
	fprintf(f, "client_mlkem_dk: %s\n", q->dk);
	fprintf(f, "c2s_short: %s\n", q->c2s);
	fprintf(f, "expect_c2s: quic c2s\n");
	fprintf(f, "s2c_short: %s\n", q->s2c);
	fprintf(f, "expect_s2c: quic s2c\n");
	fclose(f);
}

static struct qvec qvec;

static void test_quic_golden_bytes(void)
{
	struct fixture f;
	char *file;

	fix_init(&f);
	build_quic(&qvec, &f);
	file = golden_file("DUST_QUIC_VECTORS");
	if (!file)
		goto out;
	CHECK(field_is(file, "invite_pt: ", qvec.invite_pt));
	CHECK(field_is(file, "server_eph_sk: ", qvec.eph_sk));
	CHECK(field_is(file, "client_initial: ", qvec.initial));
	CHECK(field_is(file, "server_answer: ", qvec.answer));
	CHECK(field_is(file, "server_answer_tail: ", qvec.tail));
	CHECK(field_is(file, "client_mlkem_dk: ", qvec.dk));
	CHECK(field_is(file, "c2s_short: ", qvec.c2s));
	CHECK(field_is(file, "s2c_short: ", qvec.s2c));
out:
	fix_fini(&f);
}

/* A vector of suite, its invitation sealed under VEC_PASSWORD, written to path. */
static void write_vec(struct vec *v, struct fixture *f, uint8_t suite, const char *path)
{
	build(v, f, suite);
	CHECK(dust_invite_seal(&v->inv, VEC_PASSWORD, strlen(VEC_PASSWORD), v->invite_text,
	                       sizeof(v->invite_text)) == 0);
	write_file(v, path);
}

/*
 * --write, --write-aesgcm or --write-quic (mode): the vectors written to
 * path from this build, not checked against a file; 1 if a CHECK failed,
 * -1 if mode is none of these (then argv[1] names a test).
 */
static int write_mode(const char *mode, const char *path)
{
	struct fixture f;
	bool quic = strcmp(mode, "--write-quic") == 0, gcm = strcmp(mode, "--write-aesgcm") == 0;

	if (!quic && !gcm && strcmp(mode, "--write") != 0)
		return -1;
	fix_init(&f);
	if (quic) {
		build(&vec, &f, DUST_SUITE_CHACHA20POLY1305);
		build_quic(&qvec, &f);
		write_quic_file(&vec, &qvec, path);
	} else if (gcm) {
		write_vec(&gvec, &f, DUST_SUITE_AES256GCM, path);
	} else {
		write_vec(&vec, &f, DUST_SUITE_CHACHA20POLY1305, path);
	}
	fix_fini(&f);
	return check_failures != 0;
}

static const struct check_test tests[] = {
    {"golden_bytes", test_golden_bytes},
    {"invite_text_opens", test_invite_text_opens},
    {"quic_golden_bytes", test_quic_golden_bytes},
    {"aesgcm_golden_bytes", test_aesgcm_golden_bytes},
};

int main(int argc, char **argv)
{
	size_t n = CHECK_COUNT(tests);
	int rc = argc == 3 ? write_mode(argv[1], argv[2]) : -1;

	if (rc >= 0)
		return rc;
	CHECK(dust_init() == 0);
#ifndef DUST_TEST_IPSECMB
	/* aesgcm_golden_bytes is the last: left out where the suite cannot exist */
	if (!dust_suite_available(DUST_SUITE_AES256GCM)) {
		printf("not registered: aesgcm_golden_bytes (-Dcrypto=sodium, and libsodium has "
		       "no AES-256-GCM on this CPU: it needs AES-NI)\n");
		n--;
	}
#endif
	return check_main(argc, argv, tests, n, NULL);
}
