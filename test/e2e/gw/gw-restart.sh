#!/bin/sh
# Restart: invitations consumed in one gateway run stay consumed in the
# next. Run 1 binds 40 invitations to their clients' keys. Run 2 (a new
# process, same store): the first 5 clients come back with a different key
# (intro_wrong_key, their data refused), the other 35 with their own key
# (accepted, not a first use, data delivered).
. "$(dirname "$0")/lib.sh"

make_store 40
make_conf 1
"$PCAP" gen --store inv.store --key server.key --out in1.pcap --manifest m1.txt --packets 3 --state c1.bin
run_gw run1 "rx_pcap=in1.pcap,tx_pcap=out1.pcap" "tx_pcap=clear1.pcap" 1
"$PCAP" check --unordered --manifest m1.txt --stats run1.stats --delivered clear1.pcap || fail "run 1"
grep -q "intro_first_use=40" run1.summary || fail "run 1 did not bind 40 invitations"
[ -s inv.store.bind ] || fail "no bindings journal after run 1"

"$PCAP" gen --store inv.store --key server.key --out in2.pcap --manifest m2.txt --packets 3 \
	--reuse-state c1.bin --wrong-key 5 --state c2.bin
run_gw run2 "rx_pcap=in2.pcap,tx_pcap=out2.pcap" "tx_pcap=clear2.pcap" 1
"$PCAP" check --unordered --manifest m2.txt --stats run2.stats --delivered clear2.pcap || fail "run 2"
grep -q "intro_wrong_key *5" run2.summary || fail "expected 5 intro_wrong_key drops"
grep -q "intro_ok=35 intro_first_use=0" run2.summary || fail "bound clients not re-admitted"
echo "PASS gw-restart"
