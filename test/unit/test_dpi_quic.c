/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-dpi's QUIC check (tools/dust-dpi/quic.c) on crafted client Initials:
 * a hello split over its Initials as Chromium 156 splits it (SPEC §12.2)
 * passes, one split otherwise is flagged. The Initials are protected here
 * (RFC 9001 §5: AES-128-GCM and AES-128-ECB over OpenSSL), apart from
 * qwire.c's unprotection; only the keys come from qw_initial_keys, which
 * test_qwire holds to RFC 9001 §A.1.
 */
#include <openssl/evp.h>

#include "check.h"
#include "dpi.h"
#include "qwire.h"

enum {
	DGRAM = 1250,                /* Chromium's Initial datagram */
	HDR = 1 + 4 + 1 + 8 + 2 + 2, /* first byte, version, DCID, SCID and token lengths, Length */
	ROOM = DGRAM - HDR - 1 - 16, /* frames after a 1-byte packet number, before the tag */
	MAX_DGRAMS = 24,
	HELLO_LEN = 1914, /* the first captured Chromium hello's */
	PORT = 443,
};

static const uint8_t dcid[8] = {0x5d, 0x11, 0xa0, 0x7e, 0x03, 0x9c, 0x42, 0xe8};

/* A capture of one client's Initials to PORT, as capture.c hands them on. */
struct cap {
	struct dpi_flow_key flow;
	struct dpi_dgram dg[MAX_DGRAMS];
	uint8_t b[MAX_DGRAMS][DGRAM];
	size_t n;
	uint8_t ch[QW_CRYPTO_MAX];
	size_t ch_len;
};

/* A well-formed ClientHello (RFC 8446 §4.1.2) of len bytes: one padding extension. */
static void hello_make(struct cap *c, size_t len)
{
	uint8_t *h = c->ch;
	size_t ext = len - 4 - 2 - 32 - 1 - 2 - 2 - 1 - 1 - 2; /* the extensions' length */

	memset(h, 0, len);
	h[0] = QW_TLS_CLIENT_HELLO;
	h[1] = (uint8_t)((len - 4) >> 16);
	h[2] = (uint8_t)((len - 4) >> 8);
	h[3] = (uint8_t)(len - 4);
	h[4] = 0x03; /* legacy_version */
	h[5] = 0x03;
	for (int i = 0; i < 32; i++)
		h[6 + i] = (uint8_t)(i * 37 + 11);
	/* h[38]: no session id; one suite, TLS_AES_128_GCM_SHA256; null compression */
	h[40] = 2;
	h[41] = 0x13;
	h[42] = 0x01;
	h[43] = 1;
	h[45] = (uint8_t)(ext >> 8);
	h[46] = (uint8_t)ext;
	h[48] = 0x15; /* padding (RFC 7685), filling the rest */
	h[49] = (uint8_t)((ext - 4) >> 8);
	h[50] = (uint8_t)(ext - 4);
	c->ch_len = len;
}

/* How one Initial lays its spans out: CRYPTO frames, PINGs, PADDING runs. */
struct layout {
	unsigned crypto, pings, pads;
};

static size_t varint2(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(0x40 | v >> 8);
	p[1] = (uint8_t)v;
	return 2;
}

static size_t crypto_frame(uint8_t *p, const struct cap *c, size_t off, size_t len)
{
	p[0] = 0x06;
	varint2(p + 1, off);
	varint2(p + 3, len);
	memcpy(p + 5, c->ch + off, len);
	return 5 + len;
}

/*
 * The frames of one Initial: the spans (offset, end pairs) cut into
 * l->crypto CRYPTO frames, the last first, a PING and a one-byte PADDING
 * run after the first ones, the rest of the PINGs at the end, and a
 * PADDING run in front filling the packet. false if they do not fit.
 */
static bool frames_make(const struct cap *c, const size_t (*spans)[2], size_t nspans,
                        const struct layout *l, uint8_t out[ROOM])
{
	uint8_t tmp[ROOM + 64];
	size_t pos = 0, extra = l->crypto - nspans, pings = l->pings, pads = l->pads - 1;

	for (size_t s = nspans; s-- > 0;) {
		size_t pieces = 1 + (s == 0 ? extra : 0), off = spans[s][0];
		size_t step = (spans[s][1] - spans[s][0]) / pieces;

		for (size_t k = 0; k < pieces; k++, off += step) {
			size_t len = k + 1 == pieces ? spans[s][1] - off : step;

			if (pos + 5 + len + 2 > sizeof(tmp))
				return false;
			pos += crypto_frame(tmp + pos, c, off, len);
			if (pings) {
				tmp[pos++] = 0x01;
				pings--;
			}
			if (pads) {
				tmp[pos++] = 0x00;
				pads--;
			}
		}
	}
	for (; pings && pos < sizeof(tmp); pings--)
		tmp[pos++] = 0x01;
	if (pos >= ROOM || pads)
		return false;
	memset(out, 0, ROOM - pos);
	memcpy(out + ROOM - pos, tmp, pos);
	return true;
}

static bool seal(const struct qw_keys *k, const uint8_t nonce[12], uint8_t *dg)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	int len = 0, fin = 0;
	bool ok = x && EVP_EncryptInit_ex(x, EVP_aes_128_gcm(), NULL, k->key, nonce) &&
	          EVP_EncryptUpdate(x, NULL, &len, dg, HDR + 1) &&
	          EVP_EncryptUpdate(x, dg + HDR + 1, &len, dg + HDR + 1, ROOM) &&
	          EVP_EncryptFinal_ex(x, dg + HDR + 1 + len, &fin) &&
	          EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, 16, dg + HDR + 1 + ROOM);

	EVP_CIPHER_CTX_free(x);
	return ok;
}

/* RFC 9001 §5.4: mask the first byte's low bits and the packet number. */
static bool hp_apply(const struct qw_keys *k, uint8_t *dg)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	uint8_t mask[32];
	int len = 0;
	bool ok = x && EVP_EncryptInit_ex(x, EVP_aes_128_ecb(), NULL, k->hp, NULL) &&
	          EVP_EncryptUpdate(x, mask, &len, dg + HDR + 4, 16) && len == 16;

	EVP_CIPHER_CTX_free(x);
	dg[0] ^= mask[0] & 0x0f;
	dg[HDR] ^= mask[1];
	return ok;
}

/* One protected client Initial, packet number pn, holding spans laid out as l. */
static void initial_add(struct cap *c, uint8_t pn, const size_t (*spans)[2], size_t nspans,
                        const struct layout *l)
{
	static const uint8_t head[HDR - 8] = {0xc0, 0, 0, 0, 1, 8};
	uint8_t *dg = c->b[c->n], nonce[12];
	struct qw_keys k;

	CHECK(c->n < MAX_DGRAMS);
	CHECK(frames_make(c, spans, nspans, l, dg + HDR + 1));
	CHECK(qw_initial_keys(dcid, sizeof(dcid), false, &k));
	memcpy(dg, head, 6);
	memcpy(dg + 6, dcid, 8);
	dg[14] = 0; /* SCID length */
	dg[15] = 0; /* token length */
	varint2(dg + 16, 1 + ROOM + 16);
	dg[HDR] = pn;
	memcpy(nonce, k.iv, 12);
	nonce[11] ^= pn;
	CHECK(seal(&k, nonce, dg) && hp_apply(&k, dg));
	c->dg[c->n] = (struct dpi_dgram){.flow = 0, .len = DGRAM, .data = dg};
	c->n++;
}

static struct cap *cap_new(size_t hello_len)
{
	struct cap *c = calloc(1, sizeof(*c));

	CHECK(c != NULL);
	if (!c)
		return NULL;
	c->flow = (struct dpi_flow_key){.family = 4, .sport = 50000, .dport = PORT};
	c->flow.src[0] = 192;
	c->flow.dst[0] = 198;
	hello_make(c, hello_len);
	return c;
}

/* dust-dpi --quic over c: its verdict, and its report must hold want. */
static void judge(struct cap *c, enum dpi_verdict verdict, const char *want)
{
	struct dpi_capture cap = {
	    .dg = c->dg, .n = c->n, .cap = c->n, .flows = &c->flow, .nflows = 1};
	struct dpi_params p = {.alpha = 1e-4};
	struct dpi_result r = {0};

	dpi_check_quic(&cap, &p, PORT, &r);
	CHECK_EQ(r.verdict, verdict);
	CHECK(strstr(r.detail, want) != NULL);
	if (r.verdict != verdict || !strstr(r.detail, want))
		fprintf(stderr, "  report: %s\n  wanted: %s\n", r.detail, want);
}

static const struct layout usual = {5, 3, 3};

/* The hello's two Initials, split at a and b as given (Chromium: b - a = ceil((end + 4) / 2)). */
static void hello_add(struct cap *c, size_t a, size_t b, const struct layout *l1,
                      const struct layout *l2)
{
	const size_t first[2][2] = {{0, a}, {b, c->ch_len}}, second[1][2] = {{a, b}};

	initial_add(c, 1, first, 2, l1);
	initial_add(c, 2, second, 1, l2);
}

static size_t middle(size_t end)
{
	return (end + 5) / 2;
}

/* A captured Chromium hello's split and its resends (4, 6, 8), then its CLOSE's place. */
static void chromium_split(void)
{
	struct cap *c = cap_new(HELLO_LEN);
	const size_t first[2][2] = {{0, 68}, {68 + middle(HELLO_LEN), HELLO_LEN}};
	const size_t second[1][2] = {{68, 68 + middle(HELLO_LEN)}};
	const struct layout seven_pads = {9, 4, 7}; /* a captured resend's (pn 4, 7 runs) */

	if (!c)
		return;
	hello_add(c, 68, 68 + middle(HELLO_LEN), &usual, &(struct layout){9, 7, 5});
	initial_add(c, 4, first, 2, &seven_pads);
	initial_add(c, 6, second, 1, &(struct layout){11, 2, 2});
	initial_add(c, 8, first, 2, &(struct layout){12, 2, 4});
	judge(c, DPI_PASS,
	      "hellos split as Chromium's 1, not 0; hello Initials laid out unlike the captures 0;"
	      " 0 bad");
	free(c);
}

/* The head's end at each edge of 58..84 passes, one past either edge is flagged. */
static void head_edges(void)
{
	static const struct {
		size_t a;
		enum dpi_verdict v;
		const char *want;
	} t[] = {
	    {58, DPI_PASS, "split as Chromium's 1, not 0"},
	    {84, DPI_PASS, "split as Chromium's 1, not 0"},
	    {57, DPI_FLAG, "packet 1's head ends at 57, not in 58..84"},
	    {85, DPI_FLAG, "packet 1's head ends at 85, not in 58..84"},
	    {40, DPI_FLAG, "packet 1's head ends at 40, not in 58..84"},
	    {600, DPI_FLAG, "packet 1's head ends at 600, not in 58..84"},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct cap *c = cap_new(HELLO_LEN);

		if (!c)
			return;
		hello_add(c, t[i].a, t[i].a + middle(HELLO_LEN), &usual, &usual);
		judge(c, t[i].v, t[i].want);
		free(c);
	}
}

/* The whole hello in one Initial (packet 1), as most QUIC stacks send a short one. */
static void one_initial(void)
{
	struct cap *c = cap_new(1000);
	const size_t whole[1][2] = {{0, 1000}};

	if (!c)
		return;
	initial_add(c, 1, whole, 1, &usual);
	judge(c, DPI_FLAG,
	      "hello not split as Chromium 156's: packets 1 and 2 do not both carry ClientHello "
	      "bytes");
	free(c);
}

/* Two Initials, but cut in the middle (no head and tail), or swapped. */
static void halves_otherwise(void)
{
	const size_t m = 68 + middle(HELLO_LEN);
	/* each case: two Initials, their packet numbers and spans (offset, end pairs) */
	const struct {
		uint8_t pn[2];
		size_t nspans[2];
		size_t spans[2][2][2];
		const char *want;
	} t[] = {
	    {{1, 2},
	     {1, 1},
	     {{{0, 957}}, {{957, HELLO_LEN}}},
	     "packet 1 holds [0, 957), not a head and the tail of 1914"},
	    /* Chromium's halves, numbered the other way round */
	    {{2, 1},
	     {2, 1},
	     {{{0, 68}, {m, HELLO_LEN}}, {{68, m}}},
	     "packet 1 holds [68, 1027), not a head and the tail of 1914"},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct cap *c = cap_new(HELLO_LEN);

		if (!c)
			return;
		for (size_t k = 0; k < 2; k++)
			initial_add(c, t[i].pn[k], t[i].spans[k], t[i].nspans[k], &usual);
		judge(c, DPI_FLAG, t[i].want);
		free(c);
	}
}

/* The middle one byte short of ceil((end + 4) / 2): an even split, say. */
static void middle_size(void)
{
	struct cap *c = cap_new(HELLO_LEN);

	if (!c)
		return;
	hello_add(c, 70, 70 + middle(HELLO_LEN) - 1, &usual, &usual);
	judge(c, DPI_FLAG, "the middle is 958 bytes, not ceil((1914 + 4) / 2) = 959");
	free(c);
}

/* A resend whose spans are neither packet 1's nor packet 2's (a hello cut afresh). */
static void resend_other_spans(void)
{
	struct cap *c = cap_new(HELLO_LEN);
	const size_t other[2][2] = {{0, 60}, {1027, HELLO_LEN}};

	if (!c)
		return;
	hello_add(c, 68, 68 + middle(HELLO_LEN), &usual, &usual);
	initial_add(c, 4, other, 2, &usual);
	judge(c, DPI_FLAG,
	      "packet 4 holds [0, 60) [1027, 1914): neither packet 1's spans nor packet 2's");
	free(c);
}

/* Frames outside the captures' ranges are counted, not flagged (quic.c says why). */
static void layout_counted(void)
{
	struct cap *c = cap_new(HELLO_LEN);

	if (!c)
		return;
	hello_add(c, 68, 68 + middle(HELLO_LEN), &usual, &(struct layout){6, 9, 1});
	judge(c, DPI_PASS,
	      "laid out unlike the captures 1; 0 bad, first: (not flagged) payload 1: packet 2 "
	      "has 6 CRYPTO frames, 9 PINGs, 1 PADDING runs");
	free(c);
}

/* Hostile counts: more CRYPTO frames than are kept, more Initials than are kept. */
static void too_many(void)
{
	struct cap *c = cap_new(HELLO_LEN);
	const size_t first[2][2] = {{0, 68}, {68 + middle(HELLO_LEN), HELLO_LEN}};

	if (!c)
		return;
	hello_add(c, 68, 68 + middle(HELLO_LEN), &(struct layout){20, 3, 3}, &usual);
	judge(c, DPI_FLAG, "packet 1 has 20 CRYPTO frames");
	free(c);

	c = cap_new(HELLO_LEN);
	if (!c)
		return;
	hello_add(c, 68, 68 + middle(HELLO_LEN), &usual, &usual);
	for (uint8_t pn = 4; pn < 4 + 2 * 8; pn += 2)
		initial_add(c, pn, first, 2, &usual);
	judge(c, DPI_FLAG, "more than 8 Initials carry ClientHello bytes");
	free(c);
}

static const struct check_test tests[] = {
    {"chromium_split", chromium_split}, {"head_edges", head_edges},
    {"one_initial", one_initial},       {"halves_otherwise", halves_otherwise},
    {"middle_size", middle_size},       {"resend_other_spans", resend_other_spans},
    {"layout_counted", layout_counted}, {"too_many", too_many},
};

CHECK_MAIN(tests, NULL)
