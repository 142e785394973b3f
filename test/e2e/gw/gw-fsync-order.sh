#!/bin/sh
# SPEC §5 step 9 and §7: a first use's binding is fsynced before the intro is
# answered. dustgw runs under fsync_shim.so (LD_PRELOAD: fdatasync, fsync and
# net_pcap's pcap_dump watched): every datagram the gateway sends from its
# port must be covered by bindings already fsynced when it left. 50 first
# uses, each answered once, and nothing else sent from the port (slack 0):
# the n-th datagram may leave only once n bindings are on disk.
# usage: gw-fsync-order.sh DUSTGW DUST_PCAP DUST_INVITE WORKDIR SHIM
. "$(dirname "$0")/lib.sh"
SHIM=$(realpath "$5")

make_store 50
make_conf 1
"$PCAP" gen --store inv.store --key server.key --out in.pcap --manifest m.txt --clients 50 --packets 2 \
	--state clients.bin
rc=0
# an ASan build (.ci/sanitize.sh) would refuse a preload ahead of its runtime
timeout 120 env LD_PRELOAD="$SHIM" \
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	FSYNC_SHIM_OUT="$WORK/shim.txt" FSYNC_SHIM_PORT=4433 FSYNC_SHIM_SLACK=0 \
	"$DUSTGW" --lcores "$(lcores 1)" --no-huge -m 512 --no-pci --file-prefix "$PREFIX" \
	--vdev "net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap" \
	--vdev "net_pcap1,tx_pcap=clear.pcap" -- --config gw.conf --stats-out order.stats \
	>order.summary 2>order.log || rc=$?
[ $rc = 0 ] || { cat order.log order.summary >&2; fail "dustgw exited with $rc"; }
[ -s shim.txt ] || fail "the shim wrote no tallies (not preloaded?)"
cat shim.txt
grep -q "intro_ok=50" order.summary || { cat order.summary; fail "summary lacks intro_ok=50"; }
t() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" shim.txt; }
[ "$(t udp_tx)" = 50 ] || fail "$(t udp_tx) datagrams sent, want the 50 answers"
[ "$(t synced_bindings)" = 50 ] || fail "$(t synced_bindings) bindings fsynced, want 50"
[ "$(t violations)" = 0 ] ||
	fail "datagram $(t first_bad_tx) left before the bindings it answers were fsynced"
echo "PASS gw-fsync-order: $(t udp_tx) datagrams sent, each after its binding's fsync"
