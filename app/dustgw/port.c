/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ports: resolve the net and delivery ports by name or index, configure one
 * RX/TX queue pair per worker (RSS on the outer UDP 4-tuple when the port
 * has it), and give each worker its buffered TX queues.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include <rte_malloc.h>

#include "dgw_pvt.h"
#include "hints.h"
#include "replay.h"

static void list_ports(void)
{
	uint16_t p;

	RTE_ETH_FOREACH_DEV(p)
	{
		char name[RTE_ETH_NAME_MAX_LEN];

		if (rte_eth_dev_get_name_by_port(p, name) == 0)
			DGW_LOG(ERR, "  port %u: %s", p, name);
	}
}

static int port_resolve(const char *spec, uint16_t *id)
{
	bool digits = spec[0] != 0;

	for (const char *c = spec; *c; c++)
		digits &= isdigit((unsigned char)*c) != 0;
	if (digits && atoi(spec) < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port(atoi(spec))) {
		*id = (uint16_t)atoi(spec);
		return 0;
	}
	if (!digits && rte_eth_dev_get_port_by_name(spec, id) == 0)
		return 0;
	DGW_LOG(ERR, "no DPDK port '%s' (missing --vdev or -a?); ports are:", spec);
	list_ports();
	return -ENODEV;
}

static void rss_conf(struct dgw *gw, uint16_t port, const struct rte_eth_dev_info *info,
                     struct rte_eth_conf *conf)
{
	uint64_t want = RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV6_UDP;
	uint64_t hf = want & info->flow_type_rss_offloads;

	if (gw->cfg.queues < 2)
		return;
	if (!hf) {
		DGW_LOG(WARNING,
		        "port %u has no UDP RSS: each RX queue keeps what the PMD gives it", port);
		return;
	}
	conf->rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
	conf->rx_adv_conf.rss_conf.rss_hf = hf;
}

static int port_configure(struct dgw *gw, uint16_t port)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	uint16_t q = gw->cfg.queues, rxd = gw->cfg.rxd, txd = gw->cfg.txd;
	int rc;

	memset(&conf, 0, sizeof(conf));
	if ((rc = rte_eth_dev_info_get(port, &info)) != 0)
		return rc;
	if (q > info.max_rx_queues || q > info.max_tx_queues) {
		DGW_LOG(ERR, "port %u (%s) has at most %u RX / %u TX queues, %u configured", port,
		        info.driver_name, info.max_rx_queues, info.max_tx_queues, q);
		return -EINVAL;
	}
	rss_conf(gw, port, &info, &conf);
	if ((rc = rte_eth_dev_configure(port, q, q, &conf)) != 0 ||
	    (rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd)) != 0)
		goto fail;
	for (uint16_t i = 0; i < q; i++) {
		int sock = rte_eth_dev_socket_id(port);

		if ((rc = rte_eth_rx_queue_setup(port, i, rxd, sock, NULL, gw->pool)) != 0 ||
		    (rc = rte_eth_tx_queue_setup(port, i, txd, sock, NULL)) != 0)
			goto fail;
	}
	if ((rc = rte_eth_dev_start(port)) != 0)
		goto fail;
	/* ND solicitations go to a multicast group: best effort, pcap has no filter. */
	(void)rte_eth_allmulticast_enable(port);
	return 0;
fail:
	DGW_LOG(ERR, "port %u (%s): setup failed: %s", port, info.driver_name, strerror(-rc));
	return rc;
}

static void unsent_net(struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct dgw_worker *w = arg;

	dgw_count_drops(w, DGW_DROP_TX_FULL, n);
	dgw_ctr_sub(w, DGW_CTR_NET_TX, n);
	rte_pktmbuf_free_bulk(pkts, n);
}

static void unsent_dlv(struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct dgw_worker *w = arg;

	dgw_count_drops(w, DGW_DROP_TX_FULL, n);
	dgw_ctr_sub(w, DGW_CTR_DLV_TX, n);
	rte_pktmbuf_free_bulk(pkts, n);
}

static struct rte_eth_dev_tx_buffer *txb_create(buffer_tx_error_fn cb, void *arg)
{
	struct rte_eth_dev_tx_buffer *b =
	    rte_zmalloc("dgw_txb", RTE_ETH_TX_BUFFER_SIZE(DGW_BURST), RTE_CACHE_LINE_SIZE);

	if (!b)
		return NULL;
	rte_eth_tx_buffer_init(b, DGW_BURST);
	rte_eth_tx_buffer_set_err_callback(b, cb, arg);
	return b;
}

int dgw_ports_use(struct dgw *gw, uint16_t net_port, uint16_t dlv_port)
{
	int rc;

	gw->net_port = net_port;
	gw->dlv_port = dlv_port;
	if ((rc = dgw_replay_setup(gw)) != 0)
		return rc;
	rte_eth_macaddr_get(net_port, &gw->net_mac);
	rte_eth_macaddr_get(dlv_port, &gw->dlv_mac);
	dgw_csum_resolve(gw);
	/* Default: the port's own MAC, which the kernel side of a net_tap answers to. */
	if (gw->cfg.dlv_mac_set)
		memcpy(gw->dlv_dst.addr_bytes, gw->cfg.dlv_mac, 6);
	else
		gw->dlv_dst = gw->dlv_mac;
	for (unsigned i = 0; i < gw->nworkers; i++) {
		struct dgw_worker *w = gw->w[i];

		if (!w->net_txb)
			w->net_txb = txb_create(unsent_net, w);
		if (!w->dlv_txb)
			w->dlv_txb = txb_create(unsent_dlv, w);
		if (!w->net_txb || !w->dlv_txb)
			return -ENOMEM;
	}
	return 0;
}

int dgw_ports_setup(struct dgw *gw)
{
	uint16_t net, dlv;
	int rc;

	if ((rc = port_resolve(gw->cfg.net_port, &net)) ||
	    (rc = port_resolve(gw->cfg.dlv_port, &dlv)))
		return rc;
	if (net == dlv) {
		DGW_LOG(ERR, "net and delivery ports must differ (both are port %u)", net);
		return -EINVAL;
	}
	if ((rc = port_configure(gw, net)) || (rc = port_configure(gw, dlv)))
		return rc;
	gw->ports_owned = true;
	if ((rc = dgw_ports_use(gw, net, dlv)) != 0)
		return rc;
	return dgw_cover_setup(gw); /* the tap takes the net port's MAC */
}
