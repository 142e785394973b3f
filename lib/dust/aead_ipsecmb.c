/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The libipsec-mb AEAD backend: one IMB_MGR per thread (init_mb_mgr_auto
 * picks the AVX-512, AVX2, AVX or SSE code), a whole burst per
 * IMB_SUBMIT_BURST. AES-256-GCM's expanded keys live in a per-thread cache
 * keyed by the raw key, so a session's key is expanded once, not per packet;
 * a wiped session's keys leave it (aead_ipsecmb_forget).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <intel-ipsec-mb.h>
#include <sodium.h>

#include "aead.h"
#include "siphash.h"

enum {
	GCM_CACHE = 256,    /* expanded keys per thread, 2-way: 272 KiB with the VAES tables */
	CHUNK = 64,         /* jobs per submission, within IMB_MAX_BURST_SIZE */
	FORGET_RING = 1024, /* forgotten keys a thread catches up on; further behind: all */
};
static_assert(CHUNK <= IMB_MAX_BURST_SIZE, "one submission per chunk");

struct gcm_slot {
	struct gcm_key_data kd
	    __attribute__((aligned(64))); /* the header aligns it only under -DLINUX */
	uint8_t raw[DUST_KEY_BYTES];
	uint64_t hash;  /* keyed hash of raw: its set, and what a forget looks for */
	uint32_t stamp; /* chunk that last used this slot: not evictable within it */
	uint8_t used;
};

struct imb_thread {
	struct gcm_slot gcm[GCM_CACHE];
	struct gcm_slot *last; /* the previous AES-GCM job's slot; NULL after a forget */
	IMB_MGR *mgr;
	IMB_ARCH arch;
	uint32_t chunk;
	uint64_t forgot; /* forget ring entries this cache is clear of */
	bool broken;     /* a submission went unreported: the manager is not used again */
};

static __thread struct imb_thread *tls;
static __thread bool tls_failed;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

/*
 * The cache's set of a key is a keyed hash of it, not a key byte: which
 * lines a lookup touches then says nothing about the key. One random key
 * per process (key_create).
 */
static uint8_t set_key[16];

/*
 * Keys whose sessions were wiped, as their set hashes: any thread appends
 * (aead_ipsecmb_forget), each thread drops its own copies before its next
 * submission (forget_catch_up). Never another thread's cache: its slots may
 * be in a job in flight.
 */
static struct {
	pthread_mutex_t lock;
	uint64_t n; /* entries ever appended; written under lock, read atomically */
	uint64_t hash[FORGET_RING];
} forget = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void thread_free(void *p)
{
	struct imb_thread *t = p;

	free_mb_mgr(t->mgr);
	sodium_munlock(t->gcm, sizeof(t->gcm)); /* also zeroes the keys */
	free(t);
}

static void key_create(void)
{
	(void)pthread_key_create(&tls_key, thread_free);
	randombytes_buf(set_key, sizeof(set_key));
}

static struct imb_thread *thread_get(void)
{
	struct imb_thread *t;

	if (tls || tls_failed)
		return tls;
	pthread_once(&tls_once, key_create);
	t = aligned_alloc(64, sizeof(*t));
	if (!t)
		goto fail;
	memset(t, 0, sizeof(*t));
	t->mgr = alloc_mb_mgr(0);
	if (!t->mgr)
		goto fail_free;
	init_mb_mgr_auto(t->mgr, &t->arch);
	if (imb_get_errno(t->mgr) != 0 || t->arch == IMB_ARCH_NONE)
		goto fail_mgr;
	(void)sodium_mlock(t->gcm, sizeof(t->gcm));
	/* an empty cache holds none of the keys forgotten so far */
	t->forgot = __atomic_load_n(&forget.n, __ATOMIC_ACQUIRE);
	(void)pthread_setspecific(tls_key, t);
	tls = t;
	return t;
fail_mgr:
	free_mb_mgr(t->mgr);
fail_free:
	free(t);
fail:
	tls_failed = true;
	return NULL;
}

bool aead_ipsecmb_usable(void)
{
	return thread_get() != NULL;
}

/* Its AES-GCM without AES-NI would be table-based: slow and open to cache timing. */
static bool has_aesni(const struct imb_thread *t)
{
	return t->arch != IMB_ARCH_NOAESNI;
}

bool aead_ipsecmb_suite_ok(uint8_t suite)
{
	struct imb_thread *t = thread_get();

	if (!t || suite >= DUST_SUITE_COUNT)
		return false;
	return suite == DUST_SUITE_CHACHA20POLY1305 || has_aesni(t);
}

/* Equal keys? In constant time, a word at a time (sodium_memcmp goes byte by byte). */
static bool key_eq(const uint8_t *a, const uint8_t *b)
{
	uint64_t x, y, d = 0;

	for (int i = 0; i < DUST_KEY_BYTES; i += 8) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		d |= x ^ y;
	}
	return d == 0;
}

static uint64_t set_hash(const uint8_t *raw)
{
	return dust_siphash64_32(raw, set_key);
}

static struct gcm_slot *gcm_set(struct imb_thread *t, uint64_t hash)
{
	return &t->gcm[hash % (GCM_CACHE / 2) * 2];
}

/*
 * The expanded key for raw, or NULL when both slots of its set already serve
 * other keys in this chunk (the chunk must be submitted before one is
 * reused). Two ways per set, the one used longer ago is replaced. A run of
 * one session's packets asks for one key: the previous job's slot is tried
 * first, which saves the hash (~18 ns here, a quarter of a 64-byte packet).
 */
static const struct gcm_key_data *gcm_key(struct imb_thread *t, const uint8_t *raw)
{
	struct gcm_slot *a, *b, *g = t->last;
	uint64_t h;

	if (g && key_eq(g->raw, raw)) {
		g->stamp = t->chunk;
		return &g->kd;
	}
	h = set_hash(raw);
	a = gcm_set(t, h);
	b = a + 1;
	if (a->used && key_eq(a->raw, raw))
		g = a;
	else if (b->used && key_eq(b->raw, raw))
		g = b;
	else {
		g = !a->used ? a : !b->used ? b : a->stamp <= b->stamp ? a : b;
		if (g->used && g->stamp == t->chunk)
			return NULL;
		IMB_AES256_GCM_PRE(t->mgr, raw, &g->kd);
		memcpy(g->raw, raw, DUST_KEY_BYTES);
		g->hash = h;
		g->used = 1;
	}
	g->stamp = t->chunk;
	t->last = g;
	return &g->kd;
}

/* Drop this thread's copies of the keys forgotten since it last looked. */
static void forget_catch_up(struct imb_thread *t)
{
	uint64_t n = __atomic_load_n(&forget.n, __ATOMIC_ACQUIRE);

	if (n == t->forgot)
		return;
	pthread_mutex_lock(&forget.lock);
	n = forget.n;
	if (n - t->forgot > FORGET_RING) {
		sodium_memzero(t->gcm, sizeof(t->gcm)); /* entries overwritten: drop them all */
	} else {
		for (uint64_t i = t->forgot; i < n; i++) {
			uint64_t h = forget.hash[i % FORGET_RING];
			struct gcm_slot *a = gcm_set(t, h);

			for (int w = 0; w < 2; w++)
				if (a[w].used && a[w].hash == h)
					sodium_memzero(&a[w], sizeof(a[w]));
		}
	}
	t->forgot = n;
	t->last = NULL;
	pthread_mutex_unlock(&forget.lock);
}

void aead_ipsecmb_forget(const uint8_t *const *keys, unsigned n)
{
	uint64_t at;

	pthread_once(&tls_once, key_create);
	pthread_mutex_lock(&forget.lock);
	at = forget.n;
	for (unsigned i = 0; i < n; i++)
		forget.hash[(at + i) % FORGET_RING] = set_hash(keys[i]);
	__atomic_store_n(&forget.n, at + n, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&forget.lock);
	if (tls)
		forget_catch_up(tls); /* this thread's own copies go now */
}

bool aead_ipsecmb_cached(const uint8_t *raw)
{
	struct imb_thread *t = tls;
	struct gcm_slot *a;

	if (!t)
		return false;
	a = gcm_set(t, set_hash(raw));
	return (a[0].used && key_eq(a[0].raw, raw)) || (a[1].used && key_eq(a[1].raw, raw));
}

/* Fill a job for op; false when op must wait for the next chunk. */
static bool job_fill(struct imb_thread *t, IMB_JOB *j, struct aead_op *op, bool seal,
                     uint8_t *tag_out)
{
	const void *key = op->key;
	bool gcm = op->suite == DUST_SUITE_AES256GCM;

	if (gcm && (!has_aesni(t) || !(key = gcm_key(t, op->key))))
		return false;
	j->cipher_mode = gcm ? IMB_CIPHER_GCM : IMB_CIPHER_CHACHA20_POLY1305;
	j->hash_alg = gcm ? IMB_AUTH_AES_GMAC : IMB_AUTH_CHACHA20_POLY1305;
	j->cipher_direction = seal ? IMB_DIR_ENCRYPT : IMB_DIR_DECRYPT;
	j->chain_order = seal ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
	j->enc_keys = key;
	j->dec_keys = key;
	j->key_len_in_bytes = IMB_KEY_256_BYTES;
	j->src = op->src;
	j->dst = op->dst;
	j->cipher_start_src_offset_in_bytes = 0;
	j->msg_len_to_cipher_in_bytes = op->len;
	j->hash_start_src_offset_in_bytes = 0;
	j->msg_len_to_hash_in_bytes = op->len;
	j->iv = op->nonce;
	j->iv_len_in_bytes = DUST_NONCE_BYTES;
	if (gcm) {
		j->u.GCM.aad = op->ad;
		j->u.GCM.aad_len_in_bytes = AEAD_AD_BYTES;
		j->u.GCM.ctx = NULL;
	} else {
		j->u.CHACHA20_POLY1305.aad = op->ad;
		j->u.CHACHA20_POLY1305.aad_len_in_bytes = AEAD_AD_BYTES;
		j->u.CHACHA20_POLY1305.ctx = NULL;
	}
	j->auth_tag_output = tag_out;
	j->auth_tag_output_len_in_bytes = DUST_MAC_BYTES;
	j->user_data = op;
	j->user_data2 = tag_out;
	return true;
}

/* A finished job: sealed, or opened with its tag compared in constant time. */
static void job_done(IMB_JOB *j, bool seal)
{
	struct aead_op *op = j->user_data;

	if (seal) {
		op->ok = j->status == IMB_STATUS_COMPLETED;
		return;
	}
	op->ok = j->status == IMB_STATUS_COMPLETED && crypto_verify_16(j->user_data2, op->tag) == 0;
	if (!op->ok)
		sodium_memzero(op->dst, op->len);
}

/*
 * Submit up to CHUNK ops. Returns how many were taken and finished (the
 * rest wait), 0 when none could be taken, or -k when the manager took k but
 * handed fewer back: those may have run, in part.
 */
static int run_chunk(struct imb_thread *t, struct aead_op *ops, unsigned n, bool seal,
                     uint8_t (*tags)[DUST_MAC_BYTES])
{
	IMB_JOB *jobs[CHUNK];
	unsigned k = 0, done, got;

	if (n > CHUNK)
		n = CHUNK;
	t->chunk++;
	got = IMB_GET_NEXT_BURST(t->mgr, n, jobs);
	while (k < got && job_fill(t, jobs[k], &ops[k], seal, seal ? ops[k].tag : tags[k]))
		k++;
	if (k == 0)
		return 0;
	done = IMB_SUBMIT_BURST(t->mgr, k, jobs);
	for (unsigned i = 0; i < done; i++)
		job_done(jobs[i], seal);
	while (done < k) {
		unsigned c = IMB_FLUSH_BURST(t->mgr, k - done, jobs);

		if (c == 0)
			break;
		for (unsigned i = 0; i < c; i++)
			job_done(jobs[i], seal);
		done += c;
	}
	return done == k ? (int)k : -(int)k;
}

/*
 * A chunk the manager took and did not hand back whole (never seen): its
 * jobs may have run, in part, and may run yet at a later submission,
 * writing through pointers into buffers that are no longer ours. This
 * thread stops using the manager, and its cache goes.
 */
static void give_up(struct imb_thread *t)
{
	t->broken = true;
	sodium_memzero(t->gcm, sizeof(t->gcm));
}

/*
 * false: this thread has no usable manager; the caller runs the burst on
 * libsodium. After a refused chunk, the ops the manager never took finish
 * on libsodium, same bytes. Not the seals of a chunk it took and did not
 * hand back: sealing is in place, so sealing again what may have run in
 * part could send plaintext or a double encryption. Those fail (ok = 0:
 * the caller drops the packet). An open is out of place: it runs again.
 */
static bool run(struct aead_op *ops, unsigned n, bool seal)
{
	uint8_t tags[CHUNK][DUST_MAC_BYTES];
	struct imb_thread *t = thread_get();
	unsigned at = 0, lost = 0;

	if (!t || t->broken)
		return false;
	forget_catch_up(t);
	for (unsigned i = 0; i < n; i++)
		ops[i].ok = 0;
	while (at < n) {
		int k = run_chunk(t, ops + at, n - at, seal, tags);

		if (k <= 0) {
			lost = (unsigned)-k;
			break;
		}
		at += (unsigned)k;
	}
	if (!seal)
		sodium_memzero(tags, sizeof(tags));
	if (lost)
		give_up(t);
	for (unsigned i = at; i < n; i++)
		if (!ops[i].ok && !(seal && i < at + lost))
			seal ? aead_sodium_seal(&ops[i]) : aead_sodium_open(&ops[i]);
	return true;
}

bool aead_ipsecmb_seal(struct aead_op *ops, unsigned n)
{
	return run(ops, n, true);
}

bool aead_ipsecmb_open(struct aead_op *ops, unsigned n)
{
	return run(ops, n, false);
}

static const char *arch_name(IMB_ARCH a)
{
	switch (a) {
	case IMB_ARCH_NOAESNI:
		return "no AES-NI";
	case IMB_ARCH_SSE:
		return "SSE";
	case IMB_ARCH_AVX:
		return "AVX";
	case IMB_ARCH_AVX2:
		return "AVX2";
	case IMB_ARCH_AVX512:
		return "AVX-512";
	default:
		return "?";
	}
}

void aead_ipsecmb_name(char *buf, size_t len)
{
	struct imb_thread *t = thread_get();

	if (!t) {
		snprintf(buf, len, "libipsec-mb %s (no manager)", imb_get_version_str());
		return;
	}
	snprintf(buf, len, "libipsec-mb %s (%s%s)", imb_get_version_str(), arch_name(t->arch),
	         (t->mgr->features & IMB_FEATURE_VAES) ? ", VAES" : "");
}
