/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where dust-gen's clients come from: the store's invitations (read only),
 * or sealed invitation texts: DIR/invite-<n>.txt as
 * dust-invite create --out-dir writes them, in n's order, opened with one
 * password (--password-file, $DUST_PASSWORD or a prompt), as dust-client does.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* versionsort: invite-2 before invite-10 */
#endif
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "dust-gen.h"
#include "password.h"

static int is_text(const struct dirent *d)
{
	unsigned n;
	char tail[8];

	return sscanf(d->d_name, "invite-%u%7s", &n, tail) == 2 && !strcmp(tail, ".txt");
}

/* The text of DIR/name into buf (NUL-terminated); 0 or -errno. */
static int read_text(const char *dir, const char *name, char *buf, size_t cap)
{
	char path[4096];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "r")))
		return -errno;
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return n == cap - 1 ? -EFBIG : 0;
}

static int open_all(struct dg *g, struct dirent **ents, const char *pw)
{
	char text[4096];

	for (unsigned i = 0; i < g->n; i++) {
		const char *name = ents[i]->d_name;
		int rc = read_text(g->o.invites, name, text, sizeof(text));

		if (!rc)
			rc = dust_invite_open(&g->c[i].inv, text, pw, strlen(pw));
		if (rc) {
			fprintf(stderr, "dust-gen: %s/%s: %s\n", g->o.invites, name,
			        rc == -EBADMSG  ? "wrong password (or a damaged text)"
			        : rc == -EINVAL ? "not a Dust invitation"
			                        : strerror(-rc));
			return -EINVAL;
		}
	}
	return 0;
}

/* Room for the clients: --clients of avail invitations (default all), at most 65536. */
int dg_clients_alloc(struct dg *g, size_t avail, const char *src)
{
	g->n = g->o.clients ? g->o.clients : (unsigned)avail;
	if (g->n == 0 || g->n > avail || g->n > 65536) {
		fprintf(stderr, "dust-gen: %u clients wanted, %s has %zu invitations (max 65536)\n",
		        g->n, src, avail);
		return -EINVAL;
	}
	g->c = calloc(g->n, sizeof(*g->c));
	return g->c ? 0 : -ENOMEM;
}

/* Invitations from the store (its records read only). */
int dg_store_load(struct dg *g)
{
	struct dust_identity id;
	struct dust_store *st = NULL;
	int rc;

	if (dust_identity_load(&id, g->o.key) == 0)
		st = dust_store_open(g->o.store, DUST_STORE_READONLY, &id);
	dust_identity_wipe(&id);

	if (!st) {
		fprintf(stderr, "dust-gen: store %s: %s\n", g->o.store, dust_last_error());
		return -EINVAL;
	}
	rc = dg_clients_alloc(g, dust_store_count(st), g->o.store);
	for (unsigned i = 0; !rc && i < g->n; i++)
		g->c[i].inv = dust_store_at(st, i)->inv;
	dust_store_close(st);
	return rc;
}

int dg_texts_load(struct dg *g)
{
	struct dirent **ents = NULL;
	int n = scandir(g->o.invites, &ents, is_text, versionsort), rc;
	char pw[DUST_PASSWORD_MAX];

	if (n < 0) {
		fprintf(stderr, "dust-gen: --invites %s: %s\n", g->o.invites, strerror(errno));
		return -errno;
	}
	rc = dg_clients_alloc(g, (size_t)n, g->o.invites);
	if (!rc && dust_password_read(pw, sizeof(pw), g->o.password_file, 0) != 0)
		rc = -EINVAL;
	if (!rc)
		rc = open_all(g, ents, pw);
	sodium_memzero(pw, sizeof(pw));
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return rc;
}
