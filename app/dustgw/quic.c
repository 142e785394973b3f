/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The quic profile's side of the gateway (SPEC.md §12): client Initials go
 * to the intro path and are answered with a QUIC server first flight; data
 * arrives in 1-RTT short headers, found by address and, when the address
 * is new (a NAT rebinding), by the connection ID this gateway chose. A
 * session moves only after a packet from the new address authenticates.
 */
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_malloc.h>

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

	if (!w->gw->cfg.quic_port)
		return 0; /* no quic port: no session ever has a server CID */
	snprintf(name, sizeof(name), "dgw_cid_%u_%u", w->wid, atomic_fetch_add(&seq, 1));
	w->cid_map = rte_hash_create(&p);
	return w->cid_map ? 0 : -ENOMEM;
}

void dgw_quic_worker_free(struct dgw_worker *w)
{
	rte_hash_free(w->cid_map);
	w->cid_map = NULL;
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

enum dust_drop dgw_quic_accept(struct dgw_worker *w, const struct dgw_rx *rx,
                               struct dust_session *s, struct dust_quic_accept *acc,
                               struct dust_intro_info *info)
{
	const struct dust_eph *eph = dgw_eph_peek(w);
	enum dust_drop d;

	d = dust_quic_intro_accept(&w->gw->srv, &w->rng, rx->dg, rx->len, w->now_ms, &rx->ep, eph,
	                           s, acc, info);
	if (d == DUST_OK)
		dgw_eph_spent(w, eph);
	return d;
}

/* The first flight goes out in the Initial's own mbuf (its bytes are spent). */
void dgw_quic_answer(struct dgw_worker *w, struct rte_mbuf *m, struct dust_session *s,
                     const struct dust_quic_accept *acc, uint64_t mac)
{
	uint16_t outer = dgw_net_outer_len(&s->peer);
	uint8_t *pkt;
	int r;

	dgw_quic_cid_add(w, s);
	m->data_off = RTE_PKTMBUF_HEADROOM;
	m->data_len = 0;
	m->pkt_len = 0;
	m->ol_flags = 0;
	m->packet_type = 0;
	pkt = rte_pktmbuf_mtod(m, uint8_t *) + outer;
	r = dust_quic_answer_build(s, acc, &w->rng, w->now_s, pkt, rte_pktmbuf_tailroom(m) - outer);
	if (r < 0) {
		dgw_drop_m(w, m, r == -EMSGSIZE ? DGW_DROP_TOO_BIG : DGW_DROP_SEAL);
		return;
	}
	if (dgw_net_outer(w, m, &s->peer, mac, (uint16_t)r, DUST_PROFILE_QUIC) != 0) {
		rte_pktmbuf_free(m);
		return;
	}
	w->st.ctr[DGW_CTR_QUIC_ANSWER]++;
	dgw_net_tx(w, m);
}

bool dgw_quic_short(struct dgw_rx *rx, struct dust_session **s)
{
	size_t pre;

	if (!*s || (*s)->profile != DUST_PROFILE_QUIC ||
	    !dust_quic_short_match(*s, rx->dg, rx->len)) {
		*s = NULL;
		return false;
	}
	pre = dust_quic_rx_prefix(*s);
	rx->dg += pre;
	rx->len = (uint16_t)(rx->len - pre);
	return true;
}

/*
 * s authenticated a datagram from a new address: a copy of it takes the
 * new address and the old one retires. Encoders on other lcores may still
 * seal with the old slot for a grace period, so the copy's send counter
 * starts 2^32 ahead: the two never use one nonce.
 */
static struct dust_session *migrate(struct dgw_worker *w, struct dust_session *old,
                                    const struct dgw_rx *rx)
{
	struct dust_session *s = dust_session_table_reserve(w->tab);
	uint64_t c = __atomic_load_n(&old->tx_counter, __ATOMIC_RELAXED);

	if (!s)
		return NULL;
	*s = *old;
	s->tx_counter = c + (UINT64_C(1) << 32);
	s->peer = rx->ep;
	if (dust_session_table_insert(w->tab, s) != 0) {
		dust_session_table_release(w->tab, s);
		return NULL;
	}
	dgw_quic_cid_add(w, s);
	dgw_sess_publish(w, s, rx->mac);
	dgw_sess_retire(w, old);
	w->st.ctr[DGW_CTR_QUIC_MIGRATED]++;
	return s;
}

/* A short header from an address with no session: its CID may know it. */
static void by_cid(struct dgw_worker *w, struct rte_mbuf *m, struct dgw_rx *rx)
{
	struct dust_session *s = NULL, *moved;
	struct dust_rx_result res;
	struct cid_key k;
	void *v;

	for (uint8_t l = DUST_QUIC_SERVER_CID_MIN; l <= DUST_QUIC_CID_MAX && !s; l++) {
		if (rx->len < 1u + l)
			break;
		cid_key_of(&k, rx->dg + 1, l);
		if (rte_hash_lookup_data(w->cid_map, &k, &v) >= 0)
			s = v;
	}
	if (!s || s->state != DUST_SESSION_LIVE || !dgw_quic_short(rx, &s)) {
		dgw_drop_m(w, m, DGW_DROP_QUIC_NO_SESSION);
		return;
	}
	dgw_open(w, s, rx, 0, &res);
	if (!res.nseg) {
		dgw_datagram_done(w, m, rx, s, &res, false); /* counts the drop, moves nothing */
		return;
	}
	moved = migrate(w, s, rx);
	dgw_datagram_done(w, m, rx, moved ? moved : s, &res, false);
}

void dgw_quic_miss(struct dgw_worker *w, struct rte_mbuf *m, struct dgw_rx *rx)
{
	struct dust_session *s = dust_session_table_lookup(w->tab, &rx->ep);
	struct dust_rx_result res;

	if (!rx->len) {
		dgw_drop_m(w, m, DUST_DROP_TRUNCATED);
		return;
	}
	if (rx->dg[0] & DUST_QUIC_LONG) {
		size_t pre = s ? dust_quic_hs_match(s, rx->dg, rx->len) : 0;

		/* the client's Handshake packet (its "Finished"): Dust data inside */
		if (pre) {
			dgw_open(w, s, rx, pre, &res);
			dgw_datagram_done(w, m, rx, s, &res, false);
			return;
		}
		/* a client Initial (maybe a restart from the same address), else nothing we take */
		if (dust_quic_is_initial(rx->dg, rx->len))
			dgw_intro_path(w, m, rx, s, DUST_OK);
		else
			dgw_drop_m(w, m, DGW_DROP_QUIC_LONG);
		return;
	}
	if (!dgw_quic_short(rx, &s)) {
		by_cid(w, m, rx);
		return;
	}
	/* the session came up earlier in this burst */
	dgw_open(w, s, rx, 0, &res);
	dgw_datagram_done(w, m, rx, s, &res, false);
}
