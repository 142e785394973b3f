/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The invitation store's etcd backend (SPEC §7.5), private to libdust: an
 * etcd v3 client over the HTTP/JSON gateway (libcurl, jansson) with a watch
 * thread and request threads, so that no caller of the store waits on the
 * network except dust-invite's own writes.
 */
#ifndef DUST_STORE_ETCD_H
#define DUST_STORE_ETCD_H

#include <stdbool.h>
#include <stdint.h>

#include "dust.h"

#define ETCD_URL_SCHEME "etcd://"
#define ETCD_TLS_SCHEME "etcds://"

enum etcd_status {
	ETCD_OK,          /* committed by the cluster */
	ETCD_CONFLICT,    /* B: bound to another key cluster-wide (pk holds it); F: a replay */
	ETCD_REVOKED,     /* the invitation is revoked cluster-wide */
	ETCD_UNAVAILABLE, /* no quorum, no endpoint, a timeout: nothing known */
};

/*
 * A binding to commit (kind 'B'), an accepted intro's freshness ('T', best
 * effort), or a returning client's freshness committed exclusively before
 * its answer ('F': refused if the cluster holds this intro or a newer one).
 */
struct etcd_req {
	char kind;
	uint32_t idx, cookie; /* handed back in the result */
	uint8_t id[DUST_ID_BYTES];
	uint8_t pk[DUST_PK_BYTES];
	uint64_t at; /* B: unix seconds of the first use; T, F: intro ts (ms) */
	uint64_t ts; /* B: the first use's intro ts (ms), written with the binding */
	uint8_t nonce[DUST_XNONCE_BYTES];
};

struct etcd_res {
	char kind; /* of the request: B or F */
	uint32_t idx, cookie;
	enum etcd_status status;
	uint8_t pk[DUST_PK_BYTES]; /* OK, CONFLICT: the key bound cluster-wide */
	bool fresh_written;        /* OK: the binding's txn (or F's) wrote the intro's freshness */
};

/*
 * One record under the prefix: kind and ID, val its value as stored, sealed
 * (SPEC §7.6): store.c opens it. Opened, 'I' is the invitation record, 'B'
 * "PKHEX AT", 'T' "TS NONCEHEX", 'R' "AT -".
 * Returns 0 to go on, or -errno to stop.
 */
typedef int (*etcd_rec_fn)(void *arg, char kind, const uint8_t id[DUST_ID_BYTES], const char *val);

struct etcd_store;

#ifdef DUST_HAVE_ETCD
bool etcd_is_url(const char *path);
/* key: the storage key (SPEC §7.6); values are sealed under it with kind and ID. */
struct etcd_store *etcd_open(const char *url, const uint8_t key[DUST_KEY_BYTES]);
/* Values the request threads read back (b/, t/) that did not open. */
uint64_t etcd_refused(const struct etcd_store *es);
void etcd_close(struct etcd_store *es);
/* Every record under the prefix (paged, one revision); the watch follows from there. */
int etcd_load(struct etcd_store *es, etcd_rec_fn fn, void *arg);
/* Create-if-absent of one record: 0, -EEXIST (already there), -EAGAIN (unavailable). */
int etcd_create(struct etcd_store *es, char kind, const uint8_t id[DUST_ID_BYTES], const char *val);
/*
 * Create-if-absent of n records (ETCD_TXN_ITEMS at most) in one txn, each
 * independently: out[i] as etcd_create's return. 0, or -errno (n too big).
 */
#define ETCD_TXN_ITEMS 32
int etcd_create_many(struct etcd_store *es, char kind, const uint8_t (*id)[DUST_ID_BYTES],
                     const char *const *val, unsigned n, int *out);
/* Put one record whatever its key held (dust-invite migrate only): 0 or -errno. */
int etcd_put(struct etcd_store *es, char kind, const uint8_t id[DUST_ID_BYTES], const char *val);
/* Start the watch and request threads (idempotent). */
int etcd_start(struct etcd_store *es);
/*
 * Queue a request for a request thread (the same one for every request of
 * one ID, in order); -ENOBUFS when the queues are full.
 */
int etcd_submit(struct etcd_store *es, const struct etcd_req *rq);
unsigned etcd_results(struct etcd_store *es, struct etcd_res *out, unsigned max);
/* Apply the records the watch brought in since the last call; how many, or -errno. */
int etcd_events(struct etcd_store *es, etcd_rec_fn fn, void *arg);
/*
 * The watch's stream parser on data as if etcd had sent it, chunk bytes a
 * write (tests, fuzzing): its records go to etcd_events. True when the
 * stream asked for everything to be read again.
 */
bool etcd_watch_feed(struct etcd_store *es, const char *data, size_t len, size_t chunk);
/* The newest revision the store has seen (load or watch). */
int64_t etcd_revision(const struct etcd_store *es);
#else
static inline bool etcd_is_url(const char *path)
{
	return strncmp(path, ETCD_URL_SCHEME, strlen(ETCD_URL_SCHEME)) == 0 ||
	       strncmp(path, ETCD_TLS_SCHEME, strlen(ETCD_TLS_SCHEME)) == 0;
}
#endif

#endif /* DUST_STORE_ETCD_H */
