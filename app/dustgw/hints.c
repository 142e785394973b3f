/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Things a new operator trips over, said where they happen: the outer UDP
 * checksum policy each port type needs, and a rate-limited log line naming
 * cause and fix when datagrams are dropped for their UDP checksum.
 */
#include <inttypes.h>
#include <string.h>

#include <rte_cycles.h>

#include "dgw_pvt.h"
#include "hints.h"

enum { HINT_EVERY_S = 60 };

/*
 * Ports fed by the kernel's packet path see what local senders (veths,
 * containers, VMs) left for checksum offload; a NIC PMD sees finished
 * checksums or reports the hardware's verdict in ol_flags.
 */
static bool kernel_fed(const char *driver)
{
	static const char *const names[] = {"net_af_packet", "net_af_xdp", "net_pcap", "net_tap"};

	for (size_t i = 0; i < RTE_DIM(names); i++)
		if (!strcmp(driver, names[i]))
			return true;
	return false;
}

void dgw_csum_resolve(struct dgw *gw)
{
	struct rte_eth_dev_info info;

	gw->net_csum = gw->cfg.udp_csum;
	if (gw->net_csum != DGW_CSUM_AUTO)
		return;
	gw->net_csum = DGW_CSUM_VERIFY;
	if (rte_eth_dev_info_get(gw->net_port, &info) == 0 && info.driver_name &&
	    kernel_fed(info.driver_name))
		gw->net_csum = DGW_CSUM_PARTIAL;
}

static const char *fix(uint8_t mode)
{
	if (mode == DGW_CSUM_VERIFY)
		return "senders that leave checksums to offload (veth, containers, VMs) send "
		       "unfinished ones: set [gateway] udp_checksum = auto (accepts those) or "
		       "ignore (Dust authenticates every datagram), or turn offload off at the "
		       "sender (ethtool -K IFACE tx off)";
	if (mode == DGW_CSUM_IGNORE)
		return "IPv6 UDP with a zero checksum, which IPv6 forbids";
	return "the checksum is wrong, not merely left for offload (corruption on the way, or "
	       "a sender's offload this gateway does not recognise): if these are your "
	       "clients, set [gateway] udp_checksum = ignore (Dust authenticates every datagram)";
}

/* Main lcore: the first udp_csum drops at once, then at most one line a minute. */
void dgw_hint_csum(struct dgw *gw, uint64_t now_tsc)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < gw->nworkers; i++)
		n += __atomic_load_n(&gw->w[i]->st.drop[DGW_DROP_UDP_CSUM], __ATOMIC_RELAXED);
	if (n == gw->csum_logged ||
	    (gw->csum_logged && now_tsc - gw->csum_log_tsc < HINT_EVERY_S * rte_get_tsc_hz()))
		return;
	DGW_LOG(WARNING, "%" PRIu64 " UDP datagram%s dropped for a bad UDP checksum (udp_csum); %s",
	        n - gw->csum_logged, n - gw->csum_logged > 1 ? "s" : "", fix(gw->net_csum));
	gw->csum_logged = n;
	gw->csum_log_tsc = now_tsc;
}
