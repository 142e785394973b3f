/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap: manifests (expected packets and counters) and per-client queues.
 */
#include <inttypes.h>

#include "dust-pcap.h"

void manifest_load(struct manifest *m, const char *path, const char *kind)
{
	FILE *f = fopen(path, "r");
	static char line[8192];

	memset(m, 0, sizeof(*m));
	if (!f)
		die("cannot read %s", path);
	while (fgets(line, sizeof(line), f)) {
		char k[16], hex[4000];
		unsigned who;

		if (sscanf(line, "clients %u", &m->clients) == 1)
			continue;
		if (sscanf(line, "expect %63s %" SCNu64, m->e[m->ne].name, &m->e[m->ne].v) == 2) {
			if (m->ne < 63)
				m->ne++;
			continue;
		}
		if (sscanf(line, "%15s %u %3999s", k, &who, hex) != 3 || strcmp(k, kind))
			continue;
		if (m->np == m->cap) {
			m->cap = m->cap ? m->cap * 2 : 1024;
			m->p = realloc(m->p, m->cap * sizeof(*m->p));
		}
		m->p[m->np].who = who;
		m->p[m->np].len = (uint16_t)(strlen(hex) / 2);
		m->p[m->np].b = malloc(m->p[m->np].len + 1);
		for (size_t i = 0; i < m->p[m->np].len; i++)
			sscanf(hex + 2 * i, "%2hhx", &m->p[m->np].b[i]);
		m->np++;
	}
	fclose(f);
}

void manifest_free(struct manifest *m)
{
	for (size_t i = 0; i < m->np; i++)
		free(m->p[i].b);
	free(m->p);
}

/* Add another manifest's counter expectations (a run fed by two captures). */
void manifest_merge_expect(struct manifest *m, const char *path)
{
	struct manifest o;

	manifest_load(&o, path, "-");
	for (unsigned i = 0; i < o.ne; i++) {
		unsigned j;

		for (j = 0; j < m->ne && strcmp(m->e[j].name, o.e[i].name); j++)
			;
		if (j == m->ne && m->ne < 63)
			m->e[m->ne++] = o.e[i];
		else if (j < m->ne)
			m->e[j].v += o.e[i].v;
	}
	manifest_free(&o);
}

/* Per-client queues of expected packets, in manifest order. */
void queues_build(struct queues *q, const struct manifest *m)
{
	unsigned c = m->clients;

	for (size_t i = 0; i < m->np; i++)
		c = m->p[i].who + 1 > c ? m->p[i].who + 1 : c;
	q->clients = c;
	q->idx = calloc(c + 1, sizeof(*q->idx));
	q->n = calloc(c + 1, sizeof(*q->n));
	q->next = calloc(c + 1, sizeof(*q->next));
	q->file = calloc(c + 1, sizeof(*q->file));
	for (unsigned i = 0; i < c; i++)
		q->file[i] = -1;
	for (size_t i = 0; i < m->np; i++) {
		unsigned w = m->p[i].who;

		q->idx[w] = realloc(q->idx[w], (q->n[w] + 1) * sizeof(size_t));
		q->idx[w][q->n[w]++] = i;
	}
}

void queues_free(struct queues *q)
{
	for (unsigned w = 0; w <= q->clients; w++)
		free(q->idx[w]);
	free(q->idx);
	free(q->n);
	free(q->next);
	free(q->file);
}
