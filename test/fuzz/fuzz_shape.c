/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: app/dustgw/shape.c, which reads the long headers of
 * what the cover server (the kernel's web server behind the tap) sends the
 * learner's probes. Input: datagrams, each a 2-byte big-endian length then
 * its bytes, read one by one (dgw_shape_dgram) into probes of up to
 * DGW_SHAPE_DG_MAX, a probe ending where a length's top bit is set; then
 * the shape derived from them and clamped. Checked: a datagram read keeps
 * its length and at most 8 packets, its first kind among its kinds, its
 * first packet's size within it; a
 * derived shape, once clamped, is one every client opens.
 */
#include <stdlib.h>
#include <string.h>

#include "shape.h"

enum { PROBES = 4 };

static void check_dg(const struct dgw_shape_dg *d, size_t len)
{
	if (d->len != len || d->npkts > 8 || (d->npkts && !(d->kinds & d->first)) ||
	    d->first_len > len || (d->npkts && !d->first_len))
		abort();
}

static void check_shape(struct dgw_shape *s)
{
	dgw_shape_clamp(s);
	if (s->answer < DGW_SHAPE_ANSWER_MIN || s->answer > DGW_SHAPE_ANSWER_MAX ||
	    s->tail_min < DGW_SHAPE_TAIL_LEAST || s->tail_max > DGW_SHAPE_TAIL_MOST ||
	    s->tail_min > s->tail_max || s->pto_ms < DGW_SHAPE_PTO_MIN ||
	    s->pto_ms > DGW_SHAPE_PTO_MAX || s->coalesce > DGW_SHAPE_COALESCE_MAX)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dgw_shape_probe p[PROBES];
	struct dgw_shape cur, got;
	unsigned np = 0;
	uint32_t t = 0;
	uint8_t *copy;

	memset(p, 0, sizeof(p));
	/* the whole input as one datagram, in a buffer of its own size (ASan sees overreads) */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (dgw_shape_dgram(copy, size, &p[0].dg[0]))
		check_dg(&p[0].dg[0], size);
	free(copy);
	memset(p, 0, sizeof(p));
	while (size >= 2 && np < PROBES) {
		size_t len = (size_t)(data[0] & 0x7f) << 8 | data[1];
		bool end = data[0] & 0x80;
		struct dgw_shape_probe *q = &p[np];

		data += 2, size -= 2;
		len = len < size ? len : size;
		copy = malloc(len ? len : 1);
		if (!copy)
			return 0;
		memcpy(copy, data, len);
		if (q->n < DGW_SHAPE_DG_MAX) {
			dgw_shape_dgram(copy, len, &q->dg[q->n]);
			check_dg(&q->dg[q->n], len);
			q->dg[q->n++].t_ms = t;
		}
		free(copy);
		t += len & 0xff; /* arrival times from the input, growing */
		data += len, size -= len;
		if (end)
			np++;
	}
	dgw_shape_default(&cur);
	dgw_shape_derive(p, np < PROBES ? np + 1 : PROBES, &cur, &got);
	check_shape(&got);
	return 0;
}
