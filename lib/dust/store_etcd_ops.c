/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The invitation store's etcd backend (SPEC §7.5, §7.7): its operations
 * for store.c's table. Values are sealed and opened here (SPEC §7.6) and
 * applied as the file store's records are; store_etcd.c does the network
 * (the HTTP/JSON client, the watch and request threads).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <sodium.h>

#include "dust_pvt.h"
#include "store_etcd.h"
#include "store_pvt.h"

/* A B, T or R value from etcd opened as the journal's record "K IDHEX V1 V2"; -1 if not ours. */
static int etcd_val_open(const struct dust_store *st, char kind, const uint8_t id[DUST_ID_BYTES],
                         const char *val, char *out, size_t cap)
{
	char idhex[2 * DUST_ID_BYTES + 1];
	uint8_t pt[DUST_SEAL_PT_MAX + 1];
	int len = dust_unseal_hex(pt, sizeof(pt) - 1, st->skey, kind, id, val);

	if (len < 0)
		return -1;
	pt[len] = '\0';
	sodium_bin2hex(idhex, sizeof(idhex), id, DUST_ID_BYTES);
	snprintf(out, cap, "%c %s %s", kind, idhex, (const char *)pt);
	sodium_memzero(pt, sizeof(pt));
	return 0;
}

/* The value of a new etcd record: plain sealed for its kind and ID. */
static void etcd_val_seal(const struct dust_store *st, char *out, size_t cap, char kind,
                          const uint8_t id[DUST_ID_BYTES], const uint8_t *plain, size_t len)
{
	if (dust_seal_hex(out, cap, st->skey, kind, id, plain, len) != 0)
		abort(); /* our own values: short enough always */
}

struct rec_ctx {
	struct dust_store *st;
	int changed;
};

/*
 * One record from etcd, loaded or watched: applied as the journal's lines
 * are (idempotent: the first binding wins, freshness moves forward, a
 * revocation stays), so the gateway reads its own writes back harmlessly.
 * A corrupt record is skipped with an error for the caller to report.
 */
static int etcd_rec(void *arg, char kind, const uint8_t id[DUST_ID_BYTES], const char *val)
{
	struct rec_ctx *c = arg;
	char line[LINE_MAX_LEN], idhex[2 * DUST_ID_BYTES + 1];
	int rc;

	sodium_bin2hex(idhex, sizeof(idhex), id, DUST_ID_BYTES);
	/* migrating: an invitation in the clear (its hex; a sealed one is longer) */
	if (kind == 'I' && c->st->plain_ok &&
	    (strlen(val) == 2 * DUST_INVITE_PT_BYTES || strlen(val) == 2 * DUST_INVITE_PT_MAX)) {
		rc = store_invite_hex(c->st, val, true);
		c->changed += rc > 0 ? rc : 0;
		return rc == -EINVAL
		           ? dust_fail(EINVAL, "%s: corrupt invitation record", c->st->path)
		           : (rc < 0 ? rc : 0);
	}
	if (kind == 'I') {
		/* "IDHEX SEAL", as the invitation file's line (SPEC §7.6) */
		if (strlen(val) >= sizeof(line) - sizeof(idhex) - 1)
			return dust_fail(EINVAL, "%s: corrupt invitation record", c->st->path);
		snprintf(line, sizeof(line), "%s %s", idhex, val);
		rc = store_invite_sealed(c->st, line, true);
		sodium_memzero(line, sizeof(line));
		if (rc > 0)
			c->changed += rc;
		return rc == -EINVAL
		           ? dust_fail(EINVAL, "%s: corrupt invitation record", c->st->path)
		           : (rc < 0 ? rc : 0);
	}
	if (etcd_val_open(c->st, kind, id, val, line, sizeof(line)) != 0) {
		if (!c->st->plain_ok) {
			store_refuse(c->st); /* written without the key: never applied */
			return 0;
		}
		snprintf(line, sizeof(line), "%c %s %.400s", kind, idhex, val); /* migrating */
	}
	pthread_mutex_lock(&c->st->lock);
	rc = store_journal_apply(c->st, line, &c->changed);
	pthread_mutex_unlock(&c->st->lock);
	sodium_memzero(line, sizeof(line));
	return rc ? dust_fail(EINVAL, "%s: corrupt %c record", c->st->path, kind) : 0;
}

static int store_etcd_migrate(struct dust_store *st);

static int store_etcd_open(struct dust_store *st, int flags)
{
	struct rec_ctx c = {.st = st};
	int rc;

	(void)flags;
	st->etcd = etcd_open(st->path, st->skey);
	if (!st->etcd)
		return -errno;
	st->deferred = true;
	rc = etcd_load(st->etcd, etcd_rec, &c);
	st->etcd_saved = st->n;
	/* b/ and r/ sort before i/: what the load read before its invitation */
	(void)store_orphans_apply(st);
	if (rc < 0)
		return rc;
	/* no lock to tell: the operator stops the gateways to migrate (README) */
	if (st->plain_ok) {
		rc = store_etcd_migrate(st);
		st->plain_ok = false;
	}
	return rc;
}

/* One record of an entry put sealed over whatever its key held (migration). */
static int etcd_put_sealed(struct dust_store *st, char kind, const uint8_t id[DUST_ID_BYTES],
                           const uint8_t *plain, size_t len)
{
	char val[2 * (DUST_SEAL_PT_MAX + DUST_SEAL_OVERHEAD) + 1];
	int rc;

	etcd_val_seal(st, val, sizeof(val), kind, id, plain, len);
	rc = etcd_put(st->etcd, kind, id, val);
	sodium_memzero(val, sizeof(val));
	return rc ? dust_fail(-rc, "%s: %s", st->path, dust_last_error()) : 0;
}

/*
 * A pre-sealing etcd store, loaded with its plaintext values, written back
 * sealed key by key (SPEC §7.6): invitation, binding, freshness, revocation.
 */
static int store_etcd_migrate(struct dust_store *st)
{
	char text[160], pkhex[2 * DUST_PK_BYTES + 1], nhex[2 * DUST_XNONCE_BYTES + 1];
	int rc = 0;

	for (size_t i = 0; !rc && i < st->n; i++) {
		const struct dust_store_entry *e = store_entry(st, i);
		uint8_t pt[DUST_INVITE_PT_MAX];

		dust_invite_pack_full(&e->inv, pt);
		rc = etcd_put_sealed(st, 'I', e->inv.id, pt, dust_invite_pt_len(&e->inv));
		sodium_memzero(pt, sizeof(pt));
		if (!rc && e->bound) {
			sodium_bin2hex(pkhex, sizeof(pkhex), e->client_pk, DUST_PK_BYTES);
			snprintf(text, sizeof(text), "%s %" PRIu64, pkhex, e->bound_at);
			rc = etcd_put_sealed(st, 'B', e->inv.id, (uint8_t *)text, strlen(text));
			sodium_bin2hex(nhex, sizeof(nhex), e->last_nonce, DUST_XNONCE_BYTES);
			snprintf(text, sizeof(text), "%" PRIu64 " %s", e->last_ts_ms, nhex);
			if (!rc)
				rc = etcd_put_sealed(st, 'T', e->inv.id, (uint8_t *)text,
				                     strlen(text));
		}
		if (!rc && e->revoked) {
			snprintf(text, sizeof(text), "%" PRIu64 " -", e->revoked_at);
			rc = etcd_put_sealed(st, 'R', e->inv.id, (uint8_t *)text, strlen(text));
		}
	}
	return rc;
}

static int store_etcd_follow(struct dust_store *st)
{
	struct rec_ctx c = {.st = st};
	int rc = st->readonly ? 0 : etcd_start(st->etcd);

	if (rc == 0)
		rc = etcd_events(st->etcd, etcd_rec, &c);
	return rc < 0 ? rc : c.changed;
}

/*
 * New invitations, each created if absent (a retry after a lost reply is
 * harmless), ETCD_TXN_ITEMS to a txn: one round trip for many, not each.
 */
static int store_etcd_save(struct dust_store *st)
{
	enum { HEX = 2 * (DUST_INVITE_PT_MAX + DUST_SEAL_OVERHEAD) + 1 };
	char(*hex)[HEX] = malloc(ETCD_TXN_ITEMS * (size_t)HEX);
	uint8_t id[ETCD_TXN_ITEMS][DUST_ID_BYTES];
	const char *val[ETCD_TXN_ITEMS];
	int out[ETCD_TXN_ITEMS], rc = 0;

	if (!hex)
		return dust_fail(ENOMEM, "out of memory");
	while (!rc && st->etcd_saved < st->n) {
		unsigned n = 0;

		for (; n < ETCD_TXN_ITEMS && st->etcd_saved + n < st->n; n++) {
			struct dust_store_entry *e = store_entry(st, st->etcd_saved + n);
			uint8_t pt[DUST_INVITE_PT_MAX];

			dust_invite_pack_full(&e->inv, pt);
			/* SPEC §7.6 */
			etcd_val_seal(st, hex[n], HEX, 'I', e->inv.id, pt,
			              dust_invite_pt_len(&e->inv));
			sodium_memzero(pt, sizeof(pt));
			memcpy(id[n], e->inv.id, DUST_ID_BYTES);
			val[n] = hex[n];
		}
		rc = etcd_create_many(st->etcd, 'I', (const uint8_t(*)[DUST_ID_BYTES])id, val, n,
		                      out);
		/* saved up to the first that failed; the rest are created again next time */
		for (unsigned i = 0; !rc && i < n; i++) {
			if (out[i] && out[i] != -EEXIST)
				rc = out[i];
			else
				st->etcd_saved++;
		}
		sodium_memzero(hex, ETCD_TXN_ITEMS * (size_t)HEX);
	}
	free(hex);
	return rc ? dust_fail(-rc, "%s: %s", st->path, dust_last_error()) : 0;
}

static int store_etcd_revoke(struct dust_store *st, struct dust_store_entry *e, uint64_t now_s)
{
	char plain[64], val[2 * (64 + DUST_SEAL_OVERHEAD) + 1];
	int rc;

	if (__atomic_load_n(&e->revoked, __ATOMIC_ACQUIRE))
		return dust_fail(EALREADY, "invitation already revoked");
	snprintf(plain, sizeof(plain), "%" PRIu64 " -", now_s);
	etcd_val_seal(st, val, sizeof(val), 'R', e->inv.id, (const uint8_t *)plain, strlen(plain));
	rc = etcd_create(st->etcd, 'R', e->inv.id, val);
	if (rc == -EAGAIN)
		return dust_fail(EAGAIN, "%s: %s", st->path, dust_last_error());
	pthread_mutex_lock(&st->lock);
	store_revoke_set(e, now_s);
	pthread_mutex_unlock(&st->lock);
	return rc == -EEXIST ? dust_fail(EALREADY, "invitation already revoked") : rc;
}

static void store_etcd_fresh(struct dust_store *st, const struct dust_store_entry *snap)
{
	struct etcd_req rq = {.kind = 'T', .at = snap->last_ts_ms};

	memcpy(rq.id, snap->inv.id, DUST_ID_BYTES);
	memcpy(rq.nonce, snap->last_nonce, DUST_XNONCE_BYTES);
	/* best effort: the watch of a later intro's freshness supersedes a lost one */
	(void)etcd_submit(st->etcd, &rq);
}

static int store_etcd_submit(struct dust_store *st, struct dust_store_entry *e, uint32_t cookie)
{
	struct etcd_req rq = {.kind = 'B', .idx = e->idx, .cookie = cookie};
	int rc;

	if ((rc = etcd_start(st->etcd)) != 0)
		return rc;
	entry_lock(e);
	/* a returning client: its freshness, exclusively (F); a first use: the binding (B) */
	if (!e->bind_pending)
		rq.kind = 'F';
	memcpy(rq.id, e->inv.id, DUST_ID_BYTES);
	memcpy(rq.pk, e->client_pk, DUST_PK_BYTES);
	memcpy(rq.nonce, e->last_nonce, DUST_XNONCE_BYTES);
	rq.at = rq.kind == 'F' ? e->last_ts_ms : e->bound_at;
	rq.ts = e->last_ts_ms;
	entry_unlock(e);
	rc = etcd_submit(st->etcd, &rq);
	return rc ? dust_fail(-rc, "%s: too many commits waiting for the cluster", st->path) : 0;
}

/* The cluster's binding, adopted by an entry that was unbound or pending here. */
static void bind_adopt(struct dust_store_entry *e, const uint8_t pk[DUST_PK_BYTES])
{
	if (e->bound && !e->bind_pending)
		return;
	if (!e->bound || sodium_memcmp(e->client_pk, pk, DUST_PK_BYTES) != 0) {
		memcpy(e->client_pk, pk, DUST_PK_BYTES);
		sodium_memzero(e->static_ss, DUST_KEY_BYTES); /* DH(s, C) of the loser */
		e->bound_at = (uint64_t)time(NULL);
	}
	e->bound = 1;
	e->bind_pending = 0;
}

/* A returning client's freshness: committed, or another gateway took this intro or a newer one. */
static enum dust_drop fresh_outcome(struct dust_store *st, struct dust_store_entry *e,
                                    const struct etcd_res *r)
{
	(void)st;
	entry_lock(e);
	e->fresh_pending = 0;
	entry_unlock(e);
	if (r->status == ETCD_OK)
		return DUST_OK;
	return r->status == ETCD_CONFLICT ? DUST_DROP_INTRO_REPLAY : DUST_DROP_STORE_UNAVAILABLE;
}

static enum dust_drop outcome_apply(struct dust_store *st, struct dust_store_entry *e,
                                    const struct etcd_res *r)
{
	if (r->kind == 'F')
		return fresh_outcome(st, e, r);
	entry_lock(e);
	if (r->status == ETCD_OK || r->status == ETCD_CONFLICT)
		bind_adopt(e, r->pk);
	else if (e->bind_pending) /* not committed: unused again here */
		e->bound = e->bind_pending = 0;
	if (r->status == ETCD_REVOKED)
		store_revoke_set(e, (uint64_t)time(NULL));
	entry_unlock(e);
	if (r->status == ETCD_OK)
		return DUST_OK;
	return r->status == ETCD_CONFLICT  ? DUST_DROP_INTRO_WRONG_KEY
	       : r->status == ETCD_REVOKED ? DUST_DROP_INTRO_REVOKED
	                                   : DUST_DROP_STORE_UNAVAILABLE;
}

static unsigned store_etcd_poll(struct dust_store *st, struct dust_store_outcome *out, unsigned max)
{
	struct etcd_res r[64];
	unsigned n = 0;

	max = max < (sizeof(r) / sizeof(r[0])) ? max : (sizeof(r) / sizeof(r[0]));
	n = etcd_results(st->etcd, r, max);
	for (unsigned i = 0; i < n; i++) {
		struct dust_store_entry *e = dust_store_at(st, r[i].idx);

		out[i].idx = r[i].idx;
		out[i].cookie = r[i].cookie;
		out[i].drop = e ? outcome_apply(st, e, &r[i]) : DUST_DROP_INTRO_UNKNOWN;
		if (e && out[i].drop == DUST_OK && !r[i].fresh_written)
			dust_store_persist_fresh(st, e);
	}
	return n;
}

static int64_t store_etcd_revision(const struct dust_store *st)
{
	return etcd_revision(st->etcd);
}

/* b/ and t/ values its request threads read back that did not open */
static uint64_t store_etcd_refused(const struct dust_store *st)
{
	return etcd_refused(st->etcd);
}

static void store_etcd_close(struct dust_store *st)
{
	etcd_close(st->etcd);
}

/* etcd: the cluster's own writer locks; no marker (freshness in flight at a crash is lost). */
static int store_etcd_lock(struct dust_store *st)
{
	(void)st;
	return 0;
}

/*
 * Nothing a crash can lose: every intro a gateway answers on a cluster store
 * was held until the cluster committed its freshness (a returning client's,
 * exclusively) or its binding with it (SPEC §7.5), so no intro from before
 * this start can be taken again, and none needs refusing (intro_early).
 */
static int store_etcd_run_begin(struct dust_store *st, bool *was_clean)
{
	(void)st;
	*was_clean = true;
	return 0;
}

static void store_etcd_discard(struct dust_store *st)
{
	(void)st;
}

const struct store_ops store_etcd_ops = {
    .name = "etcd",
    .open = store_etcd_open,
    .follow = store_etcd_follow,
    .lock = store_etcd_lock,
    .save = store_etcd_save,
    .revoke = store_etcd_revoke,
    .run_begin = store_etcd_run_begin,
    .fresh = store_etcd_fresh,
    .submit = store_etcd_submit,
    .poll = store_etcd_poll,
    .refused = store_etcd_refused,
    .revision = store_etcd_revision,
    .discard = store_etcd_discard,
    .close = store_etcd_close,
    .cluster = true,
};
