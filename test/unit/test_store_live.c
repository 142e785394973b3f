/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The store while a gateway has it open: a second handle on the same files
 * (as dust-invite is) adds and revokes invitations; dust_store_reload on
 * the first merges them, entries never move, the tag index finds the new
 * ones, a revoked invitation refuses intros, and the gateway's own journal
 * lines read back change nothing. Deferred commits (the journal written off
 * the data path): pending bindings, undone or made durable.
 */
#include <sys/stat.h>

#include "fixture.h"

/* A second handle (the operator's tool) adds count invitations and saves. */
static void tool_add(struct fixture *f, unsigned count, struct dust_invite *out)
{
	struct dust_store *st = dust_store_open(f->store_path, 0, &f->server);
	struct dust_ipaddr addr, tun;

	CHECK(st != NULL);
	if (!st)
		return;
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0);
	for (unsigned i = 0; i < count; i++) {
		struct dust_invite inv;

		CHECK(dust_ipaddr_parse(&tun, "10.8.0.0") == 0);
		tun.a[2] = (uint8_t)(i >> 8);
		tun.a[3] = (uint8_t)i;
		CHECK(dust_invite_new(&inv, &f->server, &addr, 4433, &tun, 16, FIX_NOW_S + 3600) ==
		      0);
		CHECK(dust_store_add(st, &inv) == 0);
		if (out)
			out[i] = inv;
	}
	CHECK(dust_store_save(st) == 0);
	dust_store_close(st);
}

static void tool_revoke(struct fixture *f, const uint8_t id[DUST_ID_BYTES])
{
	struct dust_store *st = dust_store_open(f->store_path, 0, &f->server);
	struct dust_store_entry *e = st ? dust_store_find(st, id) : NULL;

	CHECK(e != NULL);
	if (e) {
		CHECK_EQ(dust_store_revoke(st, e, FIX_NOW_S), 0);
		CHECK_EQ(dust_store_revoke(st, e, FIX_NOW_S), -EALREADY);
	}
	dust_store_close(st);
}

/* As the gateway does: merge, then index the new entries. */
static int reload(struct fixture *f)
{
	int rc = dust_store_reload(f->srv.store);

	if (dust_store_tick(f->srv.store, FIX_NOW_S) == 1)
		dust_store_reclaim(f->srv.store); /* no reader on other threads here */
	return rc;
}

static void test_reload_adds(void)
{
	static struct dust_invite added[600];
	struct fixture f;
	struct dust_store_entry *first;
	uint64_t gen;

	fix_init(&f);
	first = dust_store_at(f.srv.store, 0);
	gen = dust_store_generation(f.srv.store);
	CHECK_EQ(reload(&f), 0); /* nothing changed */
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS), DUST_OK);
	/* the gateway's own journal lines, read back, change nothing */
	CHECK_EQ(reload(&f), 0);
	CHECK_EQ(dust_store_generation(f.srv.store), gen);
	/* a few: they go into the live tag index */
	tool_add(&f, 3, added);
	CHECK_EQ(reload(&f), 3);
	CHECK_EQ(dust_store_count(f.srv.store), 4);
	CHECK_EQ(dust_store_generation(f.srv.store), gen + 1);
	CHECK(dust_store_at(f.srv.store, 0) == first); /* entries never move */
	CHECK_EQ(fix_connect_with(&f, &added[2], FIX_NOW_MS), DUST_OK);
	/* many more: the index is rebuilt bigger and swapped */
	tool_add(&f, 600, added);
	CHECK_EQ(reload(&f), 600);
	CHECK_EQ(dust_store_count(f.srv.store), 604);
	CHECK(dust_store_at(f.srv.store, 0) == first);
	CHECK_EQ(fix_connect_with(&f, &added[599], FIX_NOW_MS), DUST_OK);
	CHECK_EQ(fix_connect_with(&f, &added[0], FIX_NOW_MS), DUST_OK);
	/* the first client is still bound and fresh: an old intro is a replay */
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS - 1000), DUST_DROP_INTRO_REPLAY);
	fix_fini(&f);
}

static void test_reload_revokes(void)
{
	struct dust_invite added[2];
	struct fixture f;
	struct dust_store_entry *e;

	fix_init(&f);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS), DUST_OK);
	tool_revoke(&f, f.inv.id);
	e = dust_store_find(f.srv.store, f.inv.id);
	CHECK(e && !e->revoked);
	CHECK_EQ(reload(&f), 1);
	CHECK(e && e->revoked && e->revoked_at == FIX_NOW_S);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS + 1000), DUST_DROP_INTRO_REVOKED);
	/* created and revoked between two reloads: the revocation is not lost */
	tool_add(&f, 2, added);
	tool_revoke(&f, added[1].id);
	CHECK_EQ(reload(&f), 3);
	CHECK_EQ(fix_connect_with(&f, &added[1], FIX_NOW_MS), DUST_DROP_INTRO_REVOKED);
	CHECK_EQ(fix_connect_with(&f, &added[0], FIX_NOW_MS), DUST_OK);
	/* the revocation read before its invitation: held until the invitation comes */
	{
		struct dust_store *tool = dust_store_open(f.store_path, 0, &f.server);
		struct dust_ipaddr addr, tun;
		struct dust_invite late;

		CHECK(tool != NULL);
		CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0);
		CHECK(dust_ipaddr_parse(&tun, "10.7.0.9") == 0);
		CHECK(dust_invite_new(&late, &f.server, &addr, 4433, &tun, 16, FIX_NOW_S + 60) ==
		      0);
		CHECK(dust_store_add(tool, &late) == 0);
		CHECK_EQ(dust_store_revoke(tool, dust_store_find(tool, late.id), FIX_NOW_S), 0);
		CHECK_EQ(reload(&f), 0);
		CHECK(dust_store_save(tool) == 0);
		dust_store_close(tool);
		CHECK_EQ(reload(&f), 2);
		CHECK_EQ(fix_connect_with(&f, &late, FIX_NOW_MS), DUST_DROP_INTRO_REVOKED);
	}
	/* a restart keeps every revocation (and reopening may compact: still kept) */
	fix_reopen_store(&f);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS + 2000), DUST_DROP_INTRO_REVOKED);
	CHECK_EQ(fix_connect_with(&f, &added[1], FIX_NOW_MS + 2000), DUST_DROP_INTRO_REVOKED);
	CHECK_EQ(fix_connect_with(&f, &added[0], FIX_NOW_MS + 2000), DUST_OK);
	fix_fini(&f);
}

/*
 * The journal is compacted while others have it open (SPEC §7): the
 * gateway's own appends compact it once it outgrew its live records; a
 * tool that opened the store before reads the compacted file and appends
 * its revocation to it, not to the file it opened; every record survives.
 */
static void test_compaction_under_a_reader(void)
{
	struct dust_store_entry *e;
	struct dust_store *tool;
	struct fixture f;
	char path[192];
	struct stat a, b;

	fix_init(&f);
	snprintf(path, sizeof(path), "%s.bind", f.store_path);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS), DUST_OK);
	CHECK(stat(path, &a) == 0);
	tool = dust_store_open(f.store_path, 0, &f.server);
	CHECK(tool != NULL);
	if (!tool)
		return;
	/* about 520 kB of freshness records for a live state of two lines */
	for (int i = 1; i < 2000; i++)
		CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS + (uint64_t)i), DUST_OK);
	CHECK(dust_store_compactions(f.srv.store) >= 2);
	CHECK(stat(path, &b) == 0);
	CHECK(a.st_ino != b.st_ino);          /* replaced under the tool */
	CHECK(b.st_size < 140 * 1024);        /* bounded: twice the live records, plus slack */
	CHECK_EQ(dust_store_reload(tool), 0); /* the new file, from its start */
	e = dust_store_find(tool, f.inv.id);
	CHECK(e && e->bound && e->last_ts_ms == FIX_NOW_MS + 1999);
	CHECK(e && memcmp(e->client_pk, f.client.pk, DUST_PK_BYTES) == 0);
	CHECK(e && dust_store_revoke(tool, e, FIX_NOW_S) == 0);
	dust_store_close(tool);
	CHECK_EQ(reload(&f), 1); /* the revocation went to the journal it follows */
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS + 2000), DUST_DROP_INTRO_REVOKED);
	fix_reopen_store(&f);
	e = dust_store_find(f.srv.store, f.inv.id);
	CHECK(e && e->bound && e->revoked && e->last_ts_ms == FIX_NOW_MS + 1999);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS + 2001), DUST_DROP_INTRO_REVOKED);
	fix_fini(&f);
}

static size_t slurp(const char *path, char *buf, size_t cap)
{
	FILE *fp = fopen(path, "rb");
	size_t n = fp ? fread(buf, 1, cap, fp) : 0;

	if (fp)
		fclose(fp);
	return n;
}

/*
 * A writer that died mid-line leaves a torn last line; the next append
 * (another process's revocation here, under the journal lock) cuts it
 * rather than completing it into one corrupt line that no reload or
 * restart could read past.
 */
static void test_torn_line_of_a_dead_writer(void)
{
	static const char torn[] = "B 00112233";
	struct fixture f;
	char path[192];
	FILE *fp;

	fix_init(&f);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS), DUST_OK);
	snprintf(path, sizeof(path), "%s.bind", f.store_path);
	fp = fopen(path, "ab");
	CHECK(fp && fwrite(torn, 1, sizeof(torn) - 1, fp) == sizeof(torn) - 1);
	if (fp)
		fclose(fp);
	tool_revoke(&f, f.inv.id);
	CHECK_EQ(reload(&f), 1);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS + 1000), DUST_DROP_INTRO_REVOKED);
	fix_reopen_store(&f);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS + 2000), DUST_DROP_INTRO_REVOKED);
	fix_fini(&f);
}

/*
 * Journal records of invitations this process has not read yet (the file
 * it read was older than the binding's or revocation's writer's): kept,
 * through a compaction too, and applied when the invitation arrives. Here
 * the older file is put back by hand, which a reload cannot tell from a
 * read that came before the save.
 */
static void test_records_before_their_invitation(void)
{
	static char without[4096], with[4096];
	struct dust_invite added[2];
	struct dust_store *gw, *tool;
	struct dust_store_entry *e;
	struct fixture f;
	size_t nwithout, nwith;
	uint64_t compacted;
	char path[192];
	struct stat a, b;

	fix_init(&f);
	for (int i = 0; i < 1100; i++) /* a journal long in use */
		CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS + (uint64_t)i), DUST_OK);
	nwithout = slurp(f.store_path, without, sizeof(without));
	tool_add(&f, 2, added);
	nwith = slurp(f.store_path, with, sizeof(with));
	/* another process binds the first (with the fixture's client) and revokes the second */
	gw = f.srv.store;
	tool = dust_store_open(f.store_path, 0, &f.server);
	CHECK(tool && dust_store_tick(tool, FIX_NOW_S) >= 0);
	if (!tool)
		return;
	f.srv.store = tool;
	CHECK_EQ(fix_connect_with(&f, &added[0], FIX_NOW_MS), DUST_OK);
	CHECK_EQ(dust_store_revoke(tool, dust_store_find(tool, added[1].id), FIX_NOW_S), 0);
	dust_store_close(tool);
	f.srv.store = gw;
	/* the gateway reads the older file, then the journal: records of unknown ids */
	fix_put_file(f.store_path, without, nwithout);
	CHECK_EQ(reload(&f), 0);
	/* the gateway's appends compact the journal: it must keep them */
	snprintf(path, sizeof(path), "%s.bind", f.store_path);
	CHECK(stat(path, &a) == 0);
	compacted = dust_store_compactions(f.srv.store);
	for (int i = 1100; i < 1700; i++)
		CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS + (uint64_t)i), DUST_OK);
	CHECK(dust_store_compactions(f.srv.store) > compacted);
	CHECK(stat(path, &b) == 0);
	CHECK(a.st_ino != b.st_ino); /* compacted */
	fix_reopen_store(&f);
	/* the invitations arrive: bound to that client, revoked */
	fix_put_file(f.store_path, with, nwith);
	CHECK_EQ(reload(&f), 4); /* two invitations, one binding, one revocation */
	e = dust_store_find(f.srv.store, added[0].id);
	CHECK(e && e->bound && memcmp(e->client_pk, f.client.pk, DUST_PK_BYTES) == 0);
	CHECK_EQ(fix_connect_with(&f, &added[1], FIX_NOW_MS + 3000), DUST_DROP_INTRO_REVOKED);
	fix_reopen_store(&f);
	e = dust_store_find(f.srv.store, added[0].id);
	CHECK(e && e->bound && memcmp(e->client_pk, f.client.pk, DUST_PK_BYTES) == 0);
	CHECK_EQ(fix_connect_with(&f, &added[1], FIX_NOW_MS + 4000), DUST_DROP_INTRO_REVOKED);
	fix_fini(&f);
}

static enum dust_drop accept_info(struct fixture *f, const struct dust_identity *client,
                                  uint64_t now_ms, bool *first_use)
{
	uint8_t buf[2048];
	struct dust_endpoint from = fix_endpoint("198.51.100.9", 40002);
	struct dust_session cs, ss;
	struct dust_intro_info info = {0};
	size_t used = 0;
	int n = dust_intro_build(&f->inv, client, &f->rng, &f->pad, now_ms, buf, sizeof(buf), &cs);
	enum dust_drop d;

	CHECK(n >= DUST_INTRO_MIN_BYTES);
	d = dust_intro_accept(&f->srv, buf, (size_t)n, now_ms, &from, NULL, &ss, &used, &info);
	*first_use = info.first_use;
	return d;
}

/* One held acceptance through the commit protocol, as dustgw's main lcore does. */
static enum dust_drop commit_one(struct dust_store *st, struct dust_store_entry *e)
{
	struct dust_store_outcome o;

	CHECK_EQ(dust_store_persist_submit(st, e, 5), 0);
	CHECK_EQ(dust_store_persist_poll(st, &o, 1), 1u);
	CHECK_EQ(o.cookie, 5u);
	CHECK_EQ(o.idx, e->idx);
	return o.drop;
}

/*
 * Deferred commits: a first binding is pending (every intro of it reports
 * first_use, so its session waits) until persisted; a durable one survives
 * a restart. Nothing is written before (a failed commit undoing the binding:
 * test_store_commit).
 */
static void test_deferred_binding(void)
{
	struct fixture f;
	struct dust_identity other;
	struct dust_store_outcome o;
	struct dust_store_entry *e;
	bool first;

	fix_init(&f);
	CHECK(dust_identity_generate(&other) == 0);
	dust_store_set_deferred(f.srv.store, true);
	e = dust_store_find(f.srv.store, f.inv.id);
	CHECK_EQ(accept_info(&f, &f.client, FIX_NOW_MS, &first), DUST_OK);
	CHECK(first && e->bound && e->bind_pending);
	/* pending: another key is refused, the same client's newer intro waits too */
	CHECK_EQ(accept_info(&f, &other, FIX_NOW_MS + 10, &first), DUST_DROP_INTRO_WRONG_KEY);
	CHECK_EQ(accept_info(&f, &f.client, FIX_NOW_MS + 20, &first), DUST_OK);
	CHECK(first);
	fix_reopen_store(&f); /* never submitted: nothing on disk */
	e = dust_store_find(f.srv.store, f.inv.id);
	CHECK(!e->bound);
	dust_store_set_deferred(f.srv.store, true);
	CHECK_EQ(accept_info(&f, &other, FIX_NOW_MS + 30, &first), DUST_OK);
	CHECK(first && e->bind_pending);
	CHECK_EQ(commit_one(f.srv.store, e), DUST_OK);
	CHECK(e->bound && !e->bind_pending);
	CHECK_EQ(dust_store_persist_poll(f.srv.store, &o, 1), 0u); /* each outcome once */
	CHECK_EQ(accept_info(&f, &other, FIX_NOW_MS + 40, &first), DUST_OK);
	CHECK(!first); /* durable: a returning client goes live at once */
	dust_store_persist_fresh(f.srv.store, e); /* as dustgw's main lcore does */
	fix_reopen_store(&f);
	CHECK_EQ(accept_info(&f, &f.client, FIX_NOW_MS + 50, &first), DUST_DROP_INTRO_WRONG_KEY);
	CHECK_EQ(accept_info(&f, &other, FIX_NOW_MS + 35, &first), DUST_DROP_INTRO_REPLAY);
	dust_identity_wipe(&other);
	fix_fini(&f);
}

static const struct check_test tests[] = {
    {"reload_adds", test_reload_adds},
    {"reload_revokes", test_reload_revokes},
    {"compaction_under_a_reader", test_compaction_under_a_reader},
    {"deferred_binding", test_deferred_binding},
    {"torn_line_of_a_dead_writer", test_torn_line_of_a_dead_writer},
    {"records_before_their_invitation", test_records_before_their_invitation},
};

CHECK_MAIN(tests, fix_dust_init)
