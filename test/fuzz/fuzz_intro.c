/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: intro acceptance. A store in a temp dir holds one
 * invitation; each input is a datagram from an unknown endpoint, tried as an
 * intro at a fixed clock, and on success its chained data is opened with the
 * new session. The entry's freshness state is reset before each input so a
 * crash reproduces from its input alone. Properties: consumed stays inside
 * the datagram, and the same bytes again are a no-op duplicate.
 */
#include "fuzz_fixture.h"

static struct fz_gw gw;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fz_gw_init(&gw, fz_invite);
	return 0;
}

static void chained(struct dust_session *s, const uint8_t *data, size_t size, size_t off)
{
	static uint8_t buf[65536];
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop drop;
	unsigned n;

	memcpy(buf, data, size);
	n = dust_datagram_open(s, &gw.srv.lim, FZ_NOW_S, buf, size, off, segs, DUST_CHAIN_MAX,
	                       &drop);
	for (unsigned i = 0; i < n; i++)
		if ((size_t)segs[i].off + segs[i].len > size)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dust_endpoint from = {.ip = {.family = 4, .a = {198, 51, 100, 7}}, .port = 5555};
	struct dust_intro_info info;
	struct dust_session s, s2;
	size_t consumed = 0, c2 = 0;
	enum dust_drop d;

	if (size > 65535)
		return -1;
	fz_gw_next(&gw);
	fz_gw_entry_reset(&gw);
	memset(&s, 0, sizeof(s));
	d = dust_intro_accept(&gw.srv, data, size, FZ_NOW_MS, &from, NULL, &s, &consumed, &info);
	if (gw.verbose)
		fprintf(stderr, "intro: %zu bytes: %s\n", size, dust_drop_name(d));
	if (d >= DUST_DROP_MAX)
		abort();
	if (d == DUST_OK) {
		if (consumed < DUST_INTRO_MIN_BYTES || consumed > size || !info.first_use)
			abort();
		chained(&s, data, size, consumed);
		memset(&s2, 0, sizeof(s2));
		if (dust_intro_accept(&gw.srv, data, size, FZ_NOW_MS, &from, NULL, &s2, &c2,
		                      &info) != DUST_DROP_INTRO_DUP)
			abort();
	}
	dust_session_wipe(&s);
	return 0;
}
