/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Identities, invitations and the invitation store: key-file permissions,
 * sealing under a password, single use across a simulated restart,
 * duplicate and replayed intros, expiry, and the journal's torn-line rule.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "fixture.h"

static void test_identity_files(void)
{
	struct fixture f;
	struct dust_identity id, back;
	char path[160];

	fix_init(&f);
	snprintf(path, sizeof(path), "%s/key", f.dir);
	CHECK(dust_identity_generate(&id) == 0);
	CHECK(dust_identity_save(&id, path) == 0);
	CHECK(dust_identity_load(&back, path) == 0);
	CHECK(memcmp(&id, &back, sizeof(id)) == 0);
	CHECK(chmod(path, 0640) == 0);
	CHECK_EQ(dust_identity_load(&back, path), -EPERM);
	CHECK(strstr(dust_last_error(), "chmod 600") != NULL);
	CHECK(chmod(path, 0600) == 0);
	CHECK(truncate(path, 10) == 0);
	CHECK_EQ(dust_identity_load(&back, path), -EINVAL);
	snprintf(path, sizeof(path), "%s/missing", f.dir);
	CHECK_EQ(dust_identity_load(&back, path), -ENOENT);
	fix_fini(&f);
}

static void test_invite_seal_open(void)
{
	struct fixture f;
	struct dust_invite back;
	char text[DUST_INVITE_TEXT_MAX], bad[DUST_INVITE_TEXT_MAX + 8];

	fix_init(&f);
	CHECK(dust_invite_seal(&f.inv, "correct horse", 13, text, sizeof(text)) == 0);
	CHECK_EQ(strlen(text), DUST_INVITE_TEXT_LEN);
	CHECK(dust_invite_open(&back, text, "correct horse", 13) == 0);
	CHECK(memcmp(back.secret, f.inv.secret, DUST_KEY_BYTES) == 0);
	CHECK(memcmp(back.id, f.inv.id, DUST_ID_BYTES) == 0);
	CHECK(back.port == 4433 && back.tunnel_prefix == 24 && back.expiry == f.inv.expiry);
	CHECK(dust_ipaddr_equal(&back.tunnel, &f.inv.tunnel));
	CHECK_EQ(dust_invite_open(&back, text, "wrong horse", 11), -EBADMSG);
	/* line-wrapped text as a mail client would deliver it */
	snprintf(bad, sizeof(bad), "%.60s\n%s\n", text, text + 60);
	CHECK(dust_invite_open(&back, bad, "correct horse", 13) == 0);
	/* truncated, corrupted, foreign */
	snprintf(bad, sizeof(bad), "%.100s", text);
	CHECK_EQ(dust_invite_open(&back, bad, "correct horse", 13), -EINVAL);
	snprintf(bad, sizeof(bad), "%s", text);
	bad[50] = bad[50] == 'A' ? 'B' : 'A';
	CHECK_EQ(dust_invite_open(&back, bad, "correct horse", 13), -EBADMSG);
	CHECK_EQ(dust_invite_open(&back, "hello, world", "x", 1), -EINVAL);
	CHECK_EQ(dust_invite_seal(&f.inv, "", 0, text, sizeof(text)), -EINVAL);
	fix_fini(&f);
}

/* Open text's sealed bytes with Argon2id at ops passes (64 MiB): 0 if the AEAD accepts. */
static int open_at(const char *text, const char *pw, unsigned long long ops)
{
	uint8_t sealed[DUST_INVITE_SEALED_MAX], pt[DUST_INVITE_PT_MAX], key[DUST_KEY_BYTES];
	size_t len = 0;
	int rc;

	CHECK(sodium_base642bin(sealed, sizeof(sealed), text, strlen(text), NULL, &len, NULL,
	                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) == 0);
	CHECK_EQ(len, DUST_INVITE_SEALED_BYTES);
	CHECK(crypto_pwhash(key, sizeof(key), pw, strlen(pw), sealed, ops,
	                    crypto_pwhash_MEMLIMIT_INTERACTIVE, crypto_pwhash_ALG_ARGON2ID13) == 0);
	rc = crypto_aead_xchacha20poly1305_ietf_decrypt(
	    pt, NULL, NULL, sealed + DUST_SALT_BYTES + DUST_XNONCE_BYTES,
	    len - DUST_SALT_BYTES - DUST_XNONCE_BYTES, sealed, DUST_SALT_BYTES,
	    sealed + DUST_SALT_BYTES, key);
	sodium_memzero(key, sizeof(key));
	sodium_memzero(pt, sizeof(pt));
	return rc;
}

/*
 * SPEC §2: texts are sealed with Argon2id t = 3 at 64 MiB (RFC 9106's second
 * recommendation), and a text sealed with t = 2 (before) still opens.
 */
static void test_invite_argon2_passes(void)
{
	struct fixture f;
	struct dust_invite back;
	uint8_t sealed[DUST_INVITE_SEALED_BYTES], pt[DUST_INVITE_PT_MAX], key[DUST_KEY_BYTES];
	char text[DUST_INVITE_TEXT_MAX];

	fix_init(&f);
	CHECK(dust_invite_seal(&f.inv, "correct horse", 13, text, sizeof(text)) == 0);
	CHECK(open_at(text, "correct horse", 3) == 0);
	CHECK(open_at(text, "correct horse", 2) != 0);
	/* sealed as releases before this one did, t = 2 */
	randombytes_buf(sealed, DUST_SALT_BYTES + DUST_XNONCE_BYTES);
	CHECK(crypto_pwhash(key, sizeof(key), "correct horse", 13, sealed, 2,
	                    crypto_pwhash_MEMLIMIT_INTERACTIVE, crypto_pwhash_ALG_ARGON2ID13) == 0);
	dust_invite_pack_full(&f.inv, pt);
	crypto_aead_xchacha20poly1305_ietf_encrypt(
	    sealed + DUST_SALT_BYTES + DUST_XNONCE_BYTES, NULL, pt, DUST_INVITE_PT_BYTES, sealed,
	    DUST_SALT_BYTES, NULL, sealed + DUST_SALT_BYTES, key);
	sodium_bin2base64(text, sizeof(text), sealed, sizeof(sealed),
	                  sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	CHECK(dust_invite_open(&back, text, "correct horse", 13) == 0);
	CHECK(memcmp(back.secret, f.inv.secret, DUST_KEY_BYTES) == 0);
	CHECK_EQ(dust_invite_open(&back, text, "wrong horse", 11), -EBADMSG);
	sodium_memzero(key, sizeof(key));
	sodium_memzero(pt, sizeof(pt));
	fix_fini(&f);
}

static void test_invite_unpack_rejects(void)
{
	struct fixture f;
	struct dust_invite back;
	uint8_t pt[DUST_INVITE_PT_BYTES];

	fix_init(&f);
	dust_invite_pack(&f.inv, pt);
	CHECK(dust_invite_unpack(&back, pt) == 0);
	pt[0] = 1; /* version */
	CHECK_EQ(dust_invite_unpack(&back, pt), -EINVAL);
	dust_invite_pack(&f.inv, pt);
	pt[2] = 5; /* family */
	CHECK_EQ(dust_invite_unpack(&back, pt), -EINVAL);
	dust_invite_pack(&f.inv, pt);
	pt[6] = 33; /* prefix for IPv4 */
	CHECK_EQ(dust_invite_unpack(&back, pt), -EINVAL);
	fix_fini(&f);
}

/* The first intro binds; a restart keeps the binding; only that key may return. */
static void test_store_single_use_across_restart(void)
{
	struct fixture f;
	struct dust_identity thief = {{0}}, real;

	fix_init(&f);
	real = f.client;
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS), DUST_OK);
	CHECK(dust_store_at(f.srv.store, 0)->bound);
	fix_reopen_store(&f); /* simulated gateway restart */
	CHECK(dust_store_at(f.srv.store, 0)->bound);
	CHECK(memcmp(dust_store_at(f.srv.store, 0)->client_pk, real.pk, DUST_PK_BYTES) == 0);
	CHECK(dust_identity_generate(&thief) == 0);
	f.client = thief;
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS + 1000), DUST_DROP_INTRO_WRONG_KEY);
	f.client = real; /* the bound client comes back after the restart */
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS + 2000), DUST_OK);
	/* freshness survives the restart too: an older intro is a replay */
	fix_reopen_store(&f);
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS + 1500), DUST_DROP_INTRO_REPLAY);
	fix_fini(&f);
}

static void test_intro_dup_and_replay(void)
{
	struct fixture f;
	uint8_t intro[1024];
	struct dust_endpoint a = fix_endpoint("198.51.100.7", 40000);
	struct dust_endpoint b = fix_endpoint("203.0.113.9", 999);
	struct dust_session s1, s2, before;
	size_t used;
	int n;

	fix_init(&f);
	n = dust_intro_build(&f.inv, &f.client, &f.rng, &f.pad, FIX_NOW_MS, intro, sizeof(intro),
	                     &f.cs);
	CHECK_EQ(
	    dust_intro_accept(&f.srv, intro, (size_t)n, FIX_NOW_MS, &a, NULL, &s1, &used, NULL),
	    DUST_OK);
	memset(&s2, 0x5a, sizeof(s2));
	before = s2;
	/* the same bytes again, from anywhere: a no-op that fills nothing */
	CHECK_EQ(dust_intro_accept(&f.srv, intro, (size_t)n, FIX_NOW_MS + 10, &a, NULL, &s2, &used,
	                           NULL),
	         DUST_DROP_INTRO_DUP);
	CHECK_EQ(dust_intro_accept(&f.srv, intro, (size_t)n, FIX_NOW_MS + 10, &b, NULL, &s2, &used,
	                           NULL),
	         DUST_DROP_INTRO_DUP);
	CHECK(memcmp(&s2, &before, sizeof(s2)) == 0);
	/* an older intro of the same client, replayed later */
	{
		uint8_t old[1024];
		struct dust_session tmp;
		int m = dust_intro_build(&f.inv, &f.client, &f.rng, &f.pad, FIX_NOW_MS - 5000, old,
		                         sizeof(old), &tmp);

		CHECK_EQ(dust_intro_accept(&f.srv, old, (size_t)m, FIX_NOW_MS, &b, NULL, &s2, &used,
		                           NULL),
		         DUST_DROP_INTRO_REPLAY);
	}
	/* outside the timestamp window */
	{
		uint8_t fut[1024];
		struct dust_session tmp;
		int m = dust_intro_build(&f.inv, &f.client, &f.rng, &f.pad, FIX_NOW_MS + 61000, fut,
		                         sizeof(fut), &tmp);

		CHECK_EQ(dust_intro_accept(&f.srv, fut, (size_t)m, FIX_NOW_MS, &b, NULL, &s2, &used,
		                           NULL),
		         DUST_DROP_INTRO_STALE);
	}
	fix_fini(&f);
}

static void test_intro_expired_and_unknown(void)
{
	struct fixture f;
	struct dust_invite other;
	struct dust_ipaddr addr, tun;
	uint8_t intro[1024];
	struct dust_endpoint a = fix_endpoint("198.51.100.7", 40000);
	struct dust_session s;
	size_t used;
	int n;

	fix_init(&f);
	/* an invitation the store does not hold */
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0 &&
	      dust_ipaddr_parse(&tun, "10.9.0.3") == 0);
	CHECK(dust_invite_new(&other, &f.server, &addr, 4433, &tun, 24, FIX_NOW_S + 10) == 0);
	n = dust_intro_build(&other, &f.client, &f.rng, &f.pad, FIX_NOW_MS, intro, sizeof(intro),
	                     &s);
	CHECK_EQ(dust_intro_accept(&f.srv, intro, (size_t)n, FIX_NOW_MS, &a, NULL, &s, &used, NULL),
	         DUST_DROP_INTRO_UNKNOWN);
	/* an unused invitation past its expiry */
	f.inv.expiry = FIX_NOW_S - 1;
	dust_store_at(f.srv.store, 0)->inv.expiry = FIX_NOW_S - 1;
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS), DUST_DROP_INTRO_EXPIRED);
	CHECK(!dust_store_at(f.srv.store, 0)->bound);
	fix_fini(&f);
}

/* A crash mid-append leaves a torn last line: ignored, the binding never happened. */
static void test_journal_torn_line(void)
{
	struct fixture f;
	char jpath[200];
	int fd;

	fix_init(&f);
	snprintf(jpath, sizeof(jpath), "%s.bind", f.store_path);
	fd = open(jpath, O_WRONLY | O_APPEND);
	CHECK(fd >= 0);
	CHECK(write(fd, "B 00112233", 10) == 10);
	close(fd);
	fix_reopen_store(&f);
	CHECK(!dust_store_at(f.srv.store, 0)->bound);
	fix_fini(&f);
	/* but a corrupt complete line is an error, not silently dropped */
	fix_init(&f);
	snprintf(jpath, sizeof(jpath), "%s.bind", f.store_path);
	fd = open(jpath, O_WRONLY | O_APPEND);
	CHECK(write(fd, "B 00 11 22 #0000000000000000\n", 29) == 29);
	close(fd);
	dust_store_close(f.srv.store);
	f.srv.store = dust_store_open(f.store_path, 0, &f.server);
	CHECK(f.srv.store == NULL);
	CHECK(strstr(dust_last_error(), "corrupt journal") != NULL);
	fix_fini(&f);
}

static void test_store_errors(void)
{
	struct fixture f;
	char path[200];
	FILE *fp;

	fix_init(&f);
	CHECK(chmod(f.store_path, 0644) == 0);
	CHECK(dust_store_open(f.store_path, 0, &f.server) == NULL);
	CHECK_EQ(errno, EPERM);
	CHECK(chmod(f.store_path, 0600) == 0);
	snprintf(path, sizeof(path), "%s/garbage", f.dir);
	fp = fopen(path, "w");
	fputs("not a store\n", fp);
	fclose(fp);
	CHECK(chmod(path, 0600) == 0);
	CHECK(dust_store_open(path, 0, &f.server) == NULL);
	CHECK(strstr(dust_last_error(), "not a Dust invitation store") != NULL);
	snprintf(path, sizeof(path), "%s/none", f.dir);
	CHECK(dust_store_open(path, 0, &f.server) == NULL);
	CHECK_EQ(errno, ENOENT);
	CHECK_EQ(dust_store_add(f.srv.store, &f.inv), -EEXIST);
	/* the saved file round-trips every invitation */
	fix_reopen_store(&f);
	CHECK_EQ(dust_store_count(f.srv.store), 1);
	CHECK(memcmp(dust_store_at(f.srv.store, 0)->inv.secret, f.inv.secret, 32) == 0);
	fix_fini(&f);
}

/* Intros keep working across an epoch change of the tag index. */
static void test_epoch_rollover(void)
{
	struct fixture f;
	uint64_t t = (FIX_NOW_S / DUST_EPOCH_S + 1) * DUST_EPOCH_S; /* next epoch start */

	fix_init(&f);
	CHECK_EQ(fix_connect(&f, (t - 1) * 1000), DUST_OK); /* old epoch, index of old epoch */
	CHECK(dust_store_tick(f.srv.store, t) == 1);
	CHECK_EQ(fix_connect(&f, t * 1000 + 5), DUST_OK);
	/* a client clock one epoch behind still finds its tag */
	CHECK(dust_store_tick(f.srv.store, t + DUST_EPOCH_S) == 1);
	CHECK_EQ(fix_connect(&f, t * 1000 + 10), DUST_OK);
	fix_fini(&f);
}

/*
 * Many intros would grow the journal (about 290 kB here); the appends
 * compact it as they go (SPEC §7), and a reopen keeps the state.
 */
static void test_journal_compaction(void)
{
	struct fixture f;
	char jpath[200];
	struct stat st1;

	fix_init(&f);
	for (int i = 0; i < 1100; i++)
		CHECK_EQ(fix_connect(&f, FIX_NOW_MS + (uint64_t)i), DUST_OK);
	snprintf(jpath, sizeof(jpath), "%s.bind", f.store_path);
	CHECK(stat(jpath, &st1) == 0);
	CHECK(dust_store_compactions(f.srv.store) >= 1);
	CHECK(st1.st_size < 140 * 1024); /* twice the live records, plus 128 KiB */
	fix_reopen_store(&f);
	CHECK(dust_store_at(f.srv.store, 0)->bound);
	CHECK_EQ(dust_store_at(f.srv.store, 0)->last_ts_ms, FIX_NOW_MS + 1099);
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS + 1099 - 1), DUST_DROP_INTRO_REPLAY);
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS + 2000), DUST_OK);
	fix_fini(&f);
}

/* A read-only store (replay) binds in memory only: files untouched, replays repeat. */
static void test_store_readonly(void)
{
	struct fixture f;
	char jpath[200];
	struct stat before, after;

	fix_init(&f);
	snprintf(jpath, sizeof(jpath), "%s.bind", f.store_path);
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS), DUST_OK); /* a real binding on file */
	CHECK(stat(jpath, &before) == 0);
	dust_store_close(f.srv.store);
	f.srv.store = dust_store_open(f.store_path, DUST_STORE_READONLY, &f.server);
	CHECK(f.srv.store != NULL);
	CHECK(dust_store_tick(f.srv.store, FIX_NOW_S) >= 0);
	CHECK(dust_store_at(f.srv.store, 0)->bound); /* the journal was read */
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS + 1000), DUST_OK);
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS + 500), DUST_DROP_INTRO_REPLAY); /* in memory */
	CHECK_EQ(dust_store_save(f.srv.store), -EROFS);
	CHECK(stat(jpath, &after) == 0);
	CHECK_EQ(after.st_size, before.st_size);
	/* reopened read-only again: the same intro is accepted again */
	dust_store_close(f.srv.store);
	f.srv.store = dust_store_open(f.store_path, DUST_STORE_READONLY, &f.server);
	CHECK(f.srv.store != NULL && dust_store_tick(f.srv.store, FIX_NOW_S) >= 0);
	CHECK_EQ(fix_connect(&f, FIX_NOW_MS + 1000), DUST_OK);
	CHECK(stat(jpath, &after) == 0);
	CHECK_EQ(after.st_size, before.st_size);
	fix_fini(&f);
	/* a read-only open never creates the files */
	fix_init(&f);
	snprintf(jpath, sizeof(jpath), "%s/none", f.dir);
	CHECK(dust_store_open(jpath, DUST_STORE_READONLY | DUST_STORE_CREATE, &f.server) == NULL);
	CHECK(access(jpath, F_OK) != 0);
	fix_fini(&f);
}

static const struct check_test tests[] = {
    {"identity_files", test_identity_files},
    {"invite_seal_open", test_invite_seal_open},
    {"invite_argon2_passes", test_invite_argon2_passes},
    {"invite_unpack_rejects", test_invite_unpack_rejects},
    {"store_single_use_across_restart", test_store_single_use_across_restart},
    {"intro_dup_and_replay", test_intro_dup_and_replay},
    {"intro_expired_and_unknown", test_intro_expired_and_unknown},
    {"journal_torn_line", test_journal_torn_line},
    {"store_errors", test_store_errors},
    {"epoch_rollover", test_epoch_rollover},
    {"journal_compaction", test_journal_compaction},
    {"store_readonly", test_store_readonly},
};

CHECK_MAIN(tests, NULL)
