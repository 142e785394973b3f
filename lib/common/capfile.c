/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap files for the tools and tests that write or replay captures: one
 * writer and one reader over libpcap, nanosecond timestamps where asked.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "capfile.h"

int capfile_create(struct capfile_out *o, const char *path, unsigned snaplen, bool nsec)
{
	memset(o, 0, sizeof(*o));
	o->dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, (int)snaplen,
	                                               nsec ? PCAP_TSTAMP_PRECISION_NANO
	                                                    : PCAP_TSTAMP_PRECISION_MICRO);
	if (!o->dead) {
		snprintf(o->err, sizeof(o->err), "%s: pcap_open_dead failed", path);
		return -1;
	}
	o->d = pcap_dump_open(o->dead, path);
	if (!o->d) {
		snprintf(o->err, sizeof(o->err), "%s", pcap_geterr(o->dead));
		pcap_close(o->dead);
		o->dead = NULL;
		return -1;
	}
	return 0;
}

void capfile_put(struct capfile_out *o, uint64_t ts_ns, const uint8_t *f, size_t len)
{
	bool nsec = pcap_get_tstamp_precision(o->dead) == PCAP_TSTAMP_PRECISION_NANO;
	uint64_t frac = ts_ns % 1000000000u;
	struct pcap_pkthdr h;

	/* libpcap's writer takes the fraction in tv_usec, in the file's unit */
	h.ts.tv_sec = (time_t)(ts_ns / 1000000000u);
	h.ts.tv_usec = (suseconds_t)(nsec ? frac : frac / 1000);
	h.caplen = h.len = (bpf_u_int32)len;
	pcap_dump((u_char *)o->d, &h, f);
}

int capfile_close(struct capfile_out *o)
{
	int rc = 0;

	if (!o->d)
		return 0;
	if (pcap_dump_flush(o->d) != 0) {
		snprintf(o->err, sizeof(o->err), "writing the capture: %s", strerror(errno));
		rc = -1;
	}
	pcap_dump_close(o->d);
	pcap_close(o->dead);
	o->d = NULL;
	o->dead = NULL;
	return rc;
}

int capfile_open(struct capfile_in *in, const char *path)
{
	memset(in, 0, sizeof(*in));
	/* nano precision: libpcap scales a microsecond file's stamps up */
	in->p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, in->err);
	if (!in->p)
		return -1;
	in->dlt = pcap_datalink(in->p);
	return 0;
}

int capfile_next(struct capfile_in *in, struct capfile_rec *r)
{
	struct pcap_pkthdr *h;
	const u_char *data;
	int rc = pcap_next_ex(in->p, &h, &data);

	if (rc == 1) {
		r->f = data;
		r->caplen = h->caplen;
		r->len = h->len;
		r->ts_ns = (uint64_t)h->ts.tv_sec * 1000000000u + (uint64_t)h->ts.tv_usec;
		return 1;
	}
	if (rc == PCAP_ERROR_BREAK)
		return 0;
	snprintf(in->err, sizeof(in->err), "%s", pcap_geterr(in->p));
	return -1;
}

void capfile_done(struct capfile_in *in)
{
	if (in->p)
		pcap_close(in->p);
	in->p = NULL;
}
