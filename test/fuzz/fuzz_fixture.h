/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Deterministic fixture shared by the libFuzzer harnesses and the program
 * that writes their seed corpus: fixed keys, a fixed clock, a session pair
 * and a store holding one invitation. Same bytes in both, so seeds built by
 * mkcorpus authenticate inside the harnesses.
 */
#ifndef DUST_FUZZ_FIXTURE_H
#define DUST_FUZZ_FIXTURE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "dust.h"
#include "quic.h"
#include "mlkem.h"

#define FZ_NOW_MS UINT64_C(1800000000000)
#define FZ_NOW_S  ((uint32_t)(FZ_NOW_MS / 1000))

static inline void fz_die(const char *what)
{
	fprintf(stderr, "fuzz fixture: %s: %s\n", what, dust_last_error());
	abort();
}

/* The ML-KEM-768 keys and ciphertext of fuzz_mlkem and its seeds: d, z, m fixed. */
static inline void fz_mlkem_keys(uint8_t ek[DUST_MLKEM768_EKBYTES],
                                 uint8_t dk[DUST_MLKEM768_DKBYTES],
                                 uint8_t ct[DUST_MLKEM768_CTBYTES], uint8_t ss[32])
{
	uint8_t d[32], z[32], m[32];

	memset(d, 0x4d, sizeof(d));
	memset(z, 0x5a, sizeof(z));
	memset(m, 0x6d, sizeof(m));
	if (dust_mlkem768_keypair_derand(ek, dk, d, z) != 0 ||
	    dust_mlkem768_enc_derand(ct, ss, ek, m) != 0)
		fz_die("mlkem keys");
}

static inline void fz_identity(struct dust_identity *id, uint8_t fill)
{
	memset(id->sk, fill, sizeof(id->sk));
	crypto_scalarmult_base(id->pk, id->sk);
}

static inline void fz_rng(struct dust_rng *rng, uint8_t seed)
{
	memset(rng, 0, sizeof(*rng));
	memset(rng->key, seed, sizeof(rng->key));
	rng->pos = DUST_RNG_BUF_BYTES; /* refill on first use: a fixed stream */
}

static inline void fz_invite(struct dust_invite *inv, const struct dust_identity *server)
{
	memset(inv, 0, sizeof(*inv));
	inv->suite = DUST_SUITE_CHACHA20POLY1305;
	if (dust_ipaddr_parse(&inv->server, "192.0.2.1") ||
	    dust_ipaddr_parse(&inv->tunnel, "10.9.0.2"))
		fz_die("address");
	inv->port = 4433;
	inv->tunnel_prefix = 24;
	memcpy(inv->server_pk, server->pk, DUST_PK_BYTES);
	memset(inv->id, 0x33, sizeof(inv->id));
	memset(inv->secret, 0x44, sizeof(inv->secret));
	inv->expiry = FZ_NOW_S + 3600;
}

/* Client and server ends of one session, keyed with fixed bytes. */
static inline void fz_session_pair(struct dust_session *c, struct dust_session *s)
{
	memset(c, 0, sizeof(*c));
	memset(s, 0, sizeof(*s));
	memset(c->tx_key, 0x51, sizeof(c->tx_key));
	memset(c->tx_hp, 0x52, sizeof(c->tx_hp));
	memset(c->rx_key, 0x53, sizeof(c->rx_key));
	memset(c->rx_hp, 0x54, sizeof(c->rx_hp));
	memcpy(s->rx_key, c->tx_key, sizeof(s->rx_key));
	memcpy(s->rx_hp, c->tx_hp, sizeof(s->rx_hp));
	memcpy(s->tx_key, c->rx_key, sizeof(s->tx_key));
	memcpy(s->tx_hp, c->rx_hp, sizeof(s->tx_hp));
	dust_replay_init(&c->replay);
	dust_replay_init(&s->replay);
	c->role = DUST_ROLE_CLIENT;
	s->role = DUST_ROLE_SERVER;
	c->state = s->state = DUST_SESSION_LIVE;
	if (dust_ipaddr_parse(&s->tunnel, "10.9.0.2"))
		fz_die("address");
	c->tunnel = s->tunnel;
	c->last_rx_s = s->last_rx_s = FZ_NOW_S;
}

/* A temp dir on tmpfs where possible: the intro path fsyncs its journal. */
static inline void fz_tmpdir(char *dir, size_t cap)
{
	snprintf(dir, cap, "/dev/shm/dust-fuzz-XXXXXX");
	if (mkdtemp(dir))
		return;
	snprintf(dir, cap, "/tmp/dust-fuzz-XXXXXX");
	if (!mkdtemp(dir))
		fz_die("mkdtemp");
}

/* A store with the fixture's one invitation, its tag index at FZ_NOW_S. */
static inline struct dust_store *fz_store(const char *path, const struct dust_invite *inv,
                                          const struct dust_identity *server)
{
	struct dust_store *st = dust_store_open(path, DUST_STORE_CREATE, server);

	if (!st)
		fz_die("store open");
	if (dust_store_count(st) == 0 && (dust_store_add(st, inv) || dust_store_save(st)))
		fz_die("store add");
	if (dust_store_tick(st, FZ_NOW_S) < 0)
		fz_die("store tick");
	return st;
}

/*
 * The gateway side of the intro harnesses: an identity, default limits and
 * a store of one invitation in a temp dir, reopened fresh every
 * FZ_REOPEN_EVERY inputs to bound the journal's growth.
 */
enum { FZ_REOPEN_EVERY = 4096 };

struct fz_gw {
	struct dust_server srv;
	struct dust_invite inv;
	char dir[64], path[128], jpath[140];
	unsigned runs;
	bool verbose; /* FUZZ_VERBOSE=1: print each input's outcome (seed checks) */
};

static inline void fz_gw_store_fresh(struct fz_gw *g)
{
	if (g->srv.store)
		dust_store_close(g->srv.store);
	unlink(g->jpath);
	g->srv.store = fz_store(g->path, &g->inv, &g->srv.id);
}

/* invite: fz_invite or fz_quic_invite, the store's one invitation */
static inline void fz_gw_init(struct fz_gw *g,
                              void (*invite)(struct dust_invite *, const struct dust_identity *))
{
	if (dust_init() < 0)
		abort();
	fz_identity(&g->srv.id, 0x11);
	invite(&g->inv, &g->srv.id);
	dust_limits_default(&g->srv.lim);
	fz_tmpdir(g->dir, sizeof(g->dir));
	snprintf(g->path, sizeof(g->path), "%s/store", g->dir);
	snprintf(g->jpath, sizeof(g->jpath), "%s.bind", g->path);
	fz_gw_store_fresh(g);
	g->verbose = getenv("FUZZ_VERBOSE") != NULL;
}

/* Count an input; every FZ_REOPEN_EVERY-th starts on a fresh store. */
static inline void fz_gw_next(struct fz_gw *g)
{
	if (++g->runs % FZ_REOPEN_EVERY == 0)
		fz_gw_store_fresh(g);
}

/* The entry's freshness state cleared, so a crash reproduces from its input alone. */
static inline void fz_gw_entry_reset(struct fz_gw *g)
{
	struct dust_store_entry *e = dust_store_at(g->srv.store, 0);

	e->bound = 0;
	e->bound_at = 0;
	e->last_ts_ms = 0;
	memset(e->client_pk, 0, sizeof(e->client_pk));
	memset(e->static_ss, 0, sizeof(e->static_ss));
	memset(e->last_nonce, 0, sizeof(e->last_nonce));
}

/* The quic-profile invitation of fuzz_quic: the fixture's, with a cover on 443. */
static inline void fz_quic_invite(struct dust_invite *inv, const struct dust_identity *server)
{
	fz_invite(inv, server);
	memset(inv->secret, 0x45, sizeof(inv->secret));
	memset(inv->id, 0x34, sizeof(inv->id));
	inv->profile = DUST_PROFILE_QUIC;
	inv->port = 443;
	if (dust_invite_cover_set(inv, "www.example.com"))
		fz_die("cover");
}

/*
 * The client whose answer fuzz_quic opens: its Initial (dg, 1250 bytes) and
 * pending state qc, from fixed keys and a fixed rng, so that mkcorpus and the
 * harness hold the same client and a seed answer authenticates.
 */
static inline void fz_quic_client(const struct dust_invite *inv, uint8_t *dg, size_t cap,
                                  struct dust_quic_client *qc)
{
	struct dust_identity client;
	struct dust_rng rng;

	fz_identity(&client, 0x22);
	fz_rng(&rng, 0x71);
	if (dust_quic_intro_build(inv, &client, &rng, FZ_NOW_MS, dg, cap, qc) !=
	    DUST_QUIC_HELLO_BYTES)
		fz_die("quic intro");
}

/* The server ephemeral of the seed answer (a fixed key: the harness needs no match). */
static inline void fz_quic_eph(struct dust_eph *eph)
{
	memset(eph->sk, 0x66, sizeof(eph->sk));
	crypto_scalarmult_base(eph->pk, eph->sk);
}

#endif /* DUST_FUZZ_FIXTURE_H */
