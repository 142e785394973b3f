/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The gateway's INI configuration, read with DPDK's rte_cfgfile. Every key
 * is checked: an unknown key or a bad value is an error naming the section,
 * the key and the value, so a typo never silently falls back to a default.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <rte_cfgfile.h>
#include <rte_ether.h>

#include <rte_common.h>

#include "dustgw.h"
#include "promserve.h"

struct cfg_ctx {
	struct rte_cfgfile *f;
	char *err;
	size_t errlen;
};

/* One row per section, as many keys to a line as fit. */
/* clang-format off */
static const char *const known_keys[][24] = {
    {"gateway", "ipv4", "ipv6", "udp_port", "quic_port", "key_file", "store", "udp_checksum", NULL},
    {"ports", "net", "delivery", "queues", "mbufs", "rx_desc", "tx_desc", "delivery_framing",
     "delivery_mac", "proxy_arp", NULL},
    {"sessions", "max_per_lcore", "idle_timeout_s", "ts_window_s", "evict_idle_s",
     "path_validation", "ack_thin", NULL},
    {"padding", "mode", "min", "max", "mtu", NULL},
    {"runtime", "drain_us", "exit_on_idle_ms", "delivery_hold_ms", "clock", "poll",
     "poll_nap_max_us", "intro_share", NULL},
    {"telemetry", "prometheus", NULL},
    {"quic", "cover", "cover_iface", "cover_rate", "cover_prefix_rate", "cover_flows",
     "cover_idle_s", "sizes", "pacing", "acks", "pmtu", "answer_hold", "cover_learn_s", "cover_learn_sni",
     "cover_learn_src", "shape_answer", "shape_tail_min", "shape_tail_max", "shape_pto_ms",
     "shape_ack", "shape_short", "shape_short_tail", "shape_coalesce", NULL},
    {"random", "cover", NULL},
};
/* clang-format on */

void dgw_config_defaults(struct dgw_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->udp_port = 4433;
	strcpy(cfg->net_port, "0");
	strcpy(cfg->dlv_port, "1");
	cfg->queues = 1;
	cfg->mbufs = 8191;
	cfg->rxd = 1024;
	cfg->txd = 1024;
	cfg->sessions_per_lcore = 4096;
	cfg->idle_timeout_s = 180;
	cfg->evict_idle_s = 15;
	cfg->path_validation = true;
	cfg->ack_thin = true;
	dust_limits_default(&cfg->lim);
	dust_pad_default(&cfg->pad);
	cfg->drain_us = 100;
	cfg->intro_share = 5;
	cfg->poll_nap_max_us = 200;
	cfg->proxy_arp = true;
	strcpy(cfg->cover_iface, "dgwcover0");
	cfg->cover_rate = 20000;
	cfg->cover_prefix_rate = 2000;
	cfg->cover_flows = 16384;
	cfg->cover_idle_s = 60;
	cfg->cover_learn_s = 300;
	/* TEST-NET-1 (RFC 5737): never routed, so no real host answers for it */
	cfg->cover_learn_src = (struct dust_ipaddr){.family = 4, .a = {192, 0, 2, 1}};
	dgw_shape_default(&cfg->shape);
	cfg->pacing = true;
	cfg->quic_acks = true;
	cfg->quic_pmtu = true;
	cfg->quic_hold = true;
}

static int fail(struct cfg_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const char *get(struct cfg_ctx *c, const char *sec, const char *key)
{
	return rte_cfgfile_get_entry(c->f, sec, key);
}

static int get_uint(struct cfg_ctx *c, const char *sec, const char *key, uint64_t lo, uint64_t hi,
                    uint64_t *out)
{
	const char *v = get(c, sec, key);
	char *end;
	unsigned long long x;

	if (!v)
		return 0;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || end == v || *end || v[0] == '-' || x < lo || x > hi)
		return fail(c, "[%s] %s = '%s': want an integer in %llu..%llu", sec, key, v,
		            (unsigned long long)lo, (unsigned long long)hi);
	*out = x;
	return 1;
}

#define GET_UINT(c, sec, key, lo, hi, dst)                                                         \
	do {                                                                                       \
		uint64_t v_;                                                                       \
		int r_ = get_uint(c, sec, key, lo, hi, &v_);                                       \
		if (r_ < 0)                                                                        \
			return r_;                                                                 \
		if (r_)                                                                            \
			(dst) = v_;                                                                \
	} while (0)

static int get_bool(struct cfg_ctx *c, const char *sec, const char *key, bool *out)
{
	const char *v = get(c, sec, key);

	if (!v)
		return 0;
	if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcmp(v, "1"))
		*out = true;
	else if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcmp(v, "0"))
		*out = false;
	else
		return fail(c, "[%s] %s = '%s': want yes or no", sec, key, v);
	return 0;
}

/* [sec] key as one of two words: *out = 0 for a, 1 for b, unchanged if absent. */
static int get_either(struct cfg_ctx *c, const char *sec, const char *key, const char *a,
                      const char *b, int *out)
{
	const char *v = get(c, sec, key);

	if (!v)
		return 0;
	if (!strcmp(v, a))
		*out = 0;
	else if (!strcmp(v, b))
		*out = 1;
	else
		return fail(c, "[%s] %s = '%s': want %s or %s", sec, key, v, a, b);
	return 0;
}

/* dst = va or vb as [sec] key says a or b; unchanged if absent. */
#define GET_EITHER(c, sec, key, a, va, b, vb, dst)                                                 \
	do {                                                                                       \
		int w_ = -1;                                                                       \
		int r_ = get_either(c, sec, key, a, b, &w_);                                       \
		if (r_)                                                                            \
			return r_;                                                                 \
		if (w_ >= 0)                                                                       \
			(dst) = w_ ? (vb) : (va);                                                  \
	} while (0)

/* [quic] key: true for "cover" or absent, false for the other word. */
static int get_cover(struct cfg_ctx *c, const char *key, const char *other, bool *cover)
{
	int w = 0;
	int rc = get_either(c, "quic", key, "cover", other, &w);

	if (!rc)
		*cover = w == 0;
	return rc;
}

static int get_str(struct cfg_ctx *c, const char *sec, const char *key, char *dst, size_t cap)
{
	const char *v = get(c, sec, key);

	if (!v)
		return 0;
	if (strlen(v) >= cap || !v[0])
		return fail(c, "[%s] %s: empty or longer than %zu bytes", sec, key, cap - 1);
	strcpy(dst, v);
	return 0;
}

static int get_addr(struct cfg_ctx *c, const char *sec, const char *key, int family,
                    struct dust_ipaddr *out)
{
	const char *v = get(c, sec, key);

	if (!v)
		return 0;
	if (dust_ipaddr_parse(out, v) != 0 || out->family != family)
		return fail(c, "[%s] %s = '%s': not an IPv%d address", sec, key, v, family);
	return 0;
}

static int check_keys(struct cfg_ctx *c)
{
	int nsec = rte_cfgfile_num_sections(c->f, NULL, 0);
	char names[16][CFG_NAME_LEN];
	char *pnames[16];

	if (nsec > 16)
		return fail(c, "too many sections (%d)", nsec);
	for (int i = 0; i < 16; i++)
		pnames[i] = names[i];
	rte_cfgfile_sections(c->f, pnames, nsec);
	for (int i = 0; i < nsec; i++) {
		const char *const *k = NULL;
		struct rte_cfgfile_entry ent[32];
		int n;

		for (size_t s = 0; s < RTE_DIM(known_keys); s++)
			if (!strcmp(known_keys[s][0], names[i]))
				k = known_keys[s];
		if (!k)
			return fail(c, "unknown section [%s]", names[i]);
		n = rte_cfgfile_section_entries(c->f, names[i], ent, RTE_DIM(ent));
		for (int e = 0; e < n; e++) {
			bool ok = false;

			for (int j = 1; k[j]; j++)
				ok |= !strcmp(k[j], ent[e].name);
			if (!ok)
				return fail(c, "[%s]: unknown key '%s'", names[i], ent[e].name);
		}
	}
	return 0;
}

static int load_gateway(struct cfg_ctx *c, struct dgw_config *cfg)
{
	const char *v;
	int rc;

	if ((rc = get_addr(c, "gateway", "ipv4", 4, &cfg->ip4)) ||
	    (rc = get_addr(c, "gateway", "ipv6", 6, &cfg->ip6)))
		return rc;
	GET_UINT(c, "gateway", "udp_port", 1, 65535, cfg->udp_port);
	GET_UINT(c, "gateway", "quic_port", 0, 65535, cfg->quic_port);
	if (cfg->quic_port == cfg->udp_port)
		return fail(c, "[gateway] quic_port: %u is already udp_port (one profile per port)",
		            cfg->quic_port);
	v = get(c, "gateway", "udp_checksum");
	if (v && !strcmp(v, "auto"))
		cfg->udp_csum = DGW_CSUM_AUTO;
	else if (v && !strcmp(v, "verify"))
		cfg->udp_csum = DGW_CSUM_VERIFY;
	else if (v && !strcmp(v, "ignore"))
		cfg->udp_csum = DGW_CSUM_IGNORE;
	else if (v)
		return fail(c, "[gateway] udp_checksum = '%s': want verify, ignore or auto", v);
	if ((rc = get_str(c, "gateway", "key_file", cfg->key_file, sizeof(cfg->key_file))) ||
	    (rc = get_str(c, "gateway", "store", cfg->store_path, sizeof(cfg->store_path))))
		return rc;
	return 0;
}

static int load_ports(struct cfg_ctx *c, struct dgw_config *cfg)
{
	const char *v;
	int rc;

	if ((rc = get_str(c, "ports", "net", cfg->net_port, sizeof(cfg->net_port))) ||
	    (rc = get_str(c, "ports", "delivery", cfg->dlv_port, sizeof(cfg->dlv_port))))
		return rc;
	GET_UINT(c, "ports", "queues", 1, DGW_MAX_WORKERS, cfg->queues);
	GET_UINT(c, "ports", "mbufs", 1023, 1u << 26, cfg->mbufs);
	GET_UINT(c, "ports", "rx_desc", 32, 32768, cfg->rxd);
	GET_UINT(c, "ports", "tx_desc", 32, 32768, cfg->txd);
	GET_EITHER(c, "ports", "delivery_framing", "eth", DGW_FRAME_ETH, "raw", DGW_FRAME_RAW,
	           cfg->framing);
	v = get(c, "ports", "delivery_mac");
	if (v) {
		struct rte_ether_addr a;

		if (rte_ether_unformat_addr(v, &a) != 0)
			return fail(c, "[ports] delivery_mac = '%s': not a MAC address", v);
		memcpy(cfg->dlv_mac, a.addr_bytes, 6);
		cfg->dlv_mac_set = true;
	}
	return get_bool(c, "ports", "proxy_arp", &cfg->proxy_arp);
}

static int load_sessions(struct cfg_ctx *c, struct dgw_config *cfg)
{
	GET_UINT(c, "sessions", "max_per_lcore", 1, 1u << 24, cfg->sessions_per_lcore);
	GET_UINT(c, "sessions", "idle_timeout_s", 1, 86400 * 7, cfg->idle_timeout_s);
	GET_UINT(c, "sessions", "ts_window_s", 1, 3600, cfg->lim.ts_window_s);
	GET_UINT(c, "sessions", "evict_idle_s", 0, 86400 * 7, cfg->evict_idle_s);
	int r = get_bool(c, "sessions", "path_validation", &cfg->path_validation);

	return r ? r : get_bool(c, "sessions", "ack_thin", &cfg->ack_thin);
}

static int load_padding(struct cfg_ctx *c, struct dgw_config *cfg)
{
	GET_EITHER(c, "padding", "mode", "uniform", DUST_PAD_UNIFORM, "fill", DUST_PAD_FILL,
	           cfg->pad.kind);
	GET_UINT(c, "padding", "min", 0, 65535, cfg->pad.min);
	GET_UINT(c, "padding", "max", 0, 65535, cfg->pad.max);
	GET_UINT(c, "padding", "mtu", 0, 65535, cfg->pad.mtu);
	if (cfg->pad.min > cfg->pad.max)
		return fail(c, "[padding] min %u > max %u", cfg->pad.min, cfg->pad.max);
	if (cfg->pad.kind == DUST_PAD_FILL && cfg->pad.mtu < DUST_DATA_OVERHEAD + 64)
		return fail(c, "[padding] mode = fill needs mtu >= %d", DUST_DATA_OVERHEAD + 64);
	return 0;
}

static int load_runtime(struct cfg_ctx *c, struct dgw_config *cfg)
{
	GET_EITHER(c, "runtime", "clock", "real", DGW_CLOCK_REAL, "capture", DGW_CLOCK_CAPTURE,
	           cfg->clock);
	GET_UINT(c, "runtime", "drain_us", 1, 1000000, cfg->drain_us);
	GET_EITHER(c, "runtime", "poll", "busy", DGW_POLL_BUSY, "adaptive", DGW_POLL_ADAPTIVE,
	           cfg->poll);
	GET_UINT(c, "runtime", "poll_nap_max_us", 10, 100000, cfg->poll_nap_max_us);
	GET_UINT(c, "runtime", "intro_share", 0, 90, cfg->intro_share);
	GET_UINT(c, "runtime", "exit_on_idle_ms", 0, UINT32_MAX, cfg->exit_on_idle_ms);
	GET_UINT(c, "runtime", "delivery_hold_ms", 0, UINT32_MAX, cfg->dlv_hold_ms);
	return 0;
}

/* Checked here, so that --check-config and a start both name a bad address. */
static int load_telemetry(struct cfg_ctx *c, struct dgw_config *cfg)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char why[128];
	int rc = get_str(c, "telemetry", "prometheus", cfg->prometheus, sizeof(cfg->prometheus));

	if (rc)
		return rc;
	if (cfg->prometheus[0] &&
	    prom_addr_parse(cfg->prometheus, &ss, &len, why, sizeof(why)) != 0)
		return fail(c, "[telemetry] prometheus = %s", why);
	return 0;
}

/* An interface name the kernel takes: [A-Za-z0-9_.-], under IFNAMSIZ (16). */
static bool iface_name_ok(const char *s)
{
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
			return false;
	return s[0] && strcmp(s, ".") && strcmp(s, "..");
}

/*
 * The cover server (SPEC §12.5): on the quic port only. The random port's
 * design is silence: nothing may answer there, so no cover is offered.
 */
static int load_cover(struct cfg_ctx *c, struct dgw_config *cfg)
{
	const char *v = get(c, "random", "cover");
	bool model;
	int rc;

	if (v && strcmp(v, "off") != 0)
		return fail(c,
		            "[random] cover = '%s': the random port stays silent (SPEC §5); "
		            "only [quic] cover may be on",
		            v);
	GET_EITHER(c, "quic", "cover", "off", DGW_COVER_OFF, "tap", DGW_COVER_TAP, cfg->cover);
	if ((rc = get_str(c, "quic", "cover_iface", cfg->cover_iface, sizeof(cfg->cover_iface))))
		return rc;
	if (!iface_name_ok(cfg->cover_iface))
		return fail(c, "[quic] cover_iface = '%s': not an interface name",
		            cfg->cover_iface);
	GET_UINT(c, "quic", "cover_rate", 1, 100000000, cfg->cover_rate);
	GET_UINT(c, "quic", "cover_prefix_rate", 1, 100000000, cfg->cover_prefix_rate);
	GET_UINT(c, "quic", "cover_flows", 64, 1u << 24, cfg->cover_flows);
	GET_UINT(c, "quic", "cover_idle_s", 1, 86400, cfg->cover_idle_s);
	if (cfg->cover != DGW_COVER_OFF && !cfg->quic_port)
		return fail(c, "[quic] cover = tap needs [gateway] quic_port");
	/* quic data sizes (SPEC §12.4): the cover's, or [data] padding as on the random port */
	if ((rc = get_cover(c, "sizes", "padding", &model)))
		return rc;
	cfg->pad.model = model;
	/* quic downstream pacing (SPEC §12.4): the cover's gaps within a burst, or none */
	if ((rc = get_cover(c, "pacing", "off", &cfg->pacing)))
		return rc;
	/* ACK-sized datagrams to quic clients (SPEC §12.4), as quic-go's ACK-only packets */
	if ((rc = get_cover(c, "acks", "off", &cfg->quic_acks)))
		return rc;
	/* path MTU discovery (SPEC §12.4), as quic-go's */
	if ((rc = get_cover(c, "pmtu", "off", &cfg->quic_pmtu)))
		return rc;
	/* the first flight after its ACK held for the client's PTO probe (SPEC §12.3) */
	return get_cover(c, "answer_hold", "off", &cfg->quic_hold);
}

/*
 * The first flight's shape (SPEC §12.3): the configured one, used where no
 * cover server is learned from, each value within what every client opens.
 */
static int load_shape(struct cfg_ctx *c, struct dgw_config *cfg)
{
	struct dgw_shape *sh = &cfg->shape;
	int rc;

	GET_UINT(c, "quic", "shape_answer", DGW_SHAPE_ANSWER_MIN, DGW_SHAPE_ANSWER_MAX, sh->answer);
	GET_UINT(c, "quic", "shape_tail_min", DGW_SHAPE_TAIL_LEAST, DGW_SHAPE_TAIL_MOST,
	         sh->tail_min);
	GET_UINT(c, "quic", "shape_tail_max", DGW_SHAPE_TAIL_LEAST, DGW_SHAPE_TAIL_MOST,
	         sh->tail_max);
	GET_UINT(c, "quic", "shape_pto_ms", DGW_SHAPE_PTO_MIN, DGW_SHAPE_PTO_MAX, sh->pto_ms);
	if ((rc = get_bool(c, "quic", "shape_ack", &sh->ack_first)))
		return rc;
	GET_UINT(c, "quic", "shape_short", 0, DGW_SHAPE_SHORT_MOST, sh->short_len);
	GET_UINT(c, "quic", "shape_short_tail", 0, DGW_SHAPE_TAIL_MOST, sh->short_tail);
	GET_UINT(c, "quic", "shape_coalesce", 0, DGW_SHAPE_COALESCE_MAX, sh->coalesce);
	if (sh->short_len && sh->short_len < DGW_SHAPE_SHORT_LEAST)
		return fail(c, "[quic] shape_short = %u: 0 (none) or %d..%d bytes", sh->short_len,
		            DGW_SHAPE_SHORT_LEAST, DGW_SHAPE_SHORT_MOST);
	if (sh->tail_min > sh->tail_max)
		return fail(c, "[quic] shape_tail_min = %u is over shape_tail_max = %u",
		            sh->tail_min, sh->tail_max);
	return 0;
}

/*
 * Learning the shape from the cover server (SPEC §12.5): its hellos name
 * cover_learn_sni (the server picks its certificate, and so the size of its
 * flight, by it) and come from cover_learn_src, which no real host may have.
 */
static int load_learn(struct cfg_ctx *c, struct dgw_config *cfg)
{
	struct dust_invite probe;
	int rc;

	GET_UINT(c, "quic", "cover_learn_s", 0, 86400, cfg->cover_learn_s);
	if ((rc = get_str(c, "quic", "cover_learn_sni", cfg->cover_learn_sni,
	                  sizeof(cfg->cover_learn_sni))) ||
	    (rc = get_addr(c, "quic", "cover_learn_src", 4, &cfg->cover_learn_src)))
		return rc;
	if (cfg->cover_learn_sni[0] && dust_invite_cover_set(&probe, cfg->cover_learn_sni) != 0)
		return fail(c,
		            "[quic] cover_learn_sni = '%s': not a host name (a-z, 0-9, '-', '.')",
		            cfg->cover_learn_sni);
	if (cfg->cover != DGW_COVER_TAP || !cfg->cover_learn_s)
		return 0;
	if (!cfg->cover_learn_sni[0])
		return fail(c,
		            "[quic] cover = tap learns the first flight's shape from the cover "
		            "server every cover_learn_s = %u s: set cover_learn_sni to the host "
		            "name of the quic invitations (dust-invite --cover-sni), or "
		            "cover_learn_s = 0 to keep the configured shape",
		            cfg->cover_learn_s);
	if (cfg->ip4.family != 4)
		return fail(c,
		            "[quic] cover_learn_s = %u: the learner probes over IPv4, and "
		            "[gateway] has no ipv4 (set cover_learn_s = 0)",
		            cfg->cover_learn_s);
	if (!memcmp(cfg->cover_learn_src.a, cfg->ip4.a, 4))
		return fail(c, "[quic] cover_learn_src is the gateway's own address: the kernel "
		               "drops what comes from its own address; take one no host has");
	return 0;
}

int dgw_config_load(struct dgw_config *cfg, const char *path, char *err, size_t errlen)
{
	struct cfg_ctx c = {.err = err, .errlen = errlen};
	int rc;

	if (access(path, R_OK) != 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot read config %s: %s", path, strerror(errno));
		return rc;
	}
	c.f = rte_cfgfile_load(path, 0);
	if (!c.f) {
		snprintf(err, errlen, "%s: not a valid INI file", path);
		return -EINVAL;
	}
	if ((rc = check_keys(&c)) || (rc = load_gateway(&c, cfg)) || (rc = load_ports(&c, cfg)) ||
	    (rc = load_sessions(&c, cfg)) || (rc = load_padding(&c, cfg)) ||
	    (rc = load_runtime(&c, cfg)) || (rc = load_telemetry(&c, cfg)) ||
	    (rc = load_cover(&c, cfg)) || (rc = load_shape(&c, cfg)))
		goto out;
	if (!cfg->ip4.family && !cfg->ip6.family)
		rc = fail(&c, "[gateway]: set ipv4 and/or ipv6");
	else if (!cfg->key_file[0] || !cfg->store_path[0])
		rc = fail(&c, "[gateway]: key_file and store are required");
	else
		rc = load_learn(&c, cfg); /* after [gateway]: the gateway's address */
out:
	if (rc) {
		char tmp[512];

		snprintf(tmp, sizeof(tmp), "%s: %s", path, err);
		snprintf(err, errlen, "%s", tmp);
	}
	rte_cfgfile_close(c.f);
	return rc;
}
