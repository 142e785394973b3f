/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The key schedule (SPEC.md §4): invitation keys, the rotating intro tag,
 * session keys split per direction and purpose, and the intro confirmation.
 * All BLAKE2b (crypto_generichash / crypto_kdf).
 */
#include <string.h>

#include <sodium.h>

#include "dust_pvt.h"

static const char session_label[] = "dust v2 session";
static const char answer_label[] = "dust v2 answer";

DUST_EXPORT void dust_invite_derive(const struct dust_invite *inv, struct dust_invite_keys *keys)
{
	crypto_kdf_derive_from_key(keys->tag_key, sizeof(keys->tag_key), DUST_KDF_TAG,
	                           DUST_KDF_CTX_INVITE, inv->secret);
	crypto_kdf_derive_from_key(keys->intro_key, sizeof(keys->intro_key), DUST_KDF_INTRO,
	                           DUST_KDF_CTX_INVITE, inv->secret);
}

DUST_EXPORT void dust_intro_tag(const struct dust_invite_keys *keys, uint64_t epoch,
                                uint8_t tag[DUST_TAG_BYTES])
{
	uint8_t msg[8];

	le64_put(msg, epoch);
	crypto_generichash(tag, DUST_TAG_BYTES, msg, sizeof(msg), keys->tag_key,
	                   sizeof(keys->tag_key));
}

void kdf_prk(uint8_t prk[DUST_KEY_BYTES], const uint8_t key[DUST_KEY_BYTES], const char *label,
             const struct kdf_part *parts, unsigned n)
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, key, DUST_KEY_BYTES, DUST_KEY_BYTES);
	crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
	for (unsigned i = 0; i < n; i++)
		crypto_generichash_update(&st, parts[i].p, parts[i].len);
	crypto_generichash_final(&st, prk, DUST_KEY_BYTES);
	sodium_memzero(&st, sizeof(st));
}

void dust_intro_prk(uint8_t prk[DUST_KEY_BYTES], const uint8_t secret[DUST_KEY_BYTES],
                    const uint8_t dh_es[DUST_KEY_BYTES], const uint8_t dh_cs[DUST_KEY_BYTES],
                    const uint8_t server_pk[DUST_PK_BYTES], const uint8_t *transcript,
                    size_t transcript_len)
{
	/* prk = BLAKE2b-256(key = invitation secret, label | es | cs | S | transcript) */
	const struct kdf_part parts[] = {{dh_es, DUST_KEY_BYTES},
	                                 {dh_cs, DUST_KEY_BYTES},
	                                 {server_pk, DUST_PK_BYTES},
	                                 {transcript, transcript_len}};

	kdf_prk(prk, secret, session_label, parts, sizeof(parts) / sizeof(parts[0]));
}

void dust_answer_key(uint8_t key[DUST_KEY_BYTES], const uint8_t prk[DUST_KEY_BYTES])
{
	crypto_kdf_derive_from_key(key, DUST_KEY_BYTES, DUST_KDF_ANSWER, DUST_KDF_CTX_SESSION, prk);
}

void dust_answer_prk(uint8_t prk2[DUST_KEY_BYTES], const uint8_t prk[DUST_KEY_BYTES],
                     const uint8_t dh_ee[DUST_KEY_BYTES], const uint8_t share[DUST_PK_BYTES])
{
	/* prk2 = BLAKE2b-256(key = prk, label | ee | E_s) */
	const struct kdf_part parts[] = {{dh_ee, DUST_KEY_BYTES}, {share, DUST_PK_BYTES}};

	kdf_prk(prk2, prk, answer_label, parts, sizeof(parts) / sizeof(parts[0]));
}

void dust_session_keys_split(struct dust_session_keys *k, const uint8_t prk[DUST_KEY_BYTES])
{
	/* every key of the session: where it goes, its length and its KDF id */
	const struct {
		uint8_t *out;
		size_t len;
		uint64_t id;
	} split[] = {
	    {k->c2s_data, DUST_KEY_BYTES, DUST_KDF_C2S_DATA},
	    {k->s2c_data, DUST_KEY_BYTES, DUST_KDF_S2C_DATA},
	    {k->c2s_hp, DUST_HP_KEY_BYTES, DUST_KDF_C2S_HP},
	    {k->s2c_hp, DUST_HP_KEY_BYTES, DUST_KDF_S2C_HP},
	    {k->confirm, DUST_KEY_BYTES, DUST_KDF_CONFIRM},
	    {k->c2s_upd, DUST_KEY_BYTES, DUST_KDF_C2S_UPD},
	    {k->s2c_upd, DUST_KEY_BYTES, DUST_KDF_S2C_UPD},
	};

	for (size_t i = 0; i < sizeof(split) / sizeof(split[0]); i++)
		crypto_kdf_derive_from_key(split[i].out, split[i].len, split[i].id,
		                           DUST_KDF_CTX_SESSION, prk);
}

void dust_intro_confirm(const struct dust_session_keys *k, const uint8_t *intro, size_t len,
                        uint8_t out[DUST_CONFIRM_BYTES])
{
	crypto_generichash(out, DUST_CONFIRM_BYTES, intro, len, k->confirm, sizeof(k->confirm));
}

void dust_epoch_key(uint8_t key[DUST_KEY_BYTES], const uint8_t upd[DUST_KEY_BYTES], uint64_t epoch)
{
	crypto_kdf_derive_from_key(key, DUST_KEY_BYTES, epoch, DUST_KDF_CTX_KEYUPD, upd);
}

void dust_session_keys_install(struct dust_session *s, const struct dust_session_keys *k,
                               enum dust_role role, uint8_t suite)
{
	bool client = role == DUST_ROLE_CLIENT;
	uint8_t *txk1 = (uint8_t *)s->txk[1].w;

	memcpy(s->tx_key, client ? k->c2s_data : k->s2c_data, DUST_KEY_BYTES);
	memcpy(s->tx_hp, client ? k->c2s_hp : k->s2c_hp, DUST_HP_KEY_BYTES);
	memcpy(s->rx_key, client ? k->s2c_data : k->c2s_data, DUST_KEY_BYTES);
	memcpy(s->rx_hp, client ? k->s2c_hp : k->c2s_hp, DUST_HP_KEY_BYTES);
	memcpy(s->tx_upd, client ? k->c2s_upd : k->s2c_upd, DUST_KEY_BYTES);
	memcpy(s->rx_upd, client ? k->s2c_upd : k->c2s_upd, DUST_KEY_BYTES);
	dust_replay_init(&s->replay);
	__atomic_store_n(&s->tx_counter, 0, __ATOMIC_RELAXED);
	sodium_memzero(&s->hs, sizeof(s->hs));
	s->hs_pending = 0;
	/*
	 * The path proved unless the caller limits it (dustgw's dgw_path_start):
	 * a session built in an uninitialised struct must not inherit a limit
	 * that its padding would then obey (netns-peer sent unpadded sizes).
	 */
	__atomic_store_n(&s->path_state, DUST_PATH_VALID, __ATOMIC_RELAXED);
	__atomic_store_n(&s->path_credit, 0, __ATOMIC_RELAXED);
	dust_pmtu_reset(s); /* 1252 until the path is probed, whatever the struct held */
	s->role = (uint8_t)role;
	s->suite = suite;
	/* Epoch 1 ready on both sides before the session is published. */
	s->rx_epoch = 0;
	s->rx_forged = 0;
	memset(s->rx_ek_epoch, 0, sizeof(s->rx_ek_epoch));
	dust_epoch_key(s->rx_ek[1], s->rx_upd, 1);
	s->rx_ek_epoch[1] = 1;
	memset(s->txk, 0, sizeof(s->txk));
	dust_epoch_key(txk1, s->tx_upd, 1);
	s->txk[1].epoch = 1;
}

DUST_EXPORT void dust_session_wipe(struct dust_session *s)
{
	dust_aead_forget_session(s);
	sodium_memzero(s, sizeof(*s));
}
