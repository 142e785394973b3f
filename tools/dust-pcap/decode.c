/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap decode: open the gateway's replies with the saved client sessions.
 */
#include <inttypes.h>

#include "dust-pcap.h"

struct dec {
	struct client *c;
	unsigned n;
	struct manifest m;
	struct queues q;
	bool have_manifest;
	uint64_t datagrams, ka, data, fail, bad, extra, foreign;
	uint64_t *ka_per;
	uint8_t *answer_left; /* per client: its answer opened in the first pass, not yet read */
};

static long client_of(struct dec *d, int family, const uint8_t *ip, uint16_t port)
{
	for (unsigned i = 0; i < d->n; i++)
		if (d->c[i].ep.ip.family == family &&
		    !memcmp(d->c[i].ep.ip.a, ip, family == 6 ? 16 : 4) && d->c[i].ep.port == port)
			return i;
	return -1;
}

/* UDP payload of an IPv4 or IPv6 frame and its destination client; -1 if none. */
static long dec_udp(struct dec *d, const uint8_t *f, size_t len, const uint8_t **pl, size_t *plen)
{
	struct frame_udp u;
	long w;

	if (frame_udp_parse(f, len, &u) < 0 || (w = client_of(d, u.family, u.dip, u.dport)) < 0)
		return -1;
	*pl = u.pl;
	*plen = u.plen;
	return w;
}

static void dec_seg(struct dec *d, unsigned w, const uint8_t *b, size_t len)
{
	const struct pkt *p;

	d->data++;
	if (!d->have_manifest)
		return;
	if (d->q.next[w] >= d->q.n[w]) {
		d->extra++;
		return;
	}
	p = &d->m.p[d->q.idx[w][d->q.next[w]++]];
	if (p->len != len || memcmp(p->b, b, len)) {
		if (d->bad++ < 5)
			fprintf(stderr, "decode: client %u: packet differs (%zu vs %u bytes)\n", w,
			        len, p->len);
	}
}

/*
 * First pass: each client's answer (SPEC §5.1), wherever it lies. The files
 * are outputs of different lcores with no order between them: a reply
 * sealed on one lcore may come before the answer in another's file.
 */
static void dec_answer(const uint8_t *f, size_t len, unsigned file, void *arg)
{
	struct dec *d = arg;
	const uint8_t *pl;
	size_t plen, used;
	long w;

	(void)file;
	w = dec_udp(d, f, len, &pl, &plen);
	if (w >= 0 && d->c[w].s.hs_pending &&
	    dust_intro_answer_open(&d->c[w].s, pl, plen, &used) == DUST_OK)
		d->answer_left[w] = 1;
}

static void dec_frame(const uint8_t *f, size_t len, unsigned file, void *arg)
{
	struct dec *d = arg;
	struct dust_limits lim;
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop drop;
	uint8_t buf[FRAME_MAX];
	const uint8_t *pl;
	size_t plen;
	unsigned ns;
	long w;

	(void)file;
	w = dec_udp(d, f, len, &pl, &plen);
	if (w < 0 || plen > sizeof(buf)) {
		d->foreign++;
		return;
	}
	d->datagrams++;
	memcpy(buf, pl, plen);
	dust_limits_default(&lim);
	ns = dust_datagram_open(&d->c[w].s, &lim, now_s(), buf, plen, 0, segs, DUST_CHAIN_MAX,
	                        &drop);
	/* the answer datagram, whose block the first pass took: its data after it */
	if (!ns && d->answer_left[w] && plen > DUST_ANSWER_BYTES) {
		memcpy(buf, pl, plen);
		ns = dust_datagram_open(&d->c[w].s, &lim, now_s(), buf, plen, DUST_ANSWER_BYTES,
		                        segs, DUST_CHAIN_MAX, &drop);
		d->answer_left[w] = !ns;
	}
	if (drop != DUST_OK || !ns) {
		if (d->fail++ < 5)
			fprintf(stderr, "decode: client %ld: datagram did not open: %s\n", w,
			        dust_drop_name(drop));
	}
	for (unsigned i = 0; i < ns; i++) {
		if (!segs[i].len) {
			d->ka++;
			d->ka_per[w]++;
		} else {
			dec_seg(d, (unsigned)w, buf + segs[i].off, segs[i].len);
		}
	}
}

int cmd_decode(const struct args *a)
{
	struct dec d;
	uint64_t lost = 0, with_ka = 0;

	memset(&d, 0, sizeof(d));
	if (!a->state || !a->nin)
		die("decode needs --state and --in%s", "");
	d.c = state_load(a->state, &d.n);
	d.ka_per = calloc(d.n + 1, sizeof(*d.ka_per));
	for (unsigned i = 0; i < d.n; i++)
		dust_replay_init(&d.c[i].s.replay);
	if (a->manifest) {
		manifest_load(&d.m, a->manifest, "encode");
		queues_build(&d.q, &d.m);
		d.have_manifest = true;
	}
	d.answer_left = calloc(d.n + 1, 1);
	for (unsigned i = 0; i < a->nin; i++)
		read_pcap(a->in[i], i, dec_answer, &d);
	for (unsigned i = 0; i < a->nin; i++)
		read_pcap(a->in[i], i, dec_frame, &d);
	for (unsigned i = 0; i < d.n; i++)
		with_ka += d.ka_per[i] > 0;
	if (d.have_manifest)
		for (unsigned w = 0; w < d.q.clients; w++)
			lost += d.q.n[w] - d.q.next[w];
	printf("decode: %" PRIu64 " datagrams to %u clients: %" PRIu64 " data packets, %" PRIu64
	       " keepalives (%" PRIu64 " clients got one), %" PRIu64 " failed to open, %" PRIu64
	       " other frames\n",
	       d.datagrams, d.n, d.data, d.ka, with_ka, d.fail, d.foreign);
	if (d.have_manifest)
		printf("decode: %" PRIu64 " of %zu expected packets decoded byte for byte (%" PRIu64
		       " differ, %" PRIu64 " lost, %" PRIu64 " unexpected)\n",
		       d.data - d.bad - d.extra, d.m.np, d.bad, lost, d.extra);
	if (d.have_manifest) {
		queues_free(&d.q);
		manifest_free(&d.m);
	}
	free(d.ka_per);
	free(d.answer_left);
	free(d.c);
	return d.fail || d.bad || lost || d.extra ? 1 : 0;
}
