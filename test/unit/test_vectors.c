/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Golden vectors: a deterministic intro chained with data, a reply, and an
 * invitation text, all built from fixed keys and a seeded RNG. This test
 * checks the codec still produces the committed bytes (and opens them);
 * test/vectors/refdecode.py checks the same file with an independent
 * implementation. `test_vectors --write FILE` regenerates it.
 */
#include "fixture.h"

#define VEC_NOW_MS   UINT64_C(1800000123456)
#define VEC_PASSWORD "dust vector password"

struct vec {
	char server_sk[65], client_sk[65];
	char intro_dg[4096]; /* intro + 2 data, hex */
	char reply[1024];
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

static void build(struct vec *v, struct fixture *f)
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

	/* the server's reply, through the real accept path */
	{
		struct dust_session ss;
		struct dust_endpoint from = fix_endpoint("198.51.100.7", 40000);
		size_t used;

		f->srv.id = server;
		dust_store_close(f->srv.store);
		f->srv.store = dust_store_open(f->store_path, 0);
		CHECK(f->srv.store != NULL);
		/* replace the fixture's invitation by the vector's */
		remove(f->store_path);
		dust_store_close(f->srv.store);
		f->srv.store = dust_store_open(f->store_path, DUST_STORE_CREATE);
		CHECK(dust_store_add(f->srv.store, &v->inv) == 0);
		CHECK(dust_store_tick(f->srv.store, VEC_NOW_MS / 1000) >= 0);
		CHECK_EQ(dust_intro_accept(&f->srv, dg, off, VEC_NOW_MS, &from, &ss, &used, NULL),
		         DUST_OK);
		memcpy(dg + DUST_DATA_PREFIX, "reply", 5);
		m = dust_data_seal(&ss, &rng, &pad, (uint32_t)(VEC_NOW_MS / 1000), dg, 5,
		                   sizeof(dg));
		CHECK(m > 0);
		hex(v->reply, sizeof(v->reply), dg, (size_t)m);
	}
}

static void write_file(const struct vec *v, const char *path)
{
	FILE *f = fopen(path, "w");
	uint8_t pt[DUST_INVITE_PT_BYTES];
	char pthex[2 * DUST_INVITE_PT_BYTES + 1];

	dust_invite_pack(&v->inv, pt);
	hex(pthex, sizeof(pthex), pt, sizeof(pt));
	fprintf(f, "# Dust v2 golden vectors (SPEC.md §10). Written by test_vectors --write;\n"
	           "# checked by test_vectors (C) and refdecode.py (independent Python).\n");
	fprintf(f, "now_ms: %llu\n", (unsigned long long)VEC_NOW_MS);
	fprintf(f, "server_sk: %s\nclient_sk: %s\n", v->server_sk, v->client_sk);
	fprintf(f, "invite_pt: %s\n", pthex);
	fprintf(f, "intro_datagram: %s\n", v->intro_dg);
	fprintf(f, "expect_data: first data|second\n");
	fprintf(f, "reply: %s\n", v->reply);
	fprintf(f, "expect_reply: reply\n");
	fprintf(f, "password: %s\n", VEC_PASSWORD);
	fprintf(f, "invite_text: %s\n", v->invite_text);
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

static struct vec vec;

static void test_golden_bytes(void)
{
	const char *path = getenv("DUST_VECTORS");
	char *file, got[8192];
	struct fixture f;

	fix_init(&f);
	build(&vec, &f);
	file = path ? slurp(path) : NULL;
	CHECK(file != NULL);
	if (!file)
		goto out;
	CHECK(field(file, "intro_datagram: ", got, sizeof(got)) && strcmp(got, vec.intro_dg) == 0);
	CHECK(field(file, "reply: ", got, sizeof(got)) && strcmp(got, vec.reply) == 0);
	CHECK(field(file, "server_sk: ", got, sizeof(got)) && strcmp(got, vec.server_sk) == 0);
out:
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

int main(int argc, char **argv)
{
	static const struct check_test tests[] = {
	    {"golden_bytes", test_golden_bytes},
	    {"invite_text_opens", test_invite_text_opens},
	};

	if (argc == 3 && strcmp(argv[1], "--write") == 0) {
		struct fixture f;

		fix_init(&f);
		build(&vec, &f);
		CHECK(dust_invite_seal(&vec.inv, VEC_PASSWORD, strlen(VEC_PASSWORD),
		                       vec.invite_text, sizeof(vec.invite_text)) == 0);
		write_file(&vec, argv[2]);
		fix_fini(&f);
		return check_failures != 0;
	}
	return check_run(tests, sizeof(tests) / sizeof(tests[0]), argc > 1 ? argv[1] : NULL);
}
