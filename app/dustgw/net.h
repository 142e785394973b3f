/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net.c: the client side of the wire. Classifies what arrives on the net
 * port, builds the outer Ethernet/IP/UDP headers of what leaves it, and
 * buffers TX on both ports (here so that net.c and neigh.c share it without
 * a cycle).
 */
#ifndef DGW_NET_H
#define DGW_NET_H

#include <rte_ip.h>
#include <rte_udp.h>

#include "dgw_pvt.h"

/* COVER: not Dust, for the cover server (cover.c); only with [quic] cover on */
enum dgw_rx_kind { DGW_RX_DUST = 0, DGW_RX_DONE = 1, DGW_RX_COVER = 2 };
int dgw_net_classify(struct dgw_worker *w, struct rte_mbuf *m, struct dgw_rx *rx);
int dgw_net_outer(struct dgw_worker *w, struct rte_mbuf *m, const struct dust_endpoint *to,
                  uint64_t mac, uint16_t dust_len, uint8_t profile);
uint16_t dgw_net_outer_len(const struct dust_endpoint *to);
int dgw_ensure_linear(struct dgw_worker *w, struct rte_mbuf *m);

/*
 * An IPv4 header (DF, TTL 64, its checksum) and the UDP header after it,
 * l4len bytes of UDP from src:sport to dst:dport; addresses in network
 * order, the UDP checksum left 0 for the caller (after its payload).
 */
static inline void dgw_udp4_hdrs(struct rte_ipv4_hdr *ip, const void *src, const void *dst,
                                 uint16_t sport, uint16_t dport, uint16_t l4len, uint16_t id)
{
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->total_length = rte_cpu_to_be_16(sizeof(*ip) + l4len);
	ip->packet_id = id;
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->hdr_checksum = 0;
	memcpy(&ip->src_addr, src, 4);
	memcpy(&ip->dst_addr, dst, 4);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	udp->src_port = rte_cpu_to_be_16(sport);
	udp->dst_port = rte_cpu_to_be_16(dport);
	udp->dgram_len = rte_cpu_to_be_16(l4len);
	udp->dgram_cksum = 0;
}

static inline void dgw_net_tx(struct dgw_worker *w, struct rte_mbuf *m)
{
	dgw_ctr_inc(w, DGW_CTR_NET_TX);
	rte_eth_tx_buffer(w->gw->net_port, w->wid, w->net_txb, m);
}

static inline void dgw_dlv_tx(struct dgw_worker *w, struct rte_mbuf *m)
{
	dgw_ctr_inc(w, DGW_CTR_DLV_TX);
	rte_eth_tx_buffer(w->gw->dlv_port, w->wid, w->dlv_txb, m);
}

#endif
