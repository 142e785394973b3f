/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Load generator and sink for the shadowsocks-libev UDP relay (the peer we
 * compare dustgw with). Pre-encrypts datagrams in the shadowsocks AEAD UDP
 * format, blasts them at ss-server over loopback with sendmmsg, counts the
 * payloads ss-server delivers to our sink, and reports ss-server's CPU time
 * per delivered packet from /proc/<pid>/stat. Loopback only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "numopt.h"
#include "sha1.h"

enum {
	SS_SALT_BYTES = 32, /* = key size for chacha20-ietf-poly1305 */
	SS_ADDR_BYTES = 7,  /* atyp 1 | IPv4 | port */
	SS_TAG_BYTES = crypto_aead_chacha20poly1305_ietf_ABYTES,
	SEQ_BYTES = 8, /* each payload starts with its sequence number */
	BATCH = 32,
};

struct opts {
	uint16_t ss_port;
	int ss_pid;
	const char *key_b64;
	unsigned size;
	unsigned count;
	double seconds;
	size_t mem_mb;
};

struct sink {
	int fd;
	uint16_t port;
	unsigned size;
	atomic_uint_fast64_t got;
	atomic_uint_fast64_t bad;
	atomic_bool stop;
};

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* utime + stime of a process, in seconds; -1 if it cannot be read. */
static double proc_cpu_s(int pid)
{
	char path[64], buf[1024];
	unsigned long ut, st;
	FILE *f;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	/* The command name may hold spaces: fields restart after its ')'. */
	p = strrchr(buf, ')');
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Kernel drop counter of the IPv4 UDP socket bound to port (/proc/net/udp). */
static long udp_drops(uint16_t port)
{
	char line[512];
	long drops = -1;
	FILE *f = fopen("/proc/net/udp", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned lport;
		long d;
		if (sscanf(line,
		           " %*d: %*x:%x %*x:%*x %*x %*x:%*x %*x:%*x %*x %*u %*u %*u %*d %*s %ld",
		           &lport, &d) == 2 &&
		    lport == port)
			drops = d;
	}
	fclose(f);
	return drops;
}

/* subkey = HKDF-SHA1(key, salt, "ss-subkey"), as shadowsocks AEAD specifies. */
static void ss_subkey(const uint8_t key[32], const uint8_t salt[SS_SALT_BYTES], uint8_t out[32])
{
	static const char info[] = "ss-subkey";
	sha1_hkdf(out, 32, salt, SS_SALT_BYTES, key, 32, (const uint8_t *)info, sizeof(info) - 1);
}

/* Payload bytes after the sequence number: a pattern the sink can check. */
static uint8_t fill_byte(uint64_t seq, unsigned i)
{
	return (uint8_t)(seq * 131u + i);
}

/* One datagram: salt | E(addr | seq | fill) | tag, with a fresh salt. */
static size_t ss_seal(uint8_t *out, const uint8_t key[32], uint16_t sink_port, uint64_t seq,
                      unsigned size)
{
	static const uint8_t zero_nonce[crypto_aead_chacha20poly1305_ietf_NPUBBYTES];
	uint8_t subkey[32];
	uint8_t *pt = out + SS_SALT_BYTES;
	size_t ptlen = SS_ADDR_BYTES + size;
	unsigned long long clen;

	randombytes_buf(out, SS_SALT_BYTES);
	pt[0] = 1;
	pt[1] = 127, pt[2] = 0, pt[3] = 0, pt[4] = 1;
	pt[5] = (uint8_t)(sink_port >> 8), pt[6] = (uint8_t)sink_port;
	memcpy(pt + SS_ADDR_BYTES, &seq, SEQ_BYTES);
	for (unsigned i = SEQ_BYTES; i < size; i++)
		pt[SS_ADDR_BYTES + i] = fill_byte(seq, i);
	ss_subkey(key, out, subkey);
	crypto_aead_chacha20poly1305_ietf_encrypt(pt, &clen, pt, ptlen, NULL, 0, NULL, zero_nonce,
	                                          subkey);
	sodium_memzero(subkey, sizeof(subkey));
	return SS_SALT_BYTES + (size_t)clen;
}

static bool payload_ok(const uint8_t *p, size_t len, unsigned size)
{
	uint64_t seq;

	if (len != size)
		return false;
	memcpy(&seq, p, SEQ_BYTES);
	return size <= SEQ_BYTES || p[size - 1] == fill_byte(seq, size - 1);
}

static void *sink_main(void *arg)
{
	struct sink *sk = arg;
	static uint8_t bufs[BATCH][2048];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct timespec to = {0, 100 * 1000 * 1000};

	for (unsigned i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof(bufs[i]);
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (!atomic_load(&sk->stop)) {
		int n = recvmmsg(sk->fd, msgs, BATCH, MSG_WAITFORONE, &to);
		if (n <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (payload_ok(bufs[i], msgs[i].msg_len, sk->size))
				atomic_fetch_add(&sk->got, 1);
			else
				atomic_fetch_add(&sk->bad, 1);
		}
	}
	return NULL;
}

static int sink_open(struct sink *sk)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {0, 100 * 1000};
	socklen_t alen = sizeof(a);
	int big = 64 << 20;

	sk->fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (sk->fd < 0)
		return -errno;
	/* A deep queue so that the sink, sharing a core with the sender, drops nothing. */
	if (setsockopt(sk->fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) != 0)
		setsockopt(sk->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	setsockopt(sk->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(sk->fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(sk->fd, (struct sockaddr *)&a, &alen) != 0)
		return -errno;
	sk->port = ntohs(a.sin_port);
	return 0;
}

struct frames {
	uint8_t *buf;
	size_t stride;
	uint32_t *len;
	unsigned n;
};

static int frames_build(struct frames *fr, const uint8_t key[32], uint16_t sink_port,
                        const struct opts *o)
{
	size_t max_n;

	fr->stride = SS_SALT_BYTES + SS_ADDR_BYTES + o->size + SS_TAG_BYTES;
	max_n = (o->mem_mb << 20) / fr->stride;
	fr->n = o->count < max_n ? o->count : (unsigned)max_n;
	fr->buf = malloc(fr->stride * fr->n);
	fr->len = malloc(sizeof(*fr->len) * fr->n);
	if (!fr->buf || !fr->len)
		return -ENOMEM;
	for (unsigned i = 0; i < fr->n; i++)
		fr->len[i] =
		    (uint32_t)ss_seal(fr->buf + fr->stride * i, key, sink_port, i, o->size);
	return 0;
}

struct sent {
	uint64_t n;
	double wall_s;
};

/* Every frame once (salts are single use: ss-server keeps a replay filter). */
static int blast(int fd, const struct frames *fr, double seconds, struct sent *out)
{
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	double t0 = mono_s();
	unsigned i = 0;

	memset(msgs, 0, sizeof(msgs));
	while (i < fr->n && mono_s() - t0 < seconds) {
		unsigned b = fr->n - i < BATCH ? fr->n - i : BATCH;
		for (unsigned j = 0; j < b; j++) {
			iov[j].iov_base = fr->buf + fr->stride * (i + j);
			iov[j].iov_len = fr->len[i + j];
			msgs[j].msg_hdr.msg_iov = &iov[j];
			msgs[j].msg_hdr.msg_iovlen = 1;
		}
		int n = sendmmsg(fd, msgs, b, 0);
		if (n < 0) {
			if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN)
				continue;
			return -errno;
		}
		i += (unsigned)n;
	}
	out->n = i;
	out->wall_s = mono_s() - t0;
	return 0;
}

static int ss_connect(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons(port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		return -1;
	return fd;
}

/* Wait until the sink has been quiet for 300 ms: ss-server has drained. */
static void sink_settle(struct sink *sk)
{
	uint64_t last = atomic_load(&sk->got) + 1;
	while (atomic_load(&sk->got) != last) {
		last = atomic_load(&sk->got);
		usleep(300 * 1000);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: ss_load --port P --pid PID --key B64 [--size N] [--count N]\n"
	                "               [--seconds S] [--mem-mb M]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"port", 1, NULL, 'p'},   {"pid", 1, NULL, 'P'},   {"key", 1, NULL, 'k'},
	    {"size", 1, NULL, 's'},   {"count", 1, NULL, 'c'}, {"seconds", 1, NULL, 't'},
	    {"mem-mb", 1, NULL, 'm'}, {NULL, 0, NULL, 0},
	};
	unsigned u;
	int c;

	*o = (struct opts){.size = 64, .count = 400000, .seconds = 2.0, .mem_mb = 256};
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!numopt_uint("ss_load", "port", optarg, 1, 65535, &u))
				usage();
			o->ss_port = (uint16_t)u;
			break;
		case 'P':
			if (!numopt_uint("ss_load", "pid", optarg, 1, INT_MAX, &u))
				usage();
			o->ss_pid = (int)u;
			break;
		case 'k':
			o->key_b64 = optarg;
			break;
		case 's':
			if (!numopt_uint("ss_load", "size", optarg, 1, 65507, &o->size))
				usage();
			break;
		case 'c':
			if (!numopt_uint("ss_load", "count", optarg, 1, UINT_MAX, &o->count))
				usage();
			break;
		case 't':
			if (!numopt_double("ss_load", "seconds", optarg, 0.01, 3600, &o->seconds))
				usage();
			break;
		case 'm':
			if (!numopt_uint("ss_load", "mem-mb", optarg, 1, 1u << 20, &u))
				usage();
			o->mem_mb = u;
			break;
		default:
			usage();
		}
	}
	if (!o->ss_port || !o->ss_pid || !o->key_b64 || o->size < SEQ_BYTES || o->size > 1450 ||
	    !o->count)
		usage();
}

static int decode_key(const char *b64, uint8_t key[32])
{
	size_t n = 0;

	if (sodium_base642bin(key, 32, b64, strlen(b64), NULL, &n, NULL,
	                      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    n != 32)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct sink sk = {0};
	struct frames fr;
	struct sent sent;
	uint8_t key[32];
	pthread_t th;
	int fd;

	parse(argc, argv, &o);
	if (sodium_init() < 0 || decode_key(o.key_b64, key) != 0) {
		fprintf(stderr, "ss_load: bad key (base64 of 32 bytes)\n");
		return 1;
	}
	sk.size = o.size;
	if (sink_open(&sk) != 0 || frames_build(&fr, key, sk.port, &o) != 0 ||
	    (fd = ss_connect(o.ss_port)) < 0) {
		perror("ss_load: setup");
		return 1;
	}
	pthread_create(&th, NULL, sink_main, &sk);

	long drops0 = udp_drops(o.ss_port);
	double cpu0 = proc_cpu_s(o.ss_pid);
	if (blast(fd, &fr, o.seconds, &sent) != 0) {
		perror("ss_load: sendmmsg");
		return 1;
	}
	double cpu_send = proc_cpu_s(o.ss_pid) - cpu0;
	sink_settle(&sk);
	double cpu1 = proc_cpu_s(o.ss_pid);
	long drops1 = udp_drops(o.ss_port);
	atomic_store(&sk.stop, true);
	pthread_join(th, NULL);

	uint64_t got = atomic_load(&sk.got);
	double cpu = cpu1 - cpu0;
	printf("{\"size\": %u, \"sent\": %" PRIu64 ", \"send_s\": %.4f, \"send_pps\": %.0f, "
	       "\"delivered\": %" PRIu64 ", \"bad\": %" PRIu64 ", \"ss_rx_drops\": %ld, "
	       "\"ss_cpu_s\": %.3f, \"ss_util\": %.3f, \"ss_ns_per_pkt\": %.1f, "
	       "\"ss_pps_per_core\": %.0f, \"delivered_pps\": %.0f}\n",
	       o.size, sent.n, sent.wall_s, (double)sent.n / sent.wall_s, got,
	       (uint64_t)atomic_load(&sk.bad), drops1 - drops0, cpu, cpu_send / sent.wall_s,
	       got ? cpu * 1e9 / (double)got : 0.0, cpu > 0 ? (double)got / cpu : 0.0,
	       (double)got / sent.wall_s);
	return got ? 0 : 3;
}
