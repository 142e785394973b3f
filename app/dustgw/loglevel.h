/* SPDX-License-Identifier: BSD-3-Clause */
/* dustgw's EAL command line with quiet log defaults (see loglevel.c). */
#ifndef DGW_LOGLEVEL_H
#define DGW_LOGLEVEL_H

/*
 * argv with quiet --log-level defaults added before "--", each left out
 * when one of the operator's own --log-level options would set that log
 * type (or sets the global level). *out is calloc'd; returns its argc.
 */
int dgw_eal_args(int argc, char **argv, char ***out);

#endif
