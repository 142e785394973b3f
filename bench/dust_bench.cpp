/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Google Benchmark harness over libdust: data seal/open, one packet and
 * bursts of 32, beside the bare libsodium AEAD on the same sizes (the limit
 * our codec can reach with this primitive), and the two interleaved in one
 * benchmark for the ratio; intro acceptance beside bare X25519 (also
 * interleaved); the quic profile's data path beside the random profile's
 * and its intro beside the two X25519 it needs (interleaved); session
 * lookup at 1k..1M sessions; the replay window.
 */
#include <benchmark/benchmark.h>

#include <malloc.h>

#include <sodium.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "dust.h"
#include "quic.h"

namespace
{

/* Size argument 0 stands for the IMIX mix below. */
constexpr int kImix = 0;
/* Simple IMIX 7:4:1 (payload bytes; 1400 stands in for 1500-byte frames). */
constexpr uint16_t kImixSizes[12] = {64, 64, 64, 64, 64, 64, 64, 576, 576, 576, 576, 1400};
constexpr unsigned kBurst = 32;
constexpr unsigned kPool = 384; /* multiple of 12 (IMIX) and 32 (bursts) */
constexpr size_t kBufCap = 1400 + DUST_DATA_OVERHEAD + 256;

size_t payload_at(int arg, unsigned i)
{
	return arg == kImix ? kImixSizes[i % 12] : (size_t)arg;
}

uint32_t now_s()
{
	return (uint32_t)time(nullptr);
}

uint64_t now_ms()
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void set_rates(benchmark::State &state, uint64_t packets, uint64_t bytes)
{
	state.counters["pps"] = benchmark::Counter((double)packets, benchmark::Counter::kIsRate);
	state.SetBytesProcessed((int64_t)bytes);
}

/* No padding: the codec does exactly the AEAD's work plus its own. */
struct dust_pad pad_none()
{
	struct dust_pad p;
	dust_pad_default(&p);
	p.kind = DUST_PAD_UNIFORM;
	p.min = 0;
	p.max = 0;
	p.mtu = 0;
	return p;
}

/* A client/server pair sharing random keys, as an intro would leave them. */
struct pair {
	struct dust_session cli, srv;
	pair()
	{
		memset(&cli, 0, sizeof(cli));
		memset(&srv, 0, sizeof(srv));
		randombytes_buf(cli.tx_key, sizeof(cli.tx_key));
		randombytes_buf(cli.tx_hp, sizeof(cli.tx_hp));
		randombytes_buf(cli.rx_key, sizeof(cli.rx_key));
		randombytes_buf(cli.rx_hp, sizeof(cli.rx_hp));
		memcpy(srv.rx_key, cli.tx_key, sizeof(srv.rx_key));
		memcpy(srv.rx_hp, cli.tx_hp, sizeof(srv.rx_hp));
		memcpy(srv.tx_key, cli.rx_key, sizeof(srv.tx_key));
		memcpy(srv.tx_hp, cli.rx_hp, sizeof(srv.tx_hp));
		cli.role = DUST_ROLE_CLIENT;
		srv.role = DUST_ROLE_SERVER;
		cli.state = srv.state = DUST_SESSION_LIVE;
		dust_replay_init(&cli.replay);
		dust_replay_init(&srv.replay);
	}
};

/* kPool sealed datagrams kept pristine; each open works on a copy. */
struct sealed_pool {
	std::vector<uint8_t> pristine;
	std::vector<uint16_t> len;
	std::vector<uint16_t> payload;
	bool ok = true;

	uint8_t *at(unsigned i)
	{
		return &pristine[(size_t)i * kBufCap];
	}
};

void pool_seal(sealed_pool &p, struct dust_session *cli, int arg)
{
	struct dust_rng rng;
	struct dust_pad pad = pad_none();
	uint32_t now = now_s();

	dust_rng_init(&rng);
	p.pristine.assign((size_t)kPool * kBufCap, 0);
	p.len.resize(kPool);
	p.payload.resize(kPool);
	for (unsigned i = 0; i < kPool; i++) {
		size_t n = payload_at(arg, i);
		uint8_t *b = p.at(i);
		randombytes_buf(b + DUST_DATA_PREFIX, n);
		int r = dust_data_seal(cli, &rng, &pad, now, b, n, kBufCap);
		if (r <= 0) {
			p.ok = false;
			return;
		}
		p.len[i] = (uint16_t)r;
		p.payload[i] = (uint16_t)n;
	}
	dust_rng_wipe(&rng);
}

/* pool_seal from pr's client; false (the benchmark skipped) if it failed. */
bool pool_ready(benchmark::State &state, sealed_pool &pool, pair &pr, int arg)
{
	pool_seal(pool, &pr.cli, arg);
	if (!pool.ok)
		state.SkipWithError("sealing the pool failed");
	return pool.ok;
}

/*
 * At the pool's end, k starts again and pr's server forgets the counters it
 * saw (its replay window would reject them the second time round): true then.
 */
bool pool_wrap(unsigned &k, pair &pr)
{
	if (k != kPool)
		return false;
	k = 0;
	dust_replay_init(&pr.srv.replay);
	return true;
}

/* Bare AEAD: the same pool shape, nonce = 0^4 | counter, no AD. */
struct aead_pool {
	std::vector<uint8_t> pristine;
	std::vector<uint16_t> len;
	uint8_t key[crypto_aead_chacha20poly1305_ietf_KEYBYTES];

	uint8_t *at(unsigned i)
	{
		return &pristine[(size_t)i * kBufCap];
	}
};

void nonce_of(uint8_t nonce[DUST_NONCE_BYTES], uint64_t ctr)
{
	memset(nonce, 0, 4);
	memcpy(nonce + 4, &ctr, 8);
}

void aead_seal_pool(aead_pool &p, int arg)
{
	uint8_t nonce[DUST_NONCE_BYTES];

	crypto_aead_chacha20poly1305_ietf_keygen(p.key);
	p.pristine.assign((size_t)kPool * kBufCap, 0);
	p.len.resize(kPool);
	for (unsigned i = 0; i < kPool; i++) {
		size_t n = payload_at(arg, i);
		uint8_t *b = p.at(i);
		randombytes_buf(b, n);
		nonce_of(nonce, i);
		crypto_aead_chacha20poly1305_ietf_encrypt_detached(b, b + n, nullptr, b, n, nullptr,
		                                                   0, nullptr, nonce, p.key);
		p.len[i] = (uint16_t)n;
	}
}

/*
 * One batch of each workload, shared by the separate and the paired
 * benchmarks so both time the same code. Each returns the payload bytes it
 * handled, or -1 when a call failed.
 */
long dust_seal_batch(pair &pr, struct dust_rng *rng, const struct dust_pad *pad, uint32_t now,
                     uint8_t *buf, int arg, unsigned k, unsigned batch)
{
	long bytes = 0;

	for (unsigned j = 0; j < batch; j++) {
		size_t n = payload_at(arg, k + j);
		if (dust_data_seal(&pr.cli, rng, pad, now, &buf[j * kBufCap], n, kBufCap) <= 0)
			return -1;
		bytes += (long)n;
	}
	return bytes;
}

long aead_seal_batch(const uint8_t *key, uint64_t &ctr, uint8_t *buf, int arg, unsigned k,
                     unsigned batch)
{
	uint8_t nonce[DUST_NONCE_BYTES];
	long bytes = 0;

	for (unsigned j = 0; j < batch; j++) {
		size_t n = payload_at(arg, k + j);
		uint8_t *b = &buf[j * kBufCap];
		nonce_of(nonce, ctr++);
		crypto_aead_chacha20poly1305_ietf_encrypt_detached(b, b + n, nullptr, b, n, nullptr,
		                                                   0, nullptr, nonce, key);
		bytes += (long)n;
	}
	return bytes;
}

/* Copy then open in place, pool packets at..at+batch. */
long dust_open_batch(pair &pr, sealed_pool &pool, const struct dust_limits *lim, uint32_t now,
                     uint8_t *work, unsigned at, unsigned batch)
{
	long bytes = 0;

	for (unsigned j = 0; j < batch; j++) {
		uint8_t *w = &work[j * kBufCap];
		struct dust_seg seg;
		size_t consumed;
		memcpy(w, pool.at(at + j), pool.len[at + j]);
		if (dust_data_open(&pr.srv, lim, now, w, pool.len[at + j], &seg, &consumed) !=
		    DUST_OK)
			return -1;
		bytes += seg.len;
	}
	return bytes;
}

long aead_open_batch(aead_pool &pool, uint8_t *work, unsigned at, unsigned batch)
{
	uint8_t nonce[DUST_NONCE_BYTES];
	long bytes = 0;

	for (unsigned j = 0; j < batch; j++) {
		uint8_t *w = &work[j * kBufCap];
		size_t n = pool.len[at + j];
		memcpy(w, pool.at(at + j), n + DUST_MAC_BYTES);
		nonce_of(nonce, at + j);
		if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(
		        w, nullptr, w, n, w + n, nullptr, 0, nonce, pool.key) != 0)
			return -1;
		bytes += (long)n;
	}
	return bytes;
}

/* ---- Encode ------------------------------------------------------------ */

void BM_dust_seal(benchmark::State &state)
{
	int arg = (int)state.range(0);
	unsigned batch = (unsigned)state.range(1);
	pair pr;
	struct dust_rng rng;
	struct dust_pad pad = pad_none();
	std::vector<uint8_t> buf((size_t)kBurst * kBufCap);
	uint32_t now = now_s();
	uint64_t pkts = 0, bytes = 0;
	unsigned k = 0;

	dust_rng_init(&rng);
	randombytes_buf(buf.data(), buf.size());
	for (auto _ : state) {
		long b = dust_seal_batch(pr, &rng, &pad, now, buf.data(), arg, k, batch);
		if (b < 0) {
			state.SkipWithError("dust_data_seal failed");
			return;
		}
		bytes += (uint64_t)b;
		pkts += batch;
		k += batch;
	}
	set_rates(state, pkts, bytes);
	dust_rng_wipe(&rng);
}

void BM_aead_encrypt(benchmark::State &state)
{
	int arg = (int)state.range(0);
	unsigned batch = (unsigned)state.range(1);
	uint8_t key[crypto_aead_chacha20poly1305_ietf_KEYBYTES];
	std::vector<uint8_t> buf((size_t)kBurst * kBufCap);
	uint64_t pkts = 0, bytes = 0, ctr = 0;
	unsigned k = 0;

	crypto_aead_chacha20poly1305_ietf_keygen(key);
	randombytes_buf(buf.data(), buf.size());
	for (auto _ : state) {
		bytes += (uint64_t)aead_seal_batch(key, ctr, buf.data(), arg, k, batch);
		pkts += batch;
		k += batch;
	}
	set_rates(state, pkts, bytes);
}

/* ---- Decode ------------------------------------------------------------ */

/*
 * The replay window would reject a pool's counters the second time round,
 * so it is reset at each wrap: a few ns per kPool packets.
 */
void BM_dust_open(benchmark::State &state)
{
	int arg = (int)state.range(0);
	pair pr;
	sealed_pool pool;
	struct dust_limits lim;
	std::vector<uint8_t> work(kBufCap);
	uint32_t now = now_s();
	uint64_t pkts = 0, bytes = 0;
	unsigned k = 0;

	dust_limits_default(&lim);
	if (!pool_ready(state, pool, pr, arg))
		return;
	for (auto _ : state) {
		pool_wrap(k, pr);
		long b = dust_open_batch(pr, pool, &lim, now, work.data(), k, 1);
		if (b < 0) {
			state.SkipWithError("dust_data_open failed");
			return;
		}
		bytes += (uint64_t)b;
		pkts++;
		k++;
	}
	set_rates(state, pkts, bytes);
}

void BM_dust_open_burst(benchmark::State &state)
{
	int arg = (int)state.range(0);
	pair pr;
	sealed_pool pool;
	struct dust_limits lim;
	std::vector<uint8_t> work((size_t)kBurst * kBufCap);
	struct dust_session *sess[kBurst];
	uint8_t *dg[kBurst];
	uint16_t len[kBurst];
	struct dust_rx_result res[kBurst];
	uint32_t now = now_s();
	uint64_t pkts = 0, bytes = 0;
	unsigned k = 0;

	dust_limits_default(&lim);
	if (!pool_ready(state, pool, pr, arg))
		return;
	for (unsigned j = 0; j < kBurst; j++) {
		sess[j] = &pr.srv;
		dg[j] = &work[j * kBufCap];
	}
	for (auto _ : state) {
		pool_wrap(k, pr);
		for (unsigned j = 0; j < kBurst; j++) {
			memcpy(dg[j], pool.at(k + j), pool.len[k + j]);
			len[j] = pool.len[k + j];
		}
		uint16_t got = dust_datagram_open_burst(sess, dg, len, kBurst, &lim, now, res);
		if (got != kBurst) {
			state.SkipWithError("burst: not every datagram opened");
			return;
		}
		for (unsigned j = 0; j < kBurst; j++)
			bytes += res[j].seg[0].len;
		pkts += kBurst;
		k += kBurst;
	}
	set_rates(state, pkts, bytes);
}

/* The same copy-then-open-in-place as BM_dust_open, so only the codec differs. */
void BM_aead_decrypt(benchmark::State &state)
{
	int arg = (int)state.range(0);
	unsigned batch = (unsigned)state.range(1);
	aead_pool pool;
	std::vector<uint8_t> work((size_t)kBurst * kBufCap);
	uint64_t pkts = 0, bytes = 0;
	unsigned k = 0;

	aead_seal_pool(pool, arg);
	for (auto _ : state) {
		if (k >= kPool)
			k = 0;
		long b = aead_open_batch(pool, work.data(), k, batch);
		if (b < 0) {
			state.SkipWithError("bare AEAD decrypt failed");
			return;
		}
		bytes += (uint64_t)b;
		pkts += batch;
		k += batch;
	}
	set_rates(state, pkts, bytes);
}

void codec_args(benchmark::internal::Benchmark *b, bool with_batch)
{
	b->ArgNames({"size", "burst"});
	for (int64_t batch : {1, (int)kBurst}) {
		if (!with_batch && batch != 1)
			continue;
		for (int64_t size : {64, 256, 512, 1400, kImix})
			b->Args({size, batch});
	}
}

void codec_args_batch(benchmark::internal::Benchmark *b)
{
	codec_args(b, true);
}

void codec_args_single(benchmark::internal::Benchmark *b)
{
	codec_args(b, false);
}

void codec_args_burst(benchmark::internal::Benchmark *b)
{
	b->ArgNames({"size", "burst"});
	for (int64_t size : {64, 256, 512, 1400, kImix})
		b->Args({size, kBurst});
}

BENCHMARK(BM_aead_encrypt)->Apply(codec_args_batch);
BENCHMARK(BM_dust_seal)->Apply(codec_args_batch);
BENCHMARK(BM_aead_decrypt)->Apply(codec_args_batch);
BENCHMARK(BM_dust_open)->Apply(codec_args_single);
BENCHMARK(BM_dust_open_burst)->Apply(codec_args_burst);

/* ---- Paired: codec and bare AEAD interleaved ------------------------------ */

/*
 * The ratio the targets use. The two benchmarks above run seconds apart, and
 * on a shared VM the CPU's speed moves by 20% between them. Here the bare
 * AEAD and the codec alternate in chunks of kBurst packets (which goes first
 * alternates too), each chunk timed on the monotonic clock, so drift, steal
 * and neighbours land on both alike; the medians of the chunk times give the
 * rates, and their quotient the ratio (counter "ratio" = codec / bare AEAD).
 */
double mono_ns()
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double median(std::vector<double> &v)
{
	if (v.empty())
		return 0;
	std::nth_element(v.begin(), v.begin() + (long)(v.size() / 2), v.end());
	return v[v.size() / 2];
}

void set_paired(benchmark::State &state, std::vector<double> &t_base, std::vector<double> &t_ours,
                unsigned per_chunk)
{
	double b = median(t_base), o = median(t_ours);

	if (b <= 0 || o <= 0)
		return;
	state.counters["pps"] = per_chunk * 1e9 / o;
	state.counters["base_pps"] = per_chunk * 1e9 / b;
	state.counters["ratio"] = b / o;
	state.counters["chunks"] = (double)t_ours.size();
}

/*
 * Time base() and ours() once each, the first of them alternating with
 * iter, and keep both times; false (nothing kept) if either failed.
 */
template <class Base, class Ours>
bool time_pair(unsigned &iter, Base base, Ours ours, std::vector<double> &t_base,
               std::vector<double> &t_ours)
{
	auto timed = [](auto f, double &t) {
		double t0 = mono_ns();
		bool ok = f();
		t = mono_ns() - t0;
		return ok;
	};
	double tb, to;
	bool ok =
	    (iter++ & 1) ? timed(base, tb) & timed(ours, to) : timed(ours, to) & timed(base, tb);

	if (!ok)
		return false;
	t_base.push_back(tb);
	t_ours.push_back(to);
	return true;
}

void BM_paired_open(benchmark::State &state)
{
	int arg = (int)state.range(0);
	pair pr;
	sealed_pool pool;
	aead_pool ap;
	struct dust_limits lim;
	std::vector<uint8_t> work((size_t)kBurst * kBufCap);
	std::vector<double> t_aead, t_dust;
	uint32_t now = now_s();
	unsigned k = 0, iter = 0;

	dust_limits_default(&lim);
	if (!pool_ready(state, pool, pr, arg))
		return;
	aead_seal_pool(ap, arg);
	for (auto _ : state) {
		pool_wrap(k, pr);
		if (!time_pair(
		        iter, [&] { return aead_open_batch(ap, work.data(), k, kBurst) >= 0; },
		        [&] {
			        return dust_open_batch(pr, pool, &lim, now, work.data(), k,
			                               kBurst) >= 0;
		        },
		        t_aead, t_dust)) {
			state.SkipWithError("a paired open failed");
			return;
		}
		k += kBurst;
	}
	set_paired(state, t_aead, t_dust, kBurst);
}

void BM_paired_seal(benchmark::State &state)
{
	int arg = (int)state.range(0);
	pair pr;
	struct dust_rng rng;
	struct dust_pad pad = pad_none();
	uint8_t key[crypto_aead_chacha20poly1305_ietf_KEYBYTES];
	std::vector<uint8_t> buf((size_t)kBurst * kBufCap);
	std::vector<double> t_aead, t_dust;
	uint32_t now = now_s();
	uint64_t ctr = 0;
	unsigned k = 0, iter = 0;

	dust_rng_init(&rng);
	crypto_aead_chacha20poly1305_ietf_keygen(key);
	randombytes_buf(buf.data(), buf.size());
	for (auto _ : state) {
		if (!time_pair(
		        iter,
		        [&] { return aead_seal_batch(key, ctr, buf.data(), arg, k, kBurst) >= 0; },
		        [&] {
			        return dust_seal_batch(pr, &rng, &pad, now, buf.data(), arg, k,
			                               kBurst) >= 0;
		        },
		        t_aead, t_dust)) {
			state.SkipWithError("dust_data_seal failed");
			return;
		}
		k = (k + kBurst) % kPool;
	}
	set_paired(state, t_aead, t_dust, kBurst);
	dust_rng_wipe(&rng);
}

void codec_args_paired(benchmark::internal::Benchmark *b)
{
	b->ArgNames({"size"});
	for (int64_t size : {64, 256, 512, 1400, kImix})
		b->Args({size});
}

BENCHMARK(BM_paired_open)->Apply(codec_args_paired);
BENCHMARK(BM_paired_seal)->Apply(codec_args_paired);

/* ---- Intro acceptance ------------------------------------------------------ */

/* A server with a store in a temporary directory, and a client identity. */
struct intro_fixture {
	char dir[64];
	std::string path;
	struct dust_server srv;
	struct dust_identity client;
	struct dust_rng rng;
	struct dust_pad pad;
	bool ok = false;

	intro_fixture()
	{
		memset(&srv, 0, sizeof(srv));
		snprintf(dir, sizeof(dir), "/tmp/dust_bench.XXXXXX");
		if (!mkdtemp(dir))
			return;
		path = std::string(dir) + "/store";
		if (dust_identity_generate(&srv.id) != 0 || dust_identity_generate(&client) != 0)
			return;
		srv.store = dust_store_open(path.c_str(), DUST_STORE_CREATE, &srv.id);
		if (!srv.store)
			return;
		dust_limits_default(&srv.lim);
		dust_rng_init(&rng);
		pad = pad_none();
		ok = true;
	}

	~intro_fixture()
	{
		if (srv.store)
			dust_store_close(srv.store);
		std::string cmd = std::string("rm -rf '") + dir + "'";
		if (system(cmd.c_str()) != 0)
			fprintf(stderr, "dust_bench: could not remove %s\n", dir);
		dust_rng_wipe(&rng);
	}

	bool add_invite(struct dust_invite *inv)
	{
		struct dust_ipaddr addr, tun;
		if (dust_ipaddr_parse(&addr, "127.0.0.1") || dust_ipaddr_parse(&tun, "10.9.0.2"))
			return false;
		if (dust_invite_new(inv, &srv.id, &addr, 4433, &tun, 32, now_ms() / 1000 + 86400))
			return false;
		return dust_store_add(srv.store, inv) == 0;
	}
};

struct intro_pkt {
	uint8_t b[DUST_INTRO_MIN_BYTES + DUST_INTRO_PAD_MAX];
	int len;
	uint64_t ts_ms;
};

/* Where the benchmark's client sends from. */
struct dust_endpoint intro_client_ep()
{
	struct dust_endpoint ep;

	memset(&ep, 0, sizeof(ep));
	dust_ipaddr_parse(&ep.ip, "127.0.0.2");
	ep.port = 40000;
	return ep;
}

/* Move the store's clock to ts, then fill batch with intros of inv, each 1 ms newer. */
void intro_refill(intro_fixture &fx, const struct dust_invite *inv, std::vector<intro_pkt> &batch,
                  uint64_t &ts, struct dust_session *cs)
{
	dust_store_tick(fx.srv.store, ts / 1000);
	for (auto &p : batch) {
		p.ts_ms = ++ts;
		p.len = dust_intro_build(inv, &fx.client, &fx.rng, &fx.pad, p.ts_ms, p.b,
		                         sizeof(p.b), cs);
	}
}

/*
 * Steady state: the invitation is already bound to this client, who comes
 * back with a fresh intro (new ephemeral key, newer timestamp) each time.
 * Intros are built in batches with the timer paused; each is 1 ms newer than
 * the last and accepted with its own time as "now". With pool, the server's
 * shares are made off the timed path too, as dustgw's worker pool makes them
 * in housekeeping (SPEC 5.1); without, each accept makes its own.
 */
static void intro_accept_run(benchmark::State &state, bool pool)
{
	intro_fixture fx;
	struct dust_invite inv;
	struct dust_endpoint from = intro_client_ep();
	std::vector<intro_pkt> batch(256);
	std::vector<struct dust_eph> eph(256);
	struct dust_session cs, ss;
	struct dust_intro_info info;
	uint64_t ts = now_ms(), pkts = 0;
	size_t consumed;
	unsigned k = (unsigned)batch.size();

	if (!fx.ok || !fx.add_invite(&inv)) {
		state.SkipWithError("intro fixture failed");
		return;
	}
	for (auto _ : state) {
		if (k == batch.size()) {
			state.PauseTiming();
			intro_refill(fx, &inv, batch, ts, &cs);
			for (auto &e : eph)
				if (pool)
					(void)dust_eph_generate(&e);
			k = 0;
			state.ResumeTiming();
		}
		intro_pkt &p = batch[k];
		if (p.len <= 0) {
			state.SkipWithError("dust_intro_build failed");
			return;
		}
		enum dust_drop d = dust_intro_accept(&fx.srv, p.b, (size_t)p.len, p.ts_ms, &from,
		                                     pool ? &eph[k] : NULL, &ss, &consumed, &info);
		k++;
		if (d != DUST_OK) {
			state.SkipWithError(dust_drop_name(d));
			return;
		}
		pkts++;
	}
	state.counters["pps"] = benchmark::Counter((double)pkts, benchmark::Counter::kIsRate);
	for (auto &e : eph)
		dust_eph_wipe(&e);
	dust_session_wipe(&cs);
	dust_session_wipe(&ss);
}

void BM_intro_accept(benchmark::State &state)
{
	intro_accept_run(state, false);
}

void BM_intro_accept_pool(benchmark::State &state)
{
	intro_accept_run(state, true);
}

/* The key generation a share costs when the pool is empty: one base-point multiplication. */
void BM_x25519_base(benchmark::State &state)
{
	uint8_t sk[crypto_scalarmult_SCALARBYTES], pk[crypto_scalarmult_BYTES];
	uint64_t ops = 0;

	randombytes_buf(sk, sizeof(sk));
	for (auto _ : state) {
		if (crypto_scalarmult_base(pk, sk) != 0) {
			state.SkipWithError("crypto_scalarmult_base failed");
			return;
		}
		sk[0] ^= pk[0];
		ops++;
	}
	state.counters["ops"] = benchmark::Counter((double)ops, benchmark::Counter::kIsRate);
}

/* First use: each intro binds a fresh invitation (persisted to the journal). */
void BM_intro_accept_first(benchmark::State &state)
{
	intro_fixture fx;
	struct dust_endpoint from = intro_client_ep();
	struct dust_session cs, ss;
	struct dust_intro_info info;
	intro_pkt p;
	uint64_t pkts = 0;
	size_t consumed;

	if (!fx.ok) {
		state.SkipWithError("intro fixture failed");
		return;
	}
	for (auto _ : state) {
		struct dust_invite inv;
		state.PauseTiming();
		if (!fx.add_invite(&inv)) {
			state.SkipWithError("dust_store_add failed");
			return;
		}
		p.ts_ms = now_ms();
		dust_store_tick(fx.srv.store, p.ts_ms / 1000);
		p.len = dust_intro_build(&inv, &fx.client, &fx.rng, &fx.pad, p.ts_ms, p.b,
		                         sizeof(p.b), &cs);
		from.port++;
		state.ResumeTiming();
		if (p.len <= 0) {
			state.SkipWithError("dust_intro_build failed");
			return;
		}
		enum dust_drop d = dust_intro_accept(&fx.srv, p.b, (size_t)p.len, p.ts_ms, &from,
		                                     NULL, &ss, &consumed, &info);
		if (d != DUST_OK || !info.first_use) {
			state.SkipWithError(d != DUST_OK ? dust_drop_name(d) : "not a first use");
			return;
		}
		pkts++;
	}
	state.counters["pps"] = benchmark::Counter((double)pkts, benchmark::Counter::kIsRate);
}

void BM_x25519(benchmark::State &state)
{
	uint8_t sk[crypto_scalarmult_SCALARBYTES], pk[crypto_scalarmult_BYTES];
	uint8_t out[crypto_scalarmult_BYTES];
	uint64_t ops = 0;

	randombytes_buf(sk, sizeof(sk));
	crypto_scalarmult_base(pk, sk);
	for (auto _ : state) {
		if (crypto_scalarmult(out, sk, pk) != 0) {
			state.SkipWithError("crypto_scalarmult failed");
			return;
		}
		benchmark::DoNotOptimize(out);
		ops++;
	}
	state.counters["pps"] = benchmark::Counter((double)ops, benchmark::Counter::kIsRate);
}

/*
 * Paired, as for the codec: one steady-state intro acceptance and one bare
 * X25519 alternate, each timed; the medians give the rates and the ratio.
 */
void BM_paired_intro(benchmark::State &state)
{
	intro_fixture fx;
	struct dust_invite inv;
	struct dust_endpoint from = intro_client_ep();
	std::vector<intro_pkt> batch(256);
	std::vector<double> t_x, t_intro;
	struct dust_session cs, ss;
	struct dust_intro_info info;
	uint8_t sk[crypto_scalarmult_SCALARBYTES], pk[crypto_scalarmult_BYTES];
	uint8_t out[crypto_scalarmult_BYTES];
	uint64_t ts = now_ms();
	size_t consumed;
	unsigned k = (unsigned)batch.size(), iter = 0;

	if (!fx.ok || !fx.add_invite(&inv)) {
		state.SkipWithError("intro fixture failed");
		return;
	}
	randombytes_buf(sk, sizeof(sk));
	crypto_scalarmult_base(pk, sk);
	for (auto _ : state) {
		if (k == batch.size()) {
			intro_refill(fx, &inv, batch, ts, &cs);
			k = 0;
		}
		intro_pkt &p = batch[k++];
		if (!time_pair(
		        iter,
		        [&] {
			        int rc = crypto_scalarmult(out, sk, pk);
			        benchmark::DoNotOptimize(out);
			        return rc == 0;
		        },
		        [&] {
			        return p.len > 0 && dust_intro_accept(&fx.srv, p.b, (size_t)p.len,
			                                              p.ts_ms, &from, NULL, &ss,
			                                              &consumed, &info) == DUST_OK;
		        },
		        t_x, t_intro)) {
			state.SkipWithError("paired intro: accept or X25519 failed");
			return;
		}
	}
	set_paired(state, t_x, t_intro, 1);
	dust_session_wipe(&cs);
	dust_session_wipe(&ss);
}

/*
 * What a flood costs per datagram: an intro-sized datagram of random bytes
 * (a prober's, a scanner's) refused by dust_intro_accept (intro_unknown,
 * after its tag is unmasked and looked up). 256 different ones in turn.
 */
void BM_intro_junk(benchmark::State &state)
{
	intro_fixture fx;
	struct dust_invite inv;
	struct dust_endpoint from = intro_client_ep();
	static uint8_t junk[256][200];
	struct dust_session ss;
	struct dust_intro_info info;
	size_t consumed;
	uint64_t n = 0, ts = now_ms();

	if (!fx.ok || !fx.add_invite(&inv)) {
		state.SkipWithError("intro fixture failed");
		return;
	}
	randombytes_buf(junk, sizeof(junk));
	for (auto _ : state) {
		enum dust_drop d = dust_intro_accept(&fx.srv, junk[n % 256], sizeof(junk[0]), ts,
		                                     &from, NULL, &ss, &consumed, &info);
		if (d != DUST_DROP_INTRO_UNKNOWN) {
			state.SkipWithError(dust_drop_name(d));
			return;
		}
		n++;
	}
	state.counters["pps"] = benchmark::Counter((double)n, benchmark::Counter::kIsRate);
}

BENCHMARK(BM_x25519);
BENCHMARK(BM_x25519_base);
BENCHMARK(BM_intro_junk);
BENCHMARK(BM_intro_accept);
BENCHMARK(BM_intro_accept_pool);
BENCHMARK(BM_paired_intro);
/* Each first use fsyncs the binding journal: a fixed, small count. */
BENCHMARK(BM_intro_accept_first)->Iterations(200);

/* ---- Quic profile (SPEC §12): paired against the random profile ------------ */

/*
 * The quic data path is the random profile's plus a 1-RTT short header: on
 * seal a first byte and the DCID (20 bytes here, the longest a server picks)
 * before the Dust packet, on open the match of first byte and DCID before
 * dust_data_open. Each side runs on its own session pair with the same
 * sizes; the ratio is random / quic (1 = free, 0.95 = 5% more per packet).
 */
struct quic_pair : pair {
	quic_pair()
	{
		cli.profile = srv.profile = DUST_PROFILE_QUIC;
		cli.cid_len = srv.cid_len = DUST_QUIC_CID_MAX;
		randombytes_buf(cli.cid, cli.cid_len);
		memcpy(srv.cid, cli.cid, cli.cid_len);
	}
};

long quic_seal_batch(quic_pair &pr, struct dust_rng *rng, const struct dust_pad *pad, uint32_t now,
                     uint8_t *buf, int arg, unsigned k, unsigned batch)
{
	size_t pre = dust_quic_tx_prefix(&pr.cli);
	long bytes = 0;

	for (unsigned j = 0; j < batch; j++) {
		size_t n = payload_at(arg, k + j);
		uint8_t *b = &buf[j * kBufCap];
		if (dust_data_seal(&pr.cli, rng, pad, now, b + pre, n, kBufCap - pre) <= 0)
			return -1;
		dust_quic_short_put(&pr.cli, rng, b);
		bytes += (long)n;
	}
	return bytes;
}

/* kPool quic datagrams: short header, then the Dust packet. */
void quic_pool_seal(sealed_pool &p, quic_pair &pr, int arg)
{
	struct dust_rng rng;
	struct dust_pad pad = pad_none();
	size_t pre = dust_quic_tx_prefix(&pr.cli);

	dust_rng_init(&rng);
	p.pristine.assign((size_t)kPool * kBufCap, 0);
	p.len.resize(kPool);
	p.payload.resize(kPool);
	for (unsigned i = 0; i < kPool && p.ok; i++) {
		size_t n = payload_at(arg, i);
		uint8_t *b = p.at(i);
		randombytes_buf(b + pre + DUST_DATA_PREFIX, n);
		int r = dust_data_seal(&pr.cli, &rng, &pad, now_s(), b + pre, n, kBufCap - pre);
		dust_quic_short_put(&pr.cli, &rng, b);
		p.ok = r > 0;
		p.len[i] = (uint16_t)(pre + (size_t)(r > 0 ? r : 0));
		p.payload[i] = (uint16_t)n;
	}
	dust_rng_wipe(&rng);
}

/*
 * As dust_open_batch, but each work slot already holds a short header (the
 * connection's, see quic_work_init): open does not change it, so only the
 * Dust packet is copied back, the same bytes as on the random side. (Copying
 * the 21 prefix bytes as well cost 5% of a 64-byte open here: the benchmark's
 * copy, not the gateway's work, whose datagrams arrive in place.)
 */
long quic_open_batch(quic_pair &pr, sealed_pool &pool, const struct dust_limits *lim, uint32_t now,
                     uint8_t *work, unsigned at, unsigned batch)
{
	size_t pre = dust_quic_rx_prefix(&pr.srv);
	long bytes = 0;

	for (unsigned j = 0; j < batch; j++) {
		uint8_t *w = &work[j * kBufCap];
		size_t len = pool.len[at + j];
		struct dust_seg seg;
		size_t consumed;
		memcpy(w + pre, pool.at(at + j) + pre, len - pre);
		if (!dust_quic_short_match(&pr.srv, w, len) ||
		    dust_data_open(&pr.srv, lim, now, w + pre, len - pre, &seg, &consumed) !=
		        DUST_OK)
			return -1;
		bytes += seg.len;
	}
	return bytes;
}

/* Each work slot gets the connection's short header once. */
void quic_work_init(sealed_pool &pool, uint8_t *work, size_t pre)
{
	for (unsigned j = 0; j < kBurst; j++)
		memcpy(&work[j * kBufCap], pool.at(j), pre);
}

void BM_quic_paired_seal(benchmark::State &state)
{
	int arg = (int)state.range(0);
	pair pr;
	quic_pair qp;
	struct dust_rng rng;
	struct dust_pad pad = pad_none();
	std::vector<uint8_t> buf((size_t)kBurst * kBufCap);
	std::vector<double> t_rand, t_quic;
	uint32_t now = now_s();
	unsigned k = 0, iter = 0;

	dust_rng_init(&rng);
	randombytes_buf(buf.data(), buf.size());
	for (auto _ : state) {
		if (!time_pair(
		        iter,
		        [&] {
			        return dust_seal_batch(pr, &rng, &pad, now, buf.data(), arg, k,
			                               kBurst) >= 0;
		        },
		        [&] {
			        return quic_seal_batch(qp, &rng, &pad, now, buf.data(), arg, k,
			                               kBurst) >= 0;
		        },
		        t_rand, t_quic)) {
			state.SkipWithError("a paired seal failed");
			return;
		}
		k = (k + kBurst) % kPool;
	}
	set_paired(state, t_rand, t_quic, kBurst);
	dust_rng_wipe(&rng);
}

void BM_quic_paired_open(benchmark::State &state)
{
	int arg = (int)state.range(0);
	pair pr;
	quic_pair qp;
	sealed_pool rpool, qpool;
	struct dust_limits lim;
	std::vector<uint8_t> work((size_t)kBurst * kBufCap), qwork((size_t)kBurst * kBufCap);
	std::vector<double> t_rand, t_quic;
	uint32_t now = now_s();
	unsigned k = 0, iter = 0;

	dust_limits_default(&lim);
	pool_seal(rpool, &pr.cli, arg);
	quic_pool_seal(qpool, qp, arg);
	if (!rpool.ok || !qpool.ok) {
		state.SkipWithError("sealing the pools failed");
		return;
	}
	quic_work_init(qpool, qwork.data(), dust_quic_rx_prefix(&qp.srv));
	for (auto _ : state) {
		if (pool_wrap(k, pr))
			dust_replay_init(&qp.srv.replay);
		if (!time_pair(
		        iter,
		        [&] {
			        return dust_open_batch(pr, rpool, &lim, now, work.data(), k,
			                               kBurst) >= 0;
		        },
		        [&] {
			        return quic_open_batch(qp, qpool, &lim, now, qwork.data(), k,
			                               kBurst) >= 0;
		        },
		        t_rand, t_quic)) {
			state.SkipWithError("a paired open failed");
			return;
		}
		k += kBurst;
	}
	set_paired(state, t_rand, t_quic, kBurst);
}

void quic_args_paired(benchmark::internal::Benchmark *b)
{
	b->ArgNames({"size"});
	for (int64_t size : {64, 1400})
		b->Args({size});
}

BENCHMARK(BM_quic_paired_seal)->Apply(quic_args_paired);
BENCHMARK(BM_quic_paired_open)->Apply(quic_args_paired);

/* A 1250-byte Initial and the ephemeral the pool would have made for it. */
struct quic_intro_pkt {
	uint8_t b[DUST_QUIC_CLIENT_DGRAM];
	int len;
	uint64_t ts_ms;
	struct dust_eph eph;
};

/* As intro_refill: Initials of inv each 1 ms newer, ephemerals made off the clock. */
void quic_refill(intro_fixture &fx, const struct dust_invite *inv,
                 std::vector<quic_intro_pkt> &batch, uint64_t &ts)
{
	struct dust_quic_client qc;

	dust_store_tick(fx.srv.store, ts / 1000);
	for (auto &p : batch) {
		p.ts_ms = ++ts;
		p.len =
		    dust_quic_intro_build(inv, &fx.client, &fx.rng, p.ts_ms, p.b, sizeof(p.b), &qc);
		if (dust_eph_generate(&p.eph) != 0)
			p.len = -1;
	}
	dust_quic_client_wipe(&qc);
}

/*
 * A returning client's quic intro (the invitation bound, so cs is cached)
 * against the two X25519 it needs on the packet path, es = X25519(s, E)
 * and ee = X25519(e_s, E); the server ephemeral's own base multiplication
 * is made off the path (the gateway's pool), here in quic_refill.
 */
void BM_quic_paired_intro(benchmark::State &state)
{
	intro_fixture fx;
	struct dust_invite inv;
	struct dust_endpoint from = intro_client_ep();
	std::vector<quic_intro_pkt> batch(256);
	std::vector<double> t_x, t_intro;
	struct dust_session ss;
	struct dust_quic_accept acc;
	struct dust_intro_info info;
	uint8_t sk[crypto_scalarmult_SCALARBYTES], pk[crypto_scalarmult_BYTES];
	uint8_t out[crypto_scalarmult_BYTES];
	uint64_t ts = now_ms();
	unsigned k = 0, iter = 0;

	struct dust_ipaddr addr, tun;

	if (!fx.ok || dust_ipaddr_parse(&addr, "127.0.0.1") ||
	    dust_ipaddr_parse(&tun, "10.9.0.2") ||
	    dust_invite_new(&inv, &fx.srv.id, &addr, 443, &tun, 32, ts / 1000 + 86400) != 0) {
		state.SkipWithError("quic intro fixture failed");
		return;
	}
	inv.profile = DUST_PROFILE_QUIC;
	if (dust_invite_cover_set(&inv, "www.example.com") != 0 ||
	    dust_store_add(fx.srv.store, &inv) != 0) {
		state.SkipWithError("quic invitation failed");
		return;
	}
	/* bind the invitation first (a first use also computes cs and fsyncs) */
	quic_refill(fx, &inv, batch, ts);
	if (batch[0].len <= 0 ||
	    dust_quic_intro_accept(&fx.srv, &fx.rng, batch[0].b, (size_t)batch[0].len,
	                           batch[0].ts_ms, &from, &batch[0].eph, &ss, &acc,
	                           &info) != DUST_OK) {
		state.SkipWithError("first quic intro refused");
		return;
	}
	k = (unsigned)batch.size();
	randombytes_buf(sk, sizeof(sk));
	crypto_scalarmult_base(pk, sk);
	for (auto _ : state) {
		if (k == batch.size()) {
			quic_refill(fx, &inv, batch, ts);
			k = 0;
		}
		quic_intro_pkt &p = batch[k++];
		if (!time_pair(
		        iter,
		        [&] {
			        int rc = crypto_scalarmult(out, sk, pk);
			        rc |= crypto_scalarmult(out, sk, out);
			        benchmark::DoNotOptimize(out);
			        return rc == 0;
		        },
		        [&] {
			        return p.len > 0 &&
			               dust_quic_intro_accept(&fx.srv, &fx.rng, p.b, (size_t)p.len,
			                                      p.ts_ms, &from, &p.eph, &ss, &acc,
			                                      &info) == DUST_OK;
		        },
		        t_x, t_intro)) {
			state.SkipWithError("paired quic intro: accept or X25519 failed");
			return;
		}
	}
	set_paired(state, t_x, t_intro, 1);
	dust_session_wipe(&ss);
}

BENCHMARK(BM_quic_paired_intro);

/* ---- Session lookup ------------------------------------------------------------ */

long vm_rss_kb()
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Bytes the allocator has handed out (heap + mmapped chunks): robust to reuse of freed memory. */
double heap_bytes()
{
	struct mallinfo2 mi = mallinfo2();
	return (double)mi.uordblks + (double)mi.hblkhd;
}

uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* A table filled to n sessions with distinct IPv4 endpoints. */
struct table_fixture {
	struct dust_session_table *t = nullptr;
	std::vector<struct dust_endpoint> eps;
	long rss_delta_kb = 0;
	double heap_delta = 0;
	bool ok = false;

	explicit table_fixture(uint32_t n)
	{
		long before = vm_rss_kb();
		double heap0 = heap_bytes();
		t = dust_session_table_create(n);
		if (!t)
			return;
		eps.resize(n);
		for (uint32_t i = 0; i < n; i++) {
			struct dust_endpoint &ep = eps[i];
			memset(&ep, 0, sizeof(ep));
			ep.ip.family = 4;
			uint32_t a = 0x0a000000u + (i >> 4); /* 16 ports per address */
			ep.ip.a[0] = (uint8_t)(a >> 24);
			ep.ip.a[1] = (uint8_t)(a >> 16);
			ep.ip.a[2] = (uint8_t)(a >> 8);
			ep.ip.a[3] = (uint8_t)a;
			ep.port = (uint16_t)(20000 + (i & 15));
			struct dust_session *s = dust_session_table_reserve(t);
			if (!s)
				return;
			randombytes_buf(s->rx_key, sizeof(s->rx_key));
			s->peer = ep;
			s->role = DUST_ROLE_SERVER;
			s->state = DUST_SESSION_LIVE;
			if (dust_session_table_insert(t, s) != 0)
				return;
		}
		rss_delta_kb = vm_rss_kb() - before;
		heap_delta = heap_bytes() - heap0;
		ok = true;
	}

	~table_fixture()
	{
		if (t)
			dust_session_table_free(t);
	}
};

/* Lookups in a random order, so a big table is out of cache as in real traffic. */
void BM_session_lookup(benchmark::State &state)
{
	uint32_t n = (uint32_t)state.range(0);
	table_fixture fx(n);
	std::vector<uint32_t> order(1u << 16);
	uint64_t seed = 0x9e3779b97f4a7c15ull, hits = 0;
	unsigned k = 0;

	if (!fx.ok) {
		state.SkipWithError("filling the session table failed");
		return;
	}
	for (auto &o : order)
		o = (uint32_t)(xorshift(&seed) % n);
	for (auto _ : state) {
		struct dust_session *s = dust_session_table_lookup(fx.t, &fx.eps[order[k]]);
		k = (k + 1) & (order.size() - 1);
		if (!s) {
			state.SkipWithError("lookup missed a live session");
			return;
		}
		benchmark::DoNotOptimize(s);
		hits++;
	}
	state.counters["pps"] = benchmark::Counter((double)hits, benchmark::Counter::kIsRate);
	size_t cap = dust_session_table_capacity(fx.t);
	state.counters["table_B_per_session"] =
	    (double)dust_session_table_bytes(fx.t) / (double)(cap ? cap : 1);
	state.counters["rss_B_per_session"] = (double)fx.rss_delta_kb * 1024.0 / (double)n;
	/* The endpoint keys of this harness (eps) are not the table's: left out. */
	state.counters["heap_B_per_session"] =
	    fx.heap_delta / (double)n - (double)sizeof(struct dust_endpoint);
}

void BM_session_lookup_bulk(benchmark::State &state)
{
	uint32_t n = (uint32_t)state.range(0);
	table_fixture fx(n);
	std::vector<const struct dust_endpoint *> keys(1u << 16);
	struct dust_session *out[kBurst];
	uint64_t seed = 0x2545f4914f6cdd1dull, hits = 0;
	unsigned k = 0;

	if (!fx.ok) {
		state.SkipWithError("filling the session table failed");
		return;
	}
	for (auto &p : keys)
		p = &fx.eps[xorshift(&seed) % n];
	for (auto _ : state) {
		unsigned h = dust_session_table_lookup_bulk(fx.t, &keys[k], kBurst, out);
		k = (k + kBurst) & (keys.size() - 1);
		if (h != kBurst) {
			state.SkipWithError("bulk lookup missed a live session");
			return;
		}
		benchmark::DoNotOptimize(out);
		hits += h;
	}
	state.counters["pps"] = benchmark::Counter((double)hits, benchmark::Counter::kIsRate);
}

/*
 * What each client costs besides its session: its invitation in the store
 * (entry, precomputed keys, tag index). Sessions need an invitation each, so
 * a gateway with 1M sessions holds at least 1M of these too. 20k only:
 * dust_store_add checks for a duplicate id with a linear scan, so filling
 * a store is quadratic (200k took 113 s here).
 */
void BM_store_memory(benchmark::State &state)
{
	uint32_t n = (uint32_t)state.range(0);
	long before = 0, after = 0;
	double heap0 = 0, heap1 = 0;

	for (auto _ : state) {
		intro_fixture fx;
		struct dust_invite inv;
		if (!fx.ok) {
			state.SkipWithError("store fixture failed");
			return;
		}
		before = vm_rss_kb();
		heap0 = heap_bytes();
		for (uint32_t i = 0; i < n; i++) {
			if (!fx.add_invite(&inv)) {
				state.SkipWithError("dust_store_add failed");
				return;
			}
		}
		dust_store_tick(fx.srv.store, now_ms() / 1000);
		after = vm_rss_kb();
		heap1 = heap_bytes();
	}
	state.counters["rss_B_per_invitation"] = (double)(after - before) * 1024.0 / (double)n;
	state.counters["entry_B"] = (double)sizeof(struct dust_store_entry);
	state.counters["heap_B_per_invitation"] = (heap1 - heap0) / (double)n;
}

BENCHMARK(BM_session_lookup)->ArgName("sessions")->Arg(1000)->Arg(100000)->Arg(1000000);
BENCHMARK(BM_session_lookup_bulk)->ArgName("sessions")->Arg(1000)->Arg(100000)->Arg(1000000);
BENCHMARK(BM_store_memory)
    ->ArgName("invitations")
    ->Arg(20000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

/* ---- Replay window ---------------------------------------------------------------- */

/* In order: the common case, one check and one update per packet. */
void BM_replay_inorder(benchmark::State &state)
{
	struct dust_replay r;
	uint64_t ctr = 0;

	dust_replay_init(&r);
	for (auto _ : state) {
		bool ok = dust_replay_check(&r, ctr) && dust_replay_update(&r, ctr);
		if (!ok) {
			state.SkipWithError("fresh counter rejected");
			return;
		}
		ctr++;
	}
	state.counters["pps"] = benchmark::Counter((double)ctr, benchmark::Counter::kIsRate);
}

/* Reordered within the window: blocks of 64 counters sent in a shuffled order. */
void BM_replay_reorder(benchmark::State &state)
{
	struct dust_replay r;
	uint8_t perm[64];
	uint64_t base = 0, seed = 88172645463325252ull, n = 0;
	unsigned k = 0;

	dust_replay_init(&r);
	for (unsigned i = 0; i < 64; i++)
		perm[i] = (uint8_t)i;
	for (unsigned i = 63; i > 0; i--) {
		unsigned j = (unsigned)(xorshift(&seed) % (i + 1));
		uint8_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (auto _ : state) {
		uint64_t ctr = base + perm[k];
		bool ok = dust_replay_check(&r, ctr) && dust_replay_update(&r, ctr);
		if (!ok) {
			state.SkipWithError("fresh counter rejected");
			return;
		}
		if (++k == 64) {
			k = 0;
			base += 64;
		}
		n++;
	}
	state.counters["pps"] = benchmark::Counter((double)n, benchmark::Counter::kIsRate);
}

/* A replayed counter must be turned away by the cheap check alone. */
void BM_replay_reject(benchmark::State &state)
{
	struct dust_replay r;
	uint64_t n = 0;

	dust_replay_init(&r);
	for (uint64_t c = 0; c < 100; c++)
		if (!dust_replay_update(&r, c))
			break;
	for (auto _ : state) {
		if (dust_replay_check(&r, 50)) {
			state.SkipWithError("replayed counter passed the check");
			return;
		}
		n++;
	}
	state.counters["pps"] = benchmark::Counter((double)n, benchmark::Counter::kIsRate);
}

BENCHMARK(BM_replay_inorder);
BENCHMARK(BM_replay_reorder);
BENCHMARK(BM_replay_reject);

} // namespace

int main(int argc, char **argv)
{
	if (dust_init() != 0) {
		fprintf(stderr, "dust_bench: dust_init failed\n");
		return 1;
	}
	benchmark::Initialize(&argc, argv);
	if (benchmark::ReportUnrecognizedArguments(argc, argv))
		return 1;
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	return 0;
}
