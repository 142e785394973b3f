/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-dpi --quic: does a capture look like QUIC v1 to a parser that knows
 * the protocol, as the GFW's QUIC decryption (2024-) and nDPI do? Every
 * datagram on the server port must be well-formed QUIC packets, every
 * Initial must decrypt with the public keys (RFC 9001 §5) to a ClientHello
 * (from the client) or a ServerHello (from the server), and connection IDs
 * must stay consistent within each connection, and each hello must be split
 * over its Initials as Chromium 156 splits it. The QUIC reading is its own
 * (qwire.c), not libdust's: a checker must not share the parser it checks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpi.h"
#include "qwire.h"

enum {
	SLOTS = 4,
	SNIS = 8,
	TLS_LEGACY_VERSION = 0x0303, /* RFC 8446 §4.1.2 */
	TLS_EXT_SERVER_NAME = 0,     /* RFC 6066 §3 */
	/*
	 * Chromium 156's hello (SPEC §12.2, 7 captured hellos and their
	 * resends): packet 1 holds the ClientHello's head [0, a) and tail
	 * [b, end), packet 2 the middle [a, b), b - a = ceil((end + 4) / 2);
	 * a resend (4, 6, 8) holds one of the two's spans. Each hello Initial
	 * had 3..12 CRYPTO frames, 2..10 PINGs and 2..6 runs of PADDING: the
	 * captures' ranges, not Chromium's bounds (its chaos protector shuffles
	 * PADDING frames after spreading them, so runs can merge; a captured
	 * resend has 7), so they are counted, not flagged.
	 */
	HEAD_MIN = 58,
	HEAD_MAX = 84,
	CRYPTO_MIN = 3,
	CRYPTO_MAX = 12,
	PINGS_MIN = 2,
	PINGS_MAX = 10,
	PADS_MIN = 2,
	PADS_MAX = 6,
	HELLO_PKTS = 8, /* Initials with CRYPTO kept per attempt: Chromium sends 5 */
	SPANS = 16,     /* CRYPTO frames kept per Initial: Chromium's have 12 at most */
};

/* The CRYPTO data and frames of one client Initial, as the wire shows them. */
struct hello_pkt {
	uint64_t pn;
	size_t dgram;                  /* the payload it came in, for the report */
	uint16_t lo[SPANS], hi[SPANS]; /* its CRYPTO spans, sorted; touching ones merged */
	uint8_t nspans;
	uint16_t crypto, pings, pads; /* CRYPTO and PING frames, runs of PADDING */
};

/* One connection attempt of a client: its first DCID and the CRYPTO stream. */
struct attempt {
	uint8_t odcid[QW_CID_MAX], odcid_len;
	struct qw_crypto cb;             /* the handshake stream being reassembled */
	size_t hello_len;                /* the well-formed ClientHello's length, once complete */
	struct hello_pkt pk[HELLO_PKTS]; /* the Initials that carried CRYPTO data */
	unsigned npk;                    /* how many did (may exceed HELLO_PKTS) */
	bool judged;
};

struct cid {
	uint8_t b[QW_CID_MAX], len;
};

/* A client endpoint talking to the server port. */
struct conn {
	uint8_t family, ip[16];
	uint16_t port;
	struct attempt *a[SLOTS]; /* newest attempts, a[0] first */
	struct cid client_scid;
	struct cid server[SLOTS]; /* server CIDs seen in its Initials, newest first */
};

struct qstate {
	const struct dpi_capture *c;
	int port;
	struct conn *conns;
	size_t nconns, cap;
	uint64_t dgrams, initials_c, initials_s, hellos, server_hellos, server_acks, shorts,
	    handshakes, migrated, no_cid, split_ok, split_bad;
	uint64_t bad, layout_odd;
	char first_bad[200], first_odd[160];
	char sni[SNIS][64];
	unsigned nsni;
};

static void bad(struct qstate *q, size_t i, const char *why)
{
	if (!q->bad++)
		snprintf(q->first_bad, sizeof(q->first_bad), "payload %zu (%u bytes): %s", i,
		         q->c->dg[i].len, why);
}

static struct conn *conn_of(struct qstate *q, const struct dpi_flow_key *k, bool c2s)
{
	const uint8_t *ip = c2s ? k->src : k->dst;
	uint16_t port = c2s ? k->sport : k->dport;

	for (size_t i = 0; i < q->nconns; i++)
		if (q->conns[i].family == k->family && q->conns[i].port == port &&
		    !memcmp(q->conns[i].ip, ip, 16))
			return &q->conns[i];
	if (q->nconns == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 64;
		struct conn *n = realloc(q->conns, cap * sizeof(*n));

		if (!n)
			return NULL;
		q->conns = n;
		q->cap = cap;
	}
	memset(&q->conns[q->nconns], 0, sizeof(q->conns[0]));
	q->conns[q->nconns].family = k->family;
	memcpy(q->conns[q->nconns].ip, ip, 16);
	q->conns[q->nconns].port = port;
	return &q->conns[q->nconns++];
}

static void cid_push(struct cid *ring, const uint8_t *b, uint8_t len)
{
	for (int i = 0; i < SLOTS; i++)
		if (ring[i].len == len && !memcmp(ring[i].b, b, len))
			return;
	memmove(ring + 1, ring, (SLOTS - 1) * sizeof(*ring));
	memcpy(ring[0].b, b, len);
	ring[0].len = len;
}

/* Does dg + 1 start with one of ring's CIDs (a short header's DCID)? */
static bool cid_prefix(const struct cid *ring, const uint8_t *dg, size_t len)
{
	for (int i = 0; i < SLOTS; i++)
		if (ring[i].len && 1u + ring[i].len <= len &&
		    !memcmp(dg + 1, ring[i].b, ring[i].len))
			return true;
	return false;
}

static bool cid_in(const struct cid *ring, const uint8_t *b, uint8_t len)
{
	for (int i = 0; i < SLOTS; i++)
		if (ring[i].len && ring[i].len == len && !memcmp(ring[i].b, b, len))
			return true;
	return false;
}

static bool cid_eq(const struct cid *c, const uint8_t *b, uint8_t len)
{
	return c->len == len && !memcmp(c->b, b, len);
}

/* ---- frames and hellos --------------------------------------------------------- */

/* Keep a CRYPTO frame's span [off, off + len) in order (len <= QW_CRYPTO_MAX). */
static void span_add(struct hello_pkt *hp, uint64_t off, uint64_t len)
{
	size_t i;

	if (hp->crypto++ >= SPANS)
		return; /* too many CRYPTO frames: the count alone fails the split */
	for (i = hp->nspans; i > 0 && hp->lo[i - 1] > off; i--) {
		hp->lo[i] = hp->lo[i - 1];
		hp->hi[i] = hp->hi[i - 1];
	}
	hp->lo[i] = (uint16_t)off;
	hp->hi[i] = (uint16_t)(off + len);
	hp->nspans++;
}

/* Merge spans that touch: the ClientHello byte ranges the Initial carried. */
static void spans_merge(struct hello_pkt *hp)
{
	uint8_t n = 0;

	for (uint8_t i = 0; i < hp->nspans; i++) {
		if (n && hp->hi[n - 1] == hp->lo[i]) {
			hp->hi[n - 1] = hp->hi[i];
			continue;
		}
		hp->lo[n] = hp->lo[i];
		hp->hi[n++] = hp->hi[i];
	}
	hp->nspans = n;
}

/*
 * Frames an Initial may carry (RFC 9000 §12.4); CRYPTO data into a, the
 * frames as the wire shows them into hp.
 */
static bool walk(const uint8_t *f, size_t n, struct attempt *a, struct hello_pkt *hp)
{
	size_t pos = 0;
	uint64_t off, len, v;
	bool padding = false; /* the frame before was PADDING: its run goes on */

	while (pos < n) {
		uint8_t type = f[pos];

		switch (type) {
		case 0x00: /* PADDING */
			hp->pads += !padding;
			pos++;
			break;
		case 0x01: /* PING */
			hp->pings++;
			pos++;
			break;
		case 0x02:
		case 0x03:
			if (!qw_ack_skip(f, n, &pos, 256))
				return false;
			break;
		case 0x06: /* CRYPTO */
			pos++;
			if (!qw_varint(f, n, &pos, &off) || !qw_varint(f, n, &pos, &len) ||
			    len > n - pos || !qw_crypto_put(&a->cb, off, f + pos, len))
				return false;
			span_add(hp, off, len);
			pos += len;
			break;
		case 0x1c: /* CONNECTION_CLOSE (transport): code, frame type, reason */
			pos++;
			if (!qw_varint(f, n, &pos, &v) || !qw_varint(f, n, &pos, &v) ||
			    !qw_varint(f, n, &pos, &len) || len > n - pos)
				return false;
			pos += len;
			break;
		default:
			return false;
		}
		padding = type == 0x00;
	}
	return true;
}

/* A ClientHello's structure (RFC 8446 §4.1.2), and its SNI for the report. */
static bool client_hello_ok(const uint8_t *h, size_t n, char *sni, size_t sni_cap)
{
	size_t pos = 4 + 2 + 32, end;

	sni[0] = '\0';
	if (n < pos + 1 || qw_be16(h + 4) != TLS_LEGACY_VERSION)
		return false;
	pos += 1 + (size_t)h[pos];
	if (n < pos + 2 || n - pos - 2 < qw_be16(h + pos))
		return false;
	pos += 2 + qw_be16(h + pos);
	if (n < pos + 1 || n - pos - 1 < h[pos])
		return false;
	pos += 1 + (size_t)h[pos];
	if (n < pos + 2 || qw_be16(h + pos) != n - pos - 2)
		return false;
	for (pos += 2, end = n; pos < end;) {
		uint16_t type, len;

		if (end - pos < 4)
			return false;
		type = qw_be16(h + pos);
		len = qw_be16(h + pos + 2);
		if (end - pos - 4 < len)
			return false;
		if (type == TLS_EXT_SERVER_NAME && len >= 5 && qw_be16(h + pos + 7) <= len - 5)
			snprintf(sni, sni_cap, "%.*s", (int)qw_be16(h + pos + 7), h + pos + 9);
		pos += 4 + (size_t)len;
	}
	return true;
}

static void sni_note(struct qstate *q, const char *sni)
{
	for (unsigned i = 0; i < q->nsni; i++)
		if (!strcmp(q->sni[i], sni))
			return;
	if (q->nsni < SNIS)
		snprintf(q->sni[q->nsni++], sizeof(q->sni[0]), "%s", sni);
}

/* Judge an attempt's ClientHello once it is complete. */
static void hello_judge(struct qstate *q, struct attempt *a, size_t i)
{
	char sni[64];
	size_t n = qw_crypto_message(&a->cb, QW_TLS_CLIENT_HELLO);

	if (a->judged || !n)
		return;
	a->judged = true;
	if (!client_hello_ok(a->cb.b, n, sni, sizeof(sni))) {
		bad(q, i, "Initial CRYPTO data is no well-formed ClientHello");
		return;
	}
	a->hello_len = n;
	q->hellos++;
	sni_note(q, sni[0] ? sni : "(none)");
}

/* ---- the hello's split ------------------------------------------------------------- */

/* Keep an Initial's CRYPTO spans and frame counts for the split (not one without CRYPTO). */
static void hello_pkt_keep(struct attempt *a, struct hello_pkt *hp)
{
	if (!hp->crypto)
		return; /* an ACK or a CONNECTION_CLOSE: no hello bytes */
	spans_merge(hp);
	if (a->npk < HELLO_PKTS)
		a->pk[a->npk] = *hp;
	a->npk += a->npk <= HELLO_PKTS;
}

/* The Initial of a with packet number pn that carried CRYPTO data, or NULL. */
static const struct hello_pkt *pkt_of(const struct attempt *a, uint64_t pn)
{
	for (unsigned k = 0; k < a->npk && k < HELLO_PKTS; k++)
		if (a->pk[k].pn == pn)
			return &a->pk[k];
	return NULL;
}

static bool spans_eq(const struct hello_pkt *x, const struct hello_pkt *y)
{
	return x->nspans == y->nspans && !memcmp(x->lo, y->lo, x->nspans * sizeof(x->lo[0])) &&
	       !memcmp(x->hi, y->hi, x->nspans * sizeof(x->hi[0]));
}

/* "packet N holds [lo, hi) ...": what an Initial carried, for a reason. */
static void spans_say(const struct hello_pkt *p, char *out, size_t cap)
{
	size_t n = (size_t)snprintf(out, cap, "packet %llu holds", (unsigned long long)p->pn);

	for (uint8_t i = 0; i < p->nspans && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, " [%u, %u)", p->lo[i], p->hi[i]);
}

/* A hello Initial's frames within the captured Chromium 156 hellos' ranges (SPEC §12.2)? */
static bool frames_ok(const struct hello_pkt *p, char *why, size_t cap)
{
	if (p->crypto >= CRYPTO_MIN && p->crypto <= CRYPTO_MAX && p->pings >= PINGS_MIN &&
	    p->pings <= PINGS_MAX && p->pads >= PADS_MIN && p->pads <= PADS_MAX)
		return true;
	snprintf(why, cap,
	         "packet %llu has %u CRYPTO frames, %u PINGs, %u PADDING runs "
	         "(the captures: %d..%d, %d..%d, %d..%d)",
	         (unsigned long long)p->pn, p->crypto, p->pings, p->pads, CRYPTO_MIN, CRYPTO_MAX,
	         PINGS_MIN, PINGS_MAX, PADS_MIN, PADS_MAX);
	return false;
}

/*
 * Packet 1 holds the head [0, a) and the tail [b, end), a in 58..84;
 * packet 2 the middle [a, b), b - a = ceil((end + 4) / 2). *at: the
 * payload to name.
 */
static bool halves_ok(const struct hello_pkt *p1, const struct hello_pkt *p2, size_t end, char *why,
                      size_t cap, size_t *at)
{
	*at = p1->dgram;
	if (p1->nspans != 2 || p1->lo[0] != 0 || p1->hi[1] != end) {
		spans_say(p1, why, cap);
		snprintf(why + strlen(why), cap - strlen(why), ", not a head and the tail of %zu",
		         end);
		return false;
	}
	if (p1->hi[0] < HEAD_MIN || p1->hi[0] > HEAD_MAX) {
		snprintf(why, cap, "packet 1's head ends at %u, not in %d..%d", p1->hi[0], HEAD_MIN,
		         HEAD_MAX);
		return false;
	}
	*at = p2->dgram;
	if (p2->nspans != 1 || p2->lo[0] != p1->hi[0] || p2->hi[0] != p1->lo[1]) {
		spans_say(p2, why, cap);
		snprintf(why + strlen(why), cap - strlen(why), ", not the middle [%u, %u)",
		         p1->hi[0], p1->lo[1]);
		return false;
	}
	if ((size_t)(p2->hi[0] - p2->lo[0]) != (end + 5) / 2) {
		snprintf(why, cap, "the middle is %u bytes, not ceil((%zu + 4) / 2) = %zu",
		         p2->hi[0] - p2->lo[0], end, (end + 5) / 2);
		return false;
	}
	return true;
}

/*
 * Is a's hello split over its Initials as Chromium 156 splits it (SPEC
 * §12.2)? Packets 1 and 2 split it (halves_ok), and every other Initial
 * with CRYPTO data (a resend) holds exactly packet 1's spans or packet
 * 2's. False with the reason in why and the payload to name in *at.
 */
static bool split_ok(const struct attempt *a, char *why, size_t cap, size_t *at)
{
	const struct hello_pkt *p1 = pkt_of(a, 1), *p2 = pkt_of(a, 2);

	*at = a->pk[0].dgram;
	if (a->npk > HELLO_PKTS) {
		snprintf(why, cap, "more than %d Initials carry ClientHello bytes", HELLO_PKTS);
		return false;
	}
	for (unsigned k = 0; k < a->npk; k++) {
		*at = a->pk[k].dgram;
		if (a->pk[k].crypto > SPANS) { /* its spans were not all kept */
			snprintf(why, cap, "packet %llu has %u CRYPTO frames",
			         (unsigned long long)a->pk[k].pn, a->pk[k].crypto);
			return false;
		}
	}
	*at = a->pk[0].dgram;
	if (!p1 || !p2) {
		snprintf(why, cap, "packets 1 and 2 do not both carry ClientHello bytes");
		return false;
	}
	if (!halves_ok(p1, p2, a->hello_len, why, cap, at))
		return false;
	for (unsigned k = 0; k < a->npk; k++) {
		*at = a->pk[k].dgram;
		if (!spans_eq(&a->pk[k], p1) && !spans_eq(&a->pk[k], p2)) {
			spans_say(&a->pk[k], why, cap);
			snprintf(why + strlen(why), cap - strlen(why),
			         ": neither packet 1's spans nor packet 2's");
			return false;
		}
	}
	return true;
}

/* Judge the split of a's hello once none of its Initials can come any more. */
static void split_judge(struct qstate *q, const struct attempt *a)
{
	char why[120], msg[sizeof(why) + 40];
	size_t at;

	if (!a->hello_len)
		return; /* no well-formed hello: flagged or counted incomplete elsewhere */
	for (uint64_t pn = 1; pn <= 2; pn++) {
		const struct hello_pkt *p = pkt_of(a, pn);

		if (p && !frames_ok(p, why, sizeof(why)) && !q->layout_odd++)
			snprintf(q->first_odd, sizeof(q->first_odd), "payload %zu: %s", p->dgram,
			         why);
	}
	if (split_ok(a, why, sizeof(why), &at)) {
		q->split_ok++;
		return;
	}
	q->split_bad++;
	snprintf(msg, sizeof(msg), "hello not split as Chromium 156's: %s", why);
	bad(q, at, msg);
}

/* ---- packets --------------------------------------------------------------------- */

/* cn's attempt for h's DCID; a new one takes the oldest's slot, once that is judged. */
static struct attempt *attempt_of(struct qstate *q, struct conn *cn, const struct qw_long *h)
{
	struct attempt *a;

	for (int s = 0; s < SLOTS; s++)
		if (cn->a[s] && cn->a[s]->odcid_len == h->dcid_len &&
		    !memcmp(cn->a[s]->odcid, h->dcid, h->dcid_len))
			return cn->a[s];
	a = cn->a[SLOTS - 1];
	if (a)
		split_judge(q, a);
	else
		a = malloc(sizeof(*a));
	if (!a)
		return NULL;
	memset(a, 0, sizeof(*a));
	memcpy(a->odcid, h->dcid, h->dcid_len);
	a->odcid_len = h->dcid_len;
	memmove(cn->a + 1, cn->a, (SLOTS - 1) * sizeof(cn->a[0]));
	cn->a[0] = a;
	return a;
}

/*
 * Open an Initial of either side with the keys of each of cn's attempts in
 * turn (RFC 9001 §5.2: both sides' keys come from the client's first DCID):
 * the attempt's slot, its frames in frames; -1 if none opens it.
 */
static int attempt_open(const struct conn *cn, const uint8_t *p, const struct qw_long *h,
                        bool server, uint8_t *frames, size_t cap, size_t *plen, uint64_t *pn)
{
	struct qw_keys k;

	for (int s = 0; s < SLOTS && h->length <= cap; s++)
		if (cn->a[s] && qw_initial_keys(cn->a[s]->odcid, cn->a[s]->odcid_len, server, &k) &&
		    qw_open(&k, p, h, frames, plen, pn))
			return s;
	return -1;
}

/*
 * A client Initial after the server's: its DCID is now the server's CID
 * (RFC 9000 §7.2), its keys still those of an attempt's first DCID (RFC
 * 9001 §5.2), as a browser's ACK of the server's Initials is sent.
 */
static void client_initial_later(struct qstate *q, struct conn *cn, const uint8_t *p,
                                 const struct qw_long *h, size_t i)
{
	uint8_t frames[2048];
	size_t plen = 0;
	struct hello_pkt hp = {.dgram = i};
	int s = attempt_open(cn, p, h, false, frames, sizeof(frames), &plen, &hp.pn);

	if (s < 0)
		bad(q, i, "client Initial to the server's CID decrypts with no attempt's keys");
	else if (!walk(frames, plen, cn->a[s], &hp))
		bad(q, i, "client Initial holds a frame an Initial may not carry");
	else
		hello_pkt_keep(cn->a[s], &hp);
}

static void client_initial(struct qstate *q, struct conn *cn, const uint8_t *p,
                           const struct qw_long *h, size_t i)
{
	struct qw_keys k;
	struct attempt *a;
	uint8_t frames[2048];
	size_t plen = 0;
	struct hello_pkt hp = {.dgram = i};
	bool ok;

	q->initials_c++;
	if (cid_in(cn->server, h->dcid, h->dcid_len)) {
		client_initial_later(q, cn, p, h, i);
		return;
	}
	if (h->dcid_len < 8 || h->length > sizeof(frames)) {
		bad(q, i, "client Initial: DCID shorter than 8 bytes (RFC 9000 §7.2) or too long");
		return;
	}
	a = attempt_of(q, cn, h);
	if (!a)
		return;
	ok = qw_initial_keys(h->dcid, h->dcid_len, false, &k) &&
	     qw_open(&k, p, h, frames, &plen, &hp.pn);
	if (!ok) {
		bad(q, i, "client Initial does not decrypt with the v1 Initial keys");
		return;
	}
	if (!walk(frames, plen, a, &hp)) {
		bad(q, i, "client Initial holds a frame an Initial may not carry");
		return;
	}
	hello_pkt_keep(a, &hp);
	cn->client_scid.len = h->scid_len;
	memcpy(cn->client_scid.b, h->scid, h->scid_len);
	hello_judge(q, a, i);
}

/*
 * Frames that only acknowledge (ACK, PADDING, PING): the Initial a real
 * server (quic-go) sends at once for the first datagram of a hello that
 * spans two, before its ServerHello.
 */
static bool ack_only(const uint8_t *f, size_t n)
{
	size_t pos = 0;
	bool ack = false;

	while (pos < n) {
		if (f[pos] == 0x00 || f[pos] == 0x01) {
			pos++;
		} else if ((f[pos] == 0x02 || f[pos] == 0x03) && qw_ack_skip(f, n, &pos, 256)) {
			ack = true;
		} else {
			return false;
		}
	}
	return ack;
}

/*
 * A server Initial: it decrypts with a client attempt's keys, answers that
 * client, and holds a ServerHello or only acknowledges. False for one that
 * only acknowledges: not ack-eliciting, so RFC 9000 §14.1's 1200 bytes do
 * not apply to its datagram (caddy's is 37).
 */
static bool server_initial(struct qstate *q, struct conn *cn, const uint8_t *p,
                           const struct qw_long *h, size_t i)
{
	struct attempt *tmp = calloc(1, sizeof(*tmp));
	struct hello_pkt hp = {0}; /* the client's hello only */
	uint8_t frames[2048];
	size_t plen = 0;
	bool eliciting = true;

	q->initials_s++;
	if (!tmp)
		return true;
	/* the server's keys come from the DCID of the client attempt it answers */
	if (attempt_open(cn, p, h, true, frames, sizeof(frames), &plen, &hp.pn) < 0)
		bad(q, i, "server Initial decrypts with no client attempt's Initial keys");
	else if (!cid_eq(&cn->client_scid, h->dcid, h->dcid_len))
		bad(q, i, "server Initial: DCID is not the client's SCID");
	else if (ack_only(frames, plen))
		eliciting = false;
	else if (!walk(frames, plen, tmp, &hp) || !qw_crypto_message(&tmp->cb, QW_TLS_SERVER_HELLO))
		bad(q, i, "server Initial holds no complete ServerHello");
	else {
		q->server_hellos++;
		cid_push(cn->server, h->scid, h->scid_len);
	}
	free(tmp);
	q->server_acks += !eliciting;
	return eliciting;
}

/* Handshake and 0-RTT packets: not decryptable here, but their CIDs are known. */
static void other_long(struct qstate *q, struct conn *cn, const struct qw_long *h, bool c2s,
                       size_t i)
{
	q->handshakes++;
	if (h->type != QW_TYPE_HANDSHAKE)
		return; /* 0-RTT: the Initial's DCID, checked there */
	if (c2s && !cid_in(cn->server, h->dcid, h->dcid_len))
		bad(q, i, "client Handshake packet: DCID is not the server's CID");
	else if (!c2s && (!cid_eq(&cn->client_scid, h->dcid, h->dcid_len) ||
	                  !cid_in(cn->server, h->scid, h->scid_len)))
		bad(q, i, "server Handshake packet: CIDs differ from its Initial's");
}

static void short_header(struct qstate *q, struct conn *cn, const uint8_t *p, size_t len, bool c2s,
                         size_t i)
{
	q->shorts++;
	if (!c2s) {
		if (len < 1u + cn->client_scid.len ||
		    memcmp(p + 1, cn->client_scid.b, cn->client_scid.len) != 0)
			bad(q, i, "server short header: DCID is not the client's SCID");
		return;
	}
	if (cid_prefix(cn->server, p, len))
		return;
	/* a client that moved (NAT rebinding) keeps the server's CID */
	for (size_t c = 0; c < q->nconns; c++)
		if (cid_prefix(q->conns[c].server, p, len)) {
			q->migrated++;
			return;
		}
	q->no_cid++;
	bad(q, i, "client short header names no connection ID the server gave");
}

static void datagram(struct qstate *q, size_t i)
{
	const struct dpi_dgram *d = &q->c->dg[i];
	const struct dpi_flow_key *k = &q->c->flows[d->flow];
	bool c2s = k->dport == q->port;
	struct conn *cn = conn_of(q, k, c2s);
	size_t pos = 0, len = d->len;
	bool has_initial = false;

	if (!cn)
		return;
	q->dgrams++;
	while (pos < len) {
		const uint8_t *p = d->data + pos;
		struct qw_long h;

		if (!(p[0] & QW_FIXED)) {
			bad(q, i,
			    pos ? "bytes after a packet are no QUIC packet"
			        : "fixed bit clear: not QUIC v1");
			return;
		}
		if (!(p[0] & QW_FORM_LONG)) {
			short_header(q, cn, p, len - pos, c2s, i);
			break;
		}
		if (!qw_long_parse(p, len - pos, &h) || h.version != QW_V1 ||
		    h.length > len - pos - h.pn_off || h.length < 20 || h.type == QW_TYPE_RETRY) {
			bad(q, i,
			    "long header: no well-formed QUIC v1 Initial, 0-RTT or Handshake");
			return;
		}
		if (h.type == QW_TYPE_INITIAL && c2s) {
			has_initial = true;
			client_initial(q, cn, p, &h, i);
		} else if (h.type == QW_TYPE_INITIAL) {
			has_initial |= server_initial(q, cn, p, &h, i);
		} else {
			other_long(q, cn, &h, c2s, i);
		}
		pos += h.pn_off + h.length;
	}
	if (has_initial && len < QW_INITIAL_MIN)
		bad(q, i,
		    "a datagram with an ack-eliciting Initial is shorter than 1200 bytes "
		    "(RFC 9000 §14.1)");
}

void dpi_check_quic(const struct dpi_capture *c, const struct dpi_params *p, int port,
                    struct dpi_result *r)
{
	struct qstate q = {.c = c, .port = port};
	size_t incomplete = 0;
	char snis[200] = "";

	(void)p;
	r->name = "quic";
	for (size_t i = 0; i < c->n; i++)
		datagram(&q, i);
	for (size_t i = 0; i < q.nconns; i++)
		for (int s = 0; s < SLOTS; s++)
			if (q.conns[i].a[s]) {
				incomplete += !q.conns[i].a[s]->judged;
				split_judge(&q, q.conns[i].a[s]);
				free(q.conns[i].a[s]);
			}
	free(q.conns);
	for (unsigned i = 0; i < q.nsni; i++)
		snprintf(snis + strlen(snis), sizeof(snis) - strlen(snis), "%s%s", i ? "," : "",
		         q.sni[i]);
	if (incomplete && !q.bad)
		snprintf(q.first_bad, sizeof(q.first_bad),
		         "%zu connection attempts without a complete ClientHello", incomplete);
	else if (q.layout_odd && !q.bad) /* the captures' ranges, not Chromium's bounds */
		snprintf(q.first_bad, sizeof(q.first_bad), "(not flagged) %s", q.first_odd);
	r->verdict = q.bad || incomplete || !q.dgrams ? DPI_FLAG : DPI_PASS;
	snprintf(r->detail, sizeof(r->detail),
	         "%llu datagrams, %zu clients: %llu client Initials (%llu ClientHellos, SNI %s), "
	         "%llu server Initials (%llu ServerHellos, %llu ACK-only), %llu other long, "
	         "%llu short headers (%llu after a move); hellos split as Chromium's %llu, "
	         "not %llu; hello Initials laid out unlike the captures %llu; %llu bad%s%s",
	         (unsigned long long)q.dgrams, q.nconns, (unsigned long long)q.initials_c,
	         (unsigned long long)q.hellos, q.nsni ? snis : "-",
	         (unsigned long long)q.initials_s, (unsigned long long)q.server_hellos,
	         (unsigned long long)q.server_acks, (unsigned long long)q.handshakes,
	         (unsigned long long)q.shorts, (unsigned long long)q.migrated,
	         (unsigned long long)q.split_ok, (unsigned long long)q.split_bad,
	         (unsigned long long)q.layout_odd, (unsigned long long)q.bad,
	         q.bad || incomplete || q.layout_odd ? ", first: " : "", q.first_bad);
}
