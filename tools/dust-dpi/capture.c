/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-dpi capture reader: pulls every UDP payload out of a pcap or pcapng
 * file, as a middlebox would see it (Ethernet, VLAN, Linux cooked, raw IP,
 * BSD loopback), and groups the payloads by directional 5-tuple.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capfile.h"
#include "dpi.h"

enum { ETH_IPV4 = 0x0800, ETH_IPV6 = 0x86dd, ETH_VLAN = 0x8100, ETH_QINQ = 0x88a8 };
enum { IPPROTO_UDP_ = 17 };

/* Flow index: open addressing over indices into cap->flows, rebuilt on growth. */
static uint32_t *flow_slots;
static size_t flow_mask;

static uint64_t flow_hash(const struct dpi_flow_key *k)
{
	const uint8_t *p = (const uint8_t *)k;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static int flow_rehash(struct dpi_capture *cap, size_t slots)
{
	uint32_t *s = malloc(slots * sizeof(*s));

	if (!s)
		return -1;
	memset(s, 0xff, slots * sizeof(*s));
	for (size_t i = 0; i < cap->nflows; i++) {
		size_t j = flow_hash(&cap->flows[i]) & (slots - 1);

		while (s[j] != UINT32_MAX)
			j = (j + 1) & (slots - 1);
		s[j] = (uint32_t)i;
	}
	free(flow_slots);
	flow_slots = s;
	flow_mask = slots - 1;
	return 0;
}

/* Index of k's flow, adding it if new; -1 when out of memory. */
static long flow_find(struct dpi_capture *cap, const struct dpi_flow_key *k)
{
	size_t j;

	if (!flow_slots || 2 * (cap->nflows + 1) > flow_mask + 1) {
		if (flow_rehash(cap, flow_slots ? 2 * (flow_mask + 1) : 1024) < 0)
			return -1;
	}
	for (j = flow_hash(k) & flow_mask; flow_slots[j] != UINT32_MAX; j = (j + 1) & flow_mask) {
		if (!memcmp(&cap->flows[flow_slots[j]], k, sizeof(*k)))
			return flow_slots[j];
	}
	if (cap->nflows == cap->flows_cap) {
		size_t nc = cap->flows_cap ? 2 * cap->flows_cap : 256;
		void *nf = realloc(cap->flows, nc * sizeof(*cap->flows));

		if (!nf)
			return -1;
		cap->flows = nf;
		cap->flows_cap = nc;
	}
	cap->flows[cap->nflows] = *k;
	flow_slots[j] = (uint32_t)cap->nflows;
	return (long)cap->nflows++;
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static bool filter_keep(const struct dpi_filter *f, uint16_t sport, uint16_t dport)
{
	if (f->port < 0)
		return true;
	switch (f->dir) {
	case DPI_DIR_TO_PORT:
		return dport == f->port;
	case DPI_DIR_FROM_PORT:
		return sport == f->port;
	default:
		return sport == f->port || dport == f->port;
	}
}

static int add_dgram(struct dpi_capture *cap, const struct dpi_flow_key *k, const uint8_t *p,
                     uint32_t len)
{
	long flow = flow_find(cap, k);
	uint8_t *copy = malloc(len);

	if (flow < 0 || !copy) {
		free(copy);
		return -1;
	}
	if (cap->n == cap->cap) {
		size_t nc = cap->cap ? 2 * cap->cap : 4096;
		void *nd = realloc(cap->dg, nc * sizeof(*cap->dg));

		if (!nd) {
			free(copy);
			return -1;
		}
		cap->dg = nd;
		cap->cap = nc;
	}
	memcpy(copy, p, len);
	cap->dg[cap->n++] = (struct dpi_dgram){.flow = (uint32_t)flow, .len = len, .data = copy};
	return 0;
}

/* p..end is an UDP header and payload of flow k (addresses filled in). */
static int on_udp(struct dpi_capture *cap, const struct dpi_filter *f, struct dpi_flow_key *k,
                  const uint8_t *p, const uint8_t *end, uint32_t ip_payload_len)
{
	uint32_t ulen;

	if (end - p < 8 || ip_payload_len < 8) {
		cap->truncated++;
		return 0;
	}
	k->sport = be16(p);
	k->dport = be16(p + 2);
	ulen = be16(p + 4);
	if (!filter_keep(f, k->sport, k->dport)) {
		cap->filtered++;
		return 0;
	}
	/* UDP length, bounded by what the IP header says and what was captured */
	if (ulen < 8 || ulen > ip_payload_len)
		ulen = ip_payload_len;
	if ((size_t)(end - p) < ulen) {
		cap->truncated++;
		return 0;
	}
	if (ulen == 8) {
		cap->empty++;
		return 0;
	}
	return add_dgram(cap, k, p + 8, ulen - 8);
}

static int on_ipv4(struct dpi_capture *cap, const struct dpi_filter *f, const uint8_t *p,
                   const uint8_t *end)
{
	struct dpi_flow_key k = {.family = 4};
	unsigned ihl, total;

	if (end - p < 20 || (p[0] >> 4) != 4)
		goto not_udp;
	ihl = (p[0] & 15u) * 4;
	total = be16(p + 2);
	/* later fragments carry no UDP header; a DPI box sees them as opaque */
	if (ihl < 20 || p[9] != IPPROTO_UDP_ || (be16(p + 6) & 0x1fff) != 0)
		goto not_udp;
	if (total < ihl || (size_t)(end - p) < ihl)
		goto not_udp;
	memcpy(k.src, p + 12, 4);
	memcpy(k.dst, p + 16, 4);
	return on_udp(cap, f, &k, p + ihl, end, total - ihl);
not_udp:
	cap->not_udp++;
	return 0;
}

static int on_ipv6(struct dpi_capture *cap, const struct dpi_filter *f, const uint8_t *p,
                   const uint8_t *end)
{
	struct dpi_flow_key k = {.family = 6};

	/* extension headers are rare on this path: such packets count as not UDP */
	if (end - p < 40 || (p[0] >> 4) != 6 || p[6] != IPPROTO_UDP_) {
		cap->not_udp++;
		return 0;
	}
	memcpy(k.src, p + 8, 16);
	memcpy(k.dst, p + 24, 16);
	return on_udp(cap, f, &k, p + 40, end, be16(p + 4));
}

static int on_ip(struct dpi_capture *cap, const struct dpi_filter *f, const uint8_t *p,
                 const uint8_t *end)
{
	if (end - p < 1) {
		cap->not_udp++;
		return 0;
	}
	if ((p[0] >> 4) == 4)
		return on_ipv4(cap, f, p, end);
	return on_ipv6(cap, f, p, end);
}

static int on_ethertype(struct dpi_capture *cap, const struct dpi_filter *f, uint16_t type,
                        const uint8_t *p, const uint8_t *end)
{
	while ((type == ETH_VLAN || type == ETH_QINQ) && end - p >= 4) {
		type = be16(p + 2);
		p += 4;
	}
	if (type == ETH_IPV4)
		return on_ipv4(cap, f, p, end);
	if (type == ETH_IPV6)
		return on_ipv6(cap, f, p, end);
	cap->not_udp++;
	return 0;
}

static int on_frame(struct dpi_capture *cap, const struct dpi_filter *f, int dlt, const uint8_t *p,
                    uint32_t caplen)
{
	const uint8_t *end = p + caplen;

	cap->frames++;
	switch (dlt) {
	case DLT_EN10MB:
		if (caplen < 14)
			break;
		return on_ethertype(cap, f, be16(p + 12), p + 14, end);
	case DLT_LINUX_SLL:
		if (caplen < 16)
			break;
		return on_ethertype(cap, f, be16(p + 14), p + 16, end);
	case DLT_LINUX_SLL2:
		if (caplen < 20)
			break;
		return on_ethertype(cap, f, be16(p), p + 20, end);
	case DLT_NULL:
	case DLT_LOOP:
		if (caplen < 4)
			break;
		return on_ip(cap, f, p + 4, end);
	case DLT_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
		return on_ip(cap, f, p, end);
	default:
		break;
	}
	cap->not_udp++;
	return 0;
}

static bool dlt_known(int dlt)
{
	return dlt == DLT_EN10MB || dlt == DLT_LINUX_SLL || dlt == DLT_LINUX_SLL2 ||
	       dlt == DLT_NULL || dlt == DLT_LOOP || dlt == DLT_RAW || dlt == DLT_IPV4 ||
	       dlt == DLT_IPV6;
}

int dpi_capture_read(struct dpi_capture *cap, const char *path, const struct dpi_filter *f)
{
	struct capfile_in in;
	struct capfile_rec r;
	int rc;

	if (capfile_open(&in, path) < 0) {
		fprintf(stderr, "dust-dpi: %s: %s\n", path, in.err);
		return -1;
	}
	if (!dlt_known(in.dlt)) {
		fprintf(stderr, "dust-dpi: %s: link type %s is not supported\n", path,
		        pcap_datalink_val_to_name(in.dlt) ? pcap_datalink_val_to_name(in.dlt)
		                                          : "?");
		capfile_done(&in);
		return -1;
	}
	while ((rc = capfile_next(&in, &r)) == 1) {
		if (on_frame(cap, f, in.dlt, r.f, (uint32_t)r.caplen) < 0) {
			fprintf(stderr, "dust-dpi: out of memory\n");
			capfile_done(&in);
			return -1;
		}
	}
	/* a capture cut off mid-record (tcpdump killed) still has its earlier frames */
	if (rc < 0 && cap->frames == 0) {
		fprintf(stderr, "dust-dpi: %s: %s\n", path, in.err);
		capfile_done(&in);
		return -1;
	}
	if (rc < 0)
		fprintf(stderr, "dust-dpi: %s: warning: %s\n", path, in.err);
	capfile_done(&in);
	return 0;
}

void dpi_capture_free(struct dpi_capture *cap)
{
	for (size_t i = 0; i < cap->n; i++)
		free((void *)cap->dg[i].data);
	free(cap->dg);
	free(cap->flows);
	free(flow_slots);
	flow_slots = NULL;
	memset(cap, 0, sizeof(*cap));
}
