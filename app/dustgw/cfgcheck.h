/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.c: dustgw --check-config, a configuration and the files it names
 * validated without EAL (named apart from test/unit/check.h, which the
 * gateway's unit tests include beside dgw_pvt.h). Included by its users
 * only: main.c.
 */
#ifndef DGW_CFGCHECK_H
#define DGW_CFGCHECK_H

#include "dustgw.h"

/* 0 or -errno with a message on stderr; path is the configuration's, for the messages. */
int dgw_config_check(const struct dgw_config *cfg, const char *path);

#endif /* DGW_CFGCHECK_H */
