#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A measurement, not a test (not run by meson): what [runtime] poll costs
# and saves. dust-client in one namespace, dustgw on net_af_packet (veth) +
# net_tap in another; for each MODE the gateway's CPU time while idle (its
# /proc/PID/stat utime+stime over IDLE_S seconds, all threads, as a share
# of one core); ping through the tunnel to the TAP's kernel side, 1 s apart
# (each after a silence), 2 ms apart and back to back; and ARP requests to
# dustgw itself (answered by the worker: no client, no TAP), timed from
# send to the kernel's receive timestamp (arp-rtt.py), at the same gaps.
#
# usage (root): poll-measure.sh DUSTGW DUST_CLIENT DUST_INVITE WORKDIR MODE...
#   MODE: busy | adaptive | default (no poll key in the config)
set -e
set -o pipefail
. "$(dirname "$0")/common.sh"

abspath DUSTGW "$1" CLIENT "$2" INVITE "$3"
W=$4
shift 4
PFX=dp$$
GW=$PFX-gw
C=$PFX-c
IDLE_S=${IDLE_S:-10}
HERE=$(dirname "$(realpath "$0")")
trap common_cleanup EXIT
need_root_tools ping iperf3

fresh_work "poll measure password" "$W/inv"
"$INVITE" keygen --out "$W/gw.key" >/dev/null
"$INVITE" create --store "$W/store" --key "$W/gw.key" --server 192.168.78.1 --port 4433 \
	--tunnel-net 10.9.0.0/24 --count 1 --password-file "$W/pw" --out-dir "$W/inv" 2>/dev/null
ns_add $GW
ns_add $C
veth $C $PFX-c 192.168.78.10/24 $GW $PFX-g ""
n $GW ip rule add iif $PFX-g blackhole

rtts() { # ping's per-reply times -> min / median / 90th percentile / max
	/usr/bin/python3 -c '
import re, sys
t = sorted(float(m) for m in re.findall(r"time=([0-9.]+) ms", sys.stdin.read()))
q = lambda f: t[min(len(t) - 1, int(f * len(t)))]
print("%d replies, ms min %.3f median %.3f p90 %.3f max %.3f" % (len(t), t[0], q(0.5), q(0.9), t[-1]))'
}

ticks() { # ticks /proc/PID[/task/TID]: utime + stime in clock ticks
	awk '{ print $14 + $15 }' "$1/stat"
}
pct() { # ticks over IDLE_S as a percentage of one core
	awk -v d="$1" -v hz="$(getconf CLK_TCK)" -v s="$IDLE_S" 'BEGIN { printf "%.1f", 100 * d / hz / s }'
}

measure() { # measure MODE
	local mode=$1 log=$W/dustgw-$1.log gwpid cpid t0 t1 w0 w1 wt
	{
		gw_conf_head 192.168.78.1 4433
		echo "[runtime]"
		[[ $mode == default ]] || echo "poll = $mode"
	} >"$W/gw.conf"
	gw_bg gwpid $GW "$log" "$PFX-$mode" 512 --config "$W/gw.conf"
	wait_for 30 n $GW ip link show $PFX-tap || { cat "$log"; fail "no TAP"; }
	n $GW ip addr replace 10.9.0.1/24 dev $PFX-tap
	n $GW ip link set $PFX-tap up
	rm -f "$W/client.key"
	bg cpid $C "$W/client-$mode.log" "$CLIENT" --invite "$W/inv/invite-1.txt" \
		--password-file "$W/pw" --key "$W/client.key" --keepalive 60 --tries 10
	wait_for 20 grep -q "connected to" "$W/client-$mode.log" ||
		{ cat "$W/client-$mode.log" "$log"; fail "client did not connect"; }
	n $C ping -c 3 -i 0.2 -W 2 10.9.0.1 >/dev/null
	sleep 2
	wt=$(grep -l "^rte-worker" /proc/"$gwpid"/task/*/comm | head -1)
	wt=${wt%/comm}
	t0=$(ticks "/proc/$gwpid")
	w0=$(ticks "$wt")
	sleep "$IDLE_S"
	t1=$(ticks "/proc/$gwpid")
	w1=$(ticks "$wt")
	echo "$mode: idle CPU over ${IDLE_S} s, % of one core: process $(pct $((t1 - t0))), worker thread $(pct $((w1 - w0)))"
	for args in "-c 10 -i 1" "-c 200 -i 0.002" "-c 1000 -i 0"; do
		# shellcheck disable=SC2086
		echo "$mode: ping $args through the tunnel: $(n $C ping $args -W 2 10.9.0.1 | rtts)"
	done
	for gap in 1 0.002 0; do
		echo "$mode: ARP to dustgw itself, probes $gap s apart: $(n $C /usr/bin/python3 "$HERE/arp-rtt.py" \
			$PFX-c 192.168.78.10 192.168.78.1 "$gap" "$([[ $gap == 1 ]] && echo 10 || echo 300)")"
	done
	local ipid
	bg ipid $GW "$W/iperf-s.log" iperf3 -s -1 -B 10.9.0.1
	wait_for 10 n $GW ss -ltnH "sport = :5201"
	echo "$mode: iperf3 TCP 3 s through the tunnel: $(n $C iperf3 -c 10.9.0.1 -t 3 -J |
		/usr/bin/python3 -c 'import json,sys; e=json.load(sys.stdin)["end"]; print("%.0f Mbit/s" % (e["sum_received"]["bits_per_second"] / 1e6))')"
	wait_exit "$ipid" 10 || true
	kill -TERM "$cpid" "$gwpid"
	wait_exit "$gwpid" 20 || fail "dustgw did not stop"
	wait_exit "$cpid" 10 || true
	n $GW ip link del $PFX-tap 2>/dev/null || true
	# a new gateway run: the binding survives, so the same client key must come back
	"$INVITE" create --store "$W/store" --key "$W/gw.key" --server 192.168.78.1 --port 4433 \
		--tunnel-net 10.9.0.0/24 --count 1 --password-file "$W/pw" --out-dir "$W/inv-$RUN" \
		2>/dev/null
	cp "$W/inv-$RUN/invite-1.txt" "$W/inv/invite-1.txt"
	RUN=$((RUN + 1))
}

RUN=1
for m in "$@"; do
	measure "$m"
done
