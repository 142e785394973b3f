/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Not built: tools/check-shared must find each of these plain writes of
 * fields other threads read (test/unit/meson.build runs it here and wants
 * exactly 8 of them).
 */
static void planted(struct dgw_worker *w, struct dgw *gw, unsigned n)
{
	w->st.ctr[DGW_CTR_NET_RX]++;
	w->st.drop[DGW_DROP_TX_FULL] += n;
	gw->w[0]->st.ctr[DGW_CTR_COVER_LEARN_OK]++;
	/* a write over two lines */
	/* clang-format off */
	w->st.ctr[n == 1 ? DGW_CTR_SESS_EVICTED
	                 : DGW_CTR_SESS_REVOKED]++;
	/* clang-format on */
	w->st.sessions = n;
	w->now_ms = 1;
	++w->pub_sent;
	gw->store_down = true;
	/* and what is not a write: */
	if (w->st.ctr[DGW_CTR_NET_RX] == n || w->now_ms != 0 || w->st.sessions <= n)
		dgw_ctr_inc(w, DGW_CTR_NET_RX);
}
