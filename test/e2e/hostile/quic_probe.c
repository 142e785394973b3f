/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-quic-probe: the prober of the quic hostile test. Against a dustgw
 * quic port it sends what a censor probing a suspected QUIC server would:
 * a real browser's Initials (from a capture), random datagrams of every
 * length, random short and long headers, Initials for an invitation the
 * gateway never issued, and a real invitee's Initials with one bit flipped
 * or cut short. With --invite it also holds a real session (the positive
 * control: its keepalive must be answered) and sends that session's fresh
 * packets truncated, with a flipped bit, and replayed. Every socket
 * listens; "replies=N" counts what came back to probes. Test-only.
 */
#include <arpa/inet.h>
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
#include "quic.h"

enum { DG_MAX = 1600, HELLO_MAX = DUST_QUIC_HELLO_BYTES };

static struct dust_rng rng;
static struct sockaddr_in to;
static unsigned replies, sent;

static int sock_new(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in any = {.sin_family = AF_INET};

	if (fd < 0 || bind(fd, (struct sockaddr *)&any, sizeof(any)) != 0) {
		perror("socket");
		exit(1);
	}
	return fd;
}

/* Anything that came back on fd within ms milliseconds counts as a reply. */
static unsigned drain(int fd, int ms)
{
	uint8_t buf[DG_MAX];
	struct pollfd p = {.fd = fd, .events = POLLIN};
	unsigned n = 0;

	while (poll(&p, 1, ms) > 0 && recv(fd, buf, sizeof(buf), 0) > 0)
		n++;
	return n;
}

/*
 * What came back on fd within ms milliseconds, opened with our session s:
 * the keepalives (returned), the gateway's path MTU probes (path challenges,
 * SPEC §12.4: its own, due 30 ms into a valid path, in *probes), and
 * anything else (*other).
 */
static unsigned drain_opened(int fd, int ms, struct dust_session *s, const struct dust_limits *lim,
                             unsigned *probes, unsigned *other)
{
	uint8_t buf[DG_MAX], cookie[DUST_PATH_COOKIE_BYTES];
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t pre = dust_quic_rx_prefix(s);
	unsigned ka = 0;
	ssize_t r;

	while (poll(&p, 1, ms) > 0 && (r = recv(fd, buf, sizeof(buf), 0)) > 0) {
		struct dust_seg seg;
		size_t used = 0;

		if ((size_t)r > pre && dust_quic_short_match(s, buf, (size_t)r) &&
		    dust_data_open(s, lim, (uint32_t)time(NULL), buf + pre, (size_t)r - pre, &seg,
		                   &used) == DUST_OK) {
			if (!seg.len) {
				ka++;
				continue;
			}
			if (dust_path_msg_parse(buf + pre + seg.off, seg.len, cookie) ==
			    DUST_PATH_CHALLENGE) {
				(*probes)++;
				continue;
			}
		}
		(*other)++;
	}
	return ka;
}

/* Each probe from its own socket (source port), as a scanner's flows are. */
static void probe(const uint8_t *dg, size_t len)
{
	int fd = sock_new();

	if (sendto(fd, dg, len, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)len)
		sent++;
	replies += drain(fd, 2);
	close(fd);
}

/* A quic hello (two Initials back to back, maybe cut short) from one socket. */
static void probe_hello(const uint8_t *dg, size_t len)
{
	int fd = sock_new();

	for (size_t at = 0; at < len; at += DUST_QUIC_CLIENT_DGRAM) {
		size_t n = len - at < DUST_QUIC_CLIENT_DGRAM ? len - at : DUST_QUIC_CLIENT_DGRAM;

		if (sendto(fd, dg + at, n, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)n)
			sent++;
	}
	replies += drain(fd, 2);
	close(fd);
}

/* The UDP payloads of every datagram to port 443 in a capture (a browser's Initials). */
static unsigned chromium(const char *path)
{
	struct capfile_in in;
	struct capfile_rec r;
	unsigned n = 0;

	if (capfile_open(&in, path) < 0) {
		fprintf(stderr, "dust-quic-probe: %s: %s\n", path, in.err);
		exit(1);
	}
	while (capfile_next(&in, &r) == 1) {
		size_t l2 = in.dlt == DLT_EN10MB ? 14 : 16, ihl;
		const uint8_t *d = r.f;

		if (r.caplen < l2 + 28 || (d[l2] >> 4) != 4)
			continue;
		ihl = (size_t)(d[l2] & 15) * 4;
		if (d[l2 + 9] != 17 || ((d[l2 + ihl + 2] << 8) | d[l2 + ihl + 3]) != 443)
			continue;
		probe(d + l2 + ihl + 8, r.caplen - l2 - ihl - 8);
		n++;
	}
	capfile_done(&in);
	return n;
}

static void random_lengths(void)
{
	uint8_t dg[DG_MAX];

	for (size_t len = 1; len <= 1472; len += 7) {
		dust_rng_bytes(&rng, dg, len);
		probe(dg, len);
		/* the same with the forms QUIC parsers look for first */
		dg[0] = (uint8_t)(0x40 | (dg[0] & 0x3f)); /* short header */
		probe(dg, len);
		if (len > 6) {
			dg[0] = (uint8_t)(0xc0 | (dg[0] & 0x3f)); /* long header, version 1 */
			memcpy(dg + 1, "\x00\x00\x00\x01", 4);
			probe(dg, len);
		}
	}
}

static int load_invite(struct dust_invite *inv, const char *file, const char *pwfile)
{
	char text[1024] = {0}, pw[256] = {0};
	FILE *f = fopen(file, "r"), *g = fopen(pwfile, "r");
	int rc = -1;

	if (f && g && fgets(text, sizeof(text), f) && fgets(pw, sizeof(pw), g)) {
		pw[strcspn(pw, "\r\n")] = '\0';
		rc = dust_invite_open(inv, text, pw, strlen(pw));
	}
	if (f)
		fclose(f);
	if (g)
		fclose(g);
	sodium_memzero(pw, sizeof(pw));
	if (rc)
		fprintf(stderr, "dust-quic-probe: %s: %s\n", file, dust_last_error());
	return rc;
}

/* An intact Initial for inv from a fresh client key; its length. */
static size_t initial(const struct dust_invite *inv, uint8_t dg[HELLO_MAX])
{
	struct dust_identity id;
	struct dust_quic_client qc;
	int len;

	if (dust_identity_generate(&id) != 0)
		exit(1);
	len =
	    dust_quic_intro_build(inv, &id, &rng, (uint64_t)time(NULL) * 1000, dg, HELLO_MAX, &qc);
	if (len < 0)
		exit(1);
	dust_quic_client_wipe(&qc);
	dust_identity_wipe(&id);
	return (size_t)len;
}

/* Initials for inv: n with one bit flipped, n cut short. */
static void broken_initials(const struct dust_invite *inv, unsigned n)
{
	uint8_t dg[HELLO_MAX];

	for (unsigned i = 0; i < 2 * n; i++) {
		size_t len = initial(inv, dg);

		if (i < n) {
			unsigned bit = dust_rng_uniform(&rng, (uint32_t)len * 8);

			dg[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		} else {
			len = dust_rng_uniform(&rng, (uint32_t)len);
		}
		probe_hello(dg, len);
	}
}

/* Intact Initials of an invitation this gateway never issued. */
static void stranger(const struct dust_invite *inv, unsigned n)
{
	uint8_t dg[HELLO_MAX];

	for (unsigned i = 0; i < n; i++)
		probe_hello(dg, initial(inv, dg));
}

static size_t seal(struct dust_session *s, uint8_t *pkt, size_t data_len)
{
	struct dust_pad pad;
	size_t pre = dust_quic_tx_prefix(s);
	int n;

	dust_pad_default(&pad);
	n = dust_data_seal(s, &rng, &pad, (uint32_t)time(NULL), pkt + pre, data_len, DG_MAX - pre);
	if (n < 0)
		exit(1);
	dust_quic_short_put(s, &rng, pkt);
	return pre + (size_t)n;
}

/*
 * A real session of our own: connect and confirm, then its fresh packets
 * broken three ways from the same socket (no reply may come), then a
 * keepalive, which must be answered: the positive control that replies
 * would be seen.
 */
static int session(const struct dust_invite *inv, unsigned n)
{
	struct dust_identity id;
	struct dust_quic_client qc;
	struct dust_session s;
	struct dust_limits lim;
	uint8_t dg[HELLO_MAX], ans[DG_MAX], tail[DG_MAX];
	int fd = sock_new(), len;
	ssize_t a, t;
	unsigned before, probes = 0, other = 0;
	size_t k;

	dust_limits_default(&lim);
	if (dust_identity_generate(&id) != 0)
		return -1;
	len =
	    dust_quic_intro_build(inv, &id, &rng, (uint64_t)time(NULL) * 1000, dg, sizeof(dg), &qc);
	if (len < 0 ||
	    sendto(fd, dg, DUST_QUIC_CLIENT_DGRAM, 0, (struct sockaddr *)&to, sizeof(to)) !=
	        DUST_QUIC_CLIENT_DGRAM ||
	    sendto(fd, dg + DUST_QUIC_CLIENT_DGRAM, DUST_QUIC_CLIENT_DGRAM, 0,
	           (struct sockaddr *)&to, sizeof(to)) != DUST_QUIC_CLIENT_DGRAM)
		return -1;
	struct pollfd p = {.fd = fd, .events = POLLIN};

	/* a first use is answered once its binding is durable: 10 s for a loaded machine */
	if (poll(&p, 1, 10000) <= 0 || (a = recv(fd, ans, sizeof(ans), 0)) <= 0 ||
	    !dust_quic_is_flight_ack(ans, (size_t)a)) {
		printf("session=no-flight-ack\n");
		return -1;
	}
	if (poll(&p, 1, 2000) <= 0 || (a = recv(fd, ans, sizeof(ans), 0)) <= 0) {
		printf("session=none\n");
		return -1;
	}
	/* the flight's tail (SPEC §12.3): a Handshake packet whose keepalive opens the flight */
	if (poll(&p, 1, 2000) <= 0 || (t = recv(fd, tail, sizeof(tail), 0)) <= 0 ||
	    dust_quic_answer_open(&qc, &lim, (uint32_t)time(NULL), ans, (size_t)a, tail, (size_t)t,
	                          &s) != DUST_OK) {
		printf("session=no-flight-tail\n");
		return -1;
	}
	/*
	 * confirm, as a client does: until a datagram of the session comes the
	 * gateway resends its flight on the PTO (SPEC §12.3), which is no reply
	 * to the broken packets below; the keepalive's answer is drained here
	 */
	k = seal(&s, dg, 0);
	if (sendto(fd, dg, k, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -1;
	drain(fd, 300);
	before = replies;
	for (unsigned i = 0; i < n; i++) {
		k = seal(&s, dg, 64);
		/* truncated */
		if (sendto(fd, dg, k - 1 - dust_rng_uniform(&rng, 16), 0, (struct sockaddr *)&to,
		           sizeof(to)) > 0)
			sent++;
		k = seal(&s, dg, 64);
		/* one bit flipped after the short header */
		dg[1 + s.cid_len + dust_rng_uniform(&rng, (uint32_t)(k - 1 - s.cid_len))] ^=
		    (uint8_t)(1u << dust_rng_uniform(&rng, 8));
		if (sendto(fd, dg, k, 0, (struct sockaddr *)&to, sizeof(to)) > 0)
			sent++;
	}
	replies += drain(fd, 300);
	/* a keepalive, then the same bytes again (a replay): one answer only */
	k = seal(&s, dg, 0);
	memcpy(ans, dg, k);
	if (sendto(fd, dg, k, 0, (struct sockaddr *)&to, sizeof(to)) < 0 ||
	    sendto(fd, ans, k, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -1;
	sent++;
	a = (ssize_t)drain_opened(fd, 1000, &s, &lim, &probes, &other);
	/* 2n broken packets and one replayed keepalive: each a drop */
	printf("session=up session_probes=%u session_broken_replies=%u keepalive_answers=%zd "
	       "pmtu_probes=%u other_answers=%u\n",
	       2 * n + 1, replies - before, a, probes, other);
	close(fd);
	dust_session_wipe(&s);
	dust_identity_wipe(&id);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"to", 1, NULL, 't'},       {"chromium", 1, NULL, 'c'},      {"invite", 1, NULL, 'i'},
	    {"stranger", 1, NULL, 's'}, {"password-file", 1, NULL, 'P'}, {"count", 1, NULL, 'n'},
	    {NULL, 0, NULL, 0},
	};
	const char *chrome = NULL, *invite = NULL, *strange = NULL, *pwf = NULL;
	unsigned n = 20, nchrome = 0;
	struct dust_invite inv, other;
	char host[64];
	int c, port;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 't' && sscanf(optarg, "%63[^:]:%d", host, &port) == 2) {
			to.sin_family = AF_INET;
			to.sin_port = htons((uint16_t)port);
			if (inet_pton(AF_INET, host, &to.sin_addr) != 1)
				c = '?';
		}
		if (c == 'c')
			chrome = optarg;
		else if (c == 'i')
			invite = optarg;
		else if (c == 's')
			strange = optarg;
		else if (c == 'P')
			pwf = optarg;
		else if (c == 'n')
			n = (unsigned)atoi(optarg);
		else if (c != 't') {
			fprintf(stderr,
			        "usage: dust-quic-probe --to ADDR:PORT [--chromium PCAP] "
			        "[--invite F --stranger F --password-file P] [--count N]\n");
			return 2;
		}
	}
	if (!to.sin_port || dust_init() != 0)
		return 2;
	dust_rng_init(&rng);
	if (chrome)
		nchrome = chromium(chrome);
	random_lengths();
	if (invite && strange && pwf) {
		if (load_invite(&inv, invite, pwf) || load_invite(&other, strange, pwf))
			return 1;
		broken_initials(&inv, n);
		stranger(&other, n);
	}
	printf("chromium_initials=%u probes=%u replies=%u\n", nchrome, sent, replies);
	fflush(stdout);
	if (invite && pwf && session(&inv, n) != 0)
		return 1;
	return 0;
}
