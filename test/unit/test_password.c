/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/common/password.c: one length in every tool, a longer password
 * refused, never cut; DUST_PASSWORD read once and wiped from the process's
 * environment (no copy in memory, none inherited by a child).
 */
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "dust.h"
#include "password.h"

static void env_wiped(void)
{
	char pw[DUST_PASSWORD_MAX];
	char *value;

	CHECK(setenv("DUST_PASSWORD", "correct horse battery", 1) == 0);
	value = getenv("DUST_PASSWORD");
	CHECK(dust_password_read(pw, sizeof(pw), NULL, 0) == 0);
	CHECK(!strcmp(pw, "correct horse battery"));
	CHECK(getenv("DUST_PASSWORD") == NULL);
	/* the environment's own bytes, not only the variable's name, are gone */
	CHECK(value && value[0] == '\0' && !memchr(value, 'h', 21));
}

static void env_too_long(void)
{
	char pw[16];

	CHECK(setenv("DUST_PASSWORD", "sixteen bytes!!!", 1) == 0);
	CHECK(dust_password_read(pw, sizeof(pw), NULL, 0) != 0); /* refused, not cut to 15 */
	unsetenv("DUST_PASSWORD");
}

static const struct check_test tests[] = {
    {"env_wiped", env_wiped},
    {"env_too_long", env_too_long},
};

CHECK_MAIN(tests, fix_dust_init)
