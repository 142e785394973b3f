/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The store's commit protocol on the file backend (SPEC §7.7), without
 * DPDK: first uses accepted in memory (pending), submitted, then polled as
 * dustgw's main lcore does. fdatasync is interposed here (this program's
 * definition wins over libc's for libdust's calls, as
 * test/e2e/gw/fsync_shim.c does for a running dustgw): it counts the calls
 * and the binding lines the journal held at each, and can fail with EIO.
 * Checked: each binding written at submit, none durable nor reported
 * before the poll's fdatasync, one fdatasync per round for all submitted,
 * each outcome exactly once with its cookie, a failed fdatasync refusing
 * (and undoing) every binding of its round.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sodium.h>

#include "check.h"
#include "dust.h"
#include "dust_pvt.h"  /* dust_store_commit: what an accepted intro commits */
#include "store_pvt.h" /* st->lock, st->jlock: held here as a main lcore holds them */

#define NINV    16
#define NOW_S   UINT64_C(1800000000)
#define COOKIE0 100u

static unsigned syncs;    /* fdatasync calls */
static unsigned synced_b; /* binding lines in the file at the last one */
static int sync_errno;    /* nonzero: fail the next ones with it */
static char journal[160];

/* Lines that start with "B " in the file behind fd: its bindings. */
static unsigned binding_lines(int fd)
{
	char buf[4096];
	unsigned lines = 0;
	bool start = true, b_first = false; /* at a line's start; its first byte a B */
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			lines += b_first && buf[i] == ' ';
			b_first = start && buf[i] == 'B';
			start = buf[i] == '\n';
		}
		off += n;
	}
	return lines;
}

int fdatasync(int fd)
{
	syncs++;
	synced_b = binding_lines(fd);
	if (sync_errno) {
		errno = sync_errno;
		return -1;
	}
	return (int)syscall(SYS_fdatasync, fd);
}

static unsigned journal_bindings(void)
{
	int fd = open(journal, O_RDONLY | O_CLOEXEC);
	unsigned n = fd >= 0 ? binding_lines(fd) : 0;

	if (fd >= 0)
		close(fd);
	return n;
}

static char dir[64], store_path[128];
static struct dust_identity server;

/* A gateway's store of NINV invitations, deferred as dustgw opens it. */
static struct dust_store *store_new(void)
{
	struct dust_ipaddr addr, tun;
	struct dust_store *st;

	snprintf(dir, sizeof(dir), "/tmp/dust-commit-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(store_path, sizeof(store_path), "%s/store", dir);
	snprintf(journal, sizeof(journal), "%s.bind", store_path);
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0);
	CHECK(dust_ipaddr_parse(&tun, "10.9.0.0") == 0);
	st = dust_store_open(store_path, DUST_STORE_CREATE, &server);
	CHECK(st != NULL);
	for (unsigned i = 0; st && i < NINV; i++) {
		struct dust_invite inv;

		tun.a[3] = (uint8_t)(4 * i);
		CHECK(dust_invite_new(&inv, &server, &addr, 4433, &tun, 30, NOW_S + 3600) == 0);
		CHECK(dust_store_add(st, &inv) == 0);
	}
	CHECK(st && dust_store_save(st) == 0);
	dust_store_set_deferred(st, true);
	return st;
}

static void store_free(struct dust_store *st)
{
	char cmd[128];

	dust_store_close(st);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

/* An accepted first use of invitation i in memory: pending, not yet written. */
static struct dust_store_entry *first_use(struct dust_store *st, unsigned i)
{
	struct dust_store_entry *e = dust_store_at(st, i);
	uint8_t pk[DUST_PK_BYTES], ss[DUST_KEY_BYTES] = {0}, nonce[DUST_XNONCE_BYTES] = {0};
	bool first = false, held = false;

	memset(pk, (int)i + 1, sizeof(pk));
	CHECK(e != NULL);
	CHECK_EQ(dust_store_commit(st, e, pk, ss, NOW_S * 1000 + i, nonce, NOW_S, &first, &held),
	         DUST_OK);
	CHECK(first && held && e->bind_pending);
	return e;
}

/* Poll at most max outcomes; each one's cookie marked in seen (a second one fails). */
static unsigned poll_some(struct dust_store *st, unsigned max, unsigned seen[NINV],
                          enum dust_drop want)
{
	struct dust_store_outcome o[NINV];
	unsigned n = dust_store_persist_poll(st, o, max);

	CHECK(n <= max);
	for (unsigned i = 0; i < n; i++) {
		CHECK(o[i].cookie >= COOKIE0 && o[i].cookie < COOKIE0 + NINV);
		CHECK_EQ(o[i].idx, o[i].cookie - COOKIE0);
		CHECK_EQ(o[i].drop, want);
		if (o[i].cookie >= COOKIE0 && o[i].cookie < COOKIE0 + NINV)
			seen[o[i].cookie - COOKIE0]++;
	}
	return n;
}

/* First uses of invitations 0 to n - 1 submitted, each with its own cookie. */
static void submit_first_uses(struct dust_store *st, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(dust_store_persist_submit(st, first_use(st, i), COOKIE0 + i), 0);
}

/*
 * Ten first uses submitted: each binding written at once, none synced nor
 * reported; the first poll runs one fdatasync covering all ten and reports
 * three, the next polls the rest with no other fdatasync, each once.
 */
static void test_group_commit(void)
{
	struct dust_store *st = store_new();
	unsigned seen[NINV] = {0}, got = 0, s0 = syncs;

	submit_first_uses(st, 10);
	CHECK_EQ(syncs, s0);               /* nothing synced at submit */
	CHECK_EQ(journal_bindings(), 10u); /* written at submit */
	for (unsigned i = 0; i < 10; i++)
		CHECK(dust_store_at(st, i)->bind_pending); /* not durable: not answered */
	got += poll_some(st, 3, seen, DUST_OK);
	CHECK_EQ(got, 3u);
	CHECK_EQ(syncs, s0 + 1);
	CHECK_EQ(synced_b, 10u); /* the round's one fdatasync covered every binding */
	while (got < 10) {
		unsigned n = poll_some(st, 3, seen, DUST_OK);

		CHECK(n > 0);
		if (!n)
			break;
		got += n;
	}
	CHECK_EQ(syncs, s0 + 1);
	for (unsigned i = 0; i < 10; i++) {
		CHECK_EQ(seen[i], 1u);
		CHECK(dust_store_at(st, i)->bound && !dust_store_at(st, i)->bind_pending);
	}
	CHECK_EQ(poll_some(st, NINV, seen, DUST_OK), 0u); /* nothing twice */
	CHECK_EQ(syncs, s0 + 1);                          /* no round for nothing */
	store_free(st);
}

/*
 * A first use submitted while a round's outcomes are still being handed
 * out waits for the next round: never reported on an earlier fdatasync.
 */
static void test_late_submit(void)
{
	struct dust_store *st = store_new();
	unsigned seen[NINV] = {0}, s0 = syncs;

	submit_first_uses(st, 3);
	CHECK_EQ(poll_some(st, 1, seen, DUST_OK), 1u);
	CHECK_EQ(syncs, s0 + 1);
	CHECK_EQ(dust_store_persist_submit(st, first_use(st, 3), COOKIE0 + 3), 0);
	CHECK_EQ(poll_some(st, NINV, seen, DUST_OK), 2u); /* the rest of the first round */
	CHECK_EQ(seen[3], 0u);
	CHECK(dust_store_at(st, 3)->bind_pending);
	CHECK_EQ(syncs, s0 + 1);
	CHECK_EQ(poll_some(st, NINV, seen, DUST_OK), 1u); /* its own round */
	CHECK_EQ(syncs, s0 + 2);
	CHECK_EQ(synced_b, 4u);
	for (unsigned i = 0; i < 4; i++)
		CHECK_EQ(seen[i], 1u);
	store_free(st);
}

/* The round's fdatasync fails: every binding of it refused and undone, once each. */
static void test_sync_fails(void)
{
	struct dust_store *st = store_new();
	unsigned seen[NINV] = {0}, s0 = syncs;

	submit_first_uses(st, 4);
	sync_errno = EIO;
	CHECK_EQ(poll_some(st, NINV, seen, DUST_DROP_INTRO_PERSIST), 4u);
	sync_errno = 0;
	CHECK_EQ(syncs, s0 + 1);
	for (unsigned i = 0; i < 4; i++) {
		CHECK_EQ(seen[i], 1u);
		CHECK(!dust_store_at(st, i)->bound && !dust_store_at(st, i)->bind_pending);
	}
	CHECK_EQ(poll_some(st, NINV, seen, DUST_OK), 0u);
	store_free(st);
}

struct intro_job {
	struct dust_store *st;
	struct dust_store_view v;
	enum dust_drop first, again;
	int done; /* atomic */
};

/* What a worker lcore does for an intro: read the entry, commit a first use, then a return. */
static void *intro_worker(void *arg)
{
	struct intro_job *j = arg;
	struct dust_store_entry *e = dust_store_at(j->st, 3);
	uint8_t pk[DUST_PK_BYTES], ss[DUST_KEY_BYTES] = {0}, nonce[DUST_XNONCE_BYTES] = {0};
	bool first, held;

	memset(pk, 0x33, sizeof(pk));
	dust_store_view_get(j->st, e, &j->v);
	j->first = dust_store_commit(j->st, e, pk, ss, NOW_S * 1000, nonce, NOW_S, &first, &held);
	nonce[0] = 1;
	j->again =
	    dust_store_commit(j->st, e, pk, ss, NOW_S * 1000 + 1, nonce, NOW_S, &first, &held);
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Issue 21, F4: a worker's intro takes no mutex that the main lcore (or the
 * thread that persists) holds across the disk. With st->lock and st->jlock
 * held here, as a journal append with its fsync or a compaction holds them,
 * the intro still completes; before, it slept until they were released.
 */
static void test_intro_lockfree(void)
{
	struct dust_store *st = store_new();
	struct intro_job j = {.st = st};
	pthread_t t;
	int waited = 0;

	pthread_mutex_lock(&st->lock);
	pthread_mutex_lock(&st->jlock);
	CHECK(pthread_create(&t, NULL, intro_worker, &j) == 0);
	/* a liveness bound, not a speed one: blocked, it would never finish */
	while (!__atomic_load_n(&j.done, __ATOMIC_ACQUIRE) && waited++ < 10000)
		usleep(1000);
	CHECK(__atomic_load_n(&j.done, __ATOMIC_ACQUIRE));
	pthread_mutex_unlock(&st->jlock);
	pthread_mutex_unlock(&st->lock);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(!j.v.bound);
	CHECK_EQ(j.first, DUST_OK);
	CHECK_EQ(j.again, DUST_OK);
	CHECK(dust_store_at(st, 3)->bound && dust_store_at(st, 3)->bind_pending);
	store_free(st);
}

/* outside any test: a CHECK failing here fails the run */
static void setup(void)
{
	CHECK(dust_init() == 0);
	CHECK(dust_identity_generate(&server) == 0);
}

static const struct check_test tests[] = {
    {"group_commit", test_group_commit},
    {"late_submit", test_late_submit},
    {"sync_fails", test_sync_fails},
    {"intro_lockfree", test_intro_lockfree},
};

CHECK_MAIN(tests, setup)
