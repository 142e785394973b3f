/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Datagrams that reach a client before its intro's answer (SPEC.md §5.1):
 * a gateway seals on several lcores and sends on several queues, so data
 * under the new session's keys may overtake the answer. The client keeps a
 * few and opens them once the answer has, as a QUIC endpoint buffers the
 * packets it cannot decrypt yet (RFC 9001 §5.7).
 */
#include <string.h>

#include "dust_pvt.h"

DUST_EXPORT void dust_early_keep(struct dust_early *e, uint32_t who, const uint8_t *dg, size_t len)
{
	unsigned at;

	if (len > DUST_EARLY_BYTES)
		return;
	if (e->n == DUST_EARLY_MAX) {
		/* full: the oldest goes (it was the likeliest to be lost anyway) */
		memmove(e->len, e->len + 1, sizeof(e->len[0]) * (DUST_EARLY_MAX - 1));
		memmove(e->who, e->who + 1, sizeof(e->who[0]) * (DUST_EARLY_MAX - 1));
		memmove(e->b, e->b + 1, sizeof(e->b[0]) * (DUST_EARLY_MAX - 1));
		e->n--;
		e->dropped++;
	}
	at = e->n++;
	e->who[at] = who;
	e->len[at] = (uint16_t)len;
	memcpy(e->b[at], dg, len);
}

DUST_EXPORT size_t dust_early_take(struct dust_early *e, uint32_t who, uint8_t *out, size_t cap)
{
	for (unsigned i = 0; i < e->n; i++) {
		size_t len = e->len[i];

		if (e->who[i] != who)
			continue;
		if (len > cap)
			len = 0; /* cannot be handed out: dropped */
		else
			memcpy(out, e->b[i], len);
		memmove(e->len + i, e->len + i + 1, sizeof(e->len[0]) * (e->n - i - 1));
		memmove(e->who + i, e->who + i + 1, sizeof(e->who[0]) * (e->n - i - 1));
		memmove(e->b + i, e->b + i + 1, sizeof(e->b[0]) * (e->n - i - 1));
		e->n--;
		return len;
	}
	return 0;
}
