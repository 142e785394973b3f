/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-msgs: the lcores' messages and the store's reload, over the real
 * gateway functions (dustgw_core) called one after another from one thread,
 * no loop, so that each failure is forced exactly (issue 21 item 7):
 * - F1: a store reload that fails part-way (a bad line after a new
 *   invitation, a corrupt journal line after a revocation) still merges
 *   what it indexed and still cuts the revoked session;
 * - F2: a RETIRED that finds the main ring full and a RELEASE that finds
 *   the worker's inbox full are not lost: the slot comes back;
 * - F5: the gateway freed at exit while a telemetry command reads it: the
 *   free waits for the command.
 * F3 (the parking queues' order and capacity) is the unit tier's:
 * test/unit/test_pending.c and test_pubwait.c.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>

#include "cid.h"
#include "dgw_pvt.h"
#include "gwcheck.h"
#include "inbox.h"
#include "lifecycle.h"
#include "live.h"
#include "sessmap.h"

enum { NINV = 3 };

static struct {
	struct dgw *gw;
	struct dgw_config cfg;
	struct dust_identity srv;
} T;

static int invite_new(struct dust_invite *inv, unsigned i)
{
	struct dust_ipaddr addr, tun;

	dust_ipaddr_parse(&addr, "10.0.0.1");
	dust_ipaddr_parse(&tun, "10.9.0.0");
	tun.a[3] = (uint8_t)(i + 2);
	return dust_invite_new(inv, &T.srv, &addr, 4433, &tun, 16, time(NULL) + 3600);
}

static int make_store(const char *dir)
{
	struct dust_store *st;
	struct dust_invite inv;

	snprintf(T.cfg.key_file, sizeof(T.cfg.key_file), "%s/server.key", dir);
	snprintf(T.cfg.store_path, sizeof(T.cfg.store_path), "%s/inv.store", dir);
	remove(T.cfg.store_path);
	if (dust_identity_generate(&T.srv) || dust_identity_save(&T.srv, T.cfg.key_file))
		return -1;
	st = dust_store_open(T.cfg.store_path, DUST_STORE_CREATE, &T.srv);
	if (!st)
		return -1;
	for (unsigned i = 0; i < NINV; i++)
		if (invite_new(&inv, i) || dust_store_add(st, &inv))
			return -1;
	if (dust_store_save(st))
		return -1;
	dust_store_close(st);
	return 0;
}

/* Worker 0's counter c, from the stats snapshot. */
static uint64_t ctr(unsigned c)
{
	struct dgw_stats st;

	dgw_stats_get(T.gw, 0, &st);
	return st.ctr[c];
}

/* Pass every message both ways a few times, as the loops would. */
static void settle(void)
{
	for (unsigned i = 0; i < 600; i++) {
		dgw_main_messages(T.gw);
		dgw_worker_inbox(T.gw->w[0]);
	}
}

/* A session of idx at 198.18.0.host:20000 in worker 0's table, not published yet. */
static struct dust_session *inserted(uint32_t idx, uint8_t host)
{
	struct dgw_worker *w = T.gw->w[0];
	struct dust_session *s = dust_session_table_reserve(w->tab);

	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	s->invite_idx = idx;
	s->peer.ip.family = 4;
	memcpy(s->peer.ip.a, (uint8_t[]){198, 18, 0, host}, 4);
	s->peer.port = 20000;
	return dust_session_table_insert(w->tab, s) == 0 ? s : NULL;
}

/* A live session of invitation idx on worker 0, published (PUBLISH, PUBLISHED). */
static struct dust_session *live(uint32_t idx, uint8_t host)
{
	struct dust_session *s = inserted(idx, host);

	if (!s)
		return NULL;
	dgw_sess_publish(T.gw->w[0], s, 0);
	settle();
	return s;
}

static struct dust_session *published(uint32_t idx)
{
	return idx < T.gw->ninv ? atomic_load(&T.gw->pub[idx].s) : NULL;
}

/* A slot is back on the free list: wiped, neither live nor waiting for its release. */
static bool slot_free(const struct dust_session *s)
{
	return s->state != DUST_SESSION_LIVE && s->state != DUST_SESSION_RETIRING;
}

static int append(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* Fill r with messages that mean nothing (type 0) until it takes no more. */
static unsigned fill(struct rte_ring *r)
{
	struct dgw_msg junk = {.type = 0, .idx = UINT32_MAX};
	unsigned n = 0;

	while (rte_ring_enqueue_elem(r, &junk, sizeof(junk)) == 0)
		n++;
	return n;
}

/*
 * F2's REVOKE: invitation 2 is revoked while its worker's inbox is full.
 * The REVOKE is sent again by the next poll, though the store has nothing
 * new: the revoked session is cut. (First: F1 leaves a corrupt journal.)
 */
static int revoke_full_inbox(void)
{
	struct dgw_worker *w = T.gw->w[0];
	struct dust_store *st = dust_store_open(T.cfg.store_path, 0, &T.srv);
	struct dust_session *s = live(2, 10);
	uint64_t revoked = ctr(DGW_CTR_SESS_REVOKED);
	unsigned n;

	CHECK(st && s && published(2) == s, "setup: invitation 2 has no published session");
	CHECK(dust_store_revoke(st, dust_store_at(st, 2), (uint64_t)time(NULL)) == 0,
	      "setup: revoke");
	dust_store_close(st);
	n = fill(w->inbox);
	printf("gw-msgs: F2: REVOKE into a full inbox (%u messages)\n", n);
	dgw_store_poll(T.gw);
	CHECK(__atomic_load_n(&dust_store_at(T.gw->srv.store, 2)->revoked, __ATOMIC_ACQUIRE),
	      "setup: the revocation was not read");
	settle();             /* the inbox drains; the REVOKE was not in it */
	dgw_store_poll(T.gw); /* nothing new in the store */
	settle();
	CHECK(ctr(DGW_CTR_SESS_REVOKED) == revoked + 1,
	      "a REVOKE that found the inbox full was never sent again");
	CHECK(!published(2) && slot_free(s), "the revoked session's slot did not come back");
	return 0;
}

/*
 * F1: another writer adds invitation NINV and revokes invitation 0; then a
 * bad line lands after each (the invitations file, the journal). Each
 * reload fails, the first after indexing the new invitation, the second
 * after applying the revocation.
 */
static int f1_partial_reload(void)
{
	struct dust_store *st = dust_store_open(T.cfg.store_path, 0, &T.srv);
	struct dust_session *s0 = live(0, 1), *s2;
	uint64_t revoked0 = ctr(DGW_CTR_SESS_REVOKED);
	struct dust_invite inv;
	char journal[DGW_PATH_MAX + 8];

	CHECK(st && s0 && published(0) == s0, "setup: invitation 0 has no published session");
	printf("gw-msgs: F1: a new invitation, then a bad line; a revocation, then a bad line\n");
	CHECK(invite_new(&inv, NINV) == 0 && dust_store_add(st, &inv) == 0 &&
	          dust_store_save(st) == 0,
	      "setup: second writer");
	CHECK(append(T.cfg.store_path, "I 00zz\n") == 0, "setup: bad invitation line");
	CHECK(dust_store_revoke(st, dust_store_at(st, 0), (uint64_t)time(NULL)) == 0,
	      "setup: revoke");
	snprintf(journal, sizeof(journal), "%s.bind", T.cfg.store_path);
	CHECK(append(journal, "X corrupt\n") == 0, "setup: bad journal line");
	dust_store_close(st);

	dgw_store_poll(T.gw);
	CHECK(T.gw->reload_failing, "the reload did not fail: the test forces nothing");
	CHECK(dust_store_count(T.gw->srv.store) == NINV + 1, "the new invitation was not indexed");
	CHECK(T.gw->ninv == NINV + 1, "an indexed invitation was not merged (pub[], tunnel map)");
	dgw_store_poll(T.gw);
	CHECK(T.gw->reload_failing, "the journal's bad line did not fail the reload");
	CHECK(__atomic_load_n(&dust_store_at(T.gw->srv.store, 0)->revoked, __ATOMIC_ACQUIRE),
	      "the revocation before the bad line was not applied");
	settle();
	CHECK(ctr(DGW_CTR_SESS_REVOKED) == revoked0 + 1,
	      "the session of the revoked invitation was not cut");
	CHECK(!published(0) && slot_free(s0), "the revoked session's slot did not come back");

	/* workers find the new invitation by its tag: its messages must count */
	s2 = live(NINV, 2);
	CHECK(s2 && published(NINV) == s2, "the new invitation's session was not published");
	dgw_sess_retire(T.gw->w[0], s2);
	settle();
	CHECK(!published(NINV) && slot_free(s2), "the new invitation's slot did not come back");
	return 0;
}

/* F2: RETIRED into a full main ring, RELEASE into a full inbox. */
static int f2_full_rings(void)
{
	struct dgw_worker *w = T.gw->w[0];
	struct dust_session *s = live(1, 3);
	uint64_t backlog0 = ctr(DGW_CTR_MSG_BACKLOG);
	unsigned n;

	CHECK(s && published(1) == s, "setup: invitation 1 has no published session");
	n = fill(T.gw->to_main);
	printf("gw-msgs: F2: RETIRED into a full main ring (%u messages)\n", n);
	dgw_sess_retire(w, s);
	CHECK(ctr(DGW_CTR_MSG_BACKLOG) == backlog0 + 1, "msg_backlogged not counted");
	settle();
	CHECK(!published(1), "a RETIRED was lost: the session is still published");
	CHECK(slot_free(s), "a RETIRED was lost: its slot never came back");

	s = live(1, 4);
	CHECK(s && published(1) == s, "setup: invitation 1 has no published session");
	n = fill(w->inbox);
	printf("gw-msgs: F2: RELEASE into a full inbox (%u messages)\n", n);
	dgw_sess_retire(w, s);
	dgw_main_messages(T.gw); /* RETIRED: deferred, reclaimed (no reader online), RELEASE */
	CHECK(!published(1), "RETIRED not handled");
	settle();
	CHECK(rte_ring_count(w->inbox) == 0, "the inbox did not drain");
	CHECK(slot_free(s), "a RELEASE was lost: its slot never came back");
	CHECK(dust_session_table_live(w->tab) == 0, "sessions left live");
	return 0;
}

/*
 * F7: replay answers an intro once the main lcore has handled as many
 * PUBLISH as the worker sent (pub_done == pub_sent, replay.c), waiting up
 * to 10 s otherwise. A PUBLISH the full ring refused, or one for an index
 * past pub[], must leave the two equal, or every later intro waits 10 s.
 */
static int f7_publish_count(void)
{
	struct dgw_worker *w = T.gw->w[0];
	struct dust_session *s = live(1, 5), *t;
	unsigned n;

	CHECK(s && published(1) == s, "setup: invitation 1 has no published session");
	CHECK(atomic_load(&w->pub_done) == w->pub_sent, "setup: counts differ already");
	n = fill(T.gw->to_main);
	printf("gw-msgs: F7: PUBLISH into a full main ring (%u messages)\n", n);
	dgw_sess_publish(w, s, 0); /* refused by the ring */
	settle();
	CHECK(atomic_load(&w->pub_done) == w->pub_sent,
	      "a PUBLISH the ring refused was counted as sent");
	printf("gw-msgs: F7: PUBLISH for an index past pub[]\n");
	t = dust_session_table_reserve(w->tab);
	CHECK(t, "setup: no slot");
	memset(t, 0, sizeof(*t));
	t->invite_idx = T.gw->ninv + 7;
	t->peer.ip.family = 4;
	memcpy(t->peer.ip.a, (uint8_t[]){198, 18, 0, 6}, 4);
	CHECK(dust_session_table_insert(w->tab, t) == 0, "setup: insert");
	dgw_sess_publish(w, t, 0);
	settle();
	CHECK(atomic_load(&w->pub_done) == w->pub_sent, "a PUBLISH past pub[] was never counted");
	dgw_sess_retire(w, t);
	dgw_sess_retire(w, s);
	settle();
	CHECK(slot_free(t) && slot_free(s) && !published(1), "slots not back");
	return 0;
}

/*
 * F8: a session published and retired before the main lcore reads its
 * PUBLISH (an answer pubwait had no room for, a replaced intro) must not
 * take the place of the client's working session, nor evict it.
 */
static int f8_retired_publish(void)
{
	struct dgw_worker *w = T.gw->w[0];
	struct dust_session *s0 = live(1, 7), *s1 = inserted(1, 8);
	uint64_t evicted = ctr(DGW_CTR_SESS_EVICTED);

	printf("gw-msgs: F8: PUBLISH, then RETIRED, of a second session of a working client\n");
	CHECK(s0 && s1 && published(1) == s0, "setup");
	dgw_sess_publish(w, s1, 0);
	dgw_sess_retire(w, s1);
	settle();
	CHECK(ctr(DGW_CTR_SESS_EVICTED) == evicted && s0->state == DUST_SESSION_LIVE,
	      "a PUBLISH of a retired session evicted the working one");
	CHECK(published(1) == s0, "the working session is no longer published");
	CHECK(slot_free(s1) && atomic_load(&w->pub_done) == w->pub_sent, "s1 not finished");
	dgw_sess_retire(w, s0);
	settle();
	CHECK(slot_free(s0) && !published(1), "slot not back");
	return 0;
}

/*
 * Two sessions of a worker never share a server CID: 4 bytes, as the cover
 * server's, meet about once in 65536 draws at a full table, and the later
 * session would take the earlier one's short headers. A drawn CID that is
 * taken is drawn again; a session's own entry is no clash.
 */
static int cid_clash(void)
{
	struct dgw_worker *w = T.gw->w[0];
	struct dust_session *a = inserted(0, 60), *b = inserted(1, 61);
	uint8_t dg[1 + DUST_QUIC_SERVER_CID_LEN] = {0x40}, mine[DUST_QUIC_SERVER_CID_LEN];

	CHECK(a && b && w->cid_map, "setup: no sessions or no CID table");
	a->profile = b->profile = DUST_PROFILE_QUIC;
	a->cid_len = b->cid_len = DUST_QUIC_SERVER_CID_LEN;
	memset(a->cid, 0x5a, DUST_QUIC_SERVER_CID_LEN);
	memcpy(mine, a->cid, sizeof(mine));
	dgw_quic_cid_pick(w, a);
	CHECK(!memcmp(a->cid, mine, sizeof(mine)), "a free CID was drawn again");
	dgw_quic_cid_add(w, a);
	dgw_quic_cid_pick(w, a);
	CHECK(!memcmp(a->cid, mine, sizeof(mine)), "a session's own CID counted as taken");
	memcpy(b->cid, a->cid, sizeof(mine)); /* b's draw met a's CID */
	dgw_quic_cid_pick(w, b);
	CHECK(memcmp(b->cid, a->cid, sizeof(mine)) != 0, "a taken CID was kept");
	dgw_quic_cid_add(w, b);
	memcpy(dg + 1, a->cid, sizeof(mine));
	CHECK(dgw_quic_cid_find(w, dg, sizeof(dg)) == a, "a's CID no longer finds a");
	memcpy(dg + 1, b->cid, sizeof(mine));
	CHECK(dgw_quic_cid_find(w, dg, sizeof(dg)) == b, "b's CID does not find b");
	dgw_quic_cid_del(w, a);
	dgw_quic_cid_del(w, b);
	return 0;
}

/* A telemetry command that takes its time over the gateway (F5). */
static struct {
	int inside, destroyed, saw_destroyed;
} F5;

static void *f5_reader(void *arg)
{
	struct dgw *gw = dgw_global_hold();
	struct timespec ts = {0, 200 * 1000 * 1000};

	(void)arg;
	__atomic_store_n(&F5.inside, gw ? 1 : -1, __ATOMIC_RELEASE);
	if (!gw)
		return NULL;
	nanosleep(&ts, NULL); /* dgw_destroy runs now, on the main thread */
	F5.saw_destroyed = __atomic_load_n(&F5.destroyed, __ATOMIC_ACQUIRE);
	gw->published++; /* a use after free without the hold: ASan in the sanitizer suite */
	dgw_global_release();
	return NULL;
}

/* Destroys the gateway: the last check. */
static int f5_telemetry_exit(void)
{
	pthread_t th;
	int inside;

	CHECK(pthread_create(&th, NULL, f5_reader, NULL) == 0, "no thread");
	while (!(inside = __atomic_load_n(&F5.inside, __ATOMIC_ACQUIRE)))
		sched_yield();
	dgw_destroy(T.gw);
	T.gw = NULL;
	__atomic_store_n(&F5.destroyed, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	CHECK(inside == 1, "the telemetry thread found no gateway");
	CHECK(!F5.saw_destroyed, "the gateway was freed while a telemetry command read it");
	CHECK(!dgw_global_hold(), "a destroyed gateway can still be held");
	return 0;
}

int main(int argc, char **argv)
{
	int n = rte_eal_init(argc, argv);

	if (n < 0 || argc - n < 2 || dust_init() != 0) {
		fprintf(stderr, "usage: gw-msgs EAL-ARGS -- WORKDIR\n");
		return 1;
	}
	dgw_config_defaults(&T.cfg);
	dust_ipaddr_parse(&T.cfg.ip4, "10.0.0.1");
	T.cfg.queues = 1;
	T.cfg.sessions_per_lcore = 8;
	T.cfg.quic_port = 443; /* a CID table for cid_clash */
	if (make_store(argv[n + 1]) || !(T.gw = dgw_create(&T.cfg))) {
		fprintf(stderr, "gw-msgs: setup failed\n");
		return 1;
	}
	if (revoke_full_inbox() == 0 && f1_partial_reload() == 0 && f2_full_rings() == 0 &&
	    f7_publish_count() == 0 && f8_retired_publish() == 0 && cid_clash() == 0)
		(void)f5_telemetry_exit();
	dgw_destroy(T.gw);
	return gw_verdict("gw-msgs");
}
