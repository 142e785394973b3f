/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pipeline benchmark: the real dustgw worker loop (dustgw_core) between two
 * net_ring ports. Clients' intros go in first; then every worker's RX ring
 * is filled with pre-encoded frames (decode) or cleartext (encode) and we
 * time, per worker lcore, how fast the loop empties it into the sink rings.
 * The bare AEAD is timed on the same lcore, same size, in the same run.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <sodium.h>

#include "frame.h"
#include "dustgw.h"
#include "loopprof.h"
#include "numopt.h"
#include "prom.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

enum {
	IMIX = 0,
	MAX_CLIENTS = 250,
	FRAME_ROOM = 1400 + 256, /* largest inner packet + outer headers + Dust overhead */
	UDP_PORT = 4433,
};

static const uint16_t imix[12] = {64, 64, 64, 64, 64, 64, 64, 576, 576, 576, 576, 1400};

struct opts {
	unsigned workers;
	bool encode;
	unsigned size; /* 0 = IMIX */
	unsigned clients;
	double seconds; /* aim for this much steady state per worker */
	unsigned max_frames;
	unsigned mem_mb; /* budget for the mbufs of all workers (EAL -m must exceed it) */
	bool sw_csum;
	unsigned junk;      /* decode: junk datagrams from strangers per data frame */
	unsigned scrape_ms; /* GET /metrics from the gateway's endpoint this often; 0 = off */
	int suite;          /* DUST_SUITE_* of every client's invitation */
	const char *crypto; /* AEAD backend (dust_crypto_select), NULL = default */
};

struct client {
	struct dust_invite inv;
	struct dust_session s; /* client side, from dust_intro_build */
	struct dust_endpoint ep;
};

struct bench {
	struct opts o;
	char dir[64];
	struct dust_identity server;
	struct client *cl; /* workers * clients */
	struct rte_mempool *pool;
	struct rte_ring *net_rx[DGW_MAX_WORKERS], *net_tx[DGW_MAX_WORKERS];
	struct rte_ring *dlv_rx[DGW_MAX_WORKERS], *dlv_tx[DGW_MAX_WORKERS];
	uint16_t net_port, dlv_port;
	struct rte_ether_addr net_mac, dlv_mac;
	struct dgw *gw;
	struct rte_mbuf **frames[DGW_MAX_WORKERS];
	unsigned nframes;      /* per worker: data frames */
	unsigned ntotal;       /* per worker: data and junk frames in the ring */
	struct dgw_prom *prom; /* --scrape-ms: the gateway's Prometheus endpoint */
	uint16_t prom_port;
	volatile bool scrape_stop;
	uint64_t scrapes, scrape_bytes; /* complete responses read */
	uint64_t payload_bytes;         /* per worker, inner bytes */
	double aead_pps;                /* bare AEAD on a few hot buffers: the baseline */
	double aead_cold_pps;           /* bare AEAD touching each packet once, from DRAM */
	double aead_pre_pps, aead_post_pps; /* hot, before and after the run */
	/* results, per worker */
	double pps[DGW_MAX_WORKERS];       /* per second on a CPU (schedstat) */
	double pps_wall[DGW_MAX_WORKERS];  /* per wall-clock second */
	double cpu_share[DGW_MAX_WORKERS]; /* on-CPU time / wall time in the window */
	uint64_t done[DGW_MAX_WORKERS];
	double window[DGW_MAX_WORKERS]; /* packets between the 10% and 90% marks */
	/* loop profile (a -Dloop_profile build, 1 worker): stage cycles at the 10% and 90% marks */
	struct dust_prof prof10, prof90;
	double lap_cycles;
	int err;
};

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned size_at(const struct opts *o, unsigned i)
{
	return o->size == IMIX ? imix[i % 12] : o->size;
}

static struct client *client_at(struct bench *b, unsigned w, unsigned c)
{
	return &b->cl[w * b->o.clients + c];
}

/* ---- Server files ------------------------------------------------------------ */

static int make_tunnel(struct dust_ipaddr *ip, unsigned w, unsigned c)
{
	char t[32];
	snprintf(t, sizeof(t), "10.%u.%u.%u", 64 + w, c / 250, c % 250 + 1);
	return dust_ipaddr_parse(ip, t);
}

/* Identity and a store with one invitation per client, in a private temp dir. */
static int server_files(struct bench *b, struct dgw_config *cfg)
{
	struct dust_ipaddr addr, tun;
	struct dust_store *st;
	char path[DGW_PATH_MAX];
	uint64_t exp = (uint64_t)time(NULL) + 86400;

	snprintf(b->dir, sizeof(b->dir), "/tmp/dgw_pipe.XXXXXX");
	if (!mkdtemp(b->dir) || dust_identity_generate(&b->server) != 0)
		return -errno;
	snprintf(cfg->key_file, sizeof(cfg->key_file), "%s/server.key", b->dir);
	snprintf(cfg->store_path, sizeof(cfg->store_path), "%s/store", b->dir);
	if (dust_identity_save(&b->server, cfg->key_file) != 0)
		return -EIO;
	snprintf(path, sizeof(path), "%s", cfg->store_path);
	st = dust_store_open(path, DUST_STORE_CREATE, &b->server);
	if (!st)
		return -errno;
	dust_ipaddr_parse(&addr, "192.0.2.1");
	for (unsigned w = 0; w < b->o.workers; w++) {
		for (unsigned c = 0; c < b->o.clients; c++) {
			struct client *cl = client_at(b, w, c);
			if (make_tunnel(&tun, w, c) != 0 ||
			    dust_invite_new(&cl->inv, &b->server, &addr, UDP_PORT, &tun, 32, exp) !=
			        0) {
				dust_store_close(st);
				return -EINVAL;
			}
			cl->inv.suite = (uint8_t)b->o.suite;
			if (dust_store_add(st, &cl->inv) != 0) {
				dust_store_close(st);
				return -EINVAL;
			}
		}
	}
	int rc = dust_store_save(st);
	dust_store_close(st);
	return rc;
}

static void server_files_remove(struct bench *b)
{
	char cmd[128];
	if (!b->dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", b->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "dgw_pipe: could not remove %s\n", b->dir);
}

/* ---- Ports --------------------------------------------------------------------- */

static struct rte_ring *ring(const char *what, unsigned port, unsigned q, unsigned n)
{
	char name[RTE_RING_NAMESIZE];
	snprintf(name, sizeof(name), "bp_%s%u_%u", what, port, q);
	return rte_ring_create(name, rte_align32pow2(n + 1), rte_socket_id(),
	                       RING_F_SP_ENQ | RING_F_SC_DEQ);
}

static int port_start(uint16_t port, unsigned q, struct rte_mempool *pool)
{
	struct rte_eth_conf conf;
	int rc;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_configure(port, q, q, &conf);
	for (unsigned i = 0; rc == 0 && i < q; i++) {
		rc = rte_eth_rx_queue_setup(port, i, 1024, rte_socket_id(), NULL, pool);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(port, i, 1024, rte_socket_id(), NULL);
	}
	return rc ? rc : rte_eth_dev_start(port);
}

/*
 * Both sides are ring ports: RX rings we fill, TX rings deep enough to take
 * a whole run (they are the sink; emptied once the clock has stopped).
 */
static int ports_make(struct bench *b, unsigned ring_n)
{
	unsigned q = b->o.workers;
	int p;

	for (unsigned i = 0; i < q; i++) {
		b->net_rx[i] = ring("nrx", 0, i, ring_n);
		b->net_tx[i] = ring("ntx", 0, i, ring_n);
		b->dlv_rx[i] = ring("drx", 1, i, ring_n);
		b->dlv_tx[i] = ring("dtx", 1, i, ring_n);
		if (!b->net_rx[i] || !b->net_tx[i] || !b->dlv_rx[i] || !b->dlv_tx[i])
			return -rte_errno;
	}
	p = rte_eth_from_rings("bench_net", b->net_rx, q, b->net_tx, q, rte_socket_id());
	if (p < 0)
		return -rte_errno;
	b->net_port = (uint16_t)p;
	p = rte_eth_from_rings("bench_dlv", b->dlv_rx, q, b->dlv_tx, q, rte_socket_id());
	if (p < 0)
		return -rte_errno;
	b->dlv_port = (uint16_t)p;
	if (port_start(b->net_port, q, b->pool) || port_start(b->dlv_port, q, b->pool))
		return -EIO;
	rte_eth_macaddr_get(b->net_port, &b->net_mac);
	rte_eth_macaddr_get(b->dlv_port, &b->dlv_mac);
	return 0;
}

/* ---- Frames -------------------------------------------------------------------- */

static void csum_flags(const struct bench *b, struct rte_mbuf *m)
{
	/* What a NIC with checksum offload would say; --sw-csum makes the loop check. */
	if (!b->o.sw_csum)
		m->ol_flags |= RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
}

/* An inner IPv4/UDP packet of exactly len bytes from src to dst (no DF, UDP checksum 0). */
static void inner_fill(uint8_t *p, unsigned len, const uint8_t src[4], const uint8_t dst[4])
{
	for (unsigned i = 28; i < len; i++)
		p[i] = (uint8_t)i;
	ip_udp4_opt(p, src, dst, 5000, 5001, p + 28, len - 28, 0, FRAME_NO_UDP_CSUM);
}

/* Eth toward the gateway from a client, room for IPv4 + UDP; returns the payload pointer. */
static uint8_t *outer_fill(struct bench *b, struct rte_mbuf *m, unsigned dust_len)
{
	uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(42 + dust_len));

	if (!p)
		return NULL;
	eth(p, b->net_mac.addr_bytes, (const uint8_t[6]){2, 2, 2, 2, 2, 2}, 0x0800);
	return p + 42;
}

/* After the Dust bytes are in: IPv4 + UDP with the checksum a client's kernel would send. */
static void outer_ip(struct rte_mbuf *m, const struct client *cl, unsigned dust_len)
{
	static const uint8_t gw_ip[4] = {192, 0, 2, 1};
	uint8_t *ip = rte_pktmbuf_mtod_offset(m, uint8_t *, 14);

	ip_udp4_opt(ip, cl->ep.ip.a, gw_ip, cl->ep.port, UDP_PORT, ip + 28, dust_len, 0, 0);
}

static struct dust_pad pad_none(void)
{
	struct dust_pad p;
	dust_pad_default(&p);
	p.min = p.max = 0;
	p.mtu = 0;
	return p;
}

static struct rte_mbuf *intro_frame(struct bench *b, struct client *cl, struct dust_rng *rng,
                                    struct dust_identity *me)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(b->pool);
	uint8_t buf[DUST_INTRO_MIN_BYTES + DUST_INTRO_PAD_MAX];
	struct dust_pad pad = pad_none();
	struct timespec ts;
	int n;

	if (!m)
		return NULL;
	clock_gettime(CLOCK_REALTIME, &ts);
	n = dust_intro_build(&cl->inv, me, rng, &pad,
	                     (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000, buf,
	                     sizeof(buf), &cl->s);
	if (n <= 0) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memcpy(outer_fill(b, m, (unsigned)n), buf, (size_t)n);
	outer_ip(m, cl, (unsigned)n);
	csum_flags(b, m);
	return m;
}

static struct rte_mbuf *data_frame(struct bench *b, struct client *cl, struct dust_rng *rng,
                                   unsigned len)
{
	static const uint8_t dst[4] = {198, 51, 100, 7};
	struct dust_pad pad = pad_none();
	struct rte_mbuf *m = rte_pktmbuf_alloc(b->pool);
	unsigned dust_len = DUST_DATA_OVERHEAD + len;
	uint8_t *d;

	if (!m)
		return NULL;
	d = outer_fill(b, m, dust_len);
	if (!d)
		goto err;
	inner_fill(d + DUST_DATA_PREFIX, len, cl->inv.tunnel.a, dst);
	if (dust_data_seal(&cl->s, rng, &pad, (uint32_t)time(NULL), d, len, dust_len) !=
	    (int)dust_len)
		goto err;
	outer_ip(m, cl, dust_len);
	csum_flags(b, m);
	return m;
err:
	rte_pktmbuf_free(m);
	return NULL;
}

/* Cleartext on the delivery side: Ethernet + an IP packet to a client's tunnel address. */
static struct rte_mbuf *clear_frame(struct bench *b, struct client *cl, unsigned len)
{
	static const uint8_t src[4] = {198, 51, 100, 7};
	struct rte_mbuf *m = rte_pktmbuf_alloc(b->pool);
	struct rte_ether_hdr *eth;

	if (!m)
		return NULL;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, (uint16_t)(sizeof(*eth) + len));
	if (!eth) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	eth->dst_addr = b->dlv_mac;
	memset(&eth->src_addr, 0x06, sizeof(eth->src_addr));
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	inner_fill((uint8_t *)(eth + 1), len, src, cl->inv.tunnel.a);
	csum_flags(b, m);
	return m;
}

/*
 * What a flood brings: random bytes the size of an intro from an address
 * with no session (a prober, a scanner). Each goes the intro path and is
 * refused there (intro_unknown) after its tag is looked up.
 */
static struct rte_mbuf *junk_frame(struct bench *b, struct dust_rng *rng)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(b->pool);
	struct client stranger = {0};
	enum { JUNK_LEN = 200 };
	uint8_t *d;

	if (!m)
		return NULL;
	if (!(d = outer_fill(b, m, JUNK_LEN))) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	dust_rng_bytes(rng, d, JUNK_LEN);
	stranger.ep.ip.family = 4;
	memcpy(stranger.ep.ip.a, (const uint8_t[4]){203, 0, 113, 0}, 4);
	stranger.ep.ip.a[3] = (uint8_t)dust_rng_uniform(rng, 256);
	stranger.ep.port = (uint16_t)(1024 + dust_rng_uniform(rng, 60000));
	outer_ip(m, &stranger, JUNK_LEN);
	csum_flags(b, m);
	return m;
}

static int by_addr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
	return x < y ? -1 : x > y;
}

static int frames_build(struct bench *b)
{
	struct dust_rng rng;

	dust_rng_init(&rng);
	b->payload_bytes = 0;
	for (unsigned i = 0; i < b->nframes; i++)
		b->payload_bytes += size_at(&b->o, i);
	for (unsigned w = 0; w < b->o.workers; w++) {
		unsigned k = 0;

		b->frames[w] = calloc(b->ntotal, sizeof(struct rte_mbuf *));
		if (!b->frames[w])
			return -ENOMEM;
		for (unsigned i = 0; i < b->nframes; i++) {
			struct client *cl = client_at(b, w, i % b->o.clients);
			unsigned len = size_at(&b->o, i);
			b->frames[w][k++] =
			    b->o.encode ? clear_frame(b, cl, len) : data_frame(b, cl, &rng, len);
			for (unsigned j = 0; j < b->o.junk; j++)
				b->frames[w][k++] = junk_frame(b, &rng);
		}
		for (unsigned i = 0; i < k; i++)
			if (!b->frames[w][i])
				return -ENOMEM;
		/*
		 * Diagnostic: frames in address order let the hardware prefetcher
		 * stream across packets (about +25% at 1400 B); the default is the
		 * order the mempool hands out, as a NIC's RX refill would.
		 */
		if (getenv("DGW_PIPE_SORT"))
			qsort(b->frames[w], b->ntotal, sizeof(b->frames[w][0]), by_addr);
	}
	dust_rng_wipe(&rng);
	return 0;
}

/* ---- Bare AEAD on the worker's lcore ------------------------------------------------ */

static unsigned room_for(const struct opts *o);

struct aead_job {
	const struct opts *o;
	unsigned cold_n; /* 0: hot buffers; else one pass over this many, out of cache */
	double pps;
};

static double thread_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int aead_job_main(void *arg)
{
	struct aead_job *j = arg;
	uint8_t key[32], nonce[12] = {0}, out[FRAME_ROOM];
	static uint8_t ct[60][FRAME_ROOM], tag[60][16];
	uint64_t n = 0;
	double t0, t;

	/* 60 = a whole number of IMIX cycles; decode reads ct[i] and writes out, so no copy. */
	crypto_aead_chacha20poly1305_ietf_keygen(key);
	for (unsigned i = 0; i < 60; i++) {
		unsigned len = size_at(j->o, i);
		memcpy(nonce + 4, &i, sizeof(i));
		randombytes_buf(ct[i], len);
		crypto_aead_chacha20poly1305_ietf_encrypt_detached(ct[i], tag[i], NULL, ct[i], len,
		                                                   NULL, 0, NULL, nonce, key);
	}
	memset(nonce, 0, sizeof(nonce));
	/* Thread CPU time, like the pipeline's rate: other processes' share of the core drops out.
	 */
	t0 = thread_cpu_now();
	do {
		for (unsigned k = 0; k < 600; k++, n++) {
			unsigned i = (unsigned)(n % 60), len = size_at(j->o, i);
			if (j->o->encode) {
				memcpy(nonce + 4, &n, sizeof(n));
				crypto_aead_chacha20poly1305_ietf_encrypt_detached(
				    ct[i], tag[i], NULL, ct[i], len, NULL, 0, NULL, nonce, key);
			} else {
				memcpy(nonce + 4, &i, sizeof(i));
				if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(
				        out, NULL, ct[i], len, tag[i], NULL, 0, nonce, key) != 0)
					return -1;
			}
		}
		t = thread_cpu_now() - t0;
	} while (t < 0.3);
	j->pps = (double)n / t;
	return 0;
}

/*
 * The same AEAD over as many packets as the pipeline gets, each touched
 * once, in place, as the loop does with mbufs that come from DRAM: the
 * limit once memory is paid for. Encrypting the pool first also evicts it.
 */
static int aead_cold_main(void *arg)
{
	struct aead_job *j = arg;
	size_t stride = RTE_ALIGN_CEIL(room_for(j->o), 64);
	uint8_t key[32], nonce[12] = {0}, *pool = malloc(stride * j->cold_n);
	double t0, t;

	if (!pool)
		return -ENOMEM;
	crypto_aead_chacha20poly1305_ietf_keygen(key);
	memset(pool, 0x5a, stride * j->cold_n);
	for (unsigned i = 0; i < j->cold_n; i++) {
		uint8_t *p = pool + stride * i;
		unsigned len = size_at(j->o, i);
		memcpy(nonce + 4, &i, sizeof(i));
		crypto_aead_chacha20poly1305_ietf_encrypt_detached(p, p + len, NULL, p, len, NULL,
		                                                   0, NULL, nonce, key);
	}
	t0 = thread_cpu_now();
	for (unsigned i = 0; i < j->cold_n; i++) {
		uint8_t *p = pool + stride * i;
		unsigned len = size_at(j->o, i);
		uint32_t c = j->o->encode ? i + j->cold_n : i;
		memcpy(nonce + 4, &c, sizeof(c));
		if (j->o->encode)
			crypto_aead_chacha20poly1305_ietf_encrypt_detached(
			    p, p + len, NULL, p, len, NULL, 0, NULL, nonce, key);
		else if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(
		             p, NULL, p, len, p + len, NULL, 0, nonce, key))
			break;
	}
	t = thread_cpu_now() - t0;
	j->pps = t > 0 ? j->cold_n / t : 0;
	free(pool);
	return 0;
}

static int aead_measure(struct bench *b, unsigned lcore, unsigned cold_n)
{
	struct aead_job j = {.o = &b->o, .cold_n = cold_n};

	if (rte_eal_remote_launch(cold_n ? aead_cold_main : aead_job_main, &j, lcore) != 0 ||
	    rte_eal_wait_lcore(lcore) != 0)
		return -EIO;
	if (cold_n) {
		b->aead_cold_pps = j.pps;
		return 0;
	}
	/* Timed before and after the run; the better is the least disturbed. */
	if (!b->aead_pre_pps)
		b->aead_pre_pps = j.pps;
	else
		b->aead_post_pps = j.pps;
	b->aead_pps = RTE_MAX(b->aead_pre_pps, b->aead_post_pps);
	return 0;
}

/* ---- The run ---------------------------------------------------------------------- */

static uint64_t progress(struct bench *b, unsigned w)
{
	struct dgw_stats st;
	dgw_stats_get(b->gw, w, &st);
	return b->o.encode ? st.ctr[DGW_CTR_ENCODED] : st.ctr[DGW_CTR_DELIVERED];
}

static int wait_intros(struct bench *b)
{
	uint64_t want = (uint64_t)b->o.workers * b->o.clients;
	double t0 = mono_s();
	struct dgw_stats st;

	do {
		dgw_stats_get(b->gw, UINT32_MAX, &st);
		if (st.ctr[DGW_CTR_INTRO_OK] >= want)
			return 0;
		usleep(1000);
	} while (mono_s() - t0 < 20);
	fprintf(stderr, "dgw_pipe: only %" PRIu64 " of %" PRIu64 " intros accepted\n",
	        st.ctr[DGW_CTR_INTRO_OK], want);
	return -ETIMEDOUT;
}

struct mark {
	double t10, t90;
	double cpu10, cpu90;
	uint64_t c10, c90;
};

/* Kernel thread id of the EAL thread serving lcore (DPDK 22.11 names it rte-worker-N). */
static int lcore_tid(unsigned lcore)
{
	char want[32], path[300], comm[64];
	struct dirent *e;
	DIR *d = opendir("/proc/self/task");
	int tid = -1;

	snprintf(want, sizeof(want), "rte-worker-%u\n", lcore);
	while (d && tid < 0 && (e = readdir(d))) {
		FILE *f;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) && !strcmp(comm, want))
			tid = atoi(e->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return tid;
}

/* Seconds a thread has been on a CPU (schedstat: exact, unlike the tick counts in stat). */
static double thread_cpu_s(int tid)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	if (tid < 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &ns) != 1)
		ns = 0;
	fclose(f);
	return (double)ns * 1e-9;
}

/*
 * Rate between 10% and 90% of each worker's frames: leaves out the start
 * (rings being filled, caches cold) and the tail (workers ending unevenly).
 */
static void watch(struct bench *b, const uint64_t *base)
{
	struct mark mk[DGW_MAX_WORKERS] = {0};
	int tid[DGW_MAX_WORKERS];
	uint64_t lo = b->nframes / 10, hi = b->nframes - b->nframes / 10, last_sum = 0;
	double last_move = mono_s();

	for (unsigned w = 0; w < b->o.workers; w++)
		tid[w] = lcore_tid(dgw_stats_lcore(b->gw, w));
	for (;;) {
		uint64_t sum = 0;
		bool all = true;
		double t = mono_s();
		for (unsigned w = 0; w < b->o.workers; w++) {
			uint64_t c = progress(b, w) - base[w];
			b->done[w] = c;
			sum += c;
			if (!mk[w].t10 && c >= lo) {
				mk[w].t10 = t, mk[w].c10 = c, mk[w].cpu10 = thread_cpu_s(tid[w]);
				dust_prof_sum(&b->prof10);
			}
			if (!mk[w].t90 && c >= hi) {
				mk[w].t90 = t, mk[w].c90 = c, mk[w].cpu90 = thread_cpu_s(tid[w]);
				dust_prof_sum(&b->prof90);
			}
			all = all && c >= b->nframes;
		}
		if (sum != last_sum)
			last_sum = sum, last_move = t;
		if (all)
			break;
		/* A worker can be off its CPU for a while on a shared machine: be patient. */
		if (t - last_move > 3.0) {
			fprintf(stderr,
			        "dgw_pipe: no progress for 3 s at %" PRIu64 " of %" PRIu64
			        " frames\n",
			        sum, (uint64_t)b->nframes * b->o.workers);
			break;
		}
		usleep(500);
	}
	for (unsigned w = 0; w < b->o.workers; w++) {
		double n = (double)(mk[w].c90 - mk[w].c10), wall = mk[w].t90 - mk[w].t10;
		double cpu = mk[w].cpu90 - mk[w].cpu10;
		if (wall <= 0)
			continue;
		b->pps_wall[w] = n / wall;
		b->cpu_share[w] = cpu / wall;
		/* Without schedstat, fall back to wall time. */
		b->pps[w] = cpu > 0 ? n / cpu : n / wall;
		b->window[w] = n;
	}
}

/*
 * --scrape-ms: what Prometheus does to a running gateway, faster: a fresh
 * connection and GET /metrics every scrape_ms, the whole answer read.
 */
static void *scraper_main(void *arg)
{
	struct bench *b = arg;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(b->prom_port)};
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	char buf[65536];

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	while (!b->scrape_stop) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		ssize_t n;
		uint64_t got = 0;

		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		    write(fd, req, sizeof(req) - 1) == (ssize_t)(sizeof(req) - 1)) {
			while ((n = read(fd, buf, sizeof(buf))) > 0)
				got += (uint64_t)n;
			if (got) {
				b->scrapes++;
				b->scrape_bytes += got;
			}
		}
		if (fd >= 0)
			close(fd);
		usleep(b->o.scrape_ms * 1000);
	}
	return NULL;
}

static void *driver_main(void *arg)
{
	struct bench *b = arg;
	uint64_t base[DGW_MAX_WORKERS];

	b->err = wait_intros(b);
	if (b->err)
		goto out;
	/* Let the main lcore publish the new sessions (the encoder finds them there). */
	usleep(50 * 1000);
	for (unsigned w = 0; w < b->o.workers; w++)
		base[w] = progress(b, w);
	for (unsigned w = 0; w < b->o.workers; w++) {
		struct rte_ring *r = b->o.encode ? b->dlv_rx[w] : b->net_rx[w];
		if (rte_ring_enqueue_bulk(r, (void **)b->frames[w], b->ntotal, NULL) != b->ntotal) {
			b->err = -ENOSPC;
			goto out;
		}
	}
	watch(b, base);
out:
	dgw_stop(b->gw);
	return NULL;
}

static int intros_queue(struct bench *b)
{
	struct dust_identity me;
	struct dust_rng rng;
	int rc = 0;

	if (dust_identity_generate(&me) != 0)
		return -EIO;
	dust_rng_init(&rng);
	for (unsigned w = 0; w < b->o.workers && !rc; w++) {
		for (unsigned c = 0; c < b->o.clients && !rc; c++) {
			struct client *cl = client_at(b, w, c);
			char ip[32];
			snprintf(ip, sizeof(ip), "198.18.%u.%u", w, c + 1);
			memset(&cl->ep, 0, sizeof(cl->ep));
			dust_ipaddr_parse(&cl->ep.ip, ip);
			cl->ep.port = (uint16_t)(10000 + c);
			struct rte_mbuf *m = intro_frame(b, cl, &rng, &me);
			if (!m || rte_ring_enqueue(b->net_rx[w], m) != 0)
				rc = -ENOMEM;
		}
	}
	dust_rng_wipe(&rng);
	dust_identity_wipe(&me);
	return rc;
}

static void rings_free(struct bench *b)
{
	void *m;

	for (unsigned w = 0; w < b->o.workers; w++) {
		struct rte_ring *rs[4] = {b->net_rx[w], b->net_tx[w], b->dlv_rx[w], b->dlv_tx[w]};
		for (unsigned i = 0; i < 4; i++)
			while (rs[i] && rte_ring_dequeue(rs[i], &m) == 0)
				rte_pktmbuf_free(m);
	}
}

/*
 * A -Dloop_profile build: ns per packet by stage over the measured window
 * (TSC cycles between the marks / packets), laps per packet, and what one
 * lap costs back to back, so a reader can take the stamps' own cost out.
 */
static void prof_report(const struct bench *b)
{
	double hz = (double)rte_get_tsc_hz(), n = b->window[0], sum = 0;

	/*
	 * The stages are TSC (wall) time; bench/loop_profile scales them to the
	 * worker's CPU time (ns_per_pkt) to take out time it was descheduled.
	 */
	if (b->lap_cycles <= 0 || b->o.workers != 1 || n <= 0)
		return;
	printf(", \"prof_ns\": {");
	for (unsigned st = 0; st < DUST_PROF_MAX; st++) {
		double ns = (double)(b->prof90.cyc[st] - b->prof10.cyc[st]) * 1e9 / hz / n;
		sum += ns;
		printf("%s\"%s\": %.1f", st ? ", " : "", dust_prof_name(st), ns);
	}
	printf("}, \"prof_laps\": {");
	for (unsigned st = 0; st < DUST_PROF_MAX; st++)
		printf("%s\"%s\": %.2f", st ? ", " : "", dust_prof_name(st),
		       (double)(b->prof90.laps[st] - b->prof10.laps[st]) / n);
	printf("}, \"prof_sum_ns\": %.1f, \"lap_ns\": %.2f, \"tsc_hz\": %.0f", sum,
	       b->lap_cycles * 1e9 / hz, hz);
}

static void report(struct bench *b, int rc)
{
	struct dgw_stats st;
	double sum = 0, avg_len = (double)b->payload_bytes / b->nframes;
	bool first = true;

	for (unsigned w = 0; w < b->o.workers; w++)
		sum += b->pps[w];
	dgw_stats_get(b->gw, UINT32_MAX, &st);
	printf("{\"suite\": \"%s\", \"backend\": \"%s\", ", dust_suite_name((uint8_t)b->o.suite),
	       dust_crypto_backend_name());
	printf("\"junk_per_frame\": %u, \"scrape_ms\": %u, \"scrapes\": %" PRIu64
	       ", \"scrape_bytes\": %" PRIu64 ", ",
	       b->o.junk, b->o.scrape_ms, b->scrapes, b->scrape_bytes);
	printf("\"dir\": \"%s\", \"workers\": %u, \"size\": %u, \"avg_payload\": %.1f, "
	       "\"frames_per_worker\": %u, \"clients_per_worker\": %u, \"sw_csum\": %s, "
	       "\"aead_pps\": %.0f, \"aead_pre_pps\": %.0f, \"aead_post_pps\": %.0f, "
	       "\"aead_cold_pps\": %.0f, \"pps_per_lcore\": [",
	       b->o.encode ? "encode" : "decode", b->o.workers, b->o.size, avg_len, b->nframes,
	       b->o.clients, b->o.sw_csum ? "true" : "false", b->aead_pps, b->aead_pre_pps,
	       b->aead_post_pps, b->aead_cold_pps);
	for (unsigned w = 0; w < b->o.workers; w++)
		printf("%s%.0f", w ? ", " : "", b->pps[w]);
	printf("], \"pps_wall_per_lcore\": [");
	for (unsigned w = 0; w < b->o.workers; w++)
		printf("%s%.0f", w ? ", " : "", b->pps_wall[w]);
	printf("], \"cpu_share\": [");
	for (unsigned w = 0; w < b->o.workers; w++)
		printf("%s%.3f", w ? ", " : "", b->cpu_share[w]);
	printf("], \"done\": [");
	for (unsigned w = 0; w < b->o.workers; w++)
		printf("%s%" PRIu64, w ? ", " : "", b->done[w]);
	printf("], \"mpps_per_lcore\": %.4f, \"gbps_per_lcore\": %.4f, \"mpps_total\": %.4f, "
	       "\"ratio_aead\": %.4f, \"ratio_aead_cold\": %.4f, \"ns_per_pkt\": %.1f, "
	       "\"drops\": {",
	       sum / b->o.workers / 1e6, sum / b->o.workers * avg_len * 8 / 1e9, sum / 1e6,
	       sum / b->o.workers / b->aead_pps,
	       b->aead_cold_pps > 0 ? sum / b->o.workers / b->aead_cold_pps : 0.0,
	       sum > 0 ? 1e9 * b->o.workers / sum : 0.0);
	for (unsigned d = 1; d < DGW_DROP_MAX; d++) {
		if (!st.drop[d])
			continue;
		printf("%s\"%s\": %" PRIu64, first ? "" : ", ", dgw_drop_name(d), st.drop[d]);
		first = false;
	}
	printf("}, \"counters\": {");
	first = true;
	for (unsigned c = 0; c < DGW_CTR_MAX; c++) {
		if (!st.ctr[c])
			continue;
		printf("%s\"%s\": %" PRIu64, first ? "" : ", ", dgw_ctr_name(c), st.ctr[c]);
		first = false;
	}
	printf("}");
	prof_report(b);
	printf(", \"error\": \"%s\"}\n", rc ? strerror(-rc) : "");
	fflush(stdout);
}

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: dgw_pipe [EAL args] -- [--workers N] [--dir decode|encode] [--size N|imix]\n"
	    "       [--clients N] [--seconds S] [--max-frames N] [--mem-mb M] [--sw-csum]\n"
	    "       [--suite chacha20-poly1305|aes-256-gcm] [--crypto sodium|ipsec-mb]\n"
	    "       [--junk N]  (decode: N datagrams of junk from strangers per data frame)\n"
	    "       [--scrape-ms N]  (GET /metrics every N ms during the run)\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"workers", 1, NULL, 'w'}, {"dir", 1, NULL, 'd'},     {"size", 1, NULL, 's'},
	    {"clients", 1, NULL, 'c'}, {"seconds", 1, NULL, 't'}, {"max-frames", 1, NULL, 'm'},
	    {"sw-csum", 0, NULL, 'k'}, {"mem-mb", 1, NULL, 'M'},  {"suite", 1, NULL, 'S'},
	    {"crypto", 1, NULL, 'C'},  {"junk", 1, NULL, 'j'},    {"scrape-ms", 1, NULL, 'P'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct opts){.workers = 1,
	                   .size = 64,
	                   .clients = 64,
	                   .seconds = 0.4,
	                   .max_frames = 800000,
	                   .mem_mb = 1400};
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'w':
			if (!numopt_uint("dgw_pipe", "workers", optarg, 1, DGW_MAX_WORKERS,
			                 &o->workers))
				usage();
			break;
		case 'd':
			o->encode = !strcmp(optarg, "encode");
			break;
		case 's':
			if (!strcmp(optarg, "imix"))
				o->size = IMIX;
			else if (!numopt_uint("dgw_pipe", "size", optarg, 28, 1400, &o->size))
				usage();
			break;
		case 'c':
			if (!numopt_uint("dgw_pipe", "clients", optarg, 1, MAX_CLIENTS,
			                 &o->clients))
				usage();
			break;
		case 't':
			if (!numopt_double("dgw_pipe", "seconds", optarg, 0.01, 3600, &o->seconds))
				usage();
			break;
		case 'm':
			if (!numopt_uint("dgw_pipe", "max-frames", optarg, 1, UINT_MAX,
			                 &o->max_frames))
				usage();
			break;
		case 'k':
			o->sw_csum = true;
			break;
		case 'M':
			if (!numopt_uint("dgw_pipe", "mem-mb", optarg, 64, 1u << 20, &o->mem_mb))
				usage();
			break;
		case 'S':
			o->suite = dust_suite_parse(optarg);
			if (o->suite < 0)
				usage();
			break;
		case 'C':
			o->crypto = optarg;
			break;
		case 'j':
			if (!numopt_uint("dgw_pipe", "junk", optarg, 0, UINT_MAX, &o->junk))
				usage();
			break;
		case 'P':
			if (!numopt_uint("dgw_pipe", "scrape-ms", optarg, 0, 3600000,
			                 &o->scrape_ms))
				usage();
			break;
		default:
			usage();
		}
	}
	if (!o->workers || o->workers > DGW_MAX_WORKERS || !o->clients ||
	    o->clients > MAX_CLIENTS || (o->size && (o->size < 28 || o->size > 1400)) ||
	    o->junk > 16 || (o->junk && o->encode))
		usage();
}

static void config_fill(struct bench *b, struct dgw_config *cfg)
{
	dgw_config_defaults(cfg);
	dust_ipaddr_parse(&cfg->ip4, "192.0.2.1");
	cfg->udp_port = UDP_PORT;
	cfg->queues = (uint16_t)b->o.workers;
	cfg->sessions_per_lcore = b->o.clients * 2;
	/* No padding on what the gateway sends: same bytes as the bare AEAD baseline. */
	cfg->pad = pad_none();
	cfg->framing = DGW_FRAME_ETH;
	cfg->exit_on_idle_ms = 0;
	cfg->poll = DGW_POLL_BUSY; /* a benchmark measures the spinning loop */
	/*
	 * The pipe's clients send nothing after their intro, so the gateway
	 * would hold them to 3x the intro's bytes (SPEC §9.1) and drop the
	 * encode run's frames as path_limit. A proved path costs the encoder
	 * what validation off costs: one load of the path state.
	 */
	cfg->path_validation = false;
}

/* Enough frames for o.seconds at the bare AEAD's rate, within the memory budget. */
static unsigned frames_for(const struct bench *b)
{
	double elt = room_for(&b->o) + sizeof(struct rte_mbuf) + 64;
	double fit = (double)b->o.mem_mb * (1 << 20) / elt / b->o.workers;
	double want = b->aead_pps * b->o.seconds;
	unsigned n = (unsigned)RTE_MIN(RTE_MIN(want, fit), (double)b->o.max_frames);
	return n < 20000 ? 20000 : n;
}

/* Progress on stderr (the run log): where setup time goes, and where it fails. */
static void step(const char *what)
{
	static double t0;
	double t = mono_s();
	if (!t0)
		t0 = t;
	fprintf(stderr, "dgw_pipe: %7.3f s %s\n", t - t0, what);
}

/* Room for the largest frame of this size plus headroom/tailroom for encode. */
static unsigned room_for(const struct opts *o)
{
	unsigned biggest = o->size == IMIX ? 1400 : o->size;

	if (o->junk && biggest < 200) /* a junk datagram (junk_frame) */
		biggest = 200;
	return RTE_PKTMBUF_HEADROOM + 14 + 20 + 8 + DUST_DATA_OVERHEAD + biggest + 64;
}

static int setup(struct bench *b, struct dgw_config *cfg)
{
	unsigned lcore = rte_get_next_lcore(-1, 1, 0);
	unsigned room = room_for(&b->o);
	int rc;

	if (rte_lcore_count() < b->o.workers + 1) {
		fprintf(stderr, "dgw_pipe: need %u worker lcores\n", b->o.workers);
		return -EINVAL;
	}
	b->cl = calloc((size_t)b->o.workers * b->o.clients, sizeof(*b->cl));
	if (!b->cl)
		return -ENOMEM;
	config_fill(b, cfg);
	step("start");
	rc = server_files(b, cfg);
	if (rc)
		return rc;
	step("server files written");
	rc = aead_measure(b, lcore, 0);
	if (rc)
		return rc;
	b->nframes = frames_for(b) / (1 + b->o.junk);
	b->ntotal = b->nframes * (1 + b->o.junk);
	/* 150k packets: well past the 32 MB L3 at 64 B, and quick to prepare at 1400 B. */
	rc = aead_measure(b, lcore, RTE_MIN(b->nframes, 150000u));
	if (rc)
		return rc;
	step("bare AEAD timed (hot and cold)");
	b->pool =
	    rte_pktmbuf_pool_create("bench_pool", b->o.workers * (b->ntotal + b->o.clients) + 4096,
	                            256, 0, (uint16_t)room, rte_socket_id());
	if (!b->pool)
		return -rte_errno;
	step("mbuf pool created");
	rc = ports_make(b, b->ntotal + b->o.clients + 64);
	if (rc)
		return rc;
	b->gw = dgw_create(cfg);
	if (!b->gw)
		return -errno;
	rc = dgw_ports_use(b->gw, b->net_port, b->dlv_port);
	if (rc)
		return rc;
	step("gateway created");
	rc = intros_queue(b);
	if (rc)
		return rc;
	rc = frames_build(b);
	step("frames built");
	return rc;
}

int main(int argc, char **argv)
{
	static struct bench b;
	struct dgw_config cfg;
	pthread_t th, sc;
	int n, rc;

	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "dgw_pipe: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	parse(argc - n, argv + n, &b.o);
	if (dust_init() != 0)
		return 1;
	if (b.o.crypto && dust_crypto_select(b.o.crypto) != 0) {
		fprintf(stderr, "dgw_pipe: %s\n", dust_last_error());
		return 1;
	}
	b.lap_cycles = dust_prof_lap_cycles();
	rc = setup(&b, &cfg);
	if (rc) {
		fprintf(stderr, "dgw_pipe: setup failed: %s\n", strerror(-rc));
		goto out;
	}
	if (b.o.scrape_ms) {
		char addr[32];

		b.prom_port = (uint16_t)(20000 + getpid() % 20000);
		snprintf(addr, sizeof(addr), "127.0.0.1:%u", b.prom_port);
		if (!(b.prom = dgw_prom_open(addr)) || dgw_prom_start(b.prom, b.gw) != 0) {
			rc = -EADDRINUSE;
			goto out;
		}
		pthread_create(&sc, NULL, scraper_main, &b);
	}
	pthread_create(&th, NULL, driver_main, &b);
	rc = dgw_run(b.gw);
	pthread_join(th, NULL);
	if (b.o.scrape_ms) {
		b.scrape_stop = true;
		pthread_join(sc, NULL);
	}
	if (!rc)
		rc = b.err;
	if (!rc)
		rc = aead_measure(&b, rte_get_next_lcore(-1, 1, 0), 0);
	for (unsigned w = 0; w < b.o.workers; w++)
		if (b.done[w] < b.nframes)
			rc = rc ? rc : -EPROTO;
	report(&b, rc);
	if (rc)
		fprintf(stderr, "dgw_pipe: run incomplete (%s)\n", strerror(-rc));
out:
	dgw_prom_stop(b.prom);
	rings_free(&b);
	if (b.gw)
		dgw_destroy(b.gw);
	server_files_remove(&b);
	rte_eal_cleanup();
	return rc ? 1 : 0;
}
