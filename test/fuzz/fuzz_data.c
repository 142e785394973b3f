/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: data-packet decode with a live session. The input is one
 * UDP payload opened by the server end of a fixed session pair at a fixed
 * clock, so the seeds from mkcorpus (valid, chained, keepalive packets) pass
 * the tag check and the fuzzer explores what lies past it.
 * Properties checked beyond "no crash": segments stay inside the datagram,
 * and the very same bytes opened again yield nothing (replay).
 */
#include "fuzz_fixture.h"

static struct dust_session tmpl;
static struct dust_limits lim;
static uint8_t buf[65536];
static bool verbose; /* FUZZ_VERBOSE=1: print each input's outcome (seed checks) */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct dust_session c;

	(void)argc, (void)argv;
	if (dust_init() < 0)
		abort();
	fz_session_pair(&c, &tmpl);
	dust_limits_default(&lim);
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	return 0;
}

static unsigned open_all(struct dust_session *s, const uint8_t *data, size_t size,
			 struct dust_seg *segs, enum dust_drop *drop)
{
	memcpy(buf, data, size);
	return dust_datagram_open(s, &lim, FZ_NOW_S, buf, size, 0, segs, DUST_CHAIN_MAX, drop);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dust_seg segs[DUST_CHAIN_MAX];
	struct dust_session s = tmpl;
	enum dust_drop drop;
	unsigned n;

	if (size > 65535)
		return -1;
	n = open_all(&s, data, size, segs, &drop);
	if (verbose)
		fprintf(stderr, "data: %zu bytes: %u segs, %s\n", size, n, dust_drop_name(drop));
	if (drop >= DUST_DROP_MAX || (n == 0 && drop == DUST_OK && size != 0))
		abort();
	for (unsigned i = 0; i < n; i++) {
		if ((size_t)segs[i].off + segs[i].len > size || segs[i].off < DUST_DATA_PREFIX)
			abort();
	}
	/* a failed open must not have touched the session */
	if (n == 0 && memcmp(&s, &tmpl, sizeof(s)) != 0)
		abort();
	if (n > 0) {
		struct dust_session before = s;

		if (open_all(&s, data, size, segs, &drop) != 0 || drop != DUST_DROP_REPLAY)
			abort();
		if (memcmp(&s, &before, sizeof(s)) != 0)
			abort();
	}
	dust_session_wipe(&s);
	return 0;
}
