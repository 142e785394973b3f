#!/bin/sh
# Two worker lcores, two queues on each port (net_pcap with two rx_pcap
# files: a client's traffic all lands in one queue, as RSS on its 4-tuple
# would do). Every client is decoded on exactly one lcore, none lost, none
# duplicated; the reverse path crosses lcores: cleartext for a client owned
# by one worker arrives on the other worker's delivery queue. Ten clients
# then roam: they re-introduce from a new address, so their old sessions
# are evicted (publish, evict, RCU-deferred release) and the replies must
# follow them to the new address. (Roaming across lcores: gw-lcores.)
. "$(dirname "$0")/lib.sh"

make_store 210
make_conf 2 300
# The capture's clients were written offline (dust-pcap gen): they never see
# the gateway's answer, so they cannot prove their addresses (SPEC §9.1).
printf '[sessions]\npath_validation = no\n' >>gw.conf
"$PCAP" gen --store inv.store --key server.key --out in0.pcap --out in1.pcap --manifest m.txt --clients 200 \
	--packets 4 --roam 10 --bad --state clients.bin
"$PCAP" inject --store inv.store --key server.key --state clients.bin --out inj0.pcap --out inj1.pcap \
	--manifest inj.txt --packets 3
run_gw mc "rx_pcap=in0.pcap,rx_pcap=in1.pcap,tx_pcap=out0.pcap,tx_pcap=out1.pcap" \
	"rx_pcap=inj0.pcap,rx_pcap=inj1.pcap,tx_pcap=clear0.pcap,tx_pcap=clear1.pcap" 2
"$PCAP" check --manifest m.txt --manifest inj.txt --stats mc.stats \
	--delivered clear0.pcap --delivered clear1.pcap --unordered >check.txt ||
	{ cat check.txt; fail "delivered cleartext or counters differ"; }
cat check.txt
grep -q "clients seen on more than one output: 0" check.txt || fail "a client crossed lcores"
# Both workers did real work, and each owns about half the sessions.
for w in 0 1; do
	s=$(awk -v k="w$w.sessions" '$1 == k { print $2 }' mc.stats)
	[ "$s" -eq 100 ] || fail "worker $w holds $s sessions, expected 100"
	e=$(awk -v k="w$w.ctr.encoded" '$1 == k { print $2 }' mc.stats)
	[ "$e" -gt 0 ] || fail "worker $w encoded nothing"
done
"$PCAP" decode --state clients.bin --in out0.pcap --in out1.pcap --manifest inj.txt ||
	fail "clients could not decode what the gateway encoded"
echo "PASS gw-multicore"
