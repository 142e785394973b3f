/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Invitations (SPEC.md §3): the 128-byte plaintext, sealed with Argon2id and
 * XChaCha20-Poly1305 under a password, encoded as base64url text. The sealed
 * bytes are salt, nonce, ciphertext and tag: uniform to anyone without the
 * password.
 */
#include <ctype.h>
#include <stdio.h>

#include <sodium.h>

#include "dust_pvt.h"

#define PWHASH_OPS crypto_pwhash_OPSLIMIT_INTERACTIVE
#define PWHASH_MEM crypto_pwhash_MEMLIMIT_INTERACTIVE

DUST_EXPORT int dust_invite_new(struct dust_invite *inv, const struct dust_identity *server,
                                const struct dust_ipaddr *addr, uint16_t port,
                                const struct dust_ipaddr *tunnel, uint8_t tunnel_prefix,
                                uint64_t expiry)
{
	if ((addr->family != 4 && addr->family != 6) ||
	    (tunnel->family != 4 && tunnel->family != 6))
		return dust_fail(EINVAL, "invitation needs IPv4 or IPv6 addresses");
	if (tunnel_prefix > (tunnel->family == 4 ? 32 : 128))
		return dust_fail(EINVAL, "tunnel prefix /%u too long", tunnel_prefix);
	if (port == 0)
		return dust_fail(EINVAL, "server port must not be 0");
	memset(inv, 0, sizeof(*inv));
	inv->suite = DUST_SUITE_CHACHA20POLY1305;
	inv->server = *addr;
	inv->port = port;
	inv->tunnel = *tunnel;
	inv->tunnel_prefix = tunnel_prefix;
	memcpy(inv->server_pk, server->pk, DUST_PK_BYTES);
	randombytes_buf(inv->id, sizeof(inv->id));
	randombytes_buf(inv->secret, sizeof(inv->secret));
	inv->expiry = expiry;
	return 0;
}

DUST_EXPORT void dust_invite_pack(const struct dust_invite *inv, uint8_t out[DUST_INVITE_PT_BYTES])
{
	struct dust_wire_invite *w = (struct dust_wire_invite *)out;

	memset(out, 0, DUST_INVITE_PT_BYTES);
	w->version = DUST_INVITE_VERSION;
	w->suite = inv->suite;
	w->server_family = inv->server.family;
	w->tunnel_family = inv->tunnel.family;
	w->server_port[0] = (uint8_t)(inv->port >> 8);
	w->server_port[1] = (uint8_t)inv->port;
	w->tunnel_prefix = inv->tunnel_prefix;
	memcpy(w->server_addr, inv->server.a, 16);
	memcpy(w->tunnel_addr, inv->tunnel.a, 16);
	memcpy(w->server_pk, inv->server_pk, DUST_PK_BYTES);
	memcpy(w->id, inv->id, DUST_ID_BYTES);
	memcpy(w->secret, inv->secret, DUST_KEY_BYTES);
	le64_put(w->expiry, inv->expiry);
}

static bool family_ok(uint8_t family, const uint8_t a[16])
{
	static const uint8_t zeros[12];

	if (family == 6)
		return true;
	return family == 4 && memcmp(a + 4, zeros, sizeof(zeros)) == 0;
}

DUST_EXPORT int dust_invite_unpack(struct dust_invite *inv, const uint8_t in[DUST_INVITE_PT_BYTES])
{
	const struct dust_wire_invite *w = (const struct dust_wire_invite *)in;

	if (w->version != DUST_INVITE_VERSION)
		return dust_fail(EINVAL, "invitation version %u, expected %u", w->version,
		                 DUST_INVITE_VERSION);
	if (w->suite != DUST_SUITE_CHACHA20POLY1305 || w->reserved != 0)
		return dust_fail(EINVAL, "invitation uses an unknown cipher suite");
	if (!family_ok(w->server_family, w->server_addr) ||
	    !family_ok(w->tunnel_family, w->tunnel_addr))
		return dust_fail(EINVAL, "invitation has a bad address family");
	if (w->tunnel_prefix > (w->tunnel_family == 4 ? 32 : 128))
		return dust_fail(EINVAL, "invitation has a bad tunnel prefix");
	memset(inv, 0, sizeof(*inv));
	inv->suite = w->suite;
	inv->server.family = w->server_family;
	memcpy(inv->server.a, w->server_addr, 16);
	inv->port = (uint16_t)(w->server_port[0] << 8 | w->server_port[1]);
	inv->tunnel.family = w->tunnel_family;
	memcpy(inv->tunnel.a, w->tunnel_addr, 16);
	inv->tunnel_prefix = w->tunnel_prefix;
	memcpy(inv->server_pk, w->server_pk, DUST_PK_BYTES);
	memcpy(inv->id, w->id, DUST_ID_BYTES);
	memcpy(inv->secret, w->secret, DUST_KEY_BYTES);
	inv->expiry = le64_get(w->expiry);
	return 0;
}

static int password_key(uint8_t key[DUST_KEY_BYTES], const char *pw, size_t pwlen,
                        const uint8_t salt[DUST_SALT_BYTES])
{
	if (crypto_pwhash(key, DUST_KEY_BYTES, pw, pwlen, salt, PWHASH_OPS, PWHASH_MEM,
	                  crypto_pwhash_ALG_ARGON2ID13) != 0)
		return dust_fail(ENOMEM, "Argon2id could not allocate %zu MiB",
		                 (size_t)PWHASH_MEM >> 20);
	return 0;
}

DUST_EXPORT int dust_invite_seal(const struct dust_invite *inv, const char *password,
                                 size_t password_len, char *text, size_t text_cap)
{
	uint8_t sealed[DUST_INVITE_SEALED_BYTES], pt[DUST_INVITE_PT_BYTES], key[DUST_KEY_BYTES];
	uint8_t *salt = sealed, *nonce = sealed + DUST_SALT_BYTES;
	uint8_t *ct = nonce + DUST_XNONCE_BYTES;
	int rc;

	if (password_len == 0)
		return dust_fail(EINVAL, "empty password");
	if (text_cap < DUST_INVITE_TEXT_MAX)
		return dust_fail(ENOBUFS, "invitation text needs %d bytes", DUST_INVITE_TEXT_MAX);
	randombytes_buf(salt, DUST_SALT_BYTES);
	randombytes_buf(nonce, DUST_XNONCE_BYTES);
	rc = password_key(key, password, password_len, salt);
	if (rc)
		goto out_wipe;
	dust_invite_pack(inv, pt);
	crypto_aead_xchacha20poly1305_ietf_encrypt(ct, NULL, pt, sizeof(pt), salt, DUST_SALT_BYTES,
	                                           NULL, nonce, key);
	sodium_bin2base64(text, text_cap, sealed, sizeof(sealed),
	                  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
out_wipe:
	sodium_memzero(pt, sizeof(pt));
	sodium_memzero(key, sizeof(key));
	return rc;
}

DUST_EXPORT int dust_invite_open(struct dust_invite *inv, const char *text, const char *password,
                                 size_t password_len)
{
	uint8_t sealed[DUST_INVITE_SEALED_BYTES], pt[DUST_INVITE_PT_BYTES], key[DUST_KEY_BYTES];
	uint8_t *salt = sealed, *nonce = sealed + DUST_SALT_BYTES;
	uint8_t *ct = nonce + DUST_XNONCE_BYTES;
	size_t binlen = 0;
	const char *end = NULL;
	int rc;

	if (sodium_base642bin(sealed, sizeof(sealed), text, strlen(text), " \t\r\n", &binlen, &end,
	                      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
	    binlen != sizeof(sealed) || (end && *end != '\0'))
		return dust_fail(EINVAL, "not a Dust invitation (expected %d base64url characters)",
		                 DUST_INVITE_TEXT_LEN);
	rc = password_key(key, password, password_len, salt);
	if (rc)
		goto out_wipe;
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(pt, NULL, NULL, ct,
	                                               DUST_INVITE_PT_BYTES + DUST_MAC_BYTES, salt,
	                                               DUST_SALT_BYTES, nonce, key) != 0) {
		rc = dust_fail(EBADMSG, "wrong password, or the invitation text is corrupted");
		goto out_wipe;
	}
	rc = dust_invite_unpack(inv, pt);
out_wipe:
	sodium_memzero(pt, sizeof(pt));
	sodium_memzero(key, sizeof(key));
	return rc;
}

DUST_EXPORT void dust_invite_wipe(struct dust_invite *inv)
{
	sodium_memzero(inv, sizeof(*inv));
}
