#!/bin/sh
# Regenerates this bundle (normally never needed: it is committed as made).
# A gateway that ran on 2020-03-01 bound 8 invitations; its operator recorded
# the clients' traffic on 2020-03-02: the 8 coming back plus 2 new ones.
# Everything is made under faketime, so the files carry those dates.
# usage: test/data/replay-2020/make.sh BUILD_DIR   (rewrites the files here)
set -eu
B=$(realpath "$1")
HERE=$(dirname "$(realpath "$0")")
TMP=$(mktemp -d /tmp/replay-2020.XXXXXX)
PREFIX=replay-2020-make-$$
trap 'rm -rf "$TMP" "/var/run/dpdk/$PREFIX"' EXIT
cd "$TMP"
DAY1='2020-03-01 12:00:00'
DAY2='2020-03-02 09:30:00'
faketime "$DAY1" "$B/tools/dust-invite/dust-invite" keygen --out test-only-server.key >/dev/null
faketime "$DAY1" "$B/tools/dust-invite/dust-invite" create --store test-only-invites.store \
	--key test-only-server.key --server 10.0.0.1 --port 4433 --tunnel-net 10.9.0.0/16 \
	--count 12 --store-only >/dev/null
faketime "$DAY1" "$B/tools/dust-pcap/dust-pcap" gen --store test-only-invites.store --key test-only-server.key \
	--out day1.pcap --manifest day1.txt --clients 8 --packets 2 --state day1.state >/dev/null
cp "$HERE/dustgw.conf" .
# the day-1 gateway (wall clock = DAY1) binds the 8 invitations in the journal
faketime "$DAY1" "$B/app/dustgw/dustgw" -l 0,1 --no-huge -m 512 --no-pci \
	--file-prefix "$PREFIX" --log-level=lib.eal:warning \
	--vdev net_pcap0,rx_pcap=day1.pcap,tx_pcap=/dev/null --vdev net_pcap1,tx_pcap=/dev/null \
	-- --config dustgw.conf --exit-on-idle 500 >/dev/null
faketime "$DAY2" "$B/tools/dust-pcap/dust-pcap" gen --store test-only-invites.store --key test-only-server.key \
	--out clients.pcap --manifest manifest.txt --clients 10 --packets 2 \
	--reuse-state day1.state >/dev/null
cp test-only-server.key test-only-invites.store test-only-invites.store.bind clients.pcap \
	manifest.txt "$HERE/"
echo "replay-2020: bundle rewritten in $HERE"
