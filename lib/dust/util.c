/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small shared pieces of libdust: the thread-local error text, drop-reason
 * names, address parsing and formatting.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "dust_pvt.h"

static _Thread_local char last_error[256];

DUST_EXPORT const char *dust_last_error(void)
{
	return last_error[0] ? last_error : "no error";
}

int dust_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	errno = err;
	return -err;
}

static const char *const drop_names[DUST_DROP_MAX] = {
    [DUST_OK] = "ok",
    [DUST_DROP_TRUNCATED] = "truncated",
    [DUST_DROP_AUTH] = "auth",
    [DUST_DROP_REPLAY] = "replay",
    [DUST_DROP_STALE] = "stale",
    [DUST_DROP_FUTURE] = "future",
    [DUST_DROP_MALFORMED] = "malformed",
    [DUST_DROP_KEY_EXHAUSTED] = "key_exhausted",
    [DUST_DROP_INTRO_UNKNOWN] = "intro_unknown",
    [DUST_DROP_INTRO_AUTH] = "intro_auth",
    [DUST_DROP_INTRO_EXPIRED] = "intro_expired",
    [DUST_DROP_INTRO_WRONG_KEY] = "intro_wrong_key",
    [DUST_DROP_INTRO_STALE] = "intro_stale",
    [DUST_DROP_INTRO_REPLAY] = "intro_replay",
    [DUST_DROP_INTRO_DUP] = "intro_dup",
    [DUST_DROP_INTRO_PERSIST] = "intro_persist",
    [DUST_DROP_INTRO_REVOKED] = "intro_revoked",
    [DUST_DROP_STORE_UNAVAILABLE] = "store_unavailable",
    [DUST_DROP_INTRO_EARLY] = "intro_early",
};

DUST_EXPORT const char *dust_drop_name(enum dust_drop d)
{
	if ((unsigned)d >= DUST_DROP_MAX)
		return "unknown";
	return drop_names[d];
}

DUST_EXPORT int dust_ipaddr_parse(struct dust_ipaddr *out, const char *text)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, text, out->a) == 1) {
		out->family = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, text, out->a) == 1) {
		out->family = 6;
		return 0;
	}
	return dust_fail(EINVAL, "'%s' is not an IPv4 or IPv6 address", text);
}

DUST_EXPORT const char *dust_ipaddr_format(const struct dust_ipaddr *ip, char *buf, size_t len)
{
	int af = ip->family == 6 ? AF_INET6 : AF_INET;

	if ((ip->family != 4 && ip->family != 6) || !inet_ntop(af, ip->a, buf, (socklen_t)len))
		snprintf(buf, len, "(none)");
	return buf;
}

DUST_EXPORT bool dust_ipaddr_equal(const struct dust_ipaddr *a, const struct dust_ipaddr *b)
{
	return ipaddr_eq(a, b);
}

uint64_t dust_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

DUST_EXPORT void dust_pad_default(struct dust_pad *pad)
{
	*pad =
	    (struct dust_pad){.kind = DUST_PAD_UNIFORM, .model = 1, .min = 0, .max = 63, .mtu = 0};
}

DUST_EXPORT void dust_limits_default(struct dust_limits *lim)
{
	lim->ts_window_s = 60;
}
