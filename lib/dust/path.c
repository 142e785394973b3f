/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Path validation (SPEC.md §9.1): a server sends to a peer address that has
 * not shown it receives there at most three times what it received from it
 * (RFC 9000 §8's anti-amplification limit), so that an intro or a moved
 * packet from a spoofed address cannot turn the gateway into a reflector.
 * The worker that owns a session starts, credits and validates its path;
 * encoders on any lcore spend the credit.
 */
#include <sodium.h>

#include "dust_pvt.h"

DUST_EXPORT enum dust_path_msg dust_path_msg_parse(const uint8_t *seg, size_t len,
                                                   uint8_t cookie[DUST_PATH_COOKIE_BYTES])
{
	if (len != DUST_PATH_MSG_BYTES ||
	    (seg[0] != DUST_PATH_CHALLENGE && seg[0] != DUST_PATH_RESPONSE))
		return DUST_PATH_NONE;
	memcpy(cookie, seg + 1, DUST_PATH_COOKIE_BYTES);
	return (enum dust_path_msg)seg[0];
}

DUST_EXPORT void dust_path_msg_put(uint8_t *out, enum dust_path_msg t,
                                   const uint8_t cookie[DUST_PATH_COOKIE_BYTES])
{
	out[0] = (uint8_t)t;
	memcpy(out + 1, cookie, DUST_PATH_COOKIE_BYTES);
}

static int64_t credit_of(size_t rx_bytes)
{
	return (int64_t)(rx_bytes > 65535 ? 65535 : rx_bytes) * DUST_PATH_AMPLIFY;
}

static void validated(struct dust_session *s)
{
	__atomic_store_n(&s->path_state, DUST_PATH_VALID, __ATOMIC_RELEASE);
	sodium_memzero(s->path_cookie, sizeof(s->path_cookie));
}

DUST_EXPORT void dust_path_start(struct dust_session *s, enum dust_path_state st, size_t rx_bytes,
                                 struct dust_rng *rng)
{
	__atomic_store_n(&s->path_credit, credit_of(rx_bytes), __ATOMIC_RELAXED);
	if (st == DUST_PATH_AWAIT_ECHO)
		dust_rng_bytes(rng, s->path_cookie, sizeof(s->path_cookie));
	else
		sodium_memzero(s->path_cookie, sizeof(s->path_cookie));
	__atomic_store_n(&s->path_state, (uint8_t)st, __ATOMIC_RELEASE);
}

DUST_EXPORT bool dust_path_rx(struct dust_session *s, size_t rx_bytes)
{
	switch (s->path_state) {
	case DUST_PATH_VALID:
		return false;
	case DUST_PATH_AWAIT_DATA:
		validated(s);
		return true;
	case DUST_PATH_AWAIT_EPOCH:
		if (s->rx_epoch >= 1) {
			validated(s);
			return true;
		}
		break;
	default:
		break;
	}
	__atomic_fetch_add(&s->path_credit, credit_of(rx_bytes), __ATOMIC_RELAXED);
	return false;
}

DUST_EXPORT void dust_path_credit(struct dust_session *s, size_t rx_bytes)
{
	if (__atomic_load_n(&s->path_state, __ATOMIC_ACQUIRE) != DUST_PATH_VALID)
		__atomic_fetch_add(&s->path_credit, credit_of(rx_bytes), __ATOMIC_RELAXED);
}

DUST_EXPORT bool dust_path_echo(struct dust_session *s,
                                const uint8_t cookie[DUST_PATH_COOKIE_BYTES])
{
	if (s->path_state != DUST_PATH_AWAIT_ECHO ||
	    sodium_memcmp(cookie, s->path_cookie, DUST_PATH_COOKIE_BYTES) != 0)
		return false;
	validated(s);
	return true;
}

/*
 * Check, then spend: encoders on several lcores may each pass the check
 * before the others spend, so the limit can be overshot by what they seal
 * at once (one burst each), never by more.
 */
DUST_EXPORT bool dust_path_may_send(struct dust_session *s, size_t n)
{
	if (__atomic_load_n(&s->path_state, __ATOMIC_ACQUIRE) == DUST_PATH_VALID)
		return true;
	if (__atomic_load_n(&s->path_credit, __ATOMIC_RELAXED) < (int64_t)n)
		return false;
	__atomic_fetch_sub(&s->path_credit, (int64_t)n, __ATOMIC_RELAXED);
	return true;
}

DUST_EXPORT bool dust_path_may_resend(struct dust_session *s, size_t n)
{
	if (__atomic_load_n(&s->path_state, __ATOMIC_ACQUIRE) == DUST_PATH_VALID)
		return true;
	if (__atomic_load_n(&s->path_credit, __ATOMIC_RELAXED) <= 0)
		return false;
	__atomic_fetch_sub(&s->path_credit, (int64_t)n, __ATOMIC_RELAXED);
	return true;
}

DUST_EXPORT void dust_path_spent(struct dust_session *s, size_t n)
{
	if (__atomic_load_n(&s->path_state, __ATOMIC_ACQUIRE) != DUST_PATH_VALID)
		__atomic_fetch_sub(&s->path_credit, (int64_t)n, __ATOMIC_RELAXED);
}
