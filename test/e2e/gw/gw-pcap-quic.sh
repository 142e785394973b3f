#!/bin/sh
# dust-pcap gen --profile quic replayed through dustgw: 20 quic-profile
# clients send their QUIC Initials to quic_port 443, then 3 short-header data
# packets each under keys of dust-pcap's own server side. The gateway must
# accept and answer every Initial (one answer each, from port 443) and drop
# the data it cannot know the keys of as quic_no_session, delivering nothing.
# Its --wire capture keeps the quic profile's size bounds.
. "$(dirname "$0")/lib.sh"

"$INVITE" keygen --out server.key >/dev/null
"$INVITE" create --store inv.store --key server.key --server 10.0.0.1 --port 443 \
	--tunnel-net 10.9.0.0/16 --count 20 --store-only --profile quic \
	--cover-sni www.example.com >/dev/null
make_conf 1
sed -i 's/^udp_port = 4433/&\nquic_port = 443/' gw.conf
# the flight checked whole below: sent at once, not held for a PTO probe
# that a replayed client never sends (the held form is checked at the end)
printf '[quic]\nanswer_hold = off\n' >>gw.conf
cp inv.store held.store
"$PCAP" gen --profile quic --store inv.store --key server.key --out in.pcap \
	--manifest m.txt --clients 20 --packets 4 --wire wire.pcap
# the store is only read: nothing is bound before the gateway runs
[ ! -s inv.store.bind ] || fail "dust-pcap gen wrote the store's binding journal"
run_gw quic "rx_pcap=in.pcap,tx_pcap=out.pcap" "tx_pcap=clear.pcap" 1
"$PCAP" check --manifest m.txt --stats quic.stats --delivered clear.pcap ||
	fail "counters differ from the manifest"
# each first flight: a 37-byte ACK-only Initial, the cover server's 1252 bytes, then a
# 105..120-byte tail, and after a tail of 124 bytes or less a 24-byte 1-RTT, on its own
# or (in a third of the flights) coalesced behind the tail: a 129..144-byte datagram
# (SPEC §12.3). No client here confirms (its keys are dust-pcap's): the
# PTO resends the gateway counted are, in turn, the Initial alone twice
# (1252 bytes each) and the Handshake packet alone (1121 bytes, as quic-go's)
# with a tail, no ACK.
tcpdump -q -nr out.pcap 'udp src port 443' 2>/dev/null |
	sed -n 's/.*UDP, length \([0-9]*\)$/\1/p' >answers.txt
k=$(sed -n 's/^ctr.quic_rtx_pto //p' quic.stats)
khs=$(sed -n 's/^ctr.quic_rtx_pto_hs //p' quic.stats)
n=$(grep -cx 1252 answers.txt)
[ "$n" = $((20 + 2 * (k - khs))) ] ||
	fail "expected $((20 + 2 * (k - khs))) datagrams of 1252 bytes from port 443 ($k PTO resends, $khs of the Handshake), saw $n"
n=$(grep -cx 1121 answers.txt)
[ "$n" = "$khs" ] || fail "expected $khs Handshake packets of 1121 bytes alone ($khs PTO resends), saw $n"
# quic-go's 24-byte 1-RTT right after a first flight's tail of 124 bytes or
# less (the default shape), after no other datagram, or coalesced behind a first
# flight's tail: "WANT SEEN MISPLACED COALESCED"
set -- $(awk '
	{ first = p2 == 37 && p1 == 1252 && $1 >= 105 && $1 <= 120
	  if ($1 == 24) { s++; if (!(pf && p1 <= 124)) bad++ }
	  if (first && $1 <= 124) w++
	  if ($1 >= 129 && $1 <= 144) { c++; if (!(p2 == 37 && p1 == 1252)) bad++ }
	  pf = first; p2 = p1; p1 = $1 }
	END { print w + 0, s + 0, bad + 0, c + 0 }' answers.txt)
want=$1 shorts=$2 misplaced=$3 coalesced=$4
[ "$shorts" = "$want" ] && [ "$misplaced" = 0 ] ||
	fail "expected a 24-byte 1-RTT after each of $want short first-flight tails, saw $shorts ($misplaced elsewhere)"
n=$(($(awk '$1 >= 105 && $1 <= 120' answers.txt | wc -l) + coalesced))
echo "first flights with the 1-RTT coalesced behind the tail: $coalesced of 20"
[ "$n" = $((20 + khs)) ] && [ "$(grep -cx 37 answers.txt)" = 20 ] &&
	[ "$(wc -l <answers.txt)" = $((60 + 2 * k + want)) ] ||
	fail "expected 20 ACKs of 37 bytes, $((20 + khs)) tails of 105..120 and $((60 + 2 * k + want)) datagrams from port 443"
n=$(tcpdump -nr wire.pcap udp 2>/dev/null | wc -l)
[ "$n" = 260 ] ||
	fail "expected 260 datagrams on the wire capture (each hello two Initials, each second flight two), saw $n"
# the client's second flight as Chromium 156's (SPEC §12.3): per connection, the
# datagrams after the server's 1252 bytes have the shape and sizes of the real
# loads' second flights
"$HERE/../netns/quic-second-flight.sh" "$HERE/../../data/chromium156-caddy-loads.pcap" 443 \
	wire.pcap 443 20 || fail "the second flight is not Chromium's"
# SPEC §12.4: no client datagram over 1250 bytes, no server one over 1252,
# Initials and first flights included; the mix's 1350-byte inner packets go
# at the inner MTU, so both bounds are reached exactly
largest() { # largest dst|src: the largest UDP payload toward / from port 443
	tcpdump -q -nr wire.pcap "udp $1 port 443" 2>/dev/null |
		sed -n 's/.*UDP, length \([0-9]*\)$/\1/p' | sort -n | tail -1
}
C=$(largest dst) S=$(largest src)
echo "gw-pcap-quic: largest datagram: client $C (bound 1250), server $S (bound 1252)"
[ "$C" = 1250 ] && [ "$S" = 1252 ] || fail "largest datagrams client $C, server $S: want 1250, 1252"
# a random-profile store is refused with a clear message
"$INVITE" create --store rnd.store --key server.key --server 10.0.0.1 --port 4433 \
	--tunnel-net 10.9.0.0/16 --count 1 --store-only >/dev/null
if "$PCAP" gen --profile quic --store rnd.store --key server.key --out x.pcap \
	--manifest x.txt 2>err.txt; then
	fail "gen --profile quic took a random-profile store"
fi
grep -q "not a quic one" err.txt || fail "unclear error: $(cat err.txt)"
# counts are checked whole ("3x" was 3, "x" 0)
if "$PCAP" gen --profile quic --store inv.store --key server.key --out x.pcap --manifest x.txt \
	--clients 3x 2>err.txt; then
	fail "gen took --clients 3x"
fi
grep -q -- "--clients '3x': want a whole number" err.txt || fail "unclear error: $(cat err.txt)"
# SPEC §12.3: by default the flight after its ACK-only Initial waits for
# the client's PTO probe; a replayed client sends none, so each answer goes
# 1 s after its ACK (the longest wait) on the worker's millisecond clock,
# read once a pass (at once is under 1 ms)
sed -i 's/^answer_hold = off$/answer_hold = cover/; s/^store = inv.store$/store = held.store/' gw.conf
run_gw held "rx_pcap=in.pcap,tx_pcap=held.pcap" "tx_pcap=held-clear.pcap" 1 >/dev/null
grep -qx "ctr.quic_held 20" held.stats || fail "held: want 20 flights held ($(grep quic_held held.stats))"
tcpdump -tt -q -nr held.pcap 'udp src port 443' 2>/dev/null | awk '
	{ split($5, a, "."); port = a[5]; len = $NF }
	len == 37 && !(port in ack) { ack[port] = $1 }
	len == 1252 && !(port in ans) { ans[port] = $1 }
	END { for (p in ack) { n++; if (p in ans) { d = ans[p] - ack[p]; if (d >= 0.950) ok++
	      if (!lo || d < lo) lo = d } }
	      printf "%d %d %.3f\n", n, ok, lo }' >held.txt
read -r n ok lo <held.txt
echo "held flights: $ok of $n answers 950 ms or more after their ACK (least $lo s)"
[ "$n" = 20 ] && [ "$ok" = 20 ] || fail "held: $ok of $n answers came 950 ms or more after their ACK"
echo "PASS gw-pcap-quic"
