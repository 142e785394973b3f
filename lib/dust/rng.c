/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-thread CSPRNG for IVs and padding: ChaCha20 keystream with fast key
 * erasure (each refill's first 32 bytes become the next key, so a later
 * memory leak cannot reveal bytes already handed out). Seeded once from the
 * OS; randombytes_buf per packet would cost a getrandom syscall each.
 */
#include <sodium.h>

#include "dust_pvt.h"

static void refill(struct dust_rng *rng)
{
	static const uint8_t nonce[crypto_stream_chacha20_ietf_NONCEBYTES];

	crypto_stream_chacha20_ietf(rng->buf, sizeof(rng->buf), nonce, rng->key);
	memcpy(rng->key, rng->buf, DUST_KEY_BYTES);
	sodium_memzero(rng->buf, DUST_KEY_BYTES);
	rng->pos = DUST_KEY_BYTES;
}

DUST_EXPORT void dust_rng_init(struct dust_rng *rng)
{
	randombytes_buf(rng->key, sizeof(rng->key));
	refill(rng);
}

DUST_EXPORT void dust_rng_seed(struct dust_rng *rng, const uint8_t key[DUST_KEY_BYTES])
{
	memcpy(rng->key, key, DUST_KEY_BYTES);
	refill(rng);
}

DUST_EXPORT void dust_rng_bytes(struct dust_rng *rng, void *out, size_t len)
{
	uint8_t *o = out;

	while (len > 0) {
		size_t n;

		if (rng->pos == sizeof(rng->buf))
			refill(rng);
		n = sizeof(rng->buf) - rng->pos;
		if (n > len)
			n = len;
		memcpy(o, rng->buf + rng->pos, n);
		/* Bytes handed out are erased from the buffer. */
		sodium_memzero(rng->buf + rng->pos, n);
		rng->pos += (uint32_t)n;
		o += n;
		len -= n;
	}
}

DUST_EXPORT uint32_t dust_rng_uniform(struct dust_rng *rng, uint32_t upper)
{
	uint32_t r, min;

	if (upper < 2)
		return 0;
	/* Reject the low values that would bias r % upper (as arc4random_uniform). */
	min = (uint32_t)(-upper % upper);
	do
		dust_rng_bytes(rng, &r, sizeof(r));
	while (r < min);
	return r % upper;
}

DUST_EXPORT void dust_rng_wipe(struct dust_rng *rng)
{
	sodium_memzero(rng, sizeof(*rng));
}
