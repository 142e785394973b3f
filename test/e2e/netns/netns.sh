#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The real path, end to end: dust-client in namespaces, a veth wire, dustgw
# on net_af_packet, delivery to net_tap, the kernel routing to a far host.
#
#  ns $P-c0 .. $P-c20 (one per client)      ns $P-wire
#  +----------------------------------+     +---------------------+
#  | dust-client                      |     | bridge $P-br        |
#  |   dust0 TUN 10.9.0.N/24          |     |  (tcpdump here:     |
#  |   route 10.10.0.0/24 via dust0   |     |   netns-wire.pcap)  |
#  |   $P-cI 192.168.77.(10+I)/24  ==========  $P-wI             |
#  +----------------------------------+     |  $P-wg  ===========+====+
#                                           +---------------------+    |
#  ns $P-gw                                                            |
#  +-------------------------------------------------------------------+-+
#  | dustgw (DPDK): net = net_af_packet on $P-g (192.168.77.1:4433,      |
#  |                answers ARP itself; the kernel has no address here   |
#  |                and a blackhole rule, so it never answers a client), |
#  |                delivery = net_tap $P-tap                            |
#  | kernel: $P-tap 10.9.0.1/24, ip_forward=1, $P-gf 10.10.0.1/24 ==+     |
#  +----------------------------------------------------------------|----+
#  ns $P-far                                                         |
#  +-----------------------------------------------------------------|----+
#  | $P-f 10.10.0.2/24, route 10.9.0.0/24 via 10.10.0.1  ============+    |
#  | iperf3 server, TCP file receiver                                     |
#  +----------------------------------------------------------------------+
#
# Checks: ping both ways; a 4 MiB TCP file transfer (sha256 checked at the
# far end; the gateway thins the far host's superseded ACKs, SPEC §9.2)
# and an iperf3 UDP transfer; 20 more clients at once, each with its
# own invitation, all served both ways; a dustgw restart: every client
# notices the silence and introduces again (no crash; the bindings survive,
# so an intro from another key for a used invitation is still refused).
# Beside them, quic-profile clients (SPEC §12) on dustgw's quic port 443 go
# through the same steps (both ways, restart, stop); one of them also
# carries full-size inner packets (1197-byte pings both ways; 1428-byte
# pings from the far host, which must learn MTU 1219 from dustgw's ICMP
# "fragmentation needed"; 2 MiB of TCP each way, the download's ACKs
# compressed in compact packets that dustgw rebuilds). Their part of the wire
# is kept as test-artifacts/netns-quic.pcap and must pass as real QUIC:
# tshark dissects every datagram as QUIC, nothing malformed, no expert
# error, every decrypted ClientHello names the cover SNI, no client
# datagram over 1250 bytes and no server one over 1252 but path MTU
# probes of quic-go's sequence and what they allow; nDPI labels
# >= 99% of the flows QUIC.
# The client<->gateway wire is kept as test-artifacts/netns-wire.pcap;
# the measured figures go to test-artifacts/netns-results.txt.
#
# usage: netns.sh DUSTGW DUST_CLIENT DUST_INVITE NETNS_PEER WORKDIR ARTIFACTS
#   DUSTGW may be "peer": netns-peer stands in for dustgw (debugging only).
set -e
set -o pipefail

DUSTGW=$1
[[ $DUSTGW == peer ]] || DUSTGW=$(realpath "$DUSTGW")
CLIENT=$(realpath "$2")
INVITE=$(realpath "$3")
PEER=$(realpath "$4")
W=$5
ART=$6
NCLIENTS=${NETNS_CLIENTS:-20}
NQUIC=${NETNS_QUIC_CLIENTS:-4}
LAST=$NCLIENTS # the highest client index started so far
QPORT=443
COVER=www.example.com
PFX=dn$$
WIRE=$PFX-wire
GW=$PFX-gw
FAR=$PFX-far
GWADDR=192.168.77.1
PORT=4433
FARADDR=10.10.0.2
. "$(dirname "$0")/common.sh"

GWPID=
TCPDUMP=
trap 'common_cleanup "$TCPDUMP"' EXIT

need_root_tools ping iperf3 tcpdump ethtool sha256sum /usr/bin/python3 tshark ndpiReader
[[ $DUSTGW == peer || -x $DUSTGW ]] || fail "no dustgw binary at $DUSTGW"
fresh_work "correct horse battery staple" "$W/inv" "$ART"
RESULTS=$ART/netns-results.txt
: >"$RESULTS"

step "server key and $((NCLIENTS + 1)) invitations"
"$INVITE" keygen --out "$W/gw.key" >/dev/null
invites $GWADDR $PORT --tunnel-net 10.9.0.0/24 --count $NCLIENTS --out-dir "$W/inv"
INVITES=("$W"/inv/invite-*.txt)
# the last random-profile client speaks suite 1 (SPEC §6.4)
invites $GWADDR $PORT --tunnel-net 10.9.0.0/24 --suite aes-256-gcm --out-dir "$W/ginv"
INVITES+=("$W"/ginv/invite-*.txt)
[[ ${#INVITES[@]} -eq $((NCLIENTS + 1)) ]] || fail "dust-invite wrote ${#INVITES[@]} invitations"
invites $GWADDR $QPORT --profile quic --cover-sni $COVER --tunnel-net 10.9.0.0/24 \
	--count "$NQUIC" --out-dir "$W/qinv"
INVITES+=("$W"/qinv/invite-*.txt)
[[ ${#INVITES[@]} -eq $((NCLIENTS + NQUIC + 1)) ]] || fail "no $NQUIC quic invitations"

step "namespaces and links"
wire_bridge $WIRE $PFX-br
ns_add $GW
ns_add $FAR
ip link add $PFX-wg netns $WIRE type veth peer name $PFX-g netns $GW
n $WIRE ip link set $PFX-wg master $PFX-br up
noipv6 $WIRE $PFX-wg
noipv6 $GW $PFX-g
n $GW ip link set $PFX-g up
veth $GW $PFX-gf 10.10.0.1/24 $FAR $PFX-f $FARADDR/24
n $GW sysctl -qw net.ipv4.ip_forward=1
n $FAR ip route add 10.9.0.0/24 via 10.10.0.1

# Clients keep a veth's default checksum offload, as containers do: their
# UDP checksums reach dustgw unfinished (af_packet hands them on as they
# are), and udp_checksum = auto accepts them. Client 0 turns offload on
# deliberately (the case the test exists for, whatever the default), client
# 1 off (finished checksums, still verified).
csum_offload() { # csum_offload NS IFACE on|off
	n "$1" ethtool -K "$2" tx "$3" >/dev/null
	n "$1" ethtool -k "$2" | grep -q "^tx-checksumming: $3" ||
		fail "$2: checksum offload not $3"
}

client_ns_add() { # client_ns_add I
	local ns=$PFX-c$1
	ns_add "$ns"
	ip link add $PFX-c$1 netns "$ns" type veth peer name $PFX-w$1 netns $WIRE
	noipv6 "$ns" $PFX-c$1
	noipv6 $WIRE $PFX-w$1
	n $WIRE ip link set $PFX-w$1 master $PFX-br up
	n "$ns" ip addr add 192.168.77.$((10 + $1))/24 dev $PFX-c$1
	n "$ns" ip link set $PFX-c$1 up
	[[ $1 -gt 1 ]] || csum_offload "$ns" $PFX-c$1 "$([[ $1 -eq 0 ]] && echo on || echo off)"
}
for i in $(seq 0 $((NCLIENTS + NQUIC))); do
	client_ns_add "$i"
done

# dustgw for the netns test: net side on a veth, delivery to a TAP
{
	gw_conf_head $GWADDR $PORT "quic_port = $QPORT"
	cat <<EOF
queues = 1
mbufs = 8191
delivery_framing = eth
proxy_arp = yes

[sessions]
max_per_lcore = 256
idle_timeout_s = 180

[padding]
mode = uniform
min = 0
max = 63
mtu = 1472
EOF
} >"$W/dustgw.conf"

start_gw() { # start_gw N: the Nth run of the gateway, log in $W/dustgw-N.log
	local log=$W/dustgw-$1.log
	if [[ $DUSTGW == peer ]]; then
		n $GW ip addr replace $GWADDR/24 dev $PFX-g
		bg GWPID $GW "$log" "$PEER" serve --key "$W/gw.key" --store "$W/store" \
			--server $GWADDR --port $PORT --tun $PFX-tap
	else
		gw_bg GWPID $GW "$log" "$PFX-$1" 512 --config "$W/dustgw.conf"
	fi
	wait_for 60 n $GW ip link show $PFX-tap ||
		{ cat "$log"; fail "dustgw did not create its TAP"; }
	n $GW ip addr replace 10.9.0.1/24 dev $PFX-tap
	n $GW ip link set $PFX-tap up
	noipv6 $GW $PFX-tap
	kill -0 "$GWPID" 2>/dev/null || { cat "$log"; fail "dustgw died at start"; }
}

stop_gw() { # stop_gw N: SIGTERM, expect a clean exit
	gw_stop "$GWPID" "$W/dustgw-$1.log"
}

# A kernel without an address on $PFX-g would still forward (and ICMP-answer)
# what reaches it; blackhole it: only dustgw may speak on the wire.
n $GW ip rule add iif $PFX-g blackhole

step "start dustgw and the wire capture"
tcpdump_bg TCPDUMP $WIRE "$W/tcpdump.log" -i $PFX-br -U -n -Z root -w "$ART/netns-wire.pcap"
start_gw 1

# start_client I: client I in its namespace, log in $W/client-I.log, pid in CPID[I]
declare -a CPID TUNADDR
start_client() {
	local i=$1
	bg "CPID[$i]" $PFX-c$i "$W/client-$i.log" "$CLIENT" --invite "${INVITES[$i]}" \
		--password-file "$W/pw" --key "$W/client-$i.key" --route 10.10.0.0/24 \
		--keepalive 1 --dead-after 4 --tries 30 --stats
}
client_up() { # client_up I: wait for the connection, note the tunnel address
	local i=$1
	wait_for 40 grep -q "connected to" "$W/client-$i.log" ||
		{ cat "$W/client-$i.log"; fail "client $i did not connect"; }
	TUNADDR[$i]=$(sed -n 's/.*: tunnel \([0-9.]*\)\/.*/\1/p' "$W/client-$i.log" | head -1)
	[[ -n ${TUNADDR[$i]} ]] || fail "no tunnel address in client $i's log"
}

step "client 0: connect, ping the far host and back"
start_client 0
client_up 0
n $PFX-c0 ping -c 20 -i 0.05 -W 2 $FARADDR | tee "$W/ping-c2f.txt"
n $FAR ping -c 20 -i 0.05 -W 2 "${TUNADDR[0]}" | tee "$W/ping-f2c.txt"
echo "ping client->far (ping -c 20 -i 0.05): $(tail -1 "$W/ping-c2f.txt")" >>"$RESULTS"
echo "ping far->client (ping -c 20 -i 0.05): $(tail -1 "$W/ping-f2c.txt")" >>"$RESULTS"

listening() { # listening PORT: a TCP listener on PORT in the far namespace
	n $FAR ss -ltnH "sport = :$1" | grep -q .
}

step "TCP: a 4 MiB file, its sha256 checked at the far end"
head -c $((4 << 20)) /dev/urandom >"$W/blob"
WANT=$(sha256sum "$W/blob" | cut -d' ' -f1)
bg RECV $FAR "$W/recv.log" /usr/bin/python3 -c '
import hashlib, socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5001)); s.listen(1); s.settimeout(60)
c, _ = s.accept(); c.settimeout(60); h = hashlib.sha256(); n = 0
while True:
    b = c.recv(65536)
    if not b: break
    h.update(b); n += len(b)
print(n, h.hexdigest())' $FARADDR
wait_for 10 listening 5001 || fail "file receiver did not start"
T0=$(date +%s%N)
n $PFX-c0 /usr/bin/python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], 5001), timeout=60)
s.sendall(open(sys.argv[2], "rb").read()); s.close()' $FARADDR "$W/blob"
wait_exit "$RECV" 60 || fail "file receiver did not finish"
T1=$(date +%s%N)
read -r GOTN GOT <"$W/recv.log" || true
[[ $GOTN -eq $((4 << 20)) && $GOT == "$WANT" ]] ||
	fail "file transfer: got $GOTN bytes sha256 $GOT, want $((4 << 20)) $WANT"
echo "tcp 4 MiB file client->far: sha256 ok in $(((T1 - T0) / 1000000)) ms" >>"$RESULTS"

step "UDP: iperf3 -u through the tunnel"
bg IPERF $FAR "$W/iperf-server.log" iperf3 -s -B $FARADDR
wait_for 10 listening 5201 || fail "iperf3 server did not start"
n $PFX-c0 iperf3 -c $FARADDR -u -b 8M -l 1200 -t 3 -J >"$W/iperf-udp.json" ||
	fail "iperf3 UDP failed"
read -r UPKTS ULOST <<<"$(/usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["end"]["sum"]
print(s["packets"], s["lost_percent"])' "$W/iperf-udp.json")"
echo "udp iperf3 -u -b 8M -l 1200 -t 3: $UPKTS datagrams, ${ULOST}% lost" >>"$RESULTS"
# UDP may lose under load (this machine's cores are shared): the bulk must pass
/usr/bin/python3 -c 'import sys; sys.exit(0 if int(sys.argv[1]) > 1000 and float(sys.argv[2]) < 20 else 1)' \
	"$UPKTS" "$ULOST" || fail "UDP transfer: $UPKTS datagrams, $ULOST% lost"

step "$NCLIENTS more clients at once, each its own invitation"
for i in $(seq 1 $NCLIENTS); do
	start_client "$i"
done
for i in $(seq 1 $NCLIENTS); do
	client_up "$i"
done
both_ways() { # both_ways I: client I pings far, far pings client I
	n $PFX-c$1 ping -c 2 -i 0.2 -W 3 $FARADDR >/dev/null &&
		n $FAR ping -c 2 -i 0.2 -W 3 "${TUNADDR[$1]}" >/dev/null
}
all_both_ways() {
	local pids=() i bad=0
	for i in $(seq 0 $LAST); do
		both_ways "$i" &
		pids[$i]=$!
	done
	for i in $(seq 0 $LAST); do
		wait "${pids[$i]}" || { echo "client $i not served" >&2; bad=1; }
	done
	return $bad
}
# Right after connecting, replies to a client can still be dropped as
# no_session until the main lcore has published its session (seen with a
# load average of 13 on this 2-core machine), so each client's first
# exchange may wait (bounded); then every client is checked at once.
first_served() { # first_served I
	wait_for 10 both_ways "$1" || fail "client $1 not served within 10 s of connecting"
}
for i in $(seq 1 $NCLIENTS); do
	first_served "$i"
done
all_both_ways || fail "not every client was served"
grep -q "connected to .*, aes-256-gcm$" "$W/client-$NCLIENTS.log" ||
	fail "client $NCLIENTS is not on AES-256-GCM"
echo "clients served at once: $((NCLIENTS + 1)) (client $NCLIENTS on AES-256-GCM)" >>"$RESULTS"

step "$NQUIC quic-profile clients on port $QPORT (cover $COVER)"
for i in $(seq $((NCLIENTS + 1)) $((NCLIENTS + NQUIC))); do
	start_client "$i"
done
for i in $(seq $((NCLIENTS + 1)) $((NCLIENTS + NQUIC))); do
	client_up "$i"
	grep -q "connected to $GWADDR:$QPORT" "$W/client-$i.log" || fail "client $i is not on port $QPORT"
	first_served "$i"
done
LAST=$((NCLIENTS + NQUIC))
all_both_ways || fail "not every client was served with the quic ones"
echo "clients served at once: $((LAST + 1)) ($NQUIC of them quic on port $QPORT)" >>"$RESULTS"

step "quic: full-size inner packets keep the 1250/1252 bounds (SPEC §12.4)"
Q=$((NCLIENTS + 1))
QMTU=$(n $PFX-c$Q cat /sys/class/net/dust0/mtu)
[[ $QMTU -eq 1197 ]] || fail "quic client $Q's TUN MTU is $QMTU, want 1197"
# the TUN MTU's worth, DF set, both ways: nothing fragmented, nothing lost
n $PFX-c$Q ping -c 5 -i 0.1 -W 2 -M do -s $((QMTU - 28)) $FARADDR >/dev/null ||
	fail "full-size pings from quic client $Q"
n $FAR ping -c 5 -i 0.1 -W 2 -M do -s $((QMTU - 28)) "${TUNADDR[$Q]}" >/dev/null ||
	fail "full-size pings to quic client $Q"
# 1428 bytes toward the client: dustgw answers "fragmentation needed" with
# the inner MTU its session's bound leaves (bound - 1 - 32) as a router
# would: 1219 at 1252, 1406 once path MTU discovery reached 1439 (SPEC
# §12.4; 1319, 1369, 1394 on the way); the far kernel takes it (its
# checksums are right) and fragments what follows to fit
n $FAR ping -c 6 -i 0.2 -W 2 -M want -s 1400 "${TUNADDR[$Q]}" >"$W/ping-big.txt" || true
n $FAR ip route get "${TUNADDR[$Q]}" | tee "$W/route-big.txt"
grep -Eq "mtu (1219|1319|1369|1394|1406)( |$)" "$W/route-big.txt" ||
	fail "the far host learnt no MTU of a session bound (1219 .. 1406) from dustgw's ICMP"
BIGRX=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$W/ping-big.txt")
[[ $BIGRX -ge 4 ]] || { cat "$W/ping-big.txt"; fail "1428-byte pings did not pass once fragmented"; }
# TCP both ways through the quic client (MSS from its TUN, clamped by dustgw)
listening_in() { # listening_in NS PORT: a TCP listener on PORT in NS
	n "$1" ss -ltnH "sport = :$2" | grep -q .
}
bulk() { # bulk FROM_NS TO_NS TO_ADDR: 2 MiB over TCP port 5002, byte count checked
	bg BRECV "$2" "$W/bulk.log" /usr/bin/python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5002)); s.listen(1); s.settimeout(30)
c, _ = s.accept(); c.settimeout(30); n = 0
while True:
    b = c.recv(65536)
    if not b: break
    n += len(b)
print(n)' "$3"
	wait_for 10 listening_in "$2" 5002 || fail "bulk receiver did not start"
	n "$1" /usr/bin/python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], 5002), timeout=30)
s.sendall(bytes(2 << 20)); s.close()' "$3"
	wait_exit "$BRECV" 30 || fail "bulk receiver did not finish"
	[[ $(cat "$W/bulk.log") -eq $((2 << 20)) ]] || fail "bulk TCP: got $(cat "$W/bulk.log") bytes"
}
bulk $PFX-c$Q $FAR $FARADDR
bulk $FAR $PFX-c$Q "${TUNADDR[$Q]}"
echo "quic client $Q: TUN MTU $QMTU; 1197-byte pings both ways; 1428-byte pings: far learnt MTU 1219 from dustgw, $BIGRX of 6 answered; 2 MiB TCP each way" >>"$RESULTS"

step "restart dustgw: every client introduces again"
# a steady ping across the restart measures the outage (5 pings a second)
bg OUTPING $PFX-c0 "$W/ping-restart.txt" ping -i 0.2 -W 1 $FARADDR
sleep 1
stop_gw 1
# summary_event N NAME: an event counter from the Nth gateway run's exit summary
summary_event() {
	sed -n "s/.* $2=\([0-9]*\).*/\1/p" "$W/dustgw-$1.log" | tail -1
}
FIRST=$(summary_event 1 intro_first_use)
[[ $FIRST -eq $((LAST + 1)) ]] ||
	{ cat "$W/dustgw-1.log"; fail "first run: $FIRST first uses, want $((LAST + 1))"; }
[[ $(summary_event 1 quic_answers) -ge $NQUIC ]] ||
	{ cat "$W/dustgw-1.log"; fail "first run: fewer than $NQUIC quic answers"; }
# caddy's 36-byte Handshake ACK after each client's second flight (SPEC §12.3)
[[ $(summary_event 1 quic_hs_acks) -ge $NQUIC ]] ||
	{ cat "$W/dustgw-1.log"; fail "first run: fewer than $NQUIC Handshake ACKs"; }
[[ $(summary_event 1 quic_hs_done) -ge $NQUIC ]] ||
	{ cat "$W/dustgw-1.log"; fail "first run: fewer than $NQUIC HANDSHAKE_DONE datagrams"; }
# the flight after its ACK held until the client's PTO probe, as caddy
# answers Chromium's (SPEC §12.3): every quic answer held, and probed
[[ $(summary_event 1 quic_held) -ge $NQUIC && $(summary_event 1 quic_probed) -ge $NQUIC ]] ||
	{ cat "$W/dustgw-1.log"; fail "first run: fewer than $NQUIC flights held and probed"; }
# path MTU discovery as quic-go's (SPEC §12.4): on the 1500-byte veth the
# first probe (1352) of every quic session passes
[[ $(summary_event 1 pmtu_raised) -ge $NQUIC ]] ||
	{ cat "$W/dustgw-1.log"; fail "first run: fewer than $NQUIC path MTU probes echoed"; }
# the 1428-byte pings were answered with ICMP; the far host's SYN had its MSS clamped
[[ $(summary_event 1 icmp_too_big) -ge 1 ]] ||
	{ cat "$W/dustgw-1.log"; fail "first run: no ICMP too-big sent"; }
[[ $(summary_event 1 mss_clamped) -ge 1 ]] ||
	{ cat "$W/dustgw-1.log"; fail "first run: no MSS clamped"; }
# the far host's ACKs of the 4 MiB upload: those a newer one of a delivery burst covered
# were left out (SPEC §9.2), and the file still arrived whole (checked above)
echo "gateway: acks_thinned $(summary_event 1 acks_thinned) (4 MiB upload)" | tee -a "$RESULTS"
[[ $(summary_event 1 acks_thinned) -ge 1 ]] ||
	{ cat "$W/dustgw-1.log"; fail "first run: no superseded ACK thinned"; }
# the quic client's kernel's ACKs of the 2 MiB download came compressed in compact
# packets (SPEC §6.5), and dustgw rebuilt them (the byte count checked above)
echo "gateway: quic_compact $(summary_event 1 quic_compact), ackz_bad $(summary_event 1 ackz_bad) (2 MiB to quic client $Q)" |
	tee -a "$RESULTS"
[[ $(summary_event 1 quic_compact) -ge 20 ]] ||
	{ cat "$W/dustgw-1.log"; fail "first run: too few compact packets opened"; }
sleep 1
start_gw 2
for i in $(seq 0 $LAST); do
	wait_for 60 grep -q "connected again" "$W/client-$i.log" ||
		{ cat "$W/client-$i.log"; fail "client $i did not come back after the restart"; }
	first_served "$i"
done
all_both_ways || fail "not every client was served after the restart"
kill -INT "$OUTPING"
wait_exit "$OUTPING" 5 || fail "ping did not stop"
read -r PTX PRX <<<"$(sed -n 's/^\([0-9]*\) packets transmitted, \([0-9]*\) received.*/\1 \2/p' "$W/ping-restart.txt")"
echo "ping -i 0.2 across the restart: $PTX sent, $PRX answered, unanswered for about $(((PTX - PRX) * 200)) ms" >>"$RESULTS"
RESTART_INTROS=$(grep -h "connected again" "$W"/client-*.log | sed -n 's/.*after \([0-9]*\) intro.*/\1/p' |
	sort -n | tail -1)
echo "gateway restart: all $((LAST + 1)) clients re-introduced (dead-after 4 s; at most $RESTART_INTROS intro(s) each)" >>"$RESULTS"

step "used invitations stay used: another key is refused"
ns_add $PFX-thief
ip link add $PFX-t netns $PFX-thief type veth peer name $PFX-wt netns $WIRE
noipv6 $PFX-thief $PFX-t
noipv6 $WIRE $PFX-wt
n $WIRE ip link set $PFX-wt master $PFX-br up
n $PFX-thief ip addr add 192.168.77.250/24 dev $PFX-t
n $PFX-thief ip link set $PFX-t up
bg THIEF $PFX-thief "$W/thief.log" "$CLIENT" --invite "${INVITES[0]}" --password-file "$W/pw" \
	--key "$W/thief.key" --tries 3
wait_exit "$THIEF" 20 || fail "thief client still running"
[[ $RC -eq 2 ]] && grep -q "no answer from $GWADDR:$PORT" "$W/thief.log" ||
	{ cat "$W/thief.log"; fail "a used invitation answered another key (status $RC)"; }

step "stop the capture"
stop_pid "$TCPDUMP"
TCPDUMP=
UDPCOUNT=$(tcpdump -n -r "$ART/netns-wire.pcap" "udp port $PORT" 2>/dev/null | wc -l)
[[ $UDPCOUNT -gt 3000 ]] || fail "the wire capture holds only $UDPCOUNT Dust datagrams"
echo "wire capture: $ART/netns-wire.pcap, $UDPCOUNT Dust datagrams" >>"$RESULTS"
tcpdump -n -r "$ART/netns-wire.pcap" -w "$ART/netns-quic.pcap" "udp port $QPORT" 2>/dev/null ||
	fail "cannot cut the quic flows out of the wire capture"
"$(dirname "$0")/quic-wire.sh" "$ART/netns-quic.pcap" $QPORT $COVER "$NQUIC" >>"$RESULTS" ||
	fail "the quic flows do not pass as QUIC (see above)"
# each client answers the first flight as Chromium 156 answers caddy's (SPEC §12.3)
"$(dirname "$0")/quic-second-flight.sh" "$(dirname "$0")/../../data/chromium156-caddy-loads.pcap" \
	443 "$ART/netns-quic.pcap" $QPORT "$NQUIC" >>"$RESULTS" ||
	fail "the quic clients' second flight is not Chromium's (see above)"
# the hello as Chromium's with caddy (SPEC §12.2, §12.3): the gateway's ACK-only
# Initial alone, then the client's PTO probe (a third 1250-byte Initial) drawn
# from Chromium's (7.8..37 ms after the hello, or 3 x the RTT), then the answer;
# under 250 ms after the hello, where a client that ignored the ACK resends at 300
/usr/bin/python3 - "$(dirname "$0")/../../../bench/cover/size-model.py" "$ART/netns-quic.pcap" \
	"$QPORT" "$NQUIC" >>"$RESULTS" <<'PY' || fail "the quic hellos' PTO probe is not Chromium's (see above)"
import importlib.machinery, sys
sm = importlib.machinery.SourceFileLoader("sm", sys.argv[1]).load_module()
flows = {}
for t, d, n, _, cport in sm.udp_payloads(sys.argv[2], int(sys.argv[3])):
    flows.setdefault(cport, []).append((t, n if d == "c2s" else -n))
hellos, probed, at = 0, 0, []
for f in flows.values():
    if len(f) < 2 or f[0][1] != 1250 or f[1][1] != 1250:
        continue  # not a hello's first datagrams (a session from before the capture)
    hellos += 1
    t0, srv = f[0][0], [(t, -s) for t, s in f if s < 0]
    big = next((t for t, s in srv if s == 1252), None)
    probe = [t for t, s in f[2:] if s == 1250 and big is not None and t < big]
    if srv and srv[0][1] < 60 and probe and probe[0] - t0 < 0.25:
        probed += 1
        at.append((probe[0] - t0) * 1e3)
print("quic hellos: %d of %d with the ACK alone, then the PTO probe at %s ms, then the answer" %
      (probed, hellos, ", ".join("%.1f" % a for a in sorted(at))))
sys.exit(0 if hellos >= int(sys.argv[4]) and probed == hellos else 1)
PY
# the same checks refuse the random profile's flows (they can fail)
tcpdump -n -r "$ART/netns-wire.pcap" -c 500 -w "$W/random.pcap" "udp port $PORT" 2>/dev/null
! "$(dirname "$0")/quic-wire.sh" "$W/random.pcap" $PORT $COVER 1 >/dev/null 2>&1 ||
	fail "quic-wire.sh passed random-profile flows as QUIC"

step "TCP throughput: iperf3 -t 5 (not captured)"
n $PFX-c0 iperf3 -c $FARADDR -t 5 -J >"$W/iperf-tcp.json" || fail "iperf3 TCP failed"
TPUT=$(/usr/bin/python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["end"]
print("%.1f Mbit/s sent, %.1f Mbit/s received" % (e["sum_sent"]["bits_per_second"] / 1e6,
      e["sum_received"]["bits_per_second"] / 1e6))' "$W/iperf-tcp.json")
echo "tcp iperf3 -c $FARADDR -t 5 (client->far): $TPUT" >>"$RESULTS"
n $PFX-c0 iperf3 -c $FARADDR -t 5 -R -J >"$W/iperf-tcp-r.json" || fail "iperf3 TCP -R failed"
TPUT=$(/usr/bin/python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["end"]
print("%.1f Mbit/s" % (e["sum_received"]["bits_per_second"] / 1e6))' "$W/iperf-tcp-r.json")
echo "tcp iperf3 -c $FARADDR -t 5 -R (far->client): $TPUT" >>"$RESULTS"

step "stop every client: exit 0 and a stats line"
for i in $(seq 0 $LAST); do
	kill -TERM "${CPID[$i]}"
done
for i in $(seq 0 $LAST); do
	wait_exit "${CPID[$i]}" 10 || fail "client $i did not stop"
	[[ $RC -eq 0 ]] || fail "client $i exit status $RC"
	grep -q "dust-client stats:" "$W/client-$i.log" || fail "client $i printed no stats"
done
grep "dust-client stats:" "$W/client-0.log" >>"$RESULTS"
grep "dust-client stats:" "$W/client-$LAST.log" | sed 's/^/quic /' >>"$RESULTS"
stop_gw 2
cp "$W/dustgw-2.log" "$ART/netns-dustgw-summary.txt"
# after the restart every intro found its binding on disk: no first use, and
# the other key's intros were refused by name
[[ $(summary_event 2 intro_first_use) -eq 0 ]] || fail "second run bound an invitation again"
# checksums left for offload were accepted, not dropped
! grep -h "udp_csum" "$W"/dustgw-*.log || fail "dustgw dropped datagrams for their UDP checksum"
# the TAP kernel's own IPv6 chatter is dlv_local, not a client's no_tunnel
! grep -h "no_tunnel" "$W"/dustgw-*.log || fail "dustgw counted no_tunnel drops"
[[ $(summary_event 2 intro_ok) -ge $((LAST + 1)) ]] || fail "second run: too few intros"
grep -Eq "intro_wrong_key +[1-9]" "$W/dustgw-2.log" || fail "no intro_wrong_key drop counted"
# read the store only now: dust-invite may compact the journal when it opens it
"$INVITE" list --store "$W/store" --key "$W/gw.key" >"$W/list.txt"
USED=$(grep -c " used by client " "$W/list.txt" || true)
[[ $USED -eq $((LAST + 1)) ]] || { cat "$W/list.txt"; fail "store lists $USED used invitations"; }
QUSED=$(grep " quic:$COVER " "$W/list.txt" | grep -c " used by client " || true)
[[ $QUSED -eq $NQUIC ]] || { cat "$W/list.txt"; fail "store lists $QUSED used quic invitations"; }

cat "$RESULTS"
echo "PASS: netns"
