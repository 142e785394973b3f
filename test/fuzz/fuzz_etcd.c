/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer harness: the etcd store's parsers (SPEC §7.5) that take no
 * network. First input byte odd: the rest is a store URL (etcd:// or
 * etcds:// with its options), opened and closed (nothing is sent: open
 * only parses). Even: the rest, after a chunk-size byte, is a watch stream
 * as etcd would send it, fed to the watch's parser in chunks of that size;
 * its records are drained. Nothing may crash, hang or leak.
 */
#define DUST_HAVE_ETCD 1 /* meson builds this harness only with libcurl and jansson */

#include "fuzz_fixture.h"
#include "store_etcd.h"

static uint8_t key[DUST_KEY_BYTES];
static struct etcd_store *watched; /* one store for every watch input */

static int drop(void *arg, char kind, const uint8_t id[DUST_ID_BYTES], const char *val)
{
	(void)arg, (void)kind, (void)id;
	return val[0] == '\0' ? 0 : 0; /* read it: the record's value is a string */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	if (dust_init() < 0)
		fz_die("dust_init");
	/* etcds:// with no options: a plain URL would print its warning */
	if (!(watched = etcd_open("etcds://127.0.0.1:1/fz", key)))
		fz_die("etcd_open");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char url[1024];

	if (size < 2)
		return 0;
	if (data[0] & 1) {
		size_t n = size - 1 < sizeof(url) - 1 ? size - 1 : sizeof(url) - 1;

		memcpy(url, data + 1, n);
		url[n] = '\0';
		etcd_close(etcd_open(url, key));
		return 0;
	}
	(void)etcd_watch_feed(watched, (const char *)data + 2, size - 2, 1 + (size_t)data[1] * 4);
	(void)etcd_events(watched, drop, NULL);
	return 0;
}
