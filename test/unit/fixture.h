/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared fixture for libdust unit tests: a server identity, a store with one
 * invitation in a fresh temp directory, a client identity, and helpers to
 * bring up a session pair through a real intro.
 */
#ifndef DUST_FIXTURE_H
#define DUST_FIXTURE_H

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dust.h"
#include <sodium.h>

#define FIX_NOW_MS UINT64_C(1800000000000) /* 2027-01-15, fixed for determinism */
#define FIX_NOW_S  ((uint32_t)(FIX_NOW_MS / 1000))

struct fixture {
	char dir[64];
	char store_path[128];
	struct dust_identity server, client;
	struct dust_invite inv;
	struct dust_server srv;
	struct dust_rng rng;
	struct dust_pad pad;
	struct dust_limits lim;
	struct dust_session cs, ss; /* client and server ends */
};

/* CHECK_MAIN's setup for the tests that need only the library initialised. */
static inline void fix_dust_init(void)
{
	CHECK(dust_init() == 0);
}

static inline void fix_rng_seed(struct dust_rng *rng, uint8_t seed)
{
	memset(rng, 0, sizeof(*rng));
	memset(rng->key, seed, sizeof(rng->key));
	rng->pos = DUST_RNG_BUF_BYTES; /* refill on first use: deterministic stream */
}

static inline void fix_init(struct fixture *f)
{
	struct dust_ipaddr addr, tun;
	struct dust_store *st;

	memset(f, 0, sizeof(*f));
	CHECK(dust_init() == 0);
	snprintf(f->dir, sizeof(f->dir), "/tmp/dust-unit-XXXXXX");
	CHECK(mkdtemp(f->dir) != NULL);
	snprintf(f->store_path, sizeof(f->store_path), "%s/store", f->dir);
	CHECK(dust_identity_generate(&f->server) == 0);
	CHECK(dust_identity_generate(&f->client) == 0);
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0);
	CHECK(dust_ipaddr_parse(&tun, "10.9.0.2") == 0);
	CHECK(dust_invite_new(&f->inv, &f->server, &addr, 4433, &tun, 24, FIX_NOW_S + 3600) == 0);
	st = dust_store_open(f->store_path, DUST_STORE_CREATE, &f->server);
	CHECK(st != NULL);
	CHECK(dust_store_add(st, &f->inv) == 0);
	CHECK(dust_store_save(st) == 0);
	CHECK(dust_store_tick(st, FIX_NOW_S) >= 0);
	f->srv.id = f->server;
	f->srv.store = st;
	dust_limits_default(&f->srv.lim);
	f->lim = f->srv.lim;
	fix_rng_seed(&f->rng, 7);
	dust_pad_default(&f->pad);
}

static inline void fix_reopen_store(struct fixture *f)
{
	dust_store_close(f->srv.store);
	f->srv.store = dust_store_open(f->store_path, 0, &f->server);
	if (!f->srv.store)
		fprintf(stderr, "  reopen: %s\n", dust_last_error());
	CHECK(f->srv.store != NULL);
	if (f->srv.store)
		CHECK(dust_store_tick(f->srv.store, FIX_NOW_S) >= 0);
}

static inline void fix_fini(struct fixture *f)
{
	char cmd[128];

	dust_store_close(f->srv.store);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "  could not remove %s\n", f->dir);
}

static inline struct dust_endpoint fix_endpoint(const char *ip, uint16_t port)
{
	struct dust_endpoint ep = {.port = port};

	(void)dust_ipaddr_parse(&ep.ip, ip);
	return ep;
}

/*
 * The server's answer from ss, opened by cs (SPEC.md §5.1): both ends then
 * hold the session's keys. Checks the keepalive after the block opens.
 */
static inline void fix_answer(struct fixture *f, struct dust_session *ss, struct dust_session *cs,
                              uint32_t now_s)
{
	uint8_t ans[512];
	struct dust_seg seg[2];
	enum dust_drop drop;
	size_t used = 0;
	int n = dust_intro_answer_build(ss, &f->rng, &f->pad, now_s, ans, sizeof(ans));

	CHECK(n > DUST_ANSWER_BYTES);
	if (n <= 0)
		return;
	CHECK_EQ(dust_intro_answer_open(cs, ans, (size_t)n, &used), DUST_OK);
	CHECK_EQ(used, (size_t)DUST_ANSWER_BYTES);
	CHECK_EQ(dust_datagram_open(cs, &f->lim, now_s, ans, (size_t)n, used, seg, 2, &drop), 1u);
	CHECK_EQ(drop, DUST_OK);
	CHECK_EQ(seg[0].len, 0);
}

/* Intro from the fixture's client at now_ms; returns the server's verdict. */
static inline enum dust_drop fix_connect(struct fixture *f, uint64_t now_ms)
{
	uint8_t buf[2048];
	struct dust_endpoint from = fix_endpoint("198.51.100.7", 40000);
	size_t used = 0;
	int n = dust_intro_build(&f->inv, &f->client, &f->rng, &f->pad, now_ms, buf, sizeof(buf),
	                         &f->cs);

	enum dust_drop d;

	CHECK(n >= DUST_INTRO_MIN_BYTES);
	if (n < 0)
		return DUST_DROP_MAX;
	d = dust_intro_accept(&f->srv, buf, (size_t)n, now_ms, &from, NULL, &f->ss, &used, NULL);
	if (d == DUST_OK)
		fix_answer(f, &f->ss, &f->cs, (uint32_t)(now_ms / 1000));
	return d;
}

/*
 * fix_connect at FIX_NOW_MS into session slots full of fill bytes, as a
 * caller's stack or a reused slot holds: the intro must set every field
 * that matters, none may be left over.
 */
static inline enum dust_drop fix_connect_dirty(struct fixture *f, uint8_t fill)
{
	memset(&f->cs, fill, sizeof(f->cs));
	memset(&f->ss, fill, sizeof(f->ss));
	return fix_connect(f, FIX_NOW_MS);
}

/*
 * An intro of inv (not only the fixture's own invitation) from the
 * fixture's client at now_ms: the server's verdict, the sessions dropped.
 */
static inline enum dust_drop fix_connect_with(struct fixture *f, const struct dust_invite *inv,
                                              uint64_t now_ms)
{
	uint8_t buf[2048];
	struct dust_endpoint from = fix_endpoint("198.51.100.8", 40001);
	struct dust_session cs, ss;
	size_t used = 0;
	int n = dust_intro_build(inv, &f->client, &f->rng, &f->pad, now_ms, buf, sizeof(buf), &cs);

	CHECK(n >= DUST_INTRO_MIN_BYTES);
	return dust_intro_accept(&f->srv, buf, (size_t)n, now_ms, &from, NULL, &ss, &used, NULL);
}

/*
 * Replace path by rename, mode 0600, as a writer (or an attacker with write
 * access) does: a new inode, which a reload reads.
 */
static inline void fix_put_file(const char *path, const char *buf, size_t n)
{
	char tmp[256];
	FILE *fp;

	snprintf(tmp, sizeof(tmp), "%s.put", path);
	fp = fopen(tmp, "wb");
	CHECK(fp && fwrite(buf, 1, n, fp) == n);
	if (fp)
		fclose(fp);
	CHECK(chmod(tmp, 0600) == 0 && rename(tmp, path) == 0);
}

#endif
