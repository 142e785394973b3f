/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DPDK telemetry commands, readable with dpdk-telemetry.py while dustgw
 * runs: /dustgw/stats[,worker] (every counter and drop reason),
 * /dustgw/sessions[,tunnel-address] (live and published sessions) and
 * /dustgw/store (the invitation store's generation and counts).
 */
#include <stdlib.h>

#include <rte_telemetry.h>

#include "dgw_pvt.h"
#include "telemetry.h"

static int stats_get(struct dgw *gw, const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned w = UINT32_MAX;
	struct dgw_stats s;

	(void)cmd;
	if (params && *params) {
		w = (unsigned)atoi(params);
		if (w >= gw->nworkers)
			return -EINVAL;
	}
	dgw_stats_get(gw, w, &s);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "workers", gw->nworkers);
	if (w != UINT32_MAX)
		rte_tel_data_add_dict_u64(d, "lcore", dgw_worker_lcore(gw->w[w]));
	for (unsigned c = 0; c < DGW_CTR_MAX; c++)
		rte_tel_data_add_dict_u64(d, dgw_ctr_name(c), s.ctr[c]);
	for (unsigned r = 1; r < DGW_DROP_MAX; r++) {
		char name[48];

		snprintf(name, sizeof(name), "drop_%s", dgw_drop_name(r));
		rte_tel_data_add_dict_u64(d, name, s.drop[r]);
	}
	rte_tel_data_add_dict_u64(d, "sessions", s.sessions);
	return 0;
}

static int session_one(struct dgw *gw, const char *addr, struct rte_tel_data *d)
{
	struct dgw_tkey key;
	struct dgw_pub p;
	void *idx;
	char buf[64];

	memset(&key, 0, sizeof(key));
	if (dust_ipaddr_parse(&key.ip, addr) != 0)
		return -EINVAL;
	/* pub_lock: the map and pub[] are swapped under it when they grow */
	pthread_mutex_lock(&gw->pub_lock);
	if (rte_hash_lookup_data(gw->tunnel_map, &key, &idx) < 0) {
		pthread_mutex_unlock(&gw->pub_lock);
		return -ENOENT;
	}
	p.wid = gw->pub[(uintptr_t)idx].wid;
	p.peer = gw->pub[(uintptr_t)idx].peer;
	p.s = atomic_load(&gw->pub[(uintptr_t)idx].s);
	pthread_mutex_unlock(&gw->pub_lock);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "tunnel", addr);
	rte_tel_data_add_dict_u64(d, "invitation", (uintptr_t)idx);
	rte_tel_data_add_dict_int(d, "live", p.s != NULL);
	if (p.s) {
		rte_tel_data_add_dict_u64(d, "lcore", gw->w[p.wid]->lcore);
		rte_tel_data_add_dict_string(d, "peer",
		                             dust_ipaddr_format(&p.peer.ip, buf, sizeof(buf)));
		rte_tel_data_add_dict_u64(d, "peer_port", p.peer.port);
	}
	return 0;
}

static int sessions_get(struct dgw *gw, const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct rte_tel_data *live, *lcores;
	uint64_t total = 0;

	(void)cmd;
	if (params && *params)
		return session_one(gw, params, d);
	live = rte_tel_data_alloc();
	lcores = rte_tel_data_alloc();
	if (!live || !lcores) {
		rte_tel_data_free(live);
		rte_tel_data_free(lcores);
		return -ENOMEM;
	}
	rte_tel_data_start_array(live, RTE_TEL_U64_VAL);
	rte_tel_data_start_array(lcores, RTE_TEL_U64_VAL);
	for (unsigned i = 0; i < gw->nworkers; i++) {
		uint64_t n = __atomic_load_n(&gw->w[i]->st.sessions, __ATOMIC_RELAXED);

		rte_tel_data_add_array_u64(live, n);
		rte_tel_data_add_array_u64(lcores, dgw_worker_lcore(gw->w[i]));
		total += n;
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "live", total);
	pthread_mutex_lock(&gw->pub_lock);
	rte_tel_data_add_dict_u64(d, "published", gw->published);
	pthread_mutex_unlock(&gw->pub_lock);
	rte_tel_data_add_dict_u64(d, "invitations", gw->ninv);
	rte_tel_data_add_dict_u64(d, "max_per_lcore", gw->cfg.sessions_per_lcore);
	rte_tel_data_add_dict_container(d, "live_per_worker", live, 0);
	rte_tel_data_add_dict_container(d, "worker_lcores", lcores, 0);
	return 0;
}

/*
 * Counted from the entries, which never move; their flags are read without
 * the store lock, so the counts are a snapshot that may be a moment old.
 */
static int store_get(struct dgw *gw, const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dust_store *st;
	uint64_t bound = 0, revoked = 0;
	uint32_t n;

	(void)cmd;
	(void)params;
	st = gw->srv.store;
	pthread_mutex_lock(&gw->pub_lock);
	n = gw->ninv;
	pthread_mutex_unlock(&gw->pub_lock);
	for (uint32_t i = 0; i < n; i++) {
		const struct dust_store_entry *e = dust_store_at(st, i);

		bound += __atomic_load_n(&e->bound, __ATOMIC_RELAXED) != 0;
		revoked += __atomic_load_n(&e->revoked, __ATOMIC_RELAXED) != 0;
	}
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "path", gw->cfg.store_path);
	rte_tel_data_add_dict_u64(d, "generation", dust_store_generation(st));
	/* etcd: the revision the gateway's watch has followed to */
	if (dust_store_revision(st) >= 0)
		rte_tel_data_add_dict_u64(d, "revision", (uint64_t)dust_store_revision(st));
	rte_tel_data_add_dict_u64(d, "invitations", n);
	rte_tel_data_add_dict_u64(d, "bound", bound);
	rte_tel_data_add_dict_u64(d, "revoked", revoked);
	rte_tel_data_add_dict_u64(d, "refused", dust_store_refused(st)); /* SPEC §7.6 */
	/* journal compactions while running (SPEC §7) */
	rte_tel_data_add_dict_u64(d, "compactions", dust_store_compactions(st));
	return 0;
}

/*
 * Each command holds the gateway while it reads it, so that dgw_destroy at
 * exit waits for a command in progress instead of freeing under it (F5).
 */
#define HELD_CMD(name)                                                                             \
	static int name##_cb(const char *cmd, const char *params, struct rte_tel_data *d)          \
	{                                                                                          \
		struct dgw *gw = dgw_global_hold();                                                \
		int rc;                                                                            \
                                                                                                   \
		if (!gw)                                                                           \
			return -ENODEV;                                                            \
		rc = name##_get(gw, cmd, params, d);                                               \
		dgw_global_release();                                                              \
		return rc;                                                                         \
	}
HELD_CMD(stats)
HELD_CMD(sessions)
HELD_CMD(store)

int dgw_telemetry_register(void)
{
	int rc = rte_telemetry_register_cmd(
	    "/dustgw/stats", stats_cb,
	    "Gateway counters and drops. Parameters: worker index (optional)");

	if (rc == 0)
		rc = rte_telemetry_register_cmd(
		    "/dustgw/sessions", sessions_cb,
		    "Sessions per worker. Parameters: tunnel address (optional)");
	if (rc == 0)
		rc = rte_telemetry_register_cmd(
		    "/dustgw/store", store_cb,
		    "Invitation store: generation (changes merged while running), etcd revision, "
		    "counts");
	return rc;
}
