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
#include "quic.h"

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

/* A new path: its MTU is not known (quic-go starts again at 1252 too). */
void dust_pmtu_reset(struct dust_session *s)
{
	__atomic_store_n(&s->pmtu, 0, __ATOMIC_RELAXED);
	s->pmtu_max = 0;
	s->pmtu_probe = 0;
	s->pmtu_at_ms = 0;
}

DUST_EXPORT void dust_path_start(struct dust_session *s, enum dust_path_state st, size_t rx_bytes,
                                 struct dust_rng *rng)
{
	dust_pmtu_reset(s);
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

/* ---- Path MTU discovery (SPEC.md §12.4) ----------------------------------------- */

DUST_EXPORT size_t dust_pmtu_probe(struct dust_session *s, struct dust_rng *rng, uint64_t now_ms,
                                   uint8_t msg[DUST_PATH_MSG_BYTES])
{
	/* a wait is measured mod 2^16 ms: one over 65 s may read short, which only delays */
	uint16_t since = (uint16_t)((uint16_t)now_ms - s->pmtu_at_ms);
	size_t cur;

	if (s->profile != DUST_PROFILE_QUIC || s->role != DUST_ROLE_SERVER ||
	    __atomic_load_n(&s->path_state, __ATOMIC_ACQUIRE) != DUST_PATH_VALID)
		return 0;
	cur = dust_quic_tx_dgram_max(s); /* the bound so far */
	if (!s->pmtu_max) {              /* the path is valid: the search starts */
		s->pmtu_max = DUST_PMTU_MAX;
		s->pmtu_at_ms = (uint16_t)now_ms;
		return 0;
	}
	if (s->pmtu_probe) {
		if (since < DUST_PMTU_LOST_MS)
			return 0;
		s->pmtu_max = s->pmtu_probe; /* it did not pass */
		s->pmtu_probe = 0;
		s->pmtu_at_ms = (uint16_t)now_ms;
		sodium_memzero(s->path_cookie, sizeof(s->path_cookie));
		return 0;
	}
	if (s->pmtu_max < cur + DUST_PMTU_STOP_DIFF ||
	    since < (s->pmtu ? DUST_PMTU_NEXT_MS : DUST_PMTU_FIRST_MS))
		return 0;
	s->pmtu_probe = (uint16_t)((cur + s->pmtu_max) / 2);
	s->pmtu_at_ms = (uint16_t)now_ms;
	dust_rng_bytes(rng, s->path_cookie, sizeof(s->path_cookie));
	dust_path_msg_put(msg, DUST_PATH_CHALLENGE, s->path_cookie);
	return s->pmtu_probe;
}

DUST_EXPORT bool dust_pmtu_echo(struct dust_session *s,
                                const uint8_t cookie[DUST_PATH_COOKIE_BYTES], uint64_t now_ms)
{
	if (!s->pmtu_probe || s->path_state != DUST_PATH_VALID ||
	    sodium_memcmp(cookie, s->path_cookie, DUST_PATH_COOKIE_BYTES) != 0)
		return false;
	__atomic_store_n(&s->pmtu, s->pmtu_probe, __ATOMIC_RELAXED);
	s->pmtu_probe = 0;
	s->pmtu_at_ms = (uint16_t)now_ms;
	sodium_memzero(s->path_cookie, sizeof(s->path_cookie));
	return true;
}
