/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-dpi's own QUIC reader (tools/dust-dpi/qwire.c) against the RFCs'
 * published examples: RFC 9000 §A.1's varints, RFC 9001 §A.1's Initial keys
 * and §A.3's protected server Initial. It must agree with the RFCs without
 * libdust: this test links only qwire.c and OpenSSL.
 */
#include "check.h"
#include "qwire.h"

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;

	for (; s[0] && s[1] && n < cap; s += 2) {
		unsigned v;

		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
	}
	return n;
}

static bool eq_hex(const uint8_t *b, size_t n, const char *hex)
{
	uint8_t want[256];

	return unhex(hex, want, sizeof(want)) == n && !memcmp(b, want, n);
}

static void varints(void)
{
	static const struct {
		const char *hex;
		uint64_t v;
	} t[] = {{"c2197c5eff14e88c", 151288809941952652ull},
	         {"9d7f3e7d", 494878333},
	         {"7bbd", 15293},
	         {"25", 37}};
	uint8_t b[8];
	uint64_t v;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		size_t n = unhex(t[i].hex, b, sizeof(b)), pos = 0;

		CHECK(qw_varint(b, n, &pos, &v));
		CHECK_EQ(v, t[i].v);
		CHECK_EQ(pos, n);
		pos = 0;
		CHECK(n == 1 || !qw_varint(b, n - 1, &pos, &v)); /* cut short */
	}
}

static const char dcid_hex[] = "8394c8f03e515708";

static void initial_keys(void)
{
	uint8_t dcid[8];
	struct qw_keys c, s;

	unhex(dcid_hex, dcid, sizeof(dcid));
	CHECK(qw_initial_keys(dcid, sizeof(dcid), false, &c));
	CHECK(qw_initial_keys(dcid, sizeof(dcid), true, &s));
	CHECK(eq_hex(c.key, 16, "1f369613dd76d5467730efcbe3b1a22d"));
	CHECK(eq_hex(c.iv, 12, "fa044b2f42a3fd3b46fb255c"));
	CHECK(eq_hex(c.hp, 16, "9f50449e04a0e810283a1e9933adedd2"));
	CHECK(eq_hex(s.key, 16, "cf3a5331653c364c88f0f379b6067e37"));
	CHECK(eq_hex(s.iv, 12, "0ac1493ca1905853b0bba03e"));
	CHECK(eq_hex(s.hp, 16, "c206b8d9b9f0f37644430b490eeaa314"));
}

/* RFC 9001 §A.3: the server's Initial (an ACK and a ServerHello), protected */
static const char server_initial_hex[] =
    "cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a"
    "5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3"
    "dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84"
    "022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4"
    "2158407dd074ee";
static const char server_frames_hex[] =
    "02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739"
    "88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94"
    "0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00"
    "020304";

static void server_initial(void)
{
	uint8_t pkt[256], dcid[8], frames[256];
	size_t n = unhex(server_initial_hex, pkt, sizeof(pkt)), plen = 0, pos = 0;
	struct qw_long h;
	struct qw_keys k;
	struct qw_crypto *cb = calloc(1, sizeof(*cb));
	uint64_t off = 0, len = 0, pn = 0;

	unhex(dcid_hex, dcid, sizeof(dcid));
	CHECK(cb != NULL);
	CHECK(qw_long_parse(pkt, n, &h));
	CHECK_EQ(h.type, QW_TYPE_INITIAL);
	CHECK_EQ(h.dcid_len, 0);
	CHECK(h.scid_len == 8 && eq_hex(h.scid, 8, "f067a5502a4262b5"));
	CHECK_EQ(h.pn_off + h.length, n);
	CHECK(qw_initial_keys(dcid, sizeof(dcid), true, &k));
	CHECK(qw_open(&k, pkt, &h, frames, &plen, &pn));
	CHECK_EQ(pn, 1); /* RFC 9001 §A.3: packet number 1, two bytes wide */
	CHECK(eq_hex(frames, plen, server_frames_hex));
	/* the ACK, then a CRYPTO frame holding the whole ServerHello */
	CHECK(qw_ack_skip(frames, plen, &pos, 4));
	CHECK_EQ(frames[pos], 0x06);
	pos++;
	CHECK(qw_varint(frames, plen, &pos, &off) && qw_varint(frames, plen, &pos, &len));
	CHECK(off == 0 && len == plen - pos);
	CHECK(cb && qw_crypto_put(cb, off, frames + pos, len));
	CHECK_EQ(qw_crypto_message(cb, QW_TLS_SERVER_HELLO), len);
	CHECK_EQ(qw_crypto_message(cb, QW_TLS_CLIENT_HELLO), 0);
	free(cb);

	/* one flipped bit anywhere after the header fails authentication */
	for (size_t i = h.pn_off; i < n; i += 7) {
		pkt[i] ^= 0x10;
		CHECK(!qw_open(&k, pkt, &h, frames, &plen, &pn));
		pkt[i] ^= 0x10;
	}
	/* the client's keys do not open the server's packet */
	CHECK(qw_initial_keys(dcid, sizeof(dcid), false, &k));
	CHECK(!qw_open(&k, pkt, &h, frames, &plen, &pn));
}

static void headers_refused(void)
{
	uint8_t pkt[256];
	size_t n = unhex(server_initial_hex, pkt, sizeof(pkt));
	struct qw_long h;

	for (size_t cut = 0; cut < 17; cut++) /* cut inside the header */
		CHECK(!qw_long_parse(pkt, cut, &h));
	pkt[4] = 2; /* another version */
	CHECK(!qw_long_parse(pkt, n, &h));
	pkt[4] = 1;
	pkt[5] = 21; /* a DCID longer than v1 allows */
	CHECK(!qw_long_parse(pkt, n, &h));
	pkt[0] &= (uint8_t)~QW_FORM_LONG;
	CHECK(!qw_long_parse(pkt, n, &h));
}

static void crypto_reassembly(void)
{
	struct qw_crypto *cb = calloc(1, sizeof(*cb));
	const uint8_t msg[8] = {QW_TLS_CLIENT_HELLO, 0, 0, 4, 'a', 'b', 'c', 'd'};

	CHECK(cb != NULL);
	if (!cb)
		return;
	CHECK(qw_crypto_put(cb, 4, msg + 4, 4)); /* the end first */
	CHECK_EQ(qw_crypto_message(cb, QW_TLS_CLIENT_HELLO), 0);
	CHECK(qw_crypto_put(cb, 0, msg, 3));
	CHECK_EQ(qw_crypto_message(cb, QW_TLS_CLIENT_HELLO), 0); /* byte 3 missing */
	CHECK(qw_crypto_put(cb, 3, msg + 3, 1));
	CHECK_EQ(qw_crypto_message(cb, QW_TLS_CLIENT_HELLO), 8);
	CHECK(!qw_crypto_put(cb, QW_CRYPTO_MAX - 1, msg, 2)); /* past the buffer */
	CHECK(!qw_crypto_put(cb, UINT64_MAX, msg, 1));
	free(cb);
}

static const struct check_test tests[] = {
    {"varints", varints},
    {"initial_keys", initial_keys},
    {"server_initial", server_initial},
    {"headers_refused", headers_refused},
    {"crypto_reassembly", crypto_reassembly},
};

CHECK_MAIN(tests, NULL)
