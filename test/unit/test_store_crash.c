/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Journal compaction killed at every step (SPEC §7), as SQLite's crash
 * tests do: writer processes take first uses, returning intros and
 * revocations on one file store, as dustgw's main lcore commits them
 * (persist_submit, persist_poll, persist_fresh, sync), with the store
 * built with its test hooks (libdust_hooked: compaction once the journal
 * outgrew its live records by 4 KiB, about every 15 appends). Each round
 * kills them with SIGKILL: a writer at a step of a compaction (after the
 * temporary file's write, its fsync, the rename, the directory's fsync) or
 * after an append, chosen at random, and the rest at a random time. Then
 * the store, reopened, must hold exactly what was acknowledged: every
 * acknowledged binding, revocation and freshness, and nothing that no
 * writer ever tried.
 *
 * Rounds alternate: two writers at once (a process killed mid-compaction
 * while the other carries on), and one writer whose kill also models a
 * power loss: a rename not yet made durable by the directory's fsync is
 * undone (the old journal is back), and a file renamed before its fsync
 * loses its contents. A compaction that skips either fsync fails here.
 * usage: test_store_crash [ROUNDS] (CRASH_ROUNDS too; default 120)
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "check.h"
#include "dust.h"
#include "dust_pvt.h" /* dust_store_commit: what an accepted intro commits */

#define NINV    192
#define WRITERS 2
#define TS_BASE UINT64_C(1800000000000)

/* The hooks of the test build of store.c (DUST_STORE_CRASH_HOOKS). */
extern int dust_store_hook_factor;
extern off_t dust_store_hook_slack;
extern void (*dust_store_hook)(const char *step, const char *journal, const char *tmp);

/* One line of the intent and acknowledgement logs: B(ind), T(s), R(evoke). */
struct logrec {
	char kind;
	uint32_t idx;
	uint64_t ts;
};

static char dir[64], store_path[128], intent_path[160], ack_path[160];
static struct dust_identity server;
static int intent_fd = -1; /* a writer's: compactions are logged too (K) */

/* The crash a writer was told to die at, and what a power loss would undo. */
static struct {
	const char *step; /* NULL: killed by the parent at a random time */
	unsigned countdown;
	bool power;         /* model a power loss at the crash */
	bool fsynced;       /* the temporary file was fsynced */
	bool rename_seen;   /* renamed, and no sync of the journal since */
	bool rename_synced; /* ...its data fsynced before the rename */
	bool dir_pending;   /* renamed, the directory not fsynced yet */
	char old[200];      /* the journal before the rename (a hard link) */
} crash;

static void pk_of(uint32_t idx, uint8_t pk[DUST_PK_BYTES])
{
	crypto_generichash(pk, DUST_PK_BYTES, (const uint8_t *)&idx, sizeof(idx), NULL, 0);
}

static void log_put(int fd, char kind, uint32_t idx, uint64_t ts)
{
	struct logrec r = {.kind = kind, .idx = idx, .ts = ts};

	if (write(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(4);
}

static void die_now(const char *journal)
{
	if (crash.power && crash.dir_pending && randombytes_uniform(2) == 0)
		rename(crash.old, journal); /* the rename never reached the disk */
	else if (crash.power && crash.rename_seen && !crash.rename_synced)
		truncate(journal, 0); /* the new file's data never did */
	raise(SIGKILL);
}

static void hook(const char *step, const char *journal, const char *tmp)
{
	(void)tmp;
	if (!strcmp(step, "write")) {
		crash.fsynced = false;
	} else if (!strcmp(step, "fsync")) {
		crash.fsynced = true;
	} else if (!strcmp(step, "prerename")) {
		snprintf(crash.old, sizeof(crash.old), "%s.crash-old", journal);
		unlink(crash.old);
		if (link(journal, crash.old) != 0)
			_exit(5);
	} else if (!strcmp(step, "rename")) {
		crash.rename_seen = crash.dir_pending = true;
		crash.rename_synced = crash.fsynced;
	} else if (!strcmp(step, "dirsync")) {
		crash.dir_pending = false;
		unlink(crash.old);
		log_put(intent_fd, 'K', 0, 0);
	} else if (!strcmp(step, "append")) {
		crash.rename_seen = false; /* the caller syncs before anything is acknowledged */
	}
	if (crash.step && !strcmp(step, crash.step) && --crash.countdown == 0)
		die_now(journal);
}

/* One writer: invitations idx % nw == w, until it is killed. */
static void writer(unsigned w, unsigned nw, bool power)
{
	static const char *steps[] = {"write", "fsync", "rename", "dirsync", "append", NULL};
	uint8_t pk[DUST_PK_BYTES], ss[DUST_KEY_BYTES] = {0}, nonce[DUST_XNONCE_BYTES] = {0};
	int in = open(intent_path, O_WRONLY | O_APPEND | O_CLOEXEC);
	int ack = open(ack_path, O_WRONLY | O_APPEND | O_CLOEXEC);
	struct dust_store *st;

	intent_fd = in;
	crash.step = steps[randombytes_uniform(sizeof(steps) / sizeof(steps[0]))];
	crash.countdown =
	    1 + randombytes_uniform(crash.step && !strcmp(crash.step, "append") ? 60 : 3);
	crash.power = power;
	dust_store_hook_factor = 1;
	dust_store_hook_slack = 4096;
	dust_store_hook = hook;
	st = dust_store_open(store_path, 0, &server);
	if (in < 0 || ack < 0 || !st) {
		fprintf(stderr, "writer %u: open: %s\n", w, dust_last_error());
		_exit(3);
	}
	dust_store_set_deferred(st, true);
	for (;;) {
		uint32_t idx = w + nw * randombytes_uniform(NINV / nw);
		struct dust_store_entry *e = dust_store_at(st, idx);
		bool first, held, ok;
		uint64_t ts;

		if (e->revoked)
			continue;
		if (randombytes_uniform(400) == 0) {
			log_put(in, 'R', idx, 0);
			if (dust_store_revoke(st, e, (uint64_t)time(NULL)) != 0)
				_exit(6);
			log_put(ack, 'R', idx, 0);
			continue;
		}
		ts = (e->last_ts_ms ? e->last_ts_ms : TS_BASE) + 1 + randombytes_uniform(5);
		memcpy(nonce, &ts, sizeof(ts));
		pk_of(idx, pk);
		log_put(in, e->bound ? 'T' : 'B', idx, ts);
		if (dust_store_commit(st, e, pk, ss, ts, nonce, (uint64_t)time(NULL), &first,
		                      &held) != DUST_OK)
			_exit(7);
		if (first) {
			struct dust_store_outcome o;

			ok = dust_store_persist_submit(st, e, idx) == 0 &&
			     dust_store_persist_poll(st, &o, 1) == 1 && o.cookie == idx &&
			     o.drop == DUST_OK;
			if (!ok)
				_exit(8);
		} else {
			dust_store_persist_fresh(st, e); /* a poll's OK wrote it for a first use */
		}
		if (dust_store_sync(st) != 0)
			_exit(9);
		log_put(ack, first ? 'B' : 'T', idx, ts);
	}
}

static size_t log_read(const char *path, struct logrec **out)
{
	struct stat sb;
	size_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0 && fstat(fd, &sb) == 0);
	n = fd >= 0 ? (size_t)sb.st_size / sizeof(**out) : 0; /* a torn last one: not written */
	*out = calloc(n + 1, sizeof(**out));
	CHECK(*out &&
	      (n == 0 || read(fd, *out, n * sizeof(**out)) == (ssize_t)(n * sizeof(**out))));
	if (fd >= 0)
		close(fd);
	return n;
}

/* The store holds exactly what was acknowledged, and only what was tried. */
static bool verify(unsigned round)
{
	static uint64_t acked_ts[NINV];
	static bool acked_bind[NINV], acked_rev[NINV], tried_bind[NINV], tried_rev[NINV];
	struct logrec *in, *ack;
	size_t nin = log_read(intent_path, &in), nack = log_read(ack_path, &ack);
	struct dust_store *st = dust_store_open(store_path, DUST_STORE_READONLY, &server);
	int before = check_failures;

	memset(acked_ts, 0, sizeof(acked_ts));
	memset(acked_bind, 0, sizeof(acked_bind));
	memset(acked_rev, 0, sizeof(acked_rev));
	memset(tried_bind, 0, sizeof(tried_bind));
	memset(tried_rev, 0, sizeof(tried_rev));
	for (size_t i = 0; i < nack; i++) {
		acked_bind[ack[i].idx] |= ack[i].kind == 'B';
		acked_rev[ack[i].idx] |= ack[i].kind == 'R';
		if (ack[i].kind != 'R' && ack[i].ts > acked_ts[ack[i].idx])
			acked_ts[ack[i].idx] = ack[i].ts;
	}
	for (size_t i = 0; i < nin; i++) {
		if (in[i].kind == 'K')
			continue;
		tried_bind[in[i].idx] |= in[i].kind == 'B';
		tried_rev[in[i].idx] |= in[i].kind == 'R';
	}
	CHECK(st != NULL);
	for (uint32_t idx = 0; st && idx < NINV; idx++) {
		struct dust_store_entry *e = dust_store_at(st, idx);
		uint8_t pk[DUST_PK_BYTES];
		bool tried_ts = e->last_ts_ms == 0;

		pk_of(idx, pk);
		for (size_t i = 0; i < nin && !tried_ts; i++)
			tried_ts = in[i].idx == idx && (in[i].kind == 'B' || in[i].kind == 'T') &&
			           in[i].ts == e->last_ts_ms;
		if ((acked_bind[idx] && !e->bound) || (e->bound && !tried_bind[idx]) ||
		    (e->bound && memcmp(e->client_pk, pk, DUST_PK_BYTES) != 0) ||
		    e->last_ts_ms < acked_ts[idx] || !tried_ts || (acked_rev[idx] && !e->revoked) ||
		    (e->revoked && !tried_rev[idx])) {
			fprintf(
			    stderr,
			    "  round %u: invitation %u: bound %d (acked %d, tried %d) ts %" PRIu64
			    " (acked %" PRIu64 ", tried %d) revoked %d (acked %d, tried %d)\n",
			    round, idx, e->bound, acked_bind[idx], tried_bind[idx], e->last_ts_ms,
			    acked_ts[idx], tried_ts, e->revoked, acked_rev[idx], tried_rev[idx]);
			check_failures++;
		}
	}
	dust_store_close(st);
	free(in);
	free(ack);
	return check_failures == before;
}

static void setup(void)
{
	struct dust_ipaddr addr, tun;
	struct dust_store *st;
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/dust-crash-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(store_path, sizeof(store_path), "%s/store", dir);
	snprintf(intent_path, sizeof(intent_path), "%s/intent", dir);
	snprintf(ack_path, sizeof(ack_path), "%s/ack", dir);
	CHECK(dust_identity_generate(&server) == 0);
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0);
	st = dust_store_open(store_path, DUST_STORE_CREATE, &server);
	CHECK(st != NULL);
	for (uint32_t i = 0; st && i < NINV; i++) {
		struct dust_invite inv;
		char a[32];

		snprintf(a, sizeof(a), "10.8.%u.%u", i / 250, 2 + i % 250);
		CHECK(dust_ipaddr_parse(&tun, a) == 0);
		CHECK(dust_invite_new(&inv, &server, &addr, 4433, &tun, 16, 2000000000) == 0);
		CHECK(dust_store_add(st, &inv) == 0);
	}
	CHECK(st && dust_store_save(st) == 0);
	dust_store_close(st);
	fd = open(intent_path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	close(fd);
	fd = open(ack_path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	close(fd);
}

static size_t acks_now(void)
{
	struct stat sb;

	return stat(ack_path, &sb) == 0 ? (size_t)sb.st_size / sizeof(struct logrec) : 0;
}

static unsigned alive(const pid_t *pid, unsigned nw)
{
	unsigned left = 0;

	for (unsigned w = 0; w < nw; w++) {
		siginfo_t si = {0};

		/* not reaped: the exit status is checked after the kill */
		left += waitid(P_PID, (id_t)pid[w], &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		        si.si_pid == 0;
	}
	return left;
}

/*
 * One round: writers started, killed, their exits checked. The random kill
 * comes after 20 acknowledgements (two or three compactions' worth) so that
 * a loaded machine's slow start does not end rounds before anything ran.
 */
static bool round_run(unsigned round, unsigned nw)
{
	const struct timespec ms = {.tv_nsec = 1000000};
	unsigned wait_ms = randombytes_uniform(100);
	size_t base = acks_now();
	pid_t pid[WRITERS];
	bool ok = true;

	for (unsigned w = 0; w < nw; w++) {
		pid[w] = fork();
		CHECK(pid[w] >= 0);
		if (pid[w] == 0)
			writer(w, nw, nw == 1);
	}
	for (unsigned t = 0; t < 10000 && acks_now() < base + 20 && alive(pid, nw); t++)
		nanosleep(&ms, NULL);
	for (unsigned t = 0; t < wait_ms && alive(pid, nw); t++)
		nanosleep(&ms, NULL);
	for (unsigned w = 0; w < nw; w++) {
		int status = 0;

		kill(pid[w], SIGKILL);
		CHECK(waitpid(pid[w], &status, 0) == pid[w]);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
			fprintf(stderr, "  round %u: writer %u exited with %d (not killed)\n",
			        round, w, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
			check_failures++;
			ok = false;
		}
	}
	return ok;
}

int main(int argc, char **argv)
{
	unsigned rounds = argc > 1                 ? (unsigned)atoi(argv[1])
	                  : getenv("CRASH_ROUNDS") ? (unsigned)atoi(getenv("CRASH_ROUNDS"))
	                                           : 120;
	struct logrec *acks, *in;
	size_t nack, nin, compactions = 0;
	char cmd[128];
	unsigned r;

	(void)check_run; /* one test, its own loop */
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(dust_init() == 0);
	setup();
	for (r = 0; r < rounds && check_failures == 0; r++)
		if (!round_run(r, r % 2 ? 1 : WRITERS) || !verify(r))
			break;
	nack = log_read(ack_path, &acks);
	nin = log_read(intent_path, &in);
	for (size_t i = 0; i < nin; i++)
		compactions += in[i].kind == 'K';
	/* about 15 appends apart: most rounds complete several before their kill */
	CHECK(compactions >= r / 4 && compactions > 0);
	printf("%s %u of %u rounds, %zu acknowledged records, %zu compactions completed\n",
	       check_failures ? "FAIL after" : "ok  ", r, rounds, nack, compactions);
	free(acks);
	free(in);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return check_failures ? 1 : 0;
}
