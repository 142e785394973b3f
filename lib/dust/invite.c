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

/*
 * Argon2id at 64 MiB (SPEC §2): t = 3 passes seals, RFC 9106 §4's second
 * recommended setting; texts sealed before it (t = 2, libsodium's
 * OPSLIMIT_INTERACTIVE) still open, tried second.
 */
#define PWHASH_MEM crypto_pwhash_MEMLIMIT_INTERACTIVE
static const unsigned long long pwhash_ops[] = {3, crypto_pwhash_OPSLIMIT_INTERACTIVE};

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
	w->profile = inv->profile;
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
	if (w->suite >= DUST_SUITE_COUNT)
		return dust_fail(EINVAL, "invitation uses an unknown cipher suite");
	if (w->profile >= DUST_PROFILE_MAX)
		return dust_fail(EINVAL, "invitation uses an unknown wire profile");
	if (!family_ok(w->server_family, w->server_addr) ||
	    !family_ok(w->tunnel_family, w->tunnel_addr))
		return dust_fail(EINVAL, "invitation has a bad address family");
	if (w->tunnel_prefix > (w->tunnel_family == 4 ? 32 : 128))
		return dust_fail(EINVAL, "invitation has a bad tunnel prefix");
	memset(inv, 0, sizeof(*inv));
	inv->suite = w->suite;
	inv->profile = w->profile;
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

DUST_EXPORT size_t dust_invite_pt_len(const struct dust_invite *inv)
{
	return inv->profile == DUST_PROFILE_QUIC ? DUST_INVITE_PT_MAX : DUST_INVITE_PT_BYTES;
}

DUST_EXPORT int dust_invite_cover_set(struct dust_invite *inv, const char *sni)
{
	size_t n = strlen(sni);

	if (n == 0 || n > DUST_COVER_SNI_MAX)
		return dust_fail(EINVAL, "cover name must have 1 to %d characters",
		                 DUST_COVER_SNI_MAX);
	for (size_t i = 0; i < n; i++) {
		char c = sni[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
			return dust_fail(EINVAL, "cover name '%s': only a-z, 0-9, '-' and '.'",
			                 sni);
	}
	if (sni[0] == '.' || sni[n - 1] == '.' || strstr(sni, ".."))
		return dust_fail(EINVAL, "cover name '%s' is not a host name", sni);
	memset(inv->cover_sni, 0, sizeof(inv->cover_sni));
	memcpy(inv->cover_sni, sni, n);
	return 0;
}

static void cover_pack(const struct dust_invite *inv, uint8_t out[DUST_INVITE_COVER_BYTES])
{
	struct dust_wire_invite_cover *c = (struct dust_wire_invite_cover *)out;

	memset(out, 0, DUST_INVITE_COVER_BYTES);
	c->sni_len = (uint8_t)strlen(inv->cover_sni);
	memcpy(c->sni, inv->cover_sni, c->sni_len);
}

static int cover_unpack(struct dust_invite *inv, const uint8_t in[DUST_INVITE_COVER_BYTES])
{
	const struct dust_wire_invite_cover *c = (const struct dust_wire_invite_cover *)in;
	char sni[DUST_COVER_SNI_MAX + 1] = {0};

	if (c->sni_len == 0 || c->sni_len > DUST_COVER_SNI_MAX || c->alpn != 0)
		return dust_fail(EINVAL, "invitation has a bad cover block");
	for (size_t i = c->sni_len; i < sizeof(c->sni); i++)
		if (c->sni[i])
			return dust_fail(EINVAL, "invitation has a bad cover block");
	memcpy(sni, c->sni, c->sni_len);
	return dust_invite_cover_set(inv, sni);
}

DUST_EXPORT void dust_invite_pack_full(const struct dust_invite *inv,
                                       uint8_t out[DUST_INVITE_PT_MAX])
{
	dust_invite_pack(inv, out);
	if (inv->profile == DUST_PROFILE_QUIC)
		cover_pack(inv, out + DUST_INVITE_PT_BYTES);
}

DUST_EXPORT int dust_invite_unpack_full(struct dust_invite *inv, const uint8_t *in, size_t len)
{
	int rc;

	if (len != DUST_INVITE_PT_BYTES && len != DUST_INVITE_PT_MAX)
		return dust_fail(EINVAL, "invitation record has a bad length");
	rc = dust_invite_unpack(inv, in);
	if (rc)
		return rc;
	if ((inv->profile == DUST_PROFILE_QUIC) != (len == DUST_INVITE_PT_MAX)) {
		dust_invite_wipe(inv);
		return dust_fail(EINVAL, "invitation profile and length disagree");
	}
	if (len == DUST_INVITE_PT_MAX && (rc = cover_unpack(inv, in + DUST_INVITE_PT_BYTES))) {
		dust_invite_wipe(inv);
		return rc;
	}
	return 0;
}

static int password_key(uint8_t key[DUST_KEY_BYTES], const char *pw, size_t pwlen,
                        const uint8_t salt[DUST_SALT_BYTES], unsigned long long ops)
{
	if (crypto_pwhash(key, DUST_KEY_BYTES, pw, pwlen, salt, ops, PWHASH_MEM,
	                  crypto_pwhash_ALG_ARGON2ID13) != 0)
		return dust_fail(ENOMEM, "Argon2id could not allocate %zu MiB",
		                 (size_t)PWHASH_MEM >> 20);
	return 0;
}

DUST_EXPORT int dust_invite_seal(const struct dust_invite *inv, const char *password,
                                 size_t password_len, char *text, size_t text_cap)
{
	uint8_t sealed[DUST_INVITE_SEALED_MAX], pt[DUST_INVITE_PT_MAX], key[DUST_KEY_BYTES];
	uint8_t *salt = sealed, *nonce = sealed + DUST_SALT_BYTES;
	uint8_t *ct = nonce + DUST_XNONCE_BYTES;
	size_t ptlen = dust_invite_pt_len(inv);
	size_t sealed_len = ptlen + DUST_INVITE_SEALED_BYTES - DUST_INVITE_PT_BYTES;
	int rc;

	if (password_len == 0)
		return dust_fail(EINVAL, "empty password");
	if (text_cap < DUST_INVITE_TEXT_MAX)
		return dust_fail(ENOBUFS, "invitation text needs %d bytes", DUST_INVITE_TEXT_MAX);
	randombytes_buf(salt, DUST_SALT_BYTES);
	randombytes_buf(nonce, DUST_XNONCE_BYTES);
	rc = password_key(key, password, password_len, salt, pwhash_ops[0]);
	if (rc)
		goto out_wipe;
	dust_invite_pack_full(inv, pt);
	crypto_aead_xchacha20poly1305_ietf_encrypt(ct, NULL, pt, ptlen, salt, DUST_SALT_BYTES, NULL,
	                                           nonce, key);
	sodium_bin2base64(text, text_cap, sealed, sealed_len,
	                  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
out_wipe:
	sodium_memzero(pt, sizeof(pt));
	sodium_memzero(key, sizeof(key));
	return rc;
}

DUST_EXPORT int dust_invite_open(struct dust_invite *inv, const char *text, const char *password,
                                 size_t password_len)
{
	uint8_t sealed[DUST_INVITE_SEALED_MAX], pt[DUST_INVITE_PT_MAX], key[DUST_KEY_BYTES];
	uint8_t *salt = sealed, *nonce = sealed + DUST_SALT_BYTES;
	uint8_t *ct = nonce + DUST_XNONCE_BYTES;
	size_t binlen = 0, ptlen;
	const char *end = NULL;
	int rc;

	if (sodium_base642bin(sealed, sizeof(sealed), text, strlen(text), " \t\r\n", &binlen, &end,
	                      sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
	    (binlen != DUST_INVITE_SEALED_BYTES && binlen != DUST_INVITE_SEALED_MAX) ||
	    (end && *end != '\0'))
		return dust_fail(EINVAL,
		                 "not a Dust invitation (expected %d or %d base64url characters)",
		                 DUST_INVITE_TEXT_LEN, DUST_INVITE_QUIC_TEXT_LEN);
	ptlen = binlen - (DUST_INVITE_SEALED_BYTES - DUST_INVITE_PT_BYTES);
	rc = -EBADMSG;
	for (size_t i = 0; rc == -EBADMSG && i < sizeof(pwhash_ops) / sizeof(pwhash_ops[0]); i++) {
		rc = password_key(key, password, password_len, salt, pwhash_ops[i]);
		if (rc)
			goto out_wipe;
		if (crypto_aead_xchacha20poly1305_ietf_decrypt(pt, NULL, NULL, ct,
		                                               ptlen + DUST_MAC_BYTES, salt,
		                                               DUST_SALT_BYTES, nonce, key) != 0)
			rc = -EBADMSG;
	}
	if (rc) {
		rc = dust_fail(EBADMSG, "wrong password, or the invitation text is corrupted");
		goto out_wipe;
	}
	rc = dust_invite_unpack_full(inv, pt, ptlen);
out_wipe:
	sodium_memzero(pt, sizeof(pt));
	sodium_memzero(key, sizeof(key));
	return rc;
}

DUST_EXPORT void dust_invite_wipe(struct dust_invite *inv)
{
	sodium_memzero(inv, sizeof(*inv));
}
