/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading an invitation password from a file, the environment or the terminal. */
#ifndef DUST_TOOLS_PASSWORD_H
#define DUST_TOOLS_PASSWORD_H

#include <stddef.h>

/*
 * Fill buf from file (first line) if file is non-NULL, else from $DUST_PASSWORD,
 * else prompt on /dev/tty without echo (twice when confirm). 0, or -1 with a
 * message on stderr.
 */
int dust_password_read(char *buf, size_t cap, const char *file, int confirm);

#endif
