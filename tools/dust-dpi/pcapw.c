/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tiny pcap writer for the dust-dpi generators (see pcapw.h). Frames get a
 * valid IPv4 header checksum so other tools (tcpdump) read them cleanly; the
 * UDP checksum is left zero, which IPv4 allows.
 */
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "pcapw.h"

enum { FRAME_MAX = 14 + 20 + 8 + 65507 };

struct pcapw {
	pcap_t *pc;
	pcap_dumper_t *d;
	uint64_t usec; /* synthetic clock: one packet per 100 us */
	uint16_t ip_id;
	uint8_t frame[FRAME_MAX];
};

struct pcapw *pcapw_open(const char *path)
{
	struct pcapw *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->pc = pcap_open_dead(DLT_EN10MB, FRAME_MAX);
	if (w->pc)
		w->d = pcap_dump_open(w->pc, path);
	if (!w->d) {
		fprintf(stderr, "%s: %s\n", path, w->pc ? pcap_geterr(w->pc) : "pcap_open_dead");
		if (w->pc)
			pcap_close(w->pc);
		free(w);
		return NULL;
	}
	w->usec = 1700000000ull * 1000000;
	return w;
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static uint16_t ip_csum(const uint8_t *h)
{
	uint32_t s = 0;

	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

int pcapw_udp4(struct pcapw *w, uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport,
	       const uint8_t *payload, size_t len)
{
	static const uint8_t mac[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};
	uint8_t *f = w->frame, *ip = f + 14, *udp = ip + 20;
	struct pcap_pkthdr h;

	if (len > 65507)
		return -1;
	memcpy(f, mac, 12);
	put16(f + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, (uint32_t)(20 + 8 + len));
	put16(ip + 4, w->ip_id++);
	ip[8] = 64;
	ip[9] = 17;
	put32(ip + 12, src);
	put32(ip + 16, dst);
	put16(ip + 10, ip_csum(ip));
	put16(udp, sport);
	put16(udp + 2, dport);
	put16(udp + 4, (uint32_t)(8 + len));
	put16(udp + 6, 0);
	memcpy(udp + 8, payload, len);
	h.caplen = h.len = (uint32_t)(14 + 20 + 8 + len);
	h.ts.tv_sec = (time_t)(w->usec / 1000000);
	h.ts.tv_usec = (suseconds_t)(w->usec % 1000000);
	w->usec += 100;
	pcap_dump((u_char *)w->d, &h, f);
	return 0;
}

void pcapw_close(struct pcapw *w)
{
	if (!w)
		return;
	pcap_dump_close(w->d);
	pcap_close(w->pc);
	free(w);
}
