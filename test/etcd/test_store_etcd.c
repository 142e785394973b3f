/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The invitation store on a real 3-member etcd cluster (store-etcd.sh starts
 * it): two gateway handles race to bind one invitation, one key wins; the
 * freshness CAS and the watch refuse a replay through the other handle; a
 * killed member is survived, a lost quorum refuses first uses with a clear
 * outcome, and so are returning clients (their freshness commits first), and
 * a revocation arrives by watch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

#define WAIT_MS 20000 /* generous: the machine may be loaded */

static const char *url, *ctl;

/* url with its PREFIX (after the endpoints' '/', before any '?options') replaced. */
static void url_with_prefix(char *out, size_t cap, const char *prefix)
{
	const char *q = strchr(url, '?'), *slash = url + strcspn(url + 8, "/") + 8;

	snprintf(out, cap, "%.*s%s%s", (int)(slash + 1 - url), url, prefix, q ? q : "");
}

/* url's PREFIX, into out. */
static void url_prefix(char *out, size_t cap)
{
	const char *slash = url + strcspn(url + 8, "/") + 8;

	snprintf(out, cap, "%.*s", (int)strcspn(slash + 1, "?"), slash + 1);
}

static bool is_etcd(const struct dust_store *st)
{
	return strcmp(dust_store_backend(st), "etcd") == 0;
}

static bool last_held; /* the last accept_bytes: its acceptance waits for the store */

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void cluster(const char *what)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "%s %s", ctl, what);
	CHECK_EQ(system(cmd), 0);
}

struct gw {
	struct dust_server srv;
	struct dust_rng rng;
};

static void gw_open(struct gw *g, const struct dust_identity *server, uint8_t seed)
{
	memset(g, 0, sizeof(*g));
	g->srv.id = *server;
	g->srv.store = dust_store_open(url, 0, server);
	if (!g->srv.store)
		fprintf(stderr, "  open %s: %s\n", url, dust_last_error());
	CHECK(g->srv.store != NULL);
	dust_store_set_deferred(g->srv.store, true);
	CHECK(is_etcd(g->srv.store) == (strncmp(url, "etcd", 4) == 0));
	CHECK(dust_store_tick(g->srv.store, FIX_NOW_S) >= 0);
	dust_limits_default(&g->srv.lim);
	fix_rng_seed(&g->rng, seed);
}

/* As dustgw's main lcore does: apply what the watch brought, index new entries. */
static int gw_reload(struct gw *g)
{
	int rc = dust_store_reload(g->srv.store);

	if (dust_store_tick(g->srv.store, FIX_NOW_S) == 1)
		dust_store_reclaim(g->srv.store);
	return rc;
}

/* An intro of inv by client at now_ms; its bytes in buf for a replay. */
static int intro(struct gw *g, const struct dust_invite *inv, const struct dust_identity *client,
                 uint64_t now_ms, uint8_t *buf)
{
	struct dust_pad pad;
	struct dust_session cs;
	int n;

	dust_pad_default(&pad);
	n = dust_intro_build(inv, client, &g->rng, &pad, now_ms, buf, 2048, &cs);
	CHECK(n >= DUST_INTRO_MIN_BYTES);
	dust_session_wipe(&cs);
	return n;
}

static enum dust_drop accept_bytes(struct gw *g, const uint8_t *buf, int n, uint64_t now_ms,
                                   bool *first)
{
	struct dust_endpoint from = fix_endpoint("198.51.100.9", 40002);
	struct dust_session ss;
	struct dust_intro_info info = {0};
	size_t used = 0;
	enum dust_drop d =
	    dust_intro_accept(&g->srv, buf, (size_t)n, now_ms, &from, NULL, &ss, &used, &info);

	*first = info.first_use;
	last_held = info.held;
	dust_session_wipe(&ss);
	return d;
}

static enum dust_drop accept_new(struct gw *g, const struct dust_invite *inv,
                                 const struct dust_identity *client, uint64_t now_ms, bool *first)
{
	uint8_t buf[2048];
	int n = intro(g, inv, client, now_ms, buf);

	return accept_bytes(g, buf, n, now_ms, first);
}

/* The outcome of one submitted binding, waited for (the store's thread commits it). */
static enum dust_drop outcome(struct gw *g, uint64_t *took_ms)
{
	struct dust_store_outcome o;
	uint64_t t0 = mono_ms();

	while (mono_ms() - t0 < WAIT_MS) {
		if (dust_store_persist_poll(g->srv.store, &o, 1) == 1) {
			if (took_ms)
				*took_ms = mono_ms() - t0;
			return o.drop;
		}
		/* short: the bench's one-at-a-time latency is measured through this wait */
		usleep(200);
	}
	CHECK(!"no outcome within the wait");
	return DUST_DROP_MAX;
}

/* What dustgw does with a held acceptance: submit it and wait for the cluster's word. */
static enum dust_drop commit_held(struct gw *g, struct dust_store_entry *e)
{
	CHECK(last_held);
	CHECK_EQ(dust_store_persist_submit(g->srv.store, e, 9), 0);
	return outcome(g, NULL);
}

/* A first use through g: accepted in memory (pending), then committed or not. */
static enum dust_drop first_use(struct gw *g, const struct dust_invite *inv,
                                const struct dust_identity *client, uint64_t now_ms,
                                uint64_t *took_ms)
{
	struct dust_store_entry *e = dust_store_find(g->srv.store, inv->id);
	bool first = false;

	CHECK(e != NULL);
	CHECK_EQ(accept_new(g, inv, client, now_ms, &first), DUST_OK);
	CHECK(first && e->bind_pending);
	CHECK_EQ(dust_store_persist_submit(g->srv.store, e, 7), 0);
	return outcome(g, took_ms);
}

static bool wait_until(struct gw *g, bool (*cond)(struct dust_store_entry *),
                       struct dust_store_entry *e)
{
	uint64_t t0 = mono_ms();

	while (mono_ms() - t0 < WAIT_MS) {
		CHECK(gw_reload(g) >= 0);
		if (cond(e))
			return true;
		usleep(5000);
	}
	return false;
}

static uint64_t want_ts;

/* The gateway's watch has refused want_refused records in all. */
static uint64_t want_refused;
static struct dust_store *refused_store;

static bool refused_seen(struct dust_store_entry *e)
{
	(void)e;
	return dust_store_refused(refused_store) >= want_refused;
}

/* The cluster's every key and value, decoded (etcd-cluster.sh dump). */
static char *cluster_dump(void)
{
	char path[] = "/tmp/dust-etcd-dump-XXXXXX", cmd[128];
	int fd = mkstemp(path);
	char *buf = calloc(1, 1 << 20);
	ssize_t n;

	CHECK(fd >= 0 && buf != NULL);
	snprintf(cmd, sizeof(cmd), "dump %s", path);
	cluster(cmd);
	n = read(fd, buf, (1 << 20) - 1);
	CHECK(n > 0);
	close(fd);
	unlink(path);
	return buf;
}

/*
 * Sealed values (SPEC §7.6): a dump of the cluster holds none of the
 * invitations' K_inv; records put by someone without the server key (a
 * revocation in the old plaintext format, an invitation of junk) are
 * refused and counted by a gateway's watch and at a load, never applied.
 */
static void check_sealed(struct gw *a, const struct dust_identity *server,
                         const struct dust_invite *inv, unsigned n)
{
	char *dump = cluster_dump(), hex[2 * DUST_KEY_BYTES + 1], idhex[2 * DUST_ID_BYTES + 1];
	char cmd[512], junk[2 * 100 + 1];
	uint8_t rnd[100];
	struct dust_store *tool;
	char prefix[128];

	url_prefix(prefix, sizeof(prefix));
	CHECK(strstr(dump, "/i/") && strstr(dump, "/b/") && strstr(dump, "/r/"));
	for (unsigned i = 0; i < n; i++) {
		sodium_bin2hex(hex, sizeof(hex), inv[i].secret, DUST_KEY_BYTES);
		CHECK(strcasestr(dump, hex) == NULL);
	}
	free(dump);
	want_refused = dust_store_refused(a->srv.store) + 2;
	refused_store = a->srv.store;
	sodium_bin2hex(idhex, sizeof(idhex), inv[1].id, DUST_ID_BYTES);
	snprintf(cmd, sizeof(cmd), "put %s/r/%s '%u -'", prefix, idhex, FIX_NOW_S);
	cluster(cmd);
	randombytes_buf(rnd, sizeof(rnd));
	sodium_bin2hex(junk, sizeof(junk), rnd, sizeof(rnd));
	snprintf(cmd, sizeof(cmd), "put %s/i/%.32s %s", prefix, junk + 100, junk);
	cluster(cmd);
	CHECK(wait_until(a, refused_seen, NULL));
	printf("  forged records: %llu refused by the watch\n",
	       (unsigned long long)dust_store_refused(a->srv.store));
	CHECK(!dust_store_find(a->srv.store, inv[1].id)->revoked);
	CHECK_EQ(dust_store_count(a->srv.store), n);
	tool = dust_store_open(url, DUST_STORE_READONLY, server);
	CHECK(tool != NULL);
	if (tool) {
		CHECK_EQ(dust_store_refused(tool), 2);
		CHECK(!dust_store_find(tool, inv[1].id)->revoked);
		CHECK_EQ(dust_store_count(tool), n);
		dust_store_close(tool);
	}
}

static bool fresh_seen(struct dust_store_entry *e)
{
	return e->last_ts_ms >= want_ts;
}

static bool revoked_seen(struct dust_store_entry *e)
{
	return __atomic_load_n(&e->revoked, __ATOMIC_ACQUIRE);
}

static bool bound_seen(struct dust_store_entry *e)
{
	return e->bound && !e->bind_pending;
}

static void add_invites(const struct dust_identity *server, struct dust_invite *inv, unsigned n)
{
	struct dust_store *tool = dust_store_open(url, 0, server);
	struct dust_ipaddr addr, tun;

	CHECK(tool != NULL);
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0);
	for (unsigned i = 0; i < n; i++) {
		CHECK(dust_ipaddr_parse(&tun, "10.9.0.2") == 0);
		tun.a[3] = (uint8_t)(2 + i);
		CHECK(dust_invite_new(&inv[i], server, &addr, 4433, &tun, 24, FIX_NOW_S + 3600) ==
		      0);
		CHECK(dust_store_add(tool, &inv[i]) == 0);
	}
	CHECK_EQ(dust_store_save(tool), 0);
	dust_store_close(tool);
}

static void test_cluster(void)
{
	struct dust_identity server, c1, c2;
	struct dust_invite inv[4];
	struct gw a, b;
	struct dust_store_entry *ea, *eb;
	struct dust_store_outcome oa, ob;
	struct dust_store *tool;
	uint8_t buf[2048];
	uint64_t took;
	bool first;
	int n;

	CHECK(dust_identity_generate(&server) == 0);
	CHECK(dust_identity_generate(&c1) == 0);
	CHECK(dust_identity_generate(&c2) == 0);
	add_invites(&server, inv, 4);
	gw_open(&a, &server, 1);
	gw_open(&b, &server, 2);
	{
		/* no floor on a cluster store: a crash loses no freshness there (SPEC §7) */
		bool clean = false;

		CHECK_EQ(dust_store_run_begin(a.srv.store, &clean), 0);
		CHECK(clean);
	}
	CHECK_EQ(dust_store_count(a.srv.store), 4);
	CHECK(dust_store_revision(a.srv.store) > 0);

	/* 1. the race: both handles accept a first use in memory, one key wins */
	ea = dust_store_find(a.srv.store, inv[0].id);
	eb = dust_store_find(b.srv.store, inv[0].id);
	CHECK_EQ(accept_new(&a, &inv[0], &c1, FIX_NOW_MS, &first), DUST_OK);
	CHECK(first);
	CHECK_EQ(accept_new(&b, &inv[0], &c2, FIX_NOW_MS + 1, &first), DUST_OK);
	CHECK(first);
	CHECK_EQ(dust_store_persist_submit(a.srv.store, ea, 1), 0);
	CHECK_EQ(dust_store_persist_submit(b.srv.store, eb, 2), 0);
	oa.drop = outcome(&a, NULL);
	ob.drop = outcome(&b, NULL);
	printf("  race: a %s, b %s\n", dust_drop_name(oa.drop), dust_drop_name(ob.drop));
	CHECK((oa.drop == DUST_OK) != (ob.drop == DUST_OK));
	CHECK(oa.drop == DUST_DROP_INTRO_WRONG_KEY || ob.drop == DUST_DROP_INTRO_WRONG_KEY);
	/* both handles now hold the winner's key; the loser's key is refused on both */
	CHECK(bound_seen(ea) && bound_seen(eb));
	CHECK(sodium_memcmp(ea->client_pk, eb->client_pk, DUST_PK_BYTES) == 0);
	{
		const struct dust_identity *win = oa.drop == DUST_OK ? &c1 : &c2;
		const struct dust_identity *lose = oa.drop == DUST_OK ? &c2 : &c1;
		struct gw *wg = oa.drop == DUST_OK ? &a : &b, *og = oa.drop == DUST_OK ? &b : &a;
		struct dust_store_entry *we = oa.drop == DUST_OK ? ea : eb;
		struct dust_store_entry *oe = oa.drop == DUST_OK ? eb : ea;

		CHECK_EQ(accept_new(&a, &inv[0], lose, FIX_NOW_MS + 10, &first),
		         DUST_DROP_INTRO_WRONG_KEY);
		CHECK_EQ(accept_new(&b, &inv[0], lose, FIX_NOW_MS + 11, &first),
		         DUST_DROP_INTRO_WRONG_KEY);

		/* 2. freshness: the winner returns at its gateway, held until its
		 * freshness is committed cluster-wide (SPEC §7.5); the same intro
		 * replayed through the other handle before its watch brought that
		 * in is accepted there in memory only, and the cluster refuses it
		 * (no answer, no session); after the watch it is refused at once;
		 * a newer intro there goes through. */
		n = intro(wg, &inv[0], win, FIX_NOW_MS + 1000, buf);
		CHECK_EQ(accept_bytes(wg, buf, n, FIX_NOW_MS + 1000, &first), DUST_OK);
		CHECK(!first);
		CHECK_EQ(commit_held(wg, we), DUST_OK);
		CHECK_EQ(accept_bytes(og, buf, n, FIX_NOW_MS + 1005, &first), DUST_OK);
		CHECK_EQ(commit_held(og, oe), DUST_DROP_INTRO_REPLAY);
		want_ts = FIX_NOW_MS + 1000;
		CHECK(wait_until(og, fresh_seen, oe));
		CHECK_EQ(accept_bytes(og, buf, n, FIX_NOW_MS + 1000, &first), DUST_DROP_INTRO_DUP);
		CHECK_EQ(accept_new(og, &inv[0], win, FIX_NOW_MS + 900, &first),
		         DUST_DROP_INTRO_REPLAY);
		n = intro(og, &inv[0], win, FIX_NOW_MS + 2000, buf);
		CHECK_EQ(accept_bytes(og, buf, n, FIX_NOW_MS + 2000, &first), DUST_OK);
		CHECK_EQ(commit_held(og, oe), DUST_OK);
		want_ts = FIX_NOW_MS + 2000;
		CHECK(wait_until(wg, fresh_seen, we));
		CHECK_EQ(accept_bytes(wg, buf, n, FIX_NOW_MS + 2000, &first), DUST_DROP_INTRO_DUP);
		{
			/* a gateway (re)started now loads the binding and the freshness */
			struct gw r;
			struct dust_store_entry *re;

			gw_open(&r, &server, 4);
			re = dust_store_find(r.srv.store, inv[0].id);
			CHECK(re && re->bound && re->last_ts_ms == FIX_NOW_MS + 2000);
			CHECK(re &&
			      sodium_memcmp(re->client_pk, we->client_pk, DUST_PK_BYTES) == 0);
			CHECK_EQ(accept_bytes(&r, buf, n, FIX_NOW_MS + 2000, &first),
			         DUST_DROP_INTRO_DUP);
			CHECK_EQ(accept_new(&r, &inv[0], lose, FIX_NOW_MS + 2100, &first),
			         DUST_DROP_INTRO_WRONG_KEY);
			dust_store_close(r.srv.store);
		}

		/* 3. one member killed (the first endpoint): a binding still commits */
		cluster("kill a");
		CHECK_EQ(first_use(&a, &inv[1], &c1, FIX_NOW_MS + 3000, &took), DUST_OK);
		printf("  one member down: bound in %llu ms\n", (unsigned long long)took);
		CHECK(wait_until(&b, bound_seen, dust_store_find(b.srv.store, inv[1].id)));

		/* 4. quorum lost: first uses refused with a clear outcome, unused again */
		cluster("kill b");
		CHECK_EQ(first_use(&a, &inv[2], &c1, FIX_NOW_MS + 4000, &took),
		         DUST_DROP_STORE_UNAVAILABLE);
		printf("  quorum lost: refused in %llu ms\n", (unsigned long long)took);
		CHECK(!dust_store_find(a.srv.store, inv[2].id)->bound);
		/* the tool's writes fail with a message, not silently */
		tool = dust_store_open(url, 0, &server);
		if (!tool) /* a member without a leader serves no linearizable read */
			printf("  open without quorum: %s\n", dust_last_error());
		if (tool) {
			CHECK_EQ(
			    dust_store_revoke(tool, dust_store_find(tool, inv[3].id), FIX_NOW_S),
			    -EAGAIN);
			printf("  revoke without quorum: %s\n", dust_last_error());
			dust_store_close(tool);
		}
		/*
		 * returning clients: their freshness cannot be committed, so they
		 * are refused (an intro replayed at another gateway during an
		 * outage would otherwise be taken there, SPEC §7.5); established
		 * sessions need no store
		 */
		CHECK_EQ(accept_new(wg, &inv[0], win, FIX_NOW_MS + 5000, &first), DUST_OK);
		CHECK(!first);
		CHECK_EQ(commit_held(wg, we), DUST_DROP_STORE_UNAVAILABLE);
		cluster("restore a");
		CHECK_EQ(first_use(&a, &inv[2], &c1, FIX_NOW_MS + 6000, &took), DUST_OK);
		printf("  restored: bound in %llu ms\n", (unsigned long long)took);
		cluster("restore b");
	}

	/* 5. a revocation through a third handle reaches both by watch */
	tool = dust_store_open(url, 0, &server);
	CHECK(tool != NULL);
	CHECK_EQ(dust_store_revoke(tool, dust_store_find(tool, inv[0].id), FIX_NOW_S), 0);
	CHECK_EQ(dust_store_revoke(tool, dust_store_find(tool, inv[0].id), FIX_NOW_S), -EALREADY);
	dust_store_close(tool);
	CHECK(wait_until(&a, revoked_seen, ea));
	CHECK(wait_until(&b, revoked_seen, eb));
	CHECK_EQ(accept_new(&a, &inv[0], &c1, FIX_NOW_MS + 7000, &first), DUST_DROP_INTRO_REVOKED);
	CHECK_EQ(accept_new(&b, &inv[0], &c2, FIX_NOW_MS + 7000, &first), DUST_DROP_INTRO_REVOKED);
	/* a binding of an invitation revoked in etcd but not yet seen here is refused */
	tool = dust_store_open(url, 0, &server);
	CHECK(tool != NULL);
	CHECK_EQ(dust_store_revoke(tool, dust_store_find(tool, inv[3].id), FIX_NOW_S), 0);
	dust_store_close(tool);
	CHECK_EQ(first_use(&b, &inv[3], &c2, FIX_NOW_MS + 8000, NULL), DUST_DROP_INTRO_REVOKED);
	check_sealed(&a, &server, inv, 4);

	dust_store_close(a.srv.store);
	dust_store_close(b.srv.store);
	for (unsigned i = 0; i < 4; i++)
		dust_invite_wipe(&inv[i]);
	dust_identity_wipe(&server);
	dust_identity_wipe(&c1);
	dust_identity_wipe(&c2);
}

/* ---- batched commits: one txn for many first uses, each its own outcome ---- */

#define BURST     48
#define TXN_ITEMS 32 /* store_etcd.c: bindings or creates in one txn at most */

/* "KEYS REVISIONS" of the keys under the test's PREFIX/KIND/ (etcd-cluster.sh revs). */
static void cluster_revs(const char *prefix, char kind, unsigned *keys, unsigned *revs)
{
	char path[] = "/tmp/dust-etcd-revs-XXXXXX", cmd[256];
	int fd = mkstemp(path);
	FILE *f;

	CHECK(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "revs %s %s/%c/", path, prefix, kind);
	cluster(cmd);
	CHECK((f = fopen(path, "r")) != NULL);
	CHECK(f && fscanf(f, "%u %u", keys, revs) == 2);
	if (f)
		fclose(f);
	unlink(path);
}

static bool is_conflict(unsigned i)
{
	return i == 3 || i == 20 || i == 21 || i == 40;
}

/*
 * The BURST outcomes of a's commits under cookies base + i, waited for:
 * each exactly once, for its own entry, conflict for is_conflict(i), else ok.
 */
static void outcomes(struct gw *a, const struct dust_invite *inv, unsigned base,
                     enum dust_drop conflict)
{
	struct dust_store_outcome o[16];
	unsigned seen[BURST] = {0}, done = 0;
	uint64_t t0;

	for (t0 = mono_ms(); done < BURST && mono_ms() - t0 < WAIT_MS;) {
		unsigned k = dust_store_persist_poll(a->srv.store, o, 16);

		for (unsigned j = 0; j < k; j++) {
			unsigned i = o[j].cookie - base;

			CHECK(i < BURST);
			if (i >= BURST)
				continue;
			seen[i]++;
			CHECK_EQ(o[j].idx, dust_store_find(a->srv.store, inv[i].id)->idx);
			CHECK_EQ(o[j].drop, is_conflict(i) ? conflict : DUST_OK);
		}
		done += k;
		if (!k)
			usleep(200);
	}
	CHECK_EQ(done, BURST);
	for (unsigned i = 0; i < BURST; i++)
		CHECK_EQ(seen[i], 1);
}

/*
 * The same BURST clients return to gateway a, and their freshness is
 * committed at once (SPEC §7.5: held until the cluster has it). Four of
 * them came back to gateway b first, with newer intros, which a has not
 * seen: those are replays at a, each on its own, and every other one
 * commits, in a few txns on one request thread.
 */
static void returning(const char *prefix, const char *lanes, struct gw *a, struct gw *b,
                      const struct dust_invite *inv, const struct dust_identity *c1,
                      const struct dust_identity *c2)
{
	unsigned keys, revs;
	bool first;

	for (unsigned i = 0; i < BURST; i++) {
		if (!is_conflict(i))
			continue;
		CHECK_EQ(accept_new(b, &inv[i], c2, FIX_NOW_MS + 20000 + i, &first), DUST_OK);
		CHECK(!first);
		CHECK_EQ(commit_held(b, dust_store_find(b->srv.store, inv[i].id)), DUST_OK);
	}
	for (unsigned i = 0; i < BURST; i++) {
		CHECK_EQ(accept_new(a, &inv[i], is_conflict(i) ? c2 : c1, FIX_NOW_MS + 10000 + i,
		                    &first),
		         DUST_OK);
		CHECK(!first && last_held);
	}
	for (unsigned i = 0; i < BURST; i++)
		CHECK_EQ(dust_store_persist_submit(
		             a->srv.store, dust_store_find(a->srv.store, inv[i].id), 2000 + i),
		         0);
	outcomes(a, inv, 2000, DUST_DROP_INTRO_REPLAY);
	cluster_revs(prefix, 't', &keys, &revs);
	printf("  lanes %s: %u returning clients' freshness (4 newer before) at %u revisions\n",
	       lanes, keys, revs);
	CHECK_EQ(keys, BURST);
	if (strcmp(lanes, "1") == 0)
		CHECK(revs <= 4 + BURST / 4);
}

/*
 * BURST first uses accepted by gateway a, then submitted at once (lanes:
 * its request threads): they go out as a few txns of many bindings. Four
 * of them were bound by gateway b meanwhile (a has not seen it): those fail
 * their txn's compare; each must come back as the other key's, and every
 * other binding must still commit, once, under its own cookie. Then the
 * clients return (returning()). A gateway started afterwards loads exactly
 * those bindings and the newest freshness of each.
 */
static void burst(const char *prefix, const char *lanes)
{
	const char *base = url;
	char purl[512], lanes_env[8];
	struct dust_identity server, c1, c2;
	struct dust_invite inv[BURST];
	unsigned keys, revs;
	struct gw a, b, r;
	bool first;

	url_with_prefix(purl, sizeof(purl), prefix);
	url = purl;
	CHECK(dust_identity_generate(&server) == 0 && dust_identity_generate(&c1) == 0 &&
	      dust_identity_generate(&c2) == 0);
	add_invites(&server, inv, BURST);
	/* dust-invite's creates went out batched too: fewer revisions than invitations */
	cluster_revs(prefix, 'i', &keys, &revs);
	printf("  %u invitations created in %u txns\n", keys, revs);
	CHECK_EQ(keys, BURST);
	CHECK(revs <= BURST / TXN_ITEMS + 1);
	snprintf(lanes_env, sizeof(lanes_env), "%s", lanes);
	CHECK(setenv("DUST_ETCD_LANES", lanes_env, 1) == 0);
	gw_open(&a, &server, 5);
	CHECK(unsetenv("DUST_ETCD_LANES") == 0);
	gw_open(&b, &server, 6);
	for (unsigned i = 0; i < BURST; i++)
		if (is_conflict(i))
			CHECK_EQ(first_use(&b, &inv[i], &c2, FIX_NOW_MS + i, NULL), DUST_OK);
	for (unsigned i = 0; i < BURST; i++) {
		CHECK_EQ(accept_new(&a, &inv[i], &c1, FIX_NOW_MS + 100 + i, &first), DUST_OK);
		CHECK(first);
	}
	for (unsigned i = 0; i < BURST; i++)
		CHECK_EQ(dust_store_persist_submit(
		             a.srv.store, dust_store_find(a.srv.store, inv[i].id), 1000 + i),
		         0);
	outcomes(&a, inv, 1000, DUST_DROP_INTRO_WRONG_KEY);
	cluster_revs(prefix, 'b', &keys, &revs);
	printf("  lanes %s: %u bindings (4 before) in %u txns\n", lanes, keys, revs);
	CHECK_EQ(keys, BURST);
	/* one request thread: the burst goes out in a few txns, not one each */
	if (strcmp(lanes, "1") == 0)
		CHECK(revs <= 4 + BURST / 4);
	returning(prefix, lanes, &a, &b, inv, &c1, &c2);
	/* what the cluster holds: each invitation bound once, to the key that won */
	gw_open(&r, &server, 7);
	for (unsigned i = 0; i < BURST; i++) {
		struct dust_store_entry *e = dust_store_find(r.srv.store, inv[i].id);

		CHECK(e && e->bound);
		/* and the newest intro's freshness: b's where b's came later */
		CHECK(e && e->last_ts_ms == FIX_NOW_MS + (is_conflict(i) ? 20000 : 10000) + i);
		CHECK(e && sodium_memcmp(e->client_pk, is_conflict(i) ? c2.pk : c1.pk,
		                         DUST_PK_BYTES) == 0);
		CHECK(sodium_memcmp(dust_store_find(a.srv.store, inv[i].id)->client_pk,
		                    is_conflict(i) ? c2.pk : c1.pk, DUST_PK_BYTES) == 0);
		dust_invite_wipe(&inv[i]);
	}
	dust_store_close(r.srv.store);
	dust_store_close(a.srv.store);
	dust_store_close(b.srv.store);
	dust_identity_wipe(&server);
	dust_identity_wipe(&c1);
	dust_identity_wipe(&c2);
	url = base;
}

static void test_batch(void)
{
	burst("batch1", "1"); /* one request thread: the batches in order */
	burst("batch8", "8"); /* eight: several batches in flight at once */
}

/* ---- a large range read as narrower ones (store_etcd.c: load_range) ---- */

#define SPLIT_N    10000 /* over SPLIT_KEYS (8000) in one range, twice */
#define SPLIT_JUNK 20
#define FFS        "fffffffffffffffffffffffffffffff"

/* The range requests the cluster has answered (etcd-cluster.sh ranges). */
static unsigned cluster_ranges(void)
{
	char path[] = "/tmp/dust-etcd-ranges-XXXXXX", cmd[128];
	int fd = mkstemp(path);
	unsigned n = 0;
	FILE *f;

	CHECK(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "ranges %s", path);
	cluster(cmd);
	CHECK((f = fopen(path, "r")) != NULL);
	CHECK(f && fscanf(f, "%u", &n) == 1);
	if (f)
		fclose(f);
	unlink(path);
	return n;
}

/*
 * SPLIT_N invitations whose IDs' hex all start with "00", and SPLIT_JUNK
 * records without the server key among the first keys of that range (and
 * one at its end): the ranges of IDs 0 and 00 each count more than the
 * load pages through, so each is read as 16 narrower ones after its first
 * page. Every invitation is loaded, and every junk record refused once: the
 * narrower ranges start after the first page, which is not applied twice.
 */
static void test_split(void)
{
	struct dust_identity server;
	struct dust_invite *inv = calloc(SPLIT_N, sizeof(*inv));
	struct dust_ipaddr addr, tun;
	struct dust_store *st;
	char surl[512], cmd[512], junk[2 * 100 + 1];
	uint8_t rnd[100];
	unsigned before, ranges;
	uint64_t t0;

	url_with_prefix(surl, sizeof(surl), "split");
	CHECK(inv && dust_identity_generate(&server) == 0);
	CHECK((st = dust_store_open(surl, 0, &server)) != NULL);
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0 &&
	      dust_ipaddr_parse(&tun, "10.0.0.0") == 0);
	for (unsigned i = 0; i < SPLIT_N; i++) {
		tun.a[2] = (uint8_t)(i >> 8), tun.a[3] = (uint8_t)i;
		CHECK(dust_invite_new(&inv[i], &server, &addr, 4433, &tun, 8, FIX_NOW_S + 3600) ==
		      0);
		inv[i].id[0] = 0, inv[i].id[1] &= 0x0f; /* hex 00... */
		CHECK(dust_store_add(st, &inv[i]) == 0);
	}
	CHECK_EQ(dust_store_save(st), 0);
	dust_store_close(st);
	for (unsigned i = 0; i < SPLIT_JUNK; i++) {
		randombytes_buf(rnd, sizeof(rnd));
		sodium_bin2hex(junk, sizeof(junk), rnd, sizeof(rnd));
		/* IDs 0000...00XX (and the range's last: 0fff...) */
		snprintf(cmd, sizeof(cmd), "put split/i/%030x%02x %s", 0, i, junk);
		if (i == SPLIT_JUNK - 1)
			snprintf(cmd, sizeof(cmd), "put split/i/0%.31s %s", FFS, junk);
		cluster(cmd);
	}
	before = cluster_ranges();
	t0 = mono_ms();
	st = dust_store_open(surl, DUST_STORE_READONLY, &server);
	CHECK(st != NULL);
	ranges = cluster_ranges() - before;
	printf("  %u invitations in one range loaded in %llu ms, %u range requests\n", SPLIT_N,
	       (unsigned long long)(mono_ms() - t0), ranges);
	/* 16 per kind, and 16 more for each of the two splits (paged: 4*16 + 11) */
	CHECK(ranges >= 4 * 16 + 2 * 16);
	if (st) {
		CHECK_EQ(dust_store_count(st), SPLIT_N);
		CHECK_EQ(dust_store_refused(st), SPLIT_JUNK);
		for (unsigned i = 0; i < SPLIT_N; i++)
			CHECK(dust_store_find(st, inv[i].id) != NULL);
		dust_store_close(st);
	}
	for (unsigned i = 0; i < SPLIT_N; i++)
		dust_invite_wipe(&inv[i]);
	free(inv);
	dust_identity_wipe(&server);
}

/* ---- first-use commit rate: etcd vs the file store (DUST_ETCD_BENCH=N) ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * N first uses one after another through a store as dustgw drives it: the
 * intro accepted in memory, then committed (etcd: submit, wait for the
 * outcome; file: journal write + fdatasync), then the accept of the next.
 * Prints first uses per second and the commit's p50/p99.
 */
/*
 * n first uses accepted, then committed all together, as a gateway's burst
 * is: etcd's request threads side by side, the file store's group commit
 * (one fsync for all).
 */
static void bench_pipelined(struct gw *g, const struct dust_invite *inv,
                            const struct dust_identity *client, unsigned n)
{
	struct dust_store_outcome o[64];
	unsigned done = 0, ok = 0;
	uint64_t t0 = mono_ms(), accepted;
	bool first;

	/* the intros first (dustgw's workers do them, side by side): the commits alone timed */
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(accept_new(g, &inv[i], client, FIX_NOW_MS + n + i, &first), DUST_OK);
	accepted = mono_ms() - t0;
	t0 = mono_ms();
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(dust_store_persist_submit(g->srv.store,
		                                   dust_store_find(g->srv.store, inv[i].id), i),
		         0);
	while (done < n && mono_ms() - t0 < WAIT_MS) {
		unsigned k = dust_store_persist_poll(g->srv.store, o, 64);

		for (unsigned i = 0; i < k; i++)
			ok += o[i].drop == DUST_OK;
		done += k;
		if (!k)
			usleep(200);
	}
	t0 = mono_ms() - t0;
	CHECK_EQ(done, n);
	CHECK_EQ(ok, n);
	printf("  %s: %u first uses accepted in %llu ms, then committed at once in %llu ms: "
	       "%.0f/s\n",
	       is_etcd(g->srv.store) ? "etcd" : "file", n, (unsigned long long)accepted,
	       (unsigned long long)t0, n * 1000.0 / (double)(t0 ? t0 : 1));
}

static void bench_store(const char *path, const struct dust_identity *server, unsigned n)
{
	struct dust_store *tool = dust_store_open(path, DUST_STORE_CREATE, server);
	struct dust_identity client;
	struct dust_invite *inv = calloc(2 * n, sizeof(*inv));
	uint64_t *lat = calloc(n, sizeof(*lat)), t0;
	struct dust_ipaddr addr, tun;
	struct gw g;
	bool first;

	CHECK(tool && inv && lat && dust_identity_generate(&client) == 0);
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0);
	CHECK(dust_ipaddr_parse(&tun, "10.0.0.0") == 0);
	for (unsigned i = 0; i < 2 * n; i++) {
		tun.a[1] = (uint8_t)(i >> 16), tun.a[2] = (uint8_t)(i >> 8), tun.a[3] = (uint8_t)i;
		CHECK(dust_invite_new(&inv[i], server, &addr, 4433, &tun, 8, FIX_NOW_S + 3600) ==
		      0);
		CHECK(dust_store_add(tool, &inv[i]) == 0);
	}
	t0 = mono_ms();
	CHECK_EQ(dust_store_save(tool), 0);
	printf("  %s: %u invitations saved (dust-invite add) in %llu ms\n",
	       is_etcd(tool) ? "etcd" : "file", 2 * n, (unsigned long long)(mono_ms() - t0));
	dust_store_close(tool);
	url = path; /* gw_open opens url */
	gw_open(&g, server, 3);
	t0 = mono_ms();
	for (unsigned i = 0; i < n; i++) {
		struct dust_store_entry *e = dust_store_find(g.srv.store, inv[i].id);
		struct timespec a, b;

		CHECK_EQ(accept_new(&g, &inv[i], &client, FIX_NOW_MS + i, &first), DUST_OK);
		clock_gettime(CLOCK_MONOTONIC, &a);
		CHECK_EQ(dust_store_persist_submit(g.srv.store, e, 0), 0);
		CHECK_EQ(outcome(&g, NULL), DUST_OK);
		clock_gettime(CLOCK_MONOTONIC, &b);
		lat[i] = (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec));
	}
	t0 = mono_ms() - t0;
	qsort(lat, n, sizeof(*lat), cmp_u64);
	printf("  %s: %u first uses in %llu ms: %.0f/s; commit p50 %.2f ms, p99 %.2f ms\n",
	       is_etcd(g.srv.store) ? "etcd" : "file", n, (unsigned long long)t0,
	       n * 1000.0 / (double)(t0 ? t0 : 1), lat[n / 2] / 1e6, lat[n * 99 / 100] / 1e6);
	bench_pipelined(&g, inv + n, &client, n);
	dust_store_close(g.srv.store);
	for (unsigned i = 0; i < 2 * n; i++)
		dust_invite_wipe(&inv[i]);
	free(inv);
	free(lat);
	dust_identity_wipe(&client);
}

static void test_bench(void)
{
	const char *etcd_url = url, *nstr = getenv("DUST_ETCD_BENCH");
	unsigned n = nstr ? (unsigned)atoi(nstr) : 0;
	struct dust_identity server;
	char dir[] = "/tmp/dust-bench-XXXXXX", path[64], etcd_path[512];

	/* without it, a small run: every outcome of a burst comes back, each once */
	if (n == 0)
		n = 40;
	CHECK(dust_identity_generate(&server) == 0);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/store", dir);
	url_with_prefix(etcd_path, sizeof(etcd_path), "lib-bench");
	bench_store(path, &server, n);
	bench_store(etcd_path, &server, n);
	url = etcd_url;
	snprintf(etcd_path, sizeof(etcd_path), "rm -rf %s", dir);
	CHECK_EQ(system(etcd_path), 0);
	dust_identity_wipe(&server);
}

/* A URL nobody answers: open fails at once with the reason. */
/*
 * An etcd store from before sealing (values in the clear, put here as that
 * code put them): every record refused until dust-invite migrate's open
 * (DUST_STORE_MIGRATE) writes them back sealed, binding and revocation kept.
 */
static void test_migrate(void)
{
	struct dust_identity server, client;
	struct dust_invite inv[2];
	struct dust_ipaddr addr, tun;
	struct dust_store *st;
	char murl[512], cmd[1024], idhex[2][2 * DUST_ID_BYTES + 1], hex[2 * DUST_INVITE_PT_MAX + 1];
	char pkhex[2 * DUST_PK_BYTES + 1], *dump;
	uint8_t pt[DUST_INVITE_PT_MAX];

	url_with_prefix(murl, sizeof(murl), "mig");
	CHECK(dust_identity_generate(&server) == 0 && dust_identity_generate(&client) == 0);
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0 &&
	      dust_ipaddr_parse(&tun, "10.9.0.2") == 0);
	for (unsigned i = 0; i < 2; i++) {
		CHECK(dust_invite_new(&inv[i], &server, &addr, 4433, &tun, 24, FIX_NOW_S + 3600) ==
		      0);
		dust_invite_pack_full(&inv[i], pt);
		sodium_bin2hex(hex, sizeof(hex), pt, dust_invite_pt_len(&inv[i]));
		sodium_bin2hex(idhex[i], sizeof(idhex[i]), inv[i].id, DUST_ID_BYTES);
		snprintf(cmd, sizeof(cmd), "put mig/i/%s %s", idhex[i], hex);
		cluster(cmd);
	}
	sodium_bin2hex(pkhex, sizeof(pkhex), client.pk, DUST_PK_BYTES);
	snprintf(cmd, sizeof(cmd), "put mig/b/%s '%s %u'", idhex[0], pkhex, FIX_NOW_S);
	cluster(cmd);
	snprintf(cmd, sizeof(cmd), "put mig/r/%s '%u -'", idhex[1], FIX_NOW_S);
	cluster(cmd);
	st = dust_store_open(murl, DUST_STORE_READONLY, &server);
	CHECK(st && dust_store_count(st) == 0 && dust_store_refused(st) == 4);
	dust_store_close(st);
	st = dust_store_open(murl, DUST_STORE_MIGRATE, &server);
	CHECK(st != NULL);
	dust_store_close(st);
	st = dust_store_open(murl, DUST_STORE_READONLY, &server);
	CHECK(st != NULL);
	if (st) {
		CHECK_EQ(dust_store_count(st), 2);
		CHECK_EQ(dust_store_refused(st), 0);
		CHECK(dust_store_find(st, inv[0].id)->bound &&
		      !dust_store_find(st, inv[0].id)->revoked);
		CHECK(sodium_memcmp(dust_store_find(st, inv[0].id)->client_pk, client.pk,
		                    DUST_PK_BYTES) == 0);
		CHECK(dust_store_find(st, inv[1].id)->revoked);
		dust_store_close(st);
	}
	dump = cluster_dump();
	for (unsigned i = 0; i < 2; i++) {
		sodium_bin2hex(hex, sizeof(hex), inv[i].secret, DUST_KEY_BYTES);
		CHECK(strcasestr(dump, hex) == NULL);
		dust_invite_wipe(&inv[i]);
	}
	free(dump);
	dust_identity_wipe(&server);
}

static void test_unreachable(void)
{
	struct dust_identity server = {0};
	struct dust_store *st = dust_store_open("etcd://127.0.0.1:1/dust", 0, &server);

	CHECK(st == NULL);
	printf("  unreachable: %s\n", dust_last_error());
	CHECK(strstr(dust_last_error(), "127.0.0.1:1") != NULL);
	CHECK(dust_store_open("etcd://127.0.0.1:1", 0, &server) == NULL);
	CHECK(strstr(dust_last_error(), "PREFIX") != NULL);
}

/* The etcds:// options: each mistake refused by name, before any request. */
static void test_url_options(void)
{
	static const struct {
		const char *url, *why;
	} bad[] = {
	    {"etcd://127.0.0.1:1/d?user=x", "need etcds://"},
	    {"etcds://127.0.0.1:1/d?tls=yes", "bad option 'tls=yes'"},
	    {"etcds://127.0.0.1:1/d?user=x", "go together"},
	    {"etcds://127.0.0.1:1/d?cert=c.pem", "go together"},
	    {"etcds://127.0.0.1:1/d?user=x&password-file=/nonexistent/pw", "/nonexistent/pw"},
	    {"etcds://127.0.0.1:1/d?dir=/tmp/dust-url-opt&user=x&password-file=pw644",
	     "chmod 600 /tmp/dust-url-opt/pw644"},
	    {"etcds://127.0.0.1:1/d?dir=/tmp/dust-url-opt&user=x&password-file=empty",
	     "empty password"},
	    {"etcds://127.0.0.1:1/?ca=x", "PREFIX"},
	};
	struct dust_identity server = {0};
	FILE *f;

	CHECK(mkdir("/tmp/dust-url-opt", 0700) == 0 || errno == EEXIST);
	CHECK((f = fopen("/tmp/dust-url-opt/pw644", "w")) != NULL && fputs("pw\n", f) >= 0 &&
	      fclose(f) == 0 && chmod("/tmp/dust-url-opt/pw644", 0644) == 0);
	CHECK((f = fopen("/tmp/dust-url-opt/empty", "w")) != NULL && fputs("\n", f) >= 0 &&
	      fclose(f) == 0 && chmod("/tmp/dust-url-opt/empty", 0600) == 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(dust_store_open(bad[i].url, 0, &server) == NULL);
		if (!strstr(dust_last_error(), bad[i].why)) {
			fprintf(stderr, "  %s: '%s', expected '%s'\n", bad[i].url,
			        dust_last_error(), bad[i].why);
			CHECK(0);
		}
	}
	/* a refusal every member gives alike ends at the first: no TLS server here */
	CHECK(dust_store_open("etcds://127.0.0.1:1/d", 0, &server) == NULL);
	printf("  etcds unreachable: %s\n", dust_last_error());
	remove("/tmp/dust-url-opt/pw644");
	remove("/tmp/dust-url-opt/empty");
	rmdir("/tmp/dust-url-opt");
}

int main(int argc, char **argv)
{
	static const struct check_test tests[] = {
	    {"cluster", test_cluster},
	    {"batch", test_batch},
	    {"migrate", test_migrate},
	    {"unreachable", test_unreachable},
	    {"url_options", test_url_options},
	    {"split", test_split},
	    {"bench", test_bench},
	};

	url = getenv("DUST_ETCD_URL");
	ctl = getenv("DUST_ETCD_CTL");
	if (!url || !ctl) {
		fprintf(stderr, "run through store-etcd.sh (DUST_ETCD_URL, DUST_ETCD_CTL)\n");
		return 77;
	}
	CHECK(dust_init() == 0);
	return check_run(tests, sizeof(tests) / sizeof(tests[0]), argc > 1 ? argv[1] : NULL);
}
