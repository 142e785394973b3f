/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: the gateway's INI config (app/dustgw config.c over
 * DPDK's rte_cfgfile; no EAL needed). Each input is written to a file on
 * tmpfs and loaded over the defaults. Properties: an error always comes with
 * a message, and a loaded config has what dgw_config_load promises.
 */
#include "fuzz_fixture.h"

#include "dustgw.h"

static char dir[64], path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	if (dust_init() < 0)
		abort();
	fz_tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/dustgw.conf", dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dgw_config cfg;
	char err[512] = "";
	FILE *f;
	int rc;

	if (size > 16384)
		return -1;
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	dgw_config_defaults(&cfg);
	rc = dgw_config_load(&cfg, path, err, sizeof(err));
	if (rc > 0 || (rc < 0 && err[0] == '\0'))
		abort();
	if (rc == 0 && ((!cfg.ip4.family && !cfg.ip6.family) || !cfg.key_file[0] ||
			!cfg.store_path[0]))
		abort();
	return 0;
}
