/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The invitation store's insides, shared by its two backends (SPEC §7.7):
 * store.c (entries, indexes, commits in memory, and the file backend) and
 * store_etcd_ops.c (the etcd backend's glue over store_etcd.c). Private to
 * libdust: nothing outside lib/dust includes it.
 */
#ifndef DUST_STORE_PVT_H
#define DUST_STORE_PVT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "dust.h"

#define LINE_MAX_LEN 1024
/* Entries live in chunks that never move: 4096 chunks of 1024, 4M invitations. */
#define CHUNK_SHIFT 10
#define CHUNK_LEN   (1u << CHUNK_SHIFT)
#define CHUNKS_MAX  4096

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

/* One journal record: B binding, T freshness, R revocation. */
struct record {
	char kind;
	uint8_t id[DUST_ID_BYTES];
	uint8_t pk[DUST_PK_BYTES];        /* B: the client's key */
	uint8_t nonce[DUST_XNONCE_BYTES]; /* T: the newest intro's nonce */
	uint64_t at;                      /* B, R: unix seconds; T: the intro's ts_ms */
};

/*
 * A first use the file store wrote at submit and reports at a poll: after
 * the poll round's one fdatasync (group commit), with drop its outcome.
 */
struct file_commit {
	uint32_t idx, cookie;
	int rc; /* the write's: a failed one is refused at the round */
	enum dust_drop drop;
};

/* What a file looked like when it was last read, to notice a change. */
struct file_mark {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

/* The journal's run markers (SPEC §7): a server started (O), it closed synced (C). */
#define RUN_MARK_OPEN  "O 00000000000000000000000000000000 - - "
#define RUN_MARK_CLOSE "C 00000000000000000000000000000000 - - "

/*
 * What the two backends (SPEC §7) do differently: the file store (the
 * invitations file and the journal, this file) and the etcd store (the glue
 * at the end of this file; store_etcd.c does the network). Entries, the
 * indexes and a commit's checks in memory are shared. Every operation is
 * called only on a store its open succeeded for, except close and discard.
 */
struct store_ops {
	const char *name; /* dust_store_backend() */
	/* Load everything (and migrate when plain_ok); 0 or -errno. */
	int (*open)(struct dust_store *st, int flags);
	/* What other processes wrote since: entries changed, or -errno. */
	int (*follow)(struct dust_store *st);
	/* Writers: dust_store_lock, _save and _revoke, after the read-only check. */
	int (*lock)(struct dust_store *st);
	int (*save)(struct dust_store *st);
	int (*revoke)(struct dust_store *st, struct dust_store_entry *e, uint64_t now_s);
	int (*run_begin)(struct dust_store *st, bool *was_clean);
	/* An accepted intro's freshness, best effort (a snapshot of the entry). */
	void (*fresh)(struct dust_store *st, const struct dust_store_entry *snap);
	/* The asynchronous commit of a first use (dust_store_persist_submit/_poll). */
	int (*submit)(struct dust_store *st, struct dust_store_entry *e, uint32_t cookie);
	unsigned (*poll)(struct dust_store *st, struct dust_store_outcome *out, unsigned max);
	/* Records refused beyond those counted in st->refused. */
	uint64_t (*refused)(const struct dust_store *st);
	int64_t (*revision)(const struct dust_store *st);
	/* Remove the store's files when nothing was ever written; before close. */
	void (*discard)(struct dust_store *st);
	/* Let go of the backend's own resources (its threads stop first). */
	void (*close)(struct dust_store *st);
	/*
	 * Commits are cluster-wide: always deferred, and a returning client's
	 * freshness commits before its answer too.
	 */
	bool cluster;
};

struct dust_store {
	const struct store_ops *ops;
	char *path;
	char *journal_path;
	char *lock_path;
	int journal_fd;        /* holds a shared flock: alone (exclusive) means nobody else */
	int journal_old_fd;    /* the file before the last switch: a follow in flight reads it */
	uint64_t journal_gen;  /* switches to a compacted file (journal_switch), under jlock */
	off_t journal_live;    /* bytes the journal compacts to (about): compact past a multiple */
	bool journal_unsynced; /* appended since the last fdatasync */
	bool compacting;       /* atomic: one compaction at a time in this process */
	uint64_t compactions;  /* atomic: compactions this process did */
	int lock_fd;           /* <path>.lock: the writers' byte-range locks (lock_take) */
	bool invites_locked;   /* dust_store_lock holds LOCK_INVITES */
	size_t journal_lines;
	off_t journal_read; /* bytes of the journal applied (whole lines) */
	struct file_mark invites_mark;
	uint64_t gen;           /* changes merged by dust_store_reload */
	struct record *orphans; /* B and R records of ids not (yet) in the store */
	size_t norphans;
	struct dust_store_entry *chunk[CHUNKS_MAX];
	size_t n, cap;      /* n: atomic (readers on other threads) */
	uint32_t *id_index; /* entry index + 1, 0 = empty; id_size slots */
	size_t id_size;
	struct tag_index *cur;  /* atomic: read by lookups on any thread */
	struct tag_index *prev; /* freed by dust_store_reclaim or at the next rebuild */
	pthread_mutex_t lock;   /* serialises commits and journal writes */
	pthread_mutex_t jlock;  /* one journal append at a time in this process */
	bool readonly;          /* DUST_STORE_READONLY: memory only */
	bool deferred;          /* commits touch memory only; dust_store_persist writes */
	/*
	 * The journal's run markers (SPEC §7): dirty while a server that writes
	 * freshness has it open (an O record since the last C). marked: this
	 * process wrote the O, and closes with a C once everything is synced.
	 */
	bool dirty, marked;
	/*
	 * The file store's commits (file_submit, file_poll): commits[0, nready)
	 * synced, their outcomes reported from ready_at on; the rest written,
	 * waiting for the next round. Only the thread that persists uses them.
	 */
	struct file_commit *commits;
	size_t ncommits, commits_cap, nready, ready_at;
	/* etcd:// store (SPEC §7.5): no files; etcd_saved entries are in etcd */
	struct etcd_store *etcd;
	size_t etcd_saved;
	uint8_t skey[DUST_KEY_BYTES]; /* the storage key (SPEC §7.6), from the server key */
	bool plain_ok;                /* migrating a pre-sealing store: plaintext records read */
	uint64_t refused;             /* records not sealed under skey: skipped (atomic) */
};

/* The etcd backend's operations (store_etcd_ops.c; a build without etcd: open fails). */
extern const struct store_ops store_etcd_ops;

static inline struct dust_store_entry *store_entry(const struct dust_store *st, size_t idx)
{
	return &st->chunk[idx >> CHUNK_SHIFT][idx & (CHUNK_LEN - 1)];
}

/*
 * What both backends load through (store.c): an invitation record, sealed
 * ("IDHEX SEAL") or in the clear (hex: migration only), added or merged;
 * one journal record line ("K IDHEX ...") applied under st->lock; records
 * read before their invitation applied once it is there; a record not
 * sealed under the storage key counted; a revocation set on an entry.
 */
int store_invite_sealed(struct dust_store *st, const char *text, bool merge);
int store_invite_hex(struct dust_store *st, const char *hex, bool merge);
int store_journal_apply(struct dust_store *st, const char *line, int *changed);
int store_orphans_apply(struct dust_store *st);
void store_refuse(struct dust_store *st);
void store_revoke_set(struct dust_store_entry *e, uint64_t at);

/*
 * The intro fields of one entry (struct dust_store_entry's lk): held for a
 * few loads and stores, never across a system call, so a worker lcore's
 * intro never waits on the disk or on a thread that waits on it. Lock
 * order: st->lock (or jlock) first, then an entry's, one entry at a time.
 */
static inline void entry_lock(struct dust_store_entry *e)
{
	while (__atomic_test_and_set(&e->lk, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&e->lk, __ATOMIC_RELAXED))
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#else
			;
#endif
}

static inline void entry_unlock(struct dust_store_entry *e)
{
	__atomic_clear(&e->lk, __ATOMIC_RELEASE);
}

#endif /* DUST_STORE_PVT_H */
