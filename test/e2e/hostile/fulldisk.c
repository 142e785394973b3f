/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The invitation store on a full disk (run on a tiny tmpfs by fulldisk.sh):
 * the first-use binding of an intro cannot be persisted, so the intro must be
 * refused (intro_persist), the journal left without a torn line and the
 * invitation still unbound; saving the store must fail and leave the old
 * file as it was. With space again the next intro binds, durably.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dust.h"

static int fails;

#define EXPECT(cond, ...)                                                                          \
	do {                                                                                       \
		if (cond) {                                                                        \
			printf("ok: " __VA_ARGS__);                                                \
		} else {                                                                           \
			printf("FAIL: " __VA_ARGS__);                                              \
			fails++;                                                                   \
		}                                                                                  \
		printf("\n");                                                                      \
	} while (0)

static size_t slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, cap, f);
		fclose(f);
	}
	return n;
}

/* A temporary file of the store (store.tmp-RANDOM) left in dir. */
static bool tmp_left(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool left = false;

	if (!d)
		return true;
	while ((de = readdir(d)) != NULL)
		left |= strncmp(de->d_name, "store.tmp", 9) == 0;
	closedir(d);
	return left;
}

/* Fill the file system holding dir: returns the filler's path. */
static void fill_disk(const char *filler)
{
	static const char block[4096];
	int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		exit(2);
	while (write(fd, block, sizeof(block)) > 0)
		;
	while (write(fd, block, 1) > 0)
		;
	close(fd);
}

static enum dust_drop intro(struct dust_server *srv, const struct dust_invite *inv,
                            const struct dust_identity *client, struct dust_rng *rng, bool *first)
{
	struct dust_endpoint from = {.ip = {.family = 4, .a = {198, 51, 100, 9}}, .port = 9};
	struct dust_session cs, ss;
	struct dust_intro_info info = {0};
	struct dust_pad pad;
	uint8_t dg[2048];
	size_t consumed;
	uint64_t now_ms = (uint64_t)time(NULL) * 1000;
	enum dust_drop d;
	int n;

	dust_pad_default(&pad);
	n = dust_intro_build(inv, client, rng, &pad, now_ms, dg, sizeof(dg), &cs);
	if (n < 0)
		exit(2);
	d = dust_intro_accept(srv, dg, (size_t)n, now_ms, &from, NULL, &ss, &consumed, &info);
	*first = info.first_use;
	dust_session_wipe(&cs);
	dust_session_wipe(&ss);
	return d;
}

int main(int argc, char **argv)
{
	static char before[8192], after[8192];
	char store[512], journal[520], filler[512];
	struct dust_identity client;
	struct dust_invite inv;
	struct dust_server srv = {0};
	struct dust_ipaddr sa, ta;
	struct dust_rng rng;
	size_t nb, na;
	bool first;
	enum dust_drop d;

	if (argc != 2 || dust_init() < 0)
		return 2;
	snprintf(store, sizeof(store), "%s/store", argv[1]);
	snprintf(journal, sizeof(journal), "%s.bind", store);
	snprintf(filler, sizeof(filler), "%s/filler", argv[1]);
	dust_rng_init(&rng);
	dust_limits_default(&srv.lim);
	if (dust_identity_generate(&srv.id) || dust_identity_generate(&client) ||
	    dust_ipaddr_parse(&sa, "192.0.2.1") || dust_ipaddr_parse(&ta, "10.9.0.2") ||
	    dust_invite_new(&inv, &srv.id, &sa, 4433, &ta, 24, (uint64_t)time(NULL) + 3600))
		return 2;
	srv.store = dust_store_open(store, DUST_STORE_CREATE, &srv.id);
	if (!srv.store || dust_store_add(srv.store, &inv) || dust_store_save(srv.store))
		return 2;
	dust_store_tick(srv.store, (uint64_t)time(NULL));

	fill_disk(filler);
	nb = slurp(journal, before, sizeof(before));
	d = intro(&srv, &inv, &client, &rng, &first);
	EXPECT(d == DUST_DROP_INTRO_PERSIST, "full disk: first-use intro refused as %s",
	       dust_drop_name(d));
	na = slurp(journal, after, sizeof(after));
	EXPECT(na == nb && !memcmp(before, after, na),
	       "journal unchanged (%zu bytes, no torn line)", na);
	EXPECT(!dust_store_at(srv.store, 0)->bound, "invitation still unbound in memory");

	nb = slurp(store, before, sizeof(before));
	EXPECT(dust_store_save(srv.store) != 0, "store save on a full disk fails: %s",
	       dust_last_error());
	na = slurp(store, after, sizeof(after));
	EXPECT(na == nb && na > 0 && !memcmp(before, after, na), "store file unchanged (%zu bytes)",
	       na);
	EXPECT(!tmp_left(argv[1]), "no temporary file left behind");

	unlink(filler);
	d = intro(&srv, &inv, &client, &rng, &first);
	EXPECT(d == DUST_OK && first, "space again: the next intro binds (%s)", dust_drop_name(d));
	dust_store_close(srv.store);
	srv.store = dust_store_open(store, 0, &srv.id);
	EXPECT(srv.store && dust_store_at(srv.store, 0)->bound &&
	           !memcmp(dust_store_at(srv.store, 0)->client_pk, client.pk, DUST_PK_BYTES),
	       "reopened store: bound to the client's key");
	dust_store_close(srv.store);
	dust_identity_wipe(&client);
	dust_identity_wipe(&srv.id);
	dust_invite_wipe(&inv);
	return fails ? 1 : 0;
}
