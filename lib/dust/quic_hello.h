/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hello's timing (SPEC §12.2, §12.3), written by bench/cover/size-model.py
 * --hello from test/data/chromium156-caddy-loads.pcap (Debian's Chromium 156
 * loading pages from caddy 2.6.2 over HTTP/3), in whole microseconds, sorted:
 * quic_pto_probe_us, Chromium's first PTO probe after the server's ACK-only
 * Initial, from its first Initial (11 loads); quic_answer_us, caddy's answer
 * after the client Initial that let it answer (20 loads).
 */
#ifndef DUST_QUIC_HELLO_H
#define DUST_QUIC_HELLO_H

#include <stdint.h>

/* generated tables: one layout for every regeneration */
/* clang-format off */
static const uint32_t quic_pto_probe_us[11] = {
	7841, 11899, 16752, 17161, 20715, 22337, 23213, 26098, 28871, 29725, 37239,
};

static const uint32_t quic_answer_us[20] = {
	722, 761, 871, 888, 935, 983, 1006, 1036, 1076, 1230, 1258, 1269, 1806, 1906, 2285, 2861,
	3694, 4747, 5161, 11050,
};

/* clang-format on */
#endif
