/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap read: per-flow summary of a capture.
 */
#include <inttypes.h>

#include "dust-pcap.h"

struct flow {
	uint8_t key[12]; /* src ip, dst ip, sport, dport */
	uint64_t frames, bytes;
};

struct rd {
	struct flow *f;
	size_t n, cap;
	uint64_t frames, other;
};

static void rd_frame(const uint8_t *f, size_t len, unsigned file, void *arg)
{
	struct rd *r = arg;
	struct frame_udp u;
	uint8_t key[12];
	size_t i;

	(void)file;
	r->frames++;
	if (frame_udp_parse(f, len, &u) < 0 || u.family != 4) {
		r->other++;
		return;
	}
	memcpy(key, u.sip, 4);
	memcpy(key + 4, u.dip, 4);
	put16(key + 8, u.sport);
	put16(key + 10, u.dport);
	for (i = 0; i < r->n && memcmp(r->f[i].key, key, 12); i++)
		;
	if (i == r->n) {
		if (r->n == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 256;
			r->f = realloc(r->f, r->cap * sizeof(*r->f));
		}
		memset(&r->f[r->n], 0, sizeof(r->f[0]));
		memcpy(r->f[r->n++].key, key, 12);
	}
	r->f[i].frames++;
	r->f[i].bytes += len;
}

int cmd_read(int argc, char **argv)
{
	for (int a = 0; a < argc; a++) {
		struct rd r = {0};

		read_pcap(argv[a], 0, rd_frame, &r);
		printf("%s: %" PRIu64 " frames, %zu UDP/IPv4 flows, %" PRIu64 " other frames\n",
		       argv[a], r.frames, r.n, r.other);
		for (size_t i = 0; i < r.n && i < 20; i++) {
			const uint8_t *k = r.f[i].key;

			printf("  %u.%u.%u.%u:%u -> %u.%u.%u.%u:%u  %" PRIu64 " frames %" PRIu64
			       " bytes\n",
			       k[0], k[1], k[2], k[3], k[8] << 8 | k[9], k[4], k[5], k[6], k[7],
			       k[10] << 8 | k[11], r.f[i].frames, r.f[i].bytes);
		}
		if (r.n > 20)
			printf("  ... %zu more flows\n", r.n - 20);
		free(r.f);
	}
	return 0;
}
