#!/bin/sh
# Reverse path: cleartext injected on the delivery side (after the clients'
# intros, delivery_hold_ms) comes out sealed toward the right clients, and
# the library, client side, decodes every packet back byte for byte.
# Packets for an unused invitation and an unknown address are counted.
# Ten of the clients reach the gateway over IPv6 (outer IPv6 both ways).
. "$(dirname "$0")/lib.sh"

make_store 60
make_conf 1 300
# The capture's clients were written offline (dust-pcap gen): they never see
# the gateway's answer, so they cannot prove their addresses (SPEC §9.1).
printf '[sessions]\npath_validation = no\n' >>gw.conf
sed -i 's/^ipv4 = 10.0.0.1/&\nipv6 = fd00::1/' gw.conf
"$PCAP" gen --store inv.store --key server.key --out in.pcap --manifest m.txt --clients 50 --packets 2 \
	--ip6 fd00::1 --v6-clients 10 --state clients.bin
"$PCAP" inject --store inv.store --key server.key --state clients.bin --out inj.pcap --manifest inj.txt \
	--packets 6
run_gw rev "rx_pcap=in.pcap,tx_pcap=out.pcap" "rx_pcap=inj.pcap,tx_pcap=clear.pcap" 1
"$PCAP" check --unordered --manifest m.txt --manifest inj.txt --stats rev.stats --delivered clear.pcap ||
	fail "counters or delivered cleartext differ"
"$PCAP" decode --state clients.bin --in out.pcap --manifest inj.txt >decode.txt ||
	{ cat decode.txt; fail "clients could not decode the encoded cleartext"; }
cat decode.txt
grep -q "300 of 300 expected packets decoded byte for byte" decode.txt || fail "not all 300 decoded"
echo "PASS gw-reverse"
