/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap check: dustgw's delivered cleartext and counters against a manifest.
 */
#include <inttypes.h>

#include "dust-pcap.h"

struct check {
	struct manifest m;
	struct queues q;
	bool unordered;
	size_t seen, next, bad, extra, split;
};

static long find_client(struct check *k, const uint8_t *ip, size_t len)
{
	/* First a flow whose next expected packet is this one (flows may share a source). */
	for (unsigned w = 0; w < k->q.clients; w++) {
		const struct pkt *p;

		if (k->q.next[w] >= k->q.n[w])
			continue;
		p = &k->m.p[k->q.idx[w][k->q.next[w]]];
		if (p->len == len && !memcmp(p->b, ip, len))
			return w;
	}
	/* Else the flow of its inner source, to report what differs. */
	for (unsigned w = 0; w < k->q.clients; w++) {
		if (!k->q.n[w])
			continue;
		const struct pkt *p = &k->m.p[k->q.idx[w][0]];

		if (len >= 20 && p->len >= 20 && !memcmp(p->b + 12, ip + 12, 4))
			return w;
	}
	return -1;
}

static void check_frame(const uint8_t *f, size_t len, unsigned file, void *arg)
{
	struct check *k = arg;
	const uint8_t *ip = f + 14;
	size_t ilen = len >= 14 ? len - 14 : 0;
	const struct pkt *p = NULL;
	long w;

	k->seen++;
	if (!k->unordered) {
		if (k->next < k->m.np)
			p = &k->m.p[k->next++];
	} else if ((w = find_client(k, ip, ilen)) >= 0) {
		if (k->q.file[w] >= 0 && k->q.file[w] != (int)file)
			k->split++;
		k->q.file[w] = (int)file;
		if (k->q.next[w] < k->q.n[w])
			p = &k->m.p[k->q.idx[w][k->q.next[w]++]];
	}
	if (!p) {
		k->extra++;
		return;
	}
	if (p->len != ilen || memcmp(p->b, ip, ilen) != 0) {
		if (k->bad++ < 5)
			fprintf(stderr, "check: packet %zu (client %u): %zu bytes, expected %u%s\n",
			        k->seen, p->who, ilen, p->len,
			        p->len == ilen ? " (contents differ)" : "");
	}
}

static int check_stats(const struct manifest *m, const char *path)
{
	FILE *f = fopen(path, "r");
	char name[96];
	uint64_t v;
	int bad = 0;
	unsigned matched = 0;

	if (!f)
		die("cannot read %s", path);
	while (fscanf(f, "%95s %" SCNu64, name, &v) == 2) {
		bool named = false;

		for (unsigned i = 0; i < m->ne; i++) {
			if (strcmp(m->e[i].name, name))
				continue;
			named = true;
			matched++;
			if (m->e[i].v != v) {
				fprintf(stderr, "check: %s = %" PRIu64 ", expected %" PRIu64 "\n",
				        name, v, m->e[i].v);
				bad++;
			}
		}
		if (!named && !strncmp(name, "drop.", 5) && v) {
			fprintf(stderr, "check: %s = %" PRIu64 ", expected 0\n", name, v);
			bad++;
		}
	}
	fclose(f);
	if (matched != m->ne) {
		fprintf(stderr, "check: %u of %u expected counters missing from %s\n",
		        m->ne - matched, m->ne, path);
		bad++;
	}
	if (!bad)
		printf("check: %u counters as expected, every other drop reason zero\n", m->ne);
	return bad;
}

int cmd_check(const struct args *a)
{
	struct check k;
	int bad = 0;

	memset(&k, 0, sizeof(k));
	if (!a->manifest)
		die("check needs --manifest%s", "");
	manifest_load(&k.m, a->manifest, "deliver");
	for (unsigned i = 0; i < a->nmore; i++)
		manifest_merge_expect(&k.m, a->more_manifest[i]);
	queues_build(&k.q, &k.m);
	k.unordered = a->unordered;
	for (unsigned i = 0; i < a->nin; i++)
		read_pcap(a->in[i], i, check_frame, &k);
	if (a->nin) {
		size_t lost = 0;

		if (k.unordered)
			for (unsigned w = 0; w < k.q.clients; w++)
				lost += k.q.n[w] - k.q.next[w];
		else
			lost = k.m.np - k.next;
		printf("check: %zu of %zu cleartext packets delivered byte for byte "
		       "(%zu differ, %zu lost, %zu unexpected%s)\n",
		       k.seen - k.bad - k.extra, k.m.np, k.bad, lost, k.extra,
		       k.unordered ? "" : ", in order");
		if (k.unordered)
			printf("check: clients seen on more than one output: %zu\n", k.split);
		bad += k.bad || lost || k.extra || k.split;
	}
	if (a->stats)
		bad += check_stats(&k.m, a->stats);
	queues_free(&k.q);
	manifest_free(&k.m);
	return bad ? 1 : 0;
}
