/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpi-gen: writes synthetic UDP captures for dust-dpi's tests. "random" is
 * what Dust must look like (random bytes, random lengths); every other mode
 * carries one known fingerprint that one particular check must flag.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcapw.h"

enum { SERVER_IP = 0x0a000001, SERVER_PORT = 4789, LEN_MAX = 1472 };

/* Reproducible stream: block i is BLAKE2b(seed, i) expanded by ChaCha20. */
struct gen_rng {
	uint8_t seed[randombytes_SEEDBYTES];
	uint64_t block;
};

static void rng_bytes(struct gen_rng *r, void *out, size_t len)
{
	uint8_t s[randombytes_SEEDBYTES];
	uint8_t ctr[8];

	for (int i = 0; i < 8; i++)
		ctr[i] = (uint8_t)(r->block >> (8 * i));
	r->block++;
	crypto_generichash(s, sizeof(s), ctr, sizeof(ctr), r->seed, sizeof(r->seed));
	randombytes_buf_deterministic(out, len, s);
}

/* Uniform in [lo, hi]; 64-bit draw, so the modulo bias is below 2^-50. */
static uint32_t rng_range(struct gen_rng *r, uint32_t lo, uint32_t hi)
{
	uint64_t v;

	rng_bytes(r, &v, sizeof(v));
	return lo + (uint32_t)(v % ((uint64_t)hi - lo + 1));
}

struct gen {
	struct gen_rng rng;
	struct pcapw *w;
	unsigned flows;
	uint8_t buf[LEN_MAX];
	uint8_t (*hist)[LEN_MAX]; /* replay mode: earlier payloads */
	uint16_t *hist_len;
};

/* Flow f: even flows client->server, odd flows the reverse. */
static int emit(struct gen *g, unsigned f, size_t len)
{
	uint32_t client = 0x0a000002 + f / 2;
	uint16_t cport = (uint16_t)(40000 + f / 2);

	if (f % 2)
		return pcapw_udp4(g->w, SERVER_IP, SERVER_PORT, client, cport, g->buf, len);
	return pcapw_udp4(g->w, client, cport, SERVER_IP, SERVER_PORT, g->buf, len);
}

static size_t mode_random(struct gen *g, unsigned f, unsigned i)
{
	size_t len = rng_range(&g->rng, 1, LEN_MAX);

	(void)f, (void)i;
	rng_bytes(&g->rng, g->buf, len);
	return len;
}

/* WireGuard-like transport data: type 4, reserved zeros, receiver index, counter. */
static size_t mode_wglike(struct gen *g, unsigned f, unsigned i)
{
	size_t inner = rng_range(&g->rng, 40, 1400);
	size_t len = 16 + (inner + 15) / 16 * 16 + 16;
	uint64_t counter = i / g->flows;

	rng_bytes(&g->rng, g->buf, len);
	g->buf[0] = 4;
	memset(g->buf + 1, 0, 3);
	memset(g->buf + 4, 0x10 + (int)f, 4); /* receiver index: fixed per flow */
	for (int b = 0; b < 8; b++)
		g->buf[8 + b] = (uint8_t)(counter >> (8 * b));
	return len;
}

/* Random bytes, but only four lengths (a fixed-size-cell protocol). */
static size_t mode_fewlen(struct gen *g, unsigned f, unsigned i)
{
	static const size_t lens[] = {92, 148, 600, 1200};
	size_t len = lens[rng_range(&g->rng, 0, 3)];

	(void)f, (void)i;
	rng_bytes(&g->rng, g->buf, len);
	return len;
}

/* Random first 64 bytes, then a body with one byte value twice as likely. */
static size_t mode_skewtail(struct gen *g, unsigned f, unsigned i)
{
	size_t len = rng_range(&g->rng, 200, LEN_MAX);

	(void)f, (void)i;
	rng_bytes(&g->rng, g->buf, len);
	for (size_t j = 64; j < len; j++) {
		if (g->buf[j] == 0xaa)
			g->buf[j] = 0x55;
	}
	return len;
}

/* Random datagrams; the first of every flow opens with the same 8-byte magic. */
static size_t mode_magic(struct gen *g, unsigned f, unsigned i)
{
	static const uint8_t magic[8] = {0xd3, 0x1f, 0x9a, 0x42, 0x77, 0xe0, 0x0c, 0xb5};
	size_t len = mode_random(g, f, i);

	if (i < g->flows && len >= 8)
		memcpy(g->buf, magic, 8);
	return len;
}

/* Random datagrams of 64+ bytes; one in twenty resends an earlier one. */
static size_t mode_replay(struct gen *g, unsigned f, unsigned i)
{
	size_t len;

	(void)f;
	if (i > 0 && rng_range(&g->rng, 0, 19) == 0) {
		unsigned j = rng_range(&g->rng, 0, i - 1);

		memcpy(g->buf, g->hist[j], g->hist_len[j]);
		len = g->hist_len[j];
	} else {
		len = rng_range(&g->rng, 64, LEN_MAX);
		rng_bytes(&g->rng, g->buf, len);
	}
	memcpy(g->hist[i], g->buf, len);
	g->hist_len[i] = (uint16_t)len;
	return len;
}

static const struct {
	const char *name;
	size_t (*fill)(struct gen *g, unsigned f, unsigned i);
} modes[] = {
	{"random", mode_random}, {"wglike", mode_wglike}, {"fewlen", mode_fewlen},
	{"skewtail", mode_skewtail}, {"magic", mode_magic}, {"replay", mode_replay},
};

static int usage(void)
{
	fprintf(stderr, "usage: dpi-gen MODE OUT.pcap [COUNT [FLOWS [SEED]]]\n  MODE:");
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
		fprintf(stderr, " %s", modes[m].name);
	fprintf(stderr, "\n  defaults: 4000 datagrams, 16 flows, a random seed (printed)\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct gen g = {.flows = 16};
	unsigned count = 4000;
	unsigned long long seed;
	size_t m;

	if (argc < 3 || sodium_init() < 0)
		return usage();
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
		if (!strcmp(argv[1], modes[m].name))
			break;
	if (m == sizeof(modes) / sizeof(modes[0]))
		return usage();
	if (argc > 3)
		count = (unsigned)strtoul(argv[3], NULL, 10);
	if (argc > 4)
		g.flows = (unsigned)strtoul(argv[4], NULL, 10);
	seed = argc > 5 ? strtoull(argv[5], NULL, 10) : ((unsigned long long)randombytes_random() << 32 | randombytes_random());
	if (!count || !g.flows)
		return usage();
	fprintf(stderr, "dpi-gen: %s, %u datagrams, %u flows, seed %llu\n", modes[m].name, count,
		g.flows, seed);
	crypto_generichash(g.rng.seed, sizeof(g.rng.seed), (const uint8_t *)&seed, sizeof(seed),
			   NULL, 0);
	g.hist = calloc(count, sizeof(*g.hist));
	g.hist_len = calloc(count, sizeof(*g.hist_len));
	g.w = pcapw_open(argv[2]);
	if (!g.w || !g.hist || !g.hist_len)
		return 2;
	for (unsigned i = 0; i < count; i++) {
		unsigned f = i % g.flows;

		if (emit(&g, f, modes[m].fill(&g, f, i)) < 0)
			return 2;
	}
	free(g.hist);
	free(g.hist_len);
	return pcapw_close(g.w) < 0 ? 2 : 0;
}
