/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The AEAD backends side by side (part of dust_bench): the codec's burst
 * seal and open on each backend (libsodium, libipsec-mb) and suite
 * (ChaCha20-Poly1305, AES-256-GCM), beside the bare primitive of each
 * library on the same sizes, the same 16 bytes of AD and bursts of 32.
 * bench/run turns one run of these into the ratio table of crypto.md.
 *
 * Also the key exchanges: ML-KEM-768 (lib/dust/mlkem.c) keygen, encaps and
 * decaps beside one X25519 shared secret from libsodium (crypto_scalarmult)
 * and from OpenSSL (EVP_PKEY_derive), in the same run.
 */
#include <benchmark/benchmark.h>

#include <sodium.h>

#include <cstring>
#include <ctime>
#include <vector>

#ifdef DUST_HAVE_IPSECMB
#include <intel-ipsec-mb.h>
#endif

#include <openssl/evp.h>

#include "dust.h"
#include "mlkem.h"

namespace
{

constexpr unsigned kBurst = 32;
constexpr unsigned kPool = 256; /* 8 bursts of sealed datagrams */
constexpr size_t kCap = 1400 + DUST_DATA_OVERHEAD + 64;
const char *const kBackend[2] = {"sodium", "ipsec-mb"};

/* A session pair on suite, keys random, no padding. */
struct crypto_pair {
	struct dust_session cli, srv;

	explicit crypto_pair(uint8_t suite)
	{
		memset(&cli, 0, sizeof(cli));
		randombytes_buf(cli.tx_key, sizeof(cli.tx_key));
		randombytes_buf(cli.tx_hp, sizeof(cli.tx_hp));
		cli.suite = suite;
		srv = cli;
		memcpy(srv.rx_key, cli.tx_key, sizeof(srv.rx_key));
		memcpy(srv.rx_hp, cli.tx_hp, sizeof(srv.rx_hp));
		dust_replay_init(&srv.replay);
	}
};

struct dust_pad no_pad()
{
	struct dust_pad p;

	dust_pad_default(&p);
	p.min = p.max = 0;
	return p;
}

bool select_backend(benchmark::State &state)
{
	if (dust_crypto_select(kBackend[state.range(0)]) == 0 &&
	    dust_suite_available((uint8_t)state.range(1)))
		return true;
	state.SkipWithError("backend or suite not available here");
	return false;
}

void rates(benchmark::State &state, uint64_t pkts)
{
	state.counters["pps"] = benchmark::Counter((double)pkts, benchmark::Counter::kIsRate);
	state.SetBytesProcessed((int64_t)(pkts * (uint64_t)state.range(2)));
}

/* dust_data_seal_burst of 32, in place (the bytes need not stay meaningful). */
void BM_codec_seal(benchmark::State &state)
{
	size_t n = (size_t)state.range(2);
	crypto_pair pr((uint8_t)state.range(1));
	struct dust_pad pad = no_pad();
	struct dust_rng rng;
	std::vector<uint8_t> buf(kBurst * kCap);
	struct dust_tx_pkt tx[kBurst];
	uint64_t pkts = 0;

	if (!select_backend(state))
		return;
	dust_rng_init(&rng);
	randombytes_buf(buf.data(), buf.size());
	for (auto _ : state) {
		for (unsigned j = 0; j < kBurst; j++)
			tx[j] = {&pr.cli, &buf[j * kCap], n, kCap, 0};
		if (dust_data_seal_burst(tx, kBurst, &rng, &pad, (uint32_t)time(nullptr)) !=
		    kBurst) {
			state.SkipWithError("seal failed");
			break;
		}
		pkts += kBurst;
	}
	rates(state, pkts);
	dust_crypto_select("ipsec-mb");
}

/* Copy 32 sealed datagrams in, dust_datagram_open_burst them. */
void BM_codec_open(benchmark::State &state)
{
	size_t n = (size_t)state.range(2);
	crypto_pair pr((uint8_t)state.range(1));
	struct dust_pad pad = no_pad();
	struct dust_rng rng;
	struct dust_limits lim;
	std::vector<uint8_t> pool(kPool * kCap), work(kBurst * kCap);
	std::vector<uint16_t> plen(kPool);
	struct dust_session *sess[kBurst];
	uint8_t *dg[kBurst];
	uint16_t len[kBurst];
	struct dust_rx_result res[kBurst];
	uint32_t now = (uint32_t)time(nullptr);
	uint64_t pkts = 0;
	unsigned k = 0;

	if (!select_backend(state))
		return;
	dust_rng_init(&rng);
	dust_limits_default(&lim);
	for (unsigned i = 0; i < kPool; i++) {
		randombytes_buf(&pool[i * kCap + DUST_DATA_PREFIX], n);
		plen[i] =
		    (uint16_t)dust_data_seal(&pr.cli, &rng, &pad, now, &pool[i * kCap], n, kCap);
	}
	for (unsigned j = 0; j < kBurst; j++) {
		sess[j] = &pr.srv;
		dg[j] = &work[j * kCap];
	}
	for (auto _ : state) {
		if (k == kPool) {
			k = 0;
			dust_replay_init(&pr.srv.replay);
		}
		for (unsigned j = 0; j < kBurst; j++) {
			memcpy(dg[j], &pool[(k + j) * kCap], plen[k + j]);
			len[j] = plen[k + j];
		}
		if (dust_datagram_open_burst(sess, dg, len, kBurst, &lim, now, res) != kBurst) {
			state.SkipWithError("open failed");
			break;
		}
		pkts += kBurst;
		k += kBurst;
	}
	rates(state, pkts);
	dust_crypto_select("ipsec-mb");
}

/* ---- The bare primitives: 32 packets, 16 bytes of AD, nonce 0^4 | counter ---- */

void nonce_at(uint8_t nonce[12], uint64_t c)
{
	memset(nonce, 0, 4);
	memcpy(nonce + 4, &c, 8);
}

int sodium_seal(uint8_t suite, uint8_t *b, size_t n, const uint8_t *ad, const uint8_t *nonce,
                const uint8_t *key)
{
	if (suite == DUST_SUITE_AES256GCM)
		return crypto_aead_aes256gcm_encrypt_detached(b, b + n, nullptr, b, n, ad, 16,
		                                              nullptr, nonce, key);
	return crypto_aead_chacha20poly1305_ietf_encrypt_detached(b, b + n, nullptr, b, n, ad, 16,
	                                                          nullptr, nonce, key);
}

/*
 * Whether this CPU and build can run lib's suite: if not, the benchmark is
 * skipped with the reason and false returned.
 */
bool bare_runs(benchmark::State &state, int lib, uint8_t suite)
{
	if (suite == DUST_SUITE_AES256GCM && !crypto_aead_aes256gcm_is_available()) {
		state.SkipWithError("no AES-NI");
		return false;
	}
#ifndef DUST_HAVE_IPSECMB
	if (lib == 1) {
		state.SkipWithError("libipsec-mb not built in");
		return false;
	}
#else
	(void)lib;
#endif
	return true;
}

/* sodium: in place; lib 0 = libsodium, 1 = libipsec-mb. */
void BM_bare_seal(benchmark::State &state);
void BM_bare_open(benchmark::State &state);

#ifdef DUST_HAVE_IPSECMB
/* One manager for the benchmark thread, as the backend keeps one per thread. */
struct imb {
	IMB_MGR *mgr = nullptr;
	struct gcm_key_data kd __attribute__((aligned(64)));
	uint8_t key[32];

	imb(uint8_t suite, const uint8_t *k)
	{
		mgr = alloc_mb_mgr(0);
		init_mb_mgr_auto(mgr, nullptr);
		memcpy(key, k, 32);
		if (suite == DUST_SUITE_AES256GCM)
			IMB_AES256_GCM_PRE(mgr, key, &kd);
	}
	~imb()
	{
		free_mb_mgr(mgr);
	}

	/* A burst of n packets at bufs (src == dst unless out given), tags at tag[]. */
	bool run(uint8_t suite, bool seal, uint8_t *const *src, uint8_t *const *dst, size_t len,
	         const uint8_t *ad, uint8_t (*nonce)[12], uint8_t (*tag)[16], unsigned n)
	{
		IMB_JOB *jobs[kBurst];
		bool gcm = suite == DUST_SUITE_AES256GCM;
		unsigned got = IMB_GET_NEXT_BURST(mgr, n, jobs), done;

		if (got < n)
			return false;
		for (unsigned i = 0; i < n; i++) {
			IMB_JOB *j = jobs[i];

			j->cipher_mode = gcm ? IMB_CIPHER_GCM : IMB_CIPHER_CHACHA20_POLY1305;
			j->hash_alg = gcm ? IMB_AUTH_AES_GMAC : IMB_AUTH_CHACHA20_POLY1305;
			j->cipher_direction = seal ? IMB_DIR_ENCRYPT : IMB_DIR_DECRYPT;
			j->chain_order = seal ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
			j->enc_keys = j->dec_keys = gcm ? (const void *)&kd : (const void *)key;
			j->key_len_in_bytes = IMB_KEY_256_BYTES;
			j->src = src[i];
			j->dst = dst[i];
			j->cipher_start_src_offset_in_bytes = 0;
			j->hash_start_src_offset_in_bytes = 0;
			j->msg_len_to_cipher_in_bytes = len;
			j->msg_len_to_hash_in_bytes = len;
			j->iv = nonce[i];
			j->iv_len_in_bytes = 12;
			if (gcm) {
				j->u.GCM.aad = ad;
				j->u.GCM.aad_len_in_bytes = 16;
				j->u.GCM.ctx = nullptr;
			} else {
				j->u.CHACHA20_POLY1305.aad = ad;
				j->u.CHACHA20_POLY1305.aad_len_in_bytes = 16;
				j->u.CHACHA20_POLY1305.ctx = nullptr;
			}
			j->auth_tag_output = tag[i];
			j->auth_tag_output_len_in_bytes = 16;
		}
		done = IMB_SUBMIT_BURST(mgr, n, jobs);
		while (done < n) {
			unsigned c = IMB_FLUSH_BURST(mgr, n - done, jobs);
			if (!c)
				return false;
			done += c;
		}
		return true;
	}
};
#endif

void BM_bare_seal(benchmark::State &state)
{
	int lib = (int)state.range(0);
	uint8_t suite = (uint8_t)state.range(1);
	size_t n = (size_t)state.range(2);
	std::vector<uint8_t> buf(kBurst * kCap);
	uint8_t key[32], ad[16] = {0}, nonce[kBurst][12], tag[kBurst][16];
	uint8_t *b[kBurst];
	uint64_t pkts = 0, ctr = 0;

	if (!bare_runs(state, lib, suite))
		return;
	randombytes_buf(key, sizeof(key));
	randombytes_buf(buf.data(), buf.size());
	for (unsigned j = 0; j < kBurst; j++)
		b[j] = &buf[j * kCap];
#ifdef DUST_HAVE_IPSECMB
	imb m(suite, key);
#endif
	for (auto _ : state) {
		for (unsigned j = 0; j < kBurst; j++)
			nonce_at(nonce[j], ctr++);
		if (lib == 0) {
			for (unsigned j = 0; j < kBurst; j++)
				sodium_seal(suite, b[j], n, ad, nonce[j], key);
		}
#ifdef DUST_HAVE_IPSECMB
		else if (!m.run(suite, true, b, b, n, ad, nonce, tag, kBurst)) {
			state.SkipWithError("IMB_SUBMIT_BURST failed");
			break;
		}
#endif
		pkts += kBurst;
	}
	(void)tag;
	rates(state, pkts);
}

/*
 * Copy the 32 sealed packets in, decrypt out of place and compare each tag
 * in constant time: what opening must do (libsodium verifies first itself).
 */
void BM_bare_open(benchmark::State &state)
{
	int lib = (int)state.range(0);
	uint8_t suite = (uint8_t)state.range(1);
	size_t n = (size_t)state.range(2);
	std::vector<uint8_t> pool(kBurst * kCap), in(kBurst * kCap), out(kBurst * kCap);
	uint8_t key[32], ad[16] = {0}, nonce[kBurst][12], tag[kBurst][16];
	uint8_t *src[kBurst], *dst[kBurst];
	uint64_t pkts = 0;

	if (!bare_runs(state, lib, suite))
		return;
	randombytes_buf(key, sizeof(key));
	randombytes_buf(pool.data(), pool.size());
	for (unsigned j = 0; j < kBurst; j++) {
		nonce_at(nonce[j], j);
		sodium_seal(suite, &pool[j * kCap], n, ad, nonce[j], key);
		src[j] = &in[j * kCap];
		dst[j] = &out[j * kCap];
	}
#ifdef DUST_HAVE_IPSECMB
	imb m(suite, key);
#endif
	for (auto _ : state) {
		bool bad = false;

		for (unsigned j = 0; j < kBurst; j++)
			memcpy(src[j], &pool[j * kCap], n + 16);
		if (lib == 0) {
			for (unsigned j = 0; j < kBurst; j++)
				bad |= (suite == DUST_SUITE_AES256GCM
				            ? crypto_aead_aes256gcm_decrypt_detached(
				                  dst[j], nullptr, src[j], n, src[j] + n, ad, 16,
				                  nonce[j], key)
				            : crypto_aead_chacha20poly1305_ietf_decrypt_detached(
				                  dst[j], nullptr, src[j], n, src[j] + n, ad, 16,
				                  nonce[j], key)) != 0;
		}
#ifdef DUST_HAVE_IPSECMB
		else {
			bad = !m.run(suite, false, src, dst, n, ad, nonce, tag, kBurst);
			for (unsigned j = 0; j < kBurst && !bad; j++)
				bad |= crypto_verify_16(tag[j], src[j] + n) != 0;
		}
#endif
		if (bad) {
			state.SkipWithError("bare open failed");
			break;
		}
		pkts += kBurst;
	}
	rates(state, pkts);
}

void crypto_args(benchmark::internal::Benchmark *b)
{
	b->ArgNames({"backend", "suite", "size"});
	for (int64_t suite : {0, 1})
		for (int64_t size : {64, 1400})
			for (int64_t lib : {0, 1})
				b->Args({lib, suite, size});
}

/* ML-KEM-768 on a fixed key pair: each iteration is one whole operation. */
struct mlkem_fixture {
	uint8_t ek[DUST_MLKEM768_EKBYTES], dk[DUST_MLKEM768_DKBYTES];
	uint8_t ct[DUST_MLKEM768_CTBYTES], ss[DUST_MLKEM768_SSBYTES];
	struct dust_rng rng;

	mlkem_fixture()
	{
		dust_rng_init(&rng);
		if (dust_mlkem768_keypair(ek, dk, &rng) != 0 ||
		    dust_mlkem768_enc(ct, ss, ek, &rng) != 0)
			abort();
	}
	~mlkem_fixture()
	{
		sodium_memzero(dk, sizeof(dk));
		dust_rng_wipe(&rng);
	}
};

void BM_mlkem768_keygen(benchmark::State &state)
{
	mlkem_fixture f;

	for (auto _ : state)
		if (dust_mlkem768_keypair(f.ek, f.dk, &f.rng) != 0) {
			state.SkipWithError("keypair failed");
			break;
		}
}

void BM_mlkem768_encaps(benchmark::State &state)
{
	mlkem_fixture f;

	for (auto _ : state)
		if (dust_mlkem768_enc(f.ct, f.ss, f.ek, &f.rng) != 0) {
			state.SkipWithError("enc failed");
			break;
		}
}

void BM_mlkem768_decaps(benchmark::State &state)
{
	mlkem_fixture f;
	uint8_t ss[DUST_MLKEM768_SSBYTES];

	for (auto _ : state)
		if (dust_mlkem768_dec(ss, f.ct, f.dk) != 0) {
			state.SkipWithError("dec failed");
			break;
		}
	if (sodium_memcmp(ss, f.ss, sizeof(ss)) != 0)
		state.SkipWithError("dec gave another key");
}

/* One X25519 shared secret with libsodium. */
void BM_x25519_sodium_derive(benchmark::State &state)
{
	uint8_t sk[crypto_scalarmult_SCALARBYTES], pk[crypto_scalarmult_BYTES];
	uint8_t out[crypto_scalarmult_BYTES];

	randombytes_buf(sk, sizeof(sk));
	crypto_scalarmult_base(pk, sk);
	for (auto _ : state) {
		if (crypto_scalarmult(out, sk, pk) != 0) {
			state.SkipWithError("crypto_scalarmult failed");
			break;
		}
		benchmark::DoNotOptimize(out);
	}
}

/* One X25519 shared secret with OpenSSL: EVP_PKEY_derive on a context made once. */
void BM_x25519_openssl_derive(benchmark::State &state)
{
	EVP_PKEY *me = EVP_PKEY_Q_keygen(NULL, NULL, "X25519");
	EVP_PKEY *peer = EVP_PKEY_Q_keygen(NULL, NULL, "X25519");
	EVP_PKEY_CTX *c = me ? EVP_PKEY_CTX_new(me, NULL) : NULL;
	uint8_t out[32];
	size_t len;

	if (!peer || !c || EVP_PKEY_derive_init(c) != 1 || EVP_PKEY_derive_set_peer(c, peer) != 1)
		state.SkipWithError("OpenSSL X25519 setup failed");
	else
		for (auto _ : state) {
			len = sizeof(out);
			if (EVP_PKEY_derive(c, out, &len) != 1 || len != 32) {
				state.SkipWithError("EVP_PKEY_derive failed");
				break;
			}
			benchmark::DoNotOptimize(out);
		}
	EVP_PKEY_CTX_free(c);
	EVP_PKEY_free(peer);
	EVP_PKEY_free(me);
}

BENCHMARK(BM_mlkem768_keygen);
BENCHMARK(BM_mlkem768_encaps);
BENCHMARK(BM_mlkem768_decaps);
BENCHMARK(BM_x25519_sodium_derive);
BENCHMARK(BM_x25519_openssl_derive);

BENCHMARK(BM_bare_seal)->Apply(crypto_args);
BENCHMARK(BM_codec_seal)->Apply(crypto_args);
BENCHMARK(BM_bare_open)->Apply(crypto_args);
BENCHMARK(BM_codec_open)->Apply(crypto_args);

} // namespace
