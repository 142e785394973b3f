#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What caddy (Debian's, quic-go, tls internal) resends when a client never
# confirms its first flight (SPEC §12.3): in a network namespace of its own,
# caddy on 127.0.0.1:443 gets the first Chromium 156 hello of
# test/data/chromium156-quic-initials.pcap, then either nothing more
# ("silent") or Chromium's own resends and close at their captured times
# ("resends": +0.3, +0.9, +2.1, +4.0 s). Prints each datagram of the
# exchange as tshark reads it: time, direction, UDP payload, packet types
# (0 Initial, 2 Handshake; none: a short header), their lengths, and the
# frames tshark reads in the Initials (decrypted with the public keys of
# the client's DCID: 0 PADDING, 2 ACK, 6 CRYPTO).
# usage: bench/cover/caddy-resends.sh silent|resends   (root; caddy, tshark, tcpdump)
set -euo pipefail
MODE=${1:-silent}
[[ $MODE == silent || $MODE == resends ]] || { echo "usage: $0 silent|resends" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
PCAP=$HERE/../../test/data/chromium156-quic-initials.pcap
NS=caddyrs$$
W=$(mktemp -d /tmp/caddy-resends.XXXXXX)
cleanup() {
	[[ -n ${TD:-} ]] && kill "$TD" 2>/dev/null
	[[ -n ${CP:-} ]] && kill "$CP" 2>/dev/null
	wait 2>/dev/null || true
	ip netns del $NS 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
ip netns add $NS
ip -n $NS link set lo up
mkdir -p "$W/site" "$W/c"
echo '<!doctype html><title>x</title>' >"$W/site/index.html"
cat >"$W/c/Caddyfile" <<C
{
	admin off
	skip_install_trust
	auto_https disable_redirects
}
www.example.com, 127.0.0.1 {
	bind 127.0.0.1
	tls internal
	root * $W/site
	file_server
}
C
ip netns exec $NS env HOME="$W/c" XDG_DATA_HOME="$W/c/data" XDG_CONFIG_HOME="$W/c/config" \
	caddy run --config "$W/c/Caddyfile" --adapter caddyfile >"$W/caddy.log" 2>&1 &
CP=$!
for _ in $(seq 50); do
	ip netns exec $NS ss -lnuH 'sport = :443' | grep -q . && break
	sleep 0.2
done
# the captured connection's datagrams (the hello, 4, 6, 8, the close) and their times
python3 - "$PCAP" "$W" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
le = d[:4] == b"\xd4\xc3\xb2\xa1"
link = struct.unpack("<I" if le else ">I", d[20:24])[0]
off, flows = 24, {}
while off < len(d):
    ts, tu, cl, _ = struct.unpack("<IIII" if le else ">IIII", d[off:off + 16])
    p = d[off + 16:off + 16 + cl]
    off += 16 + cl
    p = p[14:] if link == 1 else p[16:] if link == 113 else p
    ihl = (p[0] & 15) * 4
    sport = struct.unpack(">H", p[ihl:ihl + 2])[0]
    flows.setdefault(sport, []).append((ts + tu / 1e6, p[ihl + 8:]))
dgs = max(flows.values(), key=len)
for k, (t, b) in enumerate(dgs):
    open("%s/d-%d.bin" % (sys.argv[2], k), "wb").write(b)
open(sys.argv[2] + "/times", "w").write(" ".join("%.3f" % (t - dgs[0][0]) for t, _ in dgs))
PY
ip netns exec $NS tcpdump -i lo -U --immediate-mode -w "$W/x.pcap" udp port 443 2>/dev/null &
TD=$!
sleep 1
ip netns exec $NS python3 - "$W" "$MODE" <<'PY'
import socket, sys, time
w, mode = sys.argv[1], sys.argv[2]
at = [float(x) for x in open(w + "/times").read().split()]
at[1] = max(at[1], 0.005)
n = 2 if mode == "silent" else len(at)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
t0 = time.monotonic()
for k in range(n):
    while time.monotonic() - t0 < at[k]:
        time.sleep(0.001)
    s.sendto(open("%s/d-%d.bin" % (w, k), "rb").read(), ("127.0.0.1", 443))
time.sleep(max(0, 6 - (time.monotonic() - t0)))
PY
sleep 0.5
kill "$TD"
wait "$TD" 2>/dev/null || true
TD=
echo "# time  from->to  udp_payload  packet_types  packet_lengths  initial_frames  ($MODE)"
tshark -r "$W/x.pcap" -T fields -e frame.time_relative -e udp.srcport -e udp.dstport \
	-e udp.length -e quic.long.packet_type -e quic.packet_length -e quic.frame_type 2>/dev/null |
	awk -F'\t' '{ printf "%8.3f %5s->%-5s %5d  %-6s %-9s %s\n", $1, $2, $3, $4 - 8,
		$5 == "" ? "short" : $5, $6, $5 ~ /^0/ ? $7 : "" }'
