#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The invitation store on etcd at scale (issue 19's benchmarks), beside the
# file store in one run: a 3-member etcd cluster on loopback
# (test/etcd/etcd-cluster.sh), stopped and removed on exit.
#  - fill: N invitations into etcd, `dust-invite create --store-only` (32
#    creates to a txn), CREATORS of them in parallel, each on its own part of
#    10.64.0.0/10 (creators on etcd do not see each other's addresses), timed
#    from the first start to the last exit and counted in etcd afterwards;
#    the file store of N made beside it as bench/invites.sh makes it.
#  - dustgw's start time and memory on each store, as bench/invites.sh: from
#    exec until it logs its worker running (EAL, key, the store loaded and its
#    tag index, ports), net_null ports with no RX; VmRSS then (VmHWM: peak).
#  - intros with RATE_N invitations on each store: gw-live rate mode (one
#    worker, 1500 clients; 500 first uses one at a time: p50/p99 latency,
#    queued to answered; 1000 at once: first uses/s; then the same clients
#    returning from a new port, the same two ways). The rate run binds the
#    store's first 1500 invitations, so it runs last on each store.
#  - the cluster's own floor beside the etcd rate: bench/etcd-floor.py sends
#    the first-use txns dustgw sends, with no gateway, on the same cluster
#    (plain HTTP only: under ETCD_TLS=1 it is skipped).
# Not in CI.
#
# usage: bench/etcd-scale.sh BUILD_DIR [WORKDIR]
#   env COUNTS   store sizes (default "100000 1000000")
#       RATE_N   store size for the intro rate (default 100000, one of COUNTS; 0: skip)
#       CREATORS dust-invite creates in parallel for an etcd fill (default 4, at most 64)
#       ETCD_TLS=1 the cluster over TLS with client certificates and etcd auth
#                (etcd-cluster.sh; default 0: plain HTTP on loopback)
# Root (DPDK --no-huge), /usr/bin/etcd; everything on 127.0.0.1. WORKDIR (default
# BUILD_DIR/bench-etcd-scale) is removed first; the etcd members' data is removed on exit.
set -eu
B=$(realpath "$1")
W=$(realpath -m "${2:-$B/bench-etcd-scale}")
COUNTS=${COUNTS:-100000 1000000}
RATE_N=${RATE_N:-100000}
CREATORS=${CREATORS:-4}
INVITE=$B/tools/dust-invite/dust-invite
DUSTGW=$B/app/dustgw/dustgw
HERE=$(dirname "$(realpath "$0")")
. "$HERE/../test/e2e/harness.sh" # fail, gw_start_null, ms_since, big_store
CLUSTER=$HERE/../test/etcd/etcd-cluster.sh
ED=$W/etcd
[[ -x /usr/bin/etcd ]] || { echo "etcd-scale: no /usr/bin/etcd (etcd-server)" >&2; exit 1; }
((CREATORS >= 1 && CREATORS <= 64)) || { echo "etcd-scale: CREATORS 1..64" >&2; exit 1; }
GWPID=
cleanup() {
	[[ -z $GWPID ]] || kill -TERM "$GWPID" 2>/dev/null || true
	[[ -z $GWPID ]] || wait "$GWPID" 2>/dev/null || true
	[[ ! -f $ED/base ]] || "$CLUSTER" "$ED" stop || true
	rm -rf "$ED" "/var/run/dpdk/dgwetcd-$$"
}
trap cleanup EXIT
rm -rf "$W"
mkdir -p "$W"
"$INVITE" keygen --out "$W/gw.key" >/dev/null

load() { echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"; }

echo "== a 3-member etcd cluster on loopback (ETCD_TLS=${ETCD_TLS:-0}); $(load)"
ETCD_TLS=${ETCD_TLS:-0} "$CLUSTER" "$ED" start
url() { "$CLUSTER" "$ED" url "$1"; } # url PREFIX: the store's URL

etcd_count() { # etcd_count PREFIX: keys PREFIX/i/* in etcd (count only)
	local k e
	k=$(printf '%s/i/' "$1" | base64 -w0)
	e=$(printf '%s/i0' "$1" | base64 -w0)
	"$CLUSTER" "$ED" post /v3/kv/range "{\"key\":\"$k\",\"range_end\":\"$e\",\"count_only\":true}" |
		/usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin).get("count", 0))'
}

etcd_members() { # the members' RSS and data directories' size
	local m out=""
	for m in a b c; do
		out="$out $m: $(awk '/^VmRSS/ {printf "%d MiB", $2 / 1024}' "/proc/$(cat "$ED/$m.pid")/status")"
		out="$out $(du -sm "$ED/$m.data" | cut -f1) MiB on disk;"
	done
	echo "etcd members:$out"
}

# fill_etcd N: prefix sN in etcd, N invitations from CREATORS creates in parallel
fill_etcd() {
	local n=$1 u bits=0 step i per t0 pids=() rc=0 got
	u=$(url "s$n")
	while (((1 << bits) < CREATORS)); do bits=$((bits + 1)); done
	step=$((64 >> bits))
	t0=$(date +%s%N)
	for ((i = 0; i < CREATORS; i++)); do
		per=$((n / CREATORS + (i < n % CREATORS ? 1 : 0)))
		"$INVITE" create --store "$u" --key "$W/gw.key" --server 10.0.0.1 --port 4433 \
			--tunnel-net "10.$((64 + i * step)).0.0/$((10 + bits))" --count "$per" \
			--store-only >"$W/fill-$n-$i.log" 2>&1 &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || { rc=1; cat "$W/fill-$n-$i.log"; }
	done
	((rc == 0)) || { echo "etcd-scale: a create into etcd failed" >&2; exit 1; }
	local ms
	ms=$(ms_since "$t0")
	got=$(etcd_count "s$n")
	echo "etcd: $CREATORS x dust-invite create --store-only, $n in all: $ms ms" \
		"($((n * 1000 / (ms > 0 ? ms : 1))) invitations/s); $got invitations in etcd; $(load)"
	[[ $got == "$n" ]] || { echo "etcd-scale: $got invitations in etcd, not $n" >&2; exit 1; }
	etcd_members
}

make_file() { # make_file N: file store $W/sN, N invitations (as bench/invites.sh)
	big_store "$INVITE" "$W/gw.key" "$W/s$1" "$1"
	echo "file: $BIG_STORE; $(load)"
}

start_rss() { # start_rss NAME STORE: dustgw on STORE, its start time and memory
	local log=$W/dustgw-$1.log
	printf '[gateway]\nipv4 = 10.0.0.1\nkey_file = %s\nstore = %s\n' "$W/gw.key" "$2" \
		>"$W/gw-$1.conf"
	gw_start_null "$DUSTGW" "$W/gw-$1.conf" "$log" "dgwetcd-$$" 300
	kill -TERM "$GWPID"
	wait "$GWPID" || true
	GWPID=
	# the count: its line may come after the worker's
	echo "dustgw on $1: $GWUP($(grep -o '^dustgw: [0-9]* invitations' "$log" | head -1 |
		cut -d' ' -f2-)); $(load)"
}

# etcd_cpu: CPU time of the three members so far, in ms (utime + stime)
etcd_cpu() {
	local m ms=0 t
	for m in a b c; do
		t=$(awk '{print $14 + $15}' "/proc/$(cat "$ED/$m.pid")/stat")
		ms=$((ms + t * 1000 / $(getconf CLK_TCK)))
	done
	echo $ms
}

# cpu_note WHAT E0 [SELF_MS]: the CPU the members spent since E0 (and what
# the measured process spent): on a machine of few cores these decide the rate
cpu_note() {
	echo "CPU during $1: etcd members $(($(etcd_cpu) - $2)) ms${3:+, $3}; $(nproc) CPUs"
}

rate() { # rate NAME STORE: gw-live rate mode on STORE
	local e0 t0 u
	echo "== intro rate and latency, $1; $(load)"
	e0=$(etcd_cpu)
	t0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
	"$HERE/../test/e2e/gw/ringgw.sh" "$B/test/e2e/gw/gw-live" "$W/rate-$1" rate "$W/gw.key" \
		"$2" >"$W/rate-$1.log" 2>&1 || { cat "$W/rate-$1.log"; exit 1; }
	u=$((($(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat) - t0) * 1000 / $(getconf CLK_TCK)))
	grep -E "^gw-live|^  [a-z]" "$W/rate-$1.log"
	cpu_note "the rate run (both kinds)" "$e0" "gw-live (driver and gateway) $u ms"
	echo "after: $(load)"
}

for n in $COUNTS; do
	echo "== $n invitations: etcd and file store; $(load)"
	fill_etcd "$n"
	make_file "$n"
	start_rss "file-$n" "$W/s$n"
	start_rss "etcd-$n" "$(url "s$n")"
	if [[ $n == "$RATE_N" ]]; then
		rate "file-$n" "$W/s$n"
		echo "== the cluster alone, the same txns (bench/etcd-floor.py); $(load)"
		if [[ ${ETCD_TLS:-0} == 0 ]]; then
			e0=$(etcd_cpu)
			"$HERE/etcd-floor.py" "$(url "floor")" 500 20000 8 32
			cpu_note "the floor" "$e0"
		else
			echo "skipped: etcd-floor.py speaks plain HTTP only"
		fi
		rate "etcd-$n" "$(url "s$n")"
	fi
	rm -f "$W/s$n" "$W/s$n".*
done
