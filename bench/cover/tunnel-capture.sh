#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The same page loads as capture.sh, each through a fresh Dust quic session:
# headless Chromium in a client namespace loads a page from caddy through
# dust-client's TUN; the server namespace runs netns-peer (libdust's data path
# behind a socket and a TUN, the sizes dustgw sends; not dustgw's DPDK burst
# timing) with caddy on the tunnel address. The capture is the outer UDP on
# the veth between them: what a censor on the path sees. Inside the tunnel
# Chromium talks HTTPS over TCP (QUIC's 1200-byte datagrams do not fit the
# 1197-byte tunnel MTU, SPEC §12.4), as it falls back on any such path.
#
#  ns $PFX-c: chromium, dust-client (TUN dust0 10.93.0.30)
#     $PFX-c 192.168.93.2 ====== $PFX-s 192.168.93.1 (tcpdump here)
#  ns $PFX-s: netns-peer (udp 443 quic, TUN srv0 10.93.0.1), caddy on 10.93.0.1
#
# usage: tunnel-capture.sh NETNS_PEER DUST_CLIENT OUT.pcap [LOADS] [cover|padding]
#   (root; LOADS default 20; the last argument picks the quic size policy of
#   both ends, SPEC §12.4, default cover; env ACKS=cover|off and ACK_THIN=on|off
#   set dust-client's --acks and --ack-thin, defaults cover and on; ACK_HOLD=MS its
#   --ack-hold; ACK_COMPRESS=on|off its --ack-compress, default on; CONNECT=
#   now|on-demand its --connect, default now: on demand, the hello goes with
#   Chromium's first packet)
set -e
set -o pipefail
. "$(dirname "$0")/../../test/e2e/netns/common.sh"

abspath PEER "$1" CLIENT "$2"
OUT=$(realpath -m "$3")
LOADS=${4:-20}
SIZES=${5:-cover}
HERE=$(dirname "$(realpath "$0")")
. "$HERE/load.sh"
W=$(mktemp -d /tmp/dust-tunnel-capture.XXXXXX)
PFX=tc$$
CLI=$PFX-c
SRV=$PFX-s
HOST=www.example.com
DUMP=
CL=
trap 'common_cleanup "$CL" "$DUMP"; rm -rf "$W"' EXIT

need_root_tools caddy chromium tcpdump openssl /usr/bin/python3
[[ $SIZES == cover || $SIZES == padding ]] || fail "size policy '$SIZES': want cover or padding"
"$HERE/mksite.py" "$W/site" 30
mkdir -p "$W/inv"
echo "tunnel capture" >"$W/pw"
"$PEER" invites --key "$W/srv.key" --store "$W/store" --server 192.168.93.1 --port 443 \
	--tunnel-net 10.93.0.0/24 --first 30 --count 1 --cover-sni $HOST \
	--password-file "$W/pw" --out-dir "$W/inv" >/dev/null

ns_add $CLI
ns_add $SRV
veth $CLI $PFX-c 192.168.93.2/24 $SRV $PFX-s 192.168.93.1/24
bg SP $SRV "$W/server.log" "$PEER" serve --key "$W/srv.key" --store "$W/store" \
	--server 192.168.93.1 --port 4500 --quic-port 443 --tun srv0 --sizes "$SIZES"
wait_for 5 n $SRV ip link show srv0 || { cat "$W/server.log"; fail "server TUN did not appear"; }
n $SRV ip addr add 10.93.0.1/24 dev srv0
n $SRV ip link set srv0 up

caddy_start CADDY $SRV 10.93.0.1 $HOST "$W/site" "$W/caddy" tcp

tcpdump_bg DUMP $SRV "$W/tcpdump.log" -i $PFX-s -U -n -s 96 -Z root -w "$OUT" udp port 443
ok=0
for i in $(seq 1 "$LOADS"); do
	page=$(((i - 1) % 30 + 1))
	# a fresh session each load: a new client process, a new source port
	bg CL $CLI "$W/client.log" "$CLIENT" --invite "$W/inv/invite-30.txt" --key "$W/c.key" \
		--password-file "$W/pw" --sizes "$SIZES" --acks "${ACKS:-cover}" \
		--ack-thin "${ACK_THIN:-on}" ${ACK_HOLD:+--ack-hold "$ACK_HOLD"} \
		--ack-compress "${ACK_COMPRESS:-on}" --connect "${CONNECT:-now}" --tries 5
	# on demand, the page load itself starts the session
	up="connected to"
	[[ ${CONNECT:-now} == on-demand ]] && up="starts the session"
	if wait_for 10 grep -q "$up" "$W/client.log" && load_page $CLI 10.93.0.1 $page &&
		grep -q "connected to" "$W/client.log"; then
		ok=$((ok + 1))
	else
		tail -5 "$W/client.log"
	fi
	stop_pid "$CL"
	CL=
	printf '\rtunnel capture: %d/%d loads' "$i" "$LOADS" >&2
done
loads_done "tunnel capture ($SIZES)"
