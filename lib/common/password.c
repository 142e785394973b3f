/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Passwords for invitations come from a file, the environment or a prompt,
 * never only from argv (visible to every user in ps). Every tool takes the
 * same length (DUST_PASSWORD_MAX - 1 bytes) and refuses a longer one: a
 * password cut short by one tool and read whole by another would seal a
 * text that the other cannot open.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <sodium.h>

#include "dust.h"
#include "password.h"

/* One line into buf; -1 at end of input, -2 if the line does not fit. */
static int read_line(FILE *f, char *buf, size_t cap)
{
	size_t n;

	if (!fgets(buf, (int)cap, f))
		return -1;
	n = strcspn(buf, "\r\n");
	if (!buf[n] && n == cap - 1 && !feof(f))
		return -2;
	buf[n] = '\0';
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
	if (rc == -2)
		fprintf(stderr, "password longer than %zu bytes\n", cap - 1);
	return rc ? -1 : 0;
}

/* The first line of a password file, read by libdust's rules for secret files. */
static int from_file(char *buf, size_t cap, const char *file)
{
	bool shared = false;

	if (dust_secret_read(file, buf, cap, &shared) != 0) {
		fprintf(stderr, "%s: cannot read a password from it: %s\n", file,
		        dust_last_error());
		return -1;
	}
	buf[strcspn(buf, "\r\n")] = '\0';
	if (shared)
		fprintf(stderr, "warning: %s: others can read this password (chmod 600 %s)\n", file,
		        file);
	return 0;
}

int dust_password_read(char *buf, size_t cap, const char *file, int confirm)
{
	const char *env = getenv("DUST_PASSWORD");

	if (file) {
		if (from_file(buf, cap, file) != 0)
			return -1;
	} else if (env) {
		if (strlen(env) >= cap) {
			fprintf(stderr, "DUST_PASSWORD: longer than %zu bytes\n", cap - 1);
			return -1;
		}
		snprintf(buf, cap, "%s", env);
		/* no copy left in this process's environment, nor in its children's */
		sodium_memzero((char *)env, strlen(env));
		unsetenv("DUST_PASSWORD");
	} else {
		char again[DUST_PASSWORD_MAX];

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
