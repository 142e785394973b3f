/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: the file store's parsers (SPEC §7, §7.6). First input
 * byte even: the rest is the journal (<store>.bind) beside the fixture's
 * sealed one-invitation store; odd: the rest is the invitations file, with
 * an empty journal. The store is opened read-only (its whole load: lines,
 * checksums, seals, records). Nothing may crash, and without the server key
 * no input can add an invitation: a journal input leaves exactly the one.
 * A journal that loads is then compacted (the store's test hooks: at any
 * size) by a read-write open, and read again: the invitation's state
 * (binding, client key, freshness, revocation) must be what it was.
 */
#include <fcntl.h>

#include "fuzz_fixture.h"

extern int dust_store_hook_factor; /* the fuzz build of store.c has its test hooks */
extern off_t dust_store_hook_slack;

static struct fz_gw g;
static uint8_t invites[4096];
static size_t invites_len;

static void put(const char *path, const uint8_t *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (len && write(fd, p, len) != (ssize_t)len) || close(fd) != 0)
		fz_die(path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FILE *f;

	(void)argc, (void)argv;
	fz_gw_init(&g, fz_invite);
	dust_store_close(g.srv.store);
	g.srv.store = NULL;
	f = fopen(g.path, "rb");
	if (!f)
		fz_die(g.path);
	invites_len = fread(invites, 1, sizeof(invites), f);
	fclose(f);
	return 0;
}

/* The loaded journal compacted (its fold, SPEC §7) gives the same state. */
static void compacted_same(struct dust_store *before)
{
	const struct dust_store_entry *a = dust_store_at(before, 0), *b;
	struct dust_store *rw, *after;

	dust_store_hook_factor = 0;
	dust_store_hook_slack = 0;
	rw = dust_store_open(g.path, 0, &g.srv.id); /* compacts: the journal is over 0 bytes */
	if (!rw)
		return; /* a corrupt line: refused before any compaction */
	dust_store_close(rw);
	after = dust_store_open(g.path, DUST_STORE_READONLY, &g.srv.id);
	if (!after || dust_store_count(after) != 1)
		abort(); /* the compacted journal must load */
	b = dust_store_at(after, 0);
	if (a->bound != b->bound || memcmp(a->client_pk, b->client_pk, DUST_PK_BYTES) != 0 ||
	    a->bound_at != b->bound_at || a->last_ts_ms != b->last_ts_ms ||
	    memcmp(a->last_nonce, b->last_nonce, DUST_XNONCE_BYTES) != 0 ||
	    a->revoked != b->revoked || a->revoked_at != b->revoked_at)
		abort();
	dust_store_close(after);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dust_store *st;
	bool journal;

	if (size == 0)
		return 0;
	journal = (data[0] & 1) == 0;
	put(g.path, journal ? invites : data + 1, journal ? invites_len : size - 1);
	put(g.jpath, data + 1, journal ? size - 1 : 0);
	st = dust_store_open(g.path, DUST_STORE_READONLY, &g.srv.id);
	if (st && journal && dust_store_count(st) != 1)
		abort(); /* only a record sealed under the key adds an invitation */
	if (st && journal)
		compacted_same(st);
	dust_store_close(st);
	return 0;
}
