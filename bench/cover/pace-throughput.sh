#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Throughput through a quic tunnel, paced (SPEC §12.4: [quic] pacing = cover
# in dustgw, --pacing cover in dust-client) against unpaced (off at both
# ends), side by side in one run: the runs alternate (cover, off, cover,
# off, ...) so that the machine's other load falls on both alike. Each run
# starts dustgw (net_af_packet on a veth, delivery on net_tap) and one
# dust-client, then iperf3 TCP up, TCP down (-R) and UDP down (-u -R).
#
#  ns $PFX-c: dust-client (TUN dust0), route 10.61.0.0/24 via dust0
#     $PFX-c 192.168.61.2 ====== $PFX-g (dustgw net_af_packet, 192.168.61.1:443 quic)
#  ns $PFX-gw: dustgw, TAP $PFX-tap 10.60.0.1/24, forwarding, $PFX-gf 10.61.0.1
#  ns $PFX-far: $PFX-f 10.61.0.2, iperf3 -s
#
# With VARY=ack-thin the pair is ACK thinning on and off at both ends
# (SPEC §9.2: dust-client --ack-thin, dustgw [sessions] ack_thin; pacing
# cover at both ends in both), and each run's client stats line (upstream
# datagrams, ACKs thinned) and the gateway's acks_thinned are printed.
#
# With VARY=ack-compress the pair is dust-client's --ack-compress on and off
# (compact packets, SPEC §6.5; pacing cover in both), and each run prints the
# client's stats line (acks_compact) and the gateway's quic_compact.
#
# With VARY=pmtu the pair is dustgw's [quic] pmtu = cover and off (path MTU
# discovery as quic-go's, SPEC §12.4: downstream datagrams up to 1439 once
# the probes pass; pacing cover in both), and each run prints the gateway's
# pmtu_probes and pmtu_raised.
#
# With VARY=flood the pair is a flood of non-Dust traffic at the gateway's
# quic port and none (issue 17's benchmark: established throughput while
# the exception path is flooded). Both runs have the cover on ([quic] cover
# = tap, nothing listening behind it: the kernel answers with ICMP, which
# the gateway sends out again). While each transfer runs, the client's
# namespace sends 1200-byte v1 Initials of random bytes (cover-probe.py
# flood, about 5000/s, over cover_prefix_rate = 200) from its own address,
# each from a new port (FLOOD_PORTS=fresh, the default: every one a new
# flow, tried as a Dust hello before it is handed over) or all from one
# (FLOOD_PORTS=one: after the first, the cover's flow table decides).
# Each run prints the worker lcore's CPU time over its transfers
# (schedstat) and the cover counters, and the summary adds Mbit/s per
# worker CPU-second: the flood sender, iperf3 and dust-client share this
# machine's CPUs with the gateway, so the raw ratio also counts what the
# flood costs them; the per-CPU-second ratio is the worker's own cost.
#
# With VARY=shape the pair is the whole quic shaping on and off (issue 22's
# benchmark: throughput and bytes of overhead, shaped vs unshaped). cover:
# every default (the cover's sizes, pacing, ACK-sized datagrams, path MTU
# discovery, the held answer); off: dustgw [quic] sizes = padding with
# [padding] max = 0 (no padding), pacing, acks, pmtu and answer_hold off,
# dust-client --sizes padding --pacing off --acks off (its own padding stays
# the default uniform 0..63 bytes: it has no option for none). Compact
# packets and ACK thinning are on in both (they compress, not shape).
#
# VARY=sizes and VARY=acks split that: the size model against no padding
# (sizes = padding, [padding] max = 0; dust-client --sizes padding), and the
# ACK-sized datagrams on and off at both ends (acks; --acks), the rest at
# its defaults in both.
#
# Every run also reads the client veth's byte counters before and after its
# three transfers: the summary gives the UDP payload bytes on the wire (both
# ways, 42 bytes of Ethernet, IP and UDP headers taken off each frame) per
# byte iperf3 delivered, each mode's, and their ratio.
#
# With BOUNDS=1 each run's wire (the client's veth, headers only) is captured
# and every datagram checked against the quic size bounds (SPEC §12.4: client
# at most 1250 bytes of UDP payload, server 1252 until the next probe of
# quic-go's path MTU search, then the probe's size): each run prints its count,
# its largest each way and how many went over; any over fails the script.
#
# usage: pace-throughput.sh BUILD_DIR [PAIRS] [SECONDS]   (root; default 2 pairs, 5 s)
#   UDP_RATE (default 400M) is iperf3's offered UDP rate downstream;
#   VARY=pacing (default), ack-thin, ack-compress, pmtu, shape, sizes, acks or flood
#   picks what each pair compares.
set -e
set -o pipefail

B=$(realpath "$1")
PAIRS=${2:-2}
SECS=${3:-5}
UDP_RATE=${UDP_RATE:-400M}
VARY=${VARY:-pacing}
case $VARY in
pacing) MODES=(cover off) ;;
ack-thin) MODES=(on off) ;;
ack-compress) MODES=(on off) ;;
pmtu) MODES=(cover off) ;;
shape | sizes | acks) MODES=(cover off) ;;
flood) MODES=(flood alone) ;;
*)
	echo "VARY=$VARY: want pacing, ack-thin, ack-compress, pmtu, shape, sizes, acks or flood" >&2
	exit 2
	;;
esac
DUSTGW=$B/app/dustgw/dustgw
CLIENT=$B/tools/dust-client/dust-client
INVITE=$B/tools/dust-invite/dust-invite
PFX=pc$$
PROBE=$(dirname "$(realpath "$0")")/../../test/e2e/netns/cover-probe.py
W=$(mktemp -d /tmp/dust-pace-tput.XXXXXX)
. "$(dirname "$(realpath "$0")")/../../test/e2e/netns/common.sh"
GWPID=
CL=
FL=
trap 'common_cleanup "$CL" "$FL"; rm -rf "$W"' EXIT

need_root_tools iperf3 /usr/bin/python3
echo "pace throughput" >"$W/pw"
chmod 600 "$W/pw"
"$INVITE" keygen --out "$W/gw.key" >/dev/null
invites 192.168.61.1 443 --profile quic --cover-sni www.example.com --tunnel-net 10.60.0.0/24 \
	--count 1 --out-dir "$W/inv"
ns_add $PFX-c
ns_add $PFX-gw
ns_add $PFX-far
veth $PFX-c $PFX-c 192.168.61.2/24 $PFX-gw $PFX-g ""
n $PFX-gw ip rule add iif $PFX-g blackhole
veth $PFX-gw $PFX-gf 10.61.0.1/24 $PFX-far $PFX-f 10.61.0.2/24
n $PFX-gw sysctl -qw net.ipv4.ip_forward=1
n $PFX-far ip route add 10.60.0.0/24 via 10.61.0.1
bg IPERF $PFX-far "$W/iperf-s.log" iperf3 -s -B 10.61.0.2
listening() { n $PFX-far ss -ltnH "sport = :5201" | grep -q .; }
wait_for 10 listening || fail "iperf3 server did not start"

# worker_ns PID: ns on a CPU of dustgw's worker lcore thread (schedstat)
worker_ns() {
	local t
	for t in /proc/"$1"/task/*; do
		if [[ $(cat "$t/comm" 2>/dev/null) == rte-worker-* ]]; then
			cut -d' ' -f1 "$t/schedstat"
			return
		fi
	done
	echo 0
}

# veth_bytes: the client veth's bytes and frames, received and sent ("rxb rxp txb txp")
veth_bytes() {
	n $PFX-c ip -s -j link show $PFX-c | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)[0]["stats64"]
print(s["rx"]["bytes"], s["rx"]["packets"], s["tx"]["bytes"], s["tx"]["packets"])'
}

# bounds_check TAG: the run's capture against the quic bounds (BOUNDS=1)
bounds_check() {
	/usr/bin/python3 - "$W/wire-$1.pcap" "$1" \
		"$(sed -n 's/ packets dropped by kernel//p' "$W/tcpdump-$1.log")" <<'PY'
import struct, sys
d, tag, lost = open(sys.argv[1], "rb").read(), sys.argv[2], sys.argv[3]
off, n, top, over = 24, 0, {True: 0, False: 0}, {True: 0, False: 0}
bound = {}  # per client port, the server's: 1252, raised by each path MTU probe (SPEC 12.4)
while off + 16 <= len(d):
    incl = struct.unpack("<I", d[off + 8:off + 12])[0]
    p = d[off + 16:off + 16 + incl]
    off += 16 + incl
    if len(p) < 42 or p[12:14] != b"\x08\x00" or p[23] != 17:
        continue
    ihl = (p[14] & 15) * 4
    dport, ulen = struct.unpack(">HH", p[14 + ihl + 2:14 + ihl + 6])
    up, size = dport == 443, ulen - 8
    n += 1
    top[up] = max(top[up], size)
    b = 1250 if up else bound.get(dport, 1252)
    if size > b and not up and size == (b + 1452) // 2 and 1452 - b >= 20:
        bound[dport] = size  # the next probe of quic-go's search
    elif size > b:
        over[up] += 1
        if over[up] <= 5:  # the first few, for the reader
            print("%s: datagram %d (%s), %d bytes over its bound %d" %
                  (tag, n, "client" if up else "server", size, b))
print("%s: wire %d datagrams (tcpdump lost %s): client largest %d, %d over 1250; "
      "server largest %d, %d over its bound (1252, raised by %d flows' probes)"
      % (tag, n, lost, top[True], over[True], top[False], over[False], len(bound)))
sys.exit(1 if over[True] or over[False] else 0)
PY
}

# one run: dustgw and the client with $VARY $1, then the three transfers
run() {
	local mode=$1 k=$2 tag=$1-$2 pace=cover
	[[ $VARY == pacing || $VARY == shape ]] && pace=$mode
	{
		gw_conf_head 192.168.61.1 4433 "quic_port = 443"
		printf 'queues = 1\nmbufs = 8191\ndelivery_framing = eth\nproxy_arp = yes\n\n'
		printf '[quic]\npacing = %s\n' "$pace"
		[[ $VARY == pmtu ]] && printf 'pmtu = %s\n' "$mode"
		if [[ $VARY == sizes && $mode == off ]]; then
			printf 'sizes = padding\n\n[padding]\nmode = uniform\nmin = 0\nmax = 0\n'
		fi
		[[ $VARY == acks ]] && printf 'acks = %s\n' "$mode"
		if [[ $VARY == shape && $mode == off ]]; then
			printf 'sizes = padding\nacks = off\npmtu = off\nanswer_hold = off\n'
			printf '\n[padding]\nmode = uniform\nmin = 0\nmax = 0\n'
		fi
		if [[ $VARY == ack-thin ]]; then
			printf '\n[sessions]\nack_thin = %s\n' "$([[ $mode == on ]] && echo yes || echo no)"
		fi
		if [[ $VARY == flood ]]; then
			printf 'cover = tap\ncover_iface = %s\ncover_prefix_rate = 200\n' "$PFX-cov"
			printf 'cover_learn_s = 0\n'
		fi
	} >"$W/gw-$tag.conf"
	gw_bg GWPID $PFX-gw "$W/gw-$tag.log" "$PFX-$tag" 512 --config "$W/gw-$tag.conf"
	wait_for 60 n $PFX-gw ip link show $PFX-tap || fail "dustgw did not create its TAP"
	n $PFX-gw ip addr replace 10.60.0.1/24 dev $PFX-tap
	n $PFX-gw ip link set $PFX-tap up
	if [[ $VARY == flood ]]; then
		cover_tap_up $PFX-gw $PFX-cov 192.168.61.1/24
	fi
	# the wire from the hello on: a server datagram's bound follows the flow's probes
	local DUMP=
	if [[ -n $BOUNDS ]]; then
		tcpdump_bg DUMP $PFX-c "$W/tcpdump-$tag.log" -i $PFX-c -n -s 64 -B 65536 -U -Z root \
			-w "$W/wire-$tag.pcap" udp port 443
	fi
	bg CL $PFX-c "$W/client-$tag.log" "$CLIENT" --invite "$(ls "$W"/inv/invite-*.txt)" \
		--password-file "$W/pw" --key "$W/c.key" --route 10.61.0.0/24 --pacing "$pace" \
		$([[ $VARY == ack-thin ]] && echo "--ack-thin $mode") \
		$([[ $VARY == ack-compress ]] && echo "--ack-compress $mode") \
		$([[ $VARY == shape && $mode == off ]] && echo "--sizes padding --acks off") \
		$([[ $VARY == sizes && $mode == off ]] && echo "--sizes padding") \
		$([[ $VARY == acks ]] && echo "--acks $mode") \
		--tries 30 --stats
	wait_for 40 grep -q "connected to" "$W/client-$tag.log" ||
		{ cat "$W/client-$tag.log"; fail "client did not connect ($tag)"; }
	n $PFX-c ping -c 3 -i 0.2 -W 2 10.61.0.2 >/dev/null || fail "no ping through the tunnel ($tag)"
	if [[ $mode == flood ]]; then
		bg FL $PFX-c "$W/flood-$tag.log" "$PROBE" flood 192.168.61.1 443 100000000 \
			"${FLOOD_PORTS:-fresh}"
	fi
	local cpu0
	cpu0=$(worker_ns "$GWPID")
	veth_bytes >"$W/wire0-$tag"
	n $PFX-c iperf3 -c 10.61.0.2 -t "$SECS" -J >"$W/tcp-up-$tag.json" || fail "iperf3 TCP up ($tag)"
	n $PFX-c iperf3 -c 10.61.0.2 -t "$SECS" -R -J >"$W/tcp-down-$tag.json" ||
		fail "iperf3 TCP down ($tag)"
	n $PFX-c iperf3 -c 10.61.0.2 -t "$SECS" -R -u -b "$UDP_RATE" -l 1100 -J \
		>"$W/udp-down-$tag.json" || fail "iperf3 UDP down ($tag)"
	echo $(($(worker_ns "$GWPID") - cpu0)) >"$W/cpu-$tag"
	veth_bytes >"$W/wire1-$tag"
	if [[ -n $DUMP ]]; then
		stop_pid "$DUMP"
		bounds_check "$tag"
	fi
	if [[ -n $FL ]]; then
		stop_pid "$FL"
		FL=
	fi
	stop_pid "$CL"
	CL=
	grep -o "tx_packets=[0-9]* \|acks_tx=[0-9]* \|acks_thinned=[0-9]* \|acks_compact=[0-9]* \|pace_full=[0-9]*" "$W/client-$tag.log" | tr -d '\n' |
		sed "s/^/$tag: client /" && echo
	gw_stop "$GWPID" "$W/gw-$tag.log"
	grep -o "quic_paced=[0-9]*" "$W/gw-$tag.log" | tail -1 | sed "s/^/$tag: /"
	grep -o "quic_pace_full *[0-9]*" "$W/gw-$tag.log" | tail -1 | sed "s/^/$tag: /" || true
	grep -o "acks_thinned=[0-9]*" "$W/gw-$tag.log" | tail -1 | sed "s/^/$tag: gateway /" || true
	grep -o "quic_compact=[0-9]*\|ackz_bad=[0-9]*" "$W/gw-$tag.log" | tail -2 | tr "\n" " " |
		sed "s/^/$tag: gateway /" && echo
	grep -o "pmtu_probes=[0-9]*\|pmtu_raised=[0-9]*" "$W/gw-$tag.log" | tail -2 | tr "\n" " " |
		sed "s/^/$tag: gateway /" && echo
	grep -o "quic_acks=[0-9]*\|quic_acks_tx=[0-9]*" "$W/gw-$tag.log" | tail -2 | tr "\n" " " |
		sed "s/^/$tag: gateway /" && echo
	if [[ $VARY == flood ]]; then
		echo "$tag: worker on a CPU $(($(cat "$W/cpu-$tag") / 1000000)) ms over the transfers;" \
			"$(grep -o "cover_in=[0-9]*\|cover_out=[0-9]*" "$W/gw-$tag.log" | tail -2 | tr '\n' ' ')" \
			"$(awk '$1 ~ /^cover_(prefix_)?rate$/ {printf "drop.%s=%s ", $1, $2}' "$W/gw-$tag.log")"
	fi
}

for k in $(seq "$PAIRS"); do
	run "${MODES[0]}" "$k"
	run "${MODES[1]}" "$k"
done
/usr/bin/python3 - "$W" "$PAIRS" "$SECS" "$UDP_RATE" "$VARY" "${MODES[@]}" <<'EOF'
import json, os, sys
w, pairs, secs, rate = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
vary, a, b = sys.argv[5], sys.argv[6], sys.argv[7]
def mbps(path, udp=False):
    e = json.load(open(path))["end"]
    if udp:
        s = e["sum"]
        return s["bits_per_second"] / 1e6, s["lost_percent"]
    return e["sum_received"]["bits_per_second"] / 1e6, None
print("iperf3 -t %s through one quic tunnel, %d runs each, alternating; Mbit/s received" %
      (secs, pairs))
print("%-26s %-28s %-28s %s" % ("transfer", "%s %s" % (vary, a), "%s %s" % (vary, b),
                                 "ratio of means"))
for what, udp in (("tcp-up", False), ("tcp-down", False), ("udp-down", True)):
    row = {}
    for mode in (a, b):
        vals = [mbps("%s/%s-%s-%d.json" % (w, what, mode, k), udp) for k in range(1, pairs + 1)]
        row[mode] = vals
    def fmt(vals):
        s = " ".join("%.0f" % v for v, _ in vals)
        if udp:
            s += " (lost " + " ".join("%.1f%%" % l for _, l in vals) + ")"
        return s
    mean = {m: sum(v for v, _ in row[m]) / pairs for m in row}
    label = what + (" -b %s" % rate if udp else "")
    print("%-26s %-28s %-28s %.2f" % (label, fmt(row[a]), fmt(row[b]), mean[a] / mean[b]))
if os.path.exists("%s/cpu-%s-1" % (w, a)):
    # megabits moved by the three transfers per second the worker was on a CPU
    per = {}
    for mode in (a, b):
        mbit = cpu = 0.0
        for k in range(1, pairs + 1):
            for what, udp in (("tcp-up", False), ("tcp-down", False), ("udp-down", True)):
                v, lost = mbps("%s/%s-%s-%d.json" % (w, what, mode, k), udp)
                mbit += v * (1 - (lost or 0) / 100) * float(secs)  # UDP: what arrived
            cpu += int(open("%s/cpu-%s-%d" % (w, mode, k)).read()) / 1e9
        per[mode] = (mbit / cpu if cpu else 0.0, cpu)
    print("%-26s %-28s %-28s %.2f" % ("Mbit per worker CPU-s",
          "%.0f (%.1f s on a CPU)" % per[a], "%.0f (%.1f s on a CPU)" % per[b],
          per[a][0] / per[b][0] if per[b][0] else 0.0))
# UDP payload bytes on the client's veth over the three transfers, both ways,
# per byte iperf3 delivered (UDP: what arrived)
wire = {}
for mode in (a, b):
    sent = moved = 0.0
    for k in range(1, pairs + 1):
        x0 = [int(v) for v in open("%s/wire0-%s-%d" % (w, mode, k)).read().split()]
        x1 = [int(v) for v in open("%s/wire1-%s-%d" % (w, mode, k)).read().split()]
        d = [q - p for p, q in zip(x0, x1)]
        sent += d[0] - 42 * d[1] + d[2] - 42 * d[3]
        for what, udp in (("tcp-up", False), ("tcp-down", False), ("udp-down", True)):
            v, lost = mbps("%s/%s-%s-%d.json" % (w, what, mode, k), udp)
            moved += v * (1 - (lost or 0) / 100) * float(secs) * 1e6 / 8
    wire[mode] = sent / moved if moved else 0.0
print("%-26s %-28s %-28s %.2f" % ("wire bytes per delivered", "%.3f" % wire[a], "%.3f" % wire[b],
                                  wire[a] / wire[b] if wire[b] else 0.0))
EOF
