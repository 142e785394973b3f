/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server's invitation store (SPEC.md §7). Invitations live in one text
 * file rewritten by write-then-rename; bindings and intro freshness go to an
 * append-only journal (<path>.bind), each line checksummed, bindings fsynced
 * before the intro that made them is accepted. The tag index maps the
 * rotating intro tags of the current epoch and its neighbours to entries.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "dust_pvt.h"
#include "fileio.h"

#define STORE_MAGIC  "# dust invitation store v2"
#define LINE_MAX_LEN 512
#define EMPTY_SLOT   UINT32_MAX

struct tag_slot {
	uint8_t tag[DUST_TAG_BYTES];
	uint32_t idx;
};

struct tag_index {
	uint64_t epoch;
	size_t nent;
	uint32_t mask;
	struct tag_slot slots[];
};

struct dust_store {
	char *path;
	char *journal_path;
	int journal_fd;
	size_t journal_lines;
	struct dust_store_entry *e;
	size_t n, cap;
	uint32_t *id_index;     /* entry index + 1, 0 = empty; 2 * cap slots */
	struct tag_index *cur;  /* atomic: read by lookups on any thread */
	struct tag_index *prev; /* freed at the next rebuild */
	pthread_mutex_t lock;   /* serialises commits and journal writes */
	bool readonly;          /* DUST_STORE_READONLY: memory only */
};

/* ---- helpers ------------------------------------------------------------ */

static void line_sum(const char *line, size_t len, char out[17])
{
	uint8_t h[8];

	crypto_generichash(h, sizeof(h), (const uint8_t *)line, len, NULL, 0);
	sodium_bin2hex(out, 17, h, sizeof(h));
}

static int hex_field(uint8_t *out, size_t outlen, const char *hex)
{
	size_t n = 0;

	if (sodium_hex2bin(out, outlen, hex, strlen(hex), NULL, &n, NULL) != 0 || n != outlen)
		return -1;
	return 0;
}

/* IDs are random bytes from the store's own file: their first word is a fine hash. */
static size_t id_home(const struct dust_store *st, const uint8_t id[DUST_ID_BYTES])
{
	return le32_get(id) & (2 * st->cap - 1);
}

static struct dust_store_entry *find_id(struct dust_store *st, const uint8_t id[DUST_ID_BYTES])
{
	if (!st->id_index)
		return NULL;
	for (size_t h = id_home(st, id); st->id_index[h]; h = (h + 1) & (2 * st->cap - 1)) {
		struct dust_store_entry *e = &st->e[st->id_index[h] - 1];

		if (memcmp(e->inv.id, id, DUST_ID_BYTES) == 0)
			return e;
	}
	return NULL;
}

static void id_insert(struct dust_store *st, size_t idx)
{
	size_t h = id_home(st, st->e[idx].inv.id);

	while (st->id_index[h])
		h = (h + 1) & (2 * st->cap - 1);
	st->id_index[h] = (uint32_t)idx + 1;
}

/*
 * Entries hold invitation secrets and cached DH results: move them by hand
 * rather than realloc, so the old block is wiped (and unlocked) before it
 * goes back to the heap, and keep the new one out of swap where allowed.
 */
static int grow(struct dust_store *st)
{
	size_t cap = st->cap ? st->cap * 2 : 64;
	struct dust_store_entry *e = malloc(cap * sizeof(*e));
	uint32_t *ix = calloc(2 * cap, sizeof(*ix));

	if (!e || !ix) {
		free(e);
		free(ix);
		return dust_fail(ENOMEM, "out of memory for %zu invitations", cap);
	}
	(void)sodium_mlock(e, cap * sizeof(*e));
	if (st->e) {
		memcpy(e, st->e, st->n * sizeof(*e));
		sodium_munlock(st->e, st->cap * sizeof(*st->e)); /* also zeroes */
		free(st->e);
	}
	st->e = e;
	st->cap = cap;
	free(st->id_index);
	st->id_index = ix;
	for (size_t i = 0; i < st->n; i++)
		id_insert(st, i);
	return 0;
}

static int entry_add(struct dust_store *st, const struct dust_invite *inv)
{
	struct dust_store_entry *e;
	int rc;

	if (find_id(st, inv->id))
		return dust_fail(EEXIST, "invitation id already in the store");
	if (st->n == st->cap && (rc = grow(st)) != 0)
		return rc;
	e = &st->e[st->n++];
	memset(e, 0, sizeof(*e));
	e->inv = *inv;
	dust_invite_derive(inv, &e->keys);
	id_insert(st, st->n - 1);
	return 0;
}

/* ---- invitations file ---------------------------------------------------- */

static int load_invites(struct dust_store *st, FILE *f)
{
	char line[LINE_MAX_LEN];
	unsigned lineno = 0;

	while (fgets(line, sizeof(line), f)) {
		uint8_t pt[DUST_INVITE_PT_MAX];
		struct dust_invite inv;
		size_t ptlen;
		int rc;

		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		if (lineno == 1 && strcmp(line, STORE_MAGIC) != 0)
			return dust_fail(EINVAL, "%s: not a Dust invitation store", st->path);
		if (line[0] == '#' || line[0] == '\0')
			continue;
		/* 128 bytes (random profile) or 192 (quic: the cover block follows) */
		ptlen = strlen(line) > 2 ? (strlen(line) - 2) / 2 : 0;
		if (strncmp(line, "I ", 2) != 0 ||
		    (ptlen != DUST_INVITE_PT_BYTES && ptlen != DUST_INVITE_PT_MAX) ||
		    hex_field(pt, ptlen, line + 2) != 0 || dust_invite_unpack_full(&inv, pt, ptlen) != 0) {
			sodium_memzero(pt, sizeof(pt));
			sodium_memzero(line, sizeof(line)); /* the record's hex holds a secret */
			return dust_fail(EINVAL, "%s:%u: corrupt invitation record", st->path,
			                 lineno);
		}
		rc = entry_add(st, &inv);
		sodium_memzero(pt, sizeof(pt));
		dust_invite_wipe(&inv);
		if (rc) {
			sodium_memzero(line, sizeof(line));
			return dust_fail(-rc, "%s:%u: %s", st->path, lineno, dust_last_error());
		}
	}
	sodium_memzero(line, sizeof(line));
	if (lineno == 0)
		return dust_fail(EINVAL, "%s: empty file, not a Dust invitation store", st->path);
	return 0;
}

DUST_EXPORT int dust_store_save(struct dust_store *st)
{
	size_t linelen = 2 + 2 * DUST_INVITE_PT_MAX + 1;
	size_t len = sizeof(STORE_MAGIC) + st->n * linelen;
	char *buf, *p;
	int rc;

	if (st->readonly)
		return dust_fail(EROFS, "%s: store opened read-only", st->path);
	buf = malloc(len + 1);
	if (!buf)
		return dust_fail(ENOMEM, "out of memory");
	p = buf + sprintf(buf, "%s\n", STORE_MAGIC);
	for (size_t i = 0; i < st->n; i++) {
		uint8_t pt[DUST_INVITE_PT_MAX];
		size_t ptlen = dust_invite_pt_len(&st->e[i].inv);

		dust_invite_pack_full(&st->e[i].inv, pt);
		*p++ = 'I';
		*p++ = ' ';
		sodium_bin2hex(p, 2 * ptlen + 1, pt, ptlen);
		p += 2 * ptlen;
		*p++ = '\n';
		sodium_memzero(pt, sizeof(pt));
	}
	rc = dust_file_replace(st->path, buf, (size_t)(p - buf), 0600);
	sodium_memzero(buf, len + 1);
	free(buf);
	return rc;
}

/* ---- journal ------------------------------------------------------------- */

static int journal_apply(struct dust_store *st, char *line)
{
	char kind, idhex[64], v1[128], v2[128];
	uint8_t id[DUST_ID_BYTES];
	struct dust_store_entry *e;

	if (sscanf(line, "%c %63s %127s %127s", &kind, idhex, v1, v2) != 4 ||
	    hex_field(id, sizeof(id), idhex) != 0)
		return -1;
	e = find_id(st, id);
	if (!e)
		return 0; /* invitation removed from the store since: ignore */
	if (kind == 'B') {
		if (hex_field(e->client_pk, DUST_PK_BYTES, v1) != 0)
			return -1;
		e->bound = 1;
		e->bound_at = strtoull(v2, NULL, 10);
		return 0;
	}
	if (kind == 'T') {
		uint64_t ts = strtoull(v1, NULL, 10);

		if (hex_field(e->last_nonce, DUST_XNONCE_BYTES, v2) != 0)
			return -1;
		if (ts > e->last_ts_ms)
			e->last_ts_ms = ts;
		return 0;
	}
	return -1;
}

static int load_journal(struct dust_store *st)
{
	char line[LINE_MAX_LEN];
	unsigned lineno = 0;
	FILE *f;
	int fd = dust_file_open_private(st->journal_path);

	if (fd < 0)
		return errno == ENOENT ? 0 : fd;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return dust_fail(errno, "%s: %s", st->journal_path, strerror(errno));
	}
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		char sum[17], *hash;

		lineno++;
		if (len == 0 || line[len - 1] != '\n')
			break; /* torn last line of a crash: its intro was never accepted */
		line[--len] = '\0';
		hash = strrchr(line, '#');
		if (!hash || (line_sum(line, (size_t)(hash - line), sum), strcmp(sum, hash + 1)) ||
		    journal_apply(st, line) != 0) {
			fclose(f);
			return dust_fail(EINVAL, "%s:%u: corrupt journal line", st->journal_path,
			                 lineno);
		}
		st->journal_lines++;
	}
	fclose(f);
	return 0;
}

static size_t record_format(char *out, size_t cap, const char *body)
{
	char sum[17];

	line_sum(body, strlen(body), sum);
	return (size_t)snprintf(out, cap, "%s#%s\n", body, sum);
}

static int journal_append(struct dust_store *st, const char *body, bool durable)
{
	char line[LINE_MAX_LEN];
	size_t len = record_format(line, sizeof(line), body);
	off_t end = lseek(st->journal_fd, 0, SEEK_END);
	int rc = dust_write_all(st->journal_fd, line, len);
	if (!rc && durable && fdatasync(st->journal_fd) != 0)
		rc = -errno;
	if (rc) {
		/* Leave no half line behind (full disk): cut back to where we started. */
		if (end >= 0 && ftruncate(st->journal_fd, end) == 0)
			(void)fdatasync(st->journal_fd);
		return dust_fail(-rc, "%s: %s", st->journal_path, strerror(-rc));
	}
	st->journal_lines++;
	return 0;
}

/*
 * Rewrite the journal as one binding and one freshness line per used
 * invitation once it has grown well past that (each intro appends a line).
 */
static int journal_compact(struct dust_store *st)
{
	size_t cap = 256 * 2 * (st->n + 1), len = 0;
	char *buf, body[256], idhex[2 * DUST_ID_BYTES + 1], hex[2 * DUST_PK_BYTES + 1];
	int rc;

	if (st->journal_lines <= 2 * st->n + 1024)
		return 0;
	buf = malloc(cap);
	if (!buf)
		return dust_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < st->n; i++) {
		const struct dust_store_entry *e = &st->e[i];

		if (!e->bound)
			continue;
		sodium_bin2hex(idhex, sizeof(idhex), e->inv.id, DUST_ID_BYTES);
		sodium_bin2hex(hex, sizeof(hex), e->client_pk, DUST_PK_BYTES);
		snprintf(body, sizeof(body), "B %s %s %" PRIu64 " ", idhex, hex, e->bound_at);
		len += record_format(buf + len, cap - len, body);
		sodium_bin2hex(hex, sizeof(hex), e->last_nonce, DUST_XNONCE_BYTES);
		snprintf(body, sizeof(body), "T %s %" PRIu64 " %s ", idhex, e->last_ts_ms, hex);
		len += record_format(buf + len, cap - len, body);
	}
	rc = dust_file_replace(st->journal_path, buf, len, 0600);
	free(buf);
	return rc;
}

static int journal_open(struct dust_store *st)
{
	int rc = journal_compact(st);

	if (rc)
		return rc;
	st->journal_fd = open(st->journal_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (st->journal_fd < 0)
		return dust_fail(errno, "%s: %s", st->journal_path, strerror(errno));
	return 0;
}

/* ---- tag index ------------------------------------------------------------ */

static void index_put(struct tag_index *ix, const uint8_t tag[DUST_TAG_BYTES], uint32_t idx)
{
	uint32_t h = (uint32_t)le64_get(tag) & ix->mask;

	while (ix->slots[h].idx != EMPTY_SLOT)
		h = (h + 1) & ix->mask;
	memcpy(ix->slots[h].tag, tag, DUST_TAG_BYTES);
	ix->slots[h].idx = idx;
}

static struct tag_index *index_build(struct dust_store *st, uint64_t epoch)
{
	uint32_t size = 16;
	struct tag_index *ix;

	while (size < 6 * st->n)
		size <<= 1;
	ix = malloc(sizeof(*ix) + size * sizeof(ix->slots[0]));
	if (!ix)
		return NULL;
	ix->epoch = epoch;
	ix->nent = st->n;
	ix->mask = size - 1;
	for (uint32_t i = 0; i < size; i++)
		ix->slots[i].idx = EMPTY_SLOT;
	for (size_t i = 0; i < st->n; i++) {
		for (uint64_t d = 0; d < 3; d++) {
			uint8_t tag[DUST_TAG_BYTES];

			dust_intro_tag(&st->e[i].keys, epoch + d - 1, tag);
			index_put(ix, tag, (uint32_t)i);
		}
	}
	return ix;
}

DUST_EXPORT int dust_store_tick(struct dust_store *st, uint64_t now_s)
{
	uint64_t epoch = now_s / DUST_EPOCH_S;
	struct tag_index *cur = __atomic_load_n(&st->cur, __ATOMIC_ACQUIRE), *ix;

	if (cur && cur->epoch == epoch && cur->nent == st->n)
		return 0;
	ix = index_build(st, epoch);
	if (!ix)
		return dust_fail(ENOMEM, "out of memory for the tag index");
	free(st->prev);
	st->prev = cur;
	__atomic_store_n(&st->cur, ix, __ATOMIC_RELEASE);
	return 1;
}

DUST_EXPORT struct dust_store_entry *dust_store_lookup_tag(struct dust_store *st,
                                                           const uint8_t tag[DUST_TAG_BYTES])
{
	struct tag_index *ix = __atomic_load_n(&st->cur, __ATOMIC_ACQUIRE);
	uint32_t h;

	if (!ix)
		return NULL;
	h = (uint32_t)le64_get(tag) & ix->mask;
	for (; ix->slots[h].idx != EMPTY_SLOT; h = (h + 1) & ix->mask)
		if (crypto_verify_16(ix->slots[h].tag, tag) == 0)
			return &st->e[ix->slots[h].idx];
	return NULL;
}

/* ---- open / close ---------------------------------------------------------- */

static int load_invites_file(struct dust_store *st, int flags)
{
	FILE *f;
	int rc, fd = dust_file_open_private(st->path);

	if (fd < 0 && errno == ENOENT && (flags & DUST_STORE_CREATE) && !st->readonly)
		return dust_store_save(st);
	if (fd < 0)
		return fd;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return dust_fail(errno, "%s: %s", st->path, strerror(errno));
	}
	rc = load_invites(st, f);
	fclose(f);
	return rc;
}

DUST_EXPORT struct dust_store *dust_store_open(const char *path, int flags)
{
	struct dust_store *st = calloc(1, sizeof(*st));
	int rc;

	if (!st) {
		dust_fail(ENOMEM, "out of memory");
		return NULL;
	}
	st->journal_fd = -1;
	pthread_mutex_init(&st->lock, NULL);
	st->path = strdup(path);
	if (!st->path || asprintf(&st->journal_path, "%s.bind", path) < 0) {
		dust_fail(ENOMEM, "out of memory");
		goto err_free;
	}
	st->readonly = (flags & DUST_STORE_READONLY) != 0;
	rc = load_invites_file(st, flags);
	if (!rc)
		rc = load_journal(st);
	if (!rc && !st->readonly)
		rc = journal_open(st);
	if (!rc && dust_store_tick(st, (uint64_t)time(NULL)) < 0)
		rc = -ENOMEM;
	if (rc) {
		errno = -rc;
		goto err_free;
	}
	return st;
err_free:
	rc = errno;
	dust_store_close(st);
	errno = rc;
	return NULL;
}

DUST_EXPORT void dust_store_close(struct dust_store *st)
{
	if (!st)
		return;
	if (st->journal_fd >= 0) {
		(void)fdatasync(st->journal_fd);
		close(st->journal_fd);
	}
	if (st->e) {
		sodium_munlock(st->e, st->cap * sizeof(*st->e)); /* also zeroes */
		free(st->e);
	}
	free(st->id_index);
	free(st->cur);
	free(st->prev);
	free(st->path);
	free(st->journal_path);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

DUST_EXPORT size_t dust_store_count(const struct dust_store *st)
{
	return st->n;
}

DUST_EXPORT struct dust_store_entry *dust_store_at(struct dust_store *st, size_t idx)
{
	return idx < st->n ? &st->e[idx] : NULL;
}

DUST_EXPORT uint32_t dust_store_index(const struct dust_store *st, const struct dust_store_entry *e)
{
	return (uint32_t)(e - st->e);
}

DUST_EXPORT int dust_store_add(struct dust_store *st, const struct dust_invite *inv)
{
	return entry_add(st, inv);
}

/* ---- intro commit ------------------------------------------------------------ */

void dust_store_view_get(struct dust_store *st, const struct dust_store_entry *e,
                         struct dust_store_view *v)
{
	pthread_mutex_lock(&st->lock);
	v->bound = e->bound;
	memcpy(v->client_pk, e->client_pk, DUST_PK_BYTES);
	memcpy(v->static_ss, e->static_ss, DUST_KEY_BYTES);
	v->last_ts_ms = e->last_ts_ms;
	memcpy(v->last_nonce, e->last_nonce, DUST_XNONCE_BYTES);
	pthread_mutex_unlock(&st->lock);
}

static int bind_persist(struct dust_store *st, const struct dust_store_entry *e,
                        const uint8_t client_pk[DUST_PK_BYTES], uint64_t now_s)
{
	char body[256], idhex[2 * DUST_ID_BYTES + 1], pkhex[2 * DUST_PK_BYTES + 1];

	sodium_bin2hex(idhex, sizeof(idhex), e->inv.id, DUST_ID_BYTES);
	sodium_bin2hex(pkhex, sizeof(pkhex), client_pk, DUST_PK_BYTES);
	snprintf(body, sizeof(body), "B %s %s %" PRIu64 " ", idhex, pkhex, now_s);
	return journal_append(st, body, true);
}

static void fresh_record(struct dust_store *st, const struct dust_store_entry *e)
{
	char body[256], idhex[2 * DUST_ID_BYTES + 1], nhex[2 * DUST_XNONCE_BYTES + 1];

	sodium_bin2hex(idhex, sizeof(idhex), e->inv.id, DUST_ID_BYTES);
	sodium_bin2hex(nhex, sizeof(nhex), e->last_nonce, DUST_XNONCE_BYTES);
	snprintf(body, sizeof(body), "T %s %" PRIu64 " %s ", idhex, e->last_ts_ms, nhex);
	/*
	 * Not fsynced: losing it in a crash only lets a replay inside the
	 * timestamp window re-create a session the real client already has.
	 */
	(void)journal_append(st, body, false);
}

enum dust_drop dust_store_commit(struct dust_store *st, struct dust_store_entry *e,
                                 const uint8_t client_pk[DUST_PK_BYTES],
                                 const uint8_t static_ss[DUST_KEY_BYTES], uint64_t ts_ms,
                                 const uint8_t nonce[DUST_XNONCE_BYTES], uint64_t now_s,
                                 bool *first_use)
{
	enum dust_drop d = DUST_OK;

	pthread_mutex_lock(&st->lock);
	*first_use = false;
	if (e->bound && sodium_memcmp(e->client_pk, client_pk, DUST_PK_BYTES) != 0)
		d = DUST_DROP_INTRO_WRONG_KEY;
	else if (ts_ms == e->last_ts_ms &&
	         sodium_memcmp(nonce, e->last_nonce, DUST_XNONCE_BYTES) == 0)
		d = DUST_DROP_INTRO_DUP;
	else if (ts_ms <= e->last_ts_ms)
		d = DUST_DROP_INTRO_REPLAY;
	else if (!e->bound && !st->readonly && bind_persist(st, e, client_pk, now_s) != 0)
		d = DUST_DROP_INTRO_PERSIST;
	if (d == DUST_OK) {
		if (!e->bound) {
			memcpy(e->client_pk, client_pk, DUST_PK_BYTES);
			e->bound_at = now_s;
			e->bound = 1;
			*first_use = true;
		}
		memcpy(e->static_ss, static_ss, DUST_KEY_BYTES);
		e->last_ts_ms = ts_ms;
		memcpy(e->last_nonce, nonce, DUST_XNONCE_BYTES);
		if (!st->readonly)
			fresh_record(st, e);
	}
	pthread_mutex_unlock(&st->lock);
	return d;
}
