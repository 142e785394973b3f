/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-pcap's files share the clients, the output files, the manifests
 * and the globals of base.c.
 */
#ifndef DUST_PCAP_H
#define DUST_PCAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "capfile.h"
#include "dust.h"
#include "frame.h"

enum { MAX_OUT = 8, FRAME_MAX = 2048, PAYLOAD_MAX = 1800 };

extern const uint8_t gw_mac[6];
extern const uint8_t far_ip[4];
extern struct dust_rng rng;
extern struct dust_pad pad;

__attribute__((noreturn)) int die(const char *fmt, const char *arg);

struct outs {
	struct capfile_out f[MAX_OUT];
	unsigned n;
	uint64_t frames;
};

typedef void (*frame_fn)(const uint8_t *f, size_t len, unsigned file, void *arg);

void outs_open(struct outs *o, char **paths, unsigned n);
void outs_close(struct outs *o);
void emit(struct outs *o, unsigned q, const uint8_t *f, size_t len);
void read_pcap(const char *path, unsigned file, frame_fn fn, void *arg);

struct client {
	uint32_t idx;
	struct dust_identity id;
	struct dust_session s;
	struct dust_endpoint ep;
	uint8_t mac[6];
	uint8_t wrong_key; /* a fresh key for an invitation bound to the saved one */
	uint8_t refused;   /* beyond the gateway's table capacity (--table-max) */
	unsigned queue;    /* output file its datagrams go to */
	struct dust_invite inv;
	uint8_t intro[FRAME_MAX];
	uint16_t intro_len;
	uint8_t data[FRAME_MAX];
	uint16_t data_len;
};

void state_save(const char *path, const struct client *c, unsigned n);
struct client *state_load(const char *path, unsigned *n);
void hexline(FILE *f, const char *kind, unsigned who, const uint8_t *p, size_t n);
uint32_t now_s(void);
uint64_t now_ms(void);
struct dust_store *store_open(const char *path, const char *key, int flags);

static const uint16_t sizes[] = {28, 64, 120, 300, 576, 900, 1200, 1350};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct args {
	const char *store, *manifest, *state, *reuse, *stats;
	const char *more_manifest[MAX_OUT];
	unsigned nmore;
	char *out[MAX_OUT];
	unsigned nout;
	char *in[MAX_OUT];
	unsigned nin;
	unsigned clients, packets, wrong_key, roam, table_max, v6_clients;
	int bad, unordered;
	const char *ip6;
	int profile;            /* gen --profile: enum dust_profile */
	const char *key, *wire; /* gen --profile quic: server key, two-way capture */
};

struct pkt {
	unsigned who;
	uint16_t len;
	uint8_t *b;
};

struct expect {
	char name[64];
	uint64_t v;
};

struct manifest {
	struct pkt *p;
	size_t np, cap;
	struct expect e[64];
	unsigned ne;
	unsigned clients;
};

struct queues {
	size_t **idx;
	size_t *n, *next;
	int *file;
	unsigned clients;
};

void manifest_load(struct manifest *m, const char *path, const char *kind);
void manifest_free(struct manifest *m);
void manifest_merge_expect(struct manifest *m, const char *path);
void queues_build(struct queues *q, const struct manifest *m);
void queues_free(struct queues *q);

int cmd_gen(const struct args *a);
int cmd_gen_quic(const struct args *a);
int cmd_inject(const struct args *a);
int cmd_check(const struct args *a);
int cmd_decode(const struct args *a);
int cmd_read(int argc, char **argv);

#endif /* DUST_PCAP_H */
