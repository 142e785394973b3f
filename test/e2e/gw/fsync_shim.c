/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * LD_PRELOAD shim for gw-fsync-order.sh: watches the order "binding fsynced,
 * then the intro answered" in a running dustgw. fdatasync and fsync record
 * how many binding lines ("B ...") the synced file held; pcap_dump (net_pcap's
 * tx path) counts the UDP datagrams the gateway sends from its port. Each
 * answer must be covered by an fsync: at every send, the datagrams sent so
 * far may exceed the bindings synced so far by at most FSYNC_SHIM_SLACK (the
 * answers to client keepalives). The tallies go to $FSYNC_SHIM_OUT at exit.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long syncs, synced_bindings, udp_tx, violations, first_bad_tx;

/* Binding lines in the file behind fd (a line starts after a newline). */
static unsigned long binding_lines(int fd)
{
	char buf[4096];
	unsigned long lines = 0;
	bool line_start = true;
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			/* "B " at a line start: the B here, the space checked on the next byte */
			if (line_start && buf[i] == 'B')
				lines++;
			line_start = buf[i] == '\n';
		}
		off += n;
	}
	return lines;
}

static void synced(int fd)
{
	unsigned long b = binding_lines(fd);

	__atomic_add_fetch(&syncs, 1, __ATOMIC_SEQ_CST);
	/* only grows: another file's fsync (0 bindings) takes nothing back */
	for (unsigned long cur = __atomic_load_n(&synced_bindings, __ATOMIC_SEQ_CST); b > cur;)
		if (__atomic_compare_exchange_n(&synced_bindings, &cur, b, false, __ATOMIC_SEQ_CST,
		                                __ATOMIC_SEQ_CST))
			break;
}

int fdatasync(int fd)
{
	static int (*real)(int);
	int rc;

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	rc = real(fd);
	if (rc == 0)
		synced(fd);
	return rc;
}

int fsync(int fd)
{
	static int (*real)(int);
	int rc;

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	rc = real(fd);
	if (rc == 0)
		synced(fd);
	return rc;
}

/* The UDP source port of an Ethernet frame, or -1. */
static int udp_sport(const u_char *f, size_t len)
{
	size_t off;

	if (len < 14)
		return -1;
	if (f[12] == 0x08 && f[13] == 0x00 && len >= 14 + 20) {
		if (f[14 + 9] != 17)
			return -1;
		off = 14 + (size_t)(f[14] & 0xf) * 4;
	} else if (f[12] == 0x86 && f[13] == 0xdd && len >= 14 + 40) {
		if (f[14 + 6] != 17)
			return -1;
		off = 14 + 40;
	} else {
		return -1;
	}
	return len >= off + 8 ? (f[off] << 8) | f[off + 1] : -1;
}

void pcap_dump(u_char *user, const struct pcap_pkthdr *h, const u_char *sp)
{
	static void (*real)(u_char *, const struct pcap_pkthdr *, const u_char *);
	static long port = -2, slack;

	if (!real) {
		/* net_pcap's libpcap came with the PMD's dlopen, outside RTLD_NEXT's reach */
		void *lib = dlopen("libpcap.so.0.8", RTLD_LAZY | RTLD_NOLOAD);
		void *sym = dlsym(RTLD_NEXT, "pcap_dump");

		if (!sym && lib)
			sym = dlsym(lib, "pcap_dump");
		if (!sym)
			abort(); /* the test then fails: dustgw exits on a signal */
		real = (void (*)(u_char *, const struct pcap_pkthdr *, const u_char *))sym;
	}
	if (port == -2) {
		const char *p = getenv("FSYNC_SHIM_PORT"), *s = getenv("FSYNC_SHIM_SLACK");

		slack = s ? atol(s) : 0;
		port = p ? atol(p) : 4433;
	}
	if (udp_sport(sp, h->caplen) == port) {
		unsigned long n = __atomic_add_fetch(&udp_tx, 1, __ATOMIC_SEQ_CST);

		if (n > __atomic_load_n(&synced_bindings, __ATOMIC_SEQ_CST) +
		            (unsigned long)slack &&
		    __atomic_add_fetch(&violations, 1, __ATOMIC_SEQ_CST) == 1)
			first_bad_tx = n;
	}
	real(user, h, sp);
}

__attribute__((destructor)) static void report(void)
{
	const char *out = getenv("FSYNC_SHIM_OUT");
	FILE *f = out ? fopen(out, "w") : NULL;

	if (!f)
		return;
	fprintf(f, "syncs=%lu synced_bindings=%lu udp_tx=%lu violations=%lu first_bad_tx=%lu\n",
	        syncs, synced_bindings, udp_tx, violations, first_bad_tx);
	fclose(f);
}
