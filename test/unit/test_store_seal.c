/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sealed store records (SPEC §7.6): the files hold no invitation secret;
 * a record written without the server key (forged, altered, moved to
 * another ID, or in the clear) is refused and counted at open and at
 * reload; a store from before sealing is refused until it is migrated,
 * and migrates with its bindings and revocations.
 */
#include <inttypes.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "fixture.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	long n;

	CHECK(fp != NULL);
	if (!fp)
		return NULL;
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = calloc(1, (size_t)n + 1);
	CHECK(buf && fread(buf, 1, (size_t)n, fp) == (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

/* Neither file of the store holds the secret's hex (either case). */
static bool holds_secret(const struct fixture *f, const uint8_t secret[DUST_KEY_BYTES])
{
	static const char *const sfx[] = {"", ".bind"};
	char hex[2 * DUST_KEY_BYTES + 1], path[192];
	bool found = false;

	sodium_bin2hex(hex, sizeof(hex), secret, DUST_KEY_BYTES);
	for (unsigned i = 0; i < 2; i++) {
		size_t len;
		char *buf;

		snprintf(path, sizeof(path), "%s%s", f->store_path, sfx[i]);
		buf = slurp(path, &len);
		found |= buf && (strcasestr(buf, hex) != NULL || memmem(buf, len, secret, 16));
		free(buf);
	}
	return found;
}

/* A journal line with a valid checksum, as anyone with write access can make one. */
static void journal_put(const struct fixture *f, const char *body)
{
	char path[192], sum[17];
	uint8_t h[8];
	FILE *fp;

	crypto_generichash(h, sizeof(h), (const uint8_t *)body, strlen(body), NULL, 0);
	sodium_bin2hex(sum, sizeof(sum), h, sizeof(h));
	snprintf(path, sizeof(path), "%s.bind", f->store_path);
	fp = fopen(path, "ab");
	CHECK(fp != NULL);
	if (fp) {
		fprintf(fp, "%s#%s\n", body, sum);
		fclose(fp);
	}
}

/* The files hold no K_inv after create, a binding, a revocation and a compaction. */
static void test_no_secret_at_rest(void)
{
	struct fixture f;

	fix_init(&f);
	CHECK(!holds_secret(&f, f.inv.secret));
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS), DUST_OK);
	CHECK_EQ(dust_store_revoke(f.srv.store, dust_store_at(f.srv.store, 0), FIX_NOW_S), 0);
	fix_reopen_store(&f);
	CHECK(!holds_secret(&f, f.inv.secret));
	/* and what was sealed opens again: bound and revoked */
	CHECK(dust_store_at(f.srv.store, 0)->bound && dust_store_at(f.srv.store, 0)->revoked);
	CHECK_EQ(dust_store_refused(f.srv.store), 0);
	fix_fini(&f);
}

/* A byte of the invitation's sealed record flipped: refused, counted, the rest loads. */
static void test_altered_invitation(void)
{
	struct fixture f;
	char *buf, *rec;
	size_t len;

	fix_init(&f);
	buf = slurp(f.store_path, &len);
	rec = buf ? strstr(buf, "\nI ") : NULL;
	CHECK(rec != NULL);
	if (rec) {
		char *c = rec + 3 + 2 * DUST_ID_BYTES + 1 + 60; /* inside the ciphertext */

		*c = *c == '0' ? '1' : '0';
		fix_put_file(f.store_path, buf, len);
	}
	free(buf);
	fix_reopen_store(&f);
	CHECK_EQ(dust_store_count(f.srv.store), 0);
	CHECK_EQ(dust_store_refused(f.srv.store), 1);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS), DUST_DROP_INTRO_UNKNOWN);
	fix_fini(&f);
}

/*
 * Journal records written without the key, each with a valid checksum: a
 * revocation in the clear (the old format), random bytes where the seal
 * goes, and our own sealed revocation moved to another invitation's ID.
 * Refused and counted at reload (the running gateway) and at open.
 */
static void test_forged_journal_records(void)
{
	char idhex[2 * DUST_ID_BYTES + 1], body[512], junk[2 * 80 + 1];
	struct dust_invite other;
	struct dust_ipaddr addr, tun;
	struct dust_store *tool;
	uint8_t rnd[80];
	struct fixture f;

	fix_init(&f);
	CHECK(dust_ipaddr_parse(&addr, "192.0.2.1") == 0 &&
	      dust_ipaddr_parse(&tun, "10.9.0.3") == 0);
	CHECK(dust_invite_new(&other, &f.server, &addr, 4433, &tun, 24, FIX_NOW_S + 3600) == 0);
	tool = dust_store_open(f.store_path, 0, &f.server);
	CHECK(tool && dust_store_add(tool, &other) == 0 && dust_store_save(tool) == 0);
	dust_store_close(tool);
	CHECK_EQ(dust_store_reload(f.srv.store), 1);
	CHECK_EQ(dust_store_tick(f.srv.store, FIX_NOW_S) >= 0, 1);
	sodium_bin2hex(idhex, sizeof(idhex), f.inv.id, DUST_ID_BYTES);
	snprintf(body, sizeof(body), "R %s %u - ", idhex, FIX_NOW_S);
	journal_put(&f, body);
	randombytes_buf(rnd, sizeof(rnd));
	sodium_bin2hex(junk, sizeof(junk), rnd, sizeof(rnd));
	snprintf(body, sizeof(body), "R %s %s - ", idhex, junk);
	journal_put(&f, body);
	CHECK_EQ(dust_store_reload(f.srv.store), 0);
	CHECK_EQ(dust_store_refused(f.srv.store), 2);
	CHECK(!dust_store_find(f.srv.store, f.inv.id)->revoked);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS), DUST_OK);
	/* a sealed revocation of other, its ID replaced by ours: the seal names other */
	{
		char path[192], *buf, *r, oid[2 * DUST_ID_BYTES + 1];
		size_t len;

		tool = dust_store_open(f.store_path, 0, &f.server);
		CHECK(tool &&
		      dust_store_revoke(tool, dust_store_find(tool, other.id), FIX_NOW_S) == 0);
		dust_store_close(tool);
		snprintf(path, sizeof(path), "%s.bind", f.store_path);
		buf = slurp(path, &len);
		sodium_bin2hex(oid, sizeof(oid), other.id, DUST_ID_BYTES);
		r = buf ? strstr(buf, oid) : NULL;
		while (r && r[-2] != 'R')
			r = strstr(r + 1, oid);
		CHECK(r != NULL);
		if (r) {
			*strchr(r, '#') = '\0';
			memcpy(r, idhex, 2 * DUST_ID_BYTES);
			journal_put(&f, r - 2);
		}
		free(buf);
	}
	CHECK_EQ(dust_store_reload(f.srv.store), 1); /* other's own revocation */
	CHECK_EQ(dust_store_refused(f.srv.store), 3);
	CHECK(!dust_store_find(f.srv.store, f.inv.id)->revoked);
	CHECK(dust_store_find(f.srv.store, other.id)->revoked);
	/* at open: the same three refused, the real records applied */
	fix_reopen_store(&f);
	CHECK_EQ(dust_store_refused(f.srv.store), 3);
	CHECK(dust_store_find(f.srv.store, f.inv.id)->bound);
	CHECK(!dust_store_find(f.srv.store, f.inv.id)->revoked);
	CHECK(dust_store_find(f.srv.store, other.id)->revoked);
	dust_invite_wipe(&other);
	fix_fini(&f);
}

/* Another server's key opens nothing: every record refused. */
static void test_wrong_key(void)
{
	struct dust_identity other;
	struct dust_store *st;
	struct fixture f;

	fix_init(&f);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS), DUST_OK);
	CHECK(dust_identity_generate(&other) == 0);
	st = dust_store_open(f.store_path, DUST_STORE_READONLY, &other);
	CHECK(st != NULL);
	if (st) {
		CHECK_EQ(dust_store_count(st), 0);
		CHECK_EQ(dust_store_refused(st), 3); /* the invitation, its B and T records */
		dust_store_close(st);
	}
	dust_identity_wipe(&other);
	fix_fini(&f);
}

/* A store in the format before sealing (v2), written here as that code wrote it. */
static void write_v2_store(const struct fixture *f, const uint8_t pk[DUST_PK_BYTES])
{
	char buf[4096], hex[2 * DUST_INVITE_PT_MAX + 1], idhex[2 * DUST_ID_BYTES + 1];
	char pkhex[2 * DUST_PK_BYTES + 1], path[192], body[256];
	uint8_t pt[DUST_INVITE_PT_MAX];
	size_t ptlen = dust_invite_pt_len(&f->inv);
	int n;

	dust_invite_pack_full(&f->inv, pt);
	sodium_bin2hex(hex, sizeof(hex), pt, ptlen);
	n = snprintf(buf, sizeof(buf), "# dust invitation store v2\nI %s\n", hex);
	fix_put_file(f->store_path, buf, (size_t)n);
	snprintf(path, sizeof(path), "%s.bind", f->store_path);
	unlink(path);
	sodium_bin2hex(idhex, sizeof(idhex), f->inv.id, DUST_ID_BYTES);
	sodium_bin2hex(pkhex, sizeof(pkhex), pk, DUST_PK_BYTES);
	snprintf(body, sizeof(body), "B %s %s %u ", idhex, pkhex, FIX_NOW_S);
	journal_put(f, body);
	CHECK(chmod(path, 0600) == 0);
}

static void test_migrate(void)
{
	struct dust_store *st;
	struct fixture f;
	char path[192];
	int fd;

	fix_init(&f);
	dust_store_close(f.srv.store);
	f.srv.store = NULL;
	write_v2_store(&f, f.client.pk);
	CHECK(holds_secret(&f, f.inv.secret)); /* what migration is for */
	/* refused until migrated, by the gateway and the tools alike */
	errno = 0;
	CHECK(dust_store_open(f.store_path, 0, &f.server) == NULL);
	CHECK_EQ(errno, EPROTO);
	CHECK(strstr(dust_last_error(), "dust-invite migrate") != NULL);
	CHECK(dust_store_open(f.store_path, DUST_STORE_READONLY, &f.server) == NULL);
	/* not while another process has it open */
	snprintf(path, sizeof(path), "%s.bind", f.store_path);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && flock(fd, LOCK_SH) == 0);
	CHECK(dust_store_open(f.store_path, DUST_STORE_MIGRATE, &f.server) == NULL);
	CHECK_EQ(errno, EBUSY);
	close(fd);
	st = dust_store_open(f.store_path, DUST_STORE_MIGRATE, &f.server);
	CHECK(st != NULL);
	dust_store_close(st);
	CHECK(!holds_secret(&f, f.inv.secret));
	/* migrated: opens as any sealed store, the binding kept, nothing refused */
	fix_reopen_store(&f);
	CHECK_EQ(dust_store_count(f.srv.store), 1);
	CHECK(dust_store_at(f.srv.store, 0)->bound);
	CHECK_EQ(dust_store_refused(f.srv.store), 0);
	CHECK_EQ(fix_connect_with(&f, &f.inv, FIX_NOW_MS), DUST_OK); /* its bound client */
	/* a second migrate finds nothing to do */
	dust_store_close(f.srv.store);
	f.srv.store = dust_store_open(f.store_path, DUST_STORE_MIGRATE, &f.server);
	CHECK(f.srv.store != NULL);
	fix_fini(&f);
}

/* The VmFlags of the mapping that holds addr, from /proc/self/smaps. */
static bool vma_flag(const void *addr, const char *flag)
{
	uintptr_t a = (uintptr_t)addr, lo, hi;
	bool in = false, found = false;
	char line[512];
	FILE *fp = fopen("/proc/self/smaps", "r");

	CHECK(fp != NULL);
	while (fp && fgets(line, sizeof(line), fp)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2) /* a mapping */
			in = a >= lo && a < hi;
		else if (in && strncmp(line, "VmFlags:", 8) == 0)
			found = strstr(line, flag) != NULL;
	}
	if (fp)
		fclose(fp);
	return found;
}

/*
 * F5: the entries (K_inv, cached DH results) are left out of core dumps
 * (madvise MADV_DONTDUMP needs page-aligned memory: "dd" in VmFlags), and
 * dust_core_dumps_off leaves the process no core at all.
 */
static void test_no_core_of_secrets(void)
{
	struct rlimit rl;
	struct fixture f;

	fix_init(&f);
	CHECK(vma_flag(dust_store_at(f.srv.store, 0), " dd"));
	CHECK(vma_flag(dust_store_at(f.srv.store, 0)->inv.secret, " dd"));
	CHECK_EQ(dust_core_dumps_off(), 0);
	CHECK(getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_cur == 0 && rl.rlim_max == 0);
	CHECK_EQ(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
	fix_fini(&f);
}

static const struct check_test tests[] = {
    {"no_secret_at_rest", test_no_secret_at_rest},
    {"altered_invitation", test_altered_invitation},
    {"forged_journal_records", test_forged_journal_records},
    {"wrong_key", test_wrong_key},
    {"migrate", test_migrate},
    {"no_core_of_secrets", test_no_core_of_secrets},
};

CHECK_MAIN(tests, fix_dust_init)
