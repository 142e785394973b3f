/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpi-dustcap: writes a capture of real Dust traffic made with libdust, for
 * dust-dpi to judge: N clients each send an intro with chained data, the
 * server answers with a keepalive, then both sides exchange data packets.
 * Every datagram is opened by the other side, so the capture is valid Dust.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dust.h"
#include "pcapw.h"

enum { SERVER_IP = 0x0a000001, SERVER_PORT = 4789, DG_MAX = 2048, MAX_CLIENTS = 64 };

struct peer {
	struct dust_identity id;
	struct dust_invite inv;
	struct dust_session cs; /* client end */
	struct dust_session ss; /* server end */
	uint32_t ip;
	uint16_t port;
};

struct world {
	struct dust_server srv;
	struct dust_rng rng;
	struct dust_pad pad;
	struct pcapw *w;
	uint32_t now_s;
	uint64_t packets, bytes;
	struct peer peers[MAX_CLIENTS];
	unsigned npeers;
	char dir[64];
};

static int fail(const char *what, int err)
{
	fprintf(stderr, "dpi-dustcap: %s: %s (%s)\n", what,
	        err ? strerror(err < 0 ? -err : err) : "", dust_last_error());
	return -1;
}

/* A plausible inner IPv4 packet of len bytes from the client's tunnel address. */
static size_t inner_fill(struct world *wd, const struct peer *p, uint8_t *d, size_t len)
{
	if (len < 20)
		len = 20;
	memset(d, 0, len);
	d[0] = 0x45;
	d[2] = (uint8_t)(len >> 8);
	d[3] = (uint8_t)len;
	d[8] = 64;
	d[9] = 6;
	memcpy(d + 12, p->inv.tunnel.a, 4);
	d[16] = 10, d[17] = 77, d[18] = 0, d[19] = 1;
	/* TCP payload left zero: the cipher must hide even the plainest text */
	(void)wd;
	return len;
}

static uint32_t endpoint_ip(const struct dust_endpoint *ep)
{
	return (uint32_t)ep->ip.a[0] << 24 | (uint32_t)ep->ip.a[1] << 16 |
	       (uint32_t)ep->ip.a[2] << 8 | ep->ip.a[3];
}

static int setup_server(struct world *wd, unsigned clients)
{
	char path[128];
	int rc;

	snprintf(wd->dir, sizeof(wd->dir), "/tmp/dpi-dustcap.XXXXXX");
	if (!mkdtemp(wd->dir))
		return fail("mkdtemp", errno);
	if ((rc = dust_identity_generate(&wd->srv.id)) < 0)
		return fail("server identity", rc);
	snprintf(path, sizeof(path), "%s/store", wd->dir);
	wd->srv.store = dust_store_open(path, DUST_STORE_CREATE, &wd->srv.id);
	if (!wd->srv.store)
		return fail("store", errno);
	dust_limits_default(&wd->srv.lim);
	for (unsigned i = 0; i < clients; i++) {
		struct peer *p = &wd->peers[i];
		struct dust_ipaddr sa = {.family = 4, .a = {10, 0, 0, 1}};
		struct dust_ipaddr ta = {.family = 4, .a = {10, 77, 0, (uint8_t)(2 + i)}};

		rc = dust_invite_new(&p->inv, &wd->srv.id, &sa, SERVER_PORT, &ta, 24,
		                     wd->now_s + 3600);
		if (rc < 0 || (rc = dust_store_add(wd->srv.store, &p->inv)) < 0)
			return fail("invitation", rc);
		if ((rc = dust_identity_generate(&p->id)) < 0)
			return fail("client identity", rc);
		p->ip = 0xc0a80002 + i; /* 192.168.0.2.. */
		p->port = (uint16_t)(40000 + i);
	}
	wd->npeers = clients;
	dust_store_tick(wd->srv.store, wd->now_s);
	return 0;
}

/* Open dg as the server would for peer p; the payload was captured before. */
static int server_rx(struct world *wd, struct peer *p, uint8_t *dg, size_t len, bool intro)
{
	struct dust_endpoint from = {.ip = {.family = 4}, .port = p->port};
	struct dust_seg segs[DUST_CHAIN_MAX];
	struct dust_intro_info info;
	enum dust_drop drop;
	size_t off = 0;

	from.ip.a[0] = (uint8_t)(p->ip >> 24), from.ip.a[1] = (uint8_t)(p->ip >> 16);
	from.ip.a[2] = (uint8_t)(p->ip >> 8), from.ip.a[3] = (uint8_t)p->ip;
	if (intro) {
		drop = dust_intro_accept(&wd->srv, dg, len, (uint64_t)wd->now_s * 1000, &from, NULL,
		                         &p->ss, &off, &info);
		if (drop != DUST_OK)
			return fail(dust_drop_name(drop), 0);
		if (endpoint_ip(&p->ss.peer) != p->ip)
			return fail("server session peer", 0);
	}
	dust_datagram_open(&p->ss, &wd->srv.lim, wd->now_s, dg, len, off, segs, DUST_CHAIN_MAX,
	                   &drop);
	return drop == DUST_OK ? 0 : fail(dust_drop_name(drop), 0);
}

static int client_rx(struct world *wd, struct peer *p, uint8_t *dg, size_t len)
{
	struct dust_seg segs[DUST_CHAIN_MAX];
	enum dust_drop drop;

	dust_datagram_open(&p->cs, &wd->srv.lim, wd->now_s, dg, len, 0, segs, DUST_CHAIN_MAX,
	                   &drop);
	return drop == DUST_OK ? 0 : fail(dust_drop_name(drop), 0);
}

static int capture(struct world *wd, struct peer *p, bool to_server, const uint8_t *dg, size_t len)
{
	wd->packets++;
	wd->bytes += len;
	if (to_server)
		return pcapw_udp4(wd->w, p->ip, p->port, SERVER_IP, SERVER_PORT, dg, len);
	return pcapw_udp4(wd->w, SERVER_IP, SERVER_PORT, p->ip, p->port, dg, len);
}

static int intro(struct world *wd, struct peer *p)
{
	uint8_t dg[DG_MAX];
	int n, m;

	n = dust_intro_build(&p->inv, &p->id, &wd->rng, &wd->pad, (uint64_t)wd->now_s * 1000, dg,
	                     sizeof(dg), &p->cs);
	if (n < 0)
		return fail("intro build", n);
	m = dust_data_seal(&p->cs, &wd->rng, &wd->pad, wd->now_s, dg + n,
	                   inner_fill(wd, p, dg + n + DUST_DATA_PREFIX, 60),
	                   sizeof(dg) - (size_t)n);
	if (m < 0)
		return fail("chained data", m);
	if (capture(wd, p, true, dg, (size_t)(n + m)) < 0 ||
	    server_rx(wd, p, dg, (size_t)(n + m), true) < 0)
		return -1;
	/* the server's answer (its share and a keepalive): the client's session is up */
	m = dust_intro_answer_build(&p->ss, &wd->rng, &wd->pad, wd->now_s, dg, sizeof(dg));
	if (m < 0)
		return fail("answer", m);
	if (capture(wd, p, false, dg, (size_t)m) < 0)
		return -1;
	return client_rx(wd, p, dg, (size_t)m);
}

/* Data lengths of a bulk TCP transfer: full segments, ACKs, some of anything. */
static size_t data_len(struct world *wd, bool to_server)
{
	uint32_t r = dust_rng_uniform(&wd->rng, 10);

	/* full segments end 20 bytes short of the MTU cap: padding must not pile up there */
	if (r < 6)
		return to_server ? 1420 : 52;
	if (r < 9)
		return to_server ? 52 : 1420;
	return 20 + dust_rng_uniform(&wd->rng, 1401);
}

static int exchange(struct world *wd, struct peer *p, bool to_server)
{
	struct dust_session *tx = to_server ? &p->cs : &p->ss;
	uint8_t dg[DG_MAX];
	size_t dl;
	int m;

	dl = inner_fill(wd, p, dg + DUST_DATA_PREFIX, data_len(wd, to_server));
	m = dust_data_seal(tx, &wd->rng, &wd->pad, wd->now_s, dg, dl, sizeof(dg));
	if (m < 0)
		return fail("seal", m);
	if (capture(wd, p, to_server, dg, (size_t)m) < 0)
		return -1;
	if (to_server)
		return server_rx(wd, p, dg, (size_t)m, false);
	return client_rx(wd, p, dg, (size_t)m);
}

static void cleanup(struct world *wd)
{
	char path[160];

	if (wd->srv.store)
		dust_store_close(wd->srv.store);
	snprintf(path, sizeof(path), "%s/store", wd->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/store.bind", wd->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/store.lock", wd->dir);
	unlink(path);
	if (wd->dir[0])
		rmdir(wd->dir);
	for (unsigned i = 0; i < wd->npeers; i++) {
		dust_session_wipe(&wd->peers[i].cs);
		dust_session_wipe(&wd->peers[i].ss);
		dust_identity_wipe(&wd->peers[i].id);
		dust_invite_wipe(&wd->peers[i].inv);
	}
	dust_identity_wipe(&wd->srv.id);
	dust_rng_wipe(&wd->rng);
}

int main(int argc, char **argv)
{
	static struct world wd;
	unsigned clients = 8, per = 500;
	int rc = 2;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: dpi-dustcap OUT.pcap [CLIENTS [DATAGRAMS_PER_CLIENT]]\n");
		return 2;
	}
	if (argc > 2)
		clients = (unsigned)strtoul(argv[2], NULL, 10);
	if (argc > 3)
		per = (unsigned)strtoul(argv[3], NULL, 10);
	if (!clients || clients > MAX_CLIENTS || dust_init() < 0)
		return 2;
	wd.now_s = (uint32_t)time(NULL);
	dust_rng_init(&wd.rng);
	dust_pad_default(&wd.pad);
	wd.pad.mtu = 1472; /* as the client and gateway cap datagrams */
	wd.w = pcapw_open(argv[1]);
	if (!wd.w || setup_server(&wd, clients) < 0)
		goto out;
	for (unsigned i = 0; i < clients; i++)
		if (intro(&wd, &wd.peers[i]) < 0)
			goto out;
	for (unsigned k = 0; k < per; k++)
		for (unsigned i = 0; i < clients; i++)
			if (exchange(&wd, &wd.peers[i], dust_rng_uniform(&wd.rng, 2)) < 0)
				goto out;
	fprintf(stderr, "dpi-dustcap: %u clients, %llu datagrams, %llu bytes, all opened\n",
	        clients, (unsigned long long)wd.packets, (unsigned long long)wd.bytes);
	rc = 0;
out:
	if (pcapw_close(wd.w) < 0)
		rc = 2;
	cleanup(&wd);
	return rc;
}
