/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap: writing frames to one or more pcap files and reading them back.
 */
#include <sys/time.h>

#include "dust-pcap.h"

void outs_open(struct outs *o, char **paths, unsigned n)
{
	o->dead = pcap_open_dead(DLT_EN10MB, 65535);
	o->n = n;
	for (unsigned i = 0; i < n; i++) {
		o->d[i] = pcap_dump_open(o->dead, paths[i]);
		if (!o->d[i])
			die("%s", pcap_geterr(o->dead));
	}
}

void outs_close(struct outs *o)
{
	for (unsigned i = 0; i < o->n; i++)
		pcap_dump_close(o->d[i]);
	pcap_close(o->dead);
}

void emit(struct outs *o, unsigned q, const uint8_t *f, size_t len)
{
	struct pcap_pkthdr h;

	gettimeofday(&h.ts, NULL);
	h.caplen = h.len = (bpf_u_int32)len;
	pcap_dump((u_char *)o->d[q % o->n], &h, f);
	o->frames++;
}
void read_pcap(const char *path, unsigned file, frame_fn fn, void *arg)
{
	char err[PCAP_ERRBUF_SIZE];
	pcap_t *p = pcap_open_offline(path, err);
	struct pcap_pkthdr *h;
	const u_char *data;

	if (!p)
		die("%s", err);
	while (pcap_next_ex(p, &h, &data) == 1)
		fn(data, h->caplen, file, arg);
	pcap_close(p);
}
