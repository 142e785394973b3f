/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Quiet log defaults for a normal start: EAL's start-up details, net_tap's
 * "Could not add multiq qdisc ... Disabling rte flow support" (a missing
 * sch_multiq module; dustgw uses no rte_flow) and telemetry's legacy-socket
 * note read like failures. An operator's own --log-level wins.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <regex.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "loglevel.h"

static const struct {
	const char *type, *arg;
} quiet[] = {
    {"lib.eal", "--log-level=lib.eal:notice"},
    {"lib.telemetry", "--log-level=lib.telemetry:error"},
    {"pmd.net.tap", "--log-level=pmd.net.tap:critical"},
};
enum { NQUIET = sizeof(quiet) / sizeof(quiet[0]) };

/*
 * Would the operator's --log-level value v set the level of type? As EAL
 * reads it: "glob:level", "regex,level", or a bare (global) level.
 */
static bool speaks_of(const char *v, const char *type)
{
	const char *colon = strchr(v, ':'), *comma = strchr(v, ',');
	char pat[256];
	bool hit = false;
	regex_t re;

	if (!colon && !comma)
		return true;
	if (comma) {
		snprintf(pat, sizeof(pat), "%.*s", (int)(comma - v), v);
		if (regcomp(&re, pat, 0) == 0) {
			hit = regexec(&re, type, 0, NULL, 0) == 0;
			regfree(&re);
		}
		return hit;
	}
	snprintf(pat, sizeof(pat), "%.*s", (int)(colon - v), v);
	return fnmatch(pat, type, 0) == 0;
}

static const char *log_level_value(int argc, char **argv, int i)
{
	if (!strncmp(argv[i], "--log-level=", 12))
		return argv[i] + 12;
	if (!strcmp(argv[i], "--log-level") && i + 1 < argc)
		return argv[i + 1];
	return NULL;
}

static bool operator_set(int end, char **argv, const char *type)
{
	for (int i = 1; i < end; i++) {
		const char *v = log_level_value(end, argv, i);

		if (v && speaks_of(v, type))
			return true;
	}
	return false;
}

int dgw_eal_args(int argc, char **argv, char ***out)
{
	char **nv = calloc((size_t)argc + NQUIET + 1, sizeof(*nv));
	int end = argc, n = 0;

	if (!nv)
		return -1;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			end = i;
			break;
		}
	for (int i = 0; i < end; i++)
		nv[n++] = argv[i];
	for (int q = 0; q < NQUIET; q++)
		if (!operator_set(end, argv, quiet[q].type))
			nv[n++] = (char *)quiet[q].arg;
	for (int i = end; i < argc; i++)
		nv[n++] = argv[i];
	*out = nv;
	return n;
}
