#!/bin/sh
# A full session table refuses new intros with a counted reason instead of
# failing: 40 clients, room for 30. The 30 admitted are delivered in full;
# the 10 refused are counted as table_full (intro and data alike) and get
# no reply; their invitations stay unused (a later run could admit them).
. "$(dirname "$0")/lib.sh"

make_store 40
make_conf 1
sed -i 's/^\[runtime\]/[sessions]\nmax_per_lcore = 30\n&/' gw.conf
"$PCAP" gen --store inv.store --key server.key --out in.pcap --manifest m.txt --packets 3 --table-max 30 \
	--state clients.bin
run_gw full "rx_pcap=in.pcap,tx_pcap=out.pcap" "tx_pcap=clear.pcap" 1
"$PCAP" check --unordered --manifest m.txt --stats full.stats --delivered clear.pcap || fail "check"
grep -q "intro_first_use=30" full.summary || fail "expected 30 first uses"
"$PCAP" decode --state clients.bin --in out.pcap >decode.txt || { cat decode.txt; fail "decode"; }
cat decode.txt
grep -q "30 keepalives (30 clients got one)" decode.txt || fail "refused clients got a reply"
echo "PASS gw-full"
