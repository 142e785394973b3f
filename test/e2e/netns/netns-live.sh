#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Live invitations on the real path (file store): dustgw on net_af_packet on
# a veth, delivery to net_tap, dust-client in namespaces. While dustgw runs:
# - dust-invite create: the gateway serves the new invitation within 1 s
#   (telemetry /dustgw/store), no restart; its client connects;
# - dust-invite revoke --file: that client's session is cut within 1 s (the
#   gateway's sessions_revoked, and the client's last answered ping), and its
#   later intros are refused as intro_revoked;
# - client 0 pings through its tunnel every 50 ms all along: no ping lost.
#
#  ns $P-c0, $P-c1: dust-client, TUN 10.9.0.N  == veth ==  ns $P-wire: bridge
#  ns $P-gw: dustgw (net_af_packet on $P-g, bridged; net_tap $P-tap with the
#            kernel's 10.9.0.1, which the clients ping through the tunnel)
#
# usage: netns-live.sh DUSTGW DUST_CLIENT DUST_INVITE WORKDIR ARTIFACTS
set -e
set -o pipefail
. "$(dirname "$0")/common.sh"

abspath DUSTGW "$1" CLIENT "$2" INVITE "$3"
W=$4
ART=$5
HERE=$(dirname "$(realpath "$0")")
PFX=dl$$
WIRE=$PFX-wire
GW=$PFX-gw
GWADDR=192.168.77.1
PORT=4433
TAPADDR=10.9.0.1
trap common_cleanup EXIT

need_root_tools ping /usr/bin/python3
fresh_work "live test password" "$ART"
RESULTS=$ART/netns-live-results.txt
: >"$RESULTS"
# The issue's bound. A sanitizer build's dustgw runs several times slower:
# its bound is 5 s, as in gw-live.
LIMIT_MS=1000
! ldd "$DUSTGW" | grep -q libasan || LIMIT_MS=5000

step "server key and client 0's invitation"
"$INVITE" keygen --out "$W/gw.key" >/dev/null
CREATE=("$INVITE" create --store "$W/store" --key "$W/gw.key" --server "$GWADDR" --port "$PORT"
	--tunnel-net 10.9.0.0/24 --password-file "$W/pw")
"${CREATE[@]}" --out-dir "$W/inv0" >/dev/null

step "namespaces and links"
ns_add $WIRE
ns_add $GW
n $WIRE ip link add $PFX-br type bridge
n $WIRE ip link set $PFX-br up
ip link add $PFX-wg netns $WIRE type veth peer name $PFX-g netns $GW
n $WIRE ip link set $PFX-wg master $PFX-br up
n $GW ip link set $PFX-g up
# only dustgw may answer on the wire (the kernel has no address there)
n $GW ip rule add iif $PFX-g blackhole
for i in 0 1; do
	ns_add $PFX-c$i
	ip link add $PFX-c$i netns $PFX-c$i type veth peer name $PFX-w$i netns $WIRE
	n $WIRE ip link set $PFX-w$i master $PFX-br up
	n $PFX-c$i ip addr add 192.168.77.$((10 + i))/24 dev $PFX-c$i
	n $PFX-c$i ip link set $PFX-c$i up
done

cat >"$W/dustgw.conf" <<EOF
; dustgw for the live-invitation test
[gateway]
ipv4 = $GWADDR
udp_port = $PORT
key_file = $W/gw.key
store = $W/store

[ports]
net = net_af_packet0
delivery = net_tap0
queues = 1
mbufs = 4095
delivery_framing = eth
proxy_arp = yes
EOF

step "start dustgw"
bg GWPID $GW "$W/dustgw.log" "$DUSTGW" --no-huge -m 512 --no-pci --file-prefix $PFX \
	--lcores "0@0,1@$(($(nproc) > 1 ? 1 : 0))" \
	--vdev "net_af_packet0,iface=$PFX-g" --vdev "net_tap0,iface=$PFX-tap" \
	-- --config "$W/dustgw.conf"
wait_for 60 n $GW ip link show $PFX-tap || { cat "$W/dustgw.log"; fail "dustgw did not create its TAP"; }
n $GW ip addr replace $TAPADDR/24 dev $PFX-tap
n $GW ip link set $PFX-tap up
tel() { # tel ARGS...: live-time.py against this dustgw
	/usr/bin/python3 "$HERE/live-time.py" $PFX "$@"
}
wait_for 30 tel get /dustgw/store invitations || fail "no telemetry from dustgw"

declare -a CPID
start_client() { # start_client I INVITATION [ARGS...]
	local i=$1 inv=$2
	shift 2
	bg "CPID[$i]" "$PFX-c$i" "$W/client-$i.log" "$CLIENT" --invite "$inv" \
		--password-file "$W/pw" --key "$W/client-$i.key" --keepalive 1 "$@"
}
connected() {
	grep -q "connected to" "$W/client-$1.log"
}
answers() { # answers I: client I's ping through its tunnel is answered
	n "$PFX-c$1" ping -c 1 -W 1 $TAPADDR
}

step "client 0 connects and pings through its tunnel every 50 ms"
start_client 0 "$W"/inv0/invite-*.txt
wait_for 40 connected 0 || { cat "$W/client-0.log"; fail "client 0 did not connect"; }
# its session is published a moment after the answer: wait for a first reply
wait_for 10 answers 0 || fail "client 0 is not served"
bg STEADY $PFX-c0 "$W/ping-0.txt" ping -i 0.05 -W 1 $TAPADDR

step "dust-invite create while dustgw runs"
read -r MERGE_MS T_CREATE <<<"$(tel merge "${CREATE[@]}" --out-dir "$W/inv1")"
[[ $MERGE_MS != timeout ]] || fail "the new invitation was not merged within 10 s"
echo "new invitation served $MERGE_MS ms after dust-invite create returned" | tee -a "$RESULTS"
[[ $MERGE_MS -lt $LIMIT_MS ]] || fail "merge took $MERGE_MS ms (limit $LIMIT_MS)"
FIRST0=$(tel get /dustgw/stats intro_first_use)
start_client 1 "$W"/inv1/invite-*.txt --dead-after 2
for _ in $(seq 2000); do # up to 40 s, every 20 ms
	! connected 1 || break
	sleep 0.02
done
T_CONN=$(date +%s.%N)
connected 1 || { cat "$W/client-1.log"; fail "client 1 did not connect"; }
CONN_MS=$(/usr/bin/python3 -c "import sys; print(int((float(sys.argv[1]) - float(sys.argv[2])) * 1000))" \
	"$T_CONN" "$T_CREATE")
echo "client 1 connected (seen in its log, polled every 20 ms) $CONN_MS ms after create returned," \
	"its Argon2id included" | tee -a "$RESULTS"
[[ $CONN_MS -lt $LIMIT_MS ]] || fail "client 1 connected $CONN_MS ms after create (limit $LIMIT_MS)"
[[ $(tel get /dustgw/stats intro_first_use) -eq $((FIRST0 + 1)) ]] || fail "client 1 was no first use"
[[ $(tel get /dustgw/stats drop_intro_unknown) -eq 0 ]] || fail "an intro was refused as unknown"
TUN1=$(sed -n 's/.*: tunnel \([0-9.]*\)\/.*/\1/p' "$W/client-1.log" | head -1)
wait_for 10 answers 1 || fail "client 1 is not served"
bg PING1 $PFX-c1 "$W/ping-1.txt" ping -D -i 0.02 -W 1 $TAPADDR
wait_for 10 grep -q "icmp_seq=10 " "$W/ping-1.txt" || fail "client 1's pings are not answered"

step "dust-invite revoke --file while client 1 pings every 20 ms"
read -r CUT_MS T_REVOKE <<<"$(tel cut "$TUN1" "$INVITE" revoke --store "$W/store" --key "$W/gw.key" \
	--file "$(echo "$W"/inv1/invite-*.txt)" --password-file "$W/pw")"
[[ $CUT_MS != timeout ]] || fail "client 1's session was not cut within 10 s"
echo "client 1's session cut (sessions_revoked, no live session) $CUT_MS ms after" \
	"dust-invite revoke returned" | tee -a "$RESULTS"
[[ $CUT_MS -lt $LIMIT_MS ]] || fail "cut took $CUT_MS ms (limit $LIMIT_MS)"
sleep 1.2 # a full ping timeout after the cut: the last reply is in
kill -INT "$PING1"
wait_exit "$PING1" 5 || fail "ping did not stop"
LAST_MS=$(/usr/bin/python3 -c '
import re, sys
ts = [float(t) for t in re.findall(r"^\[([0-9.]+)\] \d+ bytes from", open(sys.argv[1]).read(), re.M)]
print(int((ts[-1] - float(sys.argv[2])) * 1000))' "$W/ping-1.txt" "$T_REVOKE")
echo "client 1's last answered ping (of one every 20 ms): $LAST_MS ms after revoke returned" |
	tee -a "$RESULTS"
[[ $LAST_MS -lt $LIMIT_MS ]] || fail "client 1 was still answered $LAST_MS ms after the revoke"

step "client 1 introduces again (dead after 2 s): refused as intro_revoked"
revoked_intro() {
	[[ $(tel get /dustgw/stats drop_intro_revoked) -gt 0 ]]
}
wait_for 20 revoked_intro || { cat "$W/client-1.log"; fail "no intro counted as intro_revoked"; }
! answers 1 >/dev/null || fail "a revoked client is served"
echo "client 1's later intros: $(tel get /dustgw/stats drop_intro_revoked) refused as intro_revoked" |
	tee -a "$RESULTS"

step "client 0 lost nothing"
kill -INT "$STEADY"
wait_exit "$STEADY" 5 || fail "ping did not stop"
# Stopped, ping counts the requests still in flight as lost: only those sent
# in its last second (20) may go unanswered.
read -r PTX PRX LOST <<<"$(/usr/bin/python3 -c '
import re, sys
t = open(sys.argv[1]).read()
sent = int(re.search(r"^(\d+) packets transmitted", t, re.M).group(1))
got = {int(n) for n in re.findall(r"icmp_seq=(\d+) ", t)}
print(sent, len(got), len([q for q in range(1, sent - 19) if q not in got]))' "$W/ping-0.txt")"
echo "client 0, ping -i 0.05 throughout: $PTX sent, $PRX answered, $LOST lost" \
	"(not counting the last second's)" | tee -a "$RESULTS"
[[ $PTX -gt 40 && $LOST -eq 0 ]] || fail "client 0 lost pings: $PTX sent, $PRX answered, $LOST lost"
"$INVITE" list --store "$W/store" --key "$W/gw.key" | tee "$W/list.txt" | grep -q " revoked" ||
	fail "dust-invite list shows no revoked invitation"
for i in 0 1; do
	kill -TERM "${CPID[$i]}"
	wait_exit "${CPID[$i]}" 10 || fail "client $i did not stop"
done
kill -TERM "$GWPID"
wait_exit "$GWPID" 20 || fail "dustgw did not stop on SIGTERM"
[[ $RC -eq 0 ]] || { cat "$W/dustgw.log"; fail "dustgw exit status $RC"; }
echo "PASS: netns-live"
