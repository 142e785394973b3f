/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic intro's accept cost on the gateway (bench/quic-intro/run.sh): a
 * returning client's hellos, built off the clock, each accepted with a
 * server ephemeral made beforehand (the gateway's pool makes them off the
 * packet path). Builds against any libdust revision with the public API;
 * -DPQ adds ML-KEM-768 encapsulation alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dust.h"
#include "quic.h"
#ifdef PQ
#include "mlkem.h"
#endif

enum { N = 400 };
static uint8_t hello[N][2600];
static int len[N];
static struct dust_eph ephs[N];

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct dust_identity server, client;
	struct dust_ipaddr addr, tun;
	struct dust_invite inv;
	struct dust_server srv;
	struct dust_rng rng;
	struct dust_quic_client qc;
	struct dust_endpoint from = {.ip = {.family = 4, .a = {198, 51, 100, 7}}, .port = 5555};
	char dir[] = "/tmp/pq-bench-XXXXXX", path[64];
	uint64_t t0 = 1900000000000ull - 7200000;
	double best = 1e9;
	int rounds = argc > 1 ? atoi(argv[1]) : 5;

	if (dust_init() != 0 || !mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/store", dir);
	dust_identity_generate(&server);
	dust_identity_generate(&client);
	dust_ipaddr_parse(&addr, "192.0.2.1");
	dust_ipaddr_parse(&tun, "10.9.0.2");
	if (dust_invite_new(&inv, &server, &addr, 443, &tun, 24, t0 / 1000 + 360000) != 0)
		return 1;
	inv.profile = DUST_PROFILE_QUIC;
	if (dust_invite_cover_set(&inv, "www.example.com") != 0)
		return 1;
	memset(&srv, 0, sizeof(srv));
	srv.id = server;
	srv.store = dust_store_open(path, DUST_STORE_CREATE, &server);
	if (!srv.store || dust_store_add(srv.store, &inv) != 0)
		return 1;
	dust_limits_default(&srv.lim);
	dust_rng_init(&rng);
	for (int r = 0; r < rounds; r++) {
		uint64_t base = t0 + (uint64_t)r * 1000000;
		double a, b;

		dust_store_tick(srv.store, base / 1000);
		for (int i = 0; i < N; i++) {
			len[i] = dust_quic_intro_build(&inv, &client, &rng, base + (uint64_t)i,
			                               hello[i], sizeof(hello[i]), &qc);
			if (len[i] <= 0)
				return 2;
		}
		for (int i = 0; i < N; i++)
			dust_eph_generate(&ephs[i]); /* the gateway's pool: off the path */
		a = now_s();
		for (int i = 0; i < N; i++) {
			static struct dust_session s;
			static struct dust_quic_accept acc;

			if (dust_quic_intro_accept(&srv, &rng, hello[i], (size_t)len[i],
			                           base + (uint64_t)i, &from, &ephs[i], &s, &acc,
			                           NULL) != DUST_OK)
				return 3;
		}
		b = now_s();
		if ((b - a) / N < best)
			best = (b - a) / N;
	}
	/* eph generation (one X25519 base mult) is inside the loop: measured apart below */
	{
		double a = now_s(), b;
		struct dust_eph eph;

		for (int i = 0; i < 4 * N; i++)
			dust_eph_generate(&eph);
		b = now_s();
		printf(
		    "hello %d bytes; accept %.1f us (best of %d x %d; X25519 base mult %.1f us)\n",
		    len[0], best * 1e6, rounds, N, (b - a) / (4 * N) * 1e6);
	}
#ifdef PQ
	{
		uint8_t ek[1184], dk[2400], ct[1088], ss[32];
		double a, b;

		if (dust_mlkem768_keypair(ek, dk, &rng) != 0)
			return 4;
		a = now_s();
		for (int i = 0; i < 4 * N; i++)
			if (dust_mlkem768_enc(ct, ss, ek, &rng) != 0)
				return 5;
		b = now_s();
		printf("ML-KEM-768 encaps %.1f us\n", (b - a) / (4 * N) * 1e6);
	}
#endif
	return 0;
}
