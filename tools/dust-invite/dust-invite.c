/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-invite: the operator's tool for server identities and invitations.
 * keygen makes the gateway's key file; create writes invitation texts for
 * clients and adds them to the server's store; revoke ends one (a running
 * dustgw drops its session within a second); show opens a text with its
 * password; list prints the store with each invitation's state.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "dust.h"
#include "numopt.h"
#include "outdir.h"
#include "password.h"

static const char usage[] =
    "usage: dust-invite COMMAND [options]\n"
    "\n"
    "  keygen --out KEY [--force]\n"
    "      Make a server identity (X25519) in KEY (mode 0600); print its public key.\n"
    "  create --store STORE --key KEY --server ADDR --port PORT\n"
    "         (--tunnel ADDR/PREFIX | --tunnel-net NET/PREFIX) [--count N]\n"
    "         [--expiry-days D] [--out-dir DIR] [--password-file F | --password-each]\n"
    "         [--store-only]\n"
    "         [--profile random|quic] [--cover-sni NAME] [--cover-alpn h3]\n"
    "         [--suite chacha20-poly1305|aes-256-gcm]\n"
    "      Create N invitations (default 1) for this server, add them to STORE (created\n"
    "      if missing) and write each sealed text to DIR/invite-<n>.txt, or to stdout.\n"
    "      DIR is created if missing; texts already there are never overwritten.\n"
    "      --tunnel-net hands out the next free addresses of NET (not the network, the\n"
    "      first host, which is the gateway's side, or the broadcast address).\n"
    "      --password-each seals each text under its own random password (24\n"
    "      characters, 100 bits), written beside it to DIR/invite-<n>.pw (0600): hand\n"
    "      the text and its password to the user by two different channels. Needs\n"
    "      --out-dir. Without it every text of one create shares the password given.\n"
    "      --store-only skips sealing (no password, no texts): for captures and tests.\n"
    "      Unused invitations expire after D days (default 30).\n"
    "      --profile: the wire profile the client speaks (default random); PORT is the\n"
    "      gateway's UDP port for that profile. quic needs --cover-sni, the host name\n"
    "      its ClientHello names (lowercase a-z, 0-9, '-', '.'); ALPN is h3, the only one.\n"
    "      --suite: the data AEAD (default chacha20-poly1305, constant time on every\n"
    "      client CPU); aes-256-gcm is faster on the gateway, clients need AES-NI.\n"
    "  show [--file F | TEXT] [--password-file F]\n"
    "      Open an invitation with its password and print its fields.\n"
    "  revoke --store STORE --key KEY (--id HEX | --file F [--password-file F] |\n"
    "         --tunnel ADDR)\n"
    "      Revoke one invitation, named by its id (or a prefix of 8+ hex digits, as\n"
    "      list prints it), its text, or its tunnel address. A running dustgw drops\n"
    "      its session and refuses its intros within a second; no restart.\n"
    "  list --store STORE --key KEY\n"
    "      Print every invitation in STORE: tunnel address, expiry, profile (and cover\n"
    "      name), used/unused/expired/revoked.\n"
    "  migrate --store STORE --key KEY\n"
    "      Rewrite a store from before sealing with its records sealed under KEY; with\n"
    "      the gateways stopped (it refuses while another process has the store open).\n"
    "\n"
    "STORE is a file, or a store on etcd: etcd://HOST:PORT[,HOST:PORT...]/PREFIX (plain\n"
    "HTTP, no user: a private link only), or etcds://HOST:PORT[,...]/PREFIX?ca=FILE&\n"
    "cert=FILE&key=FILE&user=NAME&password-file=FILE[&dir=DIR] (TLS, client certificate,\n"
    "etcd user; quote it for the shell; SPEC.md §7.5).\n"
    "KEY is the server's key file: every record of a file store is sealed under a key\n"
    "derived from it, so reading or changing the store needs it.\n"
    "The password comes from --password-file, else $DUST_PASSWORD, else a prompt;\n"
    "never from the command line.\n";

enum { PW_EACH_LEN = 24 }; /* --password-each: 20 characters in groups of four */

struct opts {
	const char *out, *store, *key, *server, *tunnel, *tunnel_net, *out_dir, *pwfile, *file, *id;
	const char *profile, *cover_sni, *cover_alpn;
	unsigned port, count, expiry_days;
	int force, store_only, password_each;
	int suite; /* DUST_SUITE_*: the data AEAD (default ChaCha20-Poly1305) */
	const char *arg;
};

static int die(const char *what)
{
	fprintf(stderr, "dust-invite: %s\n", what);
	return 1;
}

static int fail(const char *what)
{
	fprintf(stderr, "dust-invite: %s: %s\n", what, dust_last_error());
	return 1;
}

static int cmd_keygen(const struct opts *o)
{
	struct dust_identity id;
	struct stat st;
	char hex[2 * DUST_PK_BYTES + 1];

	if (!o->out)
		return die("keygen needs --out KEY");
	if (!o->force && stat(o->out, &st) == 0)
		return die("key file exists; refusing to overwrite it without --force");
	if (dust_identity_generate(&id) != 0 || dust_identity_save(&id, o->out) != 0)
		return fail(o->out);
	sodium_bin2hex(hex, sizeof(hex), id.pk, sizeof(id.pk));
	printf("%s\n", hex);
	dust_identity_wipe(&id);
	return 0;
}

/* Parse "ADDR/PREFIX" (prefix optional: host prefix). */
static int parse_net(const char *text, struct dust_ipaddr *ip, unsigned *prefix)
{
	char buf[64], *slash;

	snprintf(buf, sizeof(buf), "%s", text);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	if (dust_ipaddr_parse(ip, buf) != 0)
		return -1;
	*prefix = ip->family == 4 ? 32 : 128;
	if (slash) {
		char *end;
		unsigned long p = strtoul(slash, &end, 10);

		if (*end || p > *prefix)
			return -1;
		*prefix = (unsigned)p;
	}
	return 0;
}

static void addr_add(struct dust_ipaddr *ip, uint64_t n)
{
	int last = ip->family == 4 ? 3 : 15;

	for (int i = last; i >= 0 && n; i--) {
		uint64_t v = ip->a[i] + (n & 0xff);

		ip->a[i] = (uint8_t)v;
		n = (n >> 8) + (v >> 8);
	}
}

static bool tunnel_taken(struct dust_store *st, const struct dust_ipaddr *ip)
{
	for (size_t i = 0; i < dust_store_count(st); i++)
		if (dust_ipaddr_equal(&dust_store_at(st, i)->inv.tunnel, ip))
			return true;
	return false;
}

static int addr_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct dust_ipaddr));
}

/*
 * Tunnel addresses already in the store, sorted, so handing out N new ones
 * costs N log M, not N * M (200k invitations took minutes with a scan).
 */
struct taken {
	struct dust_ipaddr *a;
	size_t n;
};

static int taken_load(struct dust_store *st, struct taken *t)
{
	t->n = dust_store_count(st);
	t->a = calloc(t->n ? t->n : 1, sizeof(*t->a));
	if (!t->a)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		t->a[i] = dust_store_at(st, i)->inv.tunnel;
		memset(t->a[i].a + (t->a[i].family == 4 ? 4 : 16), 0, t->a[i].family == 4 ? 12 : 0);
	}
	qsort(t->a, t->n, sizeof(*t->a), addr_cmp);
	return 0;
}

static bool taken_has(const struct taken *t, const struct dust_ipaddr *ip)
{
	return bsearch(ip, t->a, t->n, sizeof(*t->a), addr_cmp) != NULL;
}

/* Next free host address of net/prefix, or -1 when the net is used up. */
static int tunnel_next(const struct taken *tk, const struct dust_ipaddr *net, unsigned prefix,
                       uint64_t *cursor, struct dust_ipaddr *out)
{
	unsigned hostbits = (net->family == 4 ? 32 : 128) - prefix;
	uint64_t size = hostbits >= 63 ? UINT64_MAX : UINT64_C(1) << hostbits;

	for (; *cursor < size; (*cursor)++) {
		/* skip the network address, the gateway's first host and broadcast */
		if (*cursor < 2 || (net->family == 4 && *cursor == size - 1))
			continue;
		*out = *net;
		addr_add(out, *cursor);
		if (!taken_has(tk, out)) {
			(*cursor)++;
			return 0;
		}
	}
	return -1;
}

/* DUST_PROFILE_* named by --profile (default random), or -1. */
static int profile_of(const struct opts *o)
{
	if (!o->profile || strcmp(o->profile, "random") == 0)
		return DUST_PROFILE_RANDOM;
	if (strcmp(o->profile, "quic") == 0)
		return DUST_PROFILE_QUIC;
	return -1;
}

/* The profile options, checked before anything is read or written. */
static int profile_check(const struct opts *o)
{
	struct dust_invite probe = {0};
	int p = profile_of(o);

	if (p < 0) {
		fprintf(stderr, "dust-invite: unknown --profile '%s': random or quic\n",
		        o->profile);
		return -1;
	}
	if (p == DUST_PROFILE_RANDOM && (o->cover_sni || o->cover_alpn))
		return die("--cover-sni and --cover-alpn belong to --profile quic"), -1;
	if (p == DUST_PROFILE_RANDOM)
		return 0;
	if (!o->cover_sni)
		return die("--profile quic needs --cover-sni NAME: the host name its "
		           "ClientHello names (e.g. a site that serves HTTP/3)"),
		       -1;
	if (o->cover_alpn && strcmp(o->cover_alpn, "h3") != 0) {
		fprintf(stderr, "dust-invite: unknown --cover-alpn '%s': only h3 is defined\n",
		        o->cover_alpn);
		return -1;
	}
	if (dust_invite_cover_set(&probe, o->cover_sni) != 0)
		return fail("--cover-sni"), -1;
	return 0;
}

static int profile_apply(const struct opts *o, struct dust_invite *inv)
{
	inv->profile = (uint8_t)profile_of(o);
	if (inv->profile != DUST_PROFILE_QUIC)
		return 0;
	return dust_invite_cover_set(inv, o->cover_sni);
}

/*
 * A password of its own for one text (--password-each): 20 characters of
 * a 32-letter alphabet without 0, 1, l and o (100 bits, uniform), in groups
 * of four for reading aloud or typing.
 */
static void password_draw(char out[PW_EACH_LEN + 1])
{
	static const char abc[] = "23456789abcdefghijkmnpqrstuvwxyz";
	size_t k = 0;

	for (int i = 0; i < 20; i++) {
		if (i && i % 4 == 0)
			out[k++] = ' ';
		out[k++] = abc[randombytes_uniform(32)];
	}
	out[k] = '\0';
}

static int create_one(struct dust_store *st, const struct opts *o, const struct dust_identity *id,
                      const struct dust_ipaddr *server, const struct dust_ipaddr *tun,
                      unsigned prefix, const char *pw, unsigned n)
{
	struct dust_invite inv;
	char text[DUST_INVITE_TEXT_MAX], buf[64], own[PW_EACH_LEN + 1];
	uint64_t expiry = (uint64_t)time(NULL) + (uint64_t)o->expiry_days * 86400;
	int rc = -1;

	if (dust_invite_new(&inv, id, server, (uint16_t)o->port, tun, (uint8_t)prefix, expiry) != 0)
		return fail("invitation"), -1;
	if (profile_apply(o, &inv) != 0) {
		fail("--cover-sni");
		goto out;
	}
	inv.suite = (uint8_t)o->suite;
	if (o->password_each) {
		password_draw(own);
		pw = own;
	}
	if (!o->store_only && dust_invite_seal(&inv, pw, strlen(pw), text, sizeof(text)) != 0) {
		fail("seal");
		goto out;
	}
	if (dust_store_add(st, &inv) != 0) {
		fail("store");
		goto out;
	}
	if (o->store_only)
		rc = 0;
	else if (o->out_dir)
		rc = outdir_write(o->out_dir, n, text, o->password_each ? own : NULL);
	else
		rc = printf("# invitation %u, tunnel %s\n%s\n", n,
		            dust_ipaddr_format(tun, buf, sizeof(buf)), text) < 0;
out:
	dust_invite_wipe(&inv);
	sodium_memzero(text, sizeof(text));
	sodium_memzero(own, sizeof(own));
	return rc;
}

static int cmd_create(const struct opts *o)
{
	struct dust_identity id;
	struct dust_ipaddr server, net;
	struct dust_store *st;
	char pw[DUST_PASSWORD_MAX] = "";
	unsigned prefix;
	uint64_t cursor = 0;
	struct taken tk = {0};
	unsigned written = 0;
	bool new_store;
	int rc = 1;

	if (!o->store || !o->key || !o->server || !o->port || (!o->tunnel == !o->tunnel_net))
		return die("create needs --store, --key, --server, --port and one of "
		           "--tunnel or --tunnel-net (see --help)");
	if (o->port > 65535 || o->count == 0)
		return die("bad --port or --count");
	if (profile_check(o) != 0)
		return 1;
	if (dust_ipaddr_parse(&server, o->server) != 0)
		return fail("--server");
	if (parse_net(o->tunnel ? o->tunnel : o->tunnel_net, &net, &prefix) != 0)
		return die("bad tunnel address: expected ADDR/PREFIX");
	if (o->tunnel && o->count != 1)
		return die("--tunnel names one address: use --tunnel-net for --count > 1");
	if (dust_identity_load(&id, o->key) != 0)
		return fail("--key");
	if (o->password_each && (!o->out_dir || o->pwfile || o->store_only))
		return die("--password-each writes each text's own password beside it: it needs "
		           "--out-dir, and takes no --password-file or --store-only");
	if (!o->store_only && !o->password_each &&
	    dust_password_read(pw, sizeof(pw), o->pwfile, 1) != 0)
		goto out_wipe;
	/*
	 * The password is all that keeps a text an adversary holds (a seized
	 * phone, a copied message) from being opened offline: Argon2id slows a
	 * guess to about 0.3 s, which a short password does not survive.
	 */
	if (!o->store_only && !o->password_each && strlen(pw) < DUST_PASSWORD_MIN) {
		die("the password must be at least 12 characters: it is all that protects "
		    "the invitation texts from offline guessing");
		goto out_wipe;
	}
	/* every output checked before the store changes */
	if (o->out_dir && outdir_prepare(o->out_dir, o->count, o->password_each) != 0)
		goto out_wipe;
	new_store = access(o->store, F_OK) != 0 && errno == ENOENT;
	st = dust_store_open(o->store, DUST_STORE_CREATE, &id);
	if (!st) {
		fail("--store");
		goto out_wipe;
	}
	/*
	 * From here to the save no other writer changes the store, so the
	 * addresses picked are free and nobody's invitations are overwritten.
	 * Sealing (Argon2id) happens inside: the text seals the address. Other
	 * creates wait for it; a running dustgw does not.
	 */
	if (dust_store_lock(st) != 0) {
		fail("--store");
		goto out_close;
	}
	if (taken_load(st, &tk) != 0) {
		die("out of memory");
		goto out_close;
	}
	for (unsigned i = 0; i < o->count; i++) {
		struct dust_ipaddr tun = net;

		if (o->tunnel_net && tunnel_next(&tk, &net, prefix, &cursor, &tun) != 0) {
			fprintf(stderr, "dust-invite: %s has no free address left after %u\n",
			        o->tunnel_net, i);
			goto out_close;
		}
		if (o->tunnel && tunnel_taken(st, &tun)) {
			die("that tunnel address already belongs to an invitation in the store");
			goto out_close;
		}
		if (create_one(st, o, &id, &server, &tun, prefix, pw, i + 1) != 0)
			goto out_close;
		written = i + 1;
	}
	if (!o->store_only && !o->out_dir && fflush(stdout) != 0) {
		fprintf(stderr, "dust-invite: stdout: %s\n", strerror(errno));
		goto out_close;
	}
	if (dust_store_save(st) != 0) {
		fail("saving the store");
		goto out_close;
	}
	if (o->out_dir && outdir_commit(o->out_dir, o->count, o->password_each) != 0)
		goto out_close;
	fprintf(stderr, "dust-invite: %u invitation(s) added to %s (%zu in all)%s%s\n", o->count,
	        o->store, dust_store_count(st), o->out_dir ? "; texts in " : "",
	        o->out_dir ? o->out_dir : "");
	rc = 0;
out_close:
	free(tk.a);
	if (rc != 0 && new_store)
		dust_store_discard(st); /* a failed create leaves no store where there was none */
	else
		dust_store_close(st);
	if (rc != 0 && o->out_dir)
		outdir_abort(o->out_dir, written + 1, o->password_each);
out_wipe:
	sodium_memzero(pw, sizeof(pw));
	dust_identity_wipe(&id);
	return rc;
}

static void print_invite(const struct dust_invite *inv)
{
	char a[64], t[64], pk[2 * DUST_PK_BYTES + 1], id[2 * DUST_ID_BYTES + 1];
	time_t exp = (time_t)inv->expiry;
	char when[64];

	sodium_bin2hex(pk, sizeof(pk), inv->server_pk, DUST_PK_BYTES);
	sodium_bin2hex(id, sizeof(id), inv->id, DUST_ID_BYTES);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&exp));
	printf("server:     %s port %u\n", dust_ipaddr_format(&inv->server, a, sizeof(a)),
	       inv->port);
	printf("server key: %s\n", pk);
	if (inv->profile == DUST_PROFILE_QUIC)
		printf("profile:    quic (cover %s, alpn h3)\n", inv->cover_sni);
	else
		printf("profile:    random\n");
	printf("tunnel:     %s/%u\n", dust_ipaddr_format(&inv->tunnel, t, sizeof(t)),
	       inv->tunnel_prefix);
	printf("id:         %s\n", id);
	printf("suite:      %s\n", dust_suite_name(inv->suite));
	printf("expires:    %s%s\n", when, (uint64_t)time(NULL) > inv->expiry ? " (expired)" : "");
}

static int cmd_show(const struct opts *o)
{
	static char text[8192];
	struct dust_invite inv;
	char pw[DUST_PASSWORD_MAX];
	int rc;

	if (o->file) {
		FILE *f = fopen(o->file, "r");
		size_t n;

		if (!f)
			return fprintf(stderr, "dust-invite: %s: %s\n", o->file, strerror(errno)),
			       1;
		n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = '\0';
		fclose(f);
	} else if (o->arg) {
		/* argv is readable by every local user (ps): with it, a guess at the password */
		fprintf(stderr, "dust-invite: warning: an invitation on the command line is "
		                "visible to other users (ps); use --file\n");
		snprintf(text, sizeof(text), "%s", o->arg);
	} else {
		return die("show needs --file F or the invitation text");
	}
	if (dust_password_read(pw, sizeof(pw), o->pwfile, 0) != 0)
		return 1;
	rc = dust_invite_open(&inv, text, pw, strlen(pw));
	sodium_memzero(pw, sizeof(pw));
	if (rc != 0)
		return fail("cannot open the invitation");
	print_invite(&inv);
	dust_invite_wipe(&inv);
	return 0;
}

/*
 * The store opened with the server key, which its sealed records need
 * (SPEC §7.6); records that do not open under it are skipped, and said.
 */
static struct dust_store *store_open(const struct opts *o, int flags)
{
	struct dust_identity id;
	struct dust_store *st;

	if (dust_identity_load(&id, o->key) != 0) {
		fail("--key");
		return NULL;
	}
	st = dust_store_open(o->store, flags, &id);
	dust_identity_wipe(&id);
	if (!st)
		fail(o->store);
	else if (dust_store_refused(st))
		fprintf(stderr,
		        "dust-invite: %s: %" PRIu64 " records refused: not sealed under this "
		        "server's key (written by someone without it)\n",
		        o->store, dust_store_refused(st));
	return st;
}

static int cmd_list(const struct opts *o)
{
	struct dust_store *st;
	uint64_t now = (uint64_t)time(NULL);
	size_t used = 0, expired = 0, revoked = 0;

	if (!o->store || !o->key)
		return die("list needs --store STORE --key KEY");
	/* reads only: creates no journal or lock file, takes no lock */
	st = store_open(o, DUST_STORE_READONLY);
	if (!st)
		return 1;
	printf("%-16s  %-24s  %-20s  %-24s  %s\n", "id", "tunnel", "expires", "profile", "state");
	for (size_t i = 0; i < dust_store_count(st); i++) {
		const struct dust_store_entry *e = dust_store_at(st, i);
		char id[2 * DUST_ID_BYTES + 1], addr[48], tun[64], when[32], key[17];
		char prof[8 + DUST_COVER_SNI_MAX];
		time_t exp = (time_t)e->inv.expiry;
		const char *state = "unused";

		sodium_bin2hex(id, sizeof(id), e->inv.id, DUST_ID_BYTES);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", gmtime(&exp));
		snprintf(tun, sizeof(tun), "%s/%u",
		         dust_ipaddr_format(&e->inv.tunnel, addr, sizeof(addr)),
		         e->inv.tunnel_prefix);
		if (e->inv.profile == DUST_PROFILE_QUIC)
			snprintf(prof, sizeof(prof), "quic:%s", e->inv.cover_sni);
		else
			snprintf(prof, sizeof(prof), "random");
		if (e->revoked) {
			state = "revoked";
			revoked++;
		} else if (e->bound) {
			sodium_bin2hex(key, sizeof(key), e->client_pk, 8);
			state = "used";
			used++;
		} else if (now > e->inv.expiry) {
			state = "expired";
			expired++;
		}
		printf("%.16s  %-24s  %-20s  %-24s  %s%s%s\n", id, tun, when, prof, state,
		       e->bound && !e->revoked ? " by client " : "",
		       e->bound && !e->revoked ? key : "");
	}
	printf("%zu invitations: %zu used, %zu expired, %zu unused, %zu revoked\n",
	       dust_store_count(st), used, expired, dust_store_count(st) - used - expired - revoked,
	       revoked);
	dust_store_close(st);
	return 0;
}

/* The entry an id prefix names (at least 8 hex digits, as list prints 16). */
static struct dust_store_entry *find_prefix(struct dust_store *st, const char *hex)
{
	struct dust_store_entry *hit = NULL;
	size_t len = strlen(hex);

	if (len < 8 || len > 2 * DUST_ID_BYTES || strspn(hex, "0123456789abcdefABCDEF") != len) {
		die("--id wants 8 to 32 hex digits");
		return NULL;
	}
	for (size_t i = 0; i < dust_store_count(st); i++) {
		struct dust_store_entry *e = dust_store_at(st, i);
		char id[2 * DUST_ID_BYTES + 1];

		sodium_bin2hex(id, sizeof(id), e->inv.id, DUST_ID_BYTES);
		if (strncasecmp(id, hex, len) != 0)
			continue;
		if (hit) {
			die("--id prefix matches more than one invitation: give more digits");
			return NULL;
		}
		hit = e;
	}
	if (!hit)
		die("no invitation with that id in the store");
	return hit;
}

static struct dust_store_entry *find_tunnel(struct dust_store *st, const char *text)
{
	struct dust_ipaddr ip;

	if (dust_ipaddr_parse(&ip, text) != 0) {
		die("--tunnel wants an address");
		return NULL;
	}
	for (size_t i = 0; i < dust_store_count(st); i++) {
		struct dust_store_entry *e = dust_store_at(st, i);

		if (dust_ipaddr_equal(&e->inv.tunnel, &ip))
			return e;
	}
	die("no invitation with that tunnel address in the store");
	return NULL;
}

/* Open the invitation text of --file with its password: its id names it. */
static struct dust_store_entry *find_text(struct dust_store *st, const struct opts *o)
{
	static char text[8192];
	struct dust_store_entry *e = NULL;
	struct dust_invite inv;
	char pw[DUST_PASSWORD_MAX];
	FILE *f = fopen(o->file, "r");
	size_t n;
	int rc;

	if (!f) {
		fprintf(stderr, "dust-invite: %s: %s\n", o->file, strerror(errno));
		return NULL;
	}
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	if (dust_password_read(pw, sizeof(pw), o->pwfile, 0) != 0)
		return NULL;
	rc = dust_invite_open(&inv, text, pw, strlen(pw));
	sodium_memzero(pw, sizeof(pw));
	sodium_memzero(text, sizeof(text));
	if (rc != 0) {
		fail("cannot open the invitation");
		return NULL;
	}
	e = dust_store_find(st, inv.id);
	dust_invite_wipe(&inv);
	if (!e)
		die("that invitation is not in the store");
	return e;
}

static int cmd_revoke(const struct opts *o)
{
	struct dust_store *st;
	struct dust_store_entry *e;
	char id[2 * DUST_ID_BYTES + 1], addr[48];
	int rc;

	if (!o->store || !o->key || (!!o->id + !!o->file + !!o->tunnel) != 1)
		return die("revoke needs --store, --key and one of --id, --file or --tunnel");
	st = store_open(o, 0);
	if (!st)
		return 1;
	e = o->id     ? find_prefix(st, o->id)
	    : o->file ? find_text(st, o)
	              : find_tunnel(st, o->tunnel);
	if (!e) {
		dust_store_close(st);
		return 1;
	}
	sodium_bin2hex(id, sizeof(id), e->inv.id, DUST_ID_BYTES);
	rc = dust_store_revoke(st, e, (uint64_t)time(NULL));
	if (rc == -EALREADY)
		fprintf(stderr, "dust-invite: %.16s (%s) was already revoked\n", id,
		        dust_ipaddr_format(&e->inv.tunnel, addr, sizeof(addr)));
	else if (rc != 0)
		fail("revoke");
	else
		fprintf(stderr, "dust-invite: revoked %.16s (tunnel %s)\n", id,
		        dust_ipaddr_format(&e->inv.tunnel, addr, sizeof(addr)));
	dust_store_close(st);
	return rc == 0 || rc == -EALREADY ? 0 : 1;
}

/* A store from before sealing rewritten sealed (SPEC §7.6); a sealed one is left as it is. */
static int cmd_migrate(const struct opts *o)
{
	struct dust_store *st;

	if (!o->store || !o->key)
		return die("migrate needs --store STORE --key KEY");
	st = store_open(o, DUST_STORE_MIGRATE);
	if (!st)
		return 1;
	fprintf(stderr, "dust-invite: %s: sealed, %zu invitations\n", o->store,
	        dust_store_count(st));
	dust_store_close(st);
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"out", 1, 0, 'o'},           {"store", 1, 0, 's'},
	    {"key", 1, 0, 'k'},           {"server", 1, 0, 'S'},
	    {"port", 1, 0, 'p'},          {"tunnel", 1, 0, 't'},
	    {"tunnel-net", 1, 0, 'T'},    {"count", 1, 0, 'n'},
	    {"expiry-days", 1, 0, 'e'},   {"out-dir", 1, 0, 'd'},
	    {"password-file", 1, 0, 'P'}, {"file", 1, 0, 'f'},
	    {"force", 0, 0, 'F'},         {"store-only", 0, 0, 'O'},
	    {"profile", 1, 0, 'R'},       {"cover-sni", 1, 0, 'N'},
	    {"cover-alpn", 1, 0, 'A'},    {"id", 1, 0, 'I'},
	    {"help", 0, 0, 'h'},          {"suite", 1, 0, 'C'},
	    {"password-each", 0, 0, 'E'}, {0, 0, 0, 0},
	};
	int c;

	o->count = 1;
	o->expiry_days = 30;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->out = optarg;
			break;
		case 's':
			o->store = optarg;
			break;
		case 'k':
			o->key = optarg;
			break;
		case 'S':
			o->server = optarg;
			break;
		case 'p':
			if (!numopt_uint("dust-invite", "port", optarg, 1, 65535, &o->port))
				return -1;
			break;
		case 't':
			o->tunnel = optarg;
			break;
		case 'T':
			o->tunnel_net = optarg;
			break;
		case 'n':
			if (!numopt_uint("dust-invite", "count", optarg, 1, UINT_MAX, &o->count))
				return -1;
			break;
		case 'e':
			if (!numopt_uint("dust-invite", "expiry-days", optarg, 0, 36500,
			                 &o->expiry_days))
				return -1;
			break;
		case 'd':
			o->out_dir = optarg;
			break;
		case 'P':
			o->pwfile = optarg;
			break;
		case 'E':
			o->password_each = 1;
			break;
		case 'f':
			o->file = optarg;
			break;
		case 'F':
			o->force = 1;
			break;
		case 'O':
			o->store_only = 1;
			break;
		case 'R':
			o->profile = optarg;
			break;
		case 'N':
			o->cover_sni = optarg;
			break;
		case 'A':
			o->cover_alpn = optarg;
			break;
		case 'I':
			o->id = optarg;
			break;
		case 'C':
			o->suite = dust_suite_parse(optarg);
			if (o->suite < 0) {
				fprintf(stderr, "dust-invite: --suite: %s\n", dust_last_error());
				return -1;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fputs(usage, stderr);
			return -1;
		}
	}
	o->arg = optind < argc ? argv[optind] : NULL;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	const char *cmd;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (dust_init() != 0)
		return die("libsodium failed to initialise");
	if (dust_core_dumps_off() != 0) /* keys, K_inv and passwords: never in a core */
		return fail("core dumps");
	cmd = argv[1];
	if (parse(argc - 1, argv + 1, &o) != 0)
		return 2;
	if (strcmp(cmd, "keygen") == 0)
		return cmd_keygen(&o);
	if (strcmp(cmd, "create") == 0)
		return cmd_create(&o);
	if (strcmp(cmd, "show") == 0)
		return cmd_show(&o);
	if (strcmp(cmd, "list") == 0)
		return cmd_list(&o);
	if (strcmp(cmd, "revoke") == 0)
		return cmd_revoke(&o);
	if (strcmp(cmd, "migrate") == 0)
		return cmd_migrate(&o);
	fprintf(stderr, "dust-invite: unknown command '%s'\n%s", cmd, usage);
	return 2;
}
