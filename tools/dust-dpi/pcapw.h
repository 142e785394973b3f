/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tiny pcap writer for the dust-dpi generators: wraps each UDP payload in
 * Ethernet + IPv4 + UDP headers and appends it to a capture file.
 */
#ifndef DPI_PCAPW_H
#define DPI_PCAPW_H

#include <stdint.h>
#include <stdio.h>

struct pcapw;

struct pcapw *pcapw_open(const char *path);
/* Append one datagram src:sport -> dst:dport (IPv4, host-order ports). 0 or -1. */
int pcapw_udp4(struct pcapw *w, uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport,
	       const uint8_t *payload, size_t len);
/* 0, or -1 (said on stderr) if the capture did not reach its file. */
int pcapw_close(struct pcapw *w);

#endif /* DPI_PCAPW_H */
