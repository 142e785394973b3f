/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The server's invitation store (SPEC.md §7). Invitations live in one text
 * file rewritten by write-then-rename; bindings, intro freshness and
 * revocations go to an append-only journal (<path>.bind), each line
 * checksummed, bindings fsynced before the intro that made them is
 * accepted. The tag index maps the rotating intro tags of the current epoch
 * and its neighbours to entries. A running gateway merges what dust-invite
 * adds or revokes (dust_store_reload); entries never move, so lookups on
 * other threads need no lock. Processes writing one store exclude each
 * other with byte-range locks on <path>.lock (lock_take). What differs
 * between this file backend and etcd's (store_etcd_ops.c) goes through
 * struct store_ops (store_pvt.h, SPEC §7.7).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "dust_pvt.h"
#include "fileio.h"
#include "store_etcd.h"
#include "store_pvt.h"

#define STORE_MAGIC  "# dust invitation store v3 sealed"
#define STORE_MAGIC2 "# dust invitation store v2" /* before sealing: dust-invite migrate */
#define EMPTY_SLOT   UINT32_MAX
#define CHUNK_BYTES  (CHUNK_LEN * sizeof(struct dust_store_entry))
/* The byte-range locks of <store>.lock, and how long an append waits for its lock. */
enum { LOCK_INVITES = 0, LOCK_JOURNAL = 1, LOCK_COMPACT = 2 };
/*
 * Compaction while others run (SPEC §7): once the journal holds more than
 * COMPACT_FACTOR times what it would compact to, plus COMPACT_SLACK (about
 * 500 records, so a small store is not rewritten every few appends).
 */
#define COMPACT_FACTOR  2
#define COMPACT_SLACK   ((off_t)128 * 1024)
#define LINE_EST        256 /* a sealed line's length, about: B 290, T 260, R 160 */
#define JOURNAL_WAIT_MS 2000

#ifdef DUST_STORE_CRASH_HOOKS
/*
 * Test build only (test_store_crash): the thresholds, and a call right after
 * each step of a compaction and after each append, so that the test can kill
 * the process there and model a power loss (what was not synced is lost).
 */
DUST_EXPORT int dust_store_hook_factor = COMPACT_FACTOR;
DUST_EXPORT off_t dust_store_hook_slack = COMPACT_SLACK;
DUST_EXPORT void (*dust_store_hook)(const char *step, const char *journal, const char *tmp);
#define STEP(st, step, tmp)                                                                        \
	(dust_store_hook ? dust_store_hook(step, (st)->journal_path, tmp) : (void)0)
#define FACTOR dust_store_hook_factor
#define SLACK  dust_store_hook_slack
#else
#define STEP(st, step, tmp) ((void)0)
#define FACTOR              COMPACT_FACTOR
#define SLACK               COMPACT_SLACK
#endif

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
	return le32_get(id) & (st->id_size - 1);
}

static struct dust_store_entry *find_id(struct dust_store *st, const uint8_t id[DUST_ID_BYTES])
{
	if (!st->id_index)
		return NULL;
	for (size_t h = id_home(st, id); st->id_index[h]; h = (h + 1) & (st->id_size - 1)) {
		struct dust_store_entry *e = store_entry(st, st->id_index[h] - 1);

		if (memcmp(e->inv.id, id, DUST_ID_BYTES) == 0)
			return e;
	}
	return NULL;
}

static void id_insert(struct dust_store *st, size_t idx)
{
	size_t h = id_home(st, store_entry(st, idx)->inv.id);

	while (st->id_index[h])
		h = (h + 1) & (st->id_size - 1);
	st->id_index[h] = (uint32_t)idx + 1;
}

/* The id index (one thread: loading and merging) doubles at half load. */
static int id_grow(struct dust_store *st)
{
	size_t size = st->id_size ? st->id_size * 2 : 128;
	uint32_t *ix = calloc(size, sizeof(*ix));

	if (!ix)
		return dust_fail(ENOMEM, "out of memory for %zu invitations", st->n);
	free(st->id_index);
	st->id_index = ix;
	st->id_size = size;
	for (size_t i = 0; i < st->n; i++)
		id_insert(st, i);
	return 0;
}

/*
 * One more chunk of entries. Entries hold invitation secrets and cached DH
 * results: kept out of swap where allowed, wiped when the store closes.
 * Chunks never move, so a lookup on another thread never reads freed memory.
 */
static int grow(struct dust_store *st)
{
	size_t k = st->cap >> CHUNK_SHIFT;
	struct dust_store_entry *c;

	if (k == CHUNKS_MAX)
		return dust_fail(ENOSPC, "more than %u invitations", CHUNKS_MAX * CHUNK_LEN);
	/*
	 * Page-aligned: sodium_mlock's madvise(MADV_DONTDUMP) refuses anything
	 * else (EINVAL), and a core would then hold every K_inv (F5).
	 */
	if (posix_memalign((void **)&c, (size_t)sysconf(_SC_PAGESIZE), CHUNK_BYTES) != 0)
		return dust_fail(ENOMEM, "out of memory for %zu invitations", st->cap + CHUNK_LEN);
	memset(c, 0, CHUNK_BYTES);
	(void)sodium_mlock(c, CHUNK_BYTES);
	st->chunk[k] = c;
	st->cap += CHUNK_LEN;
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
	if (2 * (st->n + 1) > st->id_size && (rc = id_grow(st)) != 0)
		return rc;
	e = store_entry(st, st->n);
	memset(e, 0, sizeof(*e));
	e->inv = *inv;
	e->idx = (uint32_t)st->n;
	dust_invite_derive(inv, &e->keys);
	id_insert(st, st->n);
	/* release: a reader that sees the new count sees the entry */
	__atomic_store_n(&st->n, st->n + 1, __ATOMIC_RELEASE);
	return 0;
}

/* ---- invitations file ---------------------------------------------------- */

/*
 * One invitation record's hex (the file's "I " lines, etcd's i/ keys): 1 if
 * added, 0 if merge found its id known already, -EINVAL if corrupt.
 */
int store_invite_hex(struct dust_store *st, const char *hex, bool merge)
{
	uint8_t pt[DUST_INVITE_PT_MAX];
	struct dust_invite inv;
	/* 128 bytes (random profile) or 192 (quic: the cover block follows) */
	size_t ptlen = strlen(hex) / 2;
	int rc = 0;

	if ((ptlen != DUST_INVITE_PT_BYTES && ptlen != DUST_INVITE_PT_MAX) ||
	    hex_field(pt, ptlen, hex) != 0 || dust_invite_unpack_full(&inv, pt, ptlen) != 0) {
		sodium_memzero(pt, sizeof(pt));
		return -EINVAL;
	}
	if ((!merge || !find_id(st, inv.id)) && (rc = entry_add(st, &inv)) == 0)
		rc = 1;
	sodium_memzero(pt, sizeof(pt));
	dust_invite_wipe(&inv);
	return rc;
}

/* A record that does not open under the storage key: never applied, counted. */
void store_refuse(struct dust_store *st)
{
	__atomic_fetch_add(&st->refused, 1, __ATOMIC_RELAXED);
}

/*
 * One sealed invitation line's "IDHEX SEALHEX": 1 if added, 0 if known
 * already (merge) or refused (not sealed under our key for its ID), -errno.
 */
int store_invite_sealed(struct dust_store *st, const char *text, bool merge)
{
	uint8_t id[DUST_ID_BYTES], pt[DUST_SEAL_PT_MAX];
	char idhex[2 * DUST_ID_BYTES + 1];
	struct dust_invite inv = {0};
	int len, rc;

	if (strlen(text) > 2 * DUST_ID_BYTES + 1 + 2 * (DUST_SEAL_PT_MAX + DUST_SEAL_OVERHEAD) ||
	    sscanf(text, "%32s %*s", idhex) != 1 || hex_field(id, sizeof(id), idhex) != 0)
		return -EINVAL;
	if (merge && find_id(st, id))
		return 0;
	len = dust_unseal_hex(pt, sizeof(pt), st->skey, 'I', id, text + 2 * DUST_ID_BYTES + 1);
	if (len < 0) {
		store_refuse(st);
		return 0;
	}
	if ((size_t)len > DUST_INVITE_PT_MAX ||
	    dust_invite_unpack_full(&inv, pt, (size_t)len) != 0 ||
	    memcmp(inv.id, id, DUST_ID_BYTES) != 0)
		rc = -EINVAL; /* sealed by us, so not an attacker's: a bug, or a bad key file */
	else if ((rc = entry_add(st, &inv)) == 0)
		rc = 1;
	sodium_memzero(pt, sizeof(pt));
	dust_invite_wipe(&inv);
	return rc;
}

/* One "I " line: sealed, or plaintext hex while migrating a pre-sealing store. */
static int invite_line(struct dust_store *st, const char *text, bool merge)
{
	if (st->plain_ok && !strchr(text, ' '))
		return store_invite_hex(st, text, merge);
	return store_invite_sealed(st, text, merge);
}

/*
 * Read the invitations file. With merge, ids already known are skipped (a
 * running gateway picking up what dust-invite added); returns how many
 * entries were added, or -errno.
 */
static int load_invites(struct dust_store *st, FILE *f, bool merge)
{
	char line[LINE_MAX_LEN];
	unsigned lineno = 0;
	int added = 0;

	while (fgets(line, sizeof(line), f)) {
		int rc;

		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		if (lineno == 1 && strcmp(line, STORE_MAGIC2) == 0 && !st->plain_ok)
			return dust_fail(EPROTO,
			                 "%s: a store from before sealing (SPEC 7.6); run: "
			                 "dust-invite migrate --store %s --key KEY",
			                 st->path, st->path);
		if (lineno == 1 && strcmp(line, STORE_MAGIC) != 0 &&
		    strcmp(line, STORE_MAGIC2) != 0)
			return dust_fail(EINVAL, "%s: not a Dust invitation store", st->path);
		if (lineno == 1 && strcmp(line, STORE_MAGIC) == 0)
			st->plain_ok = false; /* sealed already: nothing to migrate */
		if (line[0] == '#' || line[0] == '\0')
			continue;
		rc = strncmp(line, "I ", 2) == 0 ? invite_line(st, line + 2, merge) : -EINVAL;
		sodium_memzero(line, sizeof(line)); /* the record's hex holds a secret */
		if (rc == -EINVAL)
			return dust_fail(EINVAL, "%s:%u: corrupt invitation record", st->path,
			                 lineno);
		if (rc < 0)
			return dust_fail(-rc, "%s:%u: %s", st->path, lineno, dust_last_error());
		added += rc;
	}
	sodium_memzero(line, sizeof(line));
	if (lineno == 0)
		return dust_fail(EINVAL, "%s: empty file, not a Dust invitation store", st->path);
	return added;
}

/* ---- journal ------------------------------------------------------------- */

void store_revoke_set(struct dust_store_entry *e, uint64_t at)
{
	if (__atomic_load_n(&e->revoked, __ATOMIC_RELAXED))
		return;
	e->revoked_at = at;
	/* release: read without the lock by the intro path */
	__atomic_store_n(&e->revoked, 1, __ATOMIC_RELEASE);
}

static int record_parse(const char *line, struct record *r)
{
	char idhex[64], v1[128], v2[128];

	memset(r, 0, sizeof(*r));
	if (sscanf(line, "%c %63s %127s %127s", &r->kind, idhex, v1, v2) != 4 ||
	    hex_field(r->id, sizeof(r->id), idhex) != 0)
		return -1;
	switch (r->kind) {
	case 'B':
		r->at = strtoull(v2, NULL, 10);
		return hex_field(r->pk, sizeof(r->pk), v1);
	case 'T':
		r->at = strtoull(v1, NULL, 10);
		return hex_field(r->nonce, sizeof(r->nonce), v2);
	case 'R':
		r->at = strtoull(v1, NULL, 10);
		return 0;
	case 'O': /* run markers: O a server started, C it closed with the journal synced */
	case 'C':
		return 0;
	}
	return -1;
}

/* A record's text as record_parse reads it (the journal line without its checksum). */
static void record_body(const struct record *r, char *out, size_t cap)
{
	char idhex[2 * DUST_ID_BYTES + 1], hex[2 * DUST_PK_BYTES + 2 * DUST_XNONCE_BYTES + 1];

	sodium_bin2hex(idhex, sizeof(idhex), r->id, DUST_ID_BYTES);
	if (r->kind == 'B') {
		sodium_bin2hex(hex, sizeof(hex), r->pk, DUST_PK_BYTES);
		snprintf(out, cap, "B %s %s %" PRIu64 " ", idhex, hex, r->at);
	} else if (r->kind == 'T') {
		sodium_bin2hex(hex, sizeof(hex), r->nonce, DUST_XNONCE_BYTES);
		snprintf(out, cap, "T %s %" PRIu64 " %s ", idhex, r->at, hex);
	} else {
		snprintf(out, cap, "R %s %" PRIu64 " - ", idhex, r->at);
	}
}

/*
 * Apply one record. Idempotent, since a running gateway reads its own lines
 * back when it follows the journal: the first binding wins, freshness only
 * moves forward, a revocation stays.
 */
static void record_apply(struct dust_store_entry *e, const struct record *r, int *changed)
{
	entry_lock(e);
	if (r->kind == 'B' && !e->bound) {
		memcpy(e->client_pk, r->pk, DUST_PK_BYTES);
		e->bound_at = r->at;
		__atomic_store_n(&e->bound, 1, __ATOMIC_RELAXED); /* telemetry reads it unlocked */
		*changed += 1;
	} else if (r->kind == 'T' && r->at >= e->last_ts_ms) {
		e->last_ts_ms = r->at;
		memcpy(e->last_nonce, r->nonce, DUST_XNONCE_BYTES);
	} else if (r->kind == 'R') {
		*changed += !e->revoked;
		store_revoke_set(e, r->at);
	}
	entry_unlock(e);
}

/*
 * A binding or revocation of an id not in the store: its invitation was
 * saved after this process last read the invitations file (another writer
 * bound or revoked it in between), or was removed from the file by hand.
 * Kept, applied when the invitation arrives (orphans_apply) and written back
 * by a compaction, so that no record is lost to the order of two reads. A
 * freshness record is not kept (an invitation has one per intro): losing it
 * only lets a replay inside the timestamp window through, as losing an
 * unsynced one in a crash does (SPEC §7).
 */
static int orphan_keep(struct dust_store *st, const struct record *r)
{
	struct record *o;

	if (r->kind == 'T')
		return 0;
	o = realloc(st->orphans, (st->norphans + 1) * sizeof(*o));
	if (!o)
		return dust_fail(ENOMEM, "out of memory");
	st->orphans = o;
	o[st->norphans++] = *r;
	return 0;
}

int store_journal_apply(struct dust_store *st, const char *line, int *changed)
{
	struct dust_store_entry *e;
	struct record r;

	if (record_parse(line, &r) != 0)
		return -1;
	if (r.kind == 'O' || r.kind == 'C') {
		st->dirty = r.kind == 'O';
		return 0;
	}
	e = find_id(st, r.id);
	if (!e)
		return orphan_keep(st, &r) == 0 ? 0 : -1;
	record_apply(e, &r, changed);
	return 0;
}

/*
 * A sealed journal body "K IDHEX SEALHEX - " as its plaintext record
 * "K IDHEX V1 V2 " in out; -1 if it does not open under the storage key.
 */
static int record_unseal(const struct dust_store *st, const char *body, char *out, size_t cap)
{
	char kind, idhex[2 * DUST_ID_BYTES + 1], seal[LINE_MAX_LEN], dash[2];
	uint8_t id[DUST_ID_BYTES], pt[DUST_SEAL_PT_MAX + 1];
	int len;

	if (sscanf(body, "%c %32s %1000s %1s", &kind, idhex, seal, dash) != 4 ||
	    strcmp(dash, "-") != 0 || hex_field(id, sizeof(id), idhex) != 0)
		return -1;
	len = dust_unseal_hex(pt, sizeof(pt) - 1, st->skey, kind, id, seal);
	if (len < 0)
		return -1;
	pt[len] = '\0';
	snprintf(out, cap, "%c %s %s", kind, idhex, (const char *)pt);
	sodium_memzero(pt, sizeof(pt));
	return 0;
}

/*
 * A plaintext record body "K IDHEX V1 V2 " sealed as "K IDHEX SEALHEX - ":
 * V1 V2 encrypted, kind and ID authenticated (SPEC §7.6).
 */
static void record_seal(const struct dust_store *st, const char *body, char *out, size_t cap)
{
	char idhex[2 * DUST_ID_BYTES + 1], seal[2 * (DUST_SEAL_PT_MAX + DUST_SEAL_OVERHEAD) + 1];
	uint8_t id[DUST_ID_BYTES];
	const char *pt = body + 2 + 2 * DUST_ID_BYTES + 1;

	memcpy(idhex, body + 2, 2 * DUST_ID_BYTES);
	idhex[2 * DUST_ID_BYTES] = '\0';
	if (hex_field(id, sizeof(id), idhex) != 0 ||
	    dust_seal_hex(seal, sizeof(seal), st->skey, body[0], id, (const uint8_t *)pt,
	                  strlen(pt)) != 0)
		abort(); /* our own record bodies: always well formed */
	snprintf(out, cap, "%c %s %s - ", body[0], idhex, seal);
}

static int journal_line(struct dust_store *st, char *line, int *changed)
{
	char sum[17], plain[LINE_MAX_LEN], *hash = strrchr(line, '#');
	int rc = 0;

	if (!hash)
		return -1;
	line_sum(line, (size_t)(hash - line), sum);
	if (strcmp(sum, hash + 1) != 0)
		return -1;
	*hash = '\0';
	if (record_unseal(st, line, plain, sizeof(plain)) != 0) {
		if (!st->plain_ok) {
			store_refuse(st); /* written without the key: never applied */
			return 0;
		}
		if (strlen(line) >= sizeof(plain))
			return -1;
		strcpy(plain, line); /* migrating: a pre-sealing record */
	}
	pthread_mutex_lock(&st->lock);
	rc = store_journal_apply(st, plain, changed);
	pthread_mutex_unlock(&st->lock);
	sodium_memzero(plain, sizeof(plain));
	return rc;
}

/*
 * Apply the journal's whole lines from *pos on (and move it). A last line
 * without its newline is left for later: a crash's torn write (its intro
 * was never accepted) or another process's write in progress. Returns how
 * many records changed the state, or -errno.
 */
static int journal_follow(struct dust_store *st, int fd, off_t *pos)
{
	char buf[16384];
	size_t have = 0;
	off_t done = *pos;
	int changed = 0;

	for (;;) {
		ssize_t r = pread(fd, buf + have, sizeof(buf) - have, done + (off_t)have);
		char *p = buf, *nl;

		if (r < 0)
			return dust_fail(errno, "%s: %s", st->journal_path, strerror(errno));
		if (r == 0)
			break;
		have += (size_t)r;
		while ((nl = memchr(p, '\n', have - (size_t)(p - buf))) != NULL) {
			*nl = '\0';
			if (journal_line(st, p, &changed) != 0)
				return dust_fail(EINVAL, "%s: corrupt journal line at byte %lld",
				                 st->journal_path, (long long)(done + (p - buf)));
			st->journal_lines++;
			p = nl + 1;
		}
		if (p == buf && have == sizeof(buf))
			return dust_fail(EINVAL, "%s: journal line too long at byte %lld",
			                 st->journal_path, (long long)done);
		done += p - buf;
		have -= (size_t)(p - buf);
		memmove(buf, p, have);
	}
	*pos = done;
	return changed;
}

/* A journal line: the record sealed, then its checksum (for torn lines only). */
static size_t record_format(const struct dust_store *st, char *out, size_t cap, const char *body)
{
	char sealed[LINE_MAX_LEN], sum[17];
	size_t len;

	record_seal(st, body, sealed, sizeof(sealed));
	line_sum(sealed, strlen(sealed), sum);
	len = (size_t)snprintf(out, cap, "%s#%s\n", sealed, sum);
	return len < cap ? len : 0;
}

static bool same_file(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

/*
 * Writers of one store exclude each other with byte-range locks on
 * <path>.lock, owned by the open file description (F_OFD_SETLK: two handles
 * in one process exclude each other too, and a process that dies drops
 * them): LOCK_INVITES from reading the invitations file to renaming the new
 * one (dust_store_save, or dust_store_lock to _unlock: dust-invite create
 * picks tunnel addresses under it), LOCK_JOURNAL for one journal append or
 * the end of a compaction (journal_compact_live: the tail copy, fsync and
 * rename), LOCK_COMPACT (never waited for) for one whole compaction. A
 * gateway never takes LOCK_INVITES (it reads the file, whole by rename) and
 * holds LOCK_JOURNAL for one write or compaction end, waiting
 * JOURNAL_WAIT_MS for it.
 * The lock file is neither of the files it guards, since both are replaced
 * by rename. It is removed only by a process alone with the store (the
 * journal's flock exclusive) holding both locks (dust_store_discard): a
 * LOCK_INVITES found on a removed file is taken again on the new one, and a
 * process holding the journal's flock has checked its lock file after
 * taking it (dust_store_open), so its appends need no check.
 */
static int lock_open(struct dust_store *st)
{
	int fd = open(st->lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return dust_fail(errno, "%s: %s", st->lock_path, strerror(errno));
	if (st->lock_fd >= 0)
		close(st->lock_fd);
	st->lock_fd = fd;
	return 0;
}

static int range_set(int fd, int byte, short type, bool wait)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1};
	int rc;

	while ((rc = fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl)) != 0 && errno == EINTR)
		;
	return rc == 0 ? 0 : -errno;
}

static void lock_drop(struct dust_store *st, int byte)
{
	(void)range_set(st->lock_fd, byte, F_UNLCK, false);
}

/* Take one lock, waiting wait_ms at most (< 0: for ever). 0, -EAGAIN or -errno. */
static int lock_take(struct dust_store *st, int byte, int wait_ms)
{
	const struct timespec ms = {.tv_nsec = 1000000};

	for (int waited = 0;;) {
		int rc = range_set(st->lock_fd, byte, F_WRLCK, wait_ms < 0);

		if (rc == 0 && (byte == LOCK_JOURNAL || same_file(st->lock_fd, st->lock_path)))
			return 0;
		if (rc == 0) { /* removed and made again: ours locks nothing */
			lock_drop(st, byte);
			if ((rc = lock_open(st)) != 0)
				return rc;
			continue;
		}
		if (rc != -EAGAIN && rc != -EACCES)
			return dust_fail(-rc, "%s: %s", st->lock_path, strerror(-rc));
		if (waited++ >= wait_ms)
			return dust_fail(EAGAIN, "%s: held by another process for over %d ms",
			                 st->lock_path, wait_ms);
		nanosleep(&ms, NULL);
	}
}

/*
 * A dead writer's torn last line (killed mid-write, or a full disk it could
 * not cut back): cut it, or our record would complete it as one corrupt
 * line. Only with LOCK_JOURNAL held: every writer appends under it, so a
 * line without its newline is nobody's write in progress. Readers never
 * applied it (they apply whole lines). Returns the journal's end or -errno.
 */
static off_t journal_mend(int fd)
{
	char tail[LINE_MAX_LEN], *nl;
	struct stat sb;
	off_t from;
	ssize_t n;

	if (fstat(fd, &sb) != 0)
		return -errno;
	if (sb.st_size == 0)
		return 0;
	if (pread(fd, tail, 1, sb.st_size - 1) == 1 && tail[0] == '\n')
		return sb.st_size;
	from = sb.st_size > (off_t)sizeof(tail) ? sb.st_size - (off_t)sizeof(tail) : 0;
	n = pread(fd, tail, (size_t)(sb.st_size - from), from);
	if (n != sb.st_size - from)
		return n < 0 ? -errno : -EIO;
	nl = memrchr(tail, '\n', (size_t)n);
	if (!nl && from > 0)
		return sb.st_size; /* longer than any line: corrupt, the next read says so */
	from += nl ? nl - tail + 1 : 0;
	return ftruncate(fd, from) == 0 ? from : -errno;
}

static int journal_switch(struct dust_store *st, bool synced);
static void journal_compact_due(struct dust_store *st);

static int journal_append(struct dust_store *st, const char *body, bool durable)
{
	char line[LINE_MAX_LEN];
	size_t len = record_format(st, line, sizeof(line), body);
	off_t end = -1;
	int rc;

	pthread_mutex_lock(&st->jlock);
	rc = lock_take(st, LOCK_JOURNAL, JOURNAL_WAIT_MS);
	if (rc) {
		pthread_mutex_unlock(&st->jlock);
		return rc;
	}
	/* compacted since we last looked (renamed over under this lock): write the new file */
	if (!same_file(st->journal_fd, st->journal_path))
		rc = journal_switch(st, false);
	if (!rc) {
		end = journal_mend(st->journal_fd);
		rc = end < 0 ? (int)end : dust_write_all(st->journal_fd, line, len);
	}
	if (!rc && durable && fdatasync(st->journal_fd) != 0)
		rc = -errno;
	/* Leave no half line behind (full disk): cut back to where we started. */
	if (rc && end >= 0 && ftruncate(st->journal_fd, end) == 0)
		(void)fdatasync(st->journal_fd);
	if (!rc) {
		st->journal_unsynced = !durable;
		STEP(st, "append", NULL);
	}
	lock_drop(st, LOCK_JOURNAL);
	pthread_mutex_unlock(&st->jlock);
	if (rc)
		return dust_fail(-rc, "%s: %s", st->journal_path, strerror(-rc));
	st->journal_lines++;
	journal_compact_due(st);
	return 0;
}

static size_t records_format(const struct dust_store *st, const struct record *r, size_t n,
                             char *out, size_t cap)
{
	char body[256];
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		record_body(&r[i], body, sizeof(body));
		len += record_format(st, out + len, cap - len, body);
	}
	return len;
}

static size_t entry_records(const struct dust_store *st, struct dust_store_entry *e, char *out,
                            size_t cap)
{
	struct record r[3];
	size_t n = 0;

	entry_lock(e);
	if (e->bound) {
		r[n] = (struct record){.kind = 'B', .at = e->bound_at};
		memcpy(r[n].id, e->inv.id, DUST_ID_BYTES);
		memcpy(r[n++].pk, e->client_pk, DUST_PK_BYTES);
		r[n] = (struct record){.kind = 'T', .at = e->last_ts_ms};
		memcpy(r[n].id, e->inv.id, DUST_ID_BYTES);
		memcpy(r[n++].nonce, e->last_nonce, DUST_XNONCE_BYTES);
	}
	if (e->revoked) {
		r[n] = (struct record){.kind = 'R', .at = e->revoked_at};
		memcpy(r[n++].id, e->inv.id, DUST_ID_BYTES);
	}
	entry_unlock(e);
	return records_format(st, r, n, out, cap);
}

/*
 * Rewrite the journal from memory, sealed: one binding and one freshness
 * line per used invitation, one per revocation and the records of ids not
 * in the store (orphan_keep). Only alone with the store (the journal's
 * flock exclusive): dust-invite migrate, whose records were read in the
 * clear and so cannot be copied as they are (journal_compact_live).
 */
static int journal_compact(struct dust_store *st)
{
	size_t cap = 512 * (3 * st->n + st->norphans + 1), len = 0;
	char *buf = malloc(cap);
	int rc;

	if (!buf)
		return dust_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < st->n; i++)
		len += entry_records(st, store_entry(st, i), buf + len, cap - len);
	len += records_format(st, st->orphans, st->norphans, buf + len, cap - len);
	/* a run that did not close stays dirty: its lost freshness is not in memory either */
	if (st->dirty)
		len += record_format(st, buf + len, cap - len, RUN_MARK_OPEN);
	rc = dust_file_replace(st->journal_path, buf, len, 0600);
	free(buf);
	return rc;
}

/*
 * Open the journal and flock it: exclusive if nobody else has it open,
 * else shared. One that opened the old file just before a compaction
 * finds it renamed and opens again.
 */
static int journal_lock(struct dust_store *st, bool *excl)
{
	for (int tries = 0; tries < 16; tries++) {
		int fd = open(st->journal_path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		struct stat sb;

		if (fd < 0)
			return dust_fail(errno, "%s: %s", st->journal_path, strerror(errno));
		*excl = flock(fd, LOCK_EX | LOCK_NB) == 0;
		if (!*excl && flock(fd, LOCK_SH) != 0) {
			close(fd);
			return dust_fail(errno, "%s: flock: %s", st->journal_path, strerror(errno));
		}
		if (same_file(fd, st->journal_path)) {
			if (fstat(fd, &sb) == 0 && (sb.st_mode & 077)) {
				close(fd);
				return dust_fail(EPERM,
				                 "%s: holds secrets but is accessible by group or "
				                 "others; run: chmod 600 %s",
				                 st->journal_path, st->journal_path);
			}
			return fd;
		}
		close(fd);
	}
	return dust_fail(EAGAIN, "%s: replaced again and again while opening", st->journal_path);
}

/*
 * The journal was compacted (renamed over): open the new file, read from
 * its start by the next follow (records are idempotent). Only with jlock
 * held. What this process wrote to the old file is in the new one (the
 * compactor copied the old file's end under LOCK_JOURNAL and fsynced);
 * unless synced (the caller is that compactor), what we did not fdatasync
 * yet is synced on the old file, and the directory is fsynced, in case the
 * compactor died between its rename and its directory fsync: what we write
 * next lies in a file whose name stays.
 */
static int journal_switch(struct dust_store *st, bool synced)
{
	bool excl = false;
	struct stat sb;
	int rc = 0, fd;

	if (!synced && st->journal_unsynced && fdatasync(st->journal_fd) != 0)
		return dust_fail(errno, "%s: %s", st->journal_path, strerror(errno));
	if (!synced && (rc = dust_dir_sync(st->journal_path)) != 0)
		return dust_fail(-rc, "%s: directory fsync: %s", st->journal_path, strerror(-rc));
	fd = journal_lock(st, &excl);
	if (fd < 0)
		return fd;
	if (excl && flock(fd, LOCK_SH) != 0) {
		rc = dust_fail(errno, "%s: flock: %s", st->journal_path, strerror(errno));
		close(fd);
		return rc;
	}
	if (st->journal_old_fd >= 0)
		close(st->journal_old_fd);
	st->journal_old_fd = st->journal_fd;
	st->journal_fd = fd;
	st->journal_read = 0;
	st->journal_lines = 0;
	st->journal_unsynced = false;
	if (fstat(fd, &sb) == 0)
		st->journal_live = sb.st_size;
	__atomic_store_n(&st->journal_gen, st->journal_gen + 1, __ATOMIC_RELAXED);
	return 0;
}

/*
 * Follow the journal to its end (dust_store_reload, revoke): first to the
 * new file if it was compacted, read from its start. The read runs without
 * jlock (applying takes the store lock, which a commit holds while it
 * appends); an append that switched meanwhile reset the position.
 */
static int journal_catch_up(struct dust_store *st)
{
	uint64_t gen;
	off_t pos;
	int rc = 0, fd;

	pthread_mutex_lock(&st->jlock);
	if (!same_file(st->journal_fd, st->journal_path))
		rc = journal_switch(st, false);
	fd = st->journal_fd;
	pos = st->journal_read;
	gen = st->journal_gen;
	pthread_mutex_unlock(&st->jlock);
	if (rc || (rc = journal_follow(st, fd, &pos)) < 0)
		return rc;
	pthread_mutex_lock(&st->jlock);
	if (gen == st->journal_gen)
		st->journal_read = pos;
	pthread_mutex_unlock(&st->jlock);
	return rc;
}

/* What a compaction writes, about: the records that memory holds live. */
static off_t journal_live_estimate(const struct dust_store *st)
{
	size_t lines = st->norphans + 1;

	for (size_t i = 0; i < st->n; i++)
		lines += 2 * __atomic_load_n(&store_entry(st, i)->bound, __ATOMIC_RELAXED) +
		         __atomic_load_n(&store_entry(st, i)->revoked, __ATOMIC_RELAXED);
	return (off_t)(lines * LINE_EST);
}

/* One ID's live records in the journal being compacted: pointers to their lines. */
struct fold_slot {
	uint8_t id[DUST_ID_BYTES];
	bool used;
	uint32_t next;       /* insertion order: the output keeps the journal's order */
	const char *line[3]; /* B (the first that opens), T (the newest), R (the first) */
	size_t len[3];
	uint64_t ts; /* the T line's ts_ms */
};

struct fold {
	struct fold_slot *slot;
	uint32_t mask, first, last, n;
	const char *mark; /* the last run marker that opens, if it is an O */
	size_t mark_len;
};

static struct fold_slot *fold_find(struct fold *f, const uint8_t id[DUST_ID_BYTES])
{
	uint32_t i;

	memcpy(&i, id, sizeof(i)); /* IDs are random */
	for (i &= f->mask; f->slot[i].used; i = (i + 1) & f->mask)
		if (memcmp(f->slot[i].id, id, DUST_ID_BYTES) == 0)
			return &f->slot[i];
	f->slot[i].used = true;
	memcpy(f->slot[i].id, id, DUST_ID_BYTES);
	f->slot[i].next = UINT32_MAX;
	if (f->n++)
		f->slot[f->last].next = i;
	else
		f->first = i;
	f->last = i;
	return &f->slot[i];
}

/*
 * One whole line of the journal (without its newline) into the fold, as a
 * reader would apply it: a line that does not open under K_store is
 * skipped (readers skip it), a corrupt one is an error (readers stop there).
 */
static int fold_line(const struct dust_store *st, struct fold *f, const char *p, size_t n)
{
	char line[LINE_MAX_LEN], sum[17], plain[LINE_MAX_LEN];
	const char *hash = memrchr(p, '#', n);
	struct fold_slot *s;
	struct record r;
	int k, rc;

	if (!hash)
		return -1;
	line_sum(p, (size_t)(hash - p), sum);
	if ((size_t)(p + n - hash - 1) != strlen(sum) || memcmp(sum, hash + 1, strlen(sum)) != 0)
		return -1;
	if (n >= sizeof(line))
		return 0; /* longer than any record: does not open, as a reader finds */
	memcpy(line, p, (size_t)(hash - p));
	line[hash - p] = '\0';
	if (record_unseal(st, line, plain, sizeof(plain)) != 0)
		return 0; /* not ours: no reader applies it, and it is not kept */
	rc = record_parse(plain, &r);
	sodium_memzero(plain, sizeof(plain));
	if (rc != 0)
		return -1;
	if (r.kind == 'O' || r.kind == 'C') {
		f->mark = r.kind == 'O' ? p : NULL;
		f->mark_len = n;
		return 0;
	}
	k = r.kind == 'B' ? 0 : r.kind == 'T' ? 1 : 2;
	s = fold_find(f, r.id);
	if (k != 1 && s->line[k])
		return 0; /* the first binding, the first revocation: later ones change nothing */
	if (k == 1 && s->line[k] && r.at < s->ts)
		return 0; /* freshness only moves forward; an equal one is applied, so kept */
	s->line[k] = p;
	s->len[k] = n;
	if (k == 1)
		s->ts = r.at;
	return 0;
}

static int fold_grow(struct fold *f)
{
	struct fold old = *f;
	uint32_t size = 2 * (old.mask + 1);

	f->slot = calloc(size, sizeof(*f->slot));
	if (!f->slot) {
		*f = old;
		return -ENOMEM;
	}
	f->mask = size - 1;
	f->n = 0;
	for (uint32_t i = old.n ? old.first : UINT32_MAX; i != UINT32_MAX; i = old.slot[i].next) {
		struct fold_slot *s = fold_find(f, old.slot[i].id);
		uint32_t next = s->next;

		*s = old.slot[i];
		s->next = next;
	}
	free(old.slot);
	return 0;
}

/*
 * The whole lines of the journal at fd folded (fold_line), read into *buf
 * (the fold points into it); *end: the offset after the last newline.
 */
static int fold_read(const struct dust_store *st, int fd, struct fold *f, char **buf, off_t *end)
{
	struct stat sb;
	size_t len = 0, size;
	const char *p, *nl;

	if (fstat(fd, &sb) != 0)
		return -errno;
	size = (size_t)sb.st_size;
	*buf = malloc(size + 1);
	if (!*buf)
		return -ENOMEM;
	while (len < size) {
		ssize_t r = pread(fd, *buf + len, size - len, (off_t)len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break; /* cut back meanwhile (a writer's failed append) */
		len += (size_t)r;
	}
	for (p = *buf; (nl = memchr(p, '\n', len - (size_t)(p - *buf))) != NULL; p = nl + 1) {
		if (4 * (f->n + 1) >= 3 * (f->mask + 1) && fold_grow(f) != 0)
			return -ENOMEM;
		if (fold_line(st, f, p, (size_t)(nl - p)) != 0)
			return dust_fail(EINVAL,
			                 "%s: corrupt journal line at byte %lld: not compacted",
			                 st->journal_path, (long long)(p - *buf));
	}
	*end = p - *buf;
	return 0;
}

/* The fold as journal lines: per ID its binding, freshness, revocation; then an O. */
static size_t fold_format(const struct fold *f, char *out)
{
	size_t len = 0;

	for (uint32_t i = f->n ? f->first : UINT32_MAX; i != UINT32_MAX; i = f->slot[i].next)
		for (int k = 0; k < 3; k++)
			if (f->slot[i].line[k]) {
				memcpy(out + len, f->slot[i].line[k], f->slot[i].len[k]);
				len += f->slot[i].len[k];
				out[len++] = '\n';
			}
	if (f->mark) {
		memcpy(out + len, f->mark, f->mark_len);
		len += f->mark_len;
		out[len++] = '\n';
	}
	return len;
}

/* What was appended to the journal from `from` on, after the fold in tmp. */
static int tail_copy(int fd, int tmp, off_t from, off_t to)
{
	char buf[16384];

	while (from < to) {
		size_t want = (size_t)(to - from) < sizeof(buf) ? (size_t)(to - from) : sizeof(buf);
		ssize_t r = pread(fd, buf, want, from);
		int rc;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		if ((rc = dust_write_all(tmp, buf, (size_t)r)) != 0)
			return rc;
		from += r;
	}
	return 0;
}

/*
 * Under LOCK_JOURNAL: the rest of the journal after the fold, then fsync,
 * rename over the journal, fsync of the directory, and this process on the
 * new file. 0 done, 1 someone compacted it first, or -errno.
 */
static int compact_commit(struct dust_store *st, int fd, uint64_t gen, int tmpfd, const char *tmp,
                          off_t from)
{
	off_t to;
	int rc;

	if (st->journal_gen != gen || !same_file(fd, st->journal_path))
		return 1;
	to = journal_mend(fd);
	rc = to < 0 ? (int)to : tail_copy(fd, tmpfd, from, to);
	if (rc)
		return rc;
	STEP(st, "write", tmp);
	if (fsync(tmpfd) != 0)
		return -errno;
	STEP(st, "fsync", tmp);
	STEP(st, "prerename", tmp);
	if (rename(tmp, st->journal_path) != 0)
		return -errno;
	STEP(st, "rename", tmp);
	if ((rc = dust_dir_sync(st->journal_path)) != 0) {
		(void)journal_switch(st, false); /* renamed: ours is stale; it syncs again */
		return rc;
	}
	STEP(st, "dirsync", tmp);
	return journal_switch(st, true) == 0 ? 0 : -EIO;
}

/*
 * Compaction while others read and append (SPEC §7): the journal's whole
 * lines folded to what a reader applies (the first binding and revocation
 * of each ID that open under K_store, its newest freshness, the last run
 * marker if an O) and written, as they are, to a temporary file beside it,
 * with no lock held: others keep appending. Then, under LOCK_JOURNAL, what
 * they appended meanwhile is copied after it verbatim (records are
 * idempotent), and compact_commit renames it into place. Every appender
 * checks under LOCK_JOURNAL that its file is still the journal, so nothing
 * is appended to the old file after the copy. Readers switch on their next
 * follow and read the new file from its start.
 */
static int journal_compact_live(struct dust_store *st)
{
	struct fold f = {.mask = 63};
	char tmp[PATH_MAX], *in = NULL, *out = NULL;
	int rc = 0, fd, tmpfd = -1;
	uint64_t gen;
	off_t end = 0;

	pthread_mutex_lock(&st->jlock);
	if (!same_file(st->journal_fd, st->journal_path))
		rc = journal_switch(st, false);
	fd = st->journal_fd;
	gen = st->journal_gen;
	pthread_mutex_unlock(&st->jlock);
	while (!rc && f.mask + 1 < 2 * (st->n + st->norphans + 16))
		f.mask = 2 * f.mask + 1;
	f.slot = rc ? NULL : calloc(f.mask + 1, sizeof(*f.slot));
	if (!rc && !f.slot)
		rc = -ENOMEM;
	if (!rc)
		rc = fold_read(st, fd, &f, &in, &end);
	if (!rc && !(out = malloc((size_t)end + 1)))
		rc = -ENOMEM;
	if (!rc && (tmpfd = dust_file_tmp_create(st->journal_path, 0600, tmp, sizeof(tmp))) < 0)
		rc = tmpfd;
	if (!rc)
		rc = dust_write_all(tmpfd, out, fold_format(&f, out));
	if (!rc) {
		pthread_mutex_lock(&st->jlock);
		rc = lock_take(st, LOCK_JOURNAL, JOURNAL_WAIT_MS);
		if (!rc) {
			rc = compact_commit(st, fd, gen, tmpfd, tmp, end);
			lock_drop(st, LOCK_JOURNAL);
		}
		pthread_mutex_unlock(&st->jlock);
	}
	if (tmpfd >= 0) {
		close(tmpfd);
		if (rc)
			unlink(tmp); /* not renamed (or renamed and failed after: gone already) */
	}
	free(f.slot);
	if (in)
		sodium_memzero(in, (size_t)end);
	free(in);
	free(out);
	if (rc == 0)
		__atomic_add_fetch(&st->compactions, 1, __ATOMIC_RELAXED);
	if (rc < 0)
		return dust_fail(-rc, "%s: not compacted: %s", st->journal_path, strerror(-rc));
	return 0;
}

/*
 * After an append, or at open: compact once the journal outgrew what it
 * compacts to (FACTOR x, plus SLACK). Not waited for: a compaction by
 * another thread or process (LOCK_COMPACT) is enough. A failed one is tried
 * again only after as much growth again.
 */
static void journal_compact_due(struct dust_store *st)
{
	struct stat sb;

	if (st->plain_ok || fstat(st->journal_fd, &sb) != 0 ||
	    sb.st_size <= FACTOR * st->journal_live + SLACK)
		return;
	if (__atomic_exchange_n(&st->compacting, true, __ATOMIC_ACQUIRE))
		return;
	if (range_set(st->lock_fd, LOCK_COMPACT, F_WRLCK, false) == 0) {
		if (journal_compact_live(st) != 0)
			st->journal_live = sb.st_size;
		lock_drop(st, LOCK_COMPACT);
	}
	__atomic_store_n(&st->compacting, false, __ATOMIC_RELEASE);
}

static int journal_open(struct dust_store *st)
{
	for (int tries = 0; tries < 4; tries++) {
		bool excl = false;
		int rc, fd = journal_lock(st, &excl);

		if (fd < 0)
			return fd;
		st->journal_fd = fd;
		st->journal_read = 0;
		st->journal_lines = 0;
		if ((rc = journal_follow(st, fd, &st->journal_read)) < 0)
			return rc;
		if (!excl)
			break;
		/* alone: a torn last line is a crash's; cut it before appending */
		if (ftruncate(fd, st->journal_read) != 0 || flock(fd, LOCK_SH) != 0)
			return dust_fail(errno, "%s: %s", st->journal_path, strerror(errno));
		if (same_file(fd, st->journal_path))
			break;
		close(fd);
		st->journal_fd = -1;
	}
	if (st->journal_fd < 0)
		return dust_fail(EAGAIN, "%s: could not settle the journal", st->journal_path);
	st->journal_live = journal_live_estimate(st);
	return 0;
}

/* Read-only (replay): read the journal through, keep nothing open. */
static int journal_load_readonly(struct dust_store *st)
{
	off_t pos = 0;
	int rc, fd = dust_file_open_private(st->journal_path);

	if (fd < 0)
		return errno == ENOENT ? 0 : fd;
	rc = journal_follow(st, fd, &pos);
	close(fd);
	return rc < 0 ? rc : 0;
}

/* ---- tag index ------------------------------------------------------------ */

/*
 * One writer (the thread that ticks), readers anywhere: the tag is written
 * before the slot's idx is published, and a reader that loads an idx other
 * than EMPTY_SLOT (acquire) sees the whole tag. Slots are only ever added.
 */
static void index_put(struct tag_index *ix, const uint8_t tag[DUST_TAG_BYTES], uint32_t idx)
{
	uint32_t h = (uint32_t)le64_get(tag) & ix->mask;

	while (ix->slots[h].idx != EMPTY_SLOT)
		h = (h + 1) & ix->mask;
	memcpy(ix->slots[h].tag, tag, DUST_TAG_BYTES);
	__atomic_store_n(&ix->slots[h].idx, idx, __ATOMIC_RELEASE);
}

static void index_add(struct dust_store *st, struct tag_index *ix, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		for (uint64_t d = 0; d < 3; d++) {
			uint8_t tag[DUST_TAG_BYTES];

			dust_intro_tag(&store_entry(st, i)->keys, ix->epoch + d - 1, tag);
			index_put(ix, tag, (uint32_t)i);
		}
	}
	ix->nent = to;
}

/* Three tags an entry at most half full, with room for a quarter more entries. */
static struct tag_index *index_build(struct dust_store *st, uint64_t epoch)
{
	uint32_t size = 16;
	struct tag_index *ix;

	while (size < 6 * (st->n + st->n / 4 + 16))
		size <<= 1;
	ix = malloc(sizeof(*ix) + size * sizeof(ix->slots[0]));
	if (!ix)
		return NULL;
	ix->epoch = epoch;
	ix->nent = 0;
	ix->mask = size - 1;
	for (uint32_t i = 0; i < size; i++)
		ix->slots[i].idx = EMPTY_SLOT;
	index_add(st, ix, 0, st->n);
	return ix;
}

DUST_EXPORT int dust_store_tick(struct dust_store *st, uint64_t now_s)
{
	uint64_t epoch = now_s / DUST_EPOCH_S;
	struct tag_index *cur = __atomic_load_n(&st->cur, __ATOMIC_ACQUIRE), *ix;

	if (cur && cur->epoch == epoch && cur->nent == st->n)
		return 0;
	/* new entries of this epoch go into the live index while it has room */
	if (cur && cur->epoch == epoch && 6 * st->n <= (size_t)cur->mask + 1) {
		index_add(st, cur, cur->nent, st->n);
		return 0;
	}
	ix = index_build(st, epoch);
	if (!ix)
		return dust_fail(ENOMEM, "out of memory for the tag index");
	free(st->prev);
	st->prev = cur;
	__atomic_store_n(&st->cur, ix, __ATOMIC_RELEASE);
	return 1;
}

DUST_EXPORT void dust_store_reclaim(struct dust_store *st)
{
	free(st->prev);
	st->prev = NULL;
}

DUST_EXPORT struct dust_store_entry *dust_store_lookup_tag(struct dust_store *st,
                                                           const uint8_t tag[DUST_TAG_BYTES])
{
	struct tag_index *ix = __atomic_load_n(&st->cur, __ATOMIC_ACQUIRE);
	uint32_t h, idx;

	if (!ix)
		return NULL;
	h = (uint32_t)le64_get(tag) & ix->mask;
	for (; (idx = __atomic_load_n(&ix->slots[h].idx, __ATOMIC_ACQUIRE)) != EMPTY_SLOT;
	     h = (h + 1) & ix->mask)
		if (crypto_verify_16(ix->slots[h].tag, tag) == 0)
			return store_entry(st, idx);
	return NULL;
}

/* ---- open / close ---------------------------------------------------------- */

static void mark_take(struct file_mark *m, const struct stat *sb)
{
	m->dev = sb->st_dev;
	m->ino = sb->st_ino;
	m->size = sb->st_size;
	m->mtime = sb->st_mtim;
}

static bool mark_same(const struct file_mark *m, const struct stat *sb)
{
	return m->dev == sb->st_dev && m->ino == sb->st_ino && m->size == sb->st_size &&
	       m->mtime.tv_sec == sb->st_mtim.tv_sec && m->mtime.tv_nsec == sb->st_mtim.tv_nsec;
}

static int load_invites_file(struct dust_store *st, int flags, bool merge)
{
	struct stat sb;
	FILE *f;
	int rc, fd = dust_file_open_private(st->path);

	if (fd < 0 && errno == ENOENT && (flags & DUST_STORE_CREATE) && !st->readonly)
		return dust_store_save(st);
	if (fd < 0)
		return fd;
	if (fstat(fd, &sb) == 0)
		mark_take(&st->invites_mark, &sb);
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return dust_fail(errno, "%s: %s", st->path, strerror(errno));
	}
	rc = load_invites(st, f, merge);
	fclose(f);
	return rc;
}

/* ---- writing the invitations file --------------------------------------------- */

/* Rewrite the invitations file from memory; only with LOCK_INVITES held. */
static int invites_write(struct dust_store *st)
{
	size_t linelen =
	    2 + 2 * DUST_ID_BYTES + 1 + 2 * (DUST_INVITE_PT_MAX + DUST_SEAL_OVERHEAD) + 1;
	size_t len = sizeof(STORE_MAGIC) + st->n * linelen;
	struct stat sb;
	char *buf, *p;
	int rc;

	buf = malloc(len + 1);
	if (!buf)
		return dust_fail(ENOMEM, "out of memory");
	p = buf + sprintf(buf, "%s\n", STORE_MAGIC);
	for (size_t i = 0; i < st->n; i++) {
		uint8_t pt[DUST_INVITE_PT_MAX];
		size_t ptlen = dust_invite_pt_len(&store_entry(st, i)->inv);

		dust_invite_pack_full(&store_entry(st, i)->inv, pt);
		*p++ = 'I';
		*p++ = ' ';
		sodium_bin2hex(p, 2 * DUST_ID_BYTES + 1, store_entry(st, i)->inv.id, DUST_ID_BYTES);
		p += 2 * DUST_ID_BYTES;
		*p++ = ' ';
		/* sealed (SPEC §7.6): K_inv never rests in the clear */
		if (dust_seal_hex(p, 2 * (ptlen + DUST_SEAL_OVERHEAD) + 1, st->skey, 'I',
		                  store_entry(st, i)->inv.id, pt, ptlen) != 0)
			abort(); /* ptlen <= DUST_INVITE_PT_MAX < DUST_SEAL_PT_MAX */
		p += 2 * (ptlen + DUST_SEAL_OVERHEAD);
		*p++ = '\n';
		sodium_memzero(pt, sizeof(pt));
	}
	rc = dust_file_replace(st->path, buf, (size_t)(p - buf), 0600);
	sodium_memzero(buf, len + 1);
	free(buf);
	/* our own file: the next reload has nothing to read in it */
	if (rc == 0 && stat(st->path, &sb) == 0)
		mark_take(&st->invites_mark, &sb);
	return rc;
}

/*
 * What other writers saved since this process read the invitations file,
 * merged (ids known already are skipped). A missing file (a first save) has
 * nothing to merge.
 */
static int invites_merge(struct dust_store *st)
{
	struct stat sb;
	int rc;

	if (stat(st->path, &sb) != 0)
		return errno == ENOENT ? 0 : dust_fail(errno, "%s: %s", st->path, strerror(errno));
	if (mark_same(&st->invites_mark, &sb))
		return 0;
	rc = load_invites_file(st, 0, true);
	return rc < 0 ? rc : 0;
}

static int file_lock(struct dust_store *st)
{
	int rc;

	if (st->invites_locked)
		return 0;
	if ((rc = lock_take(st, LOCK_INVITES, -1)) != 0)
		return rc;
	st->invites_locked = true;
	if ((rc = invites_merge(st)) != 0)
		dust_store_unlock(st);
	return rc;
}

/* 0 if st may be written; else -EROFS, with the reason for dust_last_error. */
static int store_writable(const struct dust_store *st)
{
	return st->readonly ? dust_fail(EROFS, "%s: store opened read-only", st->path) : 0;
}

DUST_EXPORT int dust_store_lock(struct dust_store *st)
{
	int rc = store_writable(st);

	return rc ? rc : st->ops->lock(st);
}

DUST_EXPORT void dust_store_unlock(struct dust_store *st)
{
	if (!st->invites_locked)
		return;
	lock_drop(st, LOCK_INVITES);
	st->invites_locked = false;
}

/*
 * Under LOCK_INVITES, so that two writers never both rewrite the file from
 * what each read before the other's save (each one's invitations lost).
 */
static int file_save(struct dust_store *st)
{
	bool held = st->invites_locked;
	int rc;

	if (!held && (rc = file_lock(st)) != 0)
		return rc;
	rc = invites_write(st);
	if (!held)
		dust_store_unlock(st);
	return rc;
}

DUST_EXPORT int dust_store_save(struct dust_store *st)
{
	int rc = store_writable(st);

	return rc ? rc : st->ops->save(st);
}

/* ---- reload, open / close ------------------------------------------------------ */

/* Records read before their invitation was: apply them now, keep the rest in order. */
int store_orphans_apply(struct dust_store *st)
{
	size_t kept = 0;
	int changed = 0;

	pthread_mutex_lock(&st->lock);
	for (size_t i = 0; i < st->norphans; i++) {
		struct dust_store_entry *e = find_id(st, st->orphans[i].id);

		if (e)
			record_apply(e, &st->orphans[i], &changed);
		else
			st->orphans[kept++] = st->orphans[i];
	}
	st->norphans = kept;
	pthread_mutex_unlock(&st->lock);
	return changed;
}

/* The invitations file if another process rewrote it, then the journal's new lines. */
static int file_follow(struct dust_store *st)
{
	struct stat sb;
	int rc, changed = 0;

	if (stat(st->path, &sb) == 0 && !mark_same(&st->invites_mark, &sb)) {
		rc = load_invites_file(st, 0, true);
		if (rc < 0)
			return rc;
		changed += rc;
	}
	if (st->journal_fd >= 0) {
		rc = journal_catch_up(st);
		if (rc < 0)
			return rc;
		changed += rc;
	}
	return changed;
}

DUST_EXPORT int dust_store_reload(struct dust_store *st)
{
	int changed = st->ops->follow(st);

	if (changed < 0)
		return changed;
	changed += store_orphans_apply(st);
	if (changed > 0)
		__atomic_store_n(&st->gen, st->gen + 1, __ATOMIC_RELAXED); /* telemetry reads it */
	return changed;
}

DUST_EXPORT uint64_t dust_store_generation(const struct dust_store *st)
{
	return __atomic_load_n(&st->gen, __ATOMIC_RELAXED);
}

/*
 * A pre-sealing store read with DUST_STORE_MIGRATE, rewritten sealed: the
 * journal first (compacted), then the invitations file, each by rename, so
 * a crash in between leaves a store that the next migrate finishes. Alone
 * with the store, so that no process writes a plaintext record meanwhile
 * nor reads the new format with an old binary.
 */
static int file_migrate(struct dust_store *st)
{
	int rc;

	if (flock(st->journal_fd, LOCK_EX | LOCK_NB) != 0)
		return dust_fail(
		    EBUSY, "%s: in use by another process; stop the gateways to migrate", st->path);
	rc = journal_compact(st);
	if (flock(st->journal_fd, LOCK_SH) != 0 && !rc)
		rc = dust_fail(errno, "%s: flock: %s", st->journal_path, strerror(errno));
	if (!rc)
		rc = file_save(st);
	st->plain_ok = false;
	return rc;
}

DUST_EXPORT uint64_t dust_store_refused(const struct dust_store *st)
{
	return __atomic_load_n(&st->refused, __ATOMIC_RELAXED) + st->ops->refused(st);
}

/* Invitations file, then journal; with the journal's flock from here on. */
static int file_open(struct dust_store *st, int flags)
{
	int rc = st->readonly ? 0 : lock_open(st);

	if (!rc)
		rc = load_invites_file(st, flags, false);
	if (rc > 0)
		rc = 0;
	if (!rc)
		rc = st->readonly ? journal_load_readonly(st) : journal_open(st);
	if (!rc && st->plain_ok)
		rc = file_migrate(st);
	/* with the journal's flock: nobody removes the lock file from now on */
	if (!rc && !st->readonly && !same_file(st->lock_fd, st->lock_path))
		rc = lock_open(st);
	/* grown while nobody compacted (an older binary): a failure leaves it as it is */
	if (!rc && !st->readonly)
		journal_compact_due(st);
	return rc;
}

static const struct store_ops file_ops;

DUST_EXPORT struct dust_store *dust_store_open(const char *path, int flags,
                                               const struct dust_identity *server)
{
	struct dust_store *st;
	int rc;

	if (!server) {
		dust_fail(EINVAL, "%s: the store needs the server key", path);
		return NULL;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		dust_fail(ENOMEM, "out of memory");
		return NULL;
	}
	st->ops = etcd_is_url(path) ? &store_etcd_ops : &file_ops;
	dust_store_key_derive(st->skey, server->sk);
	(void)sodium_mlock(st->skey, sizeof(st->skey));
	st->plain_ok = (flags & DUST_STORE_MIGRATE) && !(flags & DUST_STORE_READONLY);
	st->journal_fd = -1;
	st->journal_old_fd = -1;
	st->lock_fd = -1;
	pthread_mutex_init(&st->lock, NULL);
	pthread_mutex_init(&st->jlock, NULL);
	st->path = strdup(path);
	if (!st->path || asprintf(&st->journal_path, "%s.bind", path) < 0 ||
	    asprintf(&st->lock_path, "%s.lock", path) < 0) {
		dust_fail(ENOMEM, "out of memory");
		goto err_free;
	}
	st->readonly = (flags & DUST_STORE_READONLY) != 0;
	rc = st->ops->open(st, flags);
	if (rc > 0)
		rc = 0;
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
	st->ops->close(st); /* etcd: its threads stop before the entries go */
	for (size_t k = 0; k < (st->cap >> CHUNK_SHIFT); k++) {
		sodium_munlock(st->chunk[k], CHUNK_LEN * sizeof(struct dust_store_entry));
		free(st->chunk[k]); /* munlock also zeroes */
	}
	sodium_munlock(st->skey, sizeof(st->skey)); /* also zeroes */
	free(st->commits);
	free(st->orphans);
	free(st->id_index);
	free(st->cur);
	free(st->prev);
	free(st->path);
	free(st->journal_path);
	free(st->lock_path);
	pthread_mutex_destroy(&st->jlock);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

static void file_close(struct dust_store *st)
{
	if (st->journal_fd >= 0) {
		/* everything this run wrote is synced by the C record's own sync */
		if (st->marked)
			(void)journal_append(st, RUN_MARK_CLOSE, true);
		else
			(void)fdatasync(st->journal_fd);
		close(st->journal_fd); /* drops the flock */
	}
	if (st->journal_old_fd >= 0)
		close(st->journal_old_fd);
	if (st->lock_fd >= 0)
		close(st->lock_fd); /* drops its locks */
}

DUST_EXPORT int dust_store_run_begin(struct dust_store *st, bool *was_clean)
{
	*was_clean = false;
	return st->readonly ? 0 : st->ops->run_begin(st, was_clean);
}

static int file_run_begin(struct dust_store *st, bool *was_clean)
{
	int rc;

	if (st->journal_fd < 0)
		return 0;
	pthread_mutex_lock(&st->lock);
	*was_clean = !st->dirty;
	rc = journal_append(st, RUN_MARK_OPEN, true);
	if (rc == 0)
		st->marked = true;
	pthread_mutex_unlock(&st->lock);
	return rc;
}

/*
 * Alone (the journal's flock exclusive: nobody else has the store open)
 * and with both locks, so that nobody is reading or about to write what
 * goes, and a process that opens the store next makes it anew.
 */
static void file_discard(struct dust_store *st)
{
	struct stat sb, jb;

	if (!st->readonly && st->journal_fd >= 0 && flock(st->journal_fd, LOCK_EX | LOCK_NB) == 0 &&
	    lock_take(st, LOCK_INVITES, JOURNAL_WAIT_MS) == 0 &&
	    lock_take(st, LOCK_JOURNAL, JOURNAL_WAIT_MS) == 0 && stat(st->path, &sb) == 0 &&
	    sb.st_size == (off_t)sizeof(STORE_MAGIC) && fstat(st->journal_fd, &jb) == 0 &&
	    jb.st_size == 0 && same_file(st->journal_fd, st->journal_path)) {
		unlink(st->path);
		unlink(st->journal_path);
		unlink(st->lock_path);
	}
}

DUST_EXPORT void dust_store_discard(struct dust_store *st)
{
	if (!st)
		return;
	st->ops->discard(st);
	dust_store_close(st);
}

DUST_EXPORT size_t dust_store_count(const struct dust_store *st)
{
	return __atomic_load_n(&st->n, __ATOMIC_ACQUIRE);
}

DUST_EXPORT struct dust_store_entry *dust_store_at(struct dust_store *st, size_t idx)
{
	return idx < dust_store_count(st) ? store_entry(st, idx) : NULL;
}

DUST_EXPORT uint32_t dust_store_index(const struct dust_store *st, const struct dust_store_entry *e)
{
	(void)st;
	return e->idx;
}

DUST_EXPORT int dust_store_add(struct dust_store *st, const struct dust_invite *inv)
{
	return entry_add(st, inv);
}

/* ---- intro commit ------------------------------------------------------------ */

void dust_store_view_get(struct dust_store *st, const struct dust_store_entry *e,
                         struct dust_store_view *v)
{
	(void)st;
	entry_lock((struct dust_store_entry *)(uintptr_t)e);
	v->bound = e->bound;
	memcpy(v->client_pk, e->client_pk, DUST_PK_BYTES);
	memcpy(v->static_ss, e->static_ss, DUST_KEY_BYTES);
	v->last_ts_ms = e->last_ts_ms;
	memcpy(v->last_nonce, e->last_nonce, DUST_XNONCE_BYTES);
	entry_unlock((struct dust_store_entry *)(uintptr_t)e);
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
                                 bool *first_use, bool *held)
{
	/*
	 * A store that writes its journal here (not deferred: dust-invite, the
	 * tests) serialises these writes under st->lock, which every other
	 * writer of an entry holds too. A deferred store (dustgw) writes none:
	 * its workers take only the entry's lock (F4: never a mutex that a
	 * thread holds across the disk).
	 */
	bool io = !st->readonly && !st->deferred;
	enum dust_drop d = DUST_OK;

	if (io)
		pthread_mutex_lock(&st->lock);
	entry_lock(e);
	*first_use = *held = false;
	if (e->revoked)
		d = DUST_DROP_INTRO_REVOKED;
	else if (e->bound && sodium_memcmp(e->client_pk, client_pk, DUST_PK_BYTES) != 0)
		d = DUST_DROP_INTRO_WRONG_KEY;
	else if (ts_ms == e->last_ts_ms &&
	         sodium_memcmp(nonce, e->last_nonce, DUST_XNONCE_BYTES) == 0)
		d = DUST_DROP_INTRO_DUP;
	else if (ts_ms <= e->last_ts_ms)
		d = DUST_DROP_INTRO_REPLAY;
	if (d == DUST_OK && !e->bound && io) {
		/* no disk under the entry's lock; st->lock keeps every other writer out */
		entry_unlock(e);
		if (bind_persist(st, e, client_pk, now_s) != 0)
			d = DUST_DROP_INTRO_PERSIST;
		entry_lock(e);
	}
	if (d == DUST_OK) {
		if (!e->bound) {
			memcpy(e->client_pk, client_pk, DUST_PK_BYTES);
			e->bound_at = now_s;
			__atomic_store_n(&e->bound, 1, __ATOMIC_RELAXED);
			e->bind_pending = st->deferred && !st->readonly;
			*first_use = true;
		}
		/* deferred: a binding not yet durable holds every session of it back */
		*first_use |= e->bind_pending;
		/* etcd: a returning client's freshness commits cluster-wide before its answer */
		if (st->ops->cluster && !st->readonly && !e->bind_pending)
			e->fresh_pending = 1;
		*held = e->bind_pending || e->fresh_pending;
		memcpy(e->static_ss, static_ss, DUST_KEY_BYTES);
		e->last_ts_ms = ts_ms;
		memcpy(e->last_nonce, nonce, DUST_XNONCE_BYTES);
	}
	entry_unlock(e);
	if (io) {
		if (d == DUST_OK)
			fresh_record(st, e);
		pthread_mutex_unlock(&st->lock);
	}
	return d;
}

/* ---- revocation ---------------------------------------------------------------- */

DUST_EXPORT struct dust_store_entry *dust_store_find(struct dust_store *st,
                                                     const uint8_t id[DUST_ID_BYTES])
{
	return find_id(st, id);
}

DUST_EXPORT int dust_store_revoke(struct dust_store *st, struct dust_store_entry *e, uint64_t now_s)
{
	int rc = store_writable(st);

	return rc ? rc : st->ops->revoke(st, e, now_s);
}

static int file_revoke(struct dust_store *st, struct dust_store_entry *e, uint64_t now_s)
{
	char body[128], idhex[2 * DUST_ID_BYTES + 1];
	int rc = 0;

	sodium_bin2hex(idhex, sizeof(idhex), e->inv.id, DUST_ID_BYTES);
	snprintf(body, sizeof(body), "R %s %" PRIu64 " - ", idhex, now_s);
	/* what other processes wrote since we opened: a revocation of theirs is EALREADY */
	if ((rc = journal_catch_up(st)) < 0)
		return rc;
	pthread_mutex_lock(&st->lock);
	if (e->revoked)
		rc = dust_fail(EALREADY, "invitation already revoked");
	else if ((rc = journal_append(st, body, true)) == 0)
		store_revoke_set(e, now_s);
	pthread_mutex_unlock(&st->lock);
	return rc;
}

/* ---- deferred commits: the journal written by one thread off the data path ---- */

DUST_EXPORT void dust_store_set_deferred(struct dust_store *st, bool deferred)
{
	st->deferred = deferred || st->ops->cluster; /* etcd: every commit goes through a thread */
}

/*
 * Only the thread that persists writes the journal of a deferred store, so
 * the write and the fsync need no lock: the store lock is held only to copy
 * the entry's state and to mark the outcome, never across the disk.
 */
static int file_write(struct dust_store *st, struct dust_store_entry *e)
{
	char body[256], idhex[2 * DUST_ID_BYTES + 1], pkhex[2 * DUST_PK_BYTES + 1];
	bool pending;
	uint64_t at;

	entry_lock(e);
	pending = e->bound && e->bind_pending;
	sodium_bin2hex(pkhex, sizeof(pkhex), e->client_pk, DUST_PK_BYTES);
	at = e->bound_at;
	entry_unlock(e);
	if (!pending)
		return 0;
	sodium_bin2hex(idhex, sizeof(idhex), e->inv.id, DUST_ID_BYTES);
	snprintf(body, sizeof(body), "B %s %s %" PRIu64 " ", idhex, pkhex, at);
	return journal_append(st, body, false);
}

DUST_EXPORT int dust_store_sync(struct dust_store *st)
{
	int rc = 0;

	if (st->journal_fd < 0)
		return 0;
	/* a file that a compaction replaced since: its copy of our records is synced */
	pthread_mutex_lock(&st->jlock);
	if (fdatasync(st->journal_fd) != 0)
		rc = dust_fail(errno, "%s: %s", st->journal_path, strerror(errno));
	else
		st->journal_unsynced = false;
	pthread_mutex_unlock(&st->jlock);
	return rc;
}

DUST_EXPORT uint64_t dust_store_compactions(const struct dust_store *st)
{
	return __atomic_load_n(&st->compactions, __ATOMIC_RELAXED);
}

/* A pending binding made durable, or undone (never durable, never answered). */
static void persist_done(struct dust_store *st, struct dust_store_entry *e, bool durable)
{
	(void)st;
	entry_lock(e);
	if (e->bind_pending && !durable) {
		/* never durable, never answered: the invitation is unused again */
		__atomic_store_n(&e->bound, 0, __ATOMIC_RELAXED);
		sodium_memzero(e->client_pk, DUST_PK_BYTES);
		sodium_memzero(e->static_ss, DUST_KEY_BYTES);
	}
	e->bind_pending = 0;
	entry_unlock(e);
}

DUST_EXPORT void dust_store_persist_fresh(struct dust_store *st, struct dust_store_entry *e)
{
	struct dust_store_entry snap;

	if (st->readonly)
		return;
	entry_lock(e);
	memcpy(snap.inv.id, e->inv.id, DUST_ID_BYTES);
	snap.last_ts_ms = e->last_ts_ms;
	memcpy(snap.last_nonce, e->last_nonce, DUST_XNONCE_BYTES);
	entry_unlock(e);
	st->ops->fresh(st, &snap);
	sodium_memzero(&snap, sizeof(snap));
}

/* ---- the etcd backend: store_etcd_ops.c, or none in this build ----------------- */

#ifndef DUST_HAVE_ETCD
/* No etcd in this build: open fails, so that nothing else is ever called. */
static int store_etcd_open(struct dust_store *st, int flags)
{
	(void)flags;
	return dust_fail(ENOTSUP, "%s: this build has no etcd support (needs libcurl and jansson)",
	                 st->path);
}

static void store_etcd_close(struct dust_store *st)
{
	(void)st;
}

const struct store_ops store_etcd_ops = {
    .name = "etcd",
    .open = store_etcd_open,
    .close = store_etcd_close,
};
#endif

/* ---- the file store's operations, and the calls through the table ------------- */

static int commits_grow(struct dust_store *st)
{
	size_t cap = st->commits_cap ? 2 * st->commits_cap : 256;
	struct file_commit *c = realloc(st->commits, cap * sizeof(*c));

	if (!c)
		return dust_fail(ENOMEM, "out of memory");
	st->commits = c;
	st->commits_cap = cap;
	return 0;
}

/*
 * The binding written now, not synced: the next poll's one fdatasync makes
 * every binding submitted before it durable (group commit). A write that
 * failed is refused at that poll, as a failed fdatasync refuses them all.
 */
static int file_submit(struct dust_store *st, struct dust_store_entry *e, uint32_t cookie)
{
	struct file_commit *c;

	if (st->ncommits == st->commits_cap && commits_grow(st) != 0)
		return -ENOMEM;
	c = &st->commits[st->ncommits++];
	c->idx = e->idx;
	c->cookie = cookie;
	c->rc = file_write(st, e);
	return 0;
}

/* One fdatasync for every commit waiting, then each applied to its entry. */
static void file_round(struct dust_store *st)
{
	int sync = dust_store_sync(st);

	for (size_t i = 0; i < st->ncommits; i++) {
		struct file_commit *c = &st->commits[i];
		struct dust_store_entry *e = store_entry(st, c->idx);
		bool ok = c->rc == 0 && sync == 0;

		persist_done(st, e, ok);
		if (ok)
			dust_store_persist_fresh(st, e); /* as an etcd binding's txn writes it */
		c->drop = ok ? DUST_OK : DUST_DROP_INTRO_PERSIST;
	}
	st->nready = st->ncommits;
	st->ready_at = 0;
}

/*
 * Outcomes of the last round first; once all are out, a new round for what
 * was submitted since. Never an outcome before its fdatasync returned.
 */
static unsigned file_poll(struct dust_store *st, struct dust_store_outcome *out, unsigned max)
{
	unsigned n = 0;

	if (st->ready_at == st->nready) {
		/* no commit yet: commits may still be NULL, which memmove may not take */
		if (st->nready)
			memmove(st->commits, st->commits + st->nready,
			        (st->ncommits - st->nready) * sizeof(*st->commits));
		st->ncommits -= st->nready;
		st->nready = st->ready_at = 0;
		if (st->ncommits)
			file_round(st);
	}
	for (; n < max && st->ready_at < st->nready; n++, st->ready_at++) {
		const struct file_commit *c = &st->commits[st->ready_at];

		out[n] = (struct dust_store_outcome){
		    .idx = c->idx, .cookie = c->cookie, .drop = c->drop};
	}
	return n;
}

static uint64_t file_refused(const struct dust_store *st)
{
	(void)st;
	return 0;
}

static int64_t file_revision(const struct dust_store *st)
{
	(void)st;
	return -1;
}

static const struct store_ops file_ops = {
    .name = "file",
    .open = file_open,
    .follow = file_follow,
    .lock = file_lock,
    .save = file_save,
    .revoke = file_revoke,
    .run_begin = file_run_begin,
    .fresh = fresh_record,
    .submit = file_submit,
    .poll = file_poll,
    .refused = file_refused,
    .revision = file_revision,
    .discard = file_discard,
    .close = file_close,
};

/* A commit that cannot be queued is undone here: the caller refuses its intro. */
DUST_EXPORT int dust_store_persist_submit(struct dust_store *st, struct dust_store_entry *e,
                                          uint32_t cookie)
{
	int rc = store_writable(st);

	if (rc)
		return rc;
	rc = st->ops->submit(st, e, cookie);
	if (rc)
		persist_done(st, e, false);
	return rc;
}

DUST_EXPORT unsigned dust_store_persist_poll(struct dust_store *st, struct dust_store_outcome *out,
                                             unsigned max)
{
	return st->readonly ? 0 : st->ops->poll(st, out, max);
}

DUST_EXPORT int64_t dust_store_revision(const struct dust_store *st)
{
	return st->ops->revision(st);
}

DUST_EXPORT const char *dust_store_backend(const struct dust_store *st)
{
	return st->ops->name;
}
