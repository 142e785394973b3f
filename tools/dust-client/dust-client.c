/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-client: the Linux end of a Dust tunnel. Opens an invitation, creates
 * a TUN interface with the invitation's tunnel address and carries IP
 * packets to and from the gateway over one ordinary UDP socket, in the wire
 * profile the invitation names: random (v2) or quic (SPEC §12: a QUIC v1
 * Initial as the intro, then 1-RTT short-header packets).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <net/route.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "dust.h"
#include "inner.h"
#include "password.h"
#include "policy.h"
#include "gaps.h"
#include "quic.h"

enum {
	EXIT_USAGE = 1,      /* bad options, or local setup failed */
	EXIT_NO_ANSWER = 2,  /* the server never answered an intro */
	EXIT_BAD_INVITE = 3, /* wrong password, not an invitation, or too wide a tunnel */
	EXIT_EXPIRED = 4,    /* invitation past its expiry before first use */
	MAX_ROUTES = 16,
	DG_MAX = 65535,
	TUN_BURST = 64, /* packets read per wake-up, so the socket gets its turn */
	/*
	 * ACK thinning (SPEC §9.2): pure TCP ACKs held within one TUN burst,
	 * for this many connections at once; a held one stands for at most
	 * DUST_INNER_THIN_MAX earlier ones (with the stack's delayed ACK, one
	 * upstream ACK per 2 x (8 + 1) segments at most, as QUIC's ACK decimation
	 * sends one per ten); one is at most THIN_PKT bytes (IPv6 + TCP with
	 * timestamps: 72).
	 */
	THIN_HELD = 8,
	THIN_PKT = 128,
	THIN_HOLD_MS = 0,      /* --ack-hold's default */
	THIN_HOLD_MAX_MS = 25, /* QUIC's default max_ack_delay (RFC 9000 §18.2) */
	INTRO_BACKOFF_MAX_MS = 16000,
	IDLE_S = 30, /* --idle's default: Chromium's and quic-go's idle timeout */
	/*
	 * quic: Chromium's handshake timers (SPEC §12.2). The hello goes again,
	 * same DCID, on the PTO: 300 ms before any RTT sample (RFC 9002 §6.2.1:
	 * initial RTT + 4 x its half, Chromium's initial RTT being 100 ms,
	 * kInitialRttMs in its rtt_stats.cc), doubling: +0.3, +0.9, +2.1 s, as
	 * issue 18 measured Chromium 156; at +4 s (its CONNECTION_CLOSE there) a
	 * new connection: new DCID, new keys, new source port.
	 */
	QUIC_PTO_MS = 300,
	PACE_WINDOW_NS = 1000000, /* pace_wait's rate and saturation windows */
	QUIC_RESENDS = 3,
	QUIC_CONN_MS = 4000,
};

/* Drops the client itself decides, beside the library's enum dust_drop. */
enum local_drop {
	LD_NOT_IP,      /* TUN packet that is neither IPv4 nor IPv6 */
	LD_FOREIGN_SRC, /* source is not our tunnel address: the server would drop it */
	LD_TOO_BIG,     /* cannot fit in one datagram */
	LD_NO_SESSION,  /* held while connecting and replaced by a newer one */
	LD_TUN_WRITE,   /* the kernel refused a decoded packet */
	LD_SEND,        /* sendto failed */
	LD_BAD_INNER,   /* decoded cleartext that is not an IP packet */
	LD_FOREIGN_DST, /* decoded packet not for our tunnel address: not written */
	LD_QUIC_HEADER, /* quic: not a short header with our connection ID */
	LD_QUIC_SMALL,  /* quic: a short header under a Dust packet (the flight's 1-RTT, ACKs) */
	LD_QUIC_HS_ACK, /* quic: the server's Handshake ACK after our second flight */
	LD_MAX
};

static const char *const local_drop_names[LD_MAX] = {
    [LD_NOT_IP] = "not_ip",           [LD_FOREIGN_SRC] = "foreign_src",
    [LD_TOO_BIG] = "too_big",         [LD_NO_SESSION] = "no_session",
    [LD_TUN_WRITE] = "tun_write",     [LD_SEND] = "send",
    [LD_BAD_INNER] = "bad_inner",     [LD_FOREIGN_DST] = "foreign_dst",
    [LD_QUIC_HEADER] = "quic_header", [LD_QUIC_SMALL] = "quic_small",
    [LD_QUIC_HS_ACK] = "quic_hs_ack",
};

struct opts {
	const char *invite_file;
	const char *invite_text;
	const char *password_file;
	const char *key_path;
	const char *ifname;
	const char *routes[MAX_ROUTES];
	unsigned nroutes;
	unsigned mtu;
	unsigned outer_mtu;
	unsigned tries;
	unsigned keepalive_s;
	unsigned dead_s;
	bool stats;
	bool verbose;
	bool allow_wide_route;
	bool uniform_sizes;   /* --sizes padding */
	bool no_pacing;       /* --pacing off */
	bool no_acks;         /* --acks off */
	bool no_ack_thin;     /* --ack-thin off */
	bool no_ackz;         /* --ack-compress off */
	unsigned ack_hold_ms; /* --ack-hold: how long a pure ACK may wait for a newer one */
	bool on_demand;       /* --connect on-demand: the first packet sends the first intro */
	unsigned idle_s;      /* --idle: on demand, a session idle this long ends; 0 = never */
	bool idle_given;
};

/* next_intro_ms of a --connect on-demand client that no packet has started yet */
#define INTRO_ON_DEMAND UINT64_MAX

struct stats {
	uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes;
	uint64_t intros, keepalive_tx, keepalive_rx, reconnects;
	uint64_t hello_resends; /* quic: the hello again, same DCID, on the PTO */
	uint64_t hello_closes;  /* quic: a hello given up with a CONNECTION_CLOSE at +4 s */
	uint64_t path_echo;     /* challenges answered (SPEC §9.1) */
	uint64_t icmp_refused;  /* a send that reported an earlier datagram's ICMP error */
	uint64_t acks_tx;       /* quic: ACK-sized datagrams sent (quic_ack_due) */
	uint64_t acks_thinned;  /* inner TCP ACKs a later one of a TUN burst superseded */
	uint64_t acks_compact;  /* quic: inner TCP ACKs sent compressed in compact packets */
	uint64_t pace_full;     /* quic: pacing windows left unpaced, the tunnel saturated */
	uint64_t idle_ends;     /* --connect on-demand: sessions ended after --idle seconds */
	uint64_t drop[DUST_DROP_MAX];
	uint64_t local[LD_MAX];
};

struct client {
	const struct opts *o;
	struct dust_invite inv;
	struct dust_identity id;
	struct dust_rng rng; /* single-threaded: this is the thread's generator */
	struct dust_pad pad;
	struct dust_limits lim;
	struct dust_session cur;  /* session of the newest intro */
	struct dust_session prev; /* the one before, until the server picks one */
	bool have_prev;
	bool prev_newer; /* up through an older intro: prev is the newest, still awaited */
	/* quic: the newest Initial and the one before, until the server answers */
	struct dust_quic_client qc, qc_prev;
	struct dust_quic_confirm cf; /* the answered hello's, for the second flight */
	bool up;                     /* an authenticated packet has arrived for cur */
	bool ever_up;                /* we were connected once: losing the server is not fatal */
	bool fatal;                  /* an intro could not be built: stop with an error */
	int tun;
	int sock;
	unsigned mtu;  /* the TUN's: --mtu, or the profile's default (tun_mtu) */
	size_t dg_max; /* largest UDP payload that avoids outer fragmentation */
	unsigned attempts;
	uint64_t next_intro_ms, intro_gap_ms;
	unsigned resends;        /* quic: of the current hello */
	uint64_t next_resend_ms; /* quic: its PTO */
	uint64_t hello_us;       /* quic: when it went (monotonic) */
	uint64_t close_ms;       /* quic: when it is given up with a close; 0: closed or none */
	uint64_t last_rx_ms, last_tx_ms, last_ka_ms;
	/* --idle: when a packet last went either way, and the count it was read from */
	uint64_t last_inner_ms, inner_seen;
	uint64_t pace_last_ns;           /* quic: the last data datagram's departure (pace_wait) */
	struct dust_pace_rate pace_rate; /* quic: the client's own rate (pace_wait) */
	uint64_t pace_win_ns;            /* quic: the current saturation window's start */
	uint64_t idle_ns;                /* quic: time blocked in poll in that window */
	bool pace_full;                  /* quic: the last window had no idle time */
	uint8_t held[DG_MAX];            /* last TUN packet read while connecting */
	size_t held_len;
	char server[80];
	char ifname[IFNAMSIZ];
	struct stats st;
	uint8_t txbuf[DG_MAX + DUST_INTRO_MIN_BYTES + DUST_INTRO_PAD_MAX];
	uint8_t hello[DUST_QUIC_HELLO_BYTES]; /* quic: the hello's two Initials */
	/* quic: a first flight waiting for its tail: its Initial (the answer, or one alone) ... */
	uint8_t flight[1500];
	size_t flight_len;
	/* ... and its Handshake packet (the answer, or one alone: a PTO resend) */
	uint8_t flight_hs[1500];
	size_t flight_hs_len;
	uint8_t flight_ack[64]; /* quic: the flight's ACK-only Initial, for our ACK of it */
	size_t flight_ack_len;
	uint8_t rxbuf[DG_MAX];
	uint8_t rxcopy[DG_MAX];
	/* pure TCP ACKs held within the current TUN burst, oldest first (SPEC §9.2) */
	struct thin_slot {
		struct dust_inner_tcp t;
		unsigned stands_for; /* earlier ACKs it superseded */
		size_t len;
		uint8_t p[THIN_PKT];
	} thin[THIN_HELD];
	unsigned nthin;
	uint64_t thin_due_us;  /* when the oldest held ACK goes (monotonic) */
	struct dust_ackz ackz; /* quic: the inner TCP connections as sent (ackz.h) */
	bool compact_sent;     /* quic: a compact packet went since an ACK-sized one was due */
};

static volatile sig_atomic_t quit;
static bool verbose;

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...)
{
	va_list ap;

	fputs("dust-client: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define debug(...)                                                                                 \
	do {                                                                                       \
		if (verbose)                                                                       \
			logmsg(__VA_ARGS__);                                                       \
	} while (0)

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static uint64_t unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void on_signal(int sig)
{
	(void)sig;
	quit = 1;
}

/* ---- Options ---------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: dust-client (--invite FILE | --invite-text TEXT) --key FILE [options]\n"
	        "\n"
	        "Connect to a Dust gateway with an invitation and carry IP packets through\n"
	        "a TUN interface. Needs CAP_NET_ADMIN (root) for the interface.\n"
	        "\n"
	        "  --invite FILE         invitation text from FILE ('-' = standard input)\n"
	        "  --invite-text TEXT    invitation text given directly\n"
	        "  --password-file FILE  invitation password: first line of FILE; otherwise\n"
	        "                        $DUST_PASSWORD, otherwise a prompt on the terminal\n"
	        "  --key FILE            client long-term key; created (mode 0600) if missing.\n"
	        "                        The first connection binds the invitation to this key:\n"
	        "                        keep it, the invitation works with no other.\n"
	        "                        FILE.used notes (hashed) the invitations it used: an\n"
	        "                        invitation expires only for a first use.\n"
	        "  --ifname NAME         TUN interface name (default dust0)\n"
	        "  --route CIDR          route CIDR through the tunnel (repeatable, max %d)\n"
	        "  --allow-wide-route    accept an invitation whose tunnel prefix is shorter\n"
	        "                        than /%d (IPv4) or /%d (IPv6); without it such an\n"
	        "                        invitation is refused: its network would be routed\n"
	        "                        through the tunnel (a /1 takes half the Internet, an\n"
	        "                        IPv6 /0 the default route)\n"
	        "  --mtu N               TUN MTU (default 1400); at most outer MTU - 28 (IPv4)\n"
	        "                        or - 48 (IPv6) - 32 bytes of Dust overhead. The quic\n"
	        "                        profile sends no datagram over 1250 bytes: default\n"
	        "                        and most 1197 (an IPv6 tunnel: 1280, IPv6's least)\n"
	        "  --outer-mtu N         path MTU toward the server (default 1500); datagrams\n"
	        "                        never exceed it, so the gateway sees no fragments;\n"
	        "                        the quic profile needs room for 1250-byte Initials\n"
	        "  --tries N             intros sent (one a second) before giving up on the\n"
	        "                        first connection (default 10); quic: connections\n"
	        "                        tried, each a hello and its retransmissions over\n"
	        "                        4 s, from a new source port each\n"
	        "  --keepalive S         keepalive after S idle seconds (default 10)\n"
	        "  --dead-after S        server silent for S seconds: introduce again\n"
	        "                        (default 30; on demand, with the next packet);\n"
	        "                        retried with backoff until it answers\n"
	        "  --sizes cover|padding quic profile: data datagrams take the cover's own\n"
	        "                        sizes (default), or uniform padding as the random\n"
	        "                        profile's (SPEC §12.4)\n"
	        "  --pacing cover|off    quic profile: data datagrams of a burst leave at\n"
	        "                        gaps drawn from Chromium's (default), or back to\n"
	        "                        back (SPEC §12.4)\n"
	        "  --acks cover|off      quic profile: after every second data datagram\n"
	        "                        from the server, a 27..36-byte datagram that\n"
	        "                        carries nothing, sized as Chromium's ACK-only\n"
	        "                        packets (default), or none (SPEC §12.4); a\n"
	        "                        compact packet sent since stands in for it\n"
	        "  --ack-thin on|off     of the pure TCP ACKs of one connection read from\n"
	        "                        the TUN in one burst, send only the newest (at\n"
	        "                        most 9 become one; duplicate ACKs and SACKs all\n"
	        "                        go): fewer, ACK-like upstream datagrams\n"
	        "                        (default on; SPEC §9.2)\n"
	        "  --ack-compress on|off quic profile: a pure inner TCP ACK (IPv4) of a\n"
	        "                        connection already sent goes as 5..9 bytes of\n"
	        "                        changes in a compact packet, a datagram of\n"
	        "                        27..36 bytes as Chromium's ACK-only packets\n"
	        "                        (default on; SPEC §6.5)\n"
	        "  --ack-hold MS         a pure ACK waits up to MS ms (0..25) for a newer\n"
	        "                        one to take its place, read in later bursts too\n"
	        "                        (default 0: the burst's end)\n"
	        "  --connect now|on-demand  introduce at start (default), or only when the\n"
	        "                        first packet for the tunnel arrives on the TUN: it\n"
	        "                        goes with the session's first data, and the flow\n"
	        "                        starts with traffic, as a browser's connection\n"
	        "                        does (SPEC §12.6); --tries counts from then\n"
	        "  --idle S              with --connect on-demand: a session that carried no\n"
	        "                        packet either way for S seconds ends, silently\n"
	        "                        (RFC 9000's idle timeout), and the next packet\n"
	        "                        starts a new one, from a new port in the quic\n"
	        "                        profile (default 30, Chromium's and quic-go's\n"
	        "                        idle timeout; 0 = never)\n"
	        "  --stats               print a statistics line on exit\n"
	        "  -v, --verbose         log each intro and keepalive\n"
	        "  -h, --help            this text\n"
	        "\n"
	        "Exit status: 0 stopped by SIGINT/SIGTERM; 1 usage or setup error; 2 server\n"
	        "unreachable or no answer to the first intros; 3 wrong password or not an\n"
	        "invitation, or a tunnel prefix refused (--allow-wide-route); 4 invitation\n"
	        "expired before its first use.\n",
	        MAX_ROUTES, CLIENT_PREFIX_MIN4, CLIENT_PREFIX_MIN6);
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

enum {
	OPT_INVITE = 256,
	OPT_INVITE_TEXT,
	OPT_PASSWORD_FILE,
	OPT_KEY,
	OPT_IFNAME,
	OPT_ROUTE,
	OPT_MTU,
	OPT_OUTER_MTU,
	OPT_TRIES,
	OPT_KEEPALIVE,
	OPT_DEAD,
	OPT_STATS,
	OPT_ALLOW_WIDE_ROUTE,
	OPT_SIZES,
	OPT_PACING,
	OPT_ACKS,
	OPT_ACK_THIN,
	OPT_ACK_HOLD,
	OPT_ACK_COMPRESS,
	OPT_CONNECT,
	OPT_IDLE,
};

static const struct option long_opts[] = {
    {"invite", required_argument, NULL, OPT_INVITE},
    {"invite-text", required_argument, NULL, OPT_INVITE_TEXT},
    {"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
    {"key", required_argument, NULL, OPT_KEY},
    {"ifname", required_argument, NULL, OPT_IFNAME},
    {"route", required_argument, NULL, OPT_ROUTE},
    {"mtu", required_argument, NULL, OPT_MTU},
    {"outer-mtu", required_argument, NULL, OPT_OUTER_MTU},
    {"tries", required_argument, NULL, OPT_TRIES},
    {"keepalive", required_argument, NULL, OPT_KEEPALIVE},
    {"dead-after", required_argument, NULL, OPT_DEAD},
    {"stats", no_argument, NULL, OPT_STATS},
    {"allow-wide-route", no_argument, NULL, OPT_ALLOW_WIDE_ROUTE},
    {"sizes", required_argument, NULL, OPT_SIZES},
    {"pacing", required_argument, NULL, OPT_PACING},
    {"acks", required_argument, NULL, OPT_ACKS},
    {"ack-thin", required_argument, NULL, OPT_ACK_THIN},
    {"ack-compress", required_argument, NULL, OPT_ACK_COMPRESS},
    {"ack-hold", required_argument, NULL, OPT_ACK_HOLD},
    {"connect", required_argument, NULL, OPT_CONNECT},
    {"idle", required_argument, NULL, OPT_IDLE},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_number_opt(int c, const char *arg, struct opts *o)
{
	switch (c) {
	case OPT_MTU:
		return parse_uint(arg, 576, 65000, &o->mtu);
	case OPT_OUTER_MTU:
		return parse_uint(arg, 576, 65535, &o->outer_mtu);
	case OPT_TRIES:
		return parse_uint(arg, 1, 1000000, &o->tries);
	case OPT_KEEPALIVE:
		return parse_uint(arg, 1, 3600, &o->keepalive_s);
	case OPT_ACK_HOLD:
		return parse_uint(arg, 0, THIN_HOLD_MAX_MS, &o->ack_hold_ms);
	case OPT_IDLE:
		o->idle_given = true;
		return parse_uint(arg, 0, 86400, &o->idle_s);
	default:
		return parse_uint(arg, 2, 86400, &o->dead_s);
	}
}

static int parse_one(int c, const char *arg, struct opts *o)
{
	switch (c) {
	case OPT_INVITE:
		o->invite_file = arg;
		return 0;
	case OPT_INVITE_TEXT:
		o->invite_text = arg;
		return 0;
	case OPT_PASSWORD_FILE:
		o->password_file = arg;
		return 0;
	case OPT_KEY:
		o->key_path = arg;
		return 0;
	case OPT_IFNAME:
		o->ifname = arg;
		return strlen(arg) < IFNAMSIZ ? 0 : -1;
	case OPT_ROUTE:
		if (o->nroutes == MAX_ROUTES)
			return -1;
		o->routes[o->nroutes++] = arg;
		return 0;
	case OPT_STATS:
		o->stats = true;
		return 0;
	case OPT_ALLOW_WIDE_ROUTE:
		o->allow_wide_route = true;
		return 0;
	case OPT_SIZES:
		if (strcmp(arg, "cover") && strcmp(arg, "padding"))
			return -1;
		o->uniform_sizes = !strcmp(arg, "padding");
		return 0;
	case OPT_PACING:
		if (strcmp(arg, "cover") && strcmp(arg, "off"))
			return -1;
		o->no_pacing = !strcmp(arg, "off");
		return 0;
	case OPT_ACKS:
		if (strcmp(arg, "cover") && strcmp(arg, "off"))
			return -1;
		o->no_acks = !strcmp(arg, "off");
		return 0;
	case OPT_ACK_THIN:
		if (strcmp(arg, "on") && strcmp(arg, "off"))
			return -1;
		o->no_ack_thin = !strcmp(arg, "off");
		return 0;
	case OPT_ACK_COMPRESS:
		if (strcmp(arg, "on") && strcmp(arg, "off"))
			return -1;
		o->no_ackz = !strcmp(arg, "off");
		return 0;
	case OPT_CONNECT:
		if (strcmp(arg, "now") && strcmp(arg, "on-demand"))
			return -1;
		o->on_demand = !strcmp(arg, "on-demand");
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	default:
		return parse_number_opt(c, arg, o);
	}
}

/* 0 to run, 1 to exit 0 (help), -1 on a usage error. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	int c, idx = -1;

	*o = (struct opts){.ifname = "dust0",
	                   .mtu = 0, /* the profile's default: tun_mtu() */
	                   .outer_mtu = 1500,
	                   .tries = 10,
	                   .keepalive_s = 10,
	                   .ack_hold_ms = THIN_HOLD_MS,
	                   .idle_s = IDLE_S,
	                   .dead_s = 30};
	while ((c = getopt_long(argc, argv, "vh", long_opts, &idx)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == '?' || parse_one(c, optarg, o) < 0) {
			if (c != '?')
				logmsg("bad value '%s' for option --%s", optarg ? optarg : "",
				       idx >= 0 ? long_opts[idx].name : "?");
			return -1;
		}
		idx = -1;
	}
	if (optind < argc || !o->key_path || !!o->invite_file == !!o->invite_text) {
		logmsg("need exactly one of --invite/--invite-text, and --key (see --help)");
		return -1;
	}
	if (o->idle_given && !o->on_demand) {
		logmsg("--idle needs --connect on-demand: a session that ends must have a packet "
		       "to start the next");
		return -1;
	}
	return 0;
}

/* ---- Secrets in files -------------------------------------------------------------- */

static ssize_t read_all(int fd, char *buf, size_t cap)
{
	size_t n = 0;

	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	return (ssize_t)n;
}

/* Read at most cap-1 bytes of path ("-" = stdin) into buf, NUL-terminated. */
static int read_text_file(const char *path, char *buf, size_t cap)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read_all(fd, buf, cap - 1);
	if (fd != 0)
		close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	return 0;
}

static void chomp(char *s)
{
	s[strcspn(s, "\r\n")] = '\0';
}

/* ---- Invitation and key ------------------------------------------------------------- */

static const char *fmt_time(uint64_t unix_s, char *buf, size_t len)
{
	time_t t = (time_t)unix_s;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
	return buf;
}

/* The key file's companion that lists (hashed) invitations this key has used. */
static void used_path(const struct opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s.used", o->key_path);
}

static void used_line(const struct dust_invite *inv, char hex[2 * 16 + 1])
{
	uint8_t h[16];

	crypto_generichash(h, sizeof(h), inv->id, sizeof(inv->id), NULL, 0);
	sodium_bin2hex(hex, 2 * sizeof(h) + 1, h, sizeof(h));
}

/*
 * Expiry only limits first use: an invitation this key already bound keeps
 * working, so remember the ones we used (a hash of the id, not the id).
 */
static bool invite_was_used(const struct opts *o, const struct dust_invite *inv)
{
	char path[4096], hex[33], line[128];
	bool found = false;
	FILE *f;
	int fd;

	used_path(o, path, sizeof(path));
	used_line(inv, hex);
	fd = dust_file_open_private(path);
	if (fd == -ENOENT)
		return false;
	if (fd < 0 || !(f = fdopen(fd, "r"))) {
		logmsg("warning: cannot read which invitations were used: %s", dust_last_error());
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		chomp(line);
		found = strcmp(line, hex) == 0;
	}
	fclose(f);
	return found;
}

static void invite_mark_used(const struct opts *o, const struct dust_invite *inv)
{
	char path[4096], hex[33];
	int fd;

	if (invite_was_used(o, inv))
		return;
	used_path(o, path, sizeof(path));
	used_line(inv, hex);
	fd = dust_file_append_private(path);
	if (fd < 0) {
		logmsg("warning: cannot record use of the invitation: %s", dust_last_error());
		return;
	}
	hex[32] = '\n';
	if (write(fd, hex, 33) != 33)
		logmsg("warning: short write to %s", path);
	close(fd);
}

static int open_invite(struct client *c)
{
	const struct opts *o = c->o;
	char text[4096], pw[DUST_PASSWORD_MAX];
	int rc;

	if (o->invite_file) {
		rc = read_text_file(o->invite_file, text, sizeof(text));
		if (rc < 0) {
			logmsg("cannot read invitation %s: %s", o->invite_file, strerror(-rc));
			return EXIT_USAGE;
		}
	} else {
		/* argv is readable by every local user (ps): with it, a guess at the password */
		logmsg("warning: --invite-text is visible to other users (ps); use --invite FILE");
		snprintf(text, sizeof(text), "%s", o->invite_text);
	}
	/* never from argv: a password there is visible to every user in ps */
	if (dust_password_read(pw, sizeof(pw), o->password_file, 0) < 0)
		return EXIT_USAGE;
	rc = dust_invite_open(&c->inv, text, pw, strlen(pw));
	sodium_memzero(pw, sizeof(pw));
	if (rc == -EBADMSG) {
		logmsg("wrong password for this invitation (or the invitation text is damaged)");
		return EXIT_BAD_INVITE;
	}
	if (rc == -EINVAL) {
		logmsg("this is not a Dust invitation: %s", dust_last_error());
		return EXIT_BAD_INVITE;
	}
	if (rc < 0) {
		logmsg("cannot open the invitation: %s", dust_last_error());
		return EXIT_USAGE;
	}
	/* No table-based AES fallback: it would be slow and leak through cache timing. */
	if (!dust_suite_available(c->inv.suite)) {
		logmsg("this invitation uses %s, which this CPU cannot run safely (it has no "
		       "AES-NI); ask for a chacha20-poly1305 invitation",
		       dust_suite_name(c->inv.suite));
		return EXIT_BAD_INVITE;
	}
	return 0;
}

static int check_expiry(struct client *c)
{
	uint64_t now = (uint64_t)time(NULL);
	char when[64];

	if (c->inv.expiry >= now || invite_was_used(c->o, &c->inv))
		return 0;
	logmsg("the invitation expired at %s before it was used; ask for a new one",
	       fmt_time(c->inv.expiry, when, sizeof(when)));
	return EXIT_EXPIRED;
}

/*
 * The tunnel prefix goes onto the TUN, and the kernel routes its network
 * there: an invitation with a /1 would take half the IPv4 Internet, an IPv6
 * /0 the default route. The invitation's issuer is not trusted with that
 * unless the user says so.
 */
static int check_tunnel_prefix(const struct client *c)
{
	unsigned plen = c->inv.tunnel_prefix, min = client_prefix_min(&c->inv.tunnel);
	struct dust_ipaddr net;
	char a[64];

	if (client_prefix_allowed(&c->inv.tunnel, plen, c->o->allow_wide_route))
		return 0;
	client_net_of(&c->inv.tunnel, plen, &net);
	logmsg("refusing the invitation: its tunnel prefix /%u would route %s/%u through the "
	       "tunnel (the shortest taken is /%u); pass --allow-wide-route to accept it",
	       plen, dust_ipaddr_format(&net, a, sizeof(a)), plen, min);
	return EXIT_BAD_INVITE;
}

static int load_key(struct client *c)
{
	const char *path = c->o->key_path;
	int rc = dust_identity_load(&c->id, path);

	if (rc == 0)
		return 0;
	if (rc != -ENOENT) {
		logmsg("cannot load client key %s: %s", path, dust_last_error());
		return EXIT_USAGE;
	}
	if (dust_identity_generate(&c->id) < 0 || dust_identity_save(&c->id, path) < 0) {
		logmsg("cannot create client key %s: %s", path, dust_last_error());
		return EXIT_USAGE;
	}
	logmsg("created a new client key in %s (keep it: the invitation binds to it)", path);
	return 0;
}

/* ---- TUN interface -------------------------------------------------------------------- */

/* struct in6_ifreq from <linux/ipv6.h>, which clashes with <netinet/in.h>. */
struct in6_ifreq_compat {
	struct in6_addr addr;
	uint32_t prefixlen;
	int ifindex;
};

static int ifreq_ioctl(int fd, unsigned long req, struct ifreq *ifr, const char *what)
{
	if (ioctl(fd, req, ifr) == 0)
		return 0;
	logmsg("cannot %s on %s: %s", what, ifr->ifr_name, strerror(errno));
	return -1;
}

static int tun_open(struct client *c)
{
	struct ifreq ifr = {.ifr_flags = IFF_TUN | IFF_NO_PI};
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		logmsg("cannot open /dev/net/tun: %s", strerror(errno));
		return -1;
	}
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", c->o->ifname);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		logmsg("cannot create TUN interface %s: %s (root or CAP_NET_ADMIN needed)",
		       c->o->ifname, strerror(errno));
		close(fd);
		return -1;
	}
	snprintf(c->ifname, sizeof(c->ifname), "%s", ifr.ifr_name);
	c->tun = fd;
	return 0;
}

static int tun_addr4(const struct client *c, int s)
{
	struct ifreq ifr = {0};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	uint32_t mask = c->inv.tunnel_prefix ? ~0u << (32 - c->inv.tunnel_prefix) : 0;

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", c->ifname);
	sin->sin_family = AF_INET;
	memcpy(&sin->sin_addr, c->inv.tunnel.a, 4);
	if (ifreq_ioctl(s, SIOCSIFADDR, &ifr, "set the tunnel address") < 0)
		return -1;
	sin->sin_addr.s_addr = htonl(mask);
	return ifreq_ioctl(s, SIOCSIFNETMASK, &ifr, "set the tunnel netmask");
}

static int tun_addr6(const struct client *c, int s4)
{
	struct ifreq ifr = {0};
	struct in6_ifreq_compat r6 = {.prefixlen = c->inv.tunnel_prefix};
	int s6, rc;

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", c->ifname);
	if (ifreq_ioctl(s4, SIOCGIFINDEX, &ifr, "find the interface index") < 0)
		return -1;
	r6.ifindex = ifr.ifr_ifindex;
	memcpy(&r6.addr, c->inv.tunnel.a, 16);
	s6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s6 < 0)
		return -1;
	rc = ioctl(s6, SIOCSIFADDR, &r6);
	if (rc < 0)
		logmsg("cannot set the IPv6 tunnel address on %s: %s", c->ifname, strerror(errno));
	close(s6);
	return rc;
}

/* The tunnel carries only our address: keep the kernel's own IPv6 chatter off it. */
static void tun_no_ipv6(const struct client *c)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", c->ifname);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "1", 1) != 1)
		debug("could not disable IPv6 on %s", c->ifname);
	close(fd);
}

/* Say what goes through the tunnel before the kernel routes it there. */
static void log_route(const struct client *c, const struct dust_ipaddr *ip, unsigned plen,
                      const char *why)
{
	struct dust_ipaddr net;
	char a[64];

	client_net_of(ip, plen, &net);
	logmsg("routing %s/%u through %s (%s)", dust_ipaddr_format(&net, a, sizeof(a)), plen,
	       c->ifname, why);
}

static int tun_configure(struct client *c)
{
	struct ifreq ifr = {0};
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rc = -1;

	if (s < 0)
		return -1;
	log_route(c, &c->inv.tunnel, c->inv.tunnel_prefix, "the invitation's tunnel network");
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", c->ifname);
	ifr.ifr_mtu = (int)c->mtu;
	if (ifreq_ioctl(s, SIOCSIFMTU, &ifr, "set the MTU") < 0)
		goto out;
	if (c->inv.tunnel.family == 4)
		tun_no_ipv6(c);
	if ((c->inv.tunnel.family == 4 ? tun_addr4(c, s) : tun_addr6(c, s)) < 0)
		goto out;
	if (ifreq_ioctl(s, SIOCGIFFLAGS, &ifr, "read the flags") < 0)
		goto out;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	rc = ifreq_ioctl(s, SIOCSIFFLAGS, &ifr, "bring the interface up");
out:
	close(s);
	return rc;
}

static int parse_cidr(const char *text, struct dust_ipaddr *ip, unsigned *plen)
{
	char buf[64];
	char *slash;

	snprintf(buf, sizeof(buf), "%s", text);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	if (dust_ipaddr_parse(ip, buf) < 0)
		return -1;
	*plen = ip->family == 4 ? 32 : 128;
	return slash ? parse_uint(slash, 0, *plen, plen) : 0;
}

static int route_add4(const struct client *c, const struct dust_ipaddr *ip, unsigned plen)
{
	struct rtentry rt = {.rt_flags = RTF_UP, .rt_dev = (char *)c->ifname};
	struct sockaddr_in *dst = (struct sockaddr_in *)&rt.rt_dst;
	struct sockaddr_in *mask = (struct sockaddr_in *)&rt.rt_genmask;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc;

	dst->sin_family = mask->sin_family = AF_INET;
	memcpy(&dst->sin_addr, ip->a, 4);
	mask->sin_addr.s_addr = htonl(plen ? ~0u << (32 - plen) : 0);
	dst->sin_addr.s_addr &= mask->sin_addr.s_addr;
	rc = s < 0 ? -1 : ioctl(s, SIOCADDRT, &rt);
	if (s >= 0)
		close(s);
	return rc;
}

static int route_add6(const struct client *c, const struct dust_ipaddr *ip, unsigned plen)
{
	struct in6_rtmsg rt = {
	    .rtmsg_dst_len = (uint16_t)plen, .rtmsg_metric = 1, .rtmsg_flags = RTF_UP};
	struct ifreq ifr = {0};
	int s = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc;

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", c->ifname);
	rc = s < 0 ? -1 : ioctl(s, SIOCGIFINDEX, &ifr);
	rt.rtmsg_ifindex = ifr.ifr_ifindex;
	memcpy(&rt.rtmsg_dst, ip->a, 16);
	if (rc == 0)
		rc = ioctl(s, SIOCADDRT, &rt);
	if (s >= 0)
		close(s);
	return rc;
}

static int add_routes(const struct client *c)
{
	for (unsigned i = 0; i < c->o->nroutes; i++) {
		struct dust_ipaddr ip;
		unsigned plen;
		int rc;

		if (parse_cidr(c->o->routes[i], &ip, &plen) < 0) {
			logmsg("bad --route '%s' (want ADDR/PREFIX)", c->o->routes[i]);
			return -1;
		}
		log_route(c, &ip, plen, "--route");
		rc = ip.family == 4 ? route_add4(c, &ip, plen) : route_add6(c, &ip, plen);
		if (rc < 0 && errno != EEXIST) {
			logmsg("cannot add route %s via %s: %s", c->o->routes[i], c->ifname,
			       strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* ---- Outer socket ------------------------------------------------------------------------ */

static int sock_open(struct client *c)
{
	struct sockaddr_storage ss = {0};
	socklen_t sl;
	int buf = 4 << 20;
	char a[64];

	dust_ipaddr_format(&c->inv.server, a, sizeof(a));
	if (c->inv.server.family == 4) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(c->inv.port);
		memcpy(&sin->sin_addr, c->inv.server.a, 4);
		sl = sizeof(*sin);
		snprintf(c->server, sizeof(c->server), "%s:%u", a, c->inv.port);
		c->dg_max = c->o->outer_mtu - 20 - 8;
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(c->inv.port);
		memcpy(&sin6->sin6_addr, c->inv.server.a, 16);
		sl = sizeof(*sin6);
		snprintf(c->server, sizeof(c->server), "[%s]:%u", a, c->inv.port);
		c->dg_max = c->o->outer_mtu - 40 - 8;
	}
	c->sock = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->sock < 0) {
		logmsg("cannot open a UDP socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(c->sock, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setsockopt(c->sock, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	/* connect: the kernel then hands us only the server's datagrams */
	if (connect(c->sock, (struct sockaddr *)&ss, sl) < 0) {
		logmsg("cannot reach %s: %s (no route to the server from here)", c->server,
		       strerror(errno));
		return -2;
	}
	return 0;
}

/* Send dg; false (counted as drop_send) if the kernel did not take it. */
static bool sock_send(struct client *c, const uint8_t *dg, size_t len)
{
	ssize_t n = send(c->sock, dg, len, 0);

	/*
	 * ECONNREFUSED on a connected UDP socket is the ICMP port unreachable
	 * of an earlier datagram (a server not up yet), reported by this send,
	 * which then sent nothing: the error is cleared, send again once
	 * (else one of a hello's two Initials, every other intro, was lost).
	 */
	if (n < 0 && errno == ECONNREFUSED) {
		c->st.icmp_refused++;
		n = send(c->sock, dg, len, 0);
	}
	if (n == (ssize_t)len) {
		c->last_tx_ms = mono_ms();
		return true;
	}
	c->st.local[LD_SEND]++;
	if (errno != EAGAIN && errno != ECONNREFUSED)
		debug("send to %s: %s", c->server, strerror(errno));
	return false;
}

/* ---- Sending ------------------------------------------------------------------------------ */

/* Seal len bytes already at pkt + DUST_DATA_PREFIX; returns the packet length or < 0. */
static int seal(struct client *c, uint8_t *pkt, size_t len, size_t cap)
{
	int n = dust_data_seal(&c->cur, &c->rng, &c->pad, (uint32_t)time(NULL), pkt, len, cap);

	if (n == -EKEYEXPIRED)
		c->up = false; /* a fresh intro gives fresh keys */
	return n;
}

/*
 * Room for Dust packets behind pre bytes of header: the outer MTU's, and in
 * the quic profile no more than its 1250-byte bound leaves (SPEC §12.4).
 * Padding is drawn within it.
 */
static size_t tx_cap(const struct client *c, size_t pre)
{
	size_t max = dust_quic_tx_dgram_max(&c->cur);

	if (!max || max > c->dg_max)
		max = c->dg_max;
	return max - pre;
}

/* Largest TUN packet one datagram carries; the quic bound's before the CID is known. */
static size_t inner_max(const struct client *c)
{
	if (c->cur.profile == DUST_PROFILE_QUIC)
		return dust_quic_tx_inner_max(&c->cur);
	if (c->inv.profile == DUST_PROFILE_QUIC)
		return DUST_QUIC_C2S_INNER_MAX;
	return c->dg_max - DUST_DATA_OVERHEAD - dust_quic_tx_prefix(&c->cur);
}

/*
 * Seal len bytes already at tx_data(c) and send the datagram: in the quic
 * profile behind a 1-RTT short header (dust_quic_tx_prefix is 0 in random).
 */
static uint8_t *tx_data(struct client *c)
{
	return c->txbuf + dust_quic_tx_prefix(&c->cur) + DUST_DATA_PREFIX;
}

/*
 * quic: a data datagram leaves a gap drawn from Chromium's after the one
 * before (SPEC §12.4), at most 4/5 of the client's own mean interval over
 * the last millisecond (gaps.h), or at once after a longer silence. The
 * gaps are 11-48 us, under what a sleep can hit: the wait spins. That
 * interval is the paced output's own, so a tunnel the application fills
 * would pace itself down (the spin is part of every interval): a
 * millisecond with under 5% of it blocked in poll (the TUN never empty)
 * leaves the next one unpaced, as quic-go's pacer runs ahead of a sender
 * limited by the path, not by what it has to send (SPEC §12.4).
 */
static uint64_t pace_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pace_wait(struct client *c)
{
	uint64_t now, gap, cap;

	if (c->o->no_pacing || c->cur.profile != DUST_PROFILE_QUIC)
		return;
	now = pace_now_ns();
	if (now - c->pace_win_ns >= PACE_WINDOW_NS) {
		c->pace_full = c->idle_ns * 20 < now - c->pace_win_ns;
		c->st.pace_full += c->pace_full;
		c->pace_win_ns = now;
		c->idle_ns = 0;
	}
	gap = dust_quic_gap_ns(DUST_ROLE_CLIENT, &c->rng);
	cap = dust_pace_cap(&c->pace_rate, now, PACE_WINDOW_NS);
	if (c->pace_full)
		cap = 0;
	while (now < c->pace_last_ns + (gap < cap ? gap : cap))
		now = pace_now_ns();
	c->pace_last_ns = now;
}

static int seal_send(struct client *c, size_t len)
{
	size_t pre = dust_quic_tx_prefix(&c->cur);
	int n = seal(c, c->txbuf + pre, len, tx_cap(c, pre));

	if (n < 0)
		return n;
	if (pre)
		dust_quic_short_put(&c->cur, &c->rng, c->txbuf);
	pace_wait(c);
	sock_send(c, c->txbuf, pre + (size_t)n);
	return n;
}

/*
 * quic: a pure inner TCP ACK of a connection already sent goes compressed
 * (ackz.h) in a compact packet (SPEC §6.5), a datagram of the cover's
 * ACK-only sizes; every other inner packet is noted for the ACKs after it.
 * Returns true when ip went so.
 */
static bool send_compact(struct client *c, const uint8_t *ip, size_t len)
{
	uint8_t z[DUST_ACKZ_MAX];
	size_t zlen;
	int n;

	if (c->o->no_ackz || c->cur.profile != DUST_PROFILE_QUIC)
		return false;
	zlen = dust_ackz_compress(&c->ackz, ip, len, z);
	if (!zlen)
		return false;
	n = dust_quic_compact_put(&c->cur, &c->rng, z, zlen, c->txbuf, tx_cap(c, 0));
	if (n < 0)
		return false;
	pace_wait(c);
	if (sock_send(c, c->txbuf, (size_t)n)) {
		c->st.acks_compact++;
		c->compact_sent = true;
	}
	return true;
}

static void send_data(struct client *c, const uint8_t *ip, size_t len)
{
	if (send_compact(c, ip, len)) {
		c->st.tx_packets++;
		c->st.tx_bytes += len;
		return;
	}
	memcpy(tx_data(c), ip, len);
	if (seal_send(c, len) < 0) {
		c->st.local[LD_TOO_BIG]++;
		return;
	}
	c->st.tx_packets++;
	c->st.tx_bytes += len;
}

static void send_keepalive(struct client *c)
{
	if (seal_send(c, 0) < 0)
		return;
	c->st.keepalive_tx++;
	c->last_ka_ms = mono_ms();
	debug("keepalive sent");
}

/*
 * Chain the held packet after the intro when both fit in one datagram. It
 * stays held until the session is up, so the first packet an application
 * sent (a SYN, a DNS query) arrives with whichever intro gets through.
 */
static size_t chain_held(struct client *c, size_t ilen)
{
	int n;

	if (!c->held_len)
		return 0;
	memcpy(c->txbuf + ilen + DUST_DATA_PREFIX, c->held, c->held_len);
	n = seal(c, c->txbuf + ilen, c->held_len, c->dg_max - ilen);
	if (n < 0)
		return 0;
	c->st.tx_packets++;
	c->st.tx_bytes += c->held_len;
	return (size_t)n;
}

/*
 * quic: the intro is the hello, two 1250-byte QUIC Initials with one DCID
 * (as Chromium 156's with its X25519MLKEM768 share), no data chained; the
 * held packet waits for the server's answer (its first flight carries the
 * server ephemeral the session keys need). The previous Initial stays
 * answerable: its answer may still be in flight.
 */
static void send_quic_intro(struct client *c)
{
	struct dust_quic_client next;
	int n;

	n = dust_quic_intro_build(&c->inv, &c->id, &c->rng, unix_ms(), c->hello, sizeof(c->hello),
	                          &next);
	if (n < 0) {
		logmsg("cannot build a QUIC intro: %s", dust_last_error());
		c->fatal = true;
		return;
	}
	dust_quic_client_wipe(&c->qc_prev);
	c->qc_prev = c->qc;
	c->qc = next;
	sodium_memzero(&next, sizeof(next));
	c->st.intros++;
	c->attempts++;
	for (int at = 0; at < n; at += DUST_QUIC_CLIENT_DGRAM)
		sock_send(c, c->hello + at, DUST_QUIC_CLIENT_DGRAM);
	sodium_memzero(c->hello, sizeof(c->hello));
	c->resends = 0;
	c->hello_us = mono_us();
	c->next_resend_ms = c->hello_us / 1000 + QUIC_PTO_MS;
	c->close_ms = c->hello_us / 1000 + QUIC_CONN_MS;
	debug("intro %u sent to %s (QUIC hello, 2 Initials, %d bytes, cover %s)", c->attempts,
	      c->server, n, c->inv.cover_sni);
}

/*
 * quic: the hello unanswered at its PTO goes again as Chromium retransmits
 * it: the same ClientHello and DCID, newer packet numbers. The gateway
 * answers a copy with the flight it already sent (a lost flight), never as
 * a new intro. Returns true when it sent.
 */
static bool quic_resend_tick(struct client *c, uint64_t now)
{
	int n;

	if (!c->qc.pending || c->resends >= QUIC_RESENDS || now < c->next_resend_ms)
		return false;
	n = dust_quic_intro_resend(&c->qc, &c->rng, c->hello, sizeof(c->hello));
	if (n < 0)
		return false;
	sock_send(c, c->hello, (size_t)n);
	c->resends++;
	c->st.hello_resends++;
	c->next_resend_ms = now + ((uint64_t)QUIC_PTO_MS << c->resends);
	debug("hello of intro %u sent again (%u), same DCID", c->attempts, c->resends);
	return true;
}

/*
 * quic: the server's ACK-only Initial acknowledged the hello's first
 * Initial, not its second; with its RTT sample Chromium's PTO comes much
 * sooner than 300 ms, and its probe brings the second Initial's CRYPTO data
 * again (SPEC §12.2). A cover server that lost that second Initial answers
 * only then, and the gateway waits for it as caddy does (SPEC §12.3).
 */
static void quic_acked(struct client *c)
{
	uint64_t sent_ms = c->hello_us / 1000, rtt = mono_ms() - sent_ms;

	if (!c->qc.pending || c->qc.acked || c->resends || c->flight_len)
		return;
	c->qc.acked = true;
	c->next_resend_ms =
	    sent_ms + dust_quic_pto_probe_ms(&c->rng, rtt < 60000 ? (uint32_t)rtt : 60000);
}

/*
 * quic: a hello still unanswered when Chromium's 4-second handshake idle
 * timeout ends is given up as Chromium gives its up: one Initial with a
 * CONNECTION_CLOSE, on the connection's own port, before any new one.
 */
static void quic_close_tick(struct client *c, uint64_t now)
{
	int n;

	/* due, or the connection ends now anyway (the next intro's time came first) */
	if (!c->close_ms || (now < c->close_ms && now < c->next_intro_ms))
		return;
	c->close_ms = 0;
	if (!c->qc.pending)
		return;
	n = dust_quic_intro_close(&c->qc, mono_us() - c->hello_us, c->hello, sizeof(c->hello));
	if (n < 0)
		return;
	sock_send(c, c->hello, (size_t)n);
	c->st.hello_closes++;
	debug("hello of intro %u given up (CONNECTION_CLOSE)", c->attempts);
}

/*
 * quic: a new connection comes from a new source port, as a browser's does;
 * if no new socket can be had, the old one stays.
 */
static void new_port(struct client *c)
{
	int old = c->sock;

	if (sock_open(c) != 0) {
		if (c->sock >= 0 && c->sock != old)
			close(c->sock);
		c->sock = old;
		return;
	}
	close(old);
}

/* The wait before the next intro: quic, a connection's whole life (QUIC_CONN_MS) at least. */
static uint64_t intro_gap(const struct client *c)
{
	if (c->inv.profile != DUST_PROFILE_QUIC || c->intro_gap_ms >= QUIC_CONN_MS)
		return c->intro_gap_ms;
	return QUIC_CONN_MS;
}

/* A fresh intro each time: the server takes only intros newer than the last. */
static void send_intro(struct client *c)
{
	struct dust_session next;
	size_t len, chained;
	int n;

	if (c->inv.profile == DUST_PROFILE_QUIC) {
		send_quic_intro(c);
		return;
	}
	/* dust_intro_build sets keys and role only: the profile and CID must read zero */
	memset(&next, 0, sizeof(next));

	n = dust_intro_build(&c->inv, &c->id, &c->rng, &c->pad, unix_ms(), c->txbuf, c->dg_max,
	                     &next);
	if (n < 0) {
		logmsg("cannot build an intro: %s", dust_last_error());
		c->fatal = true;
		return;
	}
	/* keep the previous keys: the server's answer to it may still be in flight */
	if (c->cur.role) {
		dust_session_wipe(&c->prev);
		c->prev = c->cur;
		c->have_prev = true;
	}
	c->prev_newer = false;
	c->cur = next;
	sodium_memzero(&next, sizeof(next));
	len = (size_t)n;
	chained = chain_held(c, len);
	c->st.intros++;
	c->attempts++;
	sock_send(c, c->txbuf, len + chained);
	if (c->held_len && !chained) /* did not fit: send it on its own right behind */
		send_data(c, c->held, c->held_len);
	debug("intro %u sent to %s (%zu bytes, %zu of chained data)", c->attempts, c->server,
	      len + chained, chained);
}

/*
 * quic: a packet over the bound's inner MTU gets what a router would send,
 * ICMP "fragmentation needed" / ICMPv6 "packet too big" (SPEC §12.4). The
 * TUN's MTU keeps IPv4 from sending one; an IPv6 tunnel cannot go under 1280.
 */
static void too_big_reply(struct client *c, const uint8_t *p, size_t len)
{
	uint8_t err[DUST_INNER_ICMP_MAX];
	int n = dust_inner_too_big(p, len, inner_max(c), err, sizeof(err));

	if (n > 0 && write(c->tun, err, (size_t)n) != n)
		c->st.local[LD_TUN_WRITE]++;
}

static bool src_is_ours(const struct client *c, const uint8_t *p, size_t len)
{
	if (c->inv.tunnel.family == 4)
		return len >= 20 && memcmp(p + 12, c->inv.tunnel.a, 4) == 0;
	return len >= 40 && memcmp(p + 8, c->inv.tunnel.a, 16) == 0;
}

static void on_tun_packet(struct client *c, const uint8_t *p, size_t len)
{
	unsigned ver = len ? p[0] >> 4 : 0;

	if (ver != 4 && ver != 6) {
		c->st.local[LD_NOT_IP]++;
		return;
	}
	if ((ver == 4) != (c->inv.tunnel.family == 4) || !src_is_ours(c, p, len)) {
		c->st.local[LD_FOREIGN_SRC]++;
		return;
	}
	if (len > inner_max(c)) {
		c->st.local[LD_TOO_BIG]++;
		if (c->inv.profile == DUST_PROFILE_QUIC)
			too_big_reply(c, p, len);
		return;
	}
	if (!c->up) {
		/* --connect on-demand: the first packet sends the first intro, on the next tick */
		if (c->next_intro_ms == INTRO_ON_DEMAND)
			c->next_intro_ms = mono_ms();
		/* sealed under the newest intro's keys, and kept to chain with the next */
		if (c->held_len)
			c->st.local[LD_NO_SESSION]++;
		memcpy(c->held, p, len);
		c->held_len = len;
		/* quic: nothing goes out before the server's answer (no 0-RTT) */
		if (!c->cur.role || c->inv.profile == DUST_PROFILE_QUIC)
			return;
	}
	send_data(c, p, len);
}

/* ---- ACK thinning (SPEC §9.2) -------------------------------------------------------------- */

/* Send held ACK i, in its turn, and forget it. */
static void thin_send(struct client *c, unsigned i)
{
	struct thin_slot sl = c->thin[i];

	memmove(&c->thin[i], &c->thin[i + 1], (c->nthin - i - 1) * sizeof(c->thin[0]));
	c->nthin--;
	on_tun_packet(c, sl.p, sl.len);
}

static void thin_flush(struct client *c)
{
	while (c->nthin)
		thin_send(c, 0);
}

/* The held ACKs go once the oldest has waited --ack-hold (at once with 0: the burst's end). */
static void thin_tick(struct client *c)
{
	if (c->nthin && mono_us() >= c->thin_due_us)
		thin_flush(c);
}

/*
 * A TUN packet, with ACK thinning: a pure TCP ACK waits until the burst
 * ends, and a newer pure ACK of its connection takes its place (the older
 * one is dropped: the newer acknowledges all it did). Anything else of that
 * connection sends the held ACK first, so a connection's packets keep their
 * order; packets of other connections and other protocols go at once.
 */
static void thin_take(struct client *c, const uint8_t *p, size_t len)
{
	struct dust_inner_tcp t;
	struct thin_slot *sl;
	unsigned i;

	if (c->o->no_ack_thin || !c->up || !dust_inner_tcp_read(p, len, &t)) {
		on_tun_packet(c, p, len);
		return;
	}
	for (i = 0; i < c->nthin; i++)
		if (dust_inner_same_flow(&c->thin[i].t, &t))
			break;
	if (i < c->nthin && c->thin[i].stands_for < DUST_INNER_THIN_MAX &&
	    dust_inner_ack_supersedes(&t, &c->thin[i].t) && len <= THIN_PKT) {
		sl = &c->thin[i];
		sl->t = t;
		sl->stands_for++;
		sl->len = len;
		memcpy(sl->p, p, len);
		c->st.acks_thinned++;
		return;
	}
	if (i < c->nthin)
		thin_send(c, i);
	if (!t.pure_ack || len > THIN_PKT) {
		on_tun_packet(c, p, len);
		return;
	}
	if (c->nthin == THIN_HELD)
		thin_send(c, 0);
	if (!c->nthin)
		c->thin_due_us = mono_us() + c->o->ack_hold_ms * 1000ull;
	sl = &c->thin[c->nthin++];
	sl->t = t;
	sl->stands_for = 0;
	sl->len = len;
	memcpy(sl->p, p, len);
}

static void tun_drain(struct client *c)
{
	for (int i = 0; i < TUN_BURST; i++) {
		ssize_t n = read(c->tun, c->rxbuf, sizeof(c->rxbuf));

		if (n < 0)
			break;
		thin_take(c, c->rxbuf, (size_t)n);
	}
	thin_tick(c);
}

/* ---- Receiving ----------------------------------------------------------------------------- */

static void deliver(struct client *c, const uint8_t *p, size_t len)
{
	enum client_inner v = client_inner_check(&c->inv.tunnel, p, len);

	if (v != CLIENT_INNER_OK) {
		c->st.local[v == CLIENT_INNER_BAD ? LD_BAD_INNER : LD_FOREIGN_DST]++;
		return;
	}
	if (write(c->tun, p, len) != (ssize_t)len) {
		c->st.local[LD_TUN_WRITE]++;
		return;
	}
	c->st.rx_packets++;
	c->st.rx_bytes += len;
}

/*
 * quic: answer the server's first flight as Chromium 156 answers its cover
 * server's (SPEC §12.3): the padded Initial+Handshake ACK datagram, then the
 * Handshake+1-RTT one whose 1-RTT packet carries the packet held back for
 * the answer, or a keepalive; a held packet too big for it follows in a
 * short header of its own.
 */
static void send_finished(struct client *c)
{
	bool carried = false;
	int n = dust_quic_confirm_ack_build(&c->cf, &c->cur, &c->rng, c->txbuf, sizeof(c->txbuf));

	if (n > 0)
		sock_send(c, c->txbuf, (size_t)n);
	n = dust_quic_confirm_build(&c->cur, &c->rng, (uint32_t)time(NULL), c->held, c->held_len,
	                            c->txbuf, sizeof(c->txbuf), &carried);
	if (n == -EKEYEXPIRED)
		c->up = false; /* a fresh intro gives fresh keys */
	if (n < 0)
		return;
	sock_send(c, c->txbuf, (size_t)n);
	if (carried) {
		c->st.tx_packets++;
		c->st.tx_bytes += c->held_len;
	} else {
		c->st.keepalive_tx++;
		c->last_ka_ms = mono_ms();
	}
	if (c->held_len && !carried)
		send_data(c, c->held, c->held_len);
}

static void became_up(struct client *c)
{
	char a[64];

	c->up = true;
	c->intro_gap_ms = 1000;
	c->last_inner_ms = mono_ms();
	dust_ackz_init(&c->ackz); /* a new session: the gateway knows no connection of ours */
	if (c->ever_up) {
		c->st.reconnects++;
		logmsg("connected again to %s after %u intro(s)", c->server, c->attempts);
	} else {
		logmsg("connected to %s: tunnel %s/%u on %s, %s", c->server,
		       dust_ipaddr_format(&c->inv.tunnel, a, sizeof(a)), c->inv.tunnel_prefix,
		       c->ifname, dust_suite_name(c->inv.suite));
		invite_mark_used(c->o, &c->inv);
	}
	c->ever_up = true;
	c->attempts = 0;
	/*
	 * quic held the first packet back until now: it goes in the second
	 * flight (or right after it). The random profile confirms the answer at once: a packet
	 * under its keys proves to the gateway that we receive here (SPEC §9.1).
	 */
	if (c->inv.profile == DUST_PROFILE_QUIC)
		send_finished(c);
	else
		send_keepalive(c);
	c->held_len = 0;
	if (c->prev_newer)
		return; /* keep the newest intro's keys: its answer is the server's session */
	c->have_prev = false;
	dust_session_wipe(&c->prev);
}

/* The server may have answered the previous intro: then that one is the session. */
static unsigned open_with_prev(struct client *c, size_t len, struct dust_seg *segs,
                               enum dust_drop *drop)
{
	struct dust_session tmp;
	unsigned n;

	n = dust_datagram_open(&c->prev, &c->lim, (uint32_t)time(NULL), c->rxcopy, len, 0, segs,
	                       DUST_CHAIN_MAX, drop);
	if (n == 0)
		return 0;
	tmp = c->cur;
	c->cur = c->prev;
	c->prev = tmp;
	sodium_memzero(&tmp, sizeof(tmp));
	memcpy(c->rxbuf, c->rxcopy, len);
	return n;
}

/*
 * An answer opened with prev (now cur). Coming up that way, cur is an older
 * intro than the one now in prev: a server that held our first use (its
 * binding not yet durable) answers every intro it took, in order, and keeps
 * the newest, so prev stays until its answer arrives and becomes cur.
 */
static void prev_answered(struct client *c)
{
	if (!c->prev_newer && !c->up) {
		c->prev_newer = true;
		return;
	}
	c->prev_newer = false;
	c->have_prev = false;
	dust_session_wipe(&c->prev);
}

/*
 * The gateway saw us at a new address (a NAT rebinding) and asks us to show
 * that we receive there: its cookie goes back, sealed (SPEC §9.1).
 */
static void path_answer(struct client *c, const uint8_t *p, size_t len)
{
	uint8_t cookie[DUST_PATH_COOKIE_BYTES];

	if (dust_path_msg_parse(p, len, cookie) != DUST_PATH_CHALLENGE) {
		c->st.local[LD_BAD_INNER]++;
		return;
	}
	dust_path_msg_put(tx_data(c), DUST_PATH_RESPONSE, cookie);
	if (seal_send(c, DUST_PATH_MSG_BYTES) >= 0)
		c->st.path_echo++;
}

static void on_opened(struct client *c, const struct dust_seg *segs, unsigned n)
{
	c->last_rx_ms = mono_ms();
	if (!c->up)
		became_up(c);
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *p = c->rxbuf + segs[i].off;

		if (segs[i].len == 0)
			c->st.keepalive_rx++;
		else if (p[0] < DUST_PATH_IP_FIRST_MIN) /* no IP packet: a path message */
			path_answer(c, p, segs[i].len);
		else
			deliver(c, p, segs[i].len);
	}
}

/*
 * quic: a long-header datagram may be the server's first flight for one of
 * our pending Initials: its 1252-byte Initial+Handshake datagram (the
 * masked ML-KEM ciphertext) is kept until the Handshake tail after it, whose
 * keepalive authenticates the two (SPEC 12.3). A flight the server resends
 * on its PTOs, as quic-go does, comes in parts: the Initial alone, then the
 * Handshake packet alone and the tail; the newest of each part is kept.
 * The newest answered Initial is the server's session (it takes intros
 * newer than the last), so an answer to the newer Initial replaces a
 * session opened from the older one. Anything else is dropped. Junk costs
 * little: the socket is connected (only the server's address and port get
 * here), and dust_quic_answer_open_parts checks every shape before it
 * decrypts the Initial, the Initial (keyed by our DCID) before the X25519
 * and the decapsulation.
 */
static enum dust_drop quic_open(struct client *c, struct dust_quic_client *qc, size_t len,
                                struct dust_quic_confirm *cf, struct dust_session *s)
{
	if (!c->flight_len || !c->flight_hs_len || !qc->pending)
		return DUST_DROP_AUTH;
	memcpy(c->rxcopy, c->rxbuf, len); /* opening works in place */
	dust_quic_confirm_init(qc, cf);
	return dust_quic_answer_open_parts(qc, &c->lim, (uint32_t)time(NULL), c->flight,
	                                   c->flight_len, c->flight_hs, c->flight_hs_len, c->rxcopy,
	                                   len, s);
}

static void on_quic_answer(struct client *c, size_t len)
{
	struct dust_quic_confirm cf;
	struct dust_session s;
	enum dust_quic_part part = dust_quic_answer_part(c->rxbuf, len);
	enum dust_drop d;
	bool newest;

	/* the flight's ACK-only Initial: no keys in it, nothing to count */
	if (dust_quic_is_flight_ack(c->rxbuf, len)) {
		debug("the server acknowledged our Initial (%zu bytes)", len);
		quic_acked(c);
		if (len <= sizeof(c->flight_ack)) {
			memcpy(c->flight_ack, c->rxbuf, len);
			c->flight_ack_len = len;
		}
		return;
	}
	/* the flight's big datagram, or its Initial alone: kept (the last one) until its tail */
	if ((part == DUST_QUIC_PART_ANSWER || part == DUST_QUIC_PART_INITIAL) &&
	    len <= sizeof(c->flight)) {
		memcpy(c->flight, c->rxbuf, len);
		c->flight_len = len;
		if (part == DUST_QUIC_PART_ANSWER) {
			memcpy(c->flight_hs, c->rxbuf, len);
			c->flight_hs_len = len;
		}
		debug("the server's first flight (%zu bytes), waiting for its tail", len);
		return;
	}
	/* the second flight's Initial needs the answered hello's DCID, which opening wipes */
	d = quic_open(c, &c->qc, len, &cf, &s);
	newest = d == DUST_OK;
	if (d != DUST_OK)
		d = quic_open(c, &c->qc_prev, len, &cf, &s);
	/* the Handshake packet alone (a resend), not a tail: kept until its tail comes */
	if (d != DUST_OK && part == DUST_QUIC_PART_HANDSHAKE && len <= sizeof(c->flight_hs)) {
		memcpy(c->flight_hs, c->rxbuf, len);
		c->flight_hs_len = len;
		debug("the server's first flight resent (%zu bytes), waiting for its tail", len);
		return;
	}
	if (d != DUST_OK) {
		c->st.drop[d]++;
		debug("dropped a %zu-byte long-header datagram: %s", len, dust_drop_name(d));
		return;
	}
	/* the second flight acknowledges the server Initials we got, as a browser's does */
	(void)dust_quic_confirm_saw(&cf, c->flight, c->flight_len);
	(void)dust_quic_confirm_saw(&cf, c->flight_hs, c->flight_hs_len); /* an answer's, or none */
	if (c->flight_ack_len)
		(void)dust_quic_confirm_saw(&cf, c->flight_ack, c->flight_ack_len);
	c->flight_len = c->flight_hs_len = c->flight_ack_len = 0;
	c->cf = cf;
	if (newest)
		dust_quic_client_wipe(&c->qc_prev);
	if (c->up)
		debug("the server answered a newer Initial: switching to that session");
	dust_session_wipe(&c->cur);
	c->cur = s;
	sodium_memzero(&s, sizeof(s));
	c->st.keepalive_rx++; /* the first flight's tail carries a keepalive */
	on_opened(c, NULL, 0);
}

/*
 * quic: Chromium answers every second packet it receives with an ACK-only
 * packet of 27..36 bytes (four in five of its upstream datagrams, in
 * test/data/chromium156-caddy-loads.pcap); a tunnel's own acknowledgements
 * travel in Dust packets, 37 bytes and more. So after every second data
 * datagram, one of the cover's ACK sizes that carries nothing, sent at once
 * as an ACK is (SPEC §12.4). The gateway counts it and passes it by. A
 * compact packet (a tunnelled TCP ACK, SPEC §6.5) sent since the last one
 * was due stands in for it: Chromium sends one ACK there, not two.
 */
static void quic_ack_due(struct client *c)
{
	uint8_t dg[64];
	size_t len;

	if (c->o->no_acks || !dust_quic_ack_due(&c->cur))
		return;
	if (c->compact_sent) {
		c->compact_sent = false;
		return;
	}
	len = dust_quic_ack_put(&c->cur, &c->rng, dg, sizeof(dg));
	if (len && sock_send(c, dg, len))
		c->st.acks_tx++;
}

/*
 * quic: does an opened datagram call for an acknowledgement, as an
 * ack-eliciting QUIC packet does? Not when all it carries is pure TCP ACKs:
 * Chromium acknowledges no packet that holds only an ACK (SPEC §12.4).
 */
static bool segs_elicit(const struct client *c, const struct dust_seg *segs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (segs[i].len && dust_inner_elicits(c->rxbuf + segs[i].off, segs[i].len))
			return true;
	return false;
}

/* quic: 1-RTT short headers with our connection ID, then v2 data packets. */
static void on_quic_datagram(struct client *c, size_t len)
{
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop drop = DUST_OK;
	unsigned n;
	size_t pre = 0;
	bool lng = len && (c->rxbuf[0] & DUST_QUIC_LONG);

	/* the first flight's tail: a Handshake packet of our server's, holding a keepalive */
	if (lng && c->cur.role)
		pre = dust_quic_hs_match(&c->cur, c->rxbuf, len);
	/* the server's ACK of our second flight's Handshake packet (as caddy's): nothing for us */
	if (lng && !pre && c->cur.role && dust_quic_is_hs_ack(&c->cur, c->rxbuf, len)) {
		c->st.local[LD_QUIC_HS_ACK]++;
		return;
	}
	if (lng && !pre) {
		on_quic_answer(c, len);
		return;
	}
	if (!lng) {
		if (c->cur.role && len < dust_quic_rx_prefix(&c->cur) + DUST_DATA_MIN_BYTES) {
			c->st.local[LD_QUIC_SMALL]++;
			return;
		}
		if (!c->cur.role || !dust_quic_short_match(&c->cur, c->rxbuf, len)) {
			c->st.local[LD_QUIC_HEADER]++;
			return;
		}
		pre = dust_quic_rx_prefix(&c->cur);
	}
	n = dust_datagram_open(&c->cur, &c->lim, (uint32_t)time(NULL), c->rxbuf, len, pre, segs,
	                       DUST_CHAIN_MAX, &drop);
	if (drop != DUST_OK)
		c->st.drop[drop]++;
	if (n) {
		bool elicit = !lng && !c->o->no_acks && segs_elicit(c, segs, n);

		on_opened(c, segs, n);
		if (elicit)
			quic_ack_due(c);
	}
}

static void on_datagram(struct client *c, size_t len)
{
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop drop = DUST_OK;
	bool try_prev = c->have_prev && (!c->up || c->prev_newer);
	unsigned n;

	if (c->inv.profile == DUST_PROFILE_QUIC) {
		on_quic_datagram(c, len);
		return;
	}
	if (!c->cur.role) {
		c->st.drop[DUST_DROP_AUTH]++;
		return;
	}
	if (try_prev)
		memcpy(c->rxcopy, c->rxbuf, len); /* a failed open may zero bytes */
	n = dust_datagram_open(&c->cur, &c->lim, (uint32_t)time(NULL), c->rxbuf, len, 0, segs,
	                       DUST_CHAIN_MAX, &drop);
	if (n == 0 && try_prev && (n = open_with_prev(c, len, segs, &drop)) != 0)
		prev_answered(c);
	if (drop != DUST_OK)
		c->st.drop[drop]++;
	if (n == 0)
		return;
	on_opened(c, segs, n);
}

static void sock_drain(struct client *c)
{
	for (int i = 0; i < TUN_BURST; i++) {
		ssize_t n = recv(c->sock, c->rxbuf, sizeof(c->rxbuf), 0);

		if (n < 0)
			return;
		on_datagram(c, (size_t)n);
	}
}

/* ---- Timers ---------------------------------------------------------------------------------- */

static int connecting_tick(struct client *c, uint64_t now)
{
	if (c->inv.profile == DUST_PROFILE_QUIC && quic_resend_tick(c, now))
		return 0;
	quic_close_tick(c, now);
	if (now < c->next_intro_ms)
		return 0;
	if (!c->ever_up && c->attempts >= c->o->tries) {
		logmsg("no answer from %s (unreachable, or the invitation is expired or bound "
		       "to another key); %u intros sent",
		       c->server, c->attempts);
		return EXIT_NO_ANSWER;
	}
	if (c->inv.profile == DUST_PROFILE_QUIC && c->st.intros)
		new_port(c);
	send_intro(c);
	/* from when it went: making it (a new socket, ML-KEM keys) takes a few ms */
	c->next_intro_ms = mono_ms() + intro_gap(c);
	/* after a loss, back off: a gateway down for an hour should not get 3600 intros */
	if (c->ever_up && c->intro_gap_ms < INTRO_BACKOFF_MAX_MS)
		c->intro_gap_ms *= 2;
	return 0;
}

/* The session is over: the next intro goes at next_ms (INTRO_ON_DEMAND: with a packet). */
static void session_down(struct client *c, uint64_t next_ms)
{
	c->up = false;
	c->have_prev = false;
	c->attempts = 0;
	c->intro_gap_ms = 1000;
	c->next_intro_ms = next_ms;
}

/*
 * --connect on-demand: a session that carried no packet for --idle seconds
 * ends as an idle QUIC connection does (RFC 9000 §10.1), without a
 * datagram, and its keys are wiped; the next packet on the TUN starts a new
 * one. Returns true when it ended.
 */
static bool idle_end(struct client *c, uint64_t now)
{
	uint64_t inner = c->st.tx_packets + c->st.rx_packets;

	if (inner != c->inner_seen) {
		c->inner_seen = inner;
		c->last_inner_ms = now;
	}
	if (!c->o->on_demand || !c->o->idle_s || now - c->last_inner_ms < c->o->idle_s * 1000ull)
		return false;
	logmsg("no packet for %u s: session with %s ended; the next packet starts a new one",
	       c->o->idle_s, c->server);
	c->st.idle_ends++;
	/* nothing more goes, or opens, under its keys: the next packet waits for new ones */
	dust_session_wipe(&c->cur);
	dust_session_wipe(&c->prev);
	session_down(c, INTRO_ON_DEMAND);
	return true;
}

static void up_tick(struct client *c, uint64_t now)
{
	uint64_t ka = c->o->keepalive_s * 1000ull;

	if (idle_end(c, now))
		return;

	if (now - c->last_rx_ms >= c->o->dead_s * 1000ull) {
		logmsg("%s silent for %llu s: introducing again%s", c->server,
		       (unsigned long long)(now - c->last_rx_ms) / 1000,
		       c->o->on_demand ? " with the next packet" : "");
		/* on demand, no hello goes without a packet to carry (an idle tunnel shows none) */
		session_down(c, c->o->on_demand ? INTRO_ON_DEMAND : now);
		return;
	}
	/* the server answers keepalives, so they also probe a one-way flow */
	if (now - c->last_ka_ms >= ka && (now - c->last_tx_ms >= ka || now - c->last_rx_ms >= ka))
		send_keepalive(c);
}

static int tick(struct client *c)
{
	uint64_t now = mono_ms();

	if (!c->up)
		return connecting_tick(c, now);
	up_tick(c, now);
	return c->up ? 0 : connecting_tick(c, now);
}

/* ---- Main loop --------------------------------------------------------------------------------
 */

/*
 * Until the next timer: 200 ms, less while connecting when the next intro
 * or a quic hello's PTO comes sooner (Chromium's timers are kept to the ms).
 */
static int poll_ms(const struct client *c)
{
	uint64_t now = mono_ms(), next = now + 200;

	if (c->nthin) /* held ACKs: to the ms, rounded up */
		return (int)((c->thin_due_us + 999) / 1000 > now
		                 ? (c->thin_due_us + 999) / 1000 - now
		                 : 0);
	if (c->up)
		return 200;
	if (c->next_intro_ms < next)
		next = c->next_intro_ms;
	if (c->qc.pending && c->resends < QUIC_RESENDS && c->next_resend_ms < next)
		next = c->next_resend_ms;
	if (c->close_ms && c->close_ms < next)
		next = c->close_ms;
	return next <= now ? 0 : (int)(next - now);
}

static int run(struct client *c)
{
	struct pollfd pfd[2] = {{.fd = c->tun, .events = POLLIN},
	                        {.fd = c->sock, .events = POLLIN}};
	uint64_t idle0;
	int rc = 0, n;

	c->intro_gap_ms = 1000;
	c->next_intro_ms = c->o->on_demand ? INTRO_ON_DEMAND : mono_ms();
	if (c->o->on_demand)
		logmsg("tunnel up on %s: the first packet through it starts the session with %s "
		       "(--connect on-demand)",
		       c->ifname, c->server);
	c->last_rx_ms = c->last_tx_ms = c->last_ka_ms = mono_ms();
	/* a packet already queued on the TUN goes chained with the first intro */
	tun_drain(c);
	while (!quit && rc == 0) {
		rc = tick(c);
		if (c->fatal)
			return EXIT_USAGE;
		if (rc || quit)
			break;
		pfd[1].fd = c->sock; /* quic: each connection its own port */
		idle0 = pace_now_ns();
		n = poll(pfd, 2, poll_ms(c));
		c->idle_ns += pace_now_ns() - idle0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			logmsg("poll: %s", strerror(errno));
			return EXIT_USAGE;
		}
		if (pfd[1].revents & POLLIN)
			sock_drain(c);
		if (pfd[0].revents & POLLIN)
			tun_drain(c);
		thin_tick(c);
	}
	return rc;
}

static void print_stats(const struct client *c)
{
	const struct stats *s = &c->st;

	printf("dust-client stats: tx_packets=%llu tx_bytes=%llu rx_packets=%llu rx_bytes=%llu "
	       "intros=%llu keepalive_tx=%llu keepalive_rx=%llu reconnects=%llu path_echo=%llu "
	       "icmp_refused=%llu hello_resends=%llu hello_closes=%llu acks_tx=%llu "
	       "acks_thinned=%llu acks_compact=%llu pace_full=%llu idle_ends=%llu",
	       (unsigned long long)s->tx_packets, (unsigned long long)s->tx_bytes,
	       (unsigned long long)s->rx_packets, (unsigned long long)s->rx_bytes,
	       (unsigned long long)s->intros, (unsigned long long)s->keepalive_tx,
	       (unsigned long long)s->keepalive_rx, (unsigned long long)s->reconnects,
	       (unsigned long long)s->path_echo, (unsigned long long)s->icmp_refused,
	       (unsigned long long)s->hello_resends, (unsigned long long)s->hello_closes,
	       (unsigned long long)s->acks_tx, (unsigned long long)s->acks_thinned,
	       (unsigned long long)s->acks_compact, (unsigned long long)s->pace_full,
	       (unsigned long long)s->idle_ends);
	for (int d = DUST_DROP_TRUNCATED; d < DUST_DROP_MAX; d++)
		printf(" rx_drop_%s=%llu", dust_drop_name(d), (unsigned long long)s->drop[d]);
	for (int d = 0; d < LD_MAX; d++)
		printf(" drop_%s=%llu", local_drop_names[d], (unsigned long long)s->local[d]);
	putchar('\n');
	fflush(stdout);
}

static void install_signals(void)
{
	struct sigaction sa = {.sa_handler = on_signal};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * The TUN's MTU: --mtu, by default 1400. The quic profile's is its inner
 * MTU, so that the stack sends nothing the 1250-byte bound cannot carry
 * (SPEC §12.4): 1197, or 1280 for an IPv6 tunnel (IPv6 takes no less;
 * bigger packets get "packet too big"); --mtu may only lower it.
 */
static int tun_mtu(struct client *c)
{
	unsigned quic = c->inv.tunnel.family == 4 ? DUST_QUIC_C2S_INNER_MAX : 1280;

	if (c->inv.profile == DUST_PROFILE_QUIC) {
		c->mtu = c->o->mtu ? c->o->mtu : quic;
		if (c->mtu <= quic)
			return 0;
		logmsg("--mtu %u: the quic profile sends no datagram over %d bytes, so at most %u",
		       c->mtu, DUST_QUIC_CLIENT_DGRAM_MAX, quic);
		return -1;
	}
	c->mtu = c->o->mtu ? c->o->mtu : 1400;
	if (c->mtu + DUST_DATA_OVERHEAD <= c->dg_max)
		return 0;
	logmsg("--mtu %u does not fit --outer-mtu %u: at most %zu", c->mtu, c->o->outer_mtu,
	       c->dg_max - DUST_DATA_OVERHEAD);
	return -1;
}

static int setup(struct client *c)
{
	int rc;

	rc = open_invite(c);
	if (rc == 0)
		rc = check_tunnel_prefix(c);
	if (rc == 0)
		rc = check_expiry(c);
	if (rc == 0)
		rc = load_key(c);
	if (rc)
		return rc;
	rc = sock_open(c);
	if (rc < 0)
		return rc == -2 ? EXIT_NO_ANSWER : EXIT_USAGE;
	if (tun_mtu(c) < 0)
		return EXIT_USAGE;
	if (c->inv.profile == DUST_PROFILE_QUIC && c->dg_max < DUST_QUIC_CLIENT_DGRAM) {
		logmsg("the quic profile sends %d-byte Initials: --outer-mtu %u is too small "
		       "(at least %zu)",
		       DUST_QUIC_CLIENT_DGRAM, c->o->outer_mtu,
		       c->o->outer_mtu - c->dg_max + DUST_QUIC_CLIENT_DGRAM);
		return EXIT_USAGE;
	}
	if (tun_open(c) < 0 || tun_configure(c) < 0 || add_routes(c) < 0)
		return EXIT_USAGE;
	dust_rng_init(&c->rng);
	dust_pad_default(&c->pad);
	c->pad.mtu = (uint16_t)c->dg_max;
	c->pad.model = !c->o->uniform_sizes;
	dust_limits_default(&c->lim);
	return 0;
}

static void teardown(struct client *c)
{
	if (c->tun >= 0)
		close(c->tun);
	if (c->sock >= 0)
		close(c->sock);
	dust_session_wipe(&c->cur);
	dust_session_wipe(&c->prev);
	dust_quic_client_wipe(&c->qc);
	dust_quic_client_wipe(&c->qc_prev);
	dust_identity_wipe(&c->id);
	dust_invite_wipe(&c->inv);
	dust_rng_wipe(&c->rng);
}

int main(int argc, char **argv)
{
	static struct client c; /* large buffers: keep them off the stack */
	struct opts o;
	int rc;

	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	verbose = o.verbose;
	if (dust_init() < 0 || dust_core_dumps_off() < 0) { /* its key: never in a core */
		logmsg("libsodium failed to initialise, or core dumps stay on");
		return EXIT_USAGE;
	}
	c.o = &o;
	c.tun = c.sock = -1;
	install_signals();
	rc = setup(&c);
	if (rc == 0)
		rc = run(&c);
	if (o.stats)
		print_stats(&c);
	teardown(&c);
	return rc;
}
