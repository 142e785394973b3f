/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-owner session table (SPEC.md §9): sessions in one preallocated,
 * mlocked array; an open-addressing index (linear probing, backward-shift
 * deletion, SipHash keyed per table so spoofed source addresses cannot
 * flood one chain); a free list. One owner thread, no locks. Spare slots
 * beyond the capacity hold retiring sessions through their grace period,
 * so an eviction can make room at once.
 */
#include <stdlib.h>

#include <sodium.h>

#include "dust_pvt.h"

#define NO_SLOT UINT32_MAX

struct dust_session_table {
	uint32_t capacity; /* live sessions at most */
	uint32_t nslots;   /* capacity + spare slots for retiring sessions */
	uint32_t live;
	uint32_t mask; /* index size - 1 */
	uint32_t nfree;
	uint32_t *index;    /* slot number or NO_SLOT */
	uint32_t *freelist; /* stack of free slot numbers */
	struct dust_session *slots;
	size_t slots_bytes;
	struct dust_ackz *ackz; /* one a slot, or NULL (dust_session_table_ackz_enable) */
	uint8_t hash_key[crypto_shorthash_siphash24_KEYBYTES];
};

/*
 * Keyed SipHash of the endpoint: address, port, family. An IPv4 endpoint
 * hashes 8 bytes (one SipHash block, not three), an IPv6 one 20.
 */
static uint32_t ep_hash(const struct dust_session_table *t, const struct dust_endpoint *ep)
{
	uint8_t buf[20], h[8];
	size_t alen = ipaddr_len(&ep->ip);

	memcpy(buf, ep->ip.a, alen);
	le16_put(buf + alen, ep->port);
	buf[alen + 2] = ep->ip.family;
	buf[alen + 3] = 0;
	crypto_shorthash_siphash24(h, buf, alen + 4, t->hash_key);
	return le32_get(h);
}

static bool ep_equal(const struct dust_endpoint *a, const struct dust_endpoint *b)
{
	return a->port == b->port && ipaddr_eq(&a->ip, &b->ip);
}

DUST_EXPORT struct dust_session_table *dust_session_table_create(uint32_t capacity)
{
	struct dust_session_table *t;
	uint32_t size = 16;

	if (capacity == 0 || capacity > (1u << 29)) {
		dust_fail(EINVAL, "session table capacity %u out of range", capacity);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto err_nomem;
	t->capacity = capacity;
	t->nslots = capacity + capacity / 16 + 8;
	while (size < 2 * t->nslots)
		size <<= 1;
	t->mask = size - 1;
	t->slots_bytes = ((size_t)t->nslots * sizeof(struct dust_session) + 63) & ~(size_t)63;
	t->index = malloc((size_t)size * sizeof(uint32_t));
	t->freelist = malloc((size_t)t->nslots * sizeof(uint32_t));
	t->slots = aligned_alloc(64, t->slots_bytes);
	if (!t->index || !t->freelist || !t->slots)
		goto err_free;
	memset(t->slots, 0, t->slots_bytes);
	/* Keys live here: keep them out of swap where the limit allows. */
	(void)sodium_mlock(t->slots, t->slots_bytes);
	memset(t->index, 0xff, (size_t)size * sizeof(uint32_t));
	for (uint32_t i = 0; i < t->nslots; i++)
		t->freelist[i] = t->nslots - 1 - i;
	t->nfree = t->nslots;
	randombytes_buf(t->hash_key, sizeof(t->hash_key));
	return t;
err_free:
	free(t->index);
	free(t->freelist);
	free(t->slots);
	free(t);
err_nomem:
	dust_fail(ENOMEM, "out of memory for %u sessions", capacity);
	return NULL;
}

DUST_EXPORT void dust_session_table_free(struct dust_session_table *t)
{
	if (!t)
		return;
	sodium_munlock(t->slots, t->slots_bytes); /* also zeroes */
	free(t->slots);
	free(t->ackz);
	free(t->index);
	free(t->freelist);
	free(t);
}

DUST_EXPORT int dust_session_table_ackz_enable(struct dust_session_table *t)
{
	if (!t->ackz && !(t->ackz = calloc(t->nslots, sizeof(*t->ackz))))
		return -ENOMEM;
	return 0;
}

DUST_EXPORT struct dust_ackz *dust_session_table_ackz(struct dust_session_table *t,
                                                      const struct dust_session *s)
{
	return t->ackz ? &t->ackz[s - t->slots] : NULL;
}

DUST_EXPORT uint32_t dust_session_table_capacity(const struct dust_session_table *t)
{
	return t->capacity;
}

DUST_EXPORT uint32_t dust_session_table_slots(const struct dust_session_table *t)
{
	return t->nslots;
}

DUST_EXPORT uint32_t dust_session_table_live(const struct dust_session_table *t)
{
	return t->live;
}

DUST_EXPORT size_t dust_session_table_bytes(const struct dust_session_table *t)
{
	return sizeof(*t) + t->slots_bytes + ((size_t)t->mask + 1) * sizeof(uint32_t) +
	       (size_t)t->nslots * sizeof(uint32_t);
}

static uint32_t find_pos(const struct dust_session_table *t, const struct dust_endpoint *ep)
{
	uint32_t h = ep_hash(t, ep) & t->mask;

	for (; t->index[h] != NO_SLOT; h = (h + 1) & t->mask)
		if (ep_equal(&t->slots[t->index[h]].peer, ep))
			return h;
	return NO_SLOT;
}

DUST_EXPORT struct dust_session *dust_session_table_lookup(struct dust_session_table *t,
                                                           const struct dust_endpoint *ep)
{
	uint32_t pos = find_pos(t, ep);

	return pos == NO_SLOT ? NULL : &t->slots[t->index[pos]];
}

DUST_EXPORT unsigned dust_session_table_lookup_bulk(struct dust_session_table *t,
                                                    const struct dust_endpoint *const *eps,
                                                    unsigned n, struct dust_session **out)
{
	enum { BATCH = 32 };
	uint32_t h[BATCH];
	unsigned hits = 0;

	for (unsigned base = 0; base < n; base += BATCH) {
		unsigned m = n - base < BATCH ? n - base : BATCH;

		/* Hash the whole batch first so index loads overlap. */
		for (unsigned i = 0; i < m; i++) {
			h[i] = ep_hash(t, eps[base + i]) & t->mask;
			__builtin_prefetch(&t->index[h[i]]);
		}
		for (unsigned i = 0; i < m; i++) {
			uint32_t p = h[i];

			out[base + i] = NULL;
			for (; t->index[p] != NO_SLOT; p = (p + 1) & t->mask) {
				struct dust_session *s = &t->slots[t->index[p]];

				if (ep_equal(&s->peer, eps[base + i])) {
					out[base + i] = s;
					hits++;
					break;
				}
			}
		}
	}
	return hits;
}

DUST_EXPORT struct dust_session *dust_session_table_reserve(struct dust_session_table *t)
{
	uint32_t slot;

	if (t->nfree == 0 || t->live >= t->capacity)
		return NULL;
	slot = t->freelist[t->nfree - 1];
	if (t->ackz)
		dust_ackz_init(&t->ackz[slot]); /* nothing of the slot's last session */
	return &t->slots[slot];
}

DUST_EXPORT int dust_session_table_insert(struct dust_session_table *t, struct dust_session *s)
{
	uint32_t slot = (uint32_t)(s - t->slots), h;

	if (t->nfree == 0 || t->freelist[t->nfree - 1] != slot)
		return dust_fail(EINVAL, "insert of a slot that was not reserved");
	if (find_pos(t, &s->peer) != NO_SLOT)
		return dust_fail(EEXIST, "a session for this endpoint exists");
	h = ep_hash(t, &s->peer) & t->mask;
	while (t->index[h] != NO_SLOT)
		h = (h + 1) & t->mask;
	t->index[h] = slot;
	t->nfree--;
	t->live++;
	s->state = DUST_SESSION_LIVE;
	return 0;
}

/* Backward-shift deletion: keep every probe chain unbroken without tombstones. */
static void index_delete(struct dust_session_table *t, uint32_t pos)
{
	uint32_t hole = pos, j = pos;

	for (;;) {
		uint32_t home;

		j = (j + 1) & t->mask;
		if (t->index[j] == NO_SLOT)
			break;
		home = ep_hash(t, &t->slots[t->index[j]].peer) & t->mask;
		/* Move j into the hole unless its home lies cyclically in (hole, j]. */
		if (((j - home) & t->mask) >= ((j - hole) & t->mask)) {
			t->index[hole] = t->index[j];
			hole = j;
		}
	}
	t->index[hole] = NO_SLOT;
}

DUST_EXPORT void dust_session_table_remove(struct dust_session_table *t, struct dust_session *s)
{
	uint32_t pos;

	if (s->state != DUST_SESSION_LIVE)
		return;
	pos = find_pos(t, &s->peer);
	if (pos != NO_SLOT && t->index[pos] == (uint32_t)(s - t->slots))
		index_delete(t, pos);
	/* encoders on other lcores stop sealing on s once they see this */
	__atomic_store_n(&s->state, DUST_SESSION_RETIRING, __ATOMIC_RELEASE);
	t->live--;
}

DUST_EXPORT void dust_session_table_release(struct dust_session_table *t, struct dust_session *s)
{
	uint32_t slot = (uint32_t)(s - t->slots);

	if (s->state == DUST_SESSION_LIVE)
		dust_session_table_remove(t, s);
	if (s->state != DUST_SESSION_RETIRING)
		return; /* a reserved slot never inserted is still on the free list */
	dust_session_wipe(s);
	t->freelist[t->nfree++] = slot;
}

DUST_EXPORT unsigned dust_session_table_expire(struct dust_session_table *t, uint32_t now_s,
                                               uint32_t idle_s,
                                               void (*cb)(struct dust_session *s, void *arg),
                                               void *arg)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < t->nslots; i++) {
		struct dust_session *s = &t->slots[i];

		if (s->state != DUST_SESSION_LIVE || (uint32_t)(now_s - s->last_rx_s) <= idle_s)
			continue;
		dust_session_table_remove(t, s);
		n++;
		if (cb)
			cb(s, arg);
		else
			dust_session_table_release(t, s);
	}
	return n;
}

/* One pass over the slots: called only when the table is full. */
DUST_EXPORT struct dust_session *dust_session_table_idlest(struct dust_session_table *t,
                                                           uint32_t now_s)
{
	struct dust_session *best = NULL;
	uint32_t best_idle = 0;

	for (uint32_t i = 0; i < t->nslots; i++) {
		struct dust_session *s = &t->slots[i];
		uint32_t idle = now_s - s->last_rx_s;

		if (s->state != DUST_SESSION_LIVE || idle > INT32_MAX)
			continue; /* a clock step back: last_rx_s in the future is not idle */
		if (!best || idle > best_idle) {
			best = s;
			best_idle = idle;
		}
	}
	return best;
}
