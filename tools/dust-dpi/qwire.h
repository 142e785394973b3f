/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-dpi's own reading of QUIC v1 (RFC 9000, RFC 9001): long headers,
 * variable-length integers, ACK frames, CRYPTO reassembly and the removal
 * of Initial packet protection. Written from the RFCs over OpenSSL, apart
 * from libdust: a censor's-eye checker that shared the parser it checks
 * would agree with its mistakes.
 */
#ifndef DPI_QWIRE_H
#define DPI_QWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	QW_FORM_LONG = 0x80,
	QW_FIXED = 0x40,
	QW_TYPE_INITIAL = 0x00, /* long packet types, bits 0x30 of the first byte */
	QW_TYPE_0RTT = 0x10,
	QW_TYPE_HANDSHAKE = 0x20,
	QW_TYPE_RETRY = 0x30,
	QW_V1 = 0x00000001,
	QW_CID_MAX = 20,
	QW_INITIAL_MIN = 1200,   /* RFC 9000 §14.1 */
	QW_CRYPTO_MAX = 4096,    /* CRYPTO stream bytes kept per connection attempt */
	QW_TLS_CLIENT_HELLO = 1, /* RFC 8446 §4 handshake types */
	QW_TLS_SERVER_HELLO = 2,
};

struct qw_long {
	uint8_t type; /* QW_TYPE_* */
	uint32_t version;
	const uint8_t *dcid, *scid;
	uint8_t dcid_len, scid_len;
	size_t pn_off; /* the protected packet number's offset in the packet */
	size_t length; /* the Length field: packet number, payload and tag */
};

/* Initial secrets of one direction (RFC 9001 §5.2). */
struct qw_keys {
	uint8_t key[16], iv[12], hp[16];
};

/* Read a variable-length integer at *pos (RFC 9000 §16); false if cut short. */
bool qw_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *v);

/*
 * Parse a long header of any version (RFC 9000 §17.2) up to its packet
 * number; false if malformed. Length is read for v1 Initial, 0-RTT and
 * Handshake packets only (Retry and other versions leave it 0).
 */
bool qw_long_parse(const uint8_t *p, size_t n, struct qw_long *h);

/* The client's (server = false) or server's Initial keys for a client DCID. */
bool qw_initial_keys(const uint8_t *dcid, size_t dcid_len, bool server, struct qw_keys *k);

/*
 * Remove header protection and decrypt a long-header packet whose Length
 * is h->length: frames to out (at least h->length bytes), their length to
 * *plen, the packet number as sent (1 to 4 bytes, not expanded: RFC 9000
 * §A.3) to *pn. False if it does not authenticate.
 */
bool qw_open(const struct qw_keys *k, const uint8_t *pkt, const struct qw_long *h, uint8_t *out,
             size_t *plen, uint64_t *pn);

/* Skip an ACK frame whose type byte is at *pos, at most max_ranges ranges. */
bool qw_ack_skip(const uint8_t *f, size_t n, size_t *pos, uint64_t max_ranges);

/* A CRYPTO stream reassembled from frames in any order. */
struct qw_crypto {
	uint8_t b[QW_CRYPTO_MAX];
	uint8_t have[QW_CRYPTO_MAX / 8]; /* a bit per byte received */
};

/* Keep a CRYPTO frame's data at off; false if it reaches past QW_CRYPTO_MAX. */
bool qw_crypto_put(struct qw_crypto *c, uint64_t off, const uint8_t *p, uint64_t len);
/* The length of the complete handshake message of type t at offset 0, else 0. */
size_t qw_crypto_message(const struct qw_crypto *c, uint8_t t);

static inline uint16_t qw_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

#endif /* DPI_QWIRE_H */
