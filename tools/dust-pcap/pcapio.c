/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap: its output files and its reads over lib/common's capfile,
 * where an error ends the run.
 */
#include <sys/time.h>

#include "dust-pcap.h"

void outs_open(struct outs *o, char **paths, unsigned n)
{
	o->n = n;
	for (unsigned i = 0; i < n; i++)
		if (capfile_create(&o->f[i], paths[i], 65535, false) < 0)
			die("%s", o->f[i].err);
}

void outs_close(struct outs *o)
{
	for (unsigned i = 0; i < o->n; i++)
		if (capfile_close(&o->f[i]) < 0)
			die("%s", o->f[i].err);
}

void emit(struct outs *o, unsigned q, const uint8_t *f, size_t len)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	capfile_put(&o->f[q % o->n],
	            (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000, f, len);
	o->frames++;
}

void read_pcap(const char *path, unsigned file, frame_fn fn, void *arg)
{
	struct capfile_in in;
	struct capfile_rec r;

	if (capfile_open(&in, path) < 0)
		die("%s", in.err);
	while (capfile_next(&in, &r) == 1)
		fn(r.f, r.caplen, file, arg);
	capfile_done(&in);
}
