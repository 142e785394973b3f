/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-dpi: a censor's-eye checker for UDP captures. This header is shared
 * by the capture reader (capture.c), the statistical checks (checks.c) and
 * the report (dpi.c).
 */
#ifndef DUST_DPI_H
#define DUST_DPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One direction of a UDP flow: the censor's 5-tuple (protocol is always UDP). */
struct dpi_flow_key {
	uint8_t family; /* 4 or 6 */
	uint8_t src[16];
	uint8_t dst[16];
	uint16_t sport;
	uint16_t dport;
};

/* One UDP payload, as a DPI box sees it. */
struct dpi_dgram {
	uint32_t flow; /* index into dpi_capture.flows */
	uint32_t len;
	const uint8_t *data; /* owned by the capture's arena */
};

struct dpi_capture {
	struct dpi_dgram *dg;
	size_t n, cap;
	struct dpi_flow_key *flows;
	size_t nflows, flows_cap;
	uint64_t frames;     /* frames read from the file */
	uint64_t not_udp;    /* frames that were not (first-fragment) UDP */
	uint64_t filtered;   /* UDP frames left out by --port / --dir */
	uint64_t truncated;  /* UDP frames cut short by the snap length */
	uint64_t empty;      /* zero-length UDP payloads */
};

enum dpi_dir { DPI_DIR_ANY = 0, DPI_DIR_TO_PORT, DPI_DIR_FROM_PORT };

struct dpi_filter {
	int port; /* -1 = any */
	enum dpi_dir dir;
};

/* Read every UDP payload of a pcap/pcapng file. 0, or -1 with a message on stderr. */
int dpi_capture_read(struct dpi_capture *cap, const char *path, const struct dpi_filter *f);
void dpi_capture_free(struct dpi_capture *cap);

enum dpi_verdict { DPI_PASS = 0, DPI_FLAG = 1, DPI_SKIP = 2, DPI_INFO = 3 };

/* The outcome of one check: a verdict and a line or two for the report. */
struct dpi_result {
	const char *name;
	enum dpi_verdict verdict;
	char detail[512];
};

struct dpi_params {
	double alpha;       /* false-positive budget of each failing check */
	double len_share;   /* p0 of the length check: largest share random lengths may hold */
	bool verbose;
};

void dpi_check_bits(const struct dpi_capture *c, const struct dpi_params *p, struct dpi_result *r);
void dpi_check_chi2(const struct dpi_capture *c, const struct dpi_params *p, struct dpi_result *r);
void dpi_check_lengths(const struct dpi_capture *c, const struct dpi_params *p,
		       struct dpi_result *r);
void dpi_check_prefixes(const struct dpi_capture *c, const struct dpi_params *p,
			struct dpi_result *r);
void dpi_check_repeats(const struct dpi_capture *c, const struct dpi_params *p,
		       struct dpi_result *r);
/*
 * --quic: every payload is QUIC v1, Initials decrypt to hellos, CIDs are
 * consistent per connection (quic.c). port: the server's UDP port.
 */
void dpi_check_quic(const struct dpi_capture *c, const struct dpi_params *p, int port,
		    struct dpi_result *r);
/* Wu et al. 2023 rule: informational, always DPI_INFO. */
void dpi_check_gfw(const struct dpi_capture *c, const struct dpi_params *p, struct dpi_result *r);

#endif /* DUST_DPI_H */
