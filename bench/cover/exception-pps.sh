#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The cover server's exception path in packets per second (SPEC §12.5):
# non-Dust datagrams to the gateway's quic port handed to the kernel through
# the cover tap and the kernel's answers sent back out of the net port,
# beside the same exchange with no gateway in the way (the kernel's own
# stack on the same veth), in one run. A UDP echo server stands where the
# cover server (caddy) would; an echo client keeps WINDOW datagrams in
# flight from one port for SECONDS: its first datagram is a 1200-byte v1
# Initial of random bytes (not Dust), so the flow is handed over, and every
# later one follows it there. Sizes: 64-byte short headers and 1200-byte
# Initials. The rate limits are raised out of the way.
#
#  ns $PFX-c: echo client, 192.168.62.2
#     $PFX-c ====== $PFX-g (dustgw net_af_packet, quic 443; cover tap $PFX-cov 192.168.62.1)
#  ns $PFX-gw: echo server on 192.168.62.1:443 (kernel, behind the cover tap)
#
# usage: exception-pps.sh BUILD_DIR [SECONDS] [WINDOW]   (root; default 5 s, 32)
set -e
set -o pipefail

B=$(realpath "$1")
SECS=${2:-5}
WINDOW=${3:-32}
DUSTGW=$B/app/dustgw/dustgw
INVITE=$B/tools/dust-invite/dust-invite
PFX=ep$$
W=$(mktemp -d /tmp/dust-exception-pps.XXXXXX)
. "$(dirname "$(realpath "$0")")/../../test/e2e/netns/common.sh"
GWPID=
trap 'common_cleanup; rm -rf "$W"' EXIT

need_root_tools /usr/bin/python3
"$INVITE" keygen --out "$W/gw.key" >/dev/null
ns_add $PFX-c
ns_add $PFX-gw
veth $PFX-c $PFX-c 192.168.62.2/24 $PFX-gw $PFX-g ""

cat >"$W/echo.py" <<'EOF'
import os, socket, sys, time

def server(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 443))
    while True:
        d, a = s.recvfrom(2048)
        s.sendto(d, a)

def client(addr, size, secs, window):
    size, secs, window = int(size), float(secs), int(window)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((addr, 443))
    s.settimeout(2)
    s.send(bytes([0xC0, 0, 0, 0, 1, 8]) + os.urandom(1194))  # not Dust: handed over
    s.recv(2048)
    s.settimeout(0.05)
    first = 0xC0 if size >= 1200 else 0x40
    payload = bytes([first]) + os.urandom(size - 1)
    got = lost = 0
    for _ in range(window):
        s.send(payload)
    end = time.monotonic() + secs
    while time.monotonic() < end:
        try:
            s.recv(2048)
            got += 1
            s.send(payload)
        except socket.timeout:  # lost in flight: fill the window again
            lost += 1
            for _ in range(window):
                s.send(payload)
    print("%d %.0f %d" % (got, got / secs, lost))

{"server": server, "client": client}[sys.argv[1]](*sys.argv[2:])
EOF

# echo_up LOG: the echo server on 192.168.62.1:443 in $PFX-gw, once it listens
echo_up() {
	bg ECHO $PFX-gw "$1" /usr/bin/python3 "$W/echo.py" server 192.168.62.1
	wait_for 10 n $PFX-gw sh -c "ss -lunH 'sport = :443' | grep -q ." ||
		fail "the echo server did not start (its log: $1)"
}

# one exchange at each size: "SIZE GOT PPS REFILLS"
exchange() {
	local size
	for size in 64 1200; do
		echo "$size $(n $PFX-c /usr/bin/python3 "$W/echo.py" client 192.168.62.1 "$size" \
			"$SECS" "$WINDOW")"
	done
}

step "direct: the kernel's own stack on $PFX-g"
n $PFX-gw ip addr add 192.168.62.1/24 dev $PFX-g
echo_up "$W/echo-direct.log"
exchange >"$W/direct"
stop_pid "$ECHO"
n $PFX-gw ip addr del 192.168.62.1/24 dev $PFX-g

step "through dustgw's cover tap"
n $PFX-gw ip rule add iif $PFX-g blackhole
{
	gw_conf_head 192.168.62.1 4433 "quic_port = 443"
	printf 'queues = 1\ndelivery_framing = eth\n\n[quic]\ncover = tap\ncover_iface = %s\n' \
		"$PFX-cov"
	printf 'cover_rate = 100000000\ncover_prefix_rate = 100000000\ncover_learn_s = 0\n'
} >"$W/gw.conf"
echo "exception pps" >"$W/pw"
chmod 600 "$W/pw"
invites 192.168.62.1 443 --profile quic --cover-sni www.example.com --tunnel-net 10.60.0.0/24 \
	--count 1 --out-dir "$W/inv"
gw_bg GWPID $PFX-gw "$W/gw.log" "$PFX" 512 --config "$W/gw.conf"
cover_tap_up $PFX-gw $PFX-cov 192.168.62.1/24
echo_up "$W/echo-gw.log"
exchange >"$W/gw"
gw_stop "$GWPID" "$W/gw.log"
GWPID=

echo "exception path: a UDP echo through the cover tap against the kernel alone," \
	"$SECS s each, $WINDOW in flight, one flow"
printf '%-6s %-26s %-26s %s\n' size "direct (pps, refills)" "dustgw (pps, refills)" ratio
paste -d' ' "$W/direct" "$W/gw" | while read -r size dg dp dl _ gg gp gl; do
	printf '%-6s %-26s %-26s %s\n' "$size" "$dp ($dl)" "$gp ($gl)" \
		"$(/usr/bin/python3 -c "print('%.2f' % ($gp / $dp if $dp else 0))")"
done
grep -o "cover_in=[0-9]*\|cover_out=[0-9]*" "$W/gw.log" | tail -2 | tr '\n' ' '
echo
