/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-live: the session table and the store while the gateway runs, through
 * the real loop (dustgw_core, one worker) on net_ring ports, with a driver
 * lcore that controls time. Two modes:
 * - evict: in a full table an authenticated intro evicts the idlest session
 *   (idle evict_idle_s or more); a flood of datagrams that do not
 *   authenticate evicts nothing; with no session idle long enough the intro
 *   is refused.
 * - invite: dust-invite (the real tool) creates an invitation while the
 *   gateway runs: it connects within 1 s, no restart; dust-invite revoke (by
 *   file, id and tunnel address) cuts a live session within 1 s and later
 *   intros are refused; a client streaming all along loses no reply.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include <rte_eal.h>
#include <rte_lcore.h>

#include "gwcheck.h"
#include "ringgw.h"

enum { CAP = 4, NCL = 6, EVICT_IDLE_S = 2, LIVE_CAP = 64 };
/* bench mode: rounds of BURST first uses, each with PER_INTRO keepalives beside it */
enum { BURST = 1000, PER_INTRO = 6, ROUNDS = 5, NMODES = 3 };
/*
 * rate mode: clients measured (one at a time for the latency, RATE_ONE of them;
 * the others at once: no more than the first uses a worker may hold, DGW_PENDING_MAX)
 */
enum { RATE_CLIENTS = 1500, RATE_ONE = 500 };

/*
 * The promise is 1 s (dustgw polls every 200 ms). Sanitizer builds
 * run several times slower on a shared machine: they get 5 s. Effects are
 * awaited up to WAIT_MS either way, so a slow run reports its time.
 */
#ifdef __SANITIZE_ADDRESS__
#define LIMIT_MS 5000
#else
#define LIMIT_MS 1000
#endif
#define WAIT_MS 10000

#define PASSWORD "gw-live test password"

struct cl {
	struct dust_invite inv;
	struct dust_identity id;
	struct dust_session cur;
	struct dust_endpoint a;
	uint8_t intro[1024]; /* the last intro sent, for replays */
	int intro_len;
	uint32_t idx; /* store index */
};

static struct ringgw H;

static struct {
	struct dust_rng rng;
	struct dust_pad pad;
	struct cl c[NCL];
	uint64_t sent;                            /* frames put on the net RX ring */
	const char *dir, *invite_exe;             /* invite mode: work dir, dust-invite */
	struct cl d;                              /* invite mode: the client made by dust-invite */
	uint64_t b_ka, b_replies;                 /* invite mode: client 1's stream */
	bool bench;                               /* bench mode: first-use bursts */
	bool burst_ci;                            /* burst mode: one, in CI */
	unsigned nburst;                          /* invitations in burst[] */
	const char *rate_key, *rate_store;        /* rate mode: a store made by dust-invite */
	uint64_t rate_tsc[RATE_CLIENTS];          /* rate mode: burst[i]'s reply came */
	struct cl burst[NMODES * ROUNDS * BURST]; /* bench mode: one first use each */
	struct rte_mbuf *pre[BURST * (PER_INTRO + 1)]; /* bench mode: a round's frames */
	unsigned npre;
	uint64_t est_replies;    /* bench mode: replies to the established clients */
	unsigned queued_at_last; /* slow path's queue when the last of them came */
} T;

static int send_dg(const struct dust_endpoint *from, const uint8_t *dg, size_t len)
{
	T.sent++;
	return rg_send(&H, 0, from, 4433, dg, len);
}

static int send_intro_at(struct cl *c, uint64_t ts_ms)
{
	c->intro_len = dust_intro_build(&c->inv, &c->id, &T.rng, &T.pad, ts_ms, c->intro,
	                                sizeof(c->intro), &c->cur);
	if (c->intro_len < 0)
		return -1;
	return send_dg(&c->a, c->intro, (size_t)c->intro_len);
}

static int send_intro(struct cl *c)
{
	return send_intro_at(c, rg_now_ms());
}

/* A keepalive from the client: refreshes its session's idle clock. */
static int send_ka(struct cl *c)
{
	uint8_t pkt[256];
	int n = dust_data_seal(&c->cur, &T.rng, &T.pad, (uint32_t)time(NULL), pkt, 0, sizeof(pkt));

	return n < 0 ? -1 : send_dg(&c->a, pkt, (size_t)n);
}

/* Replies the gateway sent to client 1 (invite mode: it must see them all). */
static void count_replies(struct rte_mbuf **m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *f = rte_pktmbuf_mtod(m[i], const uint8_t *);

		if (m[i]->data_len >= 42 && !memcmp(f + 30, T.c[1].a.ip.a, 4) &&
		    (uint16_t)(f[36] << 8 | f[37]) == T.c[1].a.port)
			T.b_replies++;
		if (m[i]->data_len >= 42 && f[30] == 198 && f[31] == 18)
			T.est_replies++;
		if (m[i]->data_len >= 42 && f[30] == 198 && f[31] == 20 &&
		    (unsigned)(f[32] << 8 | f[33]) < RATE_CLIENTS &&
		    !T.rate_tsc[f[32] << 8 | f[33]])
			T.rate_tsc[f[32] << 8 | f[33]] = rte_rdtsc();
	}
}

static void drain(void)
{
	struct rte_mbuf *m[32];
	unsigned n;

	while ((n = rte_ring_dequeue_burst(H.ntx[0], (void **)m, 32, NULL)) != 0) {
		count_replies(m, n);
		rte_pktmbuf_free_bulk(m, n);
	}
	while ((n = rte_ring_dequeue_burst(H.dtx[0], (void **)m, 32, NULL)) != 0)
		rte_pktmbuf_free_bulk(m, n);
}

/* Until the worker has read every frame sent and finished with them. */
static bool settled(void)
{
	for (int i = 0; i < 20000; i++) {
		drain();
		if (rg_ctr(&H, 0, DGW_CTR_NET_RX) == T.sent && rte_ring_count(H.nrx[0]) == 0) {
			bool done = rg_worker_done(&H, 0);

			rte_delay_us_sleep(5000);
			drain();
			return done;
		}
		rte_delay_us_sleep(500);
	}
	return false;
}

static struct dust_session *published(const struct cl *c)
{
	return atomic_load(&H.gw->pub[c->idx].s);
}

static uint64_t sessions(void)
{
	struct dgw_stats s;

	dgw_stats_get(H.gw, 0, &s);
	return s.sessions;
}

/* Clients 1..CAP-1 keep talking for ms milliseconds; client 0 stays silent. */
static int talk(unsigned ms)
{
	for (unsigned t = 0; t < ms; t += 100) {
		for (unsigned i = 1; i < CAP; i++)
			if (send_ka(&T.c[i]))
				return -1;
		rte_delay_us_sleep(100000);
		drain();
	}
	return 0;
}

/* Datagrams that never authenticate, each from an address with no session. */
static int flood(void)
{
	struct dust_endpoint ep = {.ip = {.family = 4, .a = {198, 51, 100, 0}}};
	struct cl *c4 = &T.c[4];
	uint8_t junk[600];

	for (unsigned i = 0; i < 200; i++) {
		ep.ip.a[3] = (uint8_t)i;
		ep.port = (uint16_t)(5000 + i);
		dust_rng_bytes(&T.rng, junk, sizeof(junk));
		if (send_dg(&ep, junk, 148 + i))
			return -1;
		/* client 0's own intro, replayed from elsewhere: a duplicate */
		if (i % 20 == 0 && send_dg(&ep, T.c[0].intro, (size_t)T.c[0].intro_len))
			return -1;
	}
	/* client 4's intro with its confirmation MAC broken: fails after the X25519 */
	c4->intro_len = dust_intro_build(&c4->inv, &c4->id, &T.rng, &T.pad, rg_now_ms(), c4->intro,
	                                 sizeof(c4->intro), &c4->cur);
	if (c4->intro_len < 0)
		return -1;
	c4->intro[c4->intro_len - 1] ^= 1;
	if (send_dg(&c4->a, c4->intro, (size_t)c4->intro_len))
		return -1;
	/* client 5's intro from two minutes ago: stale */
	return send_intro_at(&T.c[5], rg_now_ms() - 120000);
}

static bool moved_to_4(void)
{
	for (int i = 0; i < 2000 && (published(&T.c[0]) || !published(&T.c[4])); i++)
		rte_delay_us_sleep(500);
	return !published(&T.c[0]) && published(&T.c[4]);
}

static int phases(void)
{
	struct dust_store *st = H.gw->srv.store;
	uint64_t ok0;

	for (unsigned i = 0; i < CAP; i++)
		CHECK(send_intro(&T.c[i]) == 0, "intro build");
	CHECK(settled() && rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == CAP, "first clients not up");
	CHECK(talk(1000 * EVICT_IDLE_S + 1200) == 0, "keepalive seal");
	CHECK(settled(), "keepalives not read");
	CHECK(sessions() == CAP && published(&T.c[0]), "client 0 gone before any eviction");

	printf("gw-live: full table, client 0 idle: a flood that does not authenticate\n");
	ok0 = rg_ctr(&H, 0, DGW_CTR_INTRO_OK);
	CHECK(flood() == 0, "flood");
	CHECK(settled(), "flood not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_SESS_EVICTED_IDLE) == 0, "a datagram that failed evicted");
	CHECK(rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == ok0, "a bad intro was accepted");
	CHECK(sessions() == CAP && published(&T.c[0]), "client 0 lost to a flood");
	CHECK(rg_drop(&H, 0, DUST_DROP_INTRO_UNKNOWN) >= 200, "junk not counted as intro_unknown");
	CHECK(rg_drop(&H, 0, DUST_DROP_INTRO_DUP) == 10, "replays not counted as intro_dup");
	CHECK(rg_drop(&H, 0, DUST_DROP_INTRO_AUTH) == 1, "broken intro not counted");
	CHECK(rg_drop(&H, 0, DUST_DROP_INTRO_STALE) == 1, "stale intro not counted");

	printf("gw-live: client 4's intact intro evicts client 0, the idlest\n");
	CHECK(send_intro(&T.c[4]) == 0, "intro build");
	CHECK(settled(), "intro not read");
	CHECK(rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == ok0 + 1, "client 4 refused");
	CHECK(rg_ctr(&H, 0, DGW_CTR_SESS_EVICTED_IDLE) == 1, "no eviction counted");
	CHECK(sessions() == CAP, "table not full after the eviction");
	CHECK(moved_to_4(), "client 0 still published, or client 4 not");
	for (unsigned i = 1; i < CAP; i++)
		CHECK(published(&T.c[i]), "a talking client was evicted");

	printf("gw-live: nobody idle %u s: client 5 is refused, its invitation untouched\n",
	       EVICT_IDLE_S);
	CHECK(send_intro(&T.c[5]) == 0, "intro build");
	CHECK(settled(), "intro not read");
	CHECK(rg_drop(&H, 0, DGW_DROP_TABLE_FULL) == 1, "client 5 not refused as table_full");
	CHECK(rg_ctr(&H, 0, DGW_CTR_SESS_EVICTED_IDLE) == 1, "an active session was evicted");
	CHECK(!dust_store_at(st, T.c[5].idx)->bound, "a refused intro bound its invitation");
	return 0;
}

/* ---- invite mode ------------------------------------------------------------ */

static uint64_t store_gen(void)
{
	return dust_store_generation(H.gw->srv.store);
}

/* Run dust-invite with args; the ms it took from start to exit is in *ms. */
static int invite(const char *args, uint64_t *done_ms)
{
	char cmd[2048];
	int rc;

	if (snprintf(cmd, sizeof(cmd), "%s %s >>%s/invite.log 2>&1", T.invite_exe, args, T.dir) >=
	    (int)sizeof(cmd))
		return -1;
	rc = system(cmd);
	*done_ms = rg_now_ms();
	if (rc != 0)
		printf("gw-live: '%s' failed (%d)\n", cmd, rc);
	return rc;
}

/* Client 1 streams: a keepalive every 20 ms, each answered by the gateway. */
static int stream_for(unsigned ms)
{
	for (unsigned t = 0; t < ms; t += 20) {
		if (send_ka(&T.c[1]))
			return -1;
		T.b_ka++;
		rte_delay_us_sleep(20000);
		drain();
	}
	return 0;
}

/* Read the text dust-invite wrote and open it, as a client would. */
static int open_text(struct dust_invite *inv)
{
	char path[512], text[8192];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/texts/invite-1.txt", T.dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	return dust_invite_open(inv, text, PASSWORD, strlen(PASSWORD));
}

/* Intros from d every 50 ms (client 1 streaming between) until one is accepted. */
static uint64_t connect_d(uint64_t deadline_ms)
{
	uint64_t ok0 = rg_ctr(&H, 0, DGW_CTR_INTRO_OK);

	while (rg_now_ms() < deadline_ms) {
		if (send_intro(&T.d) || stream_for(40))
			return 0;
		if (rg_ctr(&H, 0, DGW_CTR_INTRO_OK) > ok0)
			return rg_now_ms();
	}
	return 0;
}

/* Until idx has no published session (or the deadline); the time it went. */
static uint64_t unpublished(const struct cl *c, uint64_t deadline_ms)
{
	while (rg_now_ms() < deadline_ms) {
		if (!published(c))
			return rg_now_ms();
		if (stream_for(20))
			return 0;
	}
	return 0;
}

static int revoke_and_check(struct cl *c, const char *how, uint64_t *cut_ms)
{
	char args[1024];
	uint64_t t0, t1;

	snprintf(args, sizeof(args), "revoke --store %s/inv.store --key %s/server.key %s", T.dir,
	         T.dir, how);
	CHECK(invite(args, &t0) == 0, "dust-invite revoke failed");
	t1 = unpublished(c, t0 + WAIT_MS);
	CHECK(t1 != 0, "a revoked session is still published");
	*cut_ms = t1 - t0;
	return 0;
}

static int phases_invite(void)
{
	char args[1024], hex[2 * DUST_ID_BYTES + 1];
	uint64_t t0, t1, t2, t3, cut_d, cut_a, gen0 = store_gen(), refused;
	struct cl *a = &T.c[0], *c = &T.c[2], *d = &T.d;

	d->a.ip.family = 4;
	memcpy(d->a.ip.a, (uint8_t[]){198, 18, 1, 1}, 4);
	d->a.port = 21000;
	CHECK(dust_identity_generate(&d->id) == 0, "client key");
	CHECK(send_intro(a) == 0 && send_intro(&T.c[1]) == 0, "intro build");
	CHECK(settled() && rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == 2, "first clients not up");
	CHECK(stream_for(200) == 0, "stream");

	printf("gw-live: dust-invite create while the gateway runs\n");
	snprintf(args, sizeof(args),
	         "create --store %s/inv.store --key %s/server.key --server 10.0.0.1 --port 4433 "
	         "--tunnel-net 10.9.0.0/16 --password-file %s/pw --out-dir %s/texts",
	         T.dir, T.dir, T.dir, T.dir);
	CHECK(invite(args, &t0) == 0, "dust-invite create failed");
	while (store_gen() == gen0 && rg_now_ms() < t0 + WAIT_MS)
		rte_delay_us_sleep(2000);
	t1 = rg_now_ms();
	CHECK(store_gen() > gen0, "store generation did not move");
	/* the client's side (Argon2id on the text) is not the gateway's to count */
	CHECK(open_text(&d->inv) == 0, "cannot open the new invitation text");
	t2 = rg_now_ms();
	t3 = connect_d(t2 + WAIT_MS);
	CHECK(t3 != 0, "the new invitation was not accepted");
	/* in effect: create's return to the merge, then the first intro through */
	printf("gw-live: new invitation merged %" PRIu64 " ms after dust-invite create returned, "
	       "connected %" PRIu64 " ms later (client-side Argon2id not counted)\n",
	       t1 - t0, t3 - t2);
	CHECK(t1 - t0 + t3 - t2 < LIMIT_MS, "new invitation too slow to take effect");
	d->idx = (uint32_t)dust_store_count(H.gw->srv.store) - 1; /* appended last */
	CHECK(stream_for(100) == 0 && published(d), "new client not published");

	printf("gw-live: revoke by text, by id and by tunnel address\n");
	snprintf(args, sizeof(args), "--file %s/texts/invite-1.txt --password-file %s/pw", T.dir,
	         T.dir);
	CHECK(revoke_and_check(d, args, &cut_d) == 0, "revoke by file");
	sodium_bin2hex(hex, sizeof(hex), a->inv.id, DUST_ID_BYTES);
	snprintf(args, sizeof(args), "--id %.16s", hex);
	CHECK(revoke_and_check(a, args, &cut_a) == 0, "revoke by id");
	printf("gw-live: sessions cut %" PRIu64 " ms (file) and %" PRIu64
	       " ms (id) after dust-invite revoke returned\n",
	       cut_d, cut_a);
	CHECK(cut_d < LIMIT_MS && cut_a < LIMIT_MS, "a revoke too slow to take effect");
	snprintf(args, sizeof(args),
	         "revoke --store %s/inv.store --key %s/server.key --tunnel 10.9.0.4", T.dir, T.dir);
	CHECK(invite(args, &t0) == 0, "revoke by tunnel address");
	CHECK(stream_for(600) == 0, "stream");
	CHECK(rg_ctr(&H, 0, DGW_CTR_SESS_REVOKED) == 2, "sessions_revoked is not 2");

	printf("gw-live: later intros of the three are refused\n");
	refused = rg_drop(&H, 0, DUST_DROP_INTRO_REVOKED);
	CHECK(send_intro(d) == 0 && send_intro(a) == 0 && send_intro(c) == 0, "intro build");
	CHECK(settled(), "intros not read");
	CHECK(rg_drop(&H, 0, DUST_DROP_INTRO_REVOKED) == refused + 3, "not refused as revoked");
	CHECK(!published(d) && !published(a) && !published(c), "a revoked client came back");

	/* client 1 streamed through all of it: every keepalive answered */
	CHECK(stream_for(100) == 0 && settled(), "stream");
	printf("gw-live: client 1 sent %" PRIu64 " keepalives, got %" PRIu64 " replies\n", T.b_ka,
	       T.b_replies);
	CHECK(T.b_replies == T.b_ka + 1, "client 1 lost replies (+1: its intro's)");
	CHECK(published(&T.c[1]), "client 1 lost its session");
	return 0;
}

/* ---- bench mode ------------------------------------------------------------- */

/*
 * How the worker meets a burst of first uses: store commits on the worker
 * in the burst (before i12), on the main lcore with intros opened in the
 * burst (i12), or on the main lcore with intros queued for the slow path's
 * share of the worker (slow.c, [runtime] intro_share).
 */
static const char *const mode_name[NMODES] = {"commits on the worker, intros in the burst",
                                              "commits on main, intros in the burst",
                                              "commits on main, intros in their share"};

static void bench_mode(unsigned mode)
{
	struct dgw_config def;

	dgw_config_defaults(&def);
	H.gw->deferred = mode > 0;
	dust_store_set_deferred(H.gw->srv.store, mode > 0);
	__atomic_store_n(&H.gw->cfg.intro_share, mode == 2 ? def.intro_share : 0, __ATOMIC_RELAXED);
}

/* BENCH_DEBUG: the gateway worker thread's on-CPU and runqueue-wait ns (schedstat) */
static void worker_sched(uint64_t *run, uint64_t *wait)
{
	char path[300], comm[64];
	unsigned lc = H.gw->w[0]->lcore;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	*run = *wait = 0;
	while (d && (e = readdir(d))) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    strtoul(comm + strcspn(comm, "0123456789"), NULL, 10) == lc &&
		    !strncmp(comm, "rte-worker-", 11)) {
			fclose(f);
			snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
			f = fopen(path, "r");
			if (f && fscanf(f, "%" SCNu64 " %" SCNu64, run, wait) != 2)
				*run = *wait = 0;
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

/* A frame built ahead, for bench_round to put on the ring at once. */
static int pre_dg(const struct dust_endpoint *from, const uint8_t *dg, int len)
{
	struct rte_mbuf *m = len < 0 ? NULL : rg_dg_mbuf(&H, from, 4433, dg, (size_t)len);

	if (!m)
		return -1;
	T.pre[T.npre++] = m;
	return 0;
}

/*
 * BURST rounds of: one first-use intro of burst[from..] (none if !n), then
 * PER_INTRO keepalives of the established clients. All frames are built
 * first (the client's X25519s and seals are no gateway cost), then queued
 * at once. The rate: keepalives answered per second, from the first frame
 * queued to the last established reply (first uses may still be running).
 */
static double bench_round(unsigned from, unsigned n)
{
	const unsigned est = BURST * PER_INTRO;
	uint64_t base = T.est_replies, t0, t1, run0 = 0, wait0 = 0, run1, wait1;
	struct dgw_depths depths;
	uint8_t dg[1024];

	T.npre = 0;
	for (unsigned r = 0; r < BURST; r++) {
		struct cl *b = &T.burst[from + r];

		if (n && pre_dg(&b->a, dg,
		                dust_intro_build(&b->inv, &b->id, &T.rng, &T.pad, rg_now_ms(), dg,
		                                 sizeof(dg), &b->cur)))
			return -1;
		for (unsigned k = 0; k < PER_INTRO; k++) {
			struct cl *c = &T.c[k % NCL];

			if (pre_dg(&c->a, dg,
			           dust_data_seal(&c->cur, &T.rng, &T.pad, (uint32_t)time(NULL), dg,
			                          0, sizeof(dg))))
				return -1;
		}
	}
	if (getenv("BENCH_DEBUG"))
		worker_sched(&run0, &wait0);
	t0 = rte_rdtsc();
	for (unsigned q = 0; q < T.npre;)
		q += rte_ring_enqueue_burst(H.nrx[0], (void **)T.pre + q, T.npre - q, NULL);
	T.sent += T.npre;
	do {
		drain();
		t1 = rte_rdtsc();
		if (t1 - t0 > 20 * rte_get_tsc_hz())
			return -1;
	} while (T.est_replies - base < est);
	dgw_worker_depths(H.gw, 0, &depths);
	T.queued_at_last = depths.slow;
	if (getenv("BENCH_DEBUG")) {
		worker_sched(&run1, &wait1);
		printf("round: %u intros, %u still queued, %u pending at the last reply, %.2f ms; "
		       "worker on CPU %.2f ms, waiting for a CPU %.2f ms\n",
		       n, depths.slow, depths.pending, (double)(t1 - t0) * 1000 / rte_get_tsc_hz(),
		       (run1 - run0) / 1e6, (wait1 - wait0) / 1e6);
	}
	if (!settled() || T.est_replies - base != est)
		return -1;
	return (double)est * rte_get_tsc_hz() / (double)(t1 - t0);
}

/*
 * Rounds alternate between the modes, each with fresh invitations. Other
 * processes share this machine's cores: a round the scheduler interrupted
 * is slow, so each figure is the best of ROUNDS.
 */
static int phases_bench(void)
{
	double alone[NMODES] = {0}, during[NMODES] = {0};
	unsigned next = 0;

	for (unsigned i = 0; i < NCL; i++)
		CHECK(send_intro(&T.c[i]) == 0, "intro build");
	CHECK(settled(), "first clients not up");
	for (unsigned r = 0; r < ROUNDS; r++) {
		for (unsigned mode = 0; mode < NMODES; mode++) {
			double a, d;

			bench_mode(mode);
			a = bench_round(0, 0);
			d = bench_round(next, BURST);
			next += BURST;
			CHECK(a > 0 && d > 0, "a bench round stalled");
			alone[mode] = RTE_MAX(alone[mode], a);
			during[mode] = RTE_MAX(during[mode], d);
		}
	}
	CHECK(rg_ctr(&H, 0, DGW_CTR_INTRO_FIRST) == NCL + next, "first uses missing");
	printf("gw-live bench: established keepalives answered per second (best of %u), %u "
	       "beside each of %u first-use intros, one worker:\n",
	       ROUNDS, PER_INTRO, BURST);
	for (unsigned mode = 0; mode < NMODES; mode++)
		printf("  %-42s alone %8.0f, during the burst %8.0f: %.3f\n", mode_name[mode],
		       alone[mode], during[mode], during[mode] / alone[mode]);
	return 0;
}

/*
 * CI: one burst of BURST first uses beside PER_INTRO keepalives each. The
 * established clients' keepalives are all answered while most of the first
 * uses still wait in the slow path's queue (opened in the burst, as before
 * slow.c, every intro ahead of the last keepalive is opened before it);
 * then every first use goes live.
 */
static int phases_burst(void)
{
	unsigned queued;

	for (unsigned i = 0; i < NCL; i++)
		CHECK(send_intro(&T.c[i]) == 0, "intro build");
	CHECK(settled(), "first clients not up");
	CHECK(bench_round(0, BURST) > 0, "a keepalive went unanswered");
	queued = T.queued_at_last;
	printf("gw-live burst: %u of %u first uses still queued at the last established reply\n",
	       queued, BURST);
	CHECK(queued > BURST / 2, "the burst's intros went ahead of established data");
	CHECK(rg_ctr(&H, 0, DGW_CTR_INTRO_FIRST) == NCL + BURST, "first uses missing");
	for (unsigned i = 0; i < BURST; i += 97)
		CHECK(published(&T.burst[i]), "a burst client has no published session");
	return 0;
}

/* ---- rate mode: intros per second and latency, a large store ------------------ */

static double us(uint64_t tsc)
{
	return (double)tsc * 1e6 / (double)rte_get_tsc_hz();
}

/*
 * Waits for the replies of burst[from..to); false after 20 s. The driver
 * stands in for the network, which takes no CPU of the gateway's host: it
 * naps 20 us while nothing is answered rather than spin, so that on a
 * small machine the store's request threads and etcd get the CPU a spin
 * would take (on 2 cores it took one of them whole).
 */
static bool rate_wait(unsigned from, unsigned to)
{
	uint64_t t0 = rte_rdtsc();

	for (unsigned i = from; i < to;) {
		drain();
		if (T.rate_tsc[i])
			i++;
		else if (rte_rdtsc() - t0 > 20 * rte_get_tsc_hz())
			return false;
		else
			rte_delay_us_sleep(20);
	}
	return true;
}

/* burst[i]'s intro from port, built ahead into T.pre. */
static int rate_pre(unsigned i, uint16_t port)
{
	struct cl *c = &T.burst[i];
	uint8_t dg[1024];

	c->a.port = port;
	T.rate_tsc[i] = 0;
	return pre_dg(&c->a, dg,
	              dust_intro_build(&c->inv, &c->id, &T.rng, &T.pad, rg_now_ms(), dg, sizeof(dg),
	                               &c->cur));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * One kind of intro (first uses, or returning clients from a new port):
 * RATE_ONE clients one at a time, each sent once the last was answered (its
 * latency: queued to answered); then the others all at once (the rate: from
 * the first queued to the last answered).
 */
static int rate_kind(const char *kind, uint16_t port)
{
	uint64_t lat[RATE_ONE], t0;
	unsigned rest = RATE_CLIENTS - RATE_ONE;

	for (unsigned i = 0; i < RATE_ONE; i++) {
		T.npre = 0;
		if (rate_pre(i, port))
			return -1;
		t0 = rte_rdtsc();
		while (rte_ring_enqueue(H.nrx[0], T.pre[0]) != 0)
			rte_pause();
		T.sent++;
		if (!rate_wait(i, i + 1))
			return -1;
		lat[i] = T.rate_tsc[i] - t0;
	}
	T.npre = 0;
	for (unsigned i = RATE_ONE; i < RATE_CLIENTS; i++)
		if (rate_pre(i, port))
			return -1;
	t0 = rte_rdtsc();
	for (unsigned q = 0; q < T.npre;)
		q += rte_ring_enqueue_burst(H.nrx[0], (void **)T.pre + q, T.npre - q, NULL);
	T.sent += T.npre;
	if (!rate_wait(RATE_ONE, RATE_CLIENTS))
		return -1;
	qsort(lat, RATE_ONE, sizeof(lat[0]), cmp_u64);
	printf("  %-40s %6.0f intros/s (%u at once); one at a time (%u): p50 %.0f us, p99 %.0f "
	       "us\n",
	       kind, rest * 1e6 / us(T.rate_tsc[RATE_CLIENTS - 1] - t0), rest, RATE_ONE,
	       us(lat[RATE_ONE / 2]), us(lat[RATE_ONE * 99 / 100]));
	return 0;
}

static int phases_rate(void)
{
	uint64_t first0 = rg_ctr(&H, 0, DGW_CTR_INTRO_FIRST);

	printf("gw-live rate: %zu invitations in %s, %u clients, one worker:\n",
	       dust_store_count(H.gw->srv.store), T.rate_store, RATE_CLIENTS);
	CHECK(rate_kind("first uses (binding fsynced on main)", 40000) == 0, "first uses");
	CHECK(settled(), "first uses not settled");
	CHECK(rg_ctr(&H, 0, DGW_CTR_INTRO_FIRST) == first0 + RATE_CLIENTS, "first uses missing");
	CHECK(rate_kind("returning clients, from a new port", 40001) == 0, "returning clients");
	CHECK(settled(), "returning clients not settled");
	return 0;
}

/* Rate mode: the clients take the store's first RATE_CLIENTS invitations. */
static int rate_clients(void)
{
	struct dust_store *st = H.gw->srv.store;

	if (dust_store_count(st) < RATE_CLIENTS)
		return -1;
	for (unsigned i = 0; i < RATE_CLIENTS; i++) {
		struct cl *c = &T.burst[i];

		c->inv = dust_store_at(st, i)->inv;
		c->idx = i;
		c->a.ip.family = 4;
		memcpy(c->a.ip.a, (uint8_t[]){198, 20, (uint8_t)(i >> 8), (uint8_t)i}, 4);
		if (dust_identity_generate(&c->id))
			return -1;
	}
	return 0;
}

static int driver(void *arg)
{
	(void)arg;
	if ((T.rate_store   ? phases_rate()
	     : T.bench      ? phases_bench()
	     : T.burst_ci   ? phases_burst()
	     : T.invite_exe ? phases_invite()
	                    : phases()) != 0 &&
	    !gw_why)
		gw_why = "a phase failed"; /* every failed CHECK sets it: a safety net */
	dgw_stop(H.gw);
	return 0;
}

static int write_password(void)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/pw", T.dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(PASSWORD "\n", f);
	fclose(f);
	return chmod(path, 0600);
}

static int make_store(const char *dir, struct dgw_config *cfg)
{
	struct dust_identity srv;
	struct dust_ipaddr addr, tun;
	struct dust_store *st;

	snprintf(cfg->key_file, sizeof(cfg->key_file), "%s/server.key", dir);
	snprintf(cfg->store_path, sizeof(cfg->store_path), "%s/inv.store", dir);
	remove(cfg->store_path);
	if (dust_identity_generate(&srv) || dust_identity_save(&srv, cfg->key_file))
		return -1;
	st = dust_store_open(cfg->store_path, DUST_STORE_CREATE, &srv);
	if (!st)
		return -1;
	dust_ipaddr_parse(&addr, "10.0.0.1");
	for (unsigned i = 0; i < NCL; i++) {
		struct cl *c = &T.c[i];

		dust_ipaddr_parse(&tun, "10.9.0.0");
		tun.a[3] = (uint8_t)(i + 2);
		if (dust_invite_new(&c->inv, &srv, &addr, 4433, &tun, 16, time(NULL) + 3600) ||
		    dust_store_add(st, &c->inv) || dust_identity_generate(&c->id))
			return -1;
		c->idx = i;
		c->a.ip.family = 4;
		memcpy(c->a.ip.a, (uint8_t[]){198, 18, 0, (uint8_t)i}, 4);
		c->a.port = (uint16_t)(20000 + i);
	}
	for (unsigned i = 0; i < T.nburst; i++) {
		struct cl *c = &T.burst[i];

		dust_ipaddr_parse(&tun, "10.10.0.0");
		tun.a[2] = (uint8_t)(i >> 8);
		tun.a[3] = (uint8_t)i;
		if (dust_invite_new(&c->inv, &srv, &addr, 4433, &tun, 16, time(NULL) + 3600) ||
		    dust_store_add(st, &c->inv) || dust_identity_generate(&c->id))
			return -1;
		c->a.ip.family = 4;
		memcpy(c->a.ip.a, (uint8_t[]){198, 20, (uint8_t)(i >> 8), (uint8_t)i}, 4);
		c->a.port = 40000;
		c->idx = NCL + i;
	}
	if (dust_store_save(st))
		return -1;
	dust_store_close(st);
	return 0;
}

int main(int argc, char **argv)
{
	struct dgw_config cfg;
	int n = rte_eal_init(argc, argv);
	unsigned drv = rg_driver_lcore(2);

	if (n < 0 || argc - n < 2 || dust_init() != 0) {
		fprintf(
		    stderr,
		    "usage: gw-live EAL-ARGS (3 lcores) -- WORKDIR [DUST_INVITE | bench | burst |\n"
		    "       rate KEY STORE]\n"
		    "  without DUST_INVITE: eviction; with it: live invitations;\n"
		    "  bench: established throughput during first-use bursts; burst: one, "
		    "checked;\n"
		    "  rate: intros/s and latency with STORE (dust-invite create --store-only)\n");
		return 1;
	}
	T.dir = argv[n + 1];
	T.bench = argc - n >= 3 && !strcmp(argv[n + 2], "bench");
	T.burst_ci = argc - n >= 3 && !strcmp(argv[n + 2], "burst");
	T.invite_exe = argc - n >= 3 && !T.bench && !T.burst_ci ? argv[n + 2] : NULL;
	T.nburst = T.bench ? NMODES * ROUNDS * BURST : T.burst_ci ? BURST : 0;
	if (argc - n >= 5 && !strcmp(argv[n + 2], "rate")) {
		T.invite_exe = NULL;
		T.rate_key = argv[n + 3];
		T.rate_store = argv[n + 4];
	}
	if (drv == RTE_MAX_LCORE) {
		fprintf(stderr, "gw-live: needs 2 worker lcores\n");
		return 1;
	}
	dgw_config_defaults(&cfg);
	dust_ipaddr_parse(&cfg.ip4, "10.0.0.1");
	cfg.queues = 1;
	cfg.sessions_per_lcore = T.nburst ? T.nburst + 64 : T.invite_exe ? LIVE_CAP : CAP;
	if (!T.invite_exe && !T.nburst)
		cfg.evict_idle_s = EVICT_IDLE_S;
	dust_rng_init(&T.rng);
	dust_pad_default(&T.pad);
	if (T.rate_store) {
		cfg.sessions_per_lcore = 2 * RATE_CLIENTS + 64;
		snprintf(cfg.key_file, sizeof(cfg.key_file), "%s", T.rate_key);
		snprintf(cfg.store_path, sizeof(cfg.store_path), "%s", T.rate_store);
	}
	if ((!T.rate_store && make_store(T.dir, &cfg)) || write_password() ||
	    !(H.gw = dgw_create(&cfg)) || rg_ports(&H, 1) || (T.rate_store && rate_clients())) {
		fprintf(stderr, "gw-live: setup failed\n");
		return 1;
	}
	rte_eal_remote_launch(driver, NULL, drv);
	dgw_run(H.gw);
	dgw_stats_print(H.gw, stdout);
	dgw_destroy(H.gw);
	return gw_verdict("gw-live");
}
