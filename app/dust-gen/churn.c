/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dust-gen's churn: while traffic runs, clients join late, go idle until
 * the gateway expires their session, move to a new source port (roam) and
 * re-introduce on a live session. Each event is counted so that a soak can
 * match it against the gateway's own counters.
 */
#include <rte_cycles.h>

#include "dust-gen.h"

enum { K_JOIN, K_IDLE, K_ROAM, K_REINTRO, K_KINDS };

void dg_churn_start(struct dg *g)
{
	g->churn_t0 = rte_rdtsc();
	g->churn_done = 0;
	if (!g->join_next)
		g->join_next = g->o.start_clients ? g->o.start_clients : g->n;
}

/* The next client in DG_UP from *cur on (a round-robin cursor), or NULL. */
struct dg_client *dg_next_up(struct dg *g, unsigned *cur)
{
	for (unsigned k = 0; k < g->n; k++) {
		struct dg_client *c = &g->c[*cur];

		*cur = *cur + 1 < g->n ? *cur + 1 : 0;
		if (c->state == DG_UP)
			return c;
	}
	return NULL;
}

/* A new source port for c (its address names the client, so any port is its own). */
static void roam(struct dg_client *c)
{
	c->ep.port = (uint16_t)(c->ep.port >= 65000 ? 1024 : c->ep.port + 1);
}

/*
 * One event of the given kind; false if no client fits it now. An idle
 * silence is only begun if it ends 5 s before the trial does (its client is
 * back in time), so that every expiry counted is one the gateway made.
 */
static bool event(struct dg *g, unsigned kind, uint64_t now, uint64_t end)
{
	struct dg_client *c;
	uint16_t port;

	if (kind == K_JOIN) {
		if (g->join_next >= g->n || dg_intro_send(g, &g->c[g->join_next]) != 0)
			return false;
		g->join_next++;
		g->ch.joins++;
		return true;
	}
	if (kind == K_IDLE &&
	    (!g->o.idle_s || now + (g->o.idle_s + 5) * g->hz >= end || g->nup < 2))
		return false;
	if (!(c = dg_next_up(g, &g->churn_cur)))
		return false;
	if (kind == K_IDLE) {
		c->state = DG_IDLE;
		c->until = now + g->o.idle_s * g->hz;
		g->nup--;
		return true;
	}
	port = c->ep.port;
	if (kind == K_ROAM)
		roam(c);
	if (dg_intro_send(g, c) != 0) {
		c->ep.port = port; /* not sent: still where the gateway knows it */
		return false;
	}
	g->ch.roams += kind == K_ROAM;
	g->ch.reintros += kind == K_REINTRO;
	return true;
}

/* Intros not answered in 3 s are sent again; idle clients whose silence is over come back. */
static void timers(struct dg *g, uint64_t now, uint64_t end)
{
	for (unsigned i = 0; i < g->n; i++) {
		struct dg_client *c = &g->c[i];

		if ((c->state != DG_INTRO && c->state != DG_IDLE) || now < c->until)
			continue;
		if (c->state == DG_IDLE) {
			if (dg_intro_send(g, c) == 0)
				g->ch.expiries++;
		} else if (now + 3 * g->hz < end && dg_intro_send(g, c) == 0) {
			g->ch.retries++;
		}
	}
}

/*
 * Called from the traffic loop with no probe waiting for the port (a probe
 * sealed with a session the event retires would be lost). Events are
 * spread at --churn per second and take turns: join, idle, roam, re-intro;
 * a kind with no fitting client passes its turn on.
 */
void dg_churn_tick(struct dg *g, uint64_t now, uint64_t end)
{
	uint64_t due;

	if (now >= g->churn_scan) {
		timers(g, now, end);
		g->churn_scan = now + g->hz / 100;
	}
	/* none in the last 3 s: each intro's keepalive is back before the drain ends */
	if (g->o.churn <= 0 || now + 3 * g->hz >= end)
		return;
	due = (uint64_t)((double)(now - g->churn_t0) / (double)g->hz * g->o.churn);
	while (g->churn_done < due) {
		unsigned k;

		for (k = 0; k < K_KINDS; k++)
			if (event(g, (g->churn_kind + k) % K_KINDS, now, end))
				break;
		g->churn_kind = (g->churn_kind + k + 1) % K_KINDS;
		g->churn_done++;
	}
}
