/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The store side of a running gateway, without DPDK, for store-concurrent.sh:
 * keeps the file store open, follows it every 20 ms as dustgw's main lcore
 * does, and takes first uses of the invitations dust-invite adds, committed
 * as dustgw commits them (deferred: persist_submit, then persist_poll),
 * returning intros of clients it bound (freshness records) and intros of
 * strangers for them (refused: the binding holds). Prints one line per
 * binding, "ID16 PK16" as dust-invite list shows them.
 * usage: dust-store-binder STORE KEY STOPFILE SKIP-PREFIX
 * Runs until STOPFILE exists; leaves alone invitations whose tunnel address
 * starts with SKIP-PREFIX (the ones the test revokes). Built with the store's
 * test hooks: BINDER_COMPACT_SLACK=N compacts the journal once it is N bytes
 * over its live records (as dustgw does past twice them plus 128 KiB), so
 * that compactions run while dust-invite writes; their count is printed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "dust.h"

extern int dust_store_hook_factor; /* the test build of store.c */
extern off_t dust_store_hook_slack;

#define BATCH   4
#define CLIENTS 64

struct client {
	struct dust_store_entry *e;
	struct dust_identity id;
};

struct binder {
	struct dust_server srv;
	struct dust_rng rng;
	struct dust_pad pad;
	const char *skip;
	uint64_t last_ms;         /* intro timestamps strictly increase: none is a replay */
	struct client c[CLIENTS]; /* the latest clients bound, to come back */
	unsigned bound, returned, strangers, refused;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One intro of client for e's invitation, accepted as the gateway would. */
static enum dust_drop intro(struct binder *b, struct dust_store_entry *e,
                            const struct dust_identity *client, bool *first)
{
	struct dust_endpoint from = {.ip = {.family = 4, .a = {198, 51, 100, 7}}, .port = 7};
	struct dust_intro_info info = {0};
	struct dust_session cs, ss;
	uint8_t dg[2048];
	uint64_t t = now_ms();
	size_t used = 0;
	enum dust_drop d;
	int n;

	if (t <= b->last_ms)
		t = b->last_ms + 1;
	b->last_ms = t;
	n = dust_intro_build(&e->inv, client, &b->rng, &b->pad, t, dg, sizeof(dg), &cs);
	if (n < 0)
		return DUST_DROP_INTRO_UNKNOWN;
	d = dust_intro_accept(&b->srv, dg, (size_t)n, t, &from, NULL, &ss, &used, &info);
	*first = info.first_use;
	dust_session_wipe(&cs);
	dust_session_wipe(&ss);
	return d;
}

static bool skipped(const struct binder *b, const struct dust_store_entry *e)
{
	char addr[64];

	dust_ipaddr_format(&e->inv.tunnel, addr, sizeof(addr));
	return strncmp(addr, b->skip, strlen(b->skip)) == 0;
}

/* First use of e by a new client, made durable as dustgw's main lcore does. */
static void bind_one(struct binder *b, struct dust_store_entry *e)
{
	struct dust_store *st = b->srv.store;
	struct dust_identity client;
	char id[2 * DUST_ID_BYTES + 1], pk[2 * DUST_PK_BYTES + 1];
	struct dust_store_outcome o;
	bool first = false, ok;

	if (dust_identity_generate(&client) != 0)
		exit(2);
	if (intro(b, e, &client, &first) != DUST_OK || !first) {
		b->refused++;
		return;
	}
	ok = dust_store_persist_submit(st, e, 0) == 0 && dust_store_persist_poll(st, &o, 1) == 1 &&
	     o.drop == DUST_OK;
	if (!ok) {
		fprintf(stderr, "binder: not durable: %s\n", dust_last_error());
		b->refused++;
		return;
	}
	sodium_bin2hex(id, sizeof(id), e->inv.id, DUST_ID_BYTES);
	sodium_bin2hex(pk, sizeof(pk), client.pk, DUST_PK_BYTES);
	printf("%.16s %.16s\n", id, pk);
	fflush(stdout);
	b->c[b->bound % CLIENTS] = (struct client){.e = e, .id = client};
	b->bound++;
	dust_identity_wipe(&client);
}

/* A client bound before comes back: accepted, its freshness journaled. */
static void come_back(struct binder *b, struct client *c)
{
	bool first;

	if (intro(b, c->e, &c->id, &first) != DUST_OK || first) {
		fprintf(stderr, "binder: a returning client was refused or not bound\n");
		exit(1);
	}
	dust_store_persist_fresh(b->srv.store, c->e);
	b->returned++;
}

/* A stranger's intro for a bound invitation: refused, the binding holds. */
static void stranger(struct binder *b, struct dust_store_entry *e)
{
	struct dust_identity other;
	bool first;

	if (dust_identity_generate(&other) != 0)
		exit(2);
	if (intro(b, e, &other, &first) != DUST_DROP_INTRO_WRONG_KEY) {
		fprintf(stderr, "binder: a bound invitation took another key\n");
		exit(1);
	}
	b->strangers++;
	dust_identity_wipe(&other);
}

static void round_once(struct binder *b)
{
	struct dust_store *st = b->srv.store;
	unsigned done = 0;

	if (dust_store_reload(st) < 0) {
		fprintf(stderr, "binder: reload: %s\n", dust_last_error());
		exit(1);
	}
	if (dust_store_tick(st, (uint64_t)time(NULL)) == 1)
		dust_store_reclaim(st); /* one thread: nobody reads the old index */
	for (size_t i = dust_store_count(st); i-- > 0 && done < BATCH;) {
		struct dust_store_entry *e = dust_store_at(st, i);

		if (e->revoked || skipped(b, e))
			continue;
		if (!e->bound) {
			bind_one(b, e);
			done++;
		} else if (randombytes_uniform(64) == 0) {
			stranger(b, e);
		}
	}
	for (unsigned i = 0; i < BATCH && b->bound > 0; i++) {
		struct client *c = &b->c[randombytes_uniform(CLIENTS)];

		if (c->e)
			come_back(b, c);
	}
}

int main(int argc, char **argv)
{
	const struct timespec pause = {.tv_nsec = 20 * 1000000};
	struct binder b = {0};

	if (argc != 5 || dust_init() != 0)
		return 2;
	b.skip = argv[4];
	if (getenv("BINDER_COMPACT_SLACK")) {
		dust_store_hook_factor = 1;
		dust_store_hook_slack = atol(getenv("BINDER_COMPACT_SLACK"));
	}
	dust_rng_init(&b.rng);
	dust_pad_default(&b.pad);
	dust_limits_default(&b.srv.lim);
	if (dust_identity_load(&b.srv.id, argv[2]) != 0)
		return fprintf(stderr, "binder: %s\n", dust_last_error()), 2;
	b.srv.store = dust_store_open(argv[1], 0, &b.srv.id);
	if (!b.srv.store)
		return fprintf(stderr, "binder: %s\n", dust_last_error()), 2;
	dust_store_set_deferred(b.srv.store, true);
	while (access(argv[3], F_OK) != 0) {
		round_once(&b);
		nanosleep(&pause, NULL);
	}
	round_once(&b);
	fprintf(stderr, "binder: %u bound, %u returning intros, %u strangers refused, %u refused\n",
	        b.bound, b.returned, b.strangers, b.refused);
	fprintf(stderr, "binder: %" PRIu64 " compactions\n", dust_store_compactions(b.srv.store));
	dust_store_close(b.srv.store);
	sodium_memzero(b.c, sizeof(b.c));
	dust_identity_wipe(&b.srv.id);
	return 0;
}
