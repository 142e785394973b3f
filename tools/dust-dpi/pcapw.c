/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tiny pcap writer for the dust-dpi generators (see pcapw.h), over
 * lib/common's frame and capfile. Frames get a valid IPv4 header checksum
 * so other tools (tcpdump) read them cleanly; the UDP checksum is left zero,
 * which IPv4 allows.
 */
#include <stdio.h>
#include <stdlib.h>

#include "capfile.h"
#include "frame.h"
#include "pcapw.h"

enum { FRAME_MAX = 14 + 20 + 8 + 65507 };

struct pcapw {
	struct capfile_out out;
	uint64_t usec; /* synthetic clock: one packet per 100 us */
	uint16_t ip_id;
	uint8_t frame[FRAME_MAX];
};

struct pcapw *pcapw_open(const char *path)
{
	struct pcapw *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	if (capfile_create(&w->out, path, FRAME_MAX, false) < 0) {
		fprintf(stderr, "%s: %s\n", path, w->out.err);
		free(w);
		return NULL;
	}
	w->usec = 1700000000ull * 1000000;
	return w;
}

static void be32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

int pcapw_udp4(struct pcapw *w, uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport,
               const uint8_t *payload, size_t len)
{
	static const uint8_t dmac[6] = {2, 0, 0, 0, 0, 1}, smac[6] = {2, 0, 0, 0, 0, 2};
	uint8_t sip[4], dip[4];
	size_t n;

	if (len > 65507)
		return -1;
	be32(sip, src);
	be32(dip, dst);
	n = eth(w->frame, dmac, smac, 0x0800);
	n += ip_udp4_opt(w->frame + n, sip, dip, sport, dport, payload, len, w->ip_id++,
	                 FRAME_NO_UDP_CSUM);
	capfile_put(&w->out, w->usec * 1000, w->frame, n);
	w->usec += 100;
	return 0;
}

int pcapw_close(struct pcapw *w)
{
	int rc;

	if (!w)
		return 0;
	rc = capfile_close(&w->out);
	if (rc < 0)
		fprintf(stderr, "%s\n", w->out.err);
	free(w);
	return rc;
}
