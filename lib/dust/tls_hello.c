/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TLS 1.3 hellos for the quic profile (SPEC.md §12.2). The ClientHello
 * mirrors what Chromium 156 sends in its QUIC Initial (captured on this
 * machine, see SPEC): the same extensions with the same contents, their
 * order shuffled per connection as Chromium shuffles it, transport
 * parameters shuffled with a GREASE parameter and a GREASE version. Dust's
 * fields ride only where Chromium's bytes are random: random, the x25519
 * key share, and the GREASE ECH extension's enc and payload.
 */
#include <sodium.h>

#include "quic_pvt.h"

/* the key share holds the 1216-byte X25519MLKEM768 share */
enum { EXT_COUNT = 12, EXT_ROOM = 1280 };

struct ext {
	uint8_t b[EXT_ROOM];
	size_t len;
};

static uint8_t *ext_begin(struct ext *e, uint16_t type)
{
	be16_put(e->b, type);
	e->len = 4;
	return e->b + 4;
}

static void ext_put(struct ext *e, const void *p, size_t n)
{
	memcpy(e->b + e->len, p, n);
	e->len += n;
}

static void ext_end(struct ext *e)
{
	be16_put(e->b + 2, (uint16_t)(e->len - 4));
}

static void ext_bytes(struct ext *e, uint16_t type, const uint8_t *body, size_t n)
{
	ext_begin(e, type);
	ext_put(e, body, n);
	ext_end(e);
}

static void ext_sni(struct ext *e, const char *sni)
{
	size_t n = strlen(sni);
	uint8_t h[5];

	ext_begin(e, DUST_TLS_EXT_SERVER_NAME);
	be16_put(h, (uint16_t)(n + 3));
	h[2] = 0; /* host_name */
	be16_put(h + 3, (uint16_t)n);
	ext_put(e, h, sizeof(h));
	ext_put(e, sni, n);
	ext_end(e);
}

/* Chromium 156's two shares: X25519MLKEM768 (ek | x25519, 1216 bytes), then x25519 */
static void ext_key_share(struct ext *e, const struct tls_hello_dust *d)
{
	static const uint8_t hy[] = {0x04, 0xe8, 0x11, 0xec, 0x04, 0xc0};
	static const uint8_t x[] = {0x00, 0x1d, 0x00, 0x20};

	static_assert(DUST_TLS_HYBRID_SHARE_BYTES == 0x4c0 &&
	                  4 + DUST_TLS_HYBRID_SHARE_BYTES + 4 + DUST_PK_BYTES == 0x4e8,
	              "share lengths");
	ext_begin(e, DUST_TLS_EXT_KEY_SHARE);
	ext_put(e, hy, sizeof(hy));
	ext_put(e, d->hybrid, DUST_TLS_HYBRID_SHARE_BYTES);
	ext_put(e, x, sizeof(x));
	ext_put(e, d->x25519, DUST_PK_BYTES);
	ext_end(e);
}

/* GREASE ECH as Chromium sends it: outer, HKDF-SHA256 / AES-128-GCM, random id. */
static void ext_ech(struct ext *e, struct dust_rng *rng, const struct tls_hello_dust *d,
                    size_t payload_len, size_t *payload_at)
{
	uint8_t h[8] = {0x00, 0x00, 0x01, 0x00, 0x01, 0, 0x00, 0x20};
	uint8_t l[2];

	dust_rng_bytes(rng, &h[5], 1); /* config_id */
	ext_begin(e, DUST_TLS_EXT_ECH);
	ext_put(e, h, sizeof(h));
	ext_put(e, d->ech_enc, DUST_QI_ECH_ENC_BYTES);
	be16_put(l, (uint16_t)payload_len);
	ext_put(e, l, 2);
	*payload_at = e->len;
	e->len += payload_len; /* filled by the caller */
	ext_end(e);
}

/* Chromium's trust anchor IDs extension (codepoint 51764): the same list every time. */
static void ext_trust_anchors(struct ext *e)
{
	static const uint8_t p5[] = {0x82, 0xdf, 0x13, 0x02};
	static const uint8_t s5[] = {0x01, 0x06, 0x0d, 0x0e, 0x0f, 0x12, 0x13, 0x14};
	static const uint8_t p8[] = {0x83, 0x9a, 0x64, 0x8c, 0x9b, 0x2d, 0x01};
	static const uint8_t s8[] = {0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x12, 0x13};
	static const uint8_t p4[] = {0xd6, 0x79, 0x09};
	static const uint8_t s4[] = {0x01, 0x04, 0x05, 0x06, 0x07, 0x08,
	                             0x0a, 0x0b, 0x0c, 0x0d, 0x0f};
	const struct {
		const uint8_t *p, *s;
		uint8_t plen, n;
	} g[] = {{p5, s5, 4, 8}, {p8, s8, 7, 9}, {p4, s4, 3, 11}};
	size_t list_at;

	ext_begin(e, DUST_TLS_EXT_CHROME_51764);
	list_at = e->len;
	e->len += 2;
	for (size_t i = 0; i < 3; i++)
		for (size_t j = 0; j < g[i].n; j++) {
			uint8_t n = (uint8_t)(g[i].plen + 1);

			ext_put(e, &n, 1);
			ext_put(e, g[i].p, g[i].plen);
			ext_put(e, &g[i].s[j], 1);
		}
	be16_put(e->b + list_at, (uint16_t)(e->len - list_at - 2));
	ext_end(e);
}

/* ---- quic_transport_parameters ------------------------------------------- */

struct tp {
	uint8_t b[32];
	size_t len;
};

static void tp_put(struct tp *t, uint64_t id, const uint8_t *v, size_t n)
{
	t->len = quic_varint_put(t->b, id, quic_varint_len(id));
	t->len += quic_varint_put(t->b + t->len, n, 1);
	memcpy(t->b + t->len, v, n);
	t->len += n;
}

static void tp_int(struct tp *t, uint64_t id, uint64_t v, size_t vlen)
{
	uint8_t b[8];

	tp_put(t, id, b, quic_varint_put(b, v, vlen));
}

static void shuffle(struct dust_rng *rng, size_t *idx, size_t n)
{
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = dust_rng_uniform(rng, (uint32_t)i + 1), t = idx[i];

		idx[i] = idx[j];
		idx[j] = t;
	}
}

/* A reserved version 0x?a?a?a?a (RFC 9000 §15). */
static void grease_version(struct dust_rng *rng, uint8_t v[4])
{
	dust_rng_bytes(rng, v, 4);
	for (int i = 0; i < 4; i++)
		v[i] = (uint8_t)((v[i] & 0xf0) | 0x0a);
}

static void ext_transport_params(struct ext *e, struct dust_rng *rng)
{
	struct tp t[14];
	size_t idx[14], n = 0;
	uint8_t vi[12] = {0, 0, 0, 1, 0, 0, 0, 1}, grease[16], glen;
	uint64_t gid;

	/* GREASE parameter: id 31 * N + 27 in an 8-byte varint, 1..16 random bytes */
	gid = dust_rng_uniform(rng, UINT32_MAX) | (uint64_t)dust_rng_uniform(rng, 1u << 25) << 32;
	gid = 27 + 31 * ((gid | (1ull << 30)) & ((1ull << 57) - 1));
	glen = (uint8_t)(1 + dust_rng_uniform(rng, 16));
	dust_rng_bytes(rng, grease, glen);
	tp_put(&t[n++], gid, grease, glen);
	/* version_information: chosen v1, available {v1, GREASE} in either order */
	if (dust_rng_uniform(rng, 2)) {
		grease_version(rng, vi + 4);
		memcpy(vi + 8, "\x00\x00\x00\x01", 4);
	} else {
		grease_version(rng, vi + 8);
	}
	tp_put(&t[n++], 0x11, vi, sizeof(vi));
	tp_int(&t[n++], 0x20, 65536, 4);                     /* max_datagram_frame_size */
	tp_int(&t[n++], 0x08, 100, 2);                       /* initial_max_streams_bidi */
	tp_int(&t[n++], 0x01, 30000, 4);                     /* max_idle_timeout */
	tp_put(&t[n++], 0x3128, (const uint8_t *)"ORIG", 4); /* google_connection_options */
	tp_int(&t[n++], 0x04, 15728640, 4);                  /* initial_max_data */
	tp_int(&t[n++], 0x07, 6291456, 4);                   /* initial_max_stream_data_uni */
	tp_int(&t[n++], 0x06, 6291456, 4);                   /* ..._bidi_remote */
	tp_int(&t[n++], 0x05, 6291456, 4);                   /* ..._bidi_local */
	tp_int(&t[n++], 0x09, 103, 2);                       /* initial_max_streams_uni */
	tp_put(&t[n++], 0x0f, (const uint8_t *)"", 0); /* initial_source_connection_id: empty */
	tp_int(&t[n++], 0x03, 1472, 2);                /* max_udp_payload_size */
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	shuffle(rng, idx, n);
	ext_begin(e, DUST_TLS_EXT_QUIC_TP);
	for (size_t i = 0; i < n; i++)
		ext_put(e, t[idx[i]].b, t[idx[i]].len);
	ext_end(e);
}

size_t tls_client_hello_build(struct dust_rng *rng, const struct tls_hello_dust *d,
                              size_t ech_payload_len, uint8_t *out, size_t cap,
                              size_t *ech_payload_off)
{
	static const uint8_t groups[] = {0x00, 0x08, 0x11, 0xec, 0x00,
	                                 0x1d, 0x00, 0x17, 0x00, 0x18};
	static const uint8_t versions[] = {0x02, 0x03, 0x04};
	static const uint8_t sigalgs[] = {0x00, 0x12, 0x04, 0x03, 0x08, 0x04, 0x04,
	                                  0x01, 0x05, 0x03, 0x08, 0x05, 0x05, 0x01,
	                                  0x08, 0x06, 0x06, 0x01, 0x02, 0x01};
	static const uint8_t psk[] = {0x01, 0x01};
	static const uint8_t alpn[] = {0x00, 0x03, 0x02, 'h', '3'};
	static const uint8_t cert[] = {0x02, 0x00, 0x02}; /* brotli */
	static const uint8_t head[] = {0x00, 0x06, 0x13, 0x01, 0x13, 0x02, 0x13, 0x03, 0x01, 0x00};
	struct ext x[EXT_COUNT];
	size_t idx[EXT_COUNT], n = 0, ech_at = 0, ech_i, pos, total = 0;

	ext_sni(&x[n++], d->sni);
	ext_bytes(&x[n++], DUST_TLS_EXT_SUPPORTED_GROUPS, groups, sizeof(groups));
	ext_key_share(&x[n++], d);
	ext_bytes(&x[n++], DUST_TLS_EXT_SUPPORTED_VERSIONS, versions, sizeof(versions));
	ext_bytes(&x[n++], DUST_TLS_EXT_SIG_ALGS, sigalgs, sizeof(sigalgs));
	ext_bytes(&x[n++], DUST_TLS_EXT_PSK_MODES, psk, sizeof(psk));
	ext_bytes(&x[n++], DUST_TLS_EXT_ALPN, alpn, sizeof(alpn));
	ext_transport_params(&x[n++], rng);
	ext_bytes(&x[n++], DUST_TLS_EXT_COMPRESS_CERT, cert, sizeof(cert));
	ext_bytes(&x[n++], DUST_TLS_EXT_ALPS, alpn, sizeof(alpn));
	ech_i = n;
	ext_ech(&x[n++], rng, d, ech_payload_len, &ech_at);
	ext_trust_anchors(&x[n++]);
	for (size_t i = 0; i < n; i++) {
		idx[i] = i;
		total += x[i].len;
	}
	shuffle(rng, idx, n);
	if (cap < 4 + 2 + 32 + 1 + sizeof(head) + 2 + total)
		return 0;
	out[0] = DUST_TLS_CLIENT_HELLO;
	pos = 4;
	be16_put(out + pos, DUST_TLS_LEGACY_VERSION);
	pos += 2;
	memcpy(out + pos, d->random, DUST_TLS_RANDOM_BYTES);
	pos += DUST_TLS_RANDOM_BYTES;
	out[pos++] = 0; /* legacy_session_id: empty in QUIC (RFC 9001 §8.4) */
	memcpy(out + pos, head, sizeof(head));
	pos += sizeof(head);
	be16_put(out + pos, (uint16_t)total);
	pos += 2;
	for (size_t i = 0; i < n; i++) {
		if (idx[i] == ech_i)
			*ech_payload_off = pos + ech_at;
		memcpy(out + pos, x[idx[i]].b, x[idx[i]].len);
		pos += x[idx[i]].len;
	}
	out[1] = (uint8_t)((pos - 4) >> 16);
	be16_put(out + 2, (uint16_t)(pos - 4));
	return pos;
}

/* ---- parsing ----------------------------------------------------------------- */

/* Both of Chromium's shares must be there: X25519MLKEM768 (1216 bytes) and x25519. */
static bool parse_key_share(const uint8_t *b, size_t n, struct tls_hello_dust *d, bool *found)
{
	size_t pos = 2;

	if (n < 2 || be16_get(b) != n - 2)
		return false;
	while (pos < n) {
		uint16_t group, klen;

		if (n - pos < 4)
			return false;
		group = be16_get(b + pos);
		klen = be16_get(b + pos + 2);
		pos += 4;
		if (n - pos < klen)
			return false;
		if (group == DUST_TLS_GROUP_X25519 && klen == DUST_PK_BYTES && !*found) {
			memcpy(d->x25519, b + pos, DUST_PK_BYTES);
			*found = true;
		}
		if (group == DUST_TLS_GROUP_X25519MLKEM768 && klen == DUST_TLS_HYBRID_SHARE_BYTES &&
		    !d->hybrid)
			d->hybrid = b + pos;
		pos += klen;
	}
	return true;
}

static bool parse_ech(const uint8_t *b, size_t n, size_t off, struct tls_hello_dust *d)
{
	/* outer(0) kdf(2) aead(2) config_id(1) enc_len(2) enc payload_len(2) payload */
	if (n < 8 + DUST_QI_ECH_ENC_BYTES + 2 || b[0] != 0 ||
	    be16_get(b + 6) != DUST_QI_ECH_ENC_BYTES)
		return false;
	memcpy(d->ech_enc, b + 8, DUST_QI_ECH_ENC_BYTES);
	d->ech_payload_len = be16_get(b + 8 + DUST_QI_ECH_ENC_BYTES);
	if (d->ech_payload_len != n - 10 - DUST_QI_ECH_ENC_BYTES)
		return false;
	d->ech_payload = b + 10 + DUST_QI_ECH_ENC_BYTES;
	d->ech_payload_off = off + 10 + DUST_QI_ECH_ENC_BYTES;
	return true;
}

static bool parse_sni(const uint8_t *b, size_t n, struct tls_hello_dust *d)
{
	size_t len;

	if (n < 5 || be16_get(b) != n - 2 || b[2] != 0)
		return false;
	len = be16_get(b + 3);
	if (len != n - 5 || len == 0 || len > DUST_COVER_SNI_MAX)
		return false;
	memcpy(d->sni, b + 5, len);
	d->sni[len] = '\0';
	return true;
}

static bool parse_ext(uint16_t type, const uint8_t *b, size_t n, size_t off,
                      struct tls_hello_dust *d, bool *ks, bool *ech)
{
	switch (type) {
	case DUST_TLS_EXT_KEY_SHARE:
		return parse_key_share(b, n, d, ks);
	case DUST_TLS_EXT_ECH:
		if (*ech)
			return false;
		*ech = true;
		return parse_ech(b, n, off, d);
	case DUST_TLS_EXT_SERVER_NAME:
		return parse_sni(b, n, d);
	default:
		return true;
	}
}

/*
 * The extension header at p[pos] (pos < end): its type and body length n;
 * false if the header or the body runs past end.
 */
static bool ext_at(const uint8_t *p, size_t pos, size_t end, uint16_t *type, uint16_t *n)
{
	if (end - pos < 4)
		return false;
	*type = be16_get(p + pos);
	*n = be16_get(p + pos + 2);
	return end - pos - 4 >= *n;
}

bool tls_client_hello_parse(const uint8_t *ch, size_t len, struct tls_hello_dust *d)
{
	size_t pos = 4 + 2, end;
	bool ks = false, ech = false;
	uint64_t seen = 0;

	memset(d, 0, sizeof(*d));
	/* legacy_version 0x0303, as the peek's reading of the first Initial asks */
	if (len < 4 || ch[0] != DUST_TLS_CLIENT_HELLO ||
	    ((size_t)ch[1] << 16 | be16_get(ch + 2)) != len - 4 || len < pos + 32 + 1 ||
	    be16_get(ch + 4) != DUST_TLS_LEGACY_VERSION)
		return false;
	memcpy(d->random, ch + pos, DUST_TLS_RANDOM_BYTES);
	pos += DUST_TLS_RANDOM_BYTES;
	pos += 1 + (size_t)ch[pos]; /* legacy_session_id */
	if (len < pos + 2 || len - pos - 2 < be16_get(ch + pos))
		return false;
	pos += 2 + be16_get(ch + pos); /* cipher suites */
	if (len < pos + 1 || len - pos - 1 < ch[pos])
		return false;
	pos += 1 + (size_t)ch[pos]; /* compression methods */
	if (len < pos + 2 || be16_get(ch + pos) != len - pos - 2)
		return false;
	pos += 2;
	end = len;
	while (pos < end) {
		uint16_t type, n;

		if (!ext_at(ch, pos, end, &type, &n))
			return false;
		/* a repeated extension is malformed TLS (RFC 8446 §4.2) */
		if (type < 64 && (seen & (1ull << type)))
			return false;
		if (type < 64)
			seen |= 1ull << type;
		if (!parse_ext(type, ch + pos + 4, n, pos + 4, d, &ks, &ech))
			return false;
		pos += 4 + (size_t)n;
	}
	return ks && d->hybrid && ech && d->sni[0];
}

size_t tls_server_hello_build(struct dust_rng *rng, const uint8_t server_pk[DUST_PK_BYTES],
                              uint8_t *out, size_t cap)
{
	static const uint8_t ks[] = {0x00, 0x33, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20};
	static const uint8_t sv[] = {0x00, 0x2b, 0x00, 0x02, 0x03, 0x04};
	size_t pos = 4, ext_len = sizeof(ks) + DUST_PK_BYTES + sizeof(sv);

	if (cap < 4 + 2 + 32 + 1 + 2 + 1 + 2 + ext_len)
		return 0;
	out[0] = DUST_TLS_SERVER_HELLO;
	be16_put(out + pos, DUST_TLS_LEGACY_VERSION);
	pos += 2;
	dust_rng_bytes(rng, out + pos, DUST_TLS_RANDOM_BYTES);
	pos += DUST_TLS_RANDOM_BYTES;
	out[pos++] = 0; /* legacy_session_id_echo */
	be16_put(out + pos, DUST_TLS_AES_128_GCM_SHA256);
	pos += 2;
	out[pos++] = 0; /* compression */
	be16_put(out + pos, (uint16_t)ext_len);
	pos += 2;
	/* supported_versions, then key_share: quic-go's order (caddy's, the cover server's) */
	memcpy(out + pos, sv, sizeof(sv));
	pos += sizeof(sv);
	memcpy(out + pos, ks, sizeof(ks));
	pos += sizeof(ks);
	memcpy(out + pos, server_pk, DUST_PK_BYTES);
	pos += DUST_PK_BYTES;
	out[1] = 0;
	be16_put(out + 2, (uint16_t)(pos - 4));
	return pos;
}

bool tls_server_hello_parse(const uint8_t *sh, size_t len, uint8_t server_pk[DUST_PK_BYTES])
{
	size_t pos = 4 + 2 + 32;
	bool found = false;

	if (len < pos + 1 || sh[0] != DUST_TLS_SERVER_HELLO ||
	    ((size_t)sh[1] << 16 | be16_get(sh + 2)) != len - 4)
		return false;
	pos += 1 + (size_t)sh[pos];
	pos += 3; /* cipher suite, compression */
	if (len < pos + 2 || be16_get(sh + pos) != len - pos - 2)
		return false;
	pos += 2;
	while (pos < len) {
		uint16_t type, n;

		if (!ext_at(sh, pos, len, &type, &n))
			return false;
		if (type == DUST_TLS_EXT_KEY_SHARE) {
			if (n != 4 + DUST_PK_BYTES ||
			    be16_get(sh + pos + 4) != DUST_TLS_GROUP_X25519 ||
			    be16_get(sh + pos + 6) != DUST_PK_BYTES)
				return false;
			memcpy(server_pk, sh + pos + 8, DUST_PK_BYTES);
			found = true;
		}
		pos += 4 + (size_t)n;
	}
	return found;
}
