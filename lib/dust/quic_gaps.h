/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The cover's inter-departure gaps within a burst, per direction (SPEC §12.4),
 * written by bench/cover/size-model.py --gaps from
 * test/data/chromium156-caddy-loads.pcap (Debian's Chromium 156 loading pages
 * from caddy 2.6.2 over HTTP/3): consecutive datagrams of a flow the same way,
 * under 50 us apart, in whole microseconds (the capture's resolution).
 * Each table is sorted by gap; cum[i] is the count of gaps <= us[i].
 */
#ifndef DUST_QUIC_GAPS_H
#define DUST_QUIC_GAPS_H

#include <stdint.h>

/* generated tables: one layout for every regeneration */
/* clang-format off */
static const uint16_t quic_c2s_gap_us[35] = {
	11, 12, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,
	36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48,
};
static const uint32_t quic_c2s_gap_cum[35] = {
	2, 5, 18, 36, 60, 119, 180, 198, 211, 225, 235, 241, 248, 256, 263, 266, 276, 281, 288,
	292, 295, 298, 302, 306, 308, 313, 321, 323, 325, 328, 330, 333, 336, 338, 346,
};

static const uint16_t quic_s2c_gap_us[41] = {
	4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
	28, 29, 30, 32, 33, 34, 35, 37, 38, 39, 40, 42, 43, 45, 47, 48, 49,
};
static const uint32_t quic_s2c_gap_cum[41] = {
	131, 635, 813, 879, 915, 958, 980, 1003, 1018, 1030, 1046, 1067, 1081, 1087, 1098, 1103,
	1106, 1115, 1120, 1124, 1127, 1129, 1133, 1134, 1136, 1139, 1143, 1145, 1151, 1153, 1161,
	1163, 1164, 1165, 1169, 1173, 1178, 1181, 1182, 1184, 1185,
};

/* clang-format on */
#endif
