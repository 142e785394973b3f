/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Passwords for invitations come from a file, the environment or a prompt,
 * never only from argv (visible to every user in ps).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <sodium.h>

#include "password.h"

static int read_line(FILE *f, char *buf, size_t cap)
{
	if (!fgets(buf, (int)cap, f))
		return -1;
	buf[strcspn(buf, "\r\n")] = '\0';
	return 0;
}

static int prompt(char *buf, size_t cap, const char *what)
{
	struct termios old, quiet;
	FILE *tty = fopen("/dev/tty", "r+");
	int rc;

	if (!tty) {
		fprintf(stderr, "no password: use --password-file, DUST_PASSWORD, or a terminal\n");
		return -1;
	}
	fprintf(tty, "%s", what);
	fflush(tty);
	tcgetattr(fileno(tty), &old);
	quiet = old;
	quiet.c_lflag &= ~(tcflag_t)ECHO;
	tcsetattr(fileno(tty), TCSAFLUSH, &quiet);
	rc = read_line(tty, buf, cap);
	tcsetattr(fileno(tty), TCSAFLUSH, &old);
	fprintf(tty, "\n");
	fclose(tty);
	return rc;
}

int dust_password_read(char *buf, size_t cap, const char *file, int confirm)
{
	const char *env = getenv("DUST_PASSWORD");

	if (file) {
		FILE *f = fopen(file, "r");

		if (!f || read_line(f, buf, cap) != 0) {
			fprintf(stderr, "%s: cannot read a password from it\n", file);
			if (f)
				fclose(f);
			return -1;
		}
		fclose(f);
	} else if (env) {
		snprintf(buf, cap, "%s", env);
	} else {
		char again[256];

		if (prompt(buf, cap, "Invitation password: ") != 0)
			return -1;
		if (confirm) {
			if (prompt(again, sizeof(again), "Again: ") != 0 ||
			    strcmp(buf, again) != 0) {
				fprintf(stderr, "passwords do not match\n");
				sodium_memzero(again, sizeof(again));
				return -1;
			}
			sodium_memzero(again, sizeof(again));
		}
	}
	if (buf[0] == '\0') {
		fprintf(stderr, "empty password\n");
		return -1;
	}
	return 0;
}
