/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic profile's connection IDs (SPEC.md §12): per worker, the server
 * CID each quic session was given maps to the session, so a short header
 * from a new address (a NAT rebinding) still finds it. A table, no policy:
 * quic.c decides when a session moves.
 */
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_ring.h>

#include "cid.h"
#include "dgw_pvt.h"

/* cid_map key: a CID padded to whole 32-bit words for rte_jhash. */
struct cid_key {
	uint8_t len;
	uint8_t cid[DUST_QUIC_CID_MAX];
	uint8_t pad[3];
} __attribute__((aligned(4)));

static void cid_key_of(struct cid_key *k, const uint8_t *cid, uint8_t len)
{
	memset(k, 0, sizeof(*k));
	k->len = len;
	memcpy(k->cid, cid, len);
}

int dgw_quic_worker_init(struct dgw_worker *w)
{
	char name[RTE_HASH_NAMESIZE];
	struct rte_hash_parameters p = {
	    .name = name,
	    .entries = RTE_MAX(64u, w->gw->cfg.sessions_per_lcore * 2),
	    .key_len = sizeof(struct cid_key),
	    .hash_func = rte_jhash,
	    .socket_id = (int)rte_socket_id(),
	};

	static _Atomic unsigned seq; /* several gateways may share a process (bench, tests) */

	unsigned n = atomic_fetch_add(&seq, 1);

	if (!w->gw->cfg.quic_port)
		return 0; /* no quic port: no session ever has a server CID */
	if (w->wid == 0) {
		struct dust_rng r;

		dust_rng_init(&r);
		dust_rng_bytes(&r, &w->gw->cid_seed, sizeof(w->gw->cid_seed));
		dust_rng_wipe(&r);
	}
	snprintf(name, sizeof(name), "dgw_cid_%u_%u", w->wid, n);
	w->cid_map = rte_hash_create(&p);
	snprintf(name, sizeof(name), "dgw_ho_%u_%u", w->wid, n);
	w->handoff = rte_ring_create_elem(name, sizeof(struct dgw_handoff), DGW_HANDOFF_RING,
	                                  (int)rte_socket_id(), RING_F_SC_DEQ);
	return w->cid_map && w->handoff ? 0 : -ENOMEM;
}

void dgw_quic_worker_free(struct dgw_worker *w)
{
	struct dgw_handoff h;

	while (w->handoff && rte_ring_dequeue_elem(w->handoff, &h, sizeof(h)) == 0)
		rte_pktmbuf_free(h.m);
	rte_ring_free(w->handoff);
	w->handoff = NULL;
	rte_hash_free(w->cid_map);
	w->cid_map = NULL;
}

/*
 * The worker a server CID names: a keyed hash of it. RSS sends a client
 * whose NAT moved to any worker; the CID tells that worker where the
 * session lives without any shared table. The key is secret, so the CIDs
 * of one worker look as random as all of them (QUIC-LB's idea, unencrypted).
 */
uint16_t dgw_quic_cid_owner(const struct dgw *gw, const uint8_t *cid)
{
	return (uint16_t)(rte_jhash(cid, DUST_QUIC_SERVER_CID_LEN, gw->cid_seed) % gw->nworkers);
}

/* Does another session of this worker hold cid? */
static bool cid_taken(struct dgw_worker *w, const struct dust_session *s)
{
	struct cid_key k;
	void *v;

	cid_key_of(&k, s->cid, s->cid_len);
	return w->cid_map && rte_hash_lookup_data(w->cid_map, &k, &v) >= 0 && v != s;
}

/*
 * A new random CID for s that names this worker (nworkers tries on
 * average) and no other session of it: 4 bytes, as the cover server's, so
 * two of a worker's 65536 sessions meet about once in 65536 draws, and the
 * later one would take the earlier one's short headers.
 */
void dgw_quic_cid_pick(struct dgw_worker *w, struct dust_session *s)
{
	while ((w->gw->nworkers > 1 && dgw_quic_cid_owner(w->gw, s->cid) != w->wid) ||
	       cid_taken(w, s))
		dust_rng_bytes(&w->rng, s->cid, s->cid_len);
}

void dgw_quic_cid_add(struct dgw_worker *w, struct dust_session *s)
{
	struct cid_key k;

	cid_key_of(&k, s->cid, s->cid_len);
	if (rte_hash_add_key_data(w->cid_map, &k, s) < 0)
		DGW_LOG(WARNING, "connection ID table full: a moving client will re-introduce");
}

/* Only while the entry still names s: a moved session's copy owns it now. */
void dgw_quic_cid_del(struct dgw_worker *w, const struct dust_session *s)
{
	struct cid_key k;
	void *v = NULL;

	if (s->profile != DUST_PROFILE_QUIC || !w->cid_map)
		return;
	cid_key_of(&k, s->cid, s->cid_len);
	if (rte_hash_lookup_data(w->cid_map, &k, &v) >= 0 && v == s)
		rte_hash_del_key(w->cid_map, &k);
}

/* The session whose server CID starts a short header's dg (after its first byte), or NULL. */
struct dust_session *dgw_quic_cid_find(struct dgw_worker *w, const uint8_t *dg, uint16_t len)
{
	struct cid_key k;
	void *v;

	/* every server CID of the gateway has one length: one lookup */
	if (len < 1u + DUST_QUIC_SERVER_CID_LEN)
		return NULL;
	cid_key_of(&k, dg + 1, DUST_QUIC_SERVER_CID_LEN);
	return rte_hash_lookup_data(w->cid_map, &k, &v) >= 0 ? v : NULL;
}
