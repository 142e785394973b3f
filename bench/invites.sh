#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Large invitation stores (file store): how long dust-invite takes to make
# them, dustgw's start time and memory with each, and the intro rate and
# latency with the largest one that the rate check uses. Not in CI (the
# bench-smoke test runs it with small counts).
#
# usage: bench/invites.sh BUILD_DIR [WORKDIR]
#   env COUNTS   store sizes for the start time and memory (default "1 100000 1000000")
#       RATE_N   store size for the intro rate (default 100000; 0: skip)
# Start time: from exec until dustgw logs its worker running (EAL, key, the
# store and its tag index, ports), on net_null ports with no RX. Memory:
# VmRSS then (VmHWM: the peak); EAL's -m 512 without hugepages is part of it,
# so the line for 1 invitation is the baseline.
set -eu
B=$(realpath "$1")
W=$(realpath -m "${2:-$B/bench-invites}")
COUNTS=${COUNTS:-1 100000 1000000}
RATE_N=${RATE_N:-100000}
INVITE=$B/tools/dust-invite/dust-invite
DUSTGW=$B/app/dustgw/dustgw
HERE=$(dirname "$(realpath "$0")")
. "$HERE/../test/e2e/harness.sh" # fail, gw_start_null, big_store
GWPID=
cleanup() {
	[[ -z $GWPID ]] || kill -TERM "$GWPID" 2>/dev/null || true
	rm -rf "/var/run/dpdk/dgwinv-$$"
}
trap cleanup EXIT
rm -rf "$W"
mkdir -p "$W"
"$INVITE" keygen --out "$W/gw.key" >/dev/null

make_store() { # make_store N: $W/sN, N invitations (random profile, no texts)
	big_store "$INVITE" "$W/gw.key" "$W/s$1" "$1"
	echo "$BIG_STORE"
}

start_rss() { # start_rss N: dustgw on $W/sN, its start time and memory
	printf '[gateway]\nipv4 = 10.0.0.1\nkey_file = %s\nstore = %s\n' "$W/gw.key" "$W/s$1" \
		>"$W/gw-$1.conf"
	gw_start_null "$DUSTGW" "$W/gw-$1.conf" "$W/dustgw-$1.log" "dgwinv-$$" 120
	echo "dustgw with $1 invitations: $GWUP"
	kill -TERM "$GWPID"
	wait "$GWPID" || true
	GWPID=
}

echo "== stores, dustgw start time and memory (file store)"
for n in $COUNTS; do
	make_store "$n"
	start_rss "$n"
	[[ $n == "$RATE_N" ]] || rm -f "$W/s$n" "$W/s$n.bind"
done
if [[ $RATE_N != 0 ]]; then
	echo "== intro rate and latency, $RATE_N invitations (file store)"
	[[ -f $W/s$RATE_N ]] || make_store "$RATE_N"
	"$HERE/../test/e2e/gw/ringgw.sh" "$B/test/e2e/gw/gw-live" "$W/rate" rate "$W/gw.key" \
		"$W/s$RATE_N" >"$W/rate.log" 2>&1 || { cat "$W/rate.log"; exit 1; }
	grep -E "^gw-live|^  [a-z]" "$W/rate.log"
fi
