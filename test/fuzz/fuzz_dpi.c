/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: dust-dpi's QUIC check (tools/dust-dpi/quic.c over its
 * own reader, qwire.c), as a censor's box would run it over what anyone can
 * send. The input is records: a byte whose low two bits pick one of four
 * flows (two clients, each direction), a 16-bit big-endian length, the
 * datagram. A capture is untrusted input: no crash, no leak, no hang.
 */
#include <stdint.h>
#include <string.h>

#include "dpi.h"

enum { MAX_DGRAMS = 256, SERVER_PORT = 443 };

static void flows_init(struct dpi_flow_key f[4])
{
	static const uint8_t client[4] = {192, 0, 2, 1}, server[4] = {192, 0, 2, 9};

	memset(f, 0, 4 * sizeof(*f));
	for (int i = 0; i < 4; i++) {
		bool c2s = !(i & 1);
		uint16_t cport = (uint16_t)(5000 + i / 2);

		f[i].family = 4;
		memcpy(f[i].src, c2s ? client : server, 4);
		memcpy(f[i].dst, c2s ? server : client, 4);
		f[i].sport = c2s ? cport : SERVER_PORT;
		f[i].dport = c2s ? SERVER_PORT : cport;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dpi_dgram dg[MAX_DGRAMS];
	struct dpi_flow_key flows[4];
	struct dpi_capture c = {.dg = dg, .flows = flows, .nflows = 4};
	struct dpi_params p = {.alpha = 1e-4};
	struct dpi_result r;
	size_t pos = 0;

	flows_init(flows);
	while (size - pos >= 3 && c.n < MAX_DGRAMS) {
		size_t len = (size_t)data[pos + 1] << 8 | data[pos + 2];

		if (len > size - pos - 3)
			len = size - pos - 3;
		if (len) /* a capture holds no empty payloads (dpi_capture_read counts them) */
			dg[c.n++] = (struct dpi_dgram){
			    .flow = data[pos] & 3u, .len = (uint32_t)len, .data = data + pos + 3};
		pos += 3 + len;
	}
	c.cap = c.n;
	dpi_check_quic(&c, &p, SERVER_PORT, &r);
	return 0;
}
