/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbour answers: ARP replies for our IPv4 and ND neighbour
 * advertisements for our IPv6 on the net port, so a real router can reach
 * the gateway; on the delivery port (proxy mode) we answer for every
 * address, because every tunnel address lives behind the gateway.
 * Replies are built in place in the request's mbuf.
 */
#include <netinet/in.h>
#include <string.h>

#include <rte_arp.h>
#include <rte_icmp.h>
#include <rte_ip.h>

#include "dgw_pvt.h"
#include "neigh.h"
#include "net.h"

enum {
	ND_NS = 135,
	ND_NA = 136,
	ND_OPT_TARGET_LL = 2,
	ND_HDR_LEN = 24, /* type, code, csum, flags, target */
	ND_NA_LEN = ND_HDR_LEN + 8,
	ND_FLAG_SOLICITED = 0x40000000,
	ND_FLAG_OVERRIDE = 0x20000000,
};

static void reply_tx(struct dgw_worker *w, struct rte_mbuf *m, bool proxy)
{
	if (proxy)
		dgw_dlv_tx(w, m);
	else
		dgw_net_tx(w, m);
}

struct rte_arp_hdr *dgw_arp_request(struct rte_mbuf *m)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);

	if (m->data_len < DGW_ETH_LEN + sizeof(*arp) ||
	    eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP) ||
	    arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || arp->arp_hlen != 6 ||
	    arp->arp_plen != 4 || arp->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REQUEST))
		return NULL;
	return arp;
}

void dgw_arp_reply(struct rte_mbuf *m, const struct rte_ether_addr *mine)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);
	struct rte_arp_ipv4 *a = &arp->arp_data;
	uint32_t tip = a->arp_tip;

	arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
	rte_ether_addr_copy(&a->arp_sha, &a->arp_tha);
	a->arp_tip = a->arp_sip;
	rte_ether_addr_copy(mine, &a->arp_sha);
	a->arp_sip = tip;
	rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
	rte_ether_addr_copy(mine, &eth->src_addr);
}

bool dgw_neigh_arp(struct dgw_worker *w, struct rte_mbuf *m, const struct rte_ether_addr *mine,
                   bool proxy)
{
	struct rte_arp_hdr *arp = dgw_arp_request(m);
	const struct dust_ipaddr *ours = &w->gw->cfg.ip4;
	uint32_t tip;

	if (!arp)
		return false;
	tip = arp->arp_data.arp_tip;
	if (proxy ? tip == arp->arp_data.arp_sip
	          : (ours->family != 4 || memcmp(&tip, ours->a, 4) != 0))
		return false;
	dgw_arp_reply(m, mine);
	dgw_ctr_inc(w, DGW_CTR_ARP_REPLY);
	reply_tx(w, m, proxy);
	return true;
}

static bool ns_valid(struct rte_mbuf *m, struct rte_ipv6_hdr *ip, uint8_t *icmp)
{
	uint16_t plen = rte_be_to_cpu_16(ip->payload_len);

	return plen >= ND_HDR_LEN && m->data_len >= DGW_ETH_LEN + sizeof(*ip) + plen &&
	       ip->hop_limits == 255 && icmp[0] == ND_NS && icmp[1] == 0 &&
	       rte_ipv6_udptcp_cksum_verify(ip, icmp) == 0;
}

static void na_build(struct rte_ipv6_hdr *ip, uint8_t *icmp, const struct rte_ether_addr *mine,
                     const uint8_t target[16])
{
	static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};
	uint32_t flags = ND_FLAG_OVERRIDE;
	uint16_t csum;
	bool unspec = true;

	for (int i = 0; i < 16; i++)
		unspec &= ip->src_addr[i] == 0;
	if (!unspec) {
		flags |= ND_FLAG_SOLICITED;
		memcpy(ip->dst_addr, ip->src_addr, 16);
	} else {
		memcpy(ip->dst_addr, all_nodes, 16);
	}
	memcpy(ip->src_addr, target, 16);
	ip->payload_len = rte_cpu_to_be_16(ND_NA_LEN);
	ip->hop_limits = 255;
	icmp[0] = ND_NA;
	icmp[1] = 0;
	flags = rte_cpu_to_be_32(flags);
	memcpy(icmp + 4, &flags, 4);
	memmove(icmp + 8, target, 16);
	icmp[24] = ND_OPT_TARGET_LL;
	icmp[25] = 1;
	memcpy(icmp + 26, mine->addr_bytes, 6);
	icmp[2] = icmp[3] = 0;
	/* Written as stored: rte_ipv6_udptcp_cksum already gives network order. */
	csum = rte_ipv6_udptcp_cksum(ip, icmp);
	memcpy(icmp + 2, &csum, 2);
}

bool dgw_neigh_ns(struct dgw_worker *w, struct rte_mbuf *m, const struct rte_ether_addr *mine,
                  bool proxy)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(eth + 1);
	uint8_t *icmp = (uint8_t *)(ip + 1);
	const struct dust_ipaddr *ours = &w->gw->cfg.ip6;
	uint8_t target[16];

	if (!ns_valid(m, ip, icmp))
		return false;
	memcpy(target, icmp + 8, 16);
	if (!proxy && (ours->family != 6 || memcmp(target, ours->a, 16) != 0))
		return false;
	if (proxy && memcmp(target, ip->src_addr, 16) == 0)
		return false;
	/* A DAD probe (from ::) checks the host's own new address: a proxy
	 * answer would make the TAP's kernel give it up. */
	if (proxy && memcmp(ip->src_addr, (uint8_t[16]){0}, 16) == 0)
		return false;
	if (rte_pktmbuf_tailroom(m) + m->data_len < DGW_ETH_LEN + sizeof(*ip) + ND_NA_LEN)
		return false;
	na_build(ip, icmp, mine, target);
	m->data_len = m->pkt_len = DGW_ETH_LEN + sizeof(*ip) + ND_NA_LEN;
	rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
	rte_ether_addr_copy(mine, &eth->src_addr);
	dgw_ctr_inc(w, DGW_CTR_ND_REPLY);
	reply_tx(w, m, proxy);
	return true;
}
