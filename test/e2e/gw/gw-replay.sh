#!/bin/sh
# pcap replay: 200 clients (intros chained with first data, mixed sizes) plus
# forged, truncated, replayed, spoofed and foreign packets. The delivered
# cleartext must equal the manifest byte for byte and in order, every bad
# packet must be counted under its reason, and nothing may answer them: the
# only replies are one keepalive per intro and per client keepalive, plus
# one ARP reply and one ND advertisement.
. "$(dirname "$0")/lib.sh"

make_store 210
make_conf 1
sed -i 's/^ipv4 = 10.0.0.1/&\nipv6 = fd00::1/' gw.conf
"$PCAP" gen --store inv.store --key server.key --out in.pcap --manifest m.txt --clients 200 --packets 5 \
	--bad --ip6 fd00::1 --v6-clients 20 --state clients.bin
run_gw replay "rx_pcap=in.pcap,tx_pcap=out.pcap" "tx_pcap=clear.pcap" 1
"$PCAP" check --unordered --manifest m.txt --stats replay.stats --delivered clear.pcap ||
	fail "delivered cleartext or counters differ from the manifest"
# Replies: decode every datagram sent toward a client with its own session.
"$PCAP" decode --state clients.bin --in out.pcap >decode.txt ||
	{ cat decode.txt; fail "a reply did not open with the client's session"; }
cat decode.txt
grep -q "201 keepalives (200 clients got one), 0 failed to open, 2 other frames" decode.txt ||
	fail "expected exactly 201 keepalives, one ARP reply and one ND advertisement"
tcpdump -nr out.pcap arp 2>/dev/null | grep -q "Reply 10.0.0.1 is-at" ||
	fail "no ARP reply for 10.0.0.1"
tcpdump -nr out.pcap icmp6 2>/dev/null | grep -q "neighbor advertisement, tgt is fd00::1" ||
	fail "no neighbour advertisement for fd00::1"
grep -q "intro_ok=200" replay.summary || fail "summary lacks intro_ok=200"
echo "PASS gw-replay"
