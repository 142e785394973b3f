/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The invitation store on etcd (SPEC §7.5): an etcd v3 client over the
 * HTTP/JSON gateway. Keys PREFIX/{i,b,t,r}/IDHEX hold invitations,
 * bindings (create-if-absent), freshness (compare-and-swap on mod_revision)
 * and revocations. A watch thread follows the prefix; request threads
 * commit bindings and freshness, REQ_THREADS requests in flight, the
 * bindings queued on one thread together in one txn. Callers only queue
 * and drain.
 */
#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <sodium.h>

#include "dust_pvt.h"
#include "store_etcd.h"

#define EP_MAX    8
#define KEY_MAX   256
#define VAL_MAX   512
#define QUEUE_MAX 4096
/*
 * Request threads: first uses and freshness commits of different
 * invitations go to etcd side by side (etcd batches concurrent proposals
 * into one raft round); one invitation's requests stay in order on one.
 */
#define REQ_THREADS 8
#define PAGE        1000
#define CONNECT_MS  500L
#define REQUEST_MS  2500L /* above a leader change's stall (~1.4 s), below quorum loss's 503 */
#define LOAD_MS     30000L
/* all endpoints of one request: a first use is held 10 s at most (dustgw) */
#define BUDGET_MS 6000L
/* A reply (or one watch message) over this is refused: a page of PAGE invitations is < 1 MB. */
#define REPLY_MAX (8u << 20)
/* Keys of one kind a load reads at most: the store holds 4M invitations (store.c). */
#define KIND_KEYS_MAX (4u << 20)
#define SECRET_MAX    256 /* an etcd password, an auth token */

struct rec_node {
	struct rec_node *next;
	char kind;
	uint8_t id[DUST_ID_BYTES];
	char val[];
};

struct etcd_store {
	char *ep[EP_MAX];
	unsigned nep;
	unsigned good;             /* atomic: the endpoint that answered last */
	char prefix[KEY_MAX - 64]; /* parse_url keeps it that short */
	int64_t rev;               /* atomic: newest revision applied or loaded */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* request threads: one queue each, an invitation's requests on one */
	struct req_lane {
		struct etcd_store *es;
		struct etcd_req *q;
		unsigned qhead, qlen;
		pthread_cond_t cond;
		pthread_t thr;
	} lane[REQ_THREADS];
	unsigned queued; /* in all lanes */
	struct etcd_res *res;
	unsigned nres;
	/* watch thread: records waiting for etcd_events */
	struct rec_node *ev_head, **ev_tail;
	bool started, stop;
	pthread_t watch_thr;
	unsigned nlanes;             /* request threads started */
	unsigned lanes;              /* request threads to start (DUST_ETCD_LANES: bench) */
	uint8_t key[DUST_KEY_BYTES]; /* the storage key: values sealed (SPEC §7.6) */
	uint64_t refused;            /* atomic: values read back that did not open */
	pthread_mutex_t tool_lock;   /* tool_c: etcd_create, etcd_put */
	void *tool_c;                /* CURL: dust-invite's connection, kept alive */
	/* etcds:// (SPEC §7.5): TLS files, and the etcd user's password and token */
	bool tls;
	char *ca, *cert, *ckey, *user;
	char password[SECRET_MAX];
	pthread_mutex_t tok_lock;
	char token[SECRET_MAX]; /* under tok_lock; "" until authenticated */
};

struct buf {
	char *p;
	size_t len, cap;
	bool over; /* the reply outgrew REPLY_MAX: cut off */
};

/* Raw keys [start, end) of a range read; start moves on page by page. */
struct range {
	char start[KEY_MAX], end[KEY_MAX];
	size_t slen, elen;
};

static size_t buf_write(char *data, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;
	size_t add = size * n;

	if (b->len + add > REPLY_MAX) {
		b->over = true;
		return 0; /* curl ends the transfer */
	}
	if (b->len + add + 1 > b->cap) {
		size_t cap =
		    (b->len + add + 1) * 2 > REPLY_MAX + 1 ? REPLY_MAX + 1 : (b->len + add + 1) * 2;
		char *p = realloc(b->p, cap);

		if (!p)
			return 0;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, add);
	b->len += add;
	b->p[b->len] = '\0';
	return add;
}

static void buf_free(struct buf *b)
{
	if (b->p)
		sodium_memzero(b->p, b->cap); /* values may hold invitation secrets */
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static void b64(char *out, size_t cap, const void *in, size_t len)
{
	sodium_bin2base64(out, cap, in, len, sodium_base64_VARIANT_ORIGINAL);
}

/* A base64 field of a JSON object into out (NUL-terminated); its length or -1. */
static int unb64(const json_t *obj, const char *field, char *out, size_t cap)
{
	const char *s = json_string_value(json_object_get(obj, field));
	size_t len = 0;

	if (!s) {
		out[0] = '\0';
		return 0; /* an empty value is omitted from the JSON */
	}
	if (sodium_base642bin((uint8_t *)out, cap - 1, s, strlen(s), NULL, &len, NULL,
	                      sodium_base64_VARIANT_ORIGINAL) != 0)
		return -1;
	out[len] = '\0';
	return (int)len;
}

/* int64 fields come as JSON strings from the gateway; absent means 0. */
static int64_t jint(const json_t *obj, const char *field)
{
	const json_t *v = json_object_get(obj, field);

	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return json_is_integer(v) ? json_integer_value(v) : 0;
}

static void key_of(const struct etcd_store *es, char *out, char kind, const uint8_t *id)
{
	char idhex[2 * DUST_ID_BYTES + 1];

	sodium_bin2hex(idhex, sizeof(idhex), id, DUST_ID_BYTES);
	snprintf(out, KEY_MAX, "%s/%c/%s", es->prefix, tolower((unsigned char)kind), idhex);
}

/* PREFIX/ (or PREFIX/KIND/, or PREFIX/KIND/HEX: the IDs whose hex starts with HEX). */
static void prefix_range(const struct etcd_store *es, struct range *r, char kind, const char *hex)
{
	char *k = r->start;

	r->slen = hex    ? (size_t)snprintf(k, KEY_MAX, "%s/%c/%s", es->prefix, kind, hex)
	          : kind ? (size_t)snprintf(k, KEY_MAX, "%s/%c/", es->prefix, kind)
	                 : (size_t)snprintf(k, KEY_MAX, "%s/", es->prefix);
	memcpy(r->end, k, r->slen);
	r->elen = r->slen;
	r->end[r->elen - 1]++;
}

/* etcd's key order: bytewise, a prefix first. */
static int key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

/* ---- HTTP ------------------------------------------------------------------ */

/* libcurl's progress callback: a transfer ends within about a second of etcd_close. */
static int stop_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	(void)a, (void)b, (void)c, (void)d;
	return __atomic_load_n(&((struct etcd_store *)arg)->stop, __ATOMIC_RELAXED);
}

/*
 * A POST of body to ep path, the reply to fn(arg): what the request and the
 * watch share (the caller adds its own timeout). http:// only for etcd://;
 * etcds:// is https with the peer verified (CA file) and the client
 * certificate, and the auth token in the header once there is one.
 */
static void post_setup(struct etcd_store *es, CURL *c, char *url, size_t cap, const char *ep,
                       const char *path, const char *body, curl_write_callback fn, void *arg,
                       struct curl_slist *hdrs)
{
	snprintf(url, cap, "%s://%s%s", es->tls ? "https" : "http", ep, path);
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fn);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, arg);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_MS);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, stop_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, es);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, es->tls ? "https" : "http");
	if (es->tls) {
		/* as over plain HTTP: the watch is one long chunked reply */
		curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
		if (es->ca)
			curl_easy_setopt(c, CURLOPT_CAINFO, es->ca);
		if (es->cert)
			curl_easy_setopt(c, CURLOPT_SSLCERT, es->cert);
		if (es->ckey)
			curl_easy_setopt(c, CURLOPT_SSLKEY, es->ckey);
	}
	if (hdrs)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
}

/* "Authorization: TOKEN" for this request, or NULL (no user, or not yet authenticated). */
static struct curl_slist *auth_header(struct etcd_store *es)
{
	char h[SECRET_MAX + 32];
	struct curl_slist *l = NULL;

	if (!es->user)
		return NULL;
	pthread_mutex_lock(&es->tok_lock);
	if (es->token[0]) {
		snprintf(h, sizeof(h), "Authorization: %s", es->token);
		l = curl_slist_append(NULL, h);
		sodium_memzero(h, sizeof(h));
	}
	pthread_mutex_unlock(&es->tok_lock);
	return l;
}

/* curl keeps a copy of each header: wipe the token in ours before freeing it. */
static void header_free(struct curl_slist *l)
{
	for (struct curl_slist *n = l; n; n = n->next)
		sodium_memzero(n->data, strlen(n->data));
	curl_slist_free_all(l);
}

/* The reason in an error reply ({"error": ..., "code": ...}), or "". */
static void reply_reason(const struct buf *b, char *out, size_t cap)
{
	json_t *j = b->p ? json_loads(b->p, 0, NULL) : NULL;
	const char *e = json_string_value(json_object_get(j, "error"));

	if (!e)
		e = json_string_value(json_object_get(j, "message"));
	snprintf(out, cap, "%s%s", e ? ": " : "", e ? e : "");
	for (char *p = out; *p; p++)
		if (!isprint((unsigned char)*p))
			*p = '?';
	json_decref(j);
}

/*
 * POST body to one endpoint: 0 and the parsed reply for a 200 that carries a
 * header (a real answer); -EACCES for a refusal that every member would give
 * alike (TLS: a certificate refused either way; HTTP 400, 401, 403: no token,
 * a wrong password, no role on the prefix); -EAGAIN otherwise (refused, timed
 * out, 503 on a quorum loss, an error body): never mistaken for a failed
 * compare. *code gets the HTTP status (0 without one).
 */
static int post_once(struct etcd_store *es, CURL *c, const char *ep, const char *path,
                     const char *body, long ms, json_t **out, long *code)
{
	char url[KEY_MAX + 64], why[160];
	struct curl_slist *hdrs = auth_header(es);
	struct buf b = {0};
	CURLcode rc;

	*code = 0;
	post_setup(es, c, url, sizeof(url), ep, path, body, buf_write, &b, hdrs);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
	rc = curl_easy_perform(c);
	header_free(hdrs);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
	*out = NULL;
	if (rc == CURLE_OK && *code == 200 && b.p)
		*out = json_loads(b.p, 0, NULL);
	if (b.over) {
		buf_free(&b);
		return dust_fail(EAGAIN, "etcd %s%s: reply over %u MiB, refused", ep, path,
		                 REPLY_MAX >> 20);
	}
	reply_reason(&b, why, sizeof(why));
	buf_free(&b);
	if (*out && json_is_object(json_object_get(*out, "header")))
		return 0;
	json_decref(*out);
	*out = NULL;
	if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
	    rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CONNECT_ERROR)
		return dust_fail(EACCES, "etcd %s: TLS: %s", ep, curl_easy_strerror(rc));
	/* a member that ends the handshake: no certificate, or one it does not trust */
	if (es->tls && (rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR))
		return dust_fail(EAGAIN, "etcd %s: %s (TLS: does the cluster trust cert=?)", ep,
		                 curl_easy_strerror(rc));
	if (rc != CURLE_OK)
		return dust_fail(EAGAIN, "etcd %s: %s", ep, curl_easy_strerror(rc));
	if (*code == 400 || *code == 401 || *code == 403)
		return dust_fail(EACCES, "etcd %s%s: HTTP %ld%s", ep, path, *code, why);
	return dust_fail(EAGAIN, "etcd %s%s: HTTP %ld%s", ep, path, *code, why);
}

/* The etcd user's token, from /v3/auth/authenticate on ep: 0 or -errno. */
static int authenticate(struct etcd_store *es, CURL *c, const char *ep, long ms)
{
	json_t *req = json_pack("{s:s, s:s}", "name", es->user, "password", es->password), *r;
	char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	const char *tok;
	long code;
	int rc;

	json_decref(req); /* jansson copied the password: its copy is freed, not wiped */
	if (!body)
		return dust_fail(ENOMEM, "out of memory");
	/* a refused token must not go with the request: etcd checks it first */
	pthread_mutex_lock(&es->tok_lock);
	sodium_memzero(es->token, sizeof(es->token));
	pthread_mutex_unlock(&es->tok_lock);
	rc = post_once(es, c, ep, "/v3/auth/authenticate", body, ms, &r, &code);
	sodium_memzero(body, strlen(body));
	free(body);
	if (rc == -EACCES && code != 0) { /* refused by etcd, not by TLS */
		char why[256];

		snprintf(why, sizeof(why), "%s", dust_last_error());
		return dust_fail(EACCES, "user %s: not authenticated (%s)", es->user, why);
	}
	if (rc != 0)
		return rc;
	tok = json_string_value(json_object_get(r, "token"));
	if (!tok || !*tok || strlen(tok) >= SECRET_MAX) {
		json_decref(r);
		return dust_fail(EACCES, "etcd %s: user %s: no token in the reply", ep, es->user);
	}
	pthread_mutex_lock(&es->tok_lock);
	snprintf(es->token, sizeof(es->token), "%s", tok);
	pthread_mutex_unlock(&es->tok_lock);
	json_decref(r);
	return 0;
}

/*
 * post_once, authenticated first when the store has a user and no token
 * yet, and once again when the token was refused (it expires: etcd's
 * --auth-token-ttl, 300 s by default).
 */
static int post_one(struct etcd_store *es, CURL *c, const char *ep, const char *path,
                    const char *body, long ms, json_t **out)
{
	long code;
	int rc;

	*out = NULL;
	if (es->user && !es->token[0] && (rc = authenticate(es, c, ep, ms)) != 0)
		return rc;
	rc = post_once(es, c, ep, path, body, ms, out, &code);
	if (rc == -EACCES && code == 401 && es->user) {
		if ((rc = authenticate(es, c, ep, ms)) != 0)
			return rc;
		rc = post_once(es, c, ep, path, body, ms, out, &code);
	}
	return rc;
}

static long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Each endpoint once, starting with the one that answered last, within
 * BUDGET_MS in all (unless ms is longer: the initial load), so that a slow
 * cluster gives an answer ("unavailable") before a held first use times out.
 */
static int post(struct etcd_store *es, CURL *c, const char *path, const char *body, long ms,
                json_t **out)
{
	unsigned first = __atomic_load_n(&es->good, __ATOMIC_RELAXED);
	long end = mono_ms() + (ms > BUDGET_MS ? ms : BUDGET_MS);
	int rc = -EAGAIN;

	for (unsigned k = 0; k < es->nep; k++) {
		unsigned i = (first + k) % es->nep;
		long left = end - mono_ms();

		if (left < CONNECT_MS)
			break;
		if (__atomic_load_n(&es->stop, __ATOMIC_RELAXED))
			return dust_fail(EAGAIN, "etcd: store closing");
		rc = post_one(es, c, es->ep[i], path, body, ms < left ? ms : left, out);
		if (rc == 0) {
			__atomic_store_n(&es->good, i, __ATOMIC_RELAXED);
			return 0;
		}
		if (rc == -EACCES)
			break; /* every member refuses the same certificate or user */
	}
	return rc;
}

/* ---- records ----------------------------------------------------------------- */

/* A kv under the prefix as a record; 1 if it is one of ours, 0 if not, -1 if corrupt. */
static int kv_rec(const struct etcd_store *es, const json_t *kv, char *kind,
                  uint8_t id[DUST_ID_BYTES], char *val)
{
	char key[KEY_MAX];
	size_t plen = strlen(es->prefix);
	const char *idhex;

	if (unb64(kv, "key", key, sizeof(key)) < 0 || strncmp(key, es->prefix, plen) != 0 ||
	    key[plen] != '/' || !key[plen + 1] || key[plen + 2] != '/')
		return 0;
	*kind = (char)toupper((unsigned char)key[plen + 1]);
	if (!strchr("IBTR", *kind))
		return 0;
	idhex = key + plen + 3;
	if (strlen(idhex) != 2 * DUST_ID_BYTES ||
	    sodium_hex2bin(id, DUST_ID_BYTES, idhex, strlen(idhex), NULL, NULL, NULL) != 0)
		return -1;
	return unb64(kv, "value", val, VAL_MAX) < 0 ? -1 : 1;
}

static int kv_apply(const struct etcd_store *es, const json_t *kv, etcd_rec_fn fn, void *arg)
{
	char val[VAL_MAX], kind;
	uint8_t id[DUST_ID_BYTES];
	int rc = kv_rec(es, kv, &kind, id, val);

	if (rc < 0)
		return dust_fail(EINVAL, "etcd: corrupt key under %s/", es->prefix);
	rc = rc > 0 ? fn(arg, kind, id, val) : 0;
	sodium_memzero(val, sizeof(val));
	return rc;
}

/*
 * Where the page after a full one starts: just after its last key (the key
 * and a NUL). A page that says "more" must be full and end further on
 * inside the range, or a broken or hostile server (a corrupt key, "more"
 * for ever: 5000 requests a second) would keep us paging.
 */
static int page_next(const struct etcd_store *es, struct range *r, const json_t *kvs, size_t n)
{
	char key[KEY_MAX];
	int len;

	if (n != PAGE)
		return dust_fail(
		    EPROTO, "etcd: a range page of %zu keys (limit %d) says more follow", n, PAGE);
	len = unb64(json_array_get(kvs, n - 1), "key", key, sizeof(key) - 1);
	if (len <= 0)
		return dust_fail(EPROTO, "etcd: a range page ends with a %s key",
		                 len < 0 ? "corrupt" : "missing");
	if (key_cmp(key, (size_t)len + 1, r->start, r->slen) <= 0 ||
	    key_cmp(key, (size_t)len, r->end, r->elen) >= 0)
		return dust_fail(EPROTO, "etcd: a range page under %s/ does not move forward",
		                 es->prefix);
	memcpy(r->start, key, (size_t)len + 1);
	r->slen = (size_t)len + 1;
	return 0;
}

/*
 * A range counting more keys than this is read as 16 narrower ones, by the
 * next hex digit of the ID, after its first page: paging N keys makes etcd
 * 3.4 walk about N^2/(2*PAGE) keys (see load_with), 16 ranges of N/16 a
 * 16th of that, for up to 16 more requests, mostly short pages. At 8*PAGE
 * (8 pages) the walk saved, ~30k keys at ~0.3 us (200k keys in one range
 * took 14-15 s to load, in 16 ranges 8-10 s), is about what those requests
 * cost; above, the walk grows as the square, the requests not at all.
 */
#define SPLIT_KEYS (8 * PAGE)
/* The longest ID hex prefix a range is split down to: 16^3 ranges hold KIND_KEYS_MAX at ~PAGE. */
#define SPLIT_HEX 3
_Static_assert(SPLIT_HEX < 2 * DUST_ID_BYTES, "a range split past the ID's last hex digit");

/* A load's state across its ranges. */
struct load {
	struct etcd_store *es;
	CURL *c;
	char kind;
	int64_t rev; /* of the first page, all later ones at it; 0 before it */
	size_t keys; /* the kind's keys read, across its ranges: KIND_KEYS_MAX at most */
	etcd_rec_fn fn;
	void *arg;
};

/* One page of rg (its first PAGE keys from rg->start) at the load's revision, into *r. */
static int range_page(struct load *ld, const struct range *rg, json_t **r)
{
	char k64[2 * KEY_MAX], e64[2 * KEY_MAX], body[6 * KEY_MAX];
	int rc;

	b64(k64, sizeof(k64), rg->start, rg->slen);
	b64(e64, sizeof(e64), rg->end, rg->elen);
	snprintf(body, sizeof(body),
	         "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":%d,\"revision\":\"%" PRId64 "\"}",
	         k64, e64, PAGE, ld->rev);
	if ((rc = post(ld->es, ld->c, "/v3/kv/range", body, LOAD_MS, r)) != 0)
		return rc;
	if (!ld->rev)
		ld->rev = jint(json_object_get(*r, "header"), "revision");
	return 0;
}

/*
 * Whether the range of first page r, hexlen hex digits of the ID long, is
 * read as 16 narrower ones: etcd's "count" is the keys in the whole range,
 * limit or not. Only a full page that says more follow is split, and it is
 * applied and checked (page_next) as any, so a server claiming keys it does
 * not send gets no further; without a count (not etcd: a proxy, a fake)
 * the range is paged through.
 */
static bool range_split(const json_t *r, size_t hexlen)
{
	return hexlen < SPLIT_HEX && json_is_true(json_object_get(r, "more")) &&
	       json_array_size(json_object_get(r, "kvs")) == PAGE && jint(r, "count") > SPLIT_KEYS;
}

/* The keys of page r applied in order; *more if the range goes on past it (rg moved there). */
static int page_apply(struct load *ld, struct range *rg, const json_t *r, bool *more)
{
	const json_t *kvs = json_object_get(r, "kvs");
	size_t i, n = json_array_size(kvs);
	int rc = 0;

	*more = json_is_true(json_object_get(r, "more"));
	ld->keys += n;
	if (ld->keys > KIND_KEYS_MAX)
		return dust_fail(EPROTO, "etcd: more than %u keys under %s/%c/, refused",
		                 KIND_KEYS_MAX, ld->es->prefix, ld->kind);
	for (i = 0; i < n && rc == 0; i++)
		rc = kv_apply(ld->es, json_array_get(kvs, i), ld->fn, ld->arg);
	return !rc && *more ? page_next(ld->es, rg, kvs, n) : rc;
}

/* Every key of rg, page by page from its first page r (freed here). */
static int load_pages(struct load *ld, struct range *rg, json_t *r)
{
	bool more = true;
	int rc;

	while ((rc = page_apply(ld, rg, r, &more)) == 0 && more) {
		json_decref(r);
		if ((rc = range_page(ld, rg, &r)) != 0)
			return rc;
	}
	json_decref(r);
	return rc;
}

/*
 * Every key of the load's kind whose ID's hex starts with hex from key from
 * on (what the range's parent has read is before it), all at the revision of
 * the load's first page, so the watch can follow from exactly there: paged
 * through, or, when its first page counts more than SPLIT_KEYS, that page
 * applied and the rest read as 16 ranges one hex digit longer, each from
 * where the page ended (split again if need be): fn sees each key once, in
 * order. As at the top (load_with), an ID not in lowercase hex, which
 * key_of never writes, may fall between the narrower ranges, unread.
 */
static int load_range(struct load *ld, const char *hex, const char *from, size_t flen)
{
	size_t len = strlen(hex);
	char sub[SPLIT_HEX + 1];
	struct range rg;
	bool more;
	json_t *r;
	int rc;

	prefix_range(ld->es, &rg, ld->kind, hex);
	if (key_cmp(rg.end, rg.elen, from, flen) <= 0)
		return 0; /* read whole in the parent's first page */
	if (key_cmp(from, flen, rg.start, rg.slen) > 0) {
		memcpy(rg.start, from, flen);
		rg.slen = flen;
	}
	if ((rc = range_page(ld, &rg, &r)) != 0)
		return rc;
	if (!range_split(r, len))
		return load_pages(ld, &rg, r);
	rc = page_apply(ld, &rg, r, &more); /* more: range_split saw it */
	json_decref(r);
	memcpy(sub, hex, len);
	sub[len + 1] = '\0';
	for (const char *h = "0123456789abcdef"; *h && rc == 0; h++) {
		sub[len] = *h;
		rc = load_range(ld, sub, rg.start, rg.slen);
	}
	return rc;
}

/*
 * Invitations first (keys sort b < i < r < t, and a binding, freshness or
 * revocation applies to a known invitation), then the rest, all at the
 * revision of the first page. Each kind is read in 16 ranges at least, one
 * per first hex digit of the ID, a large one split further (load_range):
 * etcd 3.4 walks every key left in a range even when the request has a
 * limit, so paging through one range of N keys costs N^2 (100k invitations
 * took 4-6 s to load, 200k 14-15 s, in one range).
 */
static int load_with(struct etcd_store *es, CURL *c, etcd_rec_fn fn, void *arg)
{
	struct load ld = {.es = es, .c = c, .fn = fn, .arg = arg};
	int rc = 0;

	for (const char *k = "ibrt"; *k && rc == 0; k++) {
		ld.kind = *k;
		ld.keys = 0;
		for (const char *h = "0123456789abcdef"; *h && rc == 0; h++)
			rc = load_range(&ld, (char[]){*h, '\0'}, "", 0);
	}
	if (rc == 0)
		__atomic_store_n(&es->rev, ld.rev, __ATOMIC_RELEASE);
	return rc;
}

int etcd_load(struct etcd_store *es, etcd_rec_fn fn, void *arg)
{
	CURL *c = curl_easy_init();
	int rc;

	if (!c)
		return dust_fail(ENOMEM, "curl_easy_init");
	rc = load_with(es, c, fn, arg);
	curl_easy_cleanup(c);
	return rc;
}

int64_t etcd_revision(const struct etcd_store *es)
{
	return __atomic_load_n(&es->rev, __ATOMIC_ACQUIRE);
}

/* ---- sealed values (SPEC §7.6) ------------------------------------------------------ */

/* The value of kind/ID as etcd holds it: plain sealed, in out (VAL_MAX). */
static void val_seal(const struct etcd_store *es, char *out, char kind,
                     const uint8_t id[DUST_ID_BYTES], const char *plain)
{
	if (dust_seal_hex(out, VAL_MAX, es->key, kind, id, (const uint8_t *)plain, strlen(plain)) !=
	    0)
		abort(); /* our own values: short enough always */
}

/* A value read back opened into plain (VAL_MAX); -1 (counted) if it does not open. */
static int val_open(struct etcd_store *es, char *plain, char kind, const uint8_t id[DUST_ID_BYTES],
                    const char *sealed)
{
	int len = dust_unseal_hex((uint8_t *)plain, VAL_MAX - 1, es->key, kind, id, sealed);

	if (len < 0) {
		__atomic_fetch_add(&es->refused, 1, __ATOMIC_RELAXED);
		return -1;
	}
	plain[len] = '\0';
	return 0;
}

uint64_t etcd_refused(const struct etcd_store *es)
{
	return es ? __atomic_load_n(&es->refused, __ATOMIC_RELAXED) : 0;
}

/* ---- transactions ---------------------------------------------------------------- */

/* A request body grown as needed; wiped when freed (it holds sealed values). */
struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static bool sb_room(struct sbuf *s, size_t add)
{
	char *p;
	size_t cap;

	if (s->oom)
		return false;
	if (s->len + add + 1 <= s->cap)
		return true;
	cap = (s->len + add + 1) * 2;
	if (!(p = malloc(cap))) {
		s->oom = true;
		return false;
	}
	if (s->p) {
		memcpy(p, s->p, s->len + 1);
		sodium_memzero(s->p, s->cap);
		free(s->p);
	}
	s->p = p;
	s->cap = cap;
	return true;
}

static void sb_str(struct sbuf *s, const char *str)
{
	size_t len = strlen(str);

	if (!sb_room(s, len))
		return;
	memcpy(s->p + s->len, str, len + 1);
	s->len += len;
}

/* str base64-encoded, between quotes. */
static void sb_b64(struct sbuf *s, const char *str)
{
	size_t len = strlen(str),
	       enc = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);

	if (!sb_room(s, enc + 2))
		return;
	s->p[s->len++] = '"';
	b64(s->p + s->len, enc, str, len);
	s->len += enc - 1;
	s->p[s->len++] = '"';
	s->p[s->len] = '\0';
}

static void sb_free(struct sbuf *s)
{
	if (s->p)
		sodium_memzero(s->p, s->cap);
	free(s->p);
	memset(s, 0, sizeof(*s));
}

/*
 * One record (or a binding's two) created if absent: put key[] unless a key
 * of cmp[] exists; on failure the cmp keys are read back, in order.
 */
struct txn_item {
	const char *cmp[2];
	unsigned ncmp;
	const char *key[2], *val[2];
	unsigned nput;
};

/*
 * Items created together, in one txn at most TXN_ITEMS: a compare and a put
 * (or two) each. etcd refuses a txn of more than --max-txn-ops (default
 * 128) compares, puts or reads: 2 each per binding, 64 for TXN_ITEMS.
 */
#define TXN_ITEMS ETCD_TXN_ITEMS

/*
 * One list of the txn: for each compare key of items sel[0, n), or with put
 * each put, "PRE KEY POST" (a put: "PRE KEY,"value":VAL POST"), comma-separated.
 */
static void txn_list(struct sbuf *s, const struct txn_item *it, const unsigned *sel, unsigned n,
                     bool put, const char *pre, const char *post)
{
	const char *sep = "";

	for (unsigned k = 0; k < n; k++) {
		const struct txn_item *x = &it[sel[k]];

		for (unsigned j = 0; j < (put ? x->nput : x->ncmp); j++, sep = ",") {
			sb_str(s, sep);
			sb_str(s, pre);
			sb_b64(s, put ? x->key[j] : x->cmp[j]);
			if (put) {
				sb_str(s, ",\"value\":");
				sb_b64(s, x->val[j]);
			}
			sb_str(s, post);
		}
	}
}

/* The txn of items sel[0, n): every compare, every put, every compare's key read on failure. */
static void txn_body(struct sbuf *s, const struct txn_item *it, const unsigned *sel, unsigned n)
{
	sb_str(s, "{\"compare\":[");
	txn_list(s, it, sel, n, false,
	         "{\"key\":", ",\"target\":\"CREATE\",\"create_revision\":\"0\"}");
	sb_str(s, "],\"success\":[");
	txn_list(s, it, sel, n, true, "{\"request_put\":{\"key\":", "}}");
	sb_str(s, "],\"failure\":[");
	txn_list(s, it, sel, n, false, "{\"request_range\":{\"key\":", "}}");
	sb_str(s, "]}");
}

/*
 * The txn whose body is s (freed): 1 if it succeeded, 0 if not, -EAGAIN
 * if the cluster did not answer; the reply in *got either way (the
 * caller's). A false "succeeded" is omitted from the reply: absent means
 * the compares failed.
 */
static int txn_post(struct etcd_store *es, CURL *c, struct sbuf *s, json_t **got)
{
	int rc = s->oom ? dust_fail(ENOMEM, "out of memory")
	                : post(es, c, "/v3/kv/txn", s->p, REQUEST_MS, got);

	sb_free(s);
	return rc ? rc : json_is_true(json_object_get(*got, "succeeded"));
}

/* The txn of items sel[0, n): 1 if all were put, 0 if not (the reads in *got), -EAGAIN. */
static int txn_send(struct etcd_store *es, CURL *c, const struct txn_item *it, const unsigned *sel,
                    unsigned n, json_t **got)
{
	struct sbuf s = {0};
	int rc;

	txn_body(&s, it, sel, n);
	if ((rc = txn_post(es, c, &s, got)) == 1) {
		json_decref(*got);
		*got = NULL;
	}
	return rc;
}

/* The first kv of the i-th response of a txn reply, or NULL (no such key). */
static const json_t *txn_kv(const json_t *r, size_t i)
{
	const json_t *rr =
	    json_object_get(json_array_get(json_object_get(r, "responses"), i), "response_range");

	return json_array_get(json_object_get(rr, "kvs"), 0);
}

/*
 * An item found existing: the reply, its cmp keys' reads from response at
 * on. Resolves the item (the caller's word for it).
 */
typedef void (*txn_found_fn)(void *arg, unsigned i, const json_t *got, size_t at);

/*
 * Items 0..n-1 created if absent, each independently, in as few txns as
 * etcd allows: all in one txn, and when one compare fails the whole txn
 * fails, so its reads (of one revision) say which items exist: those are
 * resolved by found, the others sent again without them. Each round
 * resolves at least one item, or stops. out[i]: 1 put, 0 found, -errno
 * (the cluster did not answer: nothing known).
 */
static void txn_create_all(struct etcd_store *es, CURL *c, const struct txn_item *it, unsigned n,
                           int *out, txn_found_fn found, void *arg)
{
	unsigned sel[TXN_ITEMS], ns = n;

	for (unsigned k = 0; k < n; k++)
		sel[k] = k;
	while (ns) {
		json_t *got = NULL;
		unsigned keep = 0;
		size_t at = 0;
		int rc = txn_send(es, c, it, sel, ns, &got);

		if (rc != 0) {
			for (unsigned k = 0; k < ns; k++)
				out[sel[k]] = rc > 0 ? 1 : rc;
			return;
		}
		for (unsigned k = 0; k < ns; k++) {
			bool exists = false;

			for (unsigned j = 0; j < it[sel[k]].ncmp; j++)
				exists |= txn_kv(got, at + j) != NULL;
			if (exists) {
				out[sel[k]] = 0;
				found(arg, sel[k], got, at);
			} else {
				sel[keep++] = sel[k];
			}
			at += it[sel[k]].ncmp;
		}
		json_decref(got);
		if (keep == ns) { /* a failed compare, yet no key read back: not etcd's answer */
			rc = dust_fail(EAGAIN, "etcd: a txn failed on no existing key");
			for (unsigned k = 0; k < ns; k++)
				out[sel[k]] = rc;
			return;
		}
		ns = keep;
	}
}

static void found_none(void *arg, unsigned i, const json_t *got, size_t at)
{
	(void)arg, (void)i, (void)got, (void)at;
}

/*
 * dust-invite's handle: one connection kept alive across its writes (a
 * new handle each would make a new TCP connection and TLS handshake per
 * record). A store is used by one thread of dust-invite; the lock keeps
 * any other caller correct.
 */
static CURL *tool_handle(struct etcd_store *es)
{
	pthread_mutex_lock(&es->tool_lock);
	if (!es->tool_c)
		es->tool_c = curl_easy_init();
	if (!es->tool_c) {
		pthread_mutex_unlock(&es->tool_lock);
		dust_fail(ENOMEM, "curl_easy_init");
	}
	return es->tool_c;
}

int etcd_create_many(struct etcd_store *es, char kind, const uint8_t (*id)[DUST_ID_BYTES],
                     const char *const *val, unsigned n, int *out)
{
	char(*key)[KEY_MAX] = calloc(TXN_ITEMS, KEY_MAX);
	struct txn_item it[TXN_ITEMS];
	int res[TXN_ITEMS];
	CURL *c;

	if (n > TXN_ITEMS)
		return dust_fail(EINVAL, "etcd: over %d records in one txn", TXN_ITEMS);
	if (!key)
		return dust_fail(ENOMEM, "out of memory");
	if (!(c = tool_handle(es))) {
		free(key);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++) {
		key_of(es, key[i], kind, id[i]);
		it[i] = (struct txn_item){
		    .cmp = {key[i]}, .ncmp = 1, .key = {key[i]}, .val = {val[i]}, .nput = 1};
	}
	txn_create_all(es, c, it, n, res, found_none, NULL);
	pthread_mutex_unlock(&es->tool_lock);
	free(key);
	for (unsigned i = 0; i < n; i++)
		out[i] = res[i] > 0 ? 0 : res[i] == 0 ? -EEXIST : res[i];
	return 0;
}

int etcd_create(struct etcd_store *es, char kind, const uint8_t id[DUST_ID_BYTES], const char *val)
{
	int out,
	    rc = etcd_create_many(es, kind, (const uint8_t(*)[DUST_ID_BYTES])id, &val, 1, &out);

	return rc ? rc : out;
}

int etcd_put(struct etcd_store *es, char kind, const uint8_t id[DUST_ID_BYTES], const char *val)
{
	char key[KEY_MAX], k64[2 * KEY_MAX], v64[2 * VAL_MAX], body[4 * VAL_MAX + 64];
	CURL *c = tool_handle(es);
	json_t *r = NULL;
	int rc;

	if (!c)
		return -ENOMEM;
	key_of(es, key, kind, id);
	b64(k64, sizeof(k64), key, strlen(key));
	b64(v64, sizeof(v64), val, strlen(val));
	snprintf(body, sizeof(body), "{\"key\":\"%s\",\"value\":\"%s\"}", k64, v64);
	rc = post(es, c, "/v3/kv/put", body, REQUEST_MS, &r);
	pthread_mutex_unlock(&es->tool_lock);
	json_decref(r);
	return rc;
}

/* A binding's keys and sealed values: b/ID and t/ID put unless b/ID or r/ID exists. */
struct bind_keys {
	char key[KEY_MAX], rkey[KEY_MAX], tkey[KEY_MAX], val[VAL_MAX], tval[VAL_MAX];
};

/* t/ID's sealed value, "TS NONCEHEX" (SPEC §7.6): a binding's and a freshness commit's. */
static void fresh_seal(const struct etcd_store *es, char *out, const uint8_t id[DUST_ID_BYTES],
                       uint64_t ts, const uint8_t nonce[DUST_XNONCE_BYTES])
{
	char nhex[2 * DUST_XNONCE_BYTES + 1], plain[VAL_MAX];

	sodium_bin2hex(nhex, sizeof(nhex), nonce, DUST_XNONCE_BYTES);
	snprintf(plain, sizeof(plain), "%" PRIu64 " %s", ts, nhex);
	val_seal(es, out, 'T', id, plain);
}

static void bind_item(struct etcd_store *es, const struct etcd_req *rq, struct bind_keys *bk,
                      struct txn_item *it)
{
	char pkhex[2 * DUST_PK_BYTES + 1], plain[VAL_MAX];

	key_of(es, bk->key, 'B', rq->id);
	key_of(es, bk->rkey, 'R', rq->id);
	sodium_bin2hex(pkhex, sizeof(pkhex), rq->pk, DUST_PK_BYTES);
	snprintf(plain, sizeof(plain), "%s %" PRIu64, pkhex, rq->at);
	val_seal(es, bk->val, 'B', rq->id, plain);
	/* the first use's freshness goes with its binding: one request, not three */
	key_of(es, bk->tkey, 'T', rq->id);
	fresh_seal(es, bk->tval, rq->id, rq->ts, rq->nonce);
	*it = (struct txn_item){.cmp = {bk->key, bk->rkey},
	                        .ncmp = 2,
	                        .key = {bk->key, bk->tkey},
	                        .val = {bk->val, bk->tval},
	                        .nput = 2};
}

struct bind_batch {
	struct etcd_store *es;
	const struct etcd_req *rq;
	struct etcd_res *res;
};

/*
 * A binding that exists (or a revocation): whose it is. Ours is OK (a
 * retry of a commit whose reply was lost, or another worker's intro of the
 * same client); a binding that does not open was not written by a gateway:
 * unavailable, counted.
 */
static void bind_found(void *arg, unsigned i, const json_t *got, size_t at)
{
	struct bind_batch *bb = arg;
	const struct etcd_req *rq = &bb->rq[i];
	struct etcd_res *res = &bb->res[i];
	char val[VAL_MAX], plain[VAL_MAX];
	const json_t *kv;

	res->status = ETCD_UNAVAILABLE;
	if (txn_kv(got, at + 1))
		res->status = ETCD_REVOKED;
	else if ((kv = txn_kv(got, at)) && unb64(kv, "value", val, sizeof(val)) > 0 &&
	         val_open(bb->es, plain, 'B', rq->id, val) == 0 &&
	         strlen(plain) > 2 * DUST_PK_BYTES &&
	         sodium_hex2bin(res->pk, DUST_PK_BYTES, plain, 2 * DUST_PK_BYTES, NULL, NULL,
	                        NULL) == 0)
		res->status =
		    sodium_memcmp(res->pk, rq->pk, DUST_PK_BYTES) == 0 ? ETCD_OK : ETCD_CONFLICT;
	sodium_memzero(plain, sizeof(plain));
}

/*
 * Bindings rq[0, n) of one lane, committed together: each puts b/ID
 * unless b/ID or r/ID exists, independently of the others (a conflict
 * fails the txn; txn_create_all sends the rest again). Never a second key.
 */
static void do_bind(struct etcd_store *es, CURL *c, const struct etcd_req *rq, struct etcd_res *res,
                    unsigned n)
{
	struct bind_keys *bk = calloc(n, sizeof(*bk));
	struct bind_batch bb = {es, rq, res};
	struct txn_item it[TXN_ITEMS];
	int out[TXN_ITEMS];

	for (unsigned i = 0; i < n; i++)
		memcpy(res[i].pk, rq[i].pk, DUST_PK_BYTES);
	if (!bk) {
		for (unsigned i = 0; i < n; i++)
			res[i].status = ETCD_UNAVAILABLE;
		return;
	}
	for (unsigned i = 0; i < n; i++)
		bind_item(es, &rq[i], &bk[i], &it[i]);
	txn_create_all(es, c, it, n, out, bind_found, &bb);
	for (unsigned i = 0; i < n; i++) {
		res[i].fresh_written = out[i] > 0;
		if (out[i] != 0)
			res[i].status = out[i] > 0 ? ETCD_OK : ETCD_UNAVAILABLE;
	}
	sodium_memzero(bk, n * sizeof(*bk));
	free(bk);
}

/*
 * Freshness only moves forward cluster-wide: read t/ID, and unless it
 * already holds this intro or a newer one, swap it if its mod_revision is
 * still the one read (another gateway's write in between: read again).
 * Exclusive (F, a returning client held until this answer): finding this
 * intro or a newer one there is a replay (CONFLICT), whoever wrote it; a
 * lost reply is UNAVAILABLE, never retried, so a write of ours is never
 * mistaken for another's.
 *
 * Freshness of rq[0, n) (F and T, distinct IDs), committed together with
 * that rule for each: one txn reads every t/ID at one revision; the
 * items that still move forward are put in one txn that compares each
 * key's mod_revision with the one read, and reads every key back when a
 * compare fails (another gateway wrote one in between): then they are
 * judged again from that read. Two round trips for the batch where
 * one at a time took two per intro (issue 19: returning clients on etcd).
 */
struct fresh_item {
	char key[KEY_MAX], val[VAL_MAX];
	int64_t mod;
	bool open; /* still to put */
};

/* Whether kv (t/ID as read, or NULL) already holds rq's intro or a newer one; else its mod. */
static bool fresh_there(struct etcd_store *es, const struct etcd_req *rq, const json_t *kv,
                        int64_t *mod)
{
	char old[VAL_MAX], plain[VAL_MAX];

	*mod = kv ? jint(kv, "mod_revision") : 0;
	/* one that does not open (counted) says nothing: replaced like an old one */
	return kv && unb64(kv, "value", old, sizeof(old)) > 0 &&
	       val_open(es, plain, 'T', rq->id, old) == 0 && strtoull(plain, NULL, 10) >= rq->at;
}

static void fresh_body(struct sbuf *s, const struct fresh_item *fi, unsigned n, bool put)
{
	const char *sep = "";

	sb_str(s, "{\"compare\":[");
	for (unsigned i = 0; put && i < n; i++) {
		char mod[32];

		if (!fi[i].open)
			continue;
		snprintf(mod, sizeof(mod), "\"%" PRId64 "\"}", fi[i].mod);
		sb_str(s, sep);
		sb_str(s, "{\"key\":");
		sb_b64(s, fi[i].key);
		sb_str(s, ",\"target\":\"MOD\",\"mod_revision\":");
		sb_str(s, mod);
		sep = ",";
	}
	sb_str(s, "],\"success\":[");
	sep = "";
	for (unsigned i = 0; i < n; i++) {
		if (put && !fi[i].open)
			continue;
		sb_str(s, sep);
		sb_str(s, put ? "{\"request_put\":{\"key\":" : "{\"request_range\":{\"key\":");
		sb_b64(s, fi[i].key);
		if (put) {
			sb_str(s, ",\"value\":");
			sb_b64(s, fi[i].val);
		}
		sb_str(s, "}}");
		sep = ",";
	}
	sb_str(s, "],\"failure\":[");
	for (unsigned i = 0; put && i < n; i++) {
		sb_str(s, i ? ",{\"request_range\":{\"key\":" : "{\"request_range\":{\"key\":");
		sb_b64(s, fi[i].key);
		sb_str(s, "}}");
	}
	sb_str(s, "]}");
}

/* One txn of the batch: 1 succeeded, 0 not, -EAGAIN no answer; the reads in *got. */
static int fresh_txn(struct etcd_store *es, CURL *c, const struct fresh_item *fi, unsigned n,
                     bool put, json_t **got)
{
	struct sbuf s = {0};

	fresh_body(&s, fi, n, put);
	return txn_post(es, c, &s, got);
}

/* Judge each open item from reads[i]: decided ones get their status; how many stay open. */
static unsigned fresh_judge(struct etcd_store *es, const struct etcd_req *rq, struct etcd_res *res,
                            struct fresh_item *fi, unsigned n, const json_t *reads)
{
	unsigned open = 0;

	for (unsigned i = 0; i < n; i++) {
		if (!fi[i].open)
			continue;
		if (fresh_there(es, &rq[i], txn_kv(reads, i), &fi[i].mod)) {
			fi[i].open = false;
			/* this intro or a newer one is there already */
			res[i].status = rq[i].kind == 'F' ? ETCD_CONFLICT : ETCD_OK;
		} else {
			open++;
		}
	}
	return open;
}

static void do_fresh_batch(struct etcd_store *es, CURL *c, const struct etcd_req *rq,
                           struct etcd_res *res, unsigned n)
{
	struct fresh_item *fi = calloc(n, sizeof(*fi));
	json_t *got = NULL;
	unsigned open;
	int rc;

	if (!fi)
		return; /* each stays UNAVAILABLE */
	for (unsigned i = 0; i < n; i++) {
		key_of(es, fi[i].key, 'T', rq[i].id);
		fresh_seal(es, fi[i].val, rq[i].id, rq[i].at, rq[i].nonce);
		fi[i].open = true;
	}
	if (fresh_txn(es, c, fi, n, false, &got) < 0)
		goto out;
	open = fresh_judge(es, rq, res, fi, n, got);
	for (int tries = 0; open && tries < 8; tries++) {
		json_decref(got);
		got = NULL;
		if ((rc = fresh_txn(es, c, fi, n, true, &got)) < 0)
			goto out;
		if (rc == 1) {
			for (unsigned i = 0; i < n; i++)
				if (fi[i].open) /* F: written, no best-effort T to follow */
					res[i].status = ETCD_OK, res[i].fresh_written = true,
					fi[i].open = false;
			break;
		}
		open = fresh_judge(es, rq, res, fi, n, got);
	}
	for (unsigned i = 0; i < n; i++) /* still contended after 8 rounds */
		if (fi[i].open)
			res[i].status = ETCD_CONFLICT;
out:
	json_decref(got);
	sodium_memzero(fi, n * sizeof(*fi));
	free(fi);
}

/* ---- the request threads --------------------------------------------------------- */

static void result_push(struct etcd_store *es, const struct etcd_res *res)
{
	if (es->nres < QUEUE_MAX)
		es->res[es->nres++] = *res;
}

/*
 * After a request found the cluster unavailable, the bindings already
 * queued on its lane fail at once instead of each waiting out its own
 * timeout.
 */
static void fail_queued(struct req_lane *l)
{
	struct etcd_store *es = l->es;

	while (l->qlen) {
		struct etcd_req *rq = &l->q[l->qhead];
		struct etcd_res res = {.kind = rq->kind,
		                       .idx = rq->idx,
		                       .cookie = rq->cookie,
		                       .status = ETCD_UNAVAILABLE};

		if (rq->kind != 'T')
			result_push(es, &res);
		l->qhead = (l->qhead + 1) % QUEUE_MAX;
		l->qlen--;
		es->queued--;
	}
}

/*
 * The lane's next requests: bindings, or freshness commits (F and T),
 * queued one after another, TXN_ITEMS at most, of different IDs (etcd
 * refuses a txn that puts one key twice), go in one txn. Only the head's run is taken, so an
 * invitation's requests stay in order. Under es->lock; how many.
 */
static unsigned lane_take(struct req_lane *l, struct etcd_req *rq)
{
	struct etcd_store *es = l->es;
	unsigned n = 0;

	while (l->qlen && n < TXN_ITEMS) {
		const struct etcd_req *h = &l->q[l->qhead];
		bool dup = false;

		if (n && (h->kind == 'B') != (rq[0].kind == 'B'))
			break;
		for (unsigned i = 0; i < n; i++)
			dup |= memcmp(rq[i].id, h->id, DUST_ID_BYTES) == 0;
		if (dup)
			break;
		rq[n++] = *h;
		l->qhead = (l->qhead + 1) % QUEUE_MAX;
		l->qlen--;
		es->queued--;
	}
	return n;
}

/* Requests rq[0, n) taken together (lane_take): their results in res. */
static void lane_do(struct etcd_store *es, CURL *c, const struct etcd_req *rq, struct etcd_res *res,
                    unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].kind = rq[i].kind;
		res[i].idx = rq[i].idx;
		res[i].cookie = rq[i].cookie;
		res[i].status = ETCD_UNAVAILABLE;
	}
	if (!c)
		return;
	if (rq[0].kind == 'B')
		do_bind(es, c, rq, res, n);
	else
		do_fresh_batch(es, c, rq, res, n);
}

static void *req_main(void *arg)
{
	struct req_lane *l = arg;
	struct etcd_store *es = l->es;
	CURL *c = curl_easy_init(); /* one connection kept alive per lane */
	struct etcd_req rq[TXN_ITEMS];
	struct etcd_res res[TXN_ITEMS];

	pthread_mutex_lock(&es->lock);
	while (!es->stop) {
		unsigned n;
		bool down = false;

		if (!l->qlen) {
			pthread_cond_wait(&l->cond, &es->lock);
			continue;
		}
		n = lane_take(l, rq);
		pthread_mutex_unlock(&es->lock);
		lane_do(es, c, rq, res, n);
		pthread_mutex_lock(&es->lock);
		for (unsigned i = 0; i < n; i++) {
			if (rq[i].kind != 'T')
				result_push(es, &res[i]);
			down |= res[i].status == ETCD_UNAVAILABLE;
		}
		if (down)
			fail_queued(l);
	}
	pthread_mutex_unlock(&es->lock);
	sodium_memzero(rq, sizeof(rq));
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

int etcd_submit(struct etcd_store *es, const struct etcd_req *rq)
{
	/* the ID is random (§7): its first bytes pick the lane evenly */
	struct req_lane *l = &es->lane[rq->id[0] % es->lanes];
	int rc = 0;

	pthread_mutex_lock(&es->lock);
	if (!l->q || es->queued + es->nres >= QUEUE_MAX) { /* not started, or full */
		rc = -ENOBUFS;
	} else {
		l->q[(l->qhead + l->qlen++) % QUEUE_MAX] = *rq;
		es->queued++;
		pthread_cond_signal(&l->cond);
	}
	pthread_mutex_unlock(&es->lock);
	return rc;
}

unsigned etcd_results(struct etcd_store *es, struct etcd_res *out, unsigned max)
{
	unsigned n;

	pthread_mutex_lock(&es->lock);
	n = es->nres < max ? es->nres : max;
	if (n) {
		memcpy(out, es->res, n * sizeof(*out));
		memmove(es->res, es->res + n, (es->nres - n) * sizeof(*out));
		es->nres -= n;
	}
	pthread_mutex_unlock(&es->lock);
	return n;
}

/* ---- the watch thread -------------------------------------------------------------- */

static int ev_push(void *arg, char kind, const uint8_t id[DUST_ID_BYTES], const char *val)
{
	struct etcd_store *es = arg;
	size_t len = strlen(val);
	struct rec_node *n = malloc(sizeof(*n) + len + 1);

	if (!n)
		return dust_fail(ENOMEM, "out of memory");
	n->next = NULL;
	n->kind = kind;
	memcpy(n->id, id, DUST_ID_BYTES);
	memcpy(n->val, val, len + 1);
	pthread_mutex_lock(&es->lock);
	*es->ev_tail = n;
	es->ev_tail = &n->next;
	pthread_mutex_unlock(&es->lock);
	return 0;
}

int etcd_events(struct etcd_store *es, etcd_rec_fn fn, void *arg)
{
	struct rec_node *n, *next;
	int count = 0, rc = 0, err;

	pthread_mutex_lock(&es->lock);
	n = es->ev_head;
	es->ev_head = NULL;
	es->ev_tail = &es->ev_head;
	pthread_mutex_unlock(&es->lock);
	for (; n; n = next) {
		size_t len = strlen(n->val);

		next = n->next;
		/* a corrupt record is reported, the others still applied */
		if ((err = fn(arg, n->kind, n->id, n->val)) == 0)
			count++;
		else if (!rc)
			rc = err;
		sodium_memzero(n->val, len);
		free(n);
	}
	return rc ? rc : count;
}

struct watch_ctx {
	struct etcd_store *es;
	struct buf b;
	bool resync; /* compacted or cancelled: read everything again */
};

/* One watch message: its events as records; deletions are ignored (nothing is undone). */
static void watch_msg(struct watch_ctx *w, const char *line)
{
	json_t *m = json_loads(line, 0, NULL), *res = json_object_get(m, "result"), *evs;

	if (!res || jint(res, "compact_revision") || json_is_true(json_object_get(res, "canceled")))
		w->resync = true;
	evs = json_object_get(res, "events");
	for (size_t i = 0; i < json_array_size(evs); i++) {
		const json_t *ev = json_array_get(evs, i), *kv = json_object_get(ev, "kv");
		int64_t mod = jint(kv, "mod_revision");

		if (!json_object_get(ev, "type"))
			(void)kv_apply(w->es, kv, ev_push, w->es); /* a corrupt key: skipped */
		if (mod > __atomic_load_n(&w->es->rev, __ATOMIC_RELAXED))
			__atomic_store_n(&w->es->rev, mod, __ATOMIC_RELEASE);
	}
	json_decref(m);
}

/* The stream is one JSON message a line. */
static size_t watch_write(char *data, size_t size, size_t n, void *arg)
{
	struct watch_ctx *w = arg;
	char *nl;

	if (buf_write(data, size, n, &w->b) != size * n) {
		/* a message over REPLY_MAX: read everything again, in bounded pages */
		w->resync |= w->b.over;
		return 0;
	}
	while ((nl = memchr(w->b.p, '\n', w->b.len)) != NULL) {
		size_t used = (size_t)(nl - w->b.p) + 1;

		*nl = '\0';
		watch_msg(w, w->b.p);
		sodium_memzero(w->b.p, used);
		memmove(w->b.p, nl + 1, w->b.len - used);
		w->b.len -= used;
	}
	return w->resync || __atomic_load_n(&w->es->stop, __ATOMIC_RELAXED) ? 0 : size * n;
}

bool etcd_watch_feed(struct etcd_store *es, const char *data, size_t len, size_t chunk)
{
	struct watch_ctx w = {.es = es};

	for (size_t off = 0, n; off < len; off += n) {
		n = len - off < chunk ? len - off : chunk;
		if (watch_write((char *)(uintptr_t)(data + off), 1, n, &w) != n)
			break;
	}
	buf_free(&w.b);
	return w.resync;
}

static void watch_once(struct etcd_store *es, CURL *c, struct watch_ctx *w, const char *ep)
{
	char k64[2 * KEY_MAX], e64[2 * KEY_MAX], body[8 * KEY_MAX], url[KEY_MAX + 64];
	struct curl_slist *hdrs = auth_header(es);
	struct range rg;
	long code = 0;

	prefix_range(es, &rg, 0, NULL);
	b64(k64, sizeof(k64), rg.start, rg.slen);
	b64(e64, sizeof(e64), rg.end, rg.elen);
	snprintf(
	    body, sizeof(body),
	    "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\",\"start_revision\":\"%" PRId64
	    "\"}}",
	    k64, e64, etcd_revision(es) + 1);
	post_setup(es, c, url, sizeof(url), ep, "/v3/watch", body, watch_write, w, hdrs);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	header_free(hdrs);
	buf_free(&w->b);
	/* the token expired: a new one for the next watch (a failure: tried again then) */
	if (code == 401 && es->user)
		(void)authenticate(es, c, ep, REQUEST_MS);
}

static void nap_ms(struct etcd_store *es, long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&es->lock);
	if (!es->stop)
		pthread_cond_timedwait(&es->cond, &es->lock, &ts);
	pthread_mutex_unlock(&es->lock);
}

/*
 * Follow the prefix from the loaded revision on, endpoint after endpoint
 * (a killed member closes its stream). A compacted start revision means
 * events were missed: everything is read again (applying is idempotent).
 */
static void *watch_main(void *arg)
{
	struct etcd_store *es = arg;
	struct watch_ctx w = {.es = es};
	CURL *c = curl_easy_init();
	unsigned i = 0;

	while (c && !__atomic_load_n(&es->stop, __ATOMIC_RELAXED)) {
		if (w.resync && load_with(es, c, ev_push, es) != 0) {
			nap_ms(es, 200);
			continue;
		}
		w.resync = false;
		watch_once(es, c, &w, es->ep[i]);
		i = (i + 1) % es->nep;
		nap_ms(es, 100);
	}
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

/* Every thread told to stop, woken and joined. */
static void threads_stop(struct etcd_store *es, bool watch)
{
	pthread_mutex_lock(&es->lock);
	__atomic_store_n(&es->stop, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&es->cond);
	for (unsigned i = 0; i < es->nlanes; i++)
		pthread_cond_broadcast(&es->lane[i].cond);
	pthread_mutex_unlock(&es->lock);
	for (unsigned i = 0; i < es->nlanes; i++)
		pthread_join(es->lane[i].thr, NULL);
	es->nlanes = 0;
	if (watch)
		pthread_join(es->watch_thr, NULL);
}

/* The request queues and results: only a store that commits needs them (not dust-invite). */
static int queues_alloc(struct etcd_store *es)
{
	for (unsigned i = 0; i < es->lanes; i++)
		if (!es->lane[i].q && !(es->lane[i].q = calloc(QUEUE_MAX, sizeof(*es->lane[i].q))))
			return dust_fail(ENOMEM, "out of memory");
	if (!es->res && !(es->res = calloc(QUEUE_MAX, sizeof(*es->res))))
		return dust_fail(ENOMEM, "out of memory");
	return 0;
}

int etcd_start(struct etcd_store *es)
{
	int rc;

	if (es->started)
		return 0;
	if ((rc = queues_alloc(es)) != 0)
		return rc;
	for (; es->nlanes < es->lanes; es->nlanes++)
		if (pthread_create(&es->lane[es->nlanes].thr, NULL, req_main,
		                   &es->lane[es->nlanes]) != 0) {
			threads_stop(es, false);
			return dust_fail(EAGAIN, "etcd: cannot start the request threads");
		}
	if (pthread_create(&es->watch_thr, NULL, watch_main, es) != 0) {
		threads_stop(es, false);
		return dust_fail(EAGAIN, "etcd: cannot start the watch thread");
	}
	es->started = true;
	return 0;
}

/* ---- open / close ---------------------------------------------------------------- */

bool etcd_is_url(const char *path)
{
	return strncmp(path, ETCD_URL_SCHEME, strlen(ETCD_URL_SCHEME)) == 0 ||
	       strncmp(path, ETCD_TLS_SCHEME, strlen(ETCD_TLS_SCHEME)) == 0;
}

/*
 * The password file: opened by the rules for every file of secrets
 * (dust_file_open_private: the file itself, regular, this user's or
 * root's, mode 0600); its first line.
 */
static int read_password(struct etcd_store *es, const char *path)
{
	int fd = dust_file_open_private(path);
	ssize_t n;

	if (fd < 0)
		return fd;
	n = read(fd, es->password, sizeof(es->password));
	close(fd);
	if (n < 0)
		return dust_fail(errno, "%s: %s", path, strerror(errno));
	if ((size_t)n == sizeof(es->password))
		return dust_fail(EINVAL, "%s: longer than %d bytes", path, SECRET_MAX - 1);
	es->password[strcspn(es->password, "\r\n")] = '\0';
	return es->password[0] ? 0 : dust_fail(EINVAL, "%s: empty password", path);
}

/* The options of an etcds:// URL, as given. */
struct url_opts {
	char *dir, *pwfile;
};

/* One NAME=VALUE of an etcds:// URL's query. */
static int parse_param(struct etcd_store *es, struct url_opts *o, const char *url, const char *p,
                       size_t len)
{
	static const char *const names[] = {"ca", "cert", "key", "user", "password-file", "dir"};
	char **slots[] = {&es->ca, &es->cert, &es->ckey, &es->user, &o->pwfile, &o->dir};
	const char *eq = memchr(p, '=', len);

	for (size_t i = 0; eq && eq > p && eq + 1 < p + len && i < 6; i++) {
		if (strlen(names[i]) != (size_t)(eq - p) || memcmp(p, names[i], eq - p) != 0)
			continue;
		free(*slots[i]);
		*slots[i] = strndup(eq + 1, len - (size_t)(eq - p) - 1);
		return *slots[i] ? 0 : dust_fail(ENOMEM, "out of memory");
	}
	return dust_fail(EINVAL,
	                 "%s: bad option '%.*s' (want ca=, cert=, key=, user=, password-file=, "
	                 "dir=)",
	                 url, (int)len, p);
}

/* A relative file name of the options: under dir= when there is one. */
static int under_dir(const struct url_opts *o, char **path)
{
	char *full;

	if (!*path || !o->dir || (*path)[0] == '/')
		return 0;
	if (asprintf(&full, "%s/%s", o->dir, *path) < 0)
		return dust_fail(ENOMEM, "out of memory");
	free(*path);
	*path = full;
	return 0;
}

/* What the options say, checked; the password read. */
static int opts_apply(struct etcd_store *es, struct url_opts *o, const char *url)
{
	int rc;

	if ((rc = under_dir(o, &es->ca)) || (rc = under_dir(o, &es->cert)) ||
	    (rc = under_dir(o, &es->ckey)) || (rc = under_dir(o, &o->pwfile)))
		return rc;
	if (!es->user != !o->pwfile)
		return dust_fail(EINVAL, "%s: user= and password-file= go together", url);
	if (!es->cert != !es->ckey)
		return dust_fail(EINVAL, "%s: cert= and key= go together", url);
	return o->pwfile ? read_password(es, o->pwfile) : 0;
}

/*
 * etcd://HOST:PORT[,HOST:PORT...]/PREFIX (plain HTTP), or
 * etcds://HOST:PORT[,...]/PREFIX[?ca=FILE&cert=FILE&key=FILE&user=NAME&password-file=FILE
 * &dir=DIR], relative FILEs under DIR.
 */
static int parse_url(struct etcd_store *es, const char *url)
{
	struct url_opts o = {0};
	const char *p, *slash, *q;
	size_t plen;
	int rc = 0;

	es->tls = strncmp(url, ETCD_TLS_SCHEME, strlen(ETCD_TLS_SCHEME)) == 0;
	p = url + strlen(es->tls ? ETCD_TLS_SCHEME : ETCD_URL_SCHEME);
	slash = strchr(p, '/');
	q = slash ? strchr(slash, '?') : NULL;
	plen = slash ? (q ? (size_t)(q - slash - 1) : strlen(slash + 1)) : 0;
	if (!slash || slash == p || plen == 0 || plen >= KEY_MAX - 64)
		return dust_fail(EINVAL, "%s: want etcd[s]://HOST:PORT[,HOST:PORT...]/PREFIX", url);
	if (q && !es->tls)
		return dust_fail(EINVAL, "%s: options (?...) need etcds:// (TLS)", url);
	snprintf(es->prefix, sizeof(es->prefix), "%.*s", (int)plen, slash + 1);
	while (es->prefix[0] && es->prefix[strlen(es->prefix) - 1] == '/')
		es->prefix[strlen(es->prefix) - 1] = '\0';
	while (p < slash) {
		size_t len = strcspn(p, ",/");

		if (len == 0 || es->nep == EP_MAX || !memchr(p, ':', len))
			return dust_fail(EINVAL, "%s: bad endpoint list (HOST:PORT, at most %d)",
			                 url, EP_MAX);
		es->ep[es->nep] = strndup(p, len);
		if (!es->ep[es->nep++])
			return dust_fail(ENOMEM, "out of memory");
		p += len + (p[len] == ',');
	}
	if (!es->prefix[0])
		return dust_fail(EINVAL, "%s: empty prefix", url);
	for (p = q ? q + 1 : NULL; !rc && p && *p;
	     p += strcspn(p, "&") + (p[strcspn(p, "&")] == '&'))
		rc = parse_param(es, &o, url, p, strcspn(p, "&"));
	if (!rc)
		rc = opts_apply(es, &o, url);
	free(o.dir);
	free(o.pwfile);
	return rc;
}

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct etcd_store *etcd_open(const char *url, const uint8_t key[DUST_KEY_BYTES])
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct etcd_store *es = calloc(1, sizeof(*es));
	const char *lanes = getenv("DUST_ETCD_LANES"); /* the bench's serial baseline */

	pthread_once(&once, curl_init_once);
	if (!es) {
		dust_fail(ENOMEM, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&es->lock, NULL);
	pthread_mutex_init(&es->tok_lock, NULL);
	pthread_mutex_init(&es->tool_lock, NULL);
	pthread_cond_init(&es->cond, NULL);
	memcpy(es->key, key, DUST_KEY_BYTES);
	es->ev_tail = &es->ev_head;
	es->lanes = lanes && atoi(lanes) >= 1 && atoi(lanes) <= REQ_THREADS ? (unsigned)atoi(lanes)
	                                                                    : REQ_THREADS;
	for (unsigned i = 0; i < REQ_THREADS; i++) {
		es->lane[i].es = es;
		pthread_cond_init(&es->lane[i].cond, NULL);
	}
	if (parse_url(es, url) != 0) {
		etcd_close(es);
		return NULL;
	}
	if (!es->tls)
		fprintf(stderr,
		        "dust: warning: %s: plain HTTP, no TLS and no etcd user: whoever reaches "
		        "etcd can delete the store's records (SPEC §7.6); use etcds://\n",
		        es->ep[0]);
	return es;
}

void etcd_close(struct etcd_store *es)
{
	struct rec_node *n, *next;

	if (!es)
		return;
	if (es->started)
		threads_stop(es, true);
	for (n = es->ev_head; n; n = next) {
		next = n->next;
		sodium_memzero(n->val, strlen(n->val));
		free(n);
	}
	for (unsigned i = 0; i < es->nep; i++)
		free(es->ep[i]);
	free(es->ca);
	free(es->cert);
	free(es->ckey);
	free(es->user);
	sodium_memzero(es->password, sizeof(es->password));
	sodium_memzero(es->token, sizeof(es->token));
	pthread_mutex_destroy(&es->tok_lock);
	if (es->tool_c)
		curl_easy_cleanup(es->tool_c);
	pthread_mutex_destroy(&es->tool_lock);
	for (unsigned i = 0; i < REQ_THREADS; i++) {
		free(es->lane[i].q);
		pthread_cond_destroy(&es->lane[i].cond);
	}
	free(es->res);
	pthread_mutex_destroy(&es->lock);
	pthread_cond_destroy(&es->cond);
	sodium_memzero(es->key, sizeof(es->key));
	free(es);
}
