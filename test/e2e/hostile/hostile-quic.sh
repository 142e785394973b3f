#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Probing the quic profile (SPEC §12.5): dustgw on net_af_packet in a
# namespace with quic_port 443, a prober in another, the wire captured on
# the prober's side. The prober sends a real Chromium's QUIC Initials
# (test/data, captured on Debian 12), random datagrams of every length with
# and without QUIC's header forms, Initials of a real invitation with a
# flipped bit or cut short, intact Initials of an invitation the gateway
# never issued, and, holding a session of its own, that session's packets
# truncated, bit-flipped and replayed. Not one byte may come back except the
# session's own first flight and one answer to its one intact keepalive
# (the positive control), each drop counted by the gateway.
#
# usage: hostile-quic.sh DUSTGW DUST_INVITE DUST_QUIC_PROBE CHROMIUM_PCAP WORKDIR ARTIFACTS
set -e
set -o pipefail
. "$(dirname "$0")/../netns/common.sh"

abspath DUSTGW "$1" INVITE "$2" PROBE "$3" CHROME "$4"
W=$5
ART=$6
HERE=$(dirname "$(realpath "$0")")
TEL="/usr/bin/python3 $HERE/tel.py"
PFX=dq$$
GW=$PFX-gw
PR=$PFX-p
GWADDR=192.168.78.1
PADDR=192.168.78.2

RUNDIR=/var/run/dpdk/$PFX
CAPPID=
trap 'common_cleanup "$CAPPID"; rm -rf "$RUNDIR"' EXIT

need_root_tools tcpdump /usr/bin/python3
for b in "$DUSTGW" "$INVITE" "$PROBE"; do
	[[ -x $b ]] || fail "missing binary $b"
done
[[ -r $CHROME ]] || fail "missing $CHROME"
fresh_work "correct horse battery staple" "$W/inv" "$W/other" "$ART"

step "keys, a quic invitation in the store, and a stranger's invitation"
"$INVITE" keygen --out "$W/gw.key" >/dev/null
invites $GWADDR 443 --tunnel-net 10.9.0.0/24 --out-dir "$W/inv" \
	--profile quic --cover-sni www.example.com
"$INVITE" create --store "$W/other.store" --key "$W/gw.key" --server $GWADDR --port 443 \
	--tunnel-net 10.9.0.0/24 --password-file "$W/pw" --out-dir "$W/other" \
	--profile quic --cover-sni www.example.com >/dev/null

step "namespaces: gateway and prober on a veth pair"
ns_add $GW
ns_add $PR
veth $GW $PFX-g "" $PR $PFX-p $PADDR/24
noipv6 $GW $PFX-g
noipv6 $PR $PFX-p
n $GW ip rule add iif $PFX-g blackhole # only dustgw may answer on the wire

{
	gw_conf_head $GWADDR 4433 "quic_port = 443"
	echo "queues = 1"
} >"$W/dustgw.conf"

tcpdump_bg CAPPID $PR "$W/tcpdump.log" -i $PFX-p -U --immediate-mode -n -s 2048 \
	-w "$ART/hostile-quic.pcap" "udp and src host $GWADDR"

step "start dustgw (quic on 443)"
gw_bg GWPID $GW "$W/dustgw.log" $PFX 256 --config "$W/dustgw.conf"
SOCK=$RUNDIR/dpdk_telemetry.v2
wait_for 60 test -S "$SOCK" || { cat "$W/dustgw.log"; fail "dustgw did not start"; }
wait_for 20 grep -q "quic 443" "$W/dustgw.log" || { cat "$W/dustgw.log"; fail "no quic port"; }
$TEL "$SOCK" /dustgw/stats >"$W/s0" || fail "telemetry read failed"

step "probes"
n $PR "$PROBE" --to $GWADDR:443 --chromium "$CHROME" --invite "$W"/inv/invite-1.txt \
	--stranger "$W"/other/invite-1.txt --password-file "$W/pw" --count 20 | tee "$W/probe.txt" ||
	fail "the prober failed"

field() { grep -o "$1=[0-9]*" "$W/probe.txt" | head -1 | cut -d= -f2; }
ctr() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
delta() { echo $(($(ctr "$W/s1" "$1") - $(ctr "$W/s0" "$1"))); }
# drops: the counted drops since s0 (delivery-side reasons excluded: the TAP
# kernel's own chatter); answered: the session's intro, its keepalive, ARP,
# and the first Initial of each hello paired with its second (SPEC §12.2:
# the pair is one intro, counted once, on the second)
drops() {
	local k t=0
	for k in $(awk '$1 ~ /^drop_/ && $1 !~ /^drop_(dlv_|no_tunnel|no_session)/ { print $1 }' "$W/s1"); do
		t=$((t + $(delta "$k")))
	done
	echo $t
}
answered() {
	echo $(($(delta intro_ok) + $(delta keepalive_rx) + $(delta arp_reply) +
		$(delta quic_hello_paired)))
}
# settled: every frame read so far is counted, and none came in since the
# last read (the prober has exited, so what is still queued arrives first)
LAST_RX=
settled() {
	$TEL "$SOCK" /dustgw/stats >"$W/s1" || fail "telemetry read failed"
	local rx
	rx=$(delta net_rx)
	[[ $(($(drops) + $(answered))) -eq $rx && $rx == "$LAST_RX" ]] && return 0
	LAST_RX=$rx
	return 1
}
# polled, not slept: up to 30 s for the gateway to count what it read
for _ in $(seq 150); do
	settled && break
	sleep 0.2
done
sleep 0.5 # tcpdump -U writes per packet; the pcap's last record, not a counter
stop_pid "$CAPPID"
CAPPID=

[[ $(field chromium_initials) -ge 10 ]] || fail "the browser's Initials were not sent"
[[ $(field replies) -eq 0 ]] || fail "probes drew $(field replies) replies"
grep -q "session=up" "$W/probe.txt" || fail "the prober's own session did not come up"
[[ $(field session_broken_replies) -eq 0 ]] || fail "broken session packets drew a reply"
[[ $(field keepalive_answers) -eq 1 ]] || fail "keepalive (and its replay) drew $(field keepalive_answers) answers, want 1"
# besides it, only the gateway's own path MTU probes (SPEC §12.4), at most one
[[ $(field other_answers) -eq 0 && $(field pmtu_probes) -le 1 ]] ||
	fail "keepalive (and its replay) drew $(field other_answers) other datagrams and $(field pmtu_probes) path MTU probes"
# on the wire: the session's first flight (three datagrams, and a 24-byte
# 1-RTT fourth after a tail of at most 124 bytes: SPEC §12.3), the answer to
# the keepalive that confirmed it (no PTO resend after it), the one
# keepalive answer and the path MTU probe the prober saw, if one was due
# (SPEC §12.4: the gateway counts it too), nothing else
tcpdump -n -r "$ART/hostile-quic.pcap" 2>/dev/null | sed 's/.*length //' >"$W/wire.len"
WIRE=$(wc -l <"$W/wire.len")
TAIL=$(sed -n 3p "$W/wire.len")
WANT=5
if [[ -n $TAIL && $TAIL -le 124 ]]; then
	WANT=6
	[[ $(sed -n 4p "$W/wire.len") -eq 24 ]] || fail "no 24-byte 1-RTT after a $TAIL-byte tail"
fi
PMTU=$(field pmtu_probes)
[[ $(delta pmtu_probes) -eq $PMTU ]] ||
	fail "the gateway counted $(delta pmtu_probes) path MTU probes, the prober saw $PMTU"
WANT=$((WANT + PMTU))
[[ $WIRE -eq $WANT ]] || fail "the gateway sent $WIRE datagrams (tail $TAIL B, $PMTU probes), want $WANT"
[[ $(delta intro_ok) -eq 1 && $(delta quic_answers) -eq 1 ]] || fail "intro_ok/quic_answers moved wrongly"
# Every frame the gateway read is accounted for: a counted drop, or the
# session's intro, its keepalive, an ARP request answered. (On a loaded
# machine the kernel may lose some probes before af_packet: those never
# reached the gateway, so the accounting is of what it read.)
for k in $(awk '$1 ~ /^drop_/ && $1 !~ /^drop_(dlv_|no_tunnel|no_session)/ { print $1 }' "$W/s1"); do
	d=$(delta "$k")
	[[ $d -eq 0 ]] || echo "$k: $d"
done
DROPS=$(drops)
RX=$(delta net_rx)
PROBES=$(($(field probes) + $(field session_probes)))
ANSWERED=$(answered)
echo "probes sent $PROBES, frames read $RX, counted drops $DROPS, answered $ANSWERED"
[[ $((DROPS + ANSWERED)) -eq $RX ]] || fail "$RX frames read, $DROPS drops + $ANSWERED answered"
[[ $RX -ge $((PROBES / 2)) ]] || fail "the gateway read only $RX of $PROBES probes"
echo "PASS hostile-quic: $PROBES probes (incl. $(field chromium_initials) Chromium Initials), 0 replies, $DROPS counted drops"
