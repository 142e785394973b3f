# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# One page load of the generated site (mksite.py) by a fresh headless
# Chromium, for capture.sh and tunnel-capture.sh. Needs W (work folder),
# HOST (the site's name) and PIN (caddy_start's SPKI pin); loads_done needs
# the capture's pid in DUMP, its file OUT, LOADS and the loads completed, ok.

# load_page NS ADDR PAGE [CHROMIUM FLAGS...]: load https://HOST/pPAGE.html in NS,
# HOST resolved to ADDR, with a profile of its own (a fresh connection, a
# fresh source port); true when the page arrived whole, else its log's tail.
load_page() {
	local ns=$1 addr=$2 page=$3
	shift 3
	rm -rf "$W/chromium"
	if n "$ns" timeout 60 chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$W/chromium" "$@" --host-resolver-rules="MAP $HOST $addr" \
		--ignore-certificate-errors-spki-list="$PIN" \
		--dump-dom "https://$HOST/p$page.html" >"$W/dom.html" 2>"$W/chromium.log" &&
		grep -q "page $page of" "$W/dom.html"; then
		return 0
	fi
	tail -5 "$W/chromium.log"
	return 1
}

# loads_done WHAT: after the loads (their progress line ended), the capture's
# last frames and its stop; "WHAT: $ok of $LOADS page loads completed", and
# false unless all were
loads_done() {
	echo >&2
	sleep 1 # the capture's last frames
	stop_pid "$DUMP"
	DUMP=
	echo "$1: $ok of $LOADS page loads completed, written to $OUT"
	[[ $ok -eq $LOADS ]]
}
