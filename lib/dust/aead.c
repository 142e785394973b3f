/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Which AEAD backend runs the data packets: libipsec-mb when it was built in
 * and this thread could get a manager, libsodium otherwise (or when chosen
 * with dust_crypto_select). Also the suite names and availability, and
 * dust_init.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "aead.h"
#include "dust_pvt.h"

enum backend { BACKEND_SODIUM = 0, BACKEND_IPSECMB = 1 };

#ifdef DUST_HAVE_IPSECMB
static int chosen = BACKEND_IPSECMB;
#else
static int chosen = BACKEND_SODIUM;
#endif

#ifdef DUST_HAVE_IPSECMB
static bool use_ipsecmb(void)
{
	return __atomic_load_n(&chosen, __ATOMIC_RELAXED) == BACKEND_IPSECMB;
}
#endif

void aead_seal_burst(struct aead_op *ops, unsigned n)
{
#ifdef DUST_HAVE_IPSECMB
	if (use_ipsecmb() && aead_ipsecmb_seal(ops, n))
		return;
#endif
	for (unsigned i = 0; i < n; i++)
		aead_sodium_seal(&ops[i]);
}

void aead_open_burst(struct aead_op *ops, unsigned n)
{
#ifdef DUST_HAVE_IPSECMB
	if (use_ipsecmb() && aead_ipsecmb_open(ops, n))
		return;
#endif
	for (unsigned i = 0; i < n; i++)
		aead_sodium_open(&ops[i]);
}

void aead_forget(const uint8_t *const *keys, unsigned n)
{
#ifdef DUST_HAVE_IPSECMB
	if (n)
		aead_ipsecmb_forget(keys, n);
#else
	(void)keys;
	(void)n;
#endif
}

bool aead_key_cached(const uint8_t *key)
{
#ifdef DUST_HAVE_IPSECMB
	return aead_ipsecmb_cached(key);
#else
	(void)key;
	return false;
#endif
}

/*
 * The keys of s the backend may have cached: epoch 0's and the epochs it
 * holds (those it left were forgotten as it left them, packet.c). Only
 * AES-GCM keys are cached, so other sessions cost nothing here.
 */
void dust_aead_forget_session(const struct dust_session *s)
{
	const uint8_t *k[2 + 3 + 2];
	unsigned n = 0;

	if (s->suite != DUST_SUITE_AES256GCM)
		return;
	if (!sodium_is_zero(s->rx_key, DUST_KEY_BYTES))
		k[n++] = s->rx_key;
	if (!sodium_is_zero(s->tx_key, DUST_KEY_BYTES))
		k[n++] = s->tx_key;
	for (int i = 0; i < 3; i++)
		if (s->rx_ek_epoch[i])
			k[n++] = s->rx_ek[i];
	for (int i = 0; i < 2; i++)
		if (s->txk[i].epoch)
			k[n++] = (const uint8_t *)s->txk[i].w;
	aead_forget(k, n);
}

void aead_warm(void)
{
	uint8_t key[DUST_KEY_BYTES] = {0}, ad[AEAD_AD_BYTES] = {0}, buf[64] = {0}, tag[16];
	struct aead_op op[DUST_SUITE_COUNT];

	for (unsigned i = 0; i < DUST_SUITE_COUNT; i++)
		op[i] = (struct aead_op){.key = key,
		                         .ad = ad,
		                         .src = buf,
		                         .dst = buf,
		                         .tag = tag,
		                         .len = sizeof(buf),
		                         .suite = (uint8_t)i};
	aead_seal_burst(op, DUST_SUITE_COUNT);
}

/* libdust's initialisation lives with the backends it warms (aead_warm). */
DUST_EXPORT int dust_init(void)
{
	if (sodium_init() < 0)
		return -1;
	aead_warm();
	return 0;
}

DUST_EXPORT int dust_crypto_select(const char *name)
{
	if (!strcmp(name, "sodium")) {
		__atomic_store_n(&chosen, BACKEND_SODIUM, __ATOMIC_RELAXED);
		return 0;
	}
#ifdef DUST_HAVE_IPSECMB
	if (!strcmp(name, "ipsec-mb") && aead_ipsecmb_usable()) {
		__atomic_store_n(&chosen, BACKEND_IPSECMB, __ATOMIC_RELAXED);
		return 0;
	}
#endif
	return dust_fail(ENOTSUP, "crypto backend %s is not built in or cannot run here", name);
}

DUST_EXPORT const char *dust_crypto_backend_name(void)
{
	static __thread char name[96];

#ifdef DUST_HAVE_IPSECMB
	if (use_ipsecmb() && aead_ipsecmb_usable()) {
		aead_ipsecmb_name(name, sizeof(name));
		return name;
	}
#endif
	aead_sodium_name(name, sizeof(name));
	return name;
}

DUST_EXPORT bool dust_suite_available(uint8_t suite)
{
#ifdef DUST_HAVE_IPSECMB
	if (use_ipsecmb() && aead_ipsecmb_usable())
		return aead_ipsecmb_suite_ok(suite);
#endif
	return aead_sodium_suite_ok(suite);
}

static const char *const suite_names[DUST_SUITE_COUNT] = {
    [DUST_SUITE_CHACHA20POLY1305] = "chacha20-poly1305",
    [DUST_SUITE_AES256GCM] = "aes-256-gcm",
};

DUST_EXPORT const char *dust_suite_name(uint8_t suite)
{
	return suite < DUST_SUITE_COUNT ? suite_names[suite] : "unknown";
}

DUST_EXPORT int dust_suite_parse(const char *name)
{
	for (int i = 0; i < DUST_SUITE_COUNT; i++)
		if (!strcmp(name, suite_names[i]))
			return i;
	return dust_fail(EINVAL, "unknown cipher suite %s (chacha20-poly1305 or aes-256-gcm)",
	                 name);
}
