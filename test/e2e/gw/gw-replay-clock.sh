#!/bin/sh
# Replay mode: a capture recorded 5 days ago (faketime), from invitations
# that expired 3 days ago, replays through dustgw --replay twice: every
# cleartext packet delivered byte for byte each time, identical counters,
# and the store, its journal and the key byte-identical afterwards. The same
# capture on the wall clock delivers nothing; a port without capture
# timestamps is refused with a clear error. Last, the bundled capture
# recorded in 2020 (test/data/replay-2020) replays with its manifest.
OLD_DATA=$(realpath "$(dirname "$0")/../../data/replay-2020")
. "$(dirname "$0")/lib.sh"

command -v faketime >/dev/null || fail "faketime missing (apt-get install faketime)"
# libfaketime is preloaded ahead of ASan's runtime in the sanitizer build: allow it.
OLD="env ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0 faketime -f -5d"
$OLD "$INVITE" keygen --out server.key >/dev/null
$OLD "$INVITE" create --store inv.store --key server.key --server 10.0.0.1 --port 4433 \
	--tunnel-net 10.9.0.0/16 --count 40 --expiry-days 2 --store-only >/dev/null
$OLD "$PCAP" gen --store inv.store --key server.key --out in.pcap --manifest m.txt --clients 30 --packets 5 \
	--bad --state clients.bin
make_conf 1
sha256sum inv.store inv.store.bind server.key >files.sha256

# run 1: [runtime] clock = capture; run 2: the same through --replay
cp gw.conf gw.real.conf
printf 'clock = capture\n' >>gw.conf
run_gw replay1 "rx_pcap=in.pcap,tx_pcap=out1.pcap" "tx_pcap=clear1.pcap" 1
"$PCAP" check --manifest m.txt --stats replay1.stats --delivered clear1.pcap ||
	fail "run 1: delivered cleartext or counters differ from the capture's manifest"
cp gw.real.conf gw.conf
timeout 120 "$DUSTGW" --lcores "$(lcores 1)" --no-huge -m 512 --no-pci --file-prefix "$PREFIX" \
	--vdev "net_pcap0,rx_pcap=in.pcap,tx_pcap=out2.pcap" --vdev "net_pcap1,tx_pcap=clear2.pcap" \
	-- --config gw.conf --replay --stats-out replay2.stats >replay2.summary 2>replay2.log ||
	{ cat replay2.log; fail "run 2 (--replay) failed"; }
"$PCAP" check --manifest m.txt --stats replay2.stats --delivered clear2.pcap ||
	fail "run 2: delivered cleartext or counters differ from the capture's manifest"
cmp replay1.stats replay2.stats || fail "the two replays' counters differ"
sha256sum -c --quiet files.sha256 || fail "a replay changed the store, its journal or the key"
grep -q "intro_ok=30 intro_first_use=30" replay2.summary || fail "expected 30 first-use intros"

# The wall clock: intro tags of an epoch 5 days old are unknown, nothing is delivered.
run_gw real "rx_pcap=in.pcap,tx_pcap=out3.pcap" "tx_pcap=clear3.pcap" 1
grep -q "^ctr.delivered 0$" real.stats || fail "the wall-clock run delivered packets"
grep -q "intro_ok=0 " real.summary || fail "the wall-clock run accepted intros"

# No capture timestamps: a clear refusal, not a silent wall-clock run.
rc=0
sed -i 's/net_pcap\([01]\)/net_null\1/' gw.conf
timeout 60 "$DUSTGW" --lcores "$(lcores 1)" --no-huge -m 512 --no-pci --file-prefix "$PREFIX" \
	--vdev net_null0 --vdev net_null1 -- --config gw.conf --replay \
	>null.summary 2>null.log || rc=$?
[ $rc != 0 ] || fail "--replay on a port without timestamps did not fail"
grep -q "gives no capture timestamps" null.log || { cat null.log; fail "no clear error"; }

# The bundled 2020 capture: 8 clients bound on 2020-03-01 come back, 2 new.
mkdir old && cd old
cp "$OLD_DATA"/test-only-* "$OLD_DATA"/clients.pcap "$OLD_DATA"/manifest.txt \
	"$OLD_DATA"/dustgw.conf .
chmod 600 test-only-*
cmp test-only-invites.store.bind "$OLD_DATA/test-only-invites.store.bind" ||
	fail "bundle copy differs"
timeout 120 "$DUSTGW" --lcores "$(lcores 1)" --no-huge -m 512 --no-pci --file-prefix "$PREFIX" \
	--vdev net_pcap0,rx_pcap=clients.pcap,tx_pcap=out.pcap \
	--vdev net_pcap1,tx_pcap=clear.pcap -- --config dustgw.conf --replay \
	--stats-out old.stats >old.summary 2>old.log || { cat old.log; fail "bundled replay failed"; }
"$PCAP" check --manifest manifest.txt --stats old.stats --delivered clear.pcap ||
	fail "the bundled capture did not replay as its manifest says"
grep -q "intro_ok=10 intro_first_use=2" old.summary || fail "expected 8 bound and 2 new clients"
for f in test-only-server.key test-only-invites.store test-only-invites.store.bind; do
	cmp "$f" "$OLD_DATA/$f" || fail "the bundled replay changed $f"
done
echo "PASS gw-replay-clock"
