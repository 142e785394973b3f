/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The client-facing side of a frame: Ethernet/IPv4/IPv6/UDP parsing that
 * sorts each frame into "a Dust datagram for us" or a counted drop (or an
 * ARP/ND answer), and the outer headers of what we send back to a client.
 * Checksums are written in software; received UDP checksums are checked as
 * [gateway] udp_checksum says (udp_csum_ok), the IPv4 header's always.
 */
#include <netinet/in.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_udp.h>

#include "dgw_pvt.h"
#include "loopprof.h"
#include "neigh.h"
#include "net.h"

/* dgw_drop_m, then the classifier's verdict for a consumed frame */
static int drop(struct dgw_worker *w, struct rte_mbuf *m, unsigned reason)
{
	dgw_drop_m(w, m, reason);
	return DGW_RX_DONE;
}

/* Not Dust, and for the gateway's address: the cover server's when it is on. */
static int cover_or_drop(struct dgw_worker *w, struct rte_mbuf *m, unsigned reason)
{
	return dgw_cover_on(w) ? DGW_RX_COVER : drop(w, m, reason);
}

int dgw_ensure_linear(struct dgw_worker *w, struct rte_mbuf *m)
{
	if (m->nb_segs == 1 || rte_pktmbuf_linearize(m) == 0)
		return 0;
	dgw_count_drop(w, DGW_DROP_MULTISEG);
	return -ENOBUFS;
}

static bool ip6_is_ext(uint8_t proto)
{
	switch (proto) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_FRAGMENT:
	case IPPROTO_DSTOPTS:
	case IPPROTO_AH:
	case IPPROTO_ESP:
		return true;
	}
	return false;
}

/*
 * A sender that leaves its UDP checksum to offload (veth, containers, VMs)
 * puts only the pseudo-header sum in the field; af_packet and pcap hand it
 * on as is (DPDK 22.11's af_packet drops the kernel's CSUMNOTREADY mark).
 * Dust authenticates every datagram, so such a checksum need not lose it.
 */
static bool udp_csum_ok(const struct dgw_worker *w, const struct rte_mbuf *m, const void *ip,
                        const struct rte_udp_hdr *udp, bool v6)
{
	uint64_t fl = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	uint8_t mode = w->gw->net_csum;

	/* NONE: the field is unfinished but the PMD vouches for the data. */
	if (mode == DGW_CSUM_IGNORE || fl == RTE_MBUF_F_RX_L4_CKSUM_GOOD ||
	    fl == RTE_MBUF_F_RX_L4_CKSUM_NONE)
		return true;
	if (fl == RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return false;
	if (v6 ? rte_ipv6_udptcp_cksum_verify(ip, udp) == 0
	       : rte_ipv4_udptcp_cksum_verify(ip, udp) == 0)
		return true;
	return mode == DGW_CSUM_PARTIAL &&
	       udp->dgram_cksum == (v6 ? rte_ipv6_phdr_cksum(ip, 0) : rte_ipv4_phdr_cksum(ip, 0));
}

static int udp_check(struct dgw_worker *w, struct rte_mbuf *m, struct rte_udp_hdr *udp,
                     uint32_t room, struct dgw_rx *rx)
{
	uint16_t ulen = rte_be_to_cpu_16(udp->dgram_len);

	if (ulen < sizeof(*udp) || ulen > room)
		return drop(w, m, DGW_DROP_BAD_UDP);
	uint16_t dport = rte_be_to_cpu_16(udp->dst_port);

	if (dport == w->gw->cfg.udp_port)
		rx->profile = DUST_PROFILE_RANDOM;
	else if (dport == w->gw->cfg.quic_port && dport)
		rx->profile = DUST_PROFILE_QUIC;
	else
		return cover_or_drop(w, m, DGW_DROP_OTHER_PORT);
	rx->handed = false;
	rx->ticket = false;
	rx->ep.port = rte_be_to_cpu_16(udp->src_port);
	rx->dg = (uint8_t *)(udp + 1);
	rx->len = ulen - sizeof(*udp);
	return DGW_RX_DUST;
}

static int parse_ip4(struct dgw_worker *w, struct rte_mbuf *m, struct rte_ipv4_hdr *ip,
                     struct dgw_rx *rx)
{
	uint32_t room = m->data_len - DGW_ETH_LEN;
	uint16_t ihl, tot;
	struct rte_udp_hdr *udp;

	if (room < sizeof(*ip))
		return drop(w, m, DGW_DROP_RUNT);
	ihl = (ip->version_ihl & 0xf) * 4;
	tot = rte_be_to_cpu_16(ip->total_length);
	if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(*ip) || tot < ihl || tot > room)
		return drop(w, m, DGW_DROP_BAD_IP);
	if ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) == RTE_MBUF_F_RX_IP_CKSUM_BAD ||
	    ((m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) != RTE_MBUF_F_RX_IP_CKSUM_GOOD &&
	     rte_raw_cksum(ip, ihl) != 0xffff))
		return drop(w, m, DGW_DROP_IP_CSUM);
	if (w->gw->cfg.ip4.family != 4 || memcmp(&ip->dst_addr, w->gw->cfg.ip4.a, 4) != 0)
		return drop(w, m, DGW_DROP_NOT_OURS);
	/* Dust never fragments; a real host reassembles (and answers) them */
	if (ip->fragment_offset & rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))
		return cover_or_drop(w, m, DGW_DROP_IP_FRAG);
	if (ip->next_proto_id != IPPROTO_UDP || tot < ihl + sizeof(*udp))
		return cover_or_drop(w, m, DGW_DROP_NOT_UDP);
	udp = (struct rte_udp_hdr *)((uint8_t *)ip + ihl);
	/* A zero UDP checksum means "none" in IPv4. */
	if (udp->dgram_cksum != 0 && !udp_csum_ok(w, m, ip, udp, false))
		return drop(w, m, DGW_DROP_UDP_CSUM);
	memset(&rx->ep, 0, sizeof(rx->ep));
	rx->ep.ip.family = 4;
	memcpy(rx->ep.ip.a, &ip->src_addr, 4);
	return udp_check(w, m, udp, tot - ihl, rx);
}

static int parse_ip6(struct dgw_worker *w, struct rte_mbuf *m, struct rte_ipv6_hdr *ip,
                     struct dgw_rx *rx)
{
	uint32_t room = m->data_len - DGW_ETH_LEN;
	uint16_t plen;
	struct rte_udp_hdr *udp;

	if (room < sizeof(*ip))
		return drop(w, m, DGW_DROP_RUNT);
	plen = rte_be_to_cpu_16(ip->payload_len);
	if ((rte_be_to_cpu_32(ip->vtc_flow) >> 28) != 6 || sizeof(*ip) + plen > room)
		return drop(w, m, DGW_DROP_BAD_IP);
	/* ND for our address is answered here; the rest (the kernel's own ND) is the cover's */
	if (ip->proto == IPPROTO_ICMPV6)
		return dgw_neigh_ns(w, m, &w->gw->net_mac, false)
		           ? DGW_RX_DONE
		           : cover_or_drop(w, m, DGW_DROP_NOT_UDP);
	if (w->gw->cfg.ip6.family != 6 || memcmp(ip->dst_addr, w->gw->cfg.ip6.a, 16) != 0)
		return drop(w, m, DGW_DROP_NOT_OURS);
	if (ip->proto != IPPROTO_UDP)
		return cover_or_drop(w, m,
		                     ip6_is_ext(ip->proto) ? DGW_DROP_IP6_EXT : DGW_DROP_NOT_UDP);
	if (plen < sizeof(*udp))
		return drop(w, m, DGW_DROP_BAD_UDP);
	udp = (struct rte_udp_hdr *)(ip + 1);
	/* IPv6 forbids a zero UDP checksum. */
	if (udp->dgram_cksum == 0 || !udp_csum_ok(w, m, ip, udp, true))
		return drop(w, m, DGW_DROP_UDP_CSUM);
	memset(&rx->ep, 0, sizeof(rx->ep));
	rx->ep.ip.family = 6;
	memcpy(rx->ep.ip.a, ip->src_addr, 16);
	return udp_check(w, m, udp, plen, rx);
}

int dgw_net_classify(struct dgw_worker *w, struct rte_mbuf *m, struct dgw_rx *rx)
{
	struct rte_ether_hdr *eth;

	if (dgw_ensure_linear(w, m) != 0) {
		rte_pktmbuf_free(m);
		return DGW_RX_DONE;
	}
	if (m->data_len < DGW_ETH_LEN)
		return drop(w, m, DGW_DROP_RUNT);
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	rx->mac = dgw_mac_load(&eth->src_addr);
	switch (rte_be_to_cpu_16(eth->ether_type)) {
	case RTE_ETHER_TYPE_IPV4:
		return parse_ip4(w, m, (struct rte_ipv4_hdr *)(eth + 1), rx);
	case RTE_ETHER_TYPE_IPV6:
		return parse_ip6(w, m, (struct rte_ipv6_hdr *)(eth + 1), rx);
	case RTE_ETHER_TYPE_ARP:
		/* requests for our address answered here; replies to the kernel's own go to it */
		return dgw_neigh_arp(w, m, &w->gw->net_mac, false)
		           ? DGW_RX_DONE
		           : cover_or_drop(w, m, DGW_DROP_ARP_OTHER);
	}
	return drop(w, m, DGW_DROP_NOT_IP);
}

uint16_t dgw_net_outer_len(const struct dust_endpoint *to)
{
	return to->ip.family == 6 ? DGW_OUTER6_LEN : DGW_OUTER4_LEN;
}

static void outer4(struct dgw *gw, struct rte_ipv4_hdr *ip, const struct dust_endpoint *to,
                   uint16_t l4len, uint16_t sport)
{
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	dgw_udp4_hdrs(ip, gw->cfg.ip4.a, to->ip.a, sport, to->port, l4len, 0);
	DUST_PROF_LAP(FRAME);
	udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	DUST_PROF_LAP(CSUM);
}

static void outer6(struct dgw *gw, struct rte_ipv6_hdr *ip, const struct dust_endpoint *to,
                   uint16_t l4len, uint16_t sport)
{
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);

	ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16(l4len);
	ip->proto = IPPROTO_UDP;
	ip->hop_limits = 64;
	memcpy(ip->src_addr, gw->cfg.ip6.a, 16);
	memcpy(ip->dst_addr, to->ip.a, 16);
	udp->src_port = rte_cpu_to_be_16(sport);
	udp->dst_port = rte_cpu_to_be_16(to->port);
	udp->dgram_len = rte_cpu_to_be_16(l4len);
	udp->dgram_cksum = 0;
	DUST_PROF_LAP(FRAME);
	udp->dgram_cksum = rte_ipv6_udptcp_cksum(ip, udp);
	DUST_PROF_LAP(CSUM);
}

/*
 * m's data starts with dgw_net_outer_len(to) bytes of room followed by
 * dust_len bytes of Dust: fill the room with Ethernet/IP/UDP toward to.
 */
int dgw_net_outer(struct dgw_worker *w, struct rte_mbuf *m, const struct dust_endpoint *to,
                  uint64_t mac, uint16_t dust_len, uint8_t profile)
{
	struct dgw *gw = w->gw;
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	uint16_t l4len = sizeof(struct rte_udp_hdr) + dust_len;
	uint16_t sport = profile == DUST_PROFILE_QUIC ? gw->cfg.quic_port : gw->cfg.udp_port;

	if ((to->ip.family == 4 && gw->cfg.ip4.family != 4) ||
	    (to->ip.family == 6 && gw->cfg.ip6.family != 6) ||
	    (to->ip.family != 4 && to->ip.family != 6)) {
		dgw_count_drop(w, DGW_DROP_NO_SRC_ADDR);
		return -EAFNOSUPPORT;
	}
	dgw_mac_store(&eth->dst_addr, mac);
	rte_ether_addr_copy(&gw->net_mac, &eth->src_addr);
	if (to->ip.family == 4) {
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
		outer4(gw, (struct rte_ipv4_hdr *)(eth + 1), to, l4len, sport);
	} else {
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
		outer6(gw, (struct rte_ipv6_hdr *)(eth + 1), to, l4len, sport);
	}
	m->data_len = dgw_net_outer_len(to) + dust_len;
	m->pkt_len = m->data_len;
	return 0;
}
