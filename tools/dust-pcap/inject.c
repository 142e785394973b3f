/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap inject: cleartext from the tunnel side toward each client.
 */
#include <inttypes.h>

#include "dust-pcap.h"

static void inject_one(struct outs *o, unsigned q, const struct dust_ipaddr *to, size_t size,
                       FILE *man, int who)
{
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 0x02}, smac[6] = {0x02, 0, 0, 0, 0, 0x03};
	uint8_t f[FRAME_MAX], pl[PAYLOAD_MAX];
	size_t h = eth(f, dmac, smac, 0x0800), plen = size - 28, len;

	dust_rng_bytes(&rng, pl, plen);
	len = ip_udp4(f + h, far_ip, to->a, 9, (uint16_t)(2000 + (who < 0 ? 0 : who)), pl, plen);
	emit(o, q, f, h + len);
	if (who >= 0)
		hexline(man, "encode", (unsigned)who, f + h, len);
}

int cmd_inject(const struct args *a)
{
	struct client *c;
	unsigned n, packets = a->packets ? a->packets : 3;
	struct dust_store *st;
	struct outs o;
	FILE *man;
	uint64_t enc = 0, no_session = 0;

	if (!a->store || !a->state || !a->nout || !a->manifest)
		die("inject needs --store, --state, --out and --manifest%s", "");
	c = state_load(a->state, &n);
	st = store_open(a->store, a->key, 0);
	man = fopen(a->manifest, "w");
	if (!man)
		die("cannot write %s", a->manifest);
	fprintf(man, "# dust-pcap inject manifest: cleartext each client must decode\nclients %u\n",
	        n);
	outs_open(&o, (char **)a->out, a->nout);
	for (unsigned p = 0; p < packets; p++) {
		for (unsigned i = 0; i < n; i++) {
			/* A client refused at its intro has no session to encode for. */
			bool live = !c[i].wrong_key && !c[i].refused;

			inject_one(&o, i + 1, &dust_store_at(st, c[i].idx)->inv.tunnel,
			           sizes[(i + p) % NSIZES], man, live ? (int)i : -1);
			enc += live;
			no_session += !live;
		}
	}
	if (dust_store_count(st) > n) { /* an invitation nobody introduced */
		inject_one(&o, 0, &dust_store_at(st, n)->inv.tunnel, 100, man, -1);
		no_session++;
	}
	{
		struct dust_ipaddr unknown = {.family = 4, .a = {10, 250, 0, 1}};

		inject_one(&o, 0, &unknown, 100, man, -1);
	}
	fprintf(man, "expect ctr.encoded %" PRIu64 "\nexpect drop.no_tunnel 1\n", enc);
	if (no_session)
		fprintf(man, "expect drop.no_session %" PRIu64 "\n", no_session);
	outs_close(&o);
	dust_store_close(st);
	fclose(man);
	printf("dust-pcap: %" PRIu64 " cleartext packets toward %u clients\n", enc, n);
	free(c);
	return 0;
}
