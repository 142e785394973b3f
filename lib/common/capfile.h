/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcap files over libpcap (capfile.c): written one record at a time and read
 * back record by record. Errors are returned with libpcap's text in err; the
 * caller says them.
 */
#ifndef TOOLS_CAPFILE_H
#define TOOLS_CAPFILE_H

#include <pcap/pcap.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { CAPFILE_ERR = PCAP_ERRBUF_SIZE };

struct capfile_out {
	pcap_t *dead;
	pcap_dumper_t *d;
	char err[CAPFILE_ERR];
};

/* An Ethernet capture at path, snaplen in its header; nsec: nanosecond timestamps. 0 or -1. */
int capfile_create(struct capfile_out *o, const char *path, unsigned snaplen, bool nsec);
/* One frame stamped ts_ns (unix time in ns; cut to us in a microsecond file). */
void capfile_put(struct capfile_out *o, uint64_t ts_ns, const uint8_t *f, size_t len);
/* Flushes and closes: 0, or -1 if the data did not reach the file (o->err says why). */
int capfile_close(struct capfile_out *o);

struct capfile_in {
	pcap_t *p;
	int dlt; /* the capture's link type (DLT_EN10MB, ...) */
	char err[CAPFILE_ERR];
};

struct capfile_rec {
	const uint8_t *f;
	size_t caplen, len; /* bytes at f, and on the wire */
	uint64_t ts_ns;
};

/* Opens a capture (any link type, us or ns timestamps): 0, or -1 and in->err. */
int capfile_open(struct capfile_in *in, const char *path);
/* The next record: 1, 0 at the end, -1 if the file is cut off or unreadable (in->err). */
int capfile_next(struct capfile_in *in, struct capfile_rec *r);
void capfile_done(struct capfile_in *in);

#endif /* TOOLS_CAPFILE_H */
