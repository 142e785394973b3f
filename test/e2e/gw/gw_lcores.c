/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw-lcores: the cross-lcore session protocol of sessmap.c under load,
 * through the real loop (dustgw_core, two workers) on net_ring ports, with
 * a driver lcore that controls the timing no capture can: clients come up
 * on worker 0, then roam to worker 1 while cleartext for them streams in on
 * both delivery queues. Every reply must open with the session it claims
 * (old keys to the old address, new keys to the new one); the old sessions
 * must be evicted, and their slots released after the RCU grace period, so
 * worker 0 (capacity K) can admit K new clients afterwards.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_lcore.h>

#include "frame.h"
#include "gwcheck.h"
#include "ringgw.h"

enum { K = 16, STREAM = 4000 };

struct cl {
	struct dust_invite inv;
	struct dust_identity id;
	struct dust_session old, cur;
	struct dust_endpoint a, b; /* address before and after the roam */
	bool roamed;
	uint64_t got_old, got_new;
};

static struct ringgw H;

static struct {
	struct dust_rng rng;
	struct dust_pad pad;
	struct cl c[2 * K];
	uint64_t bad_reply, keepalives, data, late;
} T;

static int send_intro(struct cl *c, const struct dust_endpoint *from, unsigned q)
{
	uint8_t dg[1024];
	int n =
	    dust_intro_build(&c->inv, &c->id, &T.rng, &T.pad, rg_now_ms(), dg, sizeof(dg), &c->cur);

	return n < 0 ? -1 : rg_send(&H, q, from, 4433, dg, (size_t)n);
}

static void send_clear(struct cl *c, unsigned q, uint32_t seq)
{
	static const uint8_t far[4] = {10, 200, 0, 1};
	uint8_t f[128], pl[36];

	/* Ethernet + the inner IPv4/UDP packet toward the client's tunnel address */
	memset(pl, 0, sizeof(pl));
	memcpy(pl, &seq, 4);
	rg_put(&H, H.drx[q], f, rg_frame(f, far, c->inv.tunnel.a, 9, 9, pl, sizeof(pl)));
}

static struct cl *client_at(const uint8_t *ip, uint16_t port, bool *new_addr)
{
	for (unsigned i = 0; i < 2 * K; i++) {
		struct cl *c = &T.c[i];

		if (!memcmp(c->a.ip.a, ip, 4) && c->a.port == port) {
			*new_addr = false;
			return c;
		}
		if (c->roamed && !memcmp(c->b.ip.a, ip, 4) && c->b.port == port) {
			*new_addr = true;
			return c;
		}
	}
	return NULL;
}

/*
 * A client confirms its answer at once (SPEC §9.1): a keepalive under the
 * answer's keys proves that it receives at its address.
 */
static void confirm(struct cl *c, bool new_addr)
{
	struct dust_session *s = new_addr ? &c->cur : &c->old;
	uint8_t dg[256];
	int n = dust_data_seal(s, &T.rng, &T.pad, (uint32_t)time(NULL), dg, 0, sizeof(dg));

	if (n > 0)
		rg_send(&H, new_addr ? 1 : 0, new_addr ? &c->b : &c->a, 4433, dg, (size_t)n);
}

/* replies that overtook their session's answer: one stash per client and address */
static struct dust_early early[4 * K];

/*
 * A reply the session's window calls a replay (SPEC §6.2). Each delivery
 * queue has its worker, and both seal for one session, each taking its
 * counters as it seals: on 2 CPUs shared by 4 lcores, one may be preempted
 * between sealing a burst and putting it on its ring while the other sends
 * 192 newer ones, and the burst comes older than the window, as a late
 * packet on a network does (a client drops it). Is it one: opened under a
 * fresh window, the session's own, its newest counter older than the
 * window (a counter inside the window seen twice is a replay: bad)?
 */
static bool late_reply(const struct dust_session *s, const uint8_t *raw, size_t len)
{
	static struct dust_session t;
	struct dust_seg segs[DUST_CHAIN_MAX];
	struct dust_limits lim;
	uint8_t buf[2048];
	enum dust_drop d;
	unsigned n;

	if (len > sizeof(buf))
		return false;
	t = *s;
	dust_replay_init(&t.replay);
	memcpy(buf, raw, len);
	dust_limits_default(&lim);
	n = dust_datagram_open(&t, &lim, (uint32_t)time(NULL), buf, len, 0, segs, DUST_CHAIN_MAX,
	                       &d);
	return n && d == DUST_OK &&
	       s->replay.top - (t.replay.top - 1) > 64 * (DUST_REPLAY_WORDS - 1);
}

/*
 * Open one reply with the session of the address it went to. A reply to a
 * session whose answer (SPEC §5.1) is still on another worker's ring waits
 * in the stash, and is opened once the answer has been.
 */
static void open_reply(struct cl *c, bool new_addr, uint8_t *buf, size_t len)
{
	struct dust_session *s = new_addr ? &c->cur : &c->old;
	struct dust_early *e = &early[(c - T.c) * 2 + new_addr];
	struct dust_seg segs[DUST_CHAIN_MAX];
	struct dust_limits lim;
	bool pending = s->hs_pending;
	uint8_t raw[2048];
	enum dust_drop d;
	unsigned n;
	size_t k;

	dust_limits_default(&lim);
	memcpy(raw, buf, len < sizeof(raw) ? len : sizeof(raw));
	n = dust_datagram_open(s, &lim, (uint32_t)time(NULL), buf, len, 0, segs, DUST_CHAIN_MAX,
	                       &d);
	if (pending && s->hs_pending) {
		dust_early_keep(e, 0, buf, len);
		return;
	}
	if (!n && d == DUST_DROP_REPLAY && late_reply(s, raw, len)) {
		T.late++;
		return;
	}
	if (d != DUST_OK || !n) {
		T.bad_reply++;
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		if (!segs[i].len) {
			T.keepalives++;
			continue;
		}
		T.data++;
		*(new_addr ? &c->got_new : &c->got_old) += 1;
	}
	if (pending) {
		uint8_t kept[DUST_EARLY_BYTES];

		confirm(c, new_addr);
		while ((k = dust_early_take(e, 0, kept, sizeof(kept))) != 0)
			open_reply(c, new_addr, kept, k);
	}
}

static void reply(struct rte_mbuf *m)
{
	uint8_t buf[2048];
	struct frame_udp u;
	bool new_addr;
	struct cl *c;

	if (frame_udp_parse(rte_pktmbuf_mtod(m, uint8_t *), m->data_len, &u) < 0 || u.family != 4 ||
	    u.plen > sizeof(buf)) {
		T.bad_reply++;
		return;
	}
	c = client_at(u.dip, u.dport, &new_addr);
	if (!c) {
		T.bad_reply++;
		return;
	}
	memcpy(buf, u.pl, u.plen);
	open_reply(c, new_addr, buf, u.plen);
}

/* Every reply so far (the two workers' rings in turn: see rg_drain). */
static void drain(void)
{
	rg_drain(&H, reply);
}

typedef bool (*cond_fn)(void);

static bool wait_for(cond_fn ok)
{
	for (int i = 0; i < 20000; i++) {
		drain();
		if (ok())
			return true;
		rte_delay_us_sleep(500);
	}
	return false;
}

static bool up_on_0(void)
{
	/* the answers' keepalives, then those answering the clients' confirmations */
	return rg_ctr(&H, 0, DGW_CTR_INTRO_OK) == K && T.keepalives == 2 * K &&
	       H.gw->published == K && rg_ctr(&H, 0, DGW_CTR_PATH_VALIDATED) == K;
}

static bool evicted(void)
{
	return rg_ctr(&H, 0, DGW_CTR_SESS_EVICTED) == K && rg_ctr(&H, 1, DGW_CTR_INTRO_OK) == K &&
	       rg_ctr(&H, 1, DGW_CTR_PATH_VALIDATED) == K;
}

static bool second_wave(void)
{
	struct dgw_stats s;

	dgw_stats_get(H.gw, 0, &s);
	return s.ctr[DGW_CTR_INTRO_OK] + s.drop[DGW_DROP_TABLE_FULL] == 2 * K && s.sessions == K;
}

static int phases(void)
{
	struct dgw_stats s;
	uint32_t seq = 0;

	/* c->old: the session of the first address (replies there open with it). */
	for (unsigned i = 0; i < K; i++) {
		CHECK(send_intro(&T.c[i], &T.c[i].a, 0) == 0, "intro build");
		T.c[i].old = T.c[i].cur;
	}
	CHECK(wait_for(up_on_0), "clients did not come up on worker 0");
	/* Stream on both delivery queues while every client roams to worker 1. */
	for (unsigned r = 0; r < STREAM; r++, seq++) {
		struct cl *c = &T.c[r % K];

		send_clear(c, r & 1, seq);
		if (r % (STREAM / K) == STREAM / K / 2 && !c->roamed) {
			CHECK(send_intro(c, &c->b, 1) == 0, "roam intro");
			c->roamed = true;
		}
		if (r % 16 == 0)
			drain();
	}
	for (unsigned i = 0; i < K; i++)
		if (!T.c[i].roamed) {
			CHECK(send_intro(&T.c[i], &T.c[i].b, 1) == 0, "roam intro");
			T.c[i].roamed = true;
		}
	CHECK(wait_for(evicted), "old sessions not evicted from worker 0");
	/* Once moved, everything goes to the new address under the new keys. */
	rte_delay_us_sleep(20000);
	drain();
	for (unsigned i = 0; i < K; i++)
		T.c[i].got_new = T.c[i].got_old = 0;
	for (unsigned r = 0; r < 4 * K; r++)
		send_clear(&T.c[r % K], r & 1, seq++);
	rte_delay_us_sleep(50000);
	drain();
	rte_delay_us_sleep(50000);
	drain();
	for (unsigned i = 0; i < K; i++) {
		if (T.c[i].got_new != 4 || T.c[i].got_old)
			printf("client %u: %" PRIu64 " replies at the new address, %" PRIu64
			       " at the old\n",
			       i, T.c[i].got_new, T.c[i].got_old);
		CHECK(T.c[i].got_new == 4 && !T.c[i].got_old,
		      "after the roam, replies must use the new session");
	}
	/* Worker 0 is at capacity K unless the evicted slots were released. */
	for (unsigned i = K; i < 2 * K; i++) {
		CHECK(send_intro(&T.c[i], &T.c[i].a, 0) == 0, "intro build");
		T.c[i].old = T.c[i].cur;
	}
	CHECK(wait_for(second_wave), "second wave not processed on worker 0");
	dgw_stats_get(H.gw, 0, &s);
	CHECK(s.drop[DGW_DROP_TABLE_FULL] == 0, "evicted slots were never released");
	CHECK(T.bad_reply == 0, "a reply did not open with its address's session");
	for (unsigned i = 0; i < 4 * K; i++)
		CHECK(early[i].n == 0 && early[i].dropped == 0,
		      "a reply that overtook its answer was lost");
	return 0;
}

static int driver(void *arg)
{
	(void)arg;
	phases();
	dgw_stop(H.gw);
	return 0;
}

static int make_store(const char *dir, struct dgw_config *cfg)
{
	struct dust_identity srv;
	struct dust_store *st = rg_store_new(dir, cfg, &srv);

	if (!st)
		return -1;
	for (unsigned i = 0; i < 2 * K; i++) {
		struct cl *c = &T.c[i];

		if (rg_client_new(&srv, i, 4433, &c->inv, &c->id, &c->a) ||
		    dust_store_add(st, &c->inv))
			return -1;
		c->b = c->a;
		memcpy(c->b.ip.a, (uint8_t[]){198, 19, 0, (uint8_t)i}, 4);
		c->b.port = (uint16_t)(30000 + i);
	}
	if (dust_store_save(st))
		return -1;
	dust_store_close(st);
	return 0;
}

/* the config's session table: K a worker; the store */
static int setup(struct dgw_config *cfg, char **args, int nargs)
{
	(void)nargs;
	cfg->sessions_per_lcore = K;
	dust_rng_init(&T.rng);
	dust_pad_default(&T.pad);
	return make_store(args[0], cfg);
}

int main(int argc, char **argv)
{
	static const struct rg_test t = {.name = "gw-lcores",
	                                 .usage = "WORKDIR",
	                                 .driver_nth = 3,
	                                 .queues = 2,
	                                 .setup = setup,
	                                 .driver = driver};

	if (rg_main(&H, &t, argc, argv))
		return 1;
	printf("gw-lcores: %" PRIu64 " replies opened (%" PRIu64 " data, %" PRIu64
	       " keepalives), %" PRIu64 " late (older than the window, the session's own), %" PRIu64
	       " did not\n",
	       T.data + T.keepalives, T.data, T.keepalives, T.late, T.bad_reply);
	dgw_destroy(H.gw);
	return gw_verdict("gw-lcores");
}
