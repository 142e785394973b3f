/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: the file store's parsers (SPEC §7, §7.6). First input
 * byte even: the rest is the journal (<store>.bind) beside the fixture's
 * sealed one-invitation store; odd: the rest is the invitations file, with
 * an empty journal. The store is opened read-only (its whole load: lines,
 * checksums, seals, records). Nothing may crash, and without the server key
 * no input can add an invitation: a journal input leaves exactly the one.
 */
#include <fcntl.h>

#include "fuzz_fixture.h"

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
	dust_store_close(st);
	return 0;
}
