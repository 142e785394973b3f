/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test-only helper for the netns tests: writes invitations (including
 * already-expired ones, which the real dust-invite refuses to make) and runs
 * a minimal socket-and-TUN Dust server, so dust-client's own behaviour
 * (retransmit, wrong key, server restart) is tested without DPDK. With
 * --quic-port it also serves the quic profile (SPEC §12) on a second socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "dust.h"
#include "gaps.h"
#include "quic.h"

enum { MAX_SESSIONS = 64, DG_MAX = 65535, QUIC_SHORT_LEN = 24 /* caddy's 1-RTT after its tail */ };

struct args {
	const char *key, *store, *server, *net, *pwfile, *outdir, *tun, *cover_sni;
	unsigned port, first, count, quic_port;
	long expiry_s;
	bool uniform_sizes; /* --sizes padding: the quic profile without the size model */
	bool no_pacing;     /* --pacing off: quic data back to back */
	bool parts;         /* --answer parts: each quic answer as if lost, then resent */
	bool no_pmtu;       /* --pmtu off: every quic session at 1252 */
	bool no_hold;       /* --answer-hold off: the whole quic flight at once */
};

struct peer {
	struct dust_session s;
	int sock; /* the socket of its profile */
	bool live;
	uint64_t pace_last_ns; /* quic: the last data datagram's departure */
	struct dust_pace_rate pace_rate;
	struct dust_ackz ackz; /* quic: the client's connections, for its compressed ACKs */
	/* quic: the flight after its ACK, held for the client's PTO probe (SPEC §12.3) */
	struct dust_quic_accept acc;
	uint64_t hold_ms; /* when it goes out (now_ms); 0: none held */
};

struct server {
	struct dust_server srv;
	struct dust_rng rng;
	struct dust_pad pad;
	bool pacing;
	bool parts; /* the flight as a gateway resends it after its answer was lost */
	bool pmtu;  /* quic: path MTU discovery as dustgw's (SPEC §12.4) */
	bool hold;  /* quic: the flight held after its ACK as dustgw's (SPEC §12.3) */
	struct peer peers[MAX_SESSIONS];
	int sock, qsock, tun;
	uint64_t drops[DUST_DROP_MAX];
	uint64_t intros, decoded, encoded, replies, chained, quic_intros, quic_foreign, quic_acks;
	uint64_t compact, ackz_bad; /* quic: compact packets opened; their ACKs not rebuilt */
	uint64_t quic_acks_tx;
	uint64_t pmtu_probes, pmtu_raised;
	uint64_t quic_held, quic_probed; /* flights held; of those, released by a probe */
	uint8_t buf[DG_MAX];
	/* quic: a hello's first Initial, waiting for its second (SPEC §12.2) */
	uint8_t hello[2 * 1500];
	size_t hello_len;
	struct dust_endpoint hello_ep;
};

static volatile sig_atomic_t quit;

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

static int die(const char *what)
{
	fprintf(stderr, "netns-peer: %s: %s\n", what, dust_last_error());
	return 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- invites ---------------------------------------------------------------- */

static int read_password(const char *path, char *pw, size_t cap)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(pw, (int)cap, f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	pw[strcspn(pw, "\r\n")] = '\0';
	return 0;
}

static int write_invite(const struct args *a, const struct dust_invite *inv, unsigned n,
                        const char *pw)
{
	char text[DUST_INVITE_TEXT_MAX], path[4096];
	FILE *f;

	if (dust_invite_seal(inv, pw, strlen(pw), text, sizeof(text)) < 0)
		return die("seal");
	snprintf(path, sizeof(path), "%s/invite-%u.txt", a->outdir, n);
	f = fopen(path, "w");
	if (!f)
		return die(path);
	fprintf(f, "%s\n", text);
	fclose(f);
	return 0;
}

static int cmd_invites(const struct args *a)
{
	struct dust_identity id;
	struct dust_ipaddr srv, tun;
	struct dust_store *st;
	char pw[512], netbuf[64];
	unsigned plen = 24;
	char *slash;

	snprintf(netbuf, sizeof(netbuf), "%s", a->net);
	slash = strchr(netbuf, '/');
	if (slash)
		*slash++ = '\0', plen = (unsigned)atoi(slash);
	if (dust_identity_load(&id, a->key) < 0 &&
	    (dust_identity_generate(&id) < 0 || dust_identity_save(&id, a->key) < 0))
		return die("server key");
	if (dust_ipaddr_parse(&srv, a->server) < 0 || dust_ipaddr_parse(&tun, netbuf) < 0 ||
	    read_password(a->pwfile, pw, sizeof(pw)) < 0)
		return die("arguments");
	st = dust_store_open(a->store, DUST_STORE_CREATE, &id);
	if (!st)
		return die("store");
	for (unsigned i = 0; i < a->count; i++) {
		struct dust_invite inv;
		unsigned host = a->first + i;

		tun.a[2] = (uint8_t)(host >> 8);
		tun.a[3] = (uint8_t)host;
		if (dust_invite_new(&inv, &id, &srv, (uint16_t)a->port, &tun, (uint8_t)plen,
		                    (uint64_t)(time(NULL) + a->expiry_s)) < 0)
			return die("invitation");
		/* --cover-sni makes a quic-profile invitation */
		inv.profile = a->cover_sni ? DUST_PROFILE_QUIC : DUST_PROFILE_RANDOM;
		if ((a->cover_sni && dust_invite_cover_set(&inv, a->cover_sni) < 0) ||
		    dust_store_add(st, &inv) < 0 || write_invite(a, &inv, host, pw))
			return die("invitation");
	}
	if (dust_store_save(st) < 0)
		return die("store save");
	dust_store_close(st);
	return 0;
}

/* ---- serve ------------------------------------------------------------------- */

static int tun_open(const char *name)
{
	struct ifreq ifr = {.ifr_flags = IFF_TUN | IFF_NO_PI};
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK);

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) {
		perror("netns-peer: tun");
		return -1;
	}
	return fd;
}

static int sock_open(const char *addr, unsigned port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	if (fd < 0 || inet_pton(AF_INET, addr, &sin.sin_addr) != 1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		perror("netns-peer: bind");
		return -1;
	}
	return fd;
}

static struct peer *peer_by_ep(struct server *sv, const struct dust_endpoint *ep)
{
	for (int i = 0; i < MAX_SESSIONS; i++) {
		struct peer *p = &sv->peers[i];

		if (p->live && p->sock == sv->sock && p->s.peer.port == ep->port &&
		    dust_ipaddr_equal(&p->s.peer.ip, &ep->ip))
			return p;
	}
	return NULL;
}

static struct peer *peer_by_tunnel(struct server *sv, const uint8_t *dst4)
{
	for (int i = 0; i < MAX_SESSIONS; i++)
		if (sv->peers[i].live && !memcmp(sv->peers[i].s.tunnel.a, dst4, 4))
			return &sv->peers[i];
	return NULL;
}

static void send_to(const struct peer *p, const uint8_t *pkt, size_t len)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(p->s.peer.port)};

	memcpy(&sin.sin_addr, p->s.peer.ip.a, 4);
	sendto(p->sock, pkt, len, 0, (struct sockaddr *)&sin, sizeof(sin));
}

/*
 * quic: a datagram leaves a gap drawn from caddy's after the one before,
 * at most 4/5 of the mean interval over the last millisecond (SPEC §12.4),
 * as dustgw's pacer sends it; a spin, the gaps being 4-49 us.
 */
static uint64_t pace_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pace_wait(struct server *sv, struct peer *p)
{
	uint64_t now, gap, cap;

	if (!sv->pacing || p->s.profile != DUST_PROFILE_QUIC)
		return;
	now = pace_now_ns();
	gap = dust_quic_gap_ns(DUST_ROLE_SERVER, &sv->rng);
	cap = dust_pace_cap(&p->pace_rate, now, 1000000);
	while (now < p->pace_last_ns + (gap < cap ? gap : cap))
		now = pace_now_ns();
	p->pace_last_ns = now;
}

/*
 * len bytes at pkt + dust_quic_tx_prefix + DUST_DATA_PREFIX: seal, frame,
 * send. pkt has room for DG_MAX bytes; padding stays within 1472 (quic: 1252).
 */
/* The same with pad; dgram: a quic datagram of that size (a probe over the bound), or 0. */
static void seal_send_pad(struct server *sv, struct peer *p, uint8_t *pkt, size_t len,
                          const struct dust_pad *pad, size_t dgram)
{
	size_t pre = dust_quic_tx_prefix(&p->s);
	int n = dust_data_seal(&p->s, &sv->rng, pad, (uint32_t)time(NULL), pkt + pre, len,
	                       dgram ? dgram - pre : dust_quic_tx_cap(&p->s, 1472 - pre));

	if (n <= 0)
		return;
	if (pre)
		dust_quic_short_put(&p->s, &sv->rng, pkt);
	pace_wait(sv, p);
	send_to(p, pkt, pre + (size_t)n);
}

static void seal_send(struct server *sv, struct peer *p, uint8_t *pkt, size_t len)
{
	seal_send_pad(sv, p, pkt, len, &sv->pad, 0);
}

/* pkt's len bytes sealed into a quic datagram of exactly dgram bytes. */
static void seal_send_sized(struct server *sv, struct peer *p, uint8_t *pkt, size_t len,
                            size_t dgram)
{
	struct dust_pad fixed;

	if (dust_quic_pad_exact(&fixed, &p->s, dgram, len))
		seal_send_pad(sv, p, pkt, len, &fixed, dgram);
}

/* quic: a path MTU probe when one is due, as dustgw's (SPEC §12.4) */
static void pmtu_probe(struct server *sv, struct peer *p)
{
	static uint8_t pkt[DG_MAX];
	uint8_t *msg = pkt + dust_quic_tx_prefix(&p->s) + DUST_DATA_PREFIX;
	size_t size;

	if (!sv->pmtu || p->s.profile != DUST_PROFILE_QUIC)
		return;
	size = dust_pmtu_probe(&p->s, &sv->rng, pace_now_ns() / 1000000, msg);
	if (!size)
		return;
	seal_send_sized(sv, p, pkt, DUST_PATH_MSG_BYTES, size);
	sv->pmtu_probes++;
}

/*
 * quic: the client's second flight opened. As dustgw (SPEC §12.3): caddy's
 * 36-byte Handshake ACK and its 24- or 25-byte HANDSHAKE_DONE at once, and a
 * keepalive in the second flight is answered in its session ticket's 287.
 */
static void confirmed(struct server *sv, struct peer *p, bool ka)
{
	static uint8_t dg[DG_MAX];
	size_t len;
	int n = dust_quic_hs_ack_build(&p->s, &sv->rng, dg, sizeof(dg));

	if (n > 0)
		send_to(p, dg, (size_t)n);
	if ((len = dust_quic_done_put(&p->s, &sv->rng, dg, sizeof(dg))) != 0)
		send_to(p, dg, len);
	if (!ka)
		return;
	seal_send_sized(sv, p, dg, 0, DUST_QUIC_TICKET_BYTES);
	sv->replies++;
}

/* An accepted intro's answer: the server share, then a keepalive (SPEC.md §5.1). */
static void send_answer(struct server *sv, struct peer *p)
{
	uint8_t pkt[DUST_ANSWER_BYTES + DUST_DATA_OVERHEAD + 1024];
	int n = dust_intro_answer_build(&p->s, &sv->rng, &sv->pad, (uint32_t)time(NULL), pkt,
	                                sizeof(pkt));

	if (n > 0)
		send_to(p, pkt, (size_t)n);
}

/* quic: after every second data datagram, an ACK-sized one, as dustgw sends it (SPEC §12.4) */
static void send_ack(struct server *sv, struct peer *p)
{
	uint8_t dg[64];
	size_t len;

	if (p->s.profile != DUST_PROFILE_QUIC || !dust_quic_ack_due(&p->s))
		return;
	if ((len = dust_quic_ack_put(&p->s, &sv->rng, dg, sizeof(dg))) != 0) {
		send_to(p, dg, len);
		sv->quic_acks_tx++;
	}
}

/* confirm: the client's second flight (SPEC §12.3), answered as dustgw does */
static void deliver_segs(struct server *sv, struct peer *p, uint8_t *dg, struct dust_seg *segs,
                         unsigned n, bool confirm)
{
	static uint8_t ka[DG_MAX]; /* a padded keepalive may fill the datagram */
	bool ka_sent = false;

	if (confirm && n) {
		for (unsigned i = 0; i < n && !ka_sent; i++)
			ka_sent = segs[i].len == 0;
		confirmed(sv, p, ka_sent);
	}
	for (unsigned i = 0; i < n; i++) {
		uint8_t *ip = dg + segs[i].off;

		if (segs[i].len == 0) {
			if (confirm)
				continue;        /* answered in the ticket's size */
			seal_send(sv, p, ka, 0); /* a keepalive is answered by a keepalive */
			sv->replies++;
			ka_sent = true;
		} else if (ip[0] < DUST_PATH_IP_FIRST_MIN) {
			uint8_t cookie[DUST_PATH_COOKIE_BYTES];

			if (dust_path_msg_parse(ip, segs[i].len, cookie) == DUST_PATH_RESPONSE &&
			    dust_pmtu_echo(&p->s, cookie, pace_now_ns() / 1000000))
				sv->pmtu_raised++;
			else
				sv->drops[DUST_DROP_MALFORMED]++;
		} else if (segs[i].len >= 20 && !memcmp(ip + 12, p->s.tunnel.a, 4)) {
			sv->decoded++;
			dust_ackz_note(&p->ackz, ip, segs[i].len);
			if (write(sv->tun, ip, segs[i].len) < 0)
				sv->drops[DUST_DROP_MALFORMED]++;
		} else {
			sv->drops[DUST_DROP_MALFORMED]++; /* cryptokey routing */
		}
	}
	if (n && !ka_sent)
		send_ack(sv, p);
	if (n)
		pmtu_probe(sv, p);
}

/* Returns the slot the intro lands in, or NULL (counted drop, no reply). */
/* Put an accepted session in a slot, retiring older ones of its invitation. */
static struct peer *peer_place(struct server *sv, const struct dust_endpoint *ep,
                               const struct dust_intro_info *info, const struct dust_session *s,
                               int sock)
{
	struct peer *slot = NULL;

	for (int i = 0; i < MAX_SESSIONS; i++) {
		struct peer *p = &sv->peers[i];

		/* a newer intro for the same invitation retires the old session */
		if (p->live &&
		    (p->s.invite_idx == info->invite_idx ||
		     (dust_ipaddr_equal(&p->s.peer.ip, &ep->ip) && p->s.peer.port == ep->port)))
			p->live = false;
		if (!p->live && !slot)
			slot = p;
	}
	if (!slot)
		return NULL;
	slot->s = *s;
	dust_ackz_init(&slot->ackz);
	slot->sock = sock;
	slot->live = true;
	return slot;
}

static struct peer *accept_intro(struct server *sv, const struct dust_endpoint *ep, size_t len,
                                 size_t *consumed)
{
	struct dust_intro_info info;
	struct dust_session s;
	enum dust_drop d;
	struct peer *slot;

	memset(&s, 0, sizeof(s)); /* the accept sets keys, not the profile or CID */
	d = dust_intro_accept(&sv->srv, sv->buf, len, now_ms(), ep, NULL, &s, consumed, &info);
	if (d != DUST_OK) {
		sv->drops[d]++;
		return NULL;
	}
	slot = peer_place(sv, ep, &info, &s, sv->sock);
	sodium_memzero(&s, sizeof(s));
	if (slot)
		sv->intros++;
	return slot;
}

/*
 * The flight after its ACK-only Initial: the answer (--answer parts: its
 * Initial alone, then its Handshake packet alone, as a gateway resends a
 * lost answer, SPEC §12.3), then the tail. p->acc is wiped after.
 */
static void quic_flight(struct server *sv, struct peer *p)
{
	static uint8_t out[1500];
	struct dust_quic_accept *acc = &p->acc;
	size_t pre;
	int n;

	n = dust_quic_answer_build(&p->s, acc, &sv->rng, (uint32_t)time(NULL), out, sizeof(out));
	if (n > 0 && sv->parts) {
		acc->server_pn = 2; /* the ACK took 0, the lost answer 1 */
		n = dust_quic_answer_initial_build(&p->s, acc, &sv->rng, out, sizeof(out));
		if (n > 0)
			send_to(p, out, (size_t)n);
		if (n > 0)
			n = dust_quic_answer_hs_build(&p->s, acc, out, sizeof(out));
	}
	sodium_memzero(acc, sizeof(*acc));
	if (n < 0) {
		p->live = false;
		return;
	}
	send_to(p, out, (size_t)n);
	n = dust_quic_answer_tail_build(&p->s, &sv->rng, (uint32_t)time(NULL), out, sizeof(out));
	if (n <= 0)
		return;
	/*
	 * then quic-go's small 1-RTT (SPEC §12.3), as dustgw's default shape
	 * sends it: 24 bytes after the tail, coalesced behind it in a third
	 */
	if (dust_rng_uniform(&sv->rng, 3)) {
		send_to(p, out, (size_t)n);
		n = 0;
	}
	dust_quic_short_put(&p->s, &sv->rng, out + n);
	pre = dust_quic_tx_prefix(&p->s);
	dust_rng_bytes(&sv->rng, out + n + pre, QUIC_SHORT_LEN - pre);
	send_to(p, out, (size_t)n + QUIC_SHORT_LEN);
}

/*
 * quic: a client Initial is accepted with a fresh server ephemeral (wiped
 * after use) and answered with the server's first flight; nothing is sent
 * for one that does not authenticate.
 */
static void quic_accept(struct server *sv, const struct dust_endpoint *ep, const uint8_t *dg,
                        size_t len)
{
	static uint8_t out[1500];
	struct dust_intro_info info;
	struct dust_quic_accept acc;
	struct dust_eph eph;
	struct dust_session s;
	struct peer *p;
	enum dust_drop d;
	int n;

	if (dust_eph_generate(&eph) < 0)
		return;
	d = dust_quic_intro_accept(&sv->srv, &sv->rng, dg, len, now_ms(), ep, &eph, &s, &acc,
	                           &info);
	sodium_memzero(&eph, sizeof(eph));
	if (d != DUST_OK) {
		sv->drops[d]++;
		return;
	}
	p = peer_place(sv, ep, &info, &s, sv->qsock);
	sodium_memzero(&s, sizeof(s));
	if (!p)
		return;
	/* the flight as the cover server's (SPEC §12.3): an ACK-only Initial, the answer, a tail */
	n = dust_quic_answer_ack_build(&p->s, &acc, &sv->rng, out, sizeof(out));
	if (n > 0)
		send_to(p, out, (size_t)n);
	sv->quic_intros++;
	p->acc = acc;
	sodium_memzero(&acc, sizeof(acc));
	if (sv->hold) {
		/* as dustgw: the rest waits for the client's PTO probe, or the longest wait */
		p->hold_ms = now_ms() + dust_quic_answer_hold_max_ms();
		sv->quic_held++;
		return;
	}
	quic_flight(sv, p);
}

/*
 * A held flight's Initial came again (SPEC §12.3): the client's PTO probe,
 * the hello's second Initial once more. Answered as caddy answers the
 * Initial that lets it answer, a drawn delay later. The answer's ACK still
 * names the hello's two Initials: its size was fixed at accept.
 */
static bool quic_probe(struct server *sv, const struct dust_endpoint *ep, size_t len)
{
	for (int i = 0; i < MAX_SESSIONS; i++) {
		struct peer *p = &sv->peers[i];
		uint64_t at;

		if (!p->live || !p->hold_ms || p->s.peer.port != ep->port ||
		    !dust_ipaddr_equal(&p->s.peer.ip, &ep->ip) || len < 6u + p->acc.odcid_len ||
		    sv->buf[5] != p->acc.odcid_len ||
		    memcmp(sv->buf + 6, p->acc.odcid, p->acc.odcid_len) != 0)
			continue;
		at = now_ms() + dust_quic_answer_delay_ms(&sv->rng);
		if (at < p->hold_ms) {
			p->hold_ms = at;
			sv->quic_probed++;
		}
		return true;
	}
	return false;
}

/* Held flights whose time came. Returns ms until the next, at most cap. */
static int quic_held_run(struct server *sv, int cap)
{
	uint64_t now = now_ms();
	int wait = cap;

	for (int i = 0; i < MAX_SESSIONS; i++) {
		struct peer *p = &sv->peers[i];

		if (!p->live || !p->hold_ms)
			continue;
		if (p->hold_ms <= now) {
			p->hold_ms = 0;
			quic_flight(sv, p);
		} else if (p->hold_ms - now < (uint64_t)wait) {
			wait = (int)(p->hold_ms - now);
		}
	}
	return wait;
}

/*
 * The hello's two Initials (SPEC §12.2): the first from an endpoint waits
 * (one at a time) until the second with the same DCID comes; the pair is
 * then accepted back to back.
 */
static void hello_initial(struct server *sv, const struct dust_endpoint *ep, size_t len)
{
	const uint8_t *h = sv->hello;
	bool second = sv->hello_len && sv->hello_ep.port == ep->port &&
	              dust_ipaddr_equal(&sv->hello_ep.ip, &ep->ip) && len > 6 &&
	              sv->buf[5] == h[5] && sv->buf[5] <= 20 && len >= 6u + sv->buf[5] &&
	              memcmp(sv->buf + 6, h + 6, h[5]) == 0;

	if (len > 1500)
		return;
	if (second) {
		memcpy(sv->hello + sv->hello_len, sv->buf, len);
		quic_accept(sv, ep, sv->hello, sv->hello_len + len);
		sv->hello_len = 0;
		return;
	}
	memcpy(sv->hello, sv->buf, len);
	sv->hello_len = len;
	sv->hello_ep = *ep;
}

/*
 * The session whose CID dg names: a short header (*kind NONE), or its
 * client's second flight (SPEC §12.3, *kind says which datagram); *off:
 * where its Dust data starts.
 */
static struct peer *peer_by_cid(struct server *sv, size_t len, size_t *off,
                                enum dust_quic_confirm_kind *kind)
{
	for (int i = 0; i < MAX_SESSIONS; i++) {
		struct peer *p = &sv->peers[i];

		if (!p->live || p->sock != sv->qsock)
			continue;
		*kind = DUST_QUIC_CONFIRM_NONE;
		if (dust_quic_short_match(&p->s, sv->buf, len) ||
		    dust_quic_ack_match(&p->s, sv->buf, len)) {
			*off = dust_quic_rx_prefix(&p->s);
			return p;
		}
		if ((*kind = dust_quic_confirm_kind(&p->s, sv->buf, len, off)) !=
		    DUST_QUIC_CONFIRM_NONE)
			return p;
	}
	return NULL;
}

/*
 * quic: a datagram under any Dust packet that opens as a compact packet
 * (SPEC §6.5): its compressed ACK rebuilt (ackz.h) and written to the TUN.
 */
static bool compact_deliver(struct server *sv, struct peer *p, const uint8_t *pkt, size_t len)
{
	uint8_t pt[DUST_COMPACT_PT_MAX], ip[DUST_ACKZ_IP_MAX];
	size_t ptlen;
	int n;

	if (dust_compact_open(&p->s, (uint32_t)time(NULL), pkt, len, pt, &ptlen) != DUST_OK)
		return false;
	sv->compact++;
	n = dust_ackz_expand(&p->ackz, pt, ptlen, ip, sizeof(ip));
	if (n < 0)
		sv->ackz_bad++;
	else if (write(sv->tun, ip, (size_t)n) < 0)
		sv->drops[DUST_DROP_MALFORMED]++;
	return true;
}

/*
 * quic: a session's short headers and second flight find it by DCID (its
 * padded Initial+Handshake ACK datagram holds nothing for Dust); other
 * Initials are intros.
 */
static void on_quic_datagram(struct server *sv, const struct sockaddr_in *from, size_t len)
{
	struct dust_endpoint ep = {.ip.family = 4, .port = ntohs(from->sin_port)};
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_quic_confirm_kind kind = DUST_QUIC_CONFIRM_NONE;
	enum dust_drop drop = DUST_OK;
	struct peer *p;
	size_t off = 0;
	unsigned n;

	memcpy(ep.ip.a, &from->sin_addr, 4);
	p = peer_by_cid(sv, len, &off, &kind);
	if (!p && dust_quic_is_initial(sv->buf, len)) {
		if (!quic_probe(sv, &ep, len))
			hello_initial(sv, &ep, len);
		return;
	}
	if (!p || kind == DUST_QUIC_CONFIRM_BAD) {
		sv->quic_foreign++;
		return;
	}
	if (kind == DUST_QUIC_CONFIRM_ACK)
		return;
	if (kind == DUST_QUIC_CONFIRM_NONE && len < off + DUST_DATA_MIN_BYTES) {
		if (!compact_deliver(sv, p, sv->buf + off, len - off))
			sv->quic_acks++; /* the client's ACK-sized datagram: nothing in it */
		return;
	}
	n = dust_datagram_open(&p->s, &sv->srv.lim, (uint32_t)time(NULL), sv->buf, len, off, segs,
	                       DUST_CHAIN_MAX, &drop);
	if (drop != DUST_OK)
		sv->drops[drop]++;
	deliver_segs(sv, p, sv->buf, segs, n, kind == DUST_QUIC_CONFIRM_DATA);
}

static void on_datagram(struct server *sv, const struct sockaddr_in *from, size_t len)
{
	struct dust_endpoint ep = {.ip.family = 4, .port = ntohs(from->sin_port)};
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop drop = DUST_OK;
	struct peer *p;
	size_t off = 0;
	unsigned n = 0;

	memcpy(ep.ip.a, &from->sin_addr, 4);
	p = peer_by_ep(sv, &ep);
	if (p)
		n = dust_datagram_open(&p->s, &sv->srv.lim, (uint32_t)time(NULL), sv->buf, len, 0,
		                       segs, DUST_CHAIN_MAX, &drop);
	if (!p || (n == 0 && (drop == DUST_DROP_AUTH || drop == DUST_DROP_TRUNCATED) &&
	           len >= DUST_INTRO_MIN_BYTES)) {
		p = accept_intro(sv, &ep, len, &off);
		if (!p)
			return;
		send_answer(sv, p);
		n = off < len ? dust_datagram_open(&p->s, &sv->srv.lim, (uint32_t)time(NULL),
		                                   sv->buf, len, off, segs, DUST_CHAIN_MAX, &drop)
		              : 0;
		sv->chained += n; /* data that rode in the intro's datagram */
	}
	if (drop != DUST_OK)
		sv->drops[drop]++;
	deliver_segs(sv, p, sv->buf, segs, n, false);
}

static void on_tun(struct server *sv, size_t len)
{
	static uint8_t pkt[DG_MAX];
	struct peer *p;

	if (len < 20 || sv->buf[0] >> 4 != 4)
		return;
	p = peer_by_tunnel(sv, sv->buf + 16);
	if (!p)
		return;
	memcpy(pkt + dust_quic_tx_prefix(&p->s) + DUST_DATA_PREFIX, sv->buf, len);
	seal_send(sv, p, pkt, len);
	sv->encoded++;
}

static void serve_loop(struct server *sv)
{
	struct pollfd pfd[3] = {{.fd = sv->sock, .events = POLLIN},
	                        {.fd = sv->tun, .events = POLLIN},
	                        {.fd = sv->qsock, .events = POLLIN}};

	while (!quit) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n;

		dust_store_tick(sv->srv.store, (uint64_t)time(NULL));
		if (poll(pfd, sv->qsock >= 0 ? 3 : 2, quic_held_run(sv, 500)) <= 0)
			continue;
		while ((n = recvfrom(sv->sock, sv->buf, sizeof(sv->buf), 0,
		                     (struct sockaddr *)&from, &fl)) > 0)
			on_datagram(sv, &from, (size_t)n);
		while (sv->qsock >= 0 && (n = recvfrom(sv->qsock, sv->buf, sizeof(sv->buf), 0,
		                                       (struct sockaddr *)&from, &fl)) > 0)
			on_quic_datagram(sv, &from, (size_t)n);
		while ((n = read(sv->tun, sv->buf, sizeof(sv->buf))) > 0)
			on_tun(sv, (size_t)n);
	}
}

static int cmd_serve(const struct args *a)
{
	static struct server sv;
	struct sigaction sa = {.sa_handler = on_signal};

	if (dust_identity_load(&sv.srv.id, a->key) < 0)
		return die("server key");
	sv.srv.store = dust_store_open(a->store, 0, &sv.srv.id);
	if (!sv.srv.store)
		return die("store");
	dust_limits_default(&sv.srv.lim);
	dust_rng_init(&sv.rng);
	dust_pad_default(&sv.pad);
	sv.pad.model = !a->uniform_sizes;
	sv.pacing = !a->no_pacing;
	sv.parts = a->parts;
	sv.pmtu = !a->no_pmtu;
	sv.hold = !a->no_hold;
	sv.sock = sock_open(a->server, a->port);
	sv.qsock = a->quic_port ? sock_open(a->server, a->quic_port) : -1;
	sv.tun = tun_open(a->tun);
	if (sv.sock < 0 || sv.tun < 0 || (a->quic_port && sv.qsock < 0))
		return 1;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(stderr, "netns-peer: serving %s:%u (quic port %u)\n", a->server, a->port,
	        a->quic_port);
	serve_loop(&sv);
	printf(
	    "netns-peer summary: intros=%llu chained=%llu decoded=%llu encoded=%llu "
	    "keepalive_replies=%llu quic_intros=%llu quic_foreign=%llu quic_acks=%llu "
	    "quic_acks_tx=%llu quic_compact=%llu ackz_bad=%llu pmtu_probes=%llu pmtu_raised=%llu "
	    "quic_held=%llu quic_probed=%llu",
	    (unsigned long long)sv.intros, (unsigned long long)sv.chained,
	    (unsigned long long)sv.decoded, (unsigned long long)sv.encoded,
	    (unsigned long long)sv.replies, (unsigned long long)sv.quic_intros,
	    (unsigned long long)sv.quic_foreign, (unsigned long long)sv.quic_acks,
	    (unsigned long long)sv.quic_acks_tx, (unsigned long long)sv.compact,
	    (unsigned long long)sv.ackz_bad, (unsigned long long)sv.pmtu_probes,
	    (unsigned long long)sv.pmtu_raised, (unsigned long long)sv.quic_held,
	    (unsigned long long)sv.quic_probed);
	for (int d = 1; d < DUST_DROP_MAX; d++)
		printf(" %s=%llu", dust_drop_name(d), (unsigned long long)sv.drops[d]);
	putchar('\n');
	dust_store_close(sv.srv.store);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"key", 1, NULL, 'k'},        {"store", 1, NULL, 's'},
	    {"server", 1, NULL, 'a'},     {"port", 1, NULL, 'p'},
	    {"tunnel-net", 1, NULL, 'n'}, {"first", 1, NULL, 'f'},
	    {"count", 1, NULL, 'c'},      {"password-file", 1, NULL, 'w'},
	    {"out-dir", 1, NULL, 'o'},    {"expiry-s", 1, NULL, 'e'},
	    {"tun", 1, NULL, 't'},        {"quic-port", 1, NULL, 'q'},
	    {"cover-sni", 1, NULL, 'C'},  {"sizes", 1, NULL, 'S'},
	    {"pacing", 1, NULL, 'P'},     {"answer", 1, NULL, 'A'},
	    {"pmtu", 1, NULL, 'M'},       {"answer-hold", 1, NULL, 'H'},
	    {NULL, 0, NULL, 0},
	};
	struct args a = {.port = 4500, .first = 2, .count = 1, .expiry_s = 86400, .tun = "srv0"};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'k':
			a.key = optarg;
			break;
		case 's':
			a.store = optarg;
			break;
		case 'a':
			a.server = optarg;
			break;
		case 'p':
			a.port = (unsigned)atoi(optarg);
			break;
		case 'n':
			a.net = optarg;
			break;
		case 'f':
			a.first = (unsigned)atoi(optarg);
			break;
		case 'c':
			a.count = (unsigned)atoi(optarg);
			break;
		case 'w':
			a.pwfile = optarg;
			break;
		case 'o':
			a.outdir = optarg;
			break;
		case 'e':
			a.expiry_s = atol(optarg);
			break;
		case 't':
			a.tun = optarg;
			break;
		case 'q':
			a.quic_port = (unsigned)atoi(optarg);
			break;
		case 'C':
			a.cover_sni = optarg;
			break;
		case 'S':
			a.uniform_sizes = !strcmp(optarg, "padding");
			break;
		case 'A':
			if (strcmp(optarg, "whole") && strcmp(optarg, "parts")) {
				fprintf(stderr, "netns-peer: --answer: whole or parts\n");
				return 2;
			}
			a.parts = !strcmp(optarg, "parts");
			break;
		case 'P':
			a.no_pacing = !strcmp(optarg, "off");
			break;
		case 'M':
			a.no_pmtu = !strcmp(optarg, "off");
			break;
		case 'H':
			a.no_hold = !strcmp(optarg, "off");
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc || dust_init() < 0 || !a.key || !a.store || !a.server) {
		fprintf(stderr,
		        "usage: netns-peer invites|serve --key K --store S --server A ...\n");
		return 2;
	}
	if (!strcmp(argv[optind], "invites") && a.net && a.pwfile && a.outdir)
		return cmd_invites(&a);
	if (!strcmp(argv[optind], "serve"))
		return cmd_serve(&a);
	fprintf(stderr, "netns-peer: unknown command or missing options\n");
	return 2;
}
