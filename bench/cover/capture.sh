#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Capture real HTTP/3 page loads: Debian's headless Chromium against Debian's
# caddy (quic-go, tls internal) serving a generated 30-page site (HTML, CSS,
# scripts, images of varied sizes), in a network namespace of its own, on
# loopback. Each load is a fresh browser profile (a fresh QUIC connection,
# from a fresh source port). The capture is the cover's traffic: the size
# model of SPEC §12.4 is drawn from such captures (size-model.py), and the
# classifier (classify.py) takes it as the real side.
#
# usage: capture.sh OUT.pcap [LOADS]     (root; LOADS default 20)
set -e
set -o pipefail

OUT=$(realpath -m "$1")
LOADS=${2:-20}
HERE=$(dirname "$(realpath "$0")")
. "$HERE/../../test/e2e/netns/common.sh"
. "$HERE/load.sh"
W=$(mktemp -d /tmp/dust-cover-capture.XXXXXX)
PFX=cc$$
NS=$PFX-ns
HOST=www.example.com
DUMP=
trap 'common_cleanup "$DUMP"; rm -rf "$W"' EXIT

need_root_tools caddy chromium tcpdump openssl /usr/bin/python3
"$HERE/mksite.py" "$W/site" 30
ns_add $NS
caddy_start CADDY $NS 127.0.0.1 $HOST "$W/site" "$W/caddy"

tcpdump_bg DUMP $NS "$W/tcpdump.log" -i lo -U -n -Z root -w "$OUT" udp port 443
ok=0
for i in $(seq 1 "$LOADS"); do
	load_page $NS 127.0.0.1 $(((i - 1) % 30 + 1)) --enable-quic \
		--origin-to-force-quic-on=$HOST:443 && ok=$((ok + 1))
	printf '\rcapture: %d/%d loads' "$i" "$LOADS" >&2
done
loads_done capture
