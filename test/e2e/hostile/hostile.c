/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-hostile: the attacker of the hostile-traffic test. Sends what a censor
 * or a prober would at a running dustgw over plain UDP sockets: random
 * datagrams of every length, floods of bogus intros, replays of captured
 * datagrams, and, holding a real session, fresh packets truncated or with a
 * flipped bit; or fills the session table. Over IPv4 or IPv6 (an address
 * in brackets: [fd00::1]:4433); random datagrams up to 65507 bytes leave
 * fragmented. Prints "key=value" results the test script checks against
 * the gateway's counters. Test-only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "capfile.h"
#include "dust.h"
#include "frame.h"

enum { DG_MAX = 65536, UDP_MAX = 65507, MAX_INVITES = 256 };

/* An IPv4 or IPv6 socket address. */
union ep {
	struct sockaddr sa;
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
};

struct opts {
	union ep to, from;
	unsigned min, max, count, mtu;
	double seconds;
	const char *pcap, *what, *password_file;
	union ep client;
	const char *invites[MAX_INVITES];
	unsigned ninvites;
	unsigned truncated, flipped;
};

static struct dust_rng rng;

static void die(const char *what)
{
	fprintf(stderr, "dust-hostile: %s: %s\n", what,
	        errno ? strerror(errno) : dust_last_error());
	exit(1);
}

static socklen_t ep_len(const union ep *e)
{
	return e->sa.sa_family == AF_INET6 ? sizeof(e->v6) : sizeof(e->v4);
}

static uint16_t ep_port(const union ep *e)
{
	return ntohs(e->sa.sa_family == AF_INET6 ? e->v6.sin6_port : e->v4.sin_port);
}

static void ep_set_port(union ep *e, uint16_t port)
{
	if (e->sa.sa_family == AF_INET6)
		e->v6.sin6_port = htons(port);
	else
		e->v4.sin_port = htons(port);
}

/* The address bytes (4 or 16) of e, and their count. */
static const uint8_t *ep_addr(const union ep *e, size_t *n)
{
	*n = e->sa.sa_family == AF_INET6 ? 16 : 4;
	return e->sa.sa_family == AF_INET6 ? e->v6.sin6_addr.s6_addr
	                                   : (const uint8_t *)&e->v4.sin_addr;
}

/* ADDR[:PORT] or [ADDR6][:PORT] or a bare ADDR6 */
static int parse_ep(union ep *e, const char *s)
{
	char host[64];
	const char *end = s[0] == '[' ? strchr(s, ']') : NULL, *colon;
	size_t hl;

	memset(e, 0, sizeof(*e));
	if (s[0] == '[' && !end)
		return -1;
	if (s[0] == '[')
		s++, colon = end[1] == ':' ? end + 1 : NULL, hl = (size_t)(end - s);
	else if (strchr(s, ':') != strrchr(s, ':'))
		colon = NULL, hl = strlen(s);
	else
		colon = strchr(s, ':'), hl = colon ? (size_t)(colon - s) : strlen(s);
	if (hl >= sizeof(host))
		return -1;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (inet_pton(AF_INET6, host, &e->v6.sin6_addr) == 1)
		e->v6.sin6_family = AF_INET6;
	else if (inet_pton(AF_INET, host, &e->v4.sin_addr) == 1)
		e->v4.sin_family = AF_INET;
	else
		return -1;
	ep_set_port(e, colon ? (uint16_t)atoi(colon + 1) : 0);
	return 0;
}

static int sock_from(const union ep *from)
{
	int v6 = from->sa.sa_family == AF_INET6, one = 1;
	int fd = socket(from->sa.sa_family, SOCK_DGRAM, 0);
	/* a datagram over the MTU leaves in fragments, as a prober's would */
	int dont = v6 ? IPV6_PMTUDISC_DONT : IP_PMTUDISC_DONT;

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MTU_DISCOVER : IP_MTU_DISCOVER,
	           &dont, sizeof(dont));
	if (bind(fd, &from->sa, ep_len(from)) != 0)
		die("bind");
	return fd;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Pace: the i-th of n sends happens at start + i * seconds / n. */
static void pace(double start, unsigned i, unsigned n, double seconds)
{
	double at = start + seconds * i / (n ? n : 1), d = at - now_s();

	if (d > 0) {
		struct timespec ts = {.tv_sec = (time_t)d,
		                      .tv_nsec = (long)((d - (time_t)d) * 1e9)};

		nanosleep(&ts, NULL);
	}
}

static void send_to(int fd, const union ep *to, const uint8_t *p, size_t len)
{
	if (sendto(fd, p, len, 0, &to->sa, ep_len(to)) != (ssize_t)len)
		die("sendto");
}

/* Count datagrams arriving on fd within ms; the last one is left in buf. */
static unsigned drain(int fd, unsigned ms, uint8_t *buf, size_t cap, ssize_t *last)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	double end = now_s() + ms / 1000.0;
	unsigned n = 0;

	for (double left; (left = end - now_s()) > 0;) {
		if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		*last = recv(fd, buf, cap, 0);
		n += *last >= 0;
	}
	return n;
}

/* ---- random datagrams and floods ------------------------------------------ */

/* Frames a UDP payload of len bytes takes on a link of MTU o->mtu (Linux's
 * fragment sizes: all but the last carry a multiple of 8 bytes). */
static unsigned frames(const struct opts *o, unsigned len)
{
	unsigned iph = o->to.sa.sa_family == AF_INET6 ? 40 : 20;
	unsigned per = (o->mtu - iph - (iph == 40 ? 8 : 0)) & ~7u;

	return iph + 8 + len <= o->mtu ? 1 : (len + 8 + per - 1) / per;
}

/* Every length from min to max once, or --count lengths drawn in between. */
static int cmd_random(const struct opts *o)
{
	static uint8_t buf[DG_MAX];
	int fd = sock_from(&o->from);
	unsigned n = o->count ? o->count : o->max - o->min + 1, small = 0, whole = 0, frags = 0;
	double start = now_s();
	ssize_t last;

	for (unsigned i = 0; i < n; i++) {
		unsigned len =
		    o->count ? o->min + dust_rng_uniform(&rng, o->max - o->min + 1) : o->min + i;
		unsigned f = frames(o, len);

		dust_rng_bytes(&rng, buf, len);
		pace(start, i, n, o->seconds);
		send_to(fd, &o->to, buf, len);
		whole += f == 1;
		small += f == 1 && len < DUST_INTRO_MIN_BYTES;
		frags += f > 1 ? f : 0;
	}
	/* whole datagrams are Dust's to judge by length; fragments the IP layer's */
	printf("sent=%u short=%u long=%u fragmented=%u frags=%u replies=%u\n", n, small,
	       whole - small, n - whole, frags, drain(fd, 500, buf, sizeof(buf), &last));
	return 0;
}

static int cmd_flood(const struct opts *o)
{
	static uint8_t buf[DG_MAX];
	int fd = sock_from(&o->from);
	double start = now_s();
	ssize_t last;

	for (unsigned i = 0; i < o->count; i++) {
		unsigned len = DUST_INTRO_MIN_BYTES + dust_rng_uniform(&rng, 1025);

		dust_rng_bytes(&rng, buf, len);
		pace(start, i, o->count, o->seconds);
		send_to(fd, &o->to, buf, len);
	}
	printf("sent=%u seconds=%.2f replies=%u\n", o->count, now_s() - start,
	       drain(fd, 300, buf, sizeof(buf), &last));
	return 0;
}

/* ---- replays from a capture ---------------------------------------------- */

struct cap_dg {
	uint8_t *p;
	uint16_t len;
	bool intro; /* sent before the gateway's first answer */
};

/* Is e the address (4 or 16 bytes by family) and port of a frame? */
static bool ep_is(const union ep *e, uint8_t family, const uint8_t *addr, uint16_t port)
{
	size_t n;
	const uint8_t *a = ep_addr(e, &n);

	return n == (family == 6 ? 16u : 4u) && !memcmp(a, addr, n) && ep_port(e) == port;
}

/* The client's datagrams to the gateway, in capture order. */
static size_t cap_load(const struct opts *o, struct cap_dg *out, size_t cap)
{
	struct capfile_in in;
	struct capfile_rec r;
	bool answered = false;
	size_t n = 0;

	if (capfile_open(&in, o->pcap) < 0) {
		fprintf(stderr, "dust-hostile: %s\n", in.err);
		exit(1);
	}
	while (n < cap && capfile_next(&in, &r) == 1) {
		struct frame_udp u;

		if (frame_udp_parse(r.f, r.caplen, &u) < 0)
			continue;
		if (ep_is(&o->to, u.family, u.sip, u.sport) &&
		    ep_is(&o->client, u.family, u.dip, u.dport))
			answered = true;
		if (!ep_is(&o->client, u.family, u.sip, u.sport) ||
		    !ep_is(&o->to, u.family, u.dip, u.dport))
			continue;
		out[n].p = malloc(u.plen);
		if (!out[n].p)
			die("malloc");
		memcpy(out[n].p, u.pl, u.plen);
		out[n].len = (uint16_t)u.plen;
		out[n++].intro = !answered;
	}
	capfile_done(&in);
	return n;
}

static int cmd_replay(const struct opts *o)
{
	static struct cap_dg dg[100000];
	static uint8_t buf[DG_MAX];
	size_t n = cap_load(o, dg, sizeof(dg) / sizeof(dg[0]));
	bool intros = !strcmp(o->what, "intros"), untag = !strcmp(o->what, "untag");
	unsigned sent = 0, small = 0, want = o->count ? o->count : UINT32_MAX;
	int fd = sock_from(&o->from);
	double start = now_s();
	ssize_t last;

	if (!intros && !untag && strcmp(o->what, "data"))
		die("--what is data, intros or untag");
	for (unsigned rep = 0; rep < 1000 && sent < want; rep++) {
		unsigned before = sent;

		for (size_t i = 0; i < n && sent < want; i++) {
			if (dg[i].intro != (intros || untag))
				continue;
			memcpy(buf, dg[i].p, dg[i].len);
			if (untag) /* an intro whose tag names no invitation */
				dust_rng_bytes(&rng, buf, DUST_TAG_BYTES);
			pace(start, sent, o->count, o->seconds);
			send_to(fd, &o->to, buf, dg[i].len);
			small += dg[i].len < DUST_INTRO_MIN_BYTES;
			sent++;
		}
		if (sent == before || !o->count)
			break; /* nothing of that kind, or one pass asked for */
	}
	printf("captured=%zu sent=%u short=%u long=%u replies=%u\n", n, sent, small, sent - small,
	       drain(fd, 500, buf, sizeof(buf), &last));
	for (size_t i = 0; i < n; i++)
		free(dg[i].p);
	return sent ? 0 : 1;
}

/* ---- holding real sessions -------------------------------------------------- */

/* The file's text without trailing blanks, in a fresh buffer the caller frees. */
static char *read_text(const char *path)
{
	char *text = malloc(4096);
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f || !text)
		die(path);
	n = fread(text, 1, 4095, f);
	fclose(f);
	text[n] = '\0';
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
		text[--n] = '\0';
	return text;
}

struct peer {
	struct dust_invite inv;
	struct dust_session s;
	int fd;
	bool up;
};

/* Intro from p->fd, up to tries times, each waiting ms for the keepalive. */
static unsigned intros_sent;

/*
 * Up to ms for a datagram that opens with p's session (the gateway's
 * keepalive); returns at the first one, so a patient wait costs nothing
 * when the answer is quick.
 */
static bool answered(struct peer *p, unsigned ms, uint8_t *buf, size_t cap)
{
	struct pollfd pf = {.fd = p->fd, .events = POLLIN};
	struct dust_limits lim;
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop d;
	double end = now_s() + ms / 1000.0;

	dust_limits_default(&lim);
	for (double left; (left = end - now_s()) > 0;) {
		ssize_t n;

		if (poll(&pf, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		n = recv(p->fd, buf, cap, 0);
		if (n > 0 && dust_datagram_open(&p->s, &lim, (uint32_t)time(NULL), buf, (size_t)n,
		                                0, segs, DUST_CHAIN_MAX, &d) > 0)
			return true;
	}
	return false;
}

static bool peer_connect(struct peer *p, const struct dust_identity *id, const union ep *to,
                         unsigned tries, unsigned ms)
{
	struct dust_pad pad;
	uint8_t buf[DG_MAX];

	dust_pad_default(&pad);
	for (unsigned t = 0; t < tries; t++) {
		int n =
		    dust_intro_build(&p->inv, id, &rng, &pad, unix_ms(), buf, sizeof(buf), &p->s);

		if (n < 0)
			die("intro");
		send_to(p->fd, to, buf, (size_t)n);
		intros_sent++;
		if (answered(p, ms, buf, sizeof(buf)))
			return p->up = true;
	}
	return false;
}

/* Keepalive and its answer: true when the gateway still serves this session. */
static bool peer_alive(struct peer *p, const union ep *to)
{
	struct dust_pad pad;
	uint8_t buf[DG_MAX];
	int n;

	dust_pad_default(&pad);
	n = dust_data_seal(&p->s, &rng, &pad, (uint32_t)time(NULL), buf, 0, sizeof(buf));
	if (n < 0)
		die("seal");
	send_to(p->fd, to, buf, (size_t)n);
	/* patient: an answer is what matters, and a loaded 2-core machine is slow */
	return answered(p, 4000, buf, sizeof(buf));
}

static void peer_open(struct peer *p, const char *invite, const char *pw, const union ep *from)
{
	char *text = read_text(invite);

	memset(p, 0, sizeof(*p));
	if (dust_invite_open(&p->inv, text, pw, strlen(pw)) != 0)
		die(invite);
	free(text);
	p->fd = sock_from(from);
}

/* A fresh packet (never sent): tx counter advanced, bytes at buf. */
static size_t fresh(struct peer *p, uint8_t *buf, size_t data_len)
{
	struct dust_pad pad;
	int n;

	dust_pad_default(&pad);
	memset(buf + DUST_DATA_PREFIX, 0, data_len);
	n = dust_data_seal(&p->s, &rng, &pad, (uint32_t)time(NULL), buf, data_len, DG_MAX);
	if (n < 0)
		die("seal");
	return (size_t)n;
}

static int cmd_session(const struct opts *o)
{
	struct dust_identity id;
	struct peer p;
	uint8_t buf[DG_MAX];
	unsigned small_cut = 0;
	ssize_t last;
	bool alive;
	char *pw = read_text(o->password_file);

	if (o->ninvites != 1 || dust_identity_generate(&id) != 0)
		die("session wants one --invite");
	peer_open(&p, o->invites[0], pw, &o->from);
	sodium_memzero(pw, strlen(pw));
	free(pw);
	/* 4 s per try: a first use is answered once its binding is durable (see fill) */
	if (!peer_connect(&p, &id, &o->to, 5, 4000))
		die("no answer to the intro");
	/* a late answer to an earlier try is no reply to what follows */
	(void)drain(p.fd, 500, buf, sizeof(buf), &last);
	for (unsigned i = 0; i < o->truncated; i++) {
		size_t n = fresh(&p, buf, dust_rng_uniform(&rng, 1200));
		size_t cut = 1 + dust_rng_uniform(&rng, (uint32_t)n - 1);

		small_cut += cut < DUST_INTRO_MIN_BYTES;
		send_to(p.fd, &o->to, buf, cut);
		usleep(1000); /* gentle: the counts are checked exactly */
	}
	for (unsigned i = 0; i < o->flipped; i++) {
		/* at least one data byte: a flip past header and sample needs a byte there */
		size_t n = fresh(&p, buf, 1 + dust_rng_uniform(&rng, 1200));
		/* past header and sample: the header still unmasks, the tag must fail */
		size_t at =
		    DUST_HDR_BYTES + DUST_SAMPLE_BYTES +
		    dust_rng_uniform(&rng, (uint32_t)(n - DUST_HDR_BYTES - DUST_SAMPLE_BYTES));

		buf[at] ^= (uint8_t)(1u << dust_rng_uniform(&rng, 8));
		send_to(p.fd, &o->to, buf, n);
		usleep(1000); /* gentle: the counts are checked exactly */
	}
	unsigned replies = drain(p.fd, 500, buf, sizeof(buf), &last);
	alive = peer_alive(&p, &o->to);
	printf("truncated=%u truncated_short=%u flipped=%u replies=%u alive_after=%d\n",
	       o->truncated, small_cut, o->flipped, replies, alive);
	dust_session_wipe(&p.s);
	dust_identity_wipe(&id);
	return alive && replies == 0 ? 0 : 1;
}

/* Open one session per invitation, from consecutive ports; then check them. */
static int cmd_fill(const struct opts *o)
{
	static struct peer p[MAX_INVITES];
	struct dust_identity id;
	unsigned up = 0, alive = 0, refused_intros = 0;
	char *pw = read_text(o->password_file);

	if (dust_identity_generate(&id) != 0)
		die("identity");
	for (unsigned i = 0; i < o->ninvites; i++) {
		union ep from = o->from;

		ep_set_port(&from, (uint16_t)(ep_port(&o->from) + i));
		unsigned before = intros_sent;

		peer_open(&p[i], o->invites[i], pw, &from);
		/*
		 * 4 s per try: a first use is answered once its binding is durable
		 * (the main lcore's group commit); on a loaded machine that took
		 * over 1.5 s, and a retry is a second accepted intro.
		 */
		up += peer_connect(&p[i], &id, &o->to, 3, 4000);
		if (!p[i].up)
			refused_intros += intros_sent - before;
		printf("session %u: %s\n", i, p[i].up ? "answered" : "no answer");
		fflush(stdout);
	}
	sodium_memzero(pw, strlen(pw));
	free(pw);
	for (unsigned i = 0; i < o->ninvites; i++)
		alive += p[i].up && peer_alive(&p[i], &o->to);
	printf("invites=%u answered=%u unanswered=%u unanswered_intros=%u alive_after=%u\n",
	       o->ninvites, up, o->ninvites - up, refused_intros, alive);
	for (unsigned i = 0; i < o->ninvites; i++)
		dust_session_wipe(&p[i].s);
	dust_identity_wipe(&id);
	return 0;
}

static __attribute__((noreturn)) void usage(void)
{
	fprintf(stderr,
	        "usage: dust-hostile COMMAND --to ADDR:PORT --from ADDR[:PORT] [options]\n"
	        "  random  --min L --max L [--count N] [--mtu M] [--seconds S]\n"
	        "          every length from L to L once, or N lengths drawn in between\n"
	        "          (up to 65507; over the MTU M, default 1500, they leave in fragments)\n"
	        "  flood   --count N [--seconds S]         bogus intros (random bytes)\n"
	        "  replay  --pcap F --client ADDR:PORT --what data|intros|untag [--count N]\n"
	        "  session --invite F --password-file P --truncated N --flipped N\n"
	        "  fill    --invite F... --password-file P  one session per invitation\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"to", 1, NULL, 't'},      {"from", 1, NULL, 'f'},          {"min", 1, NULL, 'm'},
	    {"max", 1, NULL, 'M'},     {"count", 1, NULL, 'n'},         {"seconds", 1, NULL, 's'},
	    {"pcap", 1, NULL, 'p'},    {"what", 1, NULL, 'w'},          {"client", 1, NULL, 'c'},
	    {"invite", 1, NULL, 'i'},  {"password-file", 1, NULL, 'P'}, {"truncated", 1, NULL, 'T'},
	    {"flipped", 1, NULL, 'F'}, {"mtu", 1, NULL, 'u'},           {NULL, 0, NULL, 0},
	};
	int c;

	o->min = 1, o->max = 1472, o->what = "data", o->mtu = 1500;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't':
			if (parse_ep(&o->to, optarg))
				usage();
			break;
		case 'f':
			if (parse_ep(&o->from, optarg))
				usage();
			break;
		case 'c':
			if (parse_ep(&o->client, optarg))
				usage();
			break;
		case 'm':
			o->min = (unsigned)atoi(optarg);
			break;
		case 'M':
			o->max = (unsigned)atoi(optarg);
			break;
		case 'n':
			o->count = (unsigned)atoi(optarg);
			break;
		case 's':
			o->seconds = atof(optarg);
			break;
		case 'p':
			o->pcap = optarg;
			break;
		case 'w':
			o->what = optarg;
			break;
		case 'P':
			o->password_file = optarg;
			break;
		case 'T':
			o->truncated = (unsigned)atoi(optarg);
			break;
		case 'F':
			o->flipped = (unsigned)atoi(optarg);
			break;
		case 'u':
			o->mtu = (unsigned)atoi(optarg);
			break;
		case 'i':
			if (o->ninvites == MAX_INVITES)
				usage();
			o->invites[o->ninvites++] = optarg;
			break;
		default:
			usage();
		}
	}
	if (!ep_port(&o->to) || o->min < 1 || o->max > UDP_MAX || o->min > o->max ||
	    o->mtu < 1280 || (o->from.sa.sa_family && o->from.sa.sa_family != o->to.sa.sa_family))
		usage();
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	const char *cmd = argc > 1 ? argv[1] : "";
	int rc;

	if (dust_init() < 0)
		return 1;
	dust_rng_init(&rng);
	parse(argc - 1, argv + 1, &o);
	if (!strcmp(cmd, "random"))
		rc = cmd_random(&o);
	else if (!strcmp(cmd, "flood"))
		rc = cmd_flood(&o);
	else if (!strcmp(cmd, "replay") && o.pcap)
		rc = cmd_replay(&o);
	else if (!strcmp(cmd, "session") && o.password_file)
		rc = cmd_session(&o);
	else if (!strcmp(cmd, "fill") && o.password_file && o.ninvites)
		rc = cmd_fill(&o);
	else
		usage();
	dust_rng_wipe(&rng);
	return rc;
}
