#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Does the project's QUIC wire check (quic-wire.sh) accept real QUIC, and
# still refuse what is not? In a namespace of its own: caddy (Debian's,
# quic-go, tls internal, HTTP/3) serves a small site as HOST on loopback;
# headless Debian Chromium loads https://HOST/ over QUIC (forced, with
# the SPKI pin of caddy's internal certificate); the capture must pass
# quic-wire.sh. A capture of random UDP datagrams to port 443 must fail it.
#
# usage: quic-wire-real.sh WORKDIR ARTIFACTS
set -e
set -o pipefail

W=$1
ART=$2
HERE=$(dirname "$(realpath "$0")")
PFX=qr$$
NS=$PFX-ns
HOST=www.example.com
. "$HERE/common.sh"

DUMP=
cleanup() {
	[[ -n $DUMP ]] && stop_pid "$DUMP"
	common_cleanup
}
trap cleanup EXIT

need_root_tools caddy chromium tcpdump tshark ndpiReader openssl /usr/bin/python3
rm -rf "$W"
mkdir -p "$W/site" "$ART"
printf '<!doctype html><title>%s</title><p>A small static site.\n' $HOST >"$W/site/index.html"
ns_add $NS

step "caddy on 127.0.0.1:443 as $HOST"
caddy_start CADDY $NS 127.0.0.1 $HOST "$W/site" "$W/caddy"

step "headless Chromium loads https://$HOST/ over QUIC"
bg DUMP $NS "$W/tcpdump.log" tcpdump -i lo -U -n -Z root -w "$ART/chromium-caddy.pcap" udp port 443
wait_for 10 grep -q "listening on" "$W/tcpdump.log" || fail "tcpdump did not start"
n $NS timeout 90 chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
	--user-data-dir="$W/chromium" --enable-quic --origin-to-force-quic-on=$HOST:443 \
	--host-resolver-rules="MAP $HOST 127.0.0.1" --ignore-certificate-errors-spki-list="$PIN" \
	--dump-dom "https://$HOST/" >"$W/dom.html" 2>"$W/chromium.log" ||
	{ tail -20 "$W/chromium.log"; fail "chromium did not load the page"; }
grep -q "A small static site" "$W/dom.html" || { tail -20 "$W/chromium.log"; fail "not the site's page"; }
sleep 1 # the capture's last frames
stop_pid "$DUMP"
DUMP=
"$HERE/quic-wire.sh" "$ART/chromium-caddy.pcap" 443 $HOST 1 none ||
	fail "quic-wire.sh refuses a real Chromium -> caddy capture"

step "a capture that is not QUIC must fail"
bg DUMP $NS "$W/tcpdump2.log" tcpdump -i lo -U -n -Z root -w "$W/random.pcap" udp port 443
wait_for 10 grep -q "listening on" "$W/tcpdump2.log" || fail "tcpdump did not start"
n $NS /usr/bin/python3 -c '
import os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(20):
    s.sendto(os.urandom(1200 - 10 * i), ("127.0.0.1", 443))'
sleep 1
stop_pid "$DUMP"
DUMP=
if "$HERE/quic-wire.sh" "$W/random.pcap" 443 $HOST 1 none; then
	fail "quic-wire.sh passes random datagrams"
fi
echo "PASS"
