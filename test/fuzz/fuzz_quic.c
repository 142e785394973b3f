/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: the quic profile's handshake parsers (SPEC.md §12).
 * Each input is tried as a client hello, its two Initials back to back
 * (dust_quic_intro_accept, a store
 * holding one quic invitation), as the server's answer (its flight and the
 * tail behind it) to a pending client (dust_quic_answer_open), and as the frames of the hello's two
 * Initials that the harness protects correctly itself (the fixture client's DCID), so that
 * mutations reach the reassembly of the two, reach the frame walker and the ClientHello parser
 * behind the AEAD. Properties: a drop changes neither the store entry nor the pending client; an
 * accepted intro yields a server CID of 4..20 bytes and is a duplicate the second time; an opened
 * answer yields a live quic session and wipes the pending client. Each is also tried as a
 * client's second flight to a server session (dust_quic_confirm_kind), and as a client's
 * CONNECTION_CLOSE (dust_quic_is_client_close).
 */
#include "fuzz_fixture.h"
#include "quic_pvt.h"

static struct fz_gw gw;
static struct dust_quic_client qc0; /* the pending client, restored per input */
static struct dust_eph eph;
static struct dust_rng rng;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint8_t dg[DUST_QUIC_HELLO_BYTES];

	(void)argc, (void)argv;
	fz_gw_init(&gw, fz_quic_invite);
	fz_quic_client(&gw.inv, dg, sizeof(dg), &qc0);
	fz_quic_eph(&eph);
	fz_rng(&rng, 0x72);
	return 0;
}

static bool entry_untouched(void)
{
	const struct dust_store_entry *e = dust_store_at(gw.srv.store, 0);

	return !e->bound && !e->last_ts_ms && sodium_is_zero(e->client_pk, DUST_PK_BYTES) &&
	       sodium_is_zero(e->static_ss, DUST_KEY_BYTES) &&
	       sodium_is_zero(e->last_nonce, DUST_XNONCE_BYTES);
}

static void try_intro(const uint8_t *data, size_t size)
{
	struct dust_endpoint from = {.ip = {.family = 4, .a = {198, 51, 100, 7}}, .port = 5555};
	struct dust_quic_accept acc;
	struct dust_intro_info info;
	struct dust_session s;
	enum dust_drop d;
	int64_t peek;

	fz_gw_entry_reset(&gw);
	memset(&s, 0, sizeof(s));
	/* the endpoint rule's peek names an invitation or none, and changes nothing */
	peek = dust_quic_intro_peek(&gw.srv, data, size);
	if (peek < -1 || !entry_untouched())
		abort();
	/* the hold's judgement: none exactly when the peek names none; the store untouched */
	if ((dust_quic_hello_first(&gw.srv, NULL, data, size) == DUST_QUIC_FIRST_NONE) !=
	        (peek < 0) ||
	    !entry_untouched())
		abort();
	d = dust_quic_intro_accept(&gw.srv, &rng, data, size, FZ_NOW_MS, &from, &eph, &s, &acc,
	                           &info);
	if (gw.verbose)
		fprintf(stderr, "quic intro: %zu bytes: %s\n", size, dust_drop_name(d));
	if (d >= DUST_DROP_MAX)
		abort();
	if (d != DUST_OK) {
		if (!entry_untouched())
			abort(); /* state changed before authentication */
		return;
	}
	/* whatever authenticates was named by the peek */
	if (peek != (int64_t)info.invite_idx)
		abort();
	if (s.profile != DUST_PROFILE_QUIC || s.role != DUST_ROLE_SERVER ||
	    s.cid_len < DUST_QUIC_SERVER_CID_MIN || s.cid_len > DUST_QUIC_CID_MAX ||
	    acc.odcid_len < 8 || !info.first_use)
		abort();
	if (dust_quic_intro_accept(&gw.srv, &rng, data, size, FZ_NOW_MS, &from, &eph, &s, &acc,
	                           &info) != DUST_DROP_INTRO_DUP)
		abort();
	/* its first Initial again, from anywhere: a replay by the store alone */
	if (dust_quic_hello_first(&gw.srv, NULL, data, size) != DUST_QUIC_FIRST_AGAIN)
		abort();
	dust_session_wipe(&s);
}

/*
 * The input as the first flight's 1252-byte datagram and its tail, back to
 * back: the flight ends where its Handshake packet's Length says (else the
 * whole input is the flight and the tail is empty).
 */
static size_t flight_end(const uint8_t *b, size_t size)
{
	struct quic_long h, hs;
	size_t next;

	if (!quic_long_parse(b, size, &h) || h.length > size - h.pn_off)
		return size;
	next = h.pn_off + h.length;
	if (!quic_long_parse(b + next, size - next, &hs) || hs.length > size - next - hs.pn_off)
		return size;
	return next + hs.pn_off + hs.length;
}

/* What opening an answer may do: refused, the client untouched; opened, a live session. */
static void answer_judge(enum dust_drop d, const struct dust_quic_client *qc,
                         struct dust_session *s)
{
	if (d >= DUST_DROP_MAX)
		abort();
	if (d != DUST_OK) {
		if (memcmp(qc, &qc0, sizeof(*qc)) != 0)
			abort(); /* a refused answer must leave the client pending */
		return;
	}
	if (qc->pending || s->profile != DUST_PROFILE_QUIC || s->role != DUST_ROLE_CLIENT ||
	    s->cid_len < DUST_QUIC_SERVER_CID_MIN || s->cid_len > DUST_QUIC_CID_MAX ||
	    s->state != DUST_SESSION_LIVE)
		abort();
	dust_session_wipe(s);
}

static void try_answer(const uint8_t *data, size_t size)
{
	static uint8_t buf[65536];
	struct dust_quic_client qc = qc0;
	struct dust_session s;
	enum dust_drop d;
	size_t n;

	memcpy(buf, data, size);
	memset(&s, 0, sizeof(s));
	n = flight_end(buf, size);
	d = dust_quic_answer_open(&qc, &gw.srv.lim, FZ_NOW_S, buf, n, buf + n, size - n, &s);
	if (gw.verbose)
		fprintf(stderr, "quic answer: %zu bytes: %s\n", size, dust_drop_name(d));
	answer_judge(d, &qc, &s);
}

/*
 * A flight resent in parts (SPEC §12.3): the Initial from one datagram, the
 * Handshake packet from another, then the tail; the first four bytes say
 * where the input is cut. Each part's kind is read as a client reads it.
 */
static void try_parts(const uint8_t *data, size_t size)
{
	static uint8_t buf[65536];
	struct dust_quic_client qc = qc0;
	struct dust_session s;
	enum dust_drop d;
	size_t rest, a, b;

	if (size < 4)
		return;
	rest = size - 4;
	a = (size_t)(data[0] | data[1] << 8) % (rest + 1);
	b = (size_t)(data[2] | data[3] << 8) % (rest - a + 1);
	memcpy(buf, data + 4, rest);
	if (dust_quic_answer_part(buf, a) > DUST_QUIC_PART_HANDSHAKE ||
	    dust_quic_answer_part(buf + a, b) > DUST_QUIC_PART_HANDSHAKE)
		abort();
	memset(&s, 0, sizeof(s));
	d = dust_quic_answer_open_parts(&qc, &gw.srv.lim, FZ_NOW_S, buf, a, buf + a, b, buf + a + b,
	                                rest - a - b, &s);
	if (gw.verbose)
		fprintf(stderr, "quic parts: %zu, %zu, %zu bytes: %s\n", a, b, rest - a - b,
		        dust_drop_name(d));
	answer_judge(d, &qc, &s);
}

/* A client Initial as the gateway reads a retransmitted one: its packet number, or nothing. */
static void try_initial_read(const uint8_t *data, size_t size)
{
	uint64_t pn = UINT64_MAX;
	bool closed = true;

	if (dust_quic_client_initial_read(data, size, &pn, &closed) && pn > (1ull << 62))
		abort(); /* a QUIC packet number is under 2^62 */
	if (dust_quic_is_client_close(data, size) &&
	    !(dust_quic_client_initial_read(data, size, &pn, &closed) && closed))
		abort();
}

/*
 * The first flight's tail as a client reads it (SPEC §12.3): the Handshake
 * header match, then the Dust packets behind it, for a live client session
 * whose CID the input may name (keys zero: nothing forged opens, the parse
 * paths run).
 */
static void try_tail(const uint8_t *data, size_t size)
{
	static uint8_t buf[65536];
	static struct dust_session s;
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop d = DUST_OK;
	size_t pre;

	if (!s.role) {
		s.profile = DUST_PROFILE_QUIC;
		s.role = DUST_ROLE_CLIENT;
		s.state = DUST_SESSION_LIVE;
		s.cid_len = DUST_QUIC_SERVER_CID_LEN;
		memcpy(s.cid, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	}
	pre = dust_quic_hs_match(&s, data, size);
	if (pre > size)
		abort();
	if (!pre)
		return;
	memcpy(buf, data, size);
	if (dust_datagram_open(&s, &gw.srv.lim, FZ_NOW_S, buf, size, pre, segs, DUST_CHAIN_MAX,
	                       &d) > DUST_CHAIN_MAX ||
	    d >= DUST_DROP_MAX)
		abort();
}

/*
 * Each input as a client's second flight to a server session (SPEC §12.3):
 * the kind's offset stays inside the input, and the Dust data it names is
 * opened only for the two kinds that carry it.
 */
static void try_confirm(const uint8_t *data, size_t size)
{
	static uint8_t buf[65536];
	static struct dust_session s;
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop d = DUST_OK;
	enum dust_quic_confirm_kind kind;
	size_t off;

	if (!s.role) {
		s.profile = DUST_PROFILE_QUIC;
		s.role = DUST_ROLE_SERVER;
		s.state = DUST_SESSION_LIVE;
		s.cid_len = DUST_QUIC_SERVER_CID_LEN;
		memcpy(s.cid, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
	}
	kind = dust_quic_confirm_kind(&s, data, size, &off);
	if (off > size ||
	    ((kind == DUST_QUIC_CONFIRM_DATA || kind == DUST_QUIC_CONFIRM_OLD) != !!off))
		abort();
	if (!off)
		return;
	memcpy(buf, data, size);
	if (dust_datagram_open(&s, &gw.srv.lim, FZ_NOW_S, buf, size, off, segs, DUST_CHAIN_MAX,
	                       &d) > DUST_CHAIN_MAX ||
	    d >= DUST_DROP_MAX)
		abort();
}

/* One Initial (packet number pn) at dg holding frames f[0..size), zero-padded to 1250 bytes. */
static size_t protect_initial(uint8_t *dg, const uint8_t *f, size_t size, uint64_t pn)
{
	enum { HDR = 18 };
	size_t room = DUST_QUIC_CLIENT_DGRAM - HDR - 1 - DUST_QUIC_AEAD_TAG;
	struct dust_quic_keys k;

	if (size > room)
		room = size;
	dg[0] = 0xc0; /* long, fixed, Initial, 1-byte packet number */
	memcpy(dg + 1, "\x00\x00\x00\x01", 4);
	dg[5] = qc0.dcid_len;
	memcpy(dg + 6, qc0.dcid, qc0.dcid_len);
	dg[14] = 0; /* SCID length */
	dg[15] = 0; /* token length */
	quic_varint_put(dg + 16, 1 + room + DUST_QUIC_AEAD_TAG, 2);
	memcpy(dg + HDR + 1, f, size);
	memset(dg + HDR + 1 + size, 0, room - size);
	dust_quic_initial_keys(qc0.dcid, qc0.dcid_len, false, &k);
	if (!quic_protect(&k, dg, HDR, 1, pn, room))
		abort();
	return HDR + 1 + room + DUST_QUIC_AEAD_TAG;
}

/*
 * The input as the frames of the hello's two Initials (its halves), each
 * under a correct Initial protection of the fixture client's DCID, back to
 * back: mutations reach the two-Initial reassembly, the frame walker and
 * the ClientHello parser behind the AEAD.
 */
static void try_frames(const uint8_t *data, size_t size)
{
	static uint8_t dg[2 * 1500];
	size_t half = size / 2, n1;

	if (size - half > 1500 - 18 - 1 - DUST_QUIC_AEAD_TAG)
		return;
	n1 = protect_initial(dg, data, half, 1);
	try_intro(dg, n1 + protect_initial(dg + n1, data + half, size - half, 2));
}

/*
 * The gateway's test for a client's CONNECTION_CLOSE (dust_quic_is_client_close):
 * the input as a datagram, and as the frames of one Initial protected here, so
 * that mutations reach its frame walker behind the AEAD.
 */
static void try_close(const uint8_t *data, size_t size)
{
	static uint8_t dg[1500];
	size_t n;

	(void)dust_quic_is_client_close(data, size);
	if (size > 1500 - 18 - 1 - DUST_QUIC_AEAD_TAG)
		return;
	n = protect_initial(dg, data, size, 9);
	(void)dust_quic_is_client_close(dg, n);
}

/*
 * The input as a short header to a server session and to a client one: an
 * ACK-sized datagram (dust_quic_ack_match) is never also a Dust packet's
 * short header, and is shorter than any.
 */
static void try_short(const uint8_t *data, size_t size)
{
	static struct dust_session s[2];

	if (!s[0].role) {
		for (int i = 0; i < 2; i++) {
			s[i].profile = DUST_PROFILE_QUIC;
			s[i].role = i ? DUST_ROLE_CLIENT : DUST_ROLE_SERVER;
			s[i].cid_len = DUST_QUIC_SERVER_CID_LEN;
			memcpy(s[i].cid, "\x01\x02\x03\x04", 4);
		}
	}
	for (int i = 0; i < 2; i++) {
		bool ack = dust_quic_ack_match(&s[i], data, size);

		if (ack && (dust_quic_short_match(&s[i], data, size) ||
		            size >= dust_quic_rx_prefix(&s[i]) + DUST_DATA_MIN_BYTES))
			abort();
	}
}

/*
 * Each input as a server Initial the client notes for its second flight's
 * ACK (dust_quic_confirm_saw): refused or noted, and what is noted is a
 * packet number the one-byte ACK fields hold.
 */
static void try_saw(const uint8_t *data, size_t size)
{
	struct dust_quic_confirm cf = {.odcid_len = 8};
	int rc;

	memcpy(cf.odcid, "\x83\x94\xc8\xf0\x3e\x51\x57\x08", 8); /* RFC 9001 A.1's */
	rc = dust_quic_confirm_saw(&cf, data, size);
	if ((rc != 0 && rc != -EINVAL) || (rc == 0 && (!cf.srv_saw || cf.srv_hi > 63)) ||
	    (rc != 0 && cf.srv_saw))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65535)
		return -1;
	fz_gw_next(&gw);
	try_intro(data, size);
	try_answer(data, size);
	try_parts(data, size);
	try_initial_read(data, size);
	try_frames(data, size);
	try_tail(data, size);
	try_confirm(data, size);
	try_saw(data, size);
	try_close(data, size);
	try_short(data, size);
	return 0;
}
