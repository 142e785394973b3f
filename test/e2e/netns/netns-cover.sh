#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The cover server behind the quic port ([quic] cover = tap, SPEC §12.5):
# caddy (Debian's, quic-go, tls internal, HTTP/3 on) listens on the
# gateway's address through dustgw's exception path, and a prober cannot
# tell that address from a caddy reached directly.
#
#  ns $P-c0 dust-client (quic) 192.168.77.11 ==+   ns $P-wire: bridge
#  ns $P-p  prober             192.168.77.12 ==+   (capture: cover-wire.pcap)
#  ns $P-fl flooder            192.168.77.13 ==+
#  ns $P-b3 Chromium, HTTP/3   192.168.77.14 ==+
#  ns $P-bt Chromium, TCP      192.168.77.15 ==+
#  ns $P-d  caddy, directly    192.168.77.2  ==+
#  ns $P-gw dustgw: net_af_packet on $P-g ======+ (192.168.77.1, quic 443)
#           delivery net_tap $P-tap 10.9.0.1/24 (the tunnel's far end)
#           cover    net_tap $P-cov 192.168.77.1/24, caddy behind it
#
# Checks, each against the gateway's address and the direct caddy in the
# same run: an unknown-version long header (Version Negotiation), 1200
# random bytes, a random short header, a Dust client's Initial replayed
# from a new port (caddy's flight), TCP 443 with an HTTPS GET: the answers
# match in count and packet types. Headless Chromium loads the site at the
# gateway's address over HTTP/3 (QUIC forced, caddy's certificate pinned),
# and quic-wire.sh passes that capture, then over TCP. Meanwhile the quic Dust client pings
# through the tunnel and none of its datagrams reaches the cover tap. Then
# a flood of non-Dust Initials and TCP SYNs over the rate limits: every
# frame counted (handed over or rate-dropped), the Dust session still flows.
# The first flight's shape (SPEC §12.5): dustgw is configured with one unlike
# caddy's (answer 1240 B, tail 300..320 B, no ACK first) and learns caddy's
# from behind the tap every COVER_LEARN_S seconds (default 2; 0 turns
# learning off, and the test fails): the learned shape is what caddy sent
# the learner's hellos (the tap's capture, read by cover-probe.py), its
# answer size what the direct caddy sends the same hellos over the wire;
# the Dust client's first flight on the wire has that shape; nothing of the
# learner's address reaches the wire.
#
# usage: netns-cover.sh DUSTGW DUST_CLIENT DUST_INVITE WORKDIR ARTIFACTS DUST_PCAP
set -e
set -o pipefail
. "$(dirname "$0")/common.sh"

abspath DUSTGW "$1" CLIENT "$2" INVITE "$3" PCAP "$6"
W=$4
ART=$5
PROBE=$(dirname "$(realpath "$0")")/cover-probe.py
PFX=dc$$
WIRE=$PFX-wire
GW=$PFX-gw
GWADDR=192.168.77.1
DIRADDR=192.168.77.2
CADDR=192.168.77.11
PADDR=192.168.77.12
FADDR=192.168.77.13
B3ADDR=192.168.77.14
BTADDR=192.168.77.15
QPORT=443
COVER=www.example.com
LEARNADDR=192.168.77.250 # the learner's probe address: no host has it
LEARN_S=${COVER_LEARN_S:-2}

TCPDUMP=
COVDUMP=
trap 'common_cleanup "$TCPDUMP" "$COVDUMP"' EXIT

need_root_tools caddy chromium curl ethtool openssl ping tcpdump tshark ndpiReader /usr/bin/python3
fresh_work "correct horse battery staple" "$ART"
RESULTS=$ART/cover-results.txt
: >"$RESULTS"

step "server key and a quic invitation"
"$INVITE" keygen --out "$W/gw.key" >/dev/null
invites $GWADDR $QPORT --profile quic --cover-sni $COVER --tunnel-net 10.9.0.0/24 \
	--out-dir "$W/qinv" --count 2
INV=$(ls "$W"/qinv/invite-*.txt | head -1)
# the second invitation's hello, made now and never confirmed (the resends step)
"$PCAP" gen --profile quic --store "$W/store" --key "$W/gw.key" --clients 2 --packets 1 \
	--out "$W/gen.pcap" --manifest "$W/gen.txt" >/dev/null
"$PROBE" hellos-any "$W/gen.pcap" 2 "$W/gen-hello"

step "namespaces and links"
wire_bridge $WIRE $PFX-br
wire_ns() { # wire_ns NS IFACE ADDR: NS on the bridge with ADDR/24
	ns_add "$1"
	ip link add "$2" netns "$1" type veth peer name "$2w" netns $WIRE
	n $WIRE ip link set "$2w" master $PFX-br up
	noipv6 $WIRE "$2w"
	noipv6 "$1" "$2"
	[[ -z $3 ]] || n "$1" ip addr add "$3/24" dev "$2"
	# no segments over the MTU on this wire (a veth's TSO would hand af_packet
	# 2000-byte TCP frames that no real wire carries)
	n "$1" ethtool -K "$2" tso off gso off >/dev/null
	n "$1" ip link set "$2" up
}
wire_ns $GW $PFX-g ""
wire_ns $PFX-d $PFX-d $DIRADDR
wire_ns $PFX-c0 $PFX-c0 $CADDR
wire_ns $PFX-p $PFX-p $PADDR
wire_ns $PFX-fl $PFX-fl $FADDR
wire_ns $PFX-b3 $PFX-b3 $B3ADDR
wire_ns $PFX-bt $PFX-bt $BTADDR
# The kernel's own interface on the wire takes nothing in (af_packet still
# reads every frame for dustgw): the kernel sees the wire only through the
# cover tap. It has the gateway's address there, so without the blackhole
# ahead of the local table it would take each frame twice, and answer twice.
n $GW ip rule add pref 10 iif $PFX-g blackhole
n $GW ip rule add pref 20 table local
n $GW ip rule del pref 0 table local
n $GW sysctl -qw "net.ipv4.conf.$PFX-g.arp_ignore=8"

step "caddy's site, its Caddyfile, caddy directly at $DIRADDR"
mkdir -p "$W/site"
printf '<!doctype html><title>%s</title><p>A small static site.\n' $COVER >"$W/site/index.html"
caddyfile() { # caddyfile ADDR DIR: a Caddyfile for caddy on ADDR, state in DIR
	mkdir -p "$2"
	cat >"$2/Caddyfile" <<EOF
{
	admin off
	skip_install_trust
	default_sni $COVER
	auto_https disable_redirects
}
$COVER, $1 {
	bind $1
	tls internal
	root * $W/site
	file_server
}
EOF
}
caddy_bg() { # caddy_bg VAR NS ADDR DIR: caddy in NS, its data under DIR, not in /root
	caddyfile "$3" "$4"
	bg "$1" "$2" "$4/caddy.log" env HOME="$4" XDG_DATA_HOME="$4/data" \
		XDG_CONFIG_HOME="$4/config" caddy run --config "$4/Caddyfile" --adapter caddyfile
	wait_for 30 n "$2" sh -c "ss -lnuH 'sport = :443' | grep -q . && ss -lntH 'sport = :443' | grep -q ." ||
		{ cat "$4/caddy.log"; fail "caddy in $2 does not listen on 443 (TCP and UDP)"; }
}
caddy_bg CADDY_D $PFX-d $DIRADDR "$W/caddy-d"

step "dustgw with [quic] cover = tap"
{
	gw_conf_head $GWADDR 4433 "quic_port = $QPORT"
	cat <<EOF
queues = 1
delivery_framing = eth

[quic]
cover = tap
cover_iface = $PFX-cov
cover_rate = 4000
cover_prefix_rate = 200
cover_learn_s = $LEARN_S
cover_learn_sni = $COVER
cover_learn_src = $LEARNADDR
shape_answer = 1240
shape_tail_min = 300
shape_tail_max = 320
shape_ack = no
EOF
} >"$W/dustgw.conf"
"$DUSTGW" -- --config "$W/dustgw.conf" --check-config >"$W/check.log" 2>&1 ||
	{ cat "$W/check.log"; fail "--check-config refused the cover config"; }
grep -q "cover: .*$PFX-cov" "$W/check.log" || fail "--check-config does not report the cover"
tcpdump_bg TCPDUMP $WIRE "$W/tcpdump.log" -i $PFX-br -U --immediate-mode -n -Z root -w "$ART/cover-wire.pcap"
gw_bg GWPID $GW "$W/dustgw.log" "$PFX" 512 --config "$W/dustgw.conf" --stats-out "$W/stats.txt"
wait_for 30 n $GW ip link show $PFX-cov || { cat "$W/dustgw.log"; fail "no cover tap"; }
n $GW ip addr replace 10.9.0.1/24 dev $PFX-tap
n $GW ip link set $PFX-tap up
noipv6 $GW $PFX-tap
n $GW ip addr replace $GWADDR/24 dev $PFX-cov
n $GW ip link set $PFX-cov up
[[ $(n $GW cat /sys/class/net/$PFX-cov/address) == $(n $GW cat /sys/class/net/$PFX-g/address) ]] ||
	fail "the cover tap does not carry the net port's MAC"
tcpdump_bg COVDUMP $GW "$W/covdump.log" -i $PFX-cov -U --immediate-mode -n -Z root -w "$W/cover-tap.pcap"
caddy_bg CADDY_G $GW $GWADDR "$W/caddy-g"
if [[ $LEARN_S -gt 0 ]]; then
	step "dustgw learns the first flight's shape from caddy behind the tap"
	wait_for 30 grep -q "first flight takes the cover server's shape" "$W/dustgw.log" ||
		{ tail -20 "$W/dustgw.log"; fail "dustgw did not learn the first flight's shape from caddy"; }
fi

step "a quic Dust client on the same address and port: ping through the tunnel"
bg CPID $PFX-c0 "$W/client.log" "$CLIENT" --invite "$INV" --password-file "$W/pw" \
	--key "$W/client.key" --keepalive 1 --dead-after 4 --tries 30 --stats
wait_for 40 grep -q "connected to $GWADDR:$QPORT" "$W/client.log" ||
	{ cat "$W/client.log" "$W/dustgw.log"; fail "the quic client did not connect"; }
wait_for 10 n $PFX-c0 ping -c 1 -W 2 10.9.0.1 || fail "no ping through the tunnel"
n $PFX-c0 ping -c 10 -i 0.1 -W 2 10.9.0.1 >"$W/ping.txt" || fail "ping through the tunnel lost packets"

# probe KIND [FILE]: the same bytes (FILE's, or made for KIND) to the
# gateway and to caddy directly
probe() {
	local g d f=${2:-$W/probe-$1.bin}
	[[ -n $2 ]] || "$PROBE" make "$1" "$f"
	g=$(n $PFX-p "$PROBE" udp $GWADDR $QPORT "$f")
	d=$(n $PFX-p "$PROBE" udp $DIRADDR $QPORT "$f")
	printf '%-8s gateway: %-40s caddy: %s\n' "$1" "$g" "$d" | tee -a "$RESULTS"
	read -ra PG <<<"$g"
	read -ra PD <<<"$d"
}
step "probes: the gateway's address and caddy directly"
probe vn
[[ ${PG[0]} -eq 1 && ${PD[0]} -eq 1 && ${PG[1]} == vn && ${PD[1]} == vn ]] ||
	fail "unknown version: want one Version Negotiation from each"
[[ ${PG[2]} == "${PD[2]}" ]] || fail "Version Negotiation sizes differ"
# (random bytes with the long-header bit and an unknown version get a
# Version Negotiation from caddy: the same bytes go to both)
probe random
[[ ${PG[0]} -eq ${PD[0]} && ${PG[1]} == "${PD[1]}" ]] || fail "1200 random bytes: answers differ"
probe short
[[ ${PG[0]} -eq ${PD[0]} && ${PG[1]} == "${PD[1]}" ]] || fail "a random short header: answers differ"
n $PFX-p "$PROBE" initial "$ART/cover-wire.pcap" $QPORT $CADDR "$W/dust-initial.bin" ||
	fail "no Dust Initial in the wire capture"
probe replay "$W/dust-initial.bin"
[[ ${PG[0]} -gt 0 && ${PD[0]} -gt 0 && ${PG[1]%%,*} == initial && ${PD[1]%%,*} == initial ]] ||
	fail "a replayed Dust Initial: want caddy's flight from both"
maxsz() { tr , '\n' <<<"$1" | sort -n | tail -1; }
[[ $(maxsz "${PG[2]}") == $(maxsz "${PD[2]}") ]] ||
	fail "a replayed Dust Initial: largest datagrams differ"
for a in $GWADDR $DIRADDR; do
	n $PFX-p curl -sk --max-time 10 "https://$a/" -o "$W/get-$a.html" ||
		fail "HTTPS GET https://$a/ failed"
	cmp -s "$W/get-$a.html" "$W/site/index.html" || fail "https://$a/ is not the site"
	n $PFX-p curl -sk --max-time 10 --resolve "$COVER:443:$a" "https://$COVER/" -o /dev/null ||
		fail "HTTPS GET https://$COVER/ at $a failed"
	echo "tcp     $a: HTTPS GET ok (curl -k), the site's page" >>"$RESULTS"
done

# chromium_get NS FLAGS...: headless Chromium in NS loads https://$COVER/ at
# the gateway's address, caddy's internal certificate pinned by its SPKI
chromium_get() {
	local ns=$1
	shift
	n "$ns" timeout 90 chromium --headless=new --no-sandbox --disable-gpu --no-first-run \
		--user-data-dir="$W/chromium-$ns" --host-resolver-rules="MAP $COVER $GWADDR" \
		--ignore-certificate-errors-spki-list="$PIN" "$@" --dump-dom "https://$COVER/" \
		>"$W/dom-$ns.html" 2>"$W/chromium-$ns.log" ||
		{ tail -20 "$W/chromium-$ns.log"; fail "chromium in $ns did not load the page"; }
	grep -q "A small static site" "$W/dom-$ns.html" || fail "chromium in $ns: not the site's page"
}
step "a Dust hello never confirmed: resent as caddy resends Chromium's (SPEC 12.3)"
# caddy directly, a captured Chromium 156 hello; the gateway, the second
# invitation's hello: after the flight, the Initial alone twice, then the
# Handshake packet alone and the tail, then the Initials again, at caddy's
# times within 25% and 60 ms (the gateway's scale with the learned PTO)
"$PROBE" hellos "$(dirname "$0")/../../data/chromium156-quic-initials.pcap" 127.0.0.1 1 \
	"$W/chromium-hello"
RS_D=$(n $PFX-p "$PROBE" resends $DIRADDR $QPORT "$W/chromium-hello-1-1.bin" \
	"$W/chromium-hello-1-2.bin")
RS_G=$(n $PFX-p "$PROBE" resends $GWADDR $QPORT "$W/gen-hello-2-1.bin" "$W/gen-hello-2-2.bin")
echo "resends, caddy directly: $RS_D" | tee -a "$RESULTS"
echo "resends, the gateway:    $RS_G" | tee -a "$RESULTS"
/usr/bin/python3 - "$RS_D" "$RS_G" <<'PY' || fail "the gateway's resends are not caddy's"
import sys
d = [x.split("@") for x in sys.argv[1].split()]
g = [x.split("@") for x in sys.argv[2].split()]
assert [k for k, _ in d] == [k for k, _ in g], "kinds %s against caddy's %s" % (
    [k for k, _ in g], [k for k, _ in d])
assert "".join(k for k, _ in d).startswith("XTIIHTII"), "caddy's own: %s" % sys.argv[1]
for (k, td), (_, tg) in zip(d, g):
    assert abs(int(tg) - int(td)) <= 0.25 * int(td) + 60, "%s at %s ms, caddy's at %s" % (k, tg, td)
PY

step "Chromium loads https://$COVER/ through the gateway: HTTP/3, then TCP"
CRT=$W/caddy-g/data/caddy/certificates/local/$COVER/$COVER.crt
[[ -s $CRT ]] || fail "no certificate of caddy's at $CRT"
PIN=$(openssl x509 -in "$CRT" -pubkey -noout | openssl pkey -pubin -outform der |
	openssl dgst -sha256 -binary | base64)
chromium_get $PFX-b3 --enable-quic --origin-to-force-quic-on=$COVER:443
chromium_get $PFX-bt --disable-quic
wire_count() { tcpdump -r "$ART/cover-wire.pcap" -n "$1" 2>/dev/null | wc -l; }
# tcpdump writes what the kernel hands it in blocks: wait until both loads are in
wire_has() { [[ $(wire_count "src host $1 and $2 dst port 443") -gt 4 ]]; }
wait_for 20 wire_has $B3ADDR udp || true
wait_for 20 wire_has $BTADDR tcp || true
H3UDP=$(wire_count "src host $B3ADDR and udp dst port 443")
H3TCP=$(wire_count "src host $B3ADDR and tcp dst port 443")
BTTCP=$(wire_count "src host $BTADDR and tcp dst port 443")
BTUDP=$(wire_count "src host $BTADDR and udp dst port 443")
echo "chromium: HTTP/3 $H3UDP UDP and $H3TCP TCP frames to 443; TCP $BTTCP TCP and $BTUDP UDP frames" |
	tee -a "$RESULTS"
[[ $H3UDP -gt 4 && $H3TCP -eq 0 ]] || fail "the HTTP/3 load did not go over QUIC alone"
[[ $BTTCP -gt 4 && $BTUDP -eq 0 ]] || fail "the TCP load did not go over TCP alone"
tcpdump -r "$ART/cover-wire.pcap" -w "$ART/cover-chromium-h3.pcap" "host $B3ADDR and udp port 443" 2>/dev/null
"$(dirname "$0")/quic-wire.sh" "$ART/cover-chromium-h3.pcap" 443 $COVER 1 none | tee -a "$RESULTS" ||
	fail "quic-wire.sh refuses Chromium's QUIC through the gateway"

step "flood: non-Dust Initials and TCP SYNs over the rate limits"
N=3000
n $PFX-c0 ping -c 20 -i 0.2 -W 3 10.9.0.1 >"$W/ping-flood.txt" &
PINGPID=$!
SENT=$(n $PFX-fl "$PROBE" flood $GWADDR $QPORT $N)
n $PFX-fl /usr/bin/python3 -c '
import socket, sys
for i in range(300):
    s = socket.socket(); s.setblocking(False)
    try: s.connect((sys.argv[1], 443))
    except BlockingIOError: pass
' $GWADDR
wait $PINGPID || true # its losses are counted below
GOT=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$W/ping-flood.txt")
echo "flood: $SENT Initials and 300 SYNs from $FADDR; ping through the tunnel meanwhile: $GOT of 20" |
	tee -a "$RESULTS"
[[ ${GOT:-0} -ge 18 ]] || fail "the Dust session did not keep flowing during the flood ($GOT of 20)"

step "stop; what reached the cover tap"
stop_pid "$CPID"
gw_stop "$GWPID" "$W/dustgw.log"
stop_pid "$COVDUMP"
COVDUMP=
ctr() { sed -n "s/^$1 //p" "$W/stats.txt"; }
for c in ctr.cover_in ctr.cover_out ctr.cover_flows drop.cover_rate drop.cover_prefix_rate \
	ctr.intro_ok ctr.net_rx ctr.quic_acks ctr.quic_acks_tx ctr.quic_hello_replayed; do
	echo "dustgw $c = $(ctr $c)" | tee -a "$RESULTS"
done
# the client's ACK-sized datagrams (SPEC 12.4) are the gateway's, counted, never the cover's
ACKS_TX=$(grep -o ' acks_tx=[0-9]*' "$W/client.log" | tail -1 | cut -d= -f2)
echo "dust-client acks_tx = $ACKS_TX" | tee -a "$RESULTS"
[[ $(ctr ctr.quic_acks) -ge 1 && $(ctr ctr.quic_acks) -le ${ACKS_TX:-0} ]] ||
	fail "gateway counted $(ctr ctr.quic_acks) ACK-sized datagrams of the client's ${ACKS_TX:-?}"
[[ $(ctr ctr.quic_acks_tx) -ge 1 ]] || fail "the gateway sent no ACK-sized datagram"
DUSTIN=$(tcpdump -r "$W/cover-tap.pcap" -n "src host $CADDR" 2>/dev/null | wc -l)
PROBEIN=$(tcpdump -r "$W/cover-tap.pcap" -n "src host $PADDR" 2>/dev/null | wc -l)
echo "cover tap: $DUSTIN frames from the Dust client, $PROBEIN from the prober" | tee -a "$RESULTS"
[[ $DUSTIN -eq 0 ]] || fail "$DUSTIN of the Dust client's frames reached the cover tap"
[[ $PROBEIN -gt 0 ]] || fail "nothing of the prober reached the cover tap"
[[ $(ctr ctr.intro_ok) -ge 1 ]] || fail "no intro accepted"
# the replay probe's copy of the client's first Initial went to caddy at once, not held (12.5)
[[ $(ctr ctr.quic_hello_replayed) -ge 1 ]] ||
	fail "the replayed first Initial was not judged a replay (quic_hello_replayed 0)"

step "the first flight's shape: caddy's, learned, and the Dust client's"
LEARNED=$( (grep -o "first flight takes the cover server's shape.*" "$W/dustgw.log" || true) | tail -1)
echo "dustgw: ${LEARNED:-no shape learned}; learn_ok $(ctr ctr.cover_learn_ok), learn_fail" \
	"$(ctr ctr.cover_learn_fail), learn_rx $(ctr ctr.cover_learn_rx)" | tee -a "$RESULTS"
L_ANS=$(sed -n 's/.*answer \([0-9]*\) B.*/\1/p' <<<"$LEARNED")
L_TMIN=$(sed -n 's/.*tail \([0-9]*\)\.\.[0-9]* B.*/\1/p' <<<"$LEARNED")
L_TMAX=$(sed -n 's/.*tail [0-9]*\.\.\([0-9]*\) B.*/\1/p' <<<"$LEARNED")
L_SLEN=$(sed -n 's/.*1-RTT \([0-9]*\) B after.*/\1/p' <<<"$LEARNED")
L_STAIL=$(sed -n 's/.*1-RTT [0-9]* B after tails to \([0-9]*\) B.*/\1/p' <<<"$LEARNED")
# caddy's own first flights to Chromium-shaped hellos: headless Chromium's (through the
# gateway, on the wire) and the learner's (on the cover tap)
# each: flights, ACKs first, answer sizes, tails' range; then the 1-RTT right after the
# tail: flights with one, its sizes, the largest tail with one, the smallest without
read -r BF BA BANS BTMIN BTMAX BS BSLEN BSW BSWO BCO < <("$PROBE" flights "$ART/cover-wire.pcap" \
	$GWADDR $B3ADDR)
read -r CF CA CANS CTMIN CTMAX CS CSLEN CSW CSWO CCO < <("$PROBE" flights "$W/cover-tap.pcap" \
	$GWADDR $LEARNADDR)
read -r DF DA DANS DTMIN DTMAX DS DSLEN DSW DSWO DCO < <("$PROBE" flights "$ART/cover-wire.pcap" \
	$GWADDR $CADDR)
echo "caddy to Chromium (wire): $BF flights, $BA with an ACK-only Initial first, answer" \
	"$BANS B, tails $BTMIN..$BTMAX B; a $BSLEN B 1-RTT after $BS tails (largest $BSW B," \
	"smallest without $BSWO B; coalesced behind $BCO)" | tee -a "$RESULTS"
echo "caddy to the learner's hellos (cover tap): $CF flights, $CA with an ACK-only Initial" \
	"first, answer $CANS B, tails $CTMIN..$CTMAX B; a $CSLEN B 1-RTT after $CS tails" \
	"(largest $CSW B, smallest without $CSWO B; coalesced behind $CCO)" | tee -a "$RESULTS"
echo "the Dust client's first flights (wire): $DF, $DA with an ACK-only Initial first," \
	"answer $DANS B, tails $DTMIN..$DTMAX B; a $DSLEN B 1-RTT after $DS tails (largest" \
	"$DSW B, smallest without $DSWO B; coalesced behind $DCO)" | tee -a "$RESULTS"
[[ $BF -gt 0 && $BTMIN =~ ^[0-9]+$ ]] || fail "no first flight of caddy's to Chromium on the wire"
RTMIN=$BTMIN RTMAX=$BTMAX # caddy's tails, all that were seen
if [[ $CTMIN =~ ^[0-9]+$ ]]; then
	RTMIN=$((CTMIN < RTMIN ? CTMIN : RTMIN)) RTMAX=$((CTMAX > RTMAX ? CTMAX : RTMAX))
fi
[[ $DANS == "$BANS" && $DTMIN =~ ^[0-9]+$ && $DTMIN -ge $RTMIN && $DTMAX -le $RTMAX &&
	$((DA > 0)) -eq $((BA > 0)) ]] ||
	fail "the Dust client's first flight (answer $DANS B, tail $DTMIN..$DTMAX B, ACK first in $DA of $DF) is not caddy's (answer $BANS B, tails $RTMIN..$RTMAX B, ACK first in $BA of $BF)"
[[ $CF -gt 0 && $CANS =~ ^[0-9]+$ && $CTMIN =~ ^[0-9]+$ ]] ||
	fail "no first flight of caddy's to the learner's hellos on the cover tap"
# the same hellos to caddy reached directly over the wire (a caddy that never saw them)
DIRECT=()
"$PROBE" hellos "$W/cover-tap.pcap" $LEARNADDR 4 "$W/learn-hello"
for i in 1 2 3 4; do
	DIRECT+=("$(n $PFX-p "$PROBE" ask $DIRADDR $QPORT "$W/learn-hello-$i-1.bin" \
		"$W/learn-hello-$i-2.bin")")
done
echo "caddy directly, the learner's hellos (ACK ANSWER TAIL): $(printf '[%s] ' "${DIRECT[@]}")" |
	tee -a "$RESULTS"
DIRECT_ANSWER=$(for d in "${DIRECT[@]}"; do read -r _ a _ <<<"$d"; echo "$a"; done | sort -u | tr '\n' ' ')
[[ "$CANS " == "$DIRECT_ANSWER" && $CANS == "$BANS" ]] ||
	fail "caddy answers the learner with $CANS B behind the tap, ${DIRECT_ANSWER:-nothing}B directly, Chromium with $BANS B"
[[ $L_ANS == "$CANS" && $L_TMIN -ge $CTMIN && $L_TMAX -le $CTMAX ]] ||
	fail "learned answer ${L_ANS:-?} B, tail ${L_TMIN:-?}..${L_TMAX:-?} B: not caddy's ($CANS B, $CTMIN..$CTMAX B)"
# subset A B: every size of the comma list A is in B
subset() {
	local x
	for x in ${1//,/ }; do
		[[ ,$2, == *,$x,* ]] || return 1
	done
}
# the 1-RTT after the tail (SPEC §12.3), learned anew each round from caddy's flights
# to the learner: caddy's size, after tails to a bound within caddy's tails. The
# Dust client's flights keep the bound of the round they went out in: a tail with
# one at most the largest bound learned, one without over the smallest.
read -r L_SLENS L_SMIN L_SMAX < <(grep -o "1-RTT [0-9]* B after tails to [0-9]* B" \
	"$W/dustgw.log" | awk '{ l[$2] = 1; t = $7; if (!n++ || t < lo) lo = t; if (t > hi) hi = t }
	END { for (k in l) s = s (s ? "," : "") k; print (s ? s : "-"), lo + 0, hi + 0 }')
echo "learned 1-RTT sizes $L_SLENS B, after tails to $L_SMIN..$L_SMAX B" | tee -a "$RESULTS"
# (caddy sends its 1-RTT after every tail, alone or coalesced behind it: then a bound
# at or past its largest tail)
if [[ $CS -gt 0 && $CSWO == - ]]; then
	subset "$L_SLEN" "$CSLEN" && [[ $L_STAIL -ge $CTMAX ]] ||
		fail "learned a ${L_SLEN:-?} B 1-RTT after tails to ${L_STAIL:-?} B; caddy sent $CSLEN B after each of its $CS tails ($CTMIN..$CTMAX B)"
elif [[ $CS -gt 0 ]]; then
	subset "$L_SLEN" "$CSLEN" && [[ $L_STAIL -ge $CTMIN && $L_STAIL -le $CTMAX ]] ||
		fail "learned a ${L_SLEN:-?} B 1-RTT after tails to ${L_STAIL:-?} B; caddy sent $CSLEN B after $CS of $CF tails ($CTMIN..$CTMAX B)"
else
	[[ $L_SLEN == 0 ]] || fail "learned a $L_SLEN B 1-RTT; caddy sent none to the learner"
fi
if [[ $DS -gt 0 ]]; then
	subset "$DSLEN" "$L_SLENS" && [[ $DSW -le $L_SMAX ]] ||
		fail "the Dust client's flights: a $DSLEN B 1-RTT after tails to $DSW B; learned $L_SLENS B after tails to $L_SMIN..$L_SMAX B"
	[[ $BS -eq 0 ]] || subset "$DSLEN" "$BSLEN" ||
		fail "the Dust client's 1-RTT is $DSLEN B, caddy's to Chromium $BSLEN B"
fi
[[ $DSWO == - || $DSWO -gt $L_SMIN ]] ||
	fail "a Dust flight's tail of $DSWO B had no 1-RTT; learned: after tails to $L_SMIN..$L_SMAX B"
grep -q "ACK-only Initial first" <<<"$LEARNED" && [[ $((2 * CA)) -gt $CF ]] ||
	fail "caddy sent an ACK-only Initial first in $CA of $CF flights; learned: $LEARNED"
LEAKED=$(tcpdump -r "$ART/cover-wire.pcap" -n "host $LEARNADDR" 2>/dev/null | wc -l)
[[ $LEAKED -eq 0 ]] || fail "$LEAKED frames of the learner's address on the wire"
[[ $(ctr ctr.cover_learn_rx) -gt 0 ]] || fail "no frame to the learner's address counted"
[[ $(ctr drop.cover_prefix_rate) -gt 0 ]] || fail "the flood was not rate-limited"
TOTAL=$(($(ctr ctr.cover_in) + $(ctr drop.cover_rate) + $(ctr drop.cover_prefix_rate)))
[[ $TOTAL -ge $((SENT + 300)) ]] ||
	fail "handed over or rate-dropped: $TOTAL, less than the $SENT + 300 flood frames"
echo "PASS"
