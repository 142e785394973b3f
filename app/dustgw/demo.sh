#!/bin/sh
# The bundled-default demo: in a fresh directory, make a server identity, 200
# invitations and a capture of their clients' traffic (plus hostile packets),
# replay it through dustgw with net_pcap ports, print the gateway's summary,
# check the cleartext against the capture's manifest and say where it went.
# Then replay the bundled capture recorded in 2020 (test/data/replay-2020) in
# replay mode: the capture's clock, the store read-only.
# usage: app/dustgw/demo.sh [BUILD_DIR] [OUT_DIR]   (OUT_DIR: default a new temp dir)
set -eu

BUILD=$(realpath "${1:-build}")
OLD=$(realpath "$(dirname "$0")/../../test/data/replay-2020")
OUT=${2:-$(mktemp -d /tmp/dustgw-demo.XXXXXX)}
CLIENTS=${DEMO_CLIENTS:-200}
for exe in app/dustgw/dustgw tools/dust-pcap/dust-pcap tools/dust-invite/dust-invite; do
	[ -x "$BUILD/$exe" ] || { echo "demo: $BUILD/$exe missing: build first (ninja -C $BUILD)" >&2; exit 1; }
done
mkdir -p "$OUT"
cd "$OUT"
PREFIX=dustgw-demo-$$
trap 'rm -rf "/var/run/dpdk/$PREFIX" "/var/run/dpdk/$PREFIX-old"' EXIT

echo "== identity and $CLIENTS invitations (store only, no passwords) in $OUT"
"$BUILD/tools/dust-invite/dust-invite" keygen --out server.key
"$BUILD/tools/dust-invite/dust-invite" create --store invites.store --key server.key \
	--server 10.0.0.1 --port 4433 --tunnel-net 10.9.0.0/16 --count "$CLIENTS" --store-only
cat >dustgw.conf <<CONF
; demo configuration (see config/dustgw.conf for every key)
[gateway]
ipv4 = 10.0.0.1
udp_port = 4433
key_file = server.key
store = invites.store
[ports]
net = net_pcap0
delivery = net_pcap1
queues = 1
[runtime]
exit_on_idle_ms = 700
CONF

echo "== capture: $CLIENTS clients, intros chained with data, 5 packets each, plus bad packets"
"$BUILD/tools/dust-pcap/dust-pcap" gen --store invites.store --key server.key --out clients.pcap \
	--manifest manifest.txt --packets 5 --bad --state clients.state

echo "== dustgw, pcap replay (exits 700 ms after the capture drained)"
"$BUILD/app/dustgw/dustgw" -l 0,1 --no-huge -m 512 --no-pci --file-prefix "$PREFIX" \
	--log-level=lib.eal:warning \
	--vdev net_pcap0,rx_pcap=clients.pcap,tx_pcap=replies.pcap \
	--vdev net_pcap1,tx_pcap=cleartext.pcap \
	-- --config dustgw.conf --stats-out stats.txt

echo "== check against the manifest"
# --unordered: each client's packets in order (a first use's are held until its binding
# is on disk, so other clients' packets may pass them)
"$BUILD/tools/dust-pcap/dust-pcap" check --manifest manifest.txt --stats stats.txt \
	--delivered cleartext.pcap --unordered
"$BUILD/tools/dust-pcap/dust-pcap" decode --state clients.state --in replies.pcap

echo "== the bundled capture recorded on 2020-03-02, replayed with --replay"
mkdir -p replay-2020
cp "$OLD"/test-only-* "$OLD"/clients.pcap "$OLD"/manifest.txt "$OLD"/dustgw.conf replay-2020/
chmod 600 replay-2020/test-only-*
(cd replay-2020 && sha256sum test-only-* >files.sha256 &&
	"$BUILD/app/dustgw/dustgw" -l 0,1 --no-huge -m 512 --no-pci --file-prefix "$PREFIX-old" \
		--log-level=lib.eal:warning \
		--vdev net_pcap0,rx_pcap=clients.pcap,tx_pcap=replies.pcap \
		--vdev net_pcap1,tx_pcap=cleartext.pcap \
		-- --config dustgw.conf --replay --stats-out stats.txt &&
	"$BUILD/tools/dust-pcap/dust-pcap" check --manifest manifest.txt --stats stats.txt \
		--delivered cleartext.pcap &&
	sha256sum -c --quiet files.sha256 && echo "store, journal and key unchanged")
echo
echo "cleartext IP packets (Ethernet-framed): $OUT/cleartext.pcap"
echo "replies to clients (keepalives, ARP):   $OUT/replies.pcap"
echo "input capture and its manifest:         $OUT/clients.pcap, $OUT/manifest.txt"
echo "look: tcpdump -nr $OUT/cleartext.pcap | head"
