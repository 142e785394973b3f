/* SPDX-License-Identifier: BSD-3-Clause */
/* Reading an invitation password from a file, the environment or the terminal. */
#ifndef DUST_TOOLS_PASSWORD_H
#define DUST_TOOLS_PASSWORD_H

#include <stddef.h>

/* Room for a password and its NUL: every tool reads at most 1023 bytes, and refuses more. */
enum {
	DUST_PASSWORD_MAX = 1024,
	DUST_PASSWORD_MIN = 12, /* for sealing new texts (dust-invite create); any opens */
};

/*
 * Fill buf from file (first line) if file is non-NULL, else from $DUST_PASSWORD,
 * else prompt on /dev/tty without echo (twice when confirm). A password file
 * is read by dust_secret_read's rules (not a symlink, a regular file owned by
 * this user or root; a warning if others can read it). A password that does
 * not fit in cap - 1 bytes is refused, never cut. 0, or -1 with a message on
 * stderr.
 */
int dust_password_read(char *buf, size_t cap, const char *file, int confirm);

#endif
