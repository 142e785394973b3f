/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Private pieces of the quic profile shared by quic_initial.c (packet
 * protection), tls_hello.c (ClientHello/ServerHello) and quic_intro.c.
 */
#ifndef DUST_QUIC_PVT_H
#define DUST_QUIC_PVT_H

#include "dust_pvt.h"
#include "quic.h"

static inline void be16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint16_t be16_get(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

size_t quic_varint_len(uint64_t v);
/* Write v in exactly len bytes (1, 2, 4 or 8); returns len. */
size_t quic_varint_put(uint8_t *p, uint64_t v, size_t len);
bool quic_varint_get(const uint8_t *p, size_t avail, size_t *pos, uint64_t *v);

struct quic_long {
	uint8_t type;
	uint32_t version;
	const uint8_t *dcid, *scid;
	uint8_t dcid_len, scid_len;
	size_t token_len;
	size_t pn_off; /* where the protected packet number starts */
	size_t length; /* the Length field: pn + payload + tag */
};

bool quic_long_parse(const uint8_t *dg, size_t len, struct quic_long *h);

/* Skip an ACK frame (RFC 9000 §19.3) whose type byte is at *pos; at most max_ranges ranges. */
bool quic_ack_skip(const uint8_t *f, size_t n, size_t *pos, uint64_t max_ranges);

/* A CRYPTO stream being reassembled from frames in any order (the gateway, dust-dpi). */
struct quic_crypto_buf {
	uint8_t b[DUST_QUIC_CRYPTO_MAX];
	uint8_t have[DUST_QUIC_CRYPTO_MAX / 8]; /* a bit per byte received */
};

/* Clear what was received (the bytes need not be). */
void quic_crypto_reset(struct quic_crypto_buf *cb);
/* Store a CRYPTO frame's data at off; false if it reaches past the buffer or changes a byte
 * already received. */
bool quic_crypto_store(struct quic_crypto_buf *cb, uint64_t off, const uint8_t *p, uint64_t len);
/* Whether the stream's first n bytes were all received. */
bool quic_crypto_complete(const struct quic_crypto_buf *cb, size_t n);
/* Length of the handshake message of type t at the stream's start, once complete; else 0. */
size_t quic_crypto_message(const struct quic_crypto_buf *cb, uint8_t t);
bool quic_protect(const struct dust_quic_keys *k, uint8_t *pkt, size_t pn_off, size_t pn_len,
                  uint64_t pn, size_t plen);
bool quic_unprotect(const struct dust_quic_keys *k, const uint8_t *pkt, size_t pn_off, size_t len,
                    uint64_t *pn, uint8_t *out, size_t *plen);

/* tls_hello.c: the mirrored ClientHello (Chromium 156's QUIC hello, §12.2). */
struct tls_hello_dust {
	uint8_t random[DUST_TLS_RANDOM_BYTES];
	uint8_t x25519[DUST_PK_BYTES];
	/* X25519MLKEM768 share (ek | x25519): build reads it, parse points into the hello */
	const uint8_t *hybrid;
	uint8_t ech_enc[DUST_QI_ECH_ENC_BYTES];
	const uint8_t *ech_payload; /* parse: points into the hello */
	size_t ech_payload_len;
	size_t ech_payload_off; /* offset of the ECH payload in the hello */
	char sni[DUST_COVER_SNI_MAX + 1];
};

/* Build a ClientHello (handshake header included) into out; returns its length or 0. */
size_t tls_client_hello_build(struct dust_rng *rng, const struct tls_hello_dust *d,
                              size_t ech_payload_len, uint8_t *out, size_t cap,
                              size_t *ech_payload_off);
/* Parse a ClientHello; false if it is not well formed or lacks x25519 or ECH. */
bool tls_client_hello_parse(const uint8_t *ch, size_t len, struct tls_hello_dust *d);
/* ServerHello with an x25519 key share; returns its length or 0. */
size_t tls_server_hello_build(struct dust_rng *rng, const uint8_t server_pk[DUST_PK_BYTES],
                              uint8_t *out, size_t cap);
bool tls_server_hello_parse(const uint8_t *sh, size_t len, uint8_t server_pk[DUST_PK_BYTES]);

#endif /* DUST_QUIC_PVT_H */
