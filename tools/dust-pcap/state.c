/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap: the clients' saved state (keys, sessions, addresses) shared
 * by gen, inject and decode, manifest lines, the store and the clock.
 */
#include <sys/time.h>
#include <time.h>

#include "dust-pcap.h"

#define STATE_MAGIC "dust-pcap-state-4" /* 4: sessions hold the answer state */

void state_save(const char *path, const struct client *c, unsigned n)
{
	FILE *f = fopen(path, "wb");
	uint32_t n32 = n;

	if (!f)
		die("cannot write %s", path);
	fwrite(STATE_MAGIC, 1, sizeof(STATE_MAGIC), f);
	fwrite(&n32, sizeof(n32), 1, f);
	for (unsigned i = 0; i < n; i++) {
		fwrite(&c[i].idx, sizeof(c[i].idx), 1, f);
		fwrite(&c[i].id, sizeof(c[i].id), 1, f);
		fwrite(&c[i].s, sizeof(c[i].s), 1, f);
		fwrite(&c[i].ep, sizeof(c[i].ep), 1, f);
		fwrite(c[i].mac, 6, 1, f);
		fwrite(&c[i].wrong_key, 1, 1, f);
		fwrite(&c[i].refused, 1, 1, f);
	}
	if (fclose(f) != 0)
		die("cannot write %s", path);
}

struct client *state_load(const char *path, unsigned *n)
{
	FILE *f = fopen(path, "rb");
	char magic[sizeof(STATE_MAGIC)];
	uint32_t n32;
	struct client *c;

	if (!f || fread(magic, 1, sizeof(magic), f) != sizeof(magic) ||
	    memcmp(magic, STATE_MAGIC, sizeof(magic)) || fread(&n32, sizeof(n32), 1, f) != 1)
		die("%s: not a dust-pcap state file", path);
	c = calloc(n32 ? n32 : 1, sizeof(*c));
	for (uint32_t i = 0; i < n32; i++)
		if (fread(&c[i].idx, sizeof(c[i].idx), 1, f) != 1 ||
		    fread(&c[i].id, sizeof(c[i].id), 1, f) != 1 ||
		    fread(&c[i].s, sizeof(c[i].s), 1, f) != 1 ||
		    fread(&c[i].ep, sizeof(c[i].ep), 1, f) != 1 || fread(c[i].mac, 6, 1, f) != 1 ||
		    fread(&c[i].wrong_key, 1, 1, f) != 1 || fread(&c[i].refused, 1, 1, f) != 1)
			die("%s: truncated", path);
	fclose(f);
	*n = n32;
	return c;
}

void hexline(FILE *f, const char *kind, unsigned who, const uint8_t *p, size_t n)
{
	fprintf(f, "%s %u ", kind, who);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
	fputc('\n', f);
}

uint32_t now_s(void)
{
	return (uint32_t)time(NULL);
}

uint64_t now_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

/* The store's records are sealed under the server key (SPEC §7.6): --key opens them. */
struct dust_store *store_open(const char *path, const char *key, int flags)
{
	struct dust_identity id;
	struct dust_store *st;

	if (!key)
		die("reading the store needs the server's --key (its records are sealed)%s", "");
	if (dust_identity_load(&id, key) != 0)
		die("--key: %s", dust_last_error());
	st = dust_store_open(path, flags, &id);
	dust_identity_wipe(&id);
	if (!st)
		die("store: %s", dust_last_error());
	return st;
}
