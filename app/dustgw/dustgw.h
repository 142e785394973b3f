/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dustgw_core: the gateway's data plane as a static library, so that the
 * dustgw executable (main.c) and bench/ drive the same loop.
 *
 * An embedder (after dust_init() and rte_eal_init()):
 *
 *	struct dgw_config cfg;
 *	dgw_config_defaults(&cfg);
 *	dgw_config_load(&cfg, "dustgw.conf");    // or fill cfg by hand
 *	struct dgw *gw = dgw_create(&cfg);        // key, store, tables, maps, RCU
 *	dgw_ports_setup(gw);                      // or dgw_ports_use(gw, net, dlv)
 *	dgw_run(gw);       // workers on every worker lcore, main loop until
 *	                   // dgw_stop() or exit-on-idle; returns when all stopped
 *	dgw_stats_print(gw, stdout);
 *	dgw_destroy(gw);
 *
 * Worker w (0..queues-1) runs dgw_worker_main() on the w-th worker lcore
 * and owns RX/TX queue w of both ports. Functions return 0 or -errno;
 * dgw_create returns NULL with errno and a message on stderr.
 */
#ifndef DUSTGW_H
#define DUSTGW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <dust.h>

#include "shape.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { DGW_NAME_MAX = 128, DGW_PATH_MAX = 512, DGW_MAX_WORKERS = 64 };

/** Where the gateway's clock comes from. */
enum dgw_clock {
	DGW_CLOCK_REAL = 0,    /**< the system's wall clock */
	DGW_CLOCK_CAPTURE = 1, /**< replay: the RX timestamps of the net port (replay.c) */
};

/** How cleartext is framed on the delivery port. */
enum dgw_framing {
	DGW_FRAME_ETH = 0, /**< Ethernet II: dst delivery_mac, src port MAC, type 0x0800/0x86dd */
	DGW_FRAME_RAW = 1, /**< bare IP packet (net_tun, rings of IP packets) */
};

/** How workers wait for packets ([runtime] poll). */
enum dgw_poll {
	DGW_POLL_AUTO = 0, /**< ADAPTIVE for a live run, BUSY for replay (exit on idle) */
	DGW_POLL_BUSY,     /**< spin on the RX queues: lowest latency, a core per worker */
	DGW_POLL_ADAPTIVE, /**< after empty polls, sleep with growing naps up to a cap */
};

/** Outer UDP checksums on the net port ([gateway] udp_checksum). */
enum dgw_csum {
	DGW_CSUM_AUTO = 0, /**< by port type: PARTIAL on kernel-fed ports, else VERIFY */
	DGW_CSUM_VERIFY,   /**< every checksum must be right */
	DGW_CSUM_IGNORE,   /**< not checked (Dust authenticates each datagram) */
	DGW_CSUM_PARTIAL,  /**< checked, but one left for offload (pseudo-header sum) passes */
};

struct dgw_config {
	struct dust_ipaddr ip4;        /**< gateway IPv4 (family 0: none) */
	struct dust_ipaddr ip6;        /**< gateway IPv6 (family 0: none) */
	uint16_t udp_port;             /**< Dust UDP port, random profile */
	uint16_t quic_port;            /**< quic profile's UDP port (SPEC §12); 0 = off */
	char net_port[DGW_NAME_MAX];   /**< DPDK port name or index, client side */
	char dlv_port[DGW_NAME_MAX];   /**< delivery side */
	uint16_t queues;               /**< RX/TX queues per port = worker lcores */
	uint32_t mbufs;                /**< mbuf pool size */
	uint16_t rxd, txd;             /**< descriptors per queue */
	char key_file[DGW_PATH_MAX];   /**< server identity (0600) */
	char store_path[DGW_PATH_MAX]; /**< invitation store */
	uint32_t sessions_per_lcore;
	uint32_t idle_timeout_s;  /**< session idle expiry */
	uint32_t evict_idle_s;    /**< full table: an intro may evict a session idle this long */
	bool path_validation;     /**< 3x limit toward unproved client addresses (SPEC §9.1) */
	bool ack_thin;            /**< thin superseded inner TCP ACKs per burst (SPEC §9.2) */
	struct dust_limits lim;   /**< ts window */
	struct dust_pad pad;      /**< padding of packets we send */
	uint32_t drain_us;        /**< TX buffer drain interval */
	uint32_t intro_share;     /**< % of a busy worker for intros (slow.c) */
	uint32_t exit_on_idle_ms; /**< 0: run until a signal */
	uint32_t dlv_hold_ms;     /**< replay: delivery RX waits until net RX idle this long */
	uint8_t framing;          /**< enum dgw_framing */
	bool dlv_mac_set;
	uint8_t dlv_mac[6]; /**< dst MAC of delivered frames (default: port's own) */
	bool proxy_arp;     /**< answer ARP/ND on the delivery port (tunnel side) */
	uint8_t clock;      /**< enum dgw_clock; CAPTURE also opens the store read-only */
	uint8_t udp_csum;   /**< enum dgw_csum */
	uint8_t poll;       /**< enum dgw_poll */
	/** ADAPTIVE: the longest nap (bounds the wake-up latency) */
	uint32_t poll_nap_max_us;
	/** [telemetry] prometheus: "ADDR:PORT" of the /metrics endpoint; "" = off */
	char prometheus[64];
	/** [quic] cover: where what is not Dust goes (SPEC §12.5); enum dgw_cover */
	uint8_t cover;
	char cover_iface[16];       /**< the tap's kernel interface name */
	uint32_t cover_rate;        /**< frames/s handed over, whole gateway */
	uint32_t cover_prefix_rate; /**< frames/s handed over from one /24 or /48 */
	uint32_t cover_flows;       /**< quic flows remembered per worker */
	uint32_t cover_idle_s;      /**< a remembered flow is forgotten after this idle time */
	/** learn the first flight's shape from the cover server this often; 0 = never */
	uint32_t cover_learn_s;
	char cover_learn_sni[DUST_COVER_SNI_MAX + 1]; /**< the probe hellos' SNI */
	struct dust_ipaddr cover_learn_src;           /**< the probe hellos' source (IPv4) */
	/** the first flight's shape until one is learned ([quic] shape_*; SPEC §12.3) */
	struct dgw_shape shape;
	bool pacing;    /**< [quic] pacing = cover: downstream gaps as the cover's */
	bool quic_acks; /**< [quic] acks = cover: ACK-sized datagrams to clients */
	bool quic_pmtu; /**< [quic] pmtu = cover: path MTU discovery as quic-go's */
	/** [quic] answer_hold = cover: the flight after its ACK waits for the client's probe */
	bool quic_hold;
};

/** [quic] cover */
enum dgw_cover {
	DGW_COVER_OFF = 0, /**< not Dust: dropped and counted (the random port, always) */
	DGW_COVER_TAP,     /**< not Dust: to a net_tap kernel interface, a real server behind */
};

struct dgw;

/** Sensible defaults (port 4433, 1 queue, 8191 mbufs, 4096 sessions...). */
void dgw_config_defaults(struct dgw_config *cfg);
/** Read an INI file over cfg; -errno and a message in err on failure. */
int dgw_config_load(struct dgw_config *cfg, const char *path, char *err, size_t errlen);

struct dgw *dgw_create(const struct dgw_config *cfg);
/** Resolve, configure and start both ports from cfg (pool sized by cfg). */
int dgw_ports_setup(struct dgw *gw);
/** Use ports the caller configured and started itself (queues as cfg). */
int dgw_ports_use(struct dgw *gw, uint16_t net_port, uint16_t dlv_port);
/** Launch workers, run the main lcore loop; returns after every worker stopped. */
int dgw_run(struct dgw *gw);
/** Ask everything to stop (signal-safe). */
void dgw_stop(struct dgw *gw);
/** One worker's loop; arg is from dgw_worker_arg(). For rte_eal_remote_launch. */
int dgw_worker_main(void *arg);
void *dgw_worker_arg(struct dgw *gw, unsigned w);
void dgw_destroy(struct dgw *gw);
struct rte_mempool;
/** The gateway's mbuf pool (for an embedder that feeds its ports). */
struct rte_mempool *dgw_pool(struct dgw *gw);

/* ---- Stats --------------------------------------------------------------- */

/** Event counters (not drops). */
enum dgw_ctr {
	DGW_CTR_NET_RX = 0,  /**< frames read on the net port */
	DGW_CTR_NET_TX,      /**< frames sent on the net port */
	DGW_CTR_DLV_RX,      /**< frames read on the delivery port */
	DGW_CTR_DLV_TX,      /**< frames sent on the delivery port */
	DGW_CTR_DECODED,     /**< Dust data packets authenticated */
	DGW_CTR_DELIVERED,   /**< inner packets delivered */
	DGW_CTR_ENCODED,     /**< inner packets sealed toward a client */
	DGW_CTR_INTRO_OK,    /**< intros accepted */
	DGW_CTR_INTRO_FIRST, /**< of which bound an invitation */
	DGW_CTR_KA_RX,       /**< keepalives received */
	DGW_CTR_KA_TX,       /**< keepalives sent */
	DGW_CTR_ARP_REPLY,
	DGW_CTR_ND_REPLY,
	DGW_CTR_SESS_EXPIRED,
	DGW_CTR_SESS_EVICTED,      /**< replaced by an intro elsewhere */
	DGW_CTR_SESS_EVICTED_IDLE, /**< full table: the idlest made room for an intro */
	DGW_CTR_QUIC_ANSWER,       /**< quic profile: server first flights sent */
	DGW_CTR_QUIC_MIGRATED,     /**< quic profile: sessions moved to a new address by CID */
	DGW_CTR_SESS_REVOKED,      /**< its invitation was revoked */
	DGW_CTR_MSS_CLAMPED,       /**< quic profile: inner TCP SYNs whose MSS was lowered */
	DGW_CTR_ICMP_TOO_BIG,      /**< quic profile: ICMP too-big errors sent back */
	DGW_CTR_PATH_CHALLENGE,    /**< path challenges sent to a moved session's address */
	DGW_CTR_PATH_VALIDATED,    /**< new or moved addresses that proved they receive */
	DGW_CTR_COVER_IN,          /**< frames handed to the cover server (kernel tap) */
	DGW_CTR_COVER_OUT,         /**< frames from the cover server's tap sent on the net port */
	DGW_CTR_COVER_FLOWS,       /**< quic flows remembered as the cover server's */
	DGW_CTR_COVER_FLOW_FULL,   /**< flow table full: handed over, not remembered */
	DGW_CTR_MSG_BACKLOG,       /**< RETIRED messages that waited for room in the main ring */
	DGW_CTR_HANDOFF_TX,        /**< quic short headers handed to the worker owning their CID */
	DGW_CTR_HANDOFF_RX,        /**< quic short headers taken from another worker's handoff */
	DGW_CTR_PACED,             /**< quic datagrams held by the pacer for their departure */
	DGW_CTR_HELLO_HELD,        /**< quic hellos' first Initials held for their second */
	DGW_CTR_HELLO_PAIRED,      /**< held first Initials whose second came: one hello */
	DGW_CTR_HELLO_UNPAIRED,    /**< held first Initials with no second, to the cover server */
	DGW_CTR_HELLO_REPLAYED,    /**< copies of a hello's first Initial seen before (a replay),
	                                handed to the cover server at once, never held */
	DGW_CTR_QUIC_INITIAL_QUEUED, /**< quic client Initials run from the slow queue */
	DGW_CTR_QUIC_CONFIRM_ACK, /**< clients' padded Initial+Handshake ACK datagrams passed by */
	DGW_CTR_QUIC_CONFIRM_OLD, /**< previous release's confirmations (one Handshake packet) */
	DGW_CTR_QUIC_HS_ACKS,     /**< Handshake ACKs sent after clients' second flights */
	DGW_CTR_QUIC_HS_DONE,     /**< HANDSHAKE_DONE-sized datagrams sent after the ACKs */
	DGW_CTR_QUIC_HELD,        /**< first flights held after their ACK for the client's probe */
	DGW_CTR_QUIC_PROBED,      /**< held flights whose client's PTO probe came: sent soon */
	DGW_CTR_PMTU_PROBES,      /**< quic path MTU probes sent */
	DGW_CTR_PMTU_RAISED,      /**< quic path MTU probes answered: the session's bound raised */
	DGW_CTR_QUIC_RTX_HELLO,   /**< retransmitted hellos answered with their flight again */
	DGW_CTR_QUIC_RTX_PTO,     /**< first flights resent on the PTO */
	DGW_CTR_QUIC_RTX_PTO_HS,  /**< of which the Handshake packet alone and the tail */
	DGW_CTR_QUIC_RTX_DONE,    /**< kept flights ended: confirmed, or the session left */
	DGW_CTR_QUIC_RTX_EXPIRED, /**< kept flights given up after the last PTO, unconfirmed */
	DGW_CTR_QUIC_RTX_EVICTED, /**< kept flights pushed out of a full table */
	DGW_CTR_QUIC_RTX_LIMITED, /**< resends stopped at 3x what the address sent */
	DGW_CTR_QUIC_RTX_CLOSED,  /**< kept flights ended by the client's CONNECTION_CLOSE */
	DGW_CTR_COVER_LEARN_OK,   /**< rounds that learned the first flight's shape (learn.c) */
	DGW_CTR_COVER_LEARN_FAIL, /**< rounds with no answer of that shape from the cover server */
	DGW_CTR_COVER_LEARN_RX,   /**< frames to the probe address, kept from the net port */
	DGW_CTR_QUIC_ACKS,        /**< a session's short headers under any Dust packet, passed by */
	DGW_CTR_QUIC_ACKS_TX,     /**< ACK-sized datagrams sent to quic clients */
	DGW_CTR_QUIC_COMPACT,     /**< compact packets opened (SPEC §6.5) */
	DGW_CTR_ACKZ_BAD,         /**< compact packets whose compressed ACK did not rebuild */
	DGW_CTR_ACKS_THINNED,     /**< inner TCP ACKs a newer one of the same burst superseded */
	DGW_CTR_MAX
};

/**
 * Drop reasons: 1..DUST_DROP_MAX-1 are the library's enum dust_drop, the
 * rest are the gateway's own. Index 0 is unused (DUST_OK).
 */
enum dgw_drop {
	DGW_DROP_RUNT = DUST_DROP_MAX, /**< frame shorter than its headers */
	DGW_DROP_NOT_IP,               /**< ethertype we do not handle */
	DGW_DROP_ARP_OTHER,            /**< ARP not asking for our address */
	DGW_DROP_BAD_IP,               /**< bad IP version, header or length */
	DGW_DROP_IP_CSUM,              /**< bad IPv4 header checksum */
	DGW_DROP_IP_FRAG,              /**< IPv4 fragment */
	DGW_DROP_IP6_EXT,              /**< IPv6 extension headers */
	DGW_DROP_NOT_OURS,             /**< destination is not our address */
	DGW_DROP_NOT_UDP,              /**< other L4 protocol (or ICMPv6 we do not answer) */
	DGW_DROP_OTHER_PORT,           /**< UDP to another port */
	DGW_DROP_BAD_UDP,              /**< UDP length inconsistent */
	DGW_DROP_UDP_CSUM,             /**< bad UDP checksum */
	DGW_DROP_MULTISEG,             /**< could not linearise a chained mbuf */
	DGW_DROP_TABLE_FULL,           /**< session table full: intro refused */
	DGW_DROP_PENDING_FULL,         /**< too many first uses waiting for their binding's fsync */
	DGW_DROP_INNER_BAD,            /**< decoded data is not one IP packet */
	DGW_DROP_INNER_SRC,            /**< inner source is not the session's tunnel address */
	DGW_DROP_DLV_NOT_IP,           /**< delivery side frame not IP */
	DGW_DROP_NO_TUNNEL,            /**< inner destination is no invitation's address */
	DGW_DROP_DLV_LOCAL,            /**< multicast/broadcast/link-local from the delivery host
	                                    (a TAP kernel's IPv6 RS, MLD...): for no client */
	DGW_DROP_NO_SESSION,           /**< invitation has no live session */
	DGW_DROP_NO_SRC_ADDR,          /**< client's family has no gateway address */
	DGW_DROP_TOO_BIG,              /**< sealed packet does not fit the mbuf */
	DGW_DROP_SEAL,                 /**< seal refused (key exhausted) */
	DGW_DROP_NO_MBUF,              /**< mbuf pool empty */
	DGW_DROP_TX_FULL,              /**< TX queue did not take the packet */
	DGW_DROP_QUIC_NO_SESSION,      /**< quic short header: no session for its address or CID */
	DGW_DROP_QUIC_LONG,            /**< quic long header that is no client Initial */
	DGW_DROP_UNPUBLISHED,          /**< intro's session retired before it was published */
	DGW_DROP_QUIC_TOO_BIG,         /**< inner packet over the quic bound toward its client
	                                    (SPEC §12.4): answered with ICMP too-big */
	DGW_DROP_ENDPOINT_BUSY,        /**< intro for another invitation from an address whose
	                                    session is live (SPEC §9): not tried, nothing retired */
	DGW_DROP_PATH_LIMIT,           /**< toward an address not yet validated: over 3x what
	                                    it sent (SPEC §9.1) */
	DGW_DROP_PATH_ECHO,            /**< a path response that echoes no challenge of ours */
	DGW_DROP_COVER_RATE,           /**< not Dust, over [quic] cover_rate */
	DGW_DROP_COVER_PREFIX_RATE, /**< not Dust, over [quic] cover_prefix_rate for its prefix */
	DGW_DROP_COVER_TX_FULL,     /**< the cover tap's TX queue did not take the frame */
	DGW_DROP_HANDOFF_FULL,      /**< the CID owner's handoff ring did not take the datagram */
	DGW_DROP_PACE_FULL,         /**< quic datagram past the pacer's horizon or room */
	DGW_DROP_HELLO_UNPAIRED,    /**< a held first Initial whose second did not come in time,
	                                 or pushed out of a full table (no cover server), or
	                                 replaced by a resend of the same first half */
	DGW_DROP_HELLO_REPLAYED,    /**< a copy of a hello's first Initial seen before (a replay;
	                                 no cover server) */
	DGW_DROP_QUIC_CONFIRM,      /**< a long header to a session's CID of no confirmation's
	                                 shape (SPEC §12.3) */
	DGW_DROP_QUIC_RTX_PAIR,     /**< a retransmitted hello's second Initial: its first was
	                                 answered */
	DGW_DROP_MAX
};

struct dgw_stats {
	uint64_t ctr[DGW_CTR_MAX];
	uint64_t drop[DGW_DROP_MAX];
	uint64_t sessions; /**< live sessions in this lcore's table */
} __attribute__((aligned(64)));

const char *dgw_ctr_name(unsigned c);
/** Its HELP text on /metrics (its name where it has none). */
const char *dgw_ctr_help(unsigned c);
const char *dgw_drop_name(unsigned d);
unsigned dgw_stats_workers(const struct dgw *gw);
/** Snapshot of worker w (w == UINT32_MAX: sum of all). */
void dgw_stats_get(const struct dgw *gw, unsigned w, struct dgw_stats *out);
/** lcore id of worker w. */
unsigned dgw_stats_lcore(const struct dgw *gw, unsigned w);
/**
 * What waits in worker w's queues at this moment (tests, telemetry); any
 * thread may ask, each field is read on its own.
 */
struct dgw_depths {
	unsigned pending; /**< first uses waiting for their binding to be durable */
	unsigned pubwait; /**< accepted intros' answers waiting for publication */
	unsigned slow;    /**< datagrams with no session waiting in the slow queue */
	unsigned inbox;   /**< messages from the main lcore not read yet */
	bool busy;        /**< the worker is handling a burst from the net port */
};
void dgw_worker_depths(const struct dgw *gw, unsigned w, struct dgw_depths *out);
/** Human summary: per lcore counters and every nonzero drop reason. */
void dgw_stats_print(const struct dgw *gw, FILE *f);
/** Machine-readable totals, one "name value" per line (ctr.X, drop.X, lcoreN.X). */
int dgw_stats_write(const struct dgw *gw, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* DUSTGW_H */
