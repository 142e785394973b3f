/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-gen: a Dust load generator on DPDK ports. Shared state of its files:
 * the emulated clients (clients.c), the traffic loop and its measurements
 * (traffic.c) and the command line, ports and reports (main.c).
 */
#ifndef DUST_GEN_H
#define DUST_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_mbuf.h>

#include "dust.h"

enum {
	DG_BURST = 32,
	DG_MAGIC = 0x4447454e, /* "DGEN": a dust-gen probe in an inner payload */
	DG_PROBE_BYTES = 32,   /* magic, client, client seq, queue, global seq, TX TSC */
	DG_MIN_SIZE = 28 + DG_PROBE_BYTES,
	DG_MAX_SIZE = 1400,
	DG_HIST_NS = 100,          /* latency histogram bucket */
	DG_HIST_BUCKETS = 1000000, /* 100 ns buckets up to 100 ms, then one overflow */
	DG_TRIALS_MAX = 32,
	DG_DIR_FWD = 0, /* Dust out on the net port, cleartext back on the delivery port */
	DG_DIR_REV = 1, /* cleartext in on the delivery port, Dust back on the net port */
};

struct dg_opts {
	const char *store;
	const char *key;     /* the server's key: the store's records are sealed under it */
	const char *invites; /* directory of sealed invitation texts (instead of store) */
	const char *password_file;
	const char *json;
	const char *net_port, *dlv_port;
	unsigned clients;
	uint64_t pps;        /* 0: --gbps or max */
	double gbps;         /* offered L1 rate of the outer frames */
	unsigned size;       /* inner IP packet bytes; 0 = IMIX */
	double duration_s;   /* per trial */
	unsigned drain_ms;   /* wait for stragglers after each trial */
	unsigned stall_ms;   /* forced overload: stop reading the delivery port mid-run */
	bool search;         /* RFC 2544-style: highest rate with loss <= loss_max */
	double loss_max_pct; /* --search threshold */
	unsigned search_steps;
	bool quiet; /* no per-second lines */
	const char *gw_mac;
	bool no_confirm;        /* send intros, wait for no keepalive (a sink port: headroom) */
	unsigned linger_ms;     /* at the end, wait without polling for the peer to leave */
	unsigned start_clients; /* introduced before traffic; the rest join by churn */
	double churn;           /* churn events per second (churn.c) */
	unsigned idle_s;        /* an idled client's silence (0: no idle events) */
	unsigned dirs;          /* 1 << DG_DIR_FWD | 1 << DG_DIR_REV (--dir) */
	const char *prometheus; /* --prometheus ADDR:PORT: serve live metrics (prom.c) */
};

/* A client's place in its life (churn.c moves it along). */
enum dg_state {
	DG_DOWN,  /* not introduced yet */
	DG_INTRO, /* intro sent, waiting for the gateway's keepalive */
	DG_UP,    /* sending */
	DG_IDLE,  /* silent until its session expires in the gateway, then back */
};

/* Churn and intro counts of the whole run: each has a dustgw counter to match. */
struct dg_churn {
	uint64_t intros;   /* intros sent (dustgw intro_ok when none is lost) */
	uint64_t joins;    /* first intros of clients that joined late */
	uint64_t expiries; /* idle silences sat out (dustgw sessions_expired) */
	uint64_t roams;    /* moves to a new source port (dustgw sessions_evicted) */
	uint64_t reintros; /* new intro on a live session, same address */
	uint64_t retries;  /* intros sent again: no keepalive within 3 s */
	uint64_t ka;       /* keepalives received (dustgw keepalive_tx) */
};

struct dg_client {
	struct dust_invite inv;
	struct dust_identity id;
	struct dust_session s;
	struct dust_session prev;   /* the session before the last intro: late replies */
	struct dust_endpoint ep;    /* our outer address */
	uint16_t s_port, prev_port; /* our port when s, prev were made (0: none) */
	uint32_t tx_seq[2];         /* next per-client sequence number, per direction */
	uint32_t rx_next[2];        /* highest per-client sequence received + 1 */
	uint8_t state;              /* enum dg_state */
	bool confirmed;             /* DG_INTRO: the answer came and was confirmed */
	uint64_t until;             /* TSC: DG_INTRO's retry, DG_IDLE's end */
};

struct dg_hist {
	uint64_t n, sum_ns, max_ns, min_ns;
	uint32_t *b; /* DG_HIST_BUCKETS + 1 */
};

/* Counters of one trial (and of one report interval). */
struct dg_count {
	uint64_t tx, tx_bytes, unsent, rx, rx_bytes, reordered, dup, late, foreign, ka;
};

/* One direction's probe sequence and which of its numbers came back. */
struct dg_flow {
	uint64_t gseq;  /* next global sequence number */
	uint64_t *seen; /* bitmap of received global sequence numbers */
	uint64_t seen_bits;
	unsigned cur; /* next client to send a probe (round-robin over those up) */
};

/*
 * What --prometheus shows of one lcore while it runs (prom.c): counts since
 * dust-gen started, over every trial, and a latency histogram. Written by
 * the lcore alone (counts once a second and at a trial's end, latency per
 * probe); the scrape thread only loads them, as dustgw's readers do.
 */
enum { DG_LAT_BOUNDS = 16 };
struct dg_live {
	struct dg_count k[2];               /* by direction: finished trials + the running one */
	struct dg_count done[2];            /* finished trials only */
	uint64_t lat[2][DG_LAT_BOUNDS + 1]; /* probes by latency bucket; the last: +Inf */
	uint64_t lat_sum_ns[2];
	double pps;      /* this lcore's offered rate each way in the running trial (0: max) */
	uint64_t trials; /* trials finished */
};
extern const uint64_t dg_lat_bounds_ns[DG_LAT_BOUNDS];

struct dg {
	struct dg_opts o;
	uint16_t net, dlv; /* DPDK ports: toward the gateway, from its delivery side */
	uint16_t q;        /* this lcore's queue on both ports (main.c: one dg per lcore) */
	unsigned first;    /* index of c[0] among all the clients */
	unsigned nq;       /* lcores = queues per port */
	struct dg *ls;     /* the base's: one dg per lcore (lcores.c) */
	unsigned started;  /* the base's: clients introduced before traffic */
	struct rte_mempool *pool;
	struct dg_client *c;
	unsigned n;
	struct dust_ipaddr gw_ip;
	uint16_t gw_port;
	uint8_t mac[6];     /* our net port's MAC */
	uint8_t gw_mac[6];  /* destination of our frames (--gw-mac) */
	uint8_t dlv_mac[6]; /* our delivery port's MAC */
	struct dust_rng rng;
	struct dust_pad pad;
	uint64_t hz;
	struct dg_flow fl[2]; /* by direction */
	uint32_t now_s;
	unsigned nup;    /* clients in DG_UP */
	unsigned nintro; /* clients in DG_INTRO */
	struct dg_churn ch;
	uint64_t churn_t0, churn_done, churn_scan; /* churn.c's schedule */
	unsigned churn_kind, churn_cur, join_next;
	struct dg_live live;
};

/* One trial's result. */
struct dg_result {
	double rate_pps; /* offered each way (0: max) */
	double secs;     /* TX time */
	struct {
		struct dg_count k;
		uint64_t lost;
		struct dg_hist h;
	} d[2]; /* by direction */
};

/* clients.c */
int dg_clients_load(struct dg *g);
void dg_client_up(struct dg *g, struct dg_client *c);
int dg_clients_intro(struct dg *g);
/* An inner IP packet the gateway sealed toward a client (the reverse direction). */
typedef void dg_rx_fn(struct dg *g, void *arg, const uint8_t *ip, size_t len, uint64_t now);
void dg_net_poll(struct dg *g, struct dg_count *k, dg_rx_fn *fn, void *arg);
uint16_t dg_frame(struct dg *g, struct dg_client *c, uint8_t *f, const uint8_t *dg_bytes,
                  size_t len);

int dg_intro_send(struct dg *g, struct dg_client *c);

/* texts.c: where the clients' invitations come from (clients.c calls down into it) */
int dg_clients_alloc(struct dg *g, size_t avail, const char *src);
int dg_store_load(struct dg *g);
int dg_texts_load(struct dg *g);

/* lcores.c */
int dg_lcores_split(struct dg *g);
void dg_lcores_free(struct dg *g);
int dg_lcores_intro(struct dg *g);
int dg_lcores_trial(struct dg *g, double pps, struct dg_result *r);

/* churn.c */
void dg_churn_start(struct dg *g);
void dg_churn_tick(struct dg *g, uint64_t now, uint64_t end);
struct dg_client *dg_next_up(struct dg *g, unsigned *cur);

/* prom.c: --prometheus, served by a control thread while dust-gen runs */
struct dg_prom;
struct dg_prom *dg_prom_open(const char *addr);
int dg_prom_start(struct dg_prom *p, struct dg *g);
void dg_prom_stop(struct dg_prom *p);

/* traffic.c */
int dg_trial(struct dg *g, double pps, struct dg_result *r);
void dg_hist_init(struct dg_hist *h);
void dg_hist_free(struct dg_hist *h);
uint64_t dg_hist_pct(const struct dg_hist *h, double pct);
unsigned dg_size_of(const struct dg *g, uint64_t i);
double dg_avg_frame(const struct dg *g);

#endif /* DUST_GEN_H */
