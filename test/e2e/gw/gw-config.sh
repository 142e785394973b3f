#!/bin/sh
# Startup errors say what is wrong and exit 1: missing or corrupt config,
# unknown key, bad value, missing key file, key file readable by others,
# missing store, missing port. --help tells the truth and exits 0.
. "$(dirname "$0")/lib.sh"

expect_err() {
	what=$1
	shift
	if timeout 60 "$DUSTGW" -l 0,1 --no-huge -m 256 --no-pci --file-prefix "$PREFIX" \
		--log-level=dustgw:info --vdev net_pcap0,tx_pcap=o.pcap \
		--vdev net_pcap1,tx_pcap=c.pcap -- "$@" >out.txt 2>err.txt; then
		fail "$what: exit 0"
	fi
	cat out.txt err.txt >all.txt
	grep -q -e "$EXPECT" all.txt || { cat all.txt >&2; fail "$what: no '$EXPECT' in stderr"; }
	echo "ok: $what"
}

"$DUSTGW" --help >help.txt || fail "--help exit status"
for w in --config --exit-on-idle --stats-out /dustgw/stats; do
	grep -q -- "$w" help.txt || fail "--help does not mention $w"
done
make_store 2
make_conf 1
EXPECT="cannot read config" expect_err "missing config" --config nope.conf
EXPECT="--config FILE is required" expect_err "no --config"
printf '[gateway\nipv4 = 1\n' >bad.conf
EXPECT="bad.conf" expect_err "corrupt config" --config bad.conf
cp server.key open.key && chmod 644 open.key
# each line: what is wrong|the sed script that breaks gw.conf|what dustgw says
while IFS='|' read -r what edit EXPECT; do
	sed "$edit" gw.conf >edited.conf
	expect_err "$what" --config edited.conf
done <<'EOF'
unknown key|s/^udp_port.*/udp_prot = 4433/|unknown key 'udp_prot'
bad value|s/^udp_port.*/udp_port = 70000/|udp_port = '70000'
missing key file|s/^key_file.*/key_file = missing.key/|missing.key
key file mode 0644|s/^key_file.*/key_file = open.key/|readable by group or others
missing store|s/^store.*/store = nowhere.store/|nowhere.store
missing port|s/^delivery = .*/delivery = net_ring7/|no DPDK port 'net_ring7'
EOF
# the cover server: only on the quic port, only with one, a known mode
printf '[random]\ncover = tap\n' | cat gw.conf - >cover-random.conf
EXPECT="random port stays silent" expect_err "cover on the random port" --config cover-random.conf
printf '[quic]\ncover = tap\n' | cat gw.conf - >cover-noquic.conf
EXPECT="cover = tap needs \\[gateway\\] quic_port" expect_err "cover, no quic port" \
	--config cover-noquic.conf
sed 's/^udp_port = 4433/udp_port = 4433\nquic_port = 443/' gw.conf >quic.conf
# quic_conf LINES: quic.conf and a [quic] section of LINES (';' between
# lines) as quic-edited.conf
quic_conf() {
	printf '[quic]\n%s\n' "$1" | tr ';' '\n' | cat quic.conf - >quic-edited.conf
}
# each line: what is wrong|the [quic] lines|what dustgw says
while IFS='|' read -r what lines EXPECT; do
	quic_conf "$lines"
	expect_err "$what" --config quic-edited.conf
done <<'EOF'
cover mode|cover = nginx|cover = 'nginx': want off or tap
quic sizes|sizes = uniform|sizes = 'uniform': want cover or padding
quic pacing|pacing = fast|pacing = 'fast': want cover or off
quic acks|acks = some|acks = 'some': want cover or off
cover interface|cover = tap;cover_iface = a/b|not an interface name
EOF
# the first flight's shape (SPEC §12.3, §12.5): learned from the cover, or configured
expect_check_err() { # expect_check_err WHAT CONF: --check-config refuses CONF, saying $EXPECT
	if "$DUSTGW" -- --config "$2" --check-config >check.txt 2>&1; then
		fail "$1: --check-config exit 0"
	fi
	grep -q -e "$EXPECT" check.txt || { cat check.txt >&2; fail "$1: no '$EXPECT'"; }
	echo "ok: $1"
}
# each line: what is wrong|the [quic] lines|what --check-config says
while IFS='|' read -r what lines EXPECT; do
	quic_conf "$lines"
	expect_check_err "$what" quic-edited.conf
done <<'EOF'
cover learning, no SNI|cover = tap;cover_iface = cov7|set cover_learn_sni to the host name
learn SNI|cover = tap;cover_learn_sni = Not_A_Host|cover_learn_sni = 'Not_A_Host': not a host name
learn source|cover = tap;cover_learn_sni = www.example.com;cover_learn_src = 10.0.0.1|cover_learn_src is the gateway's own address
learn source v6|cover_learn_src = 2001:db8::1|cover_learn_src = '2001:db8::1': not an IPv4 address
learn period|cover_learn_s = 90000|cover_learn_s = '90000': want an integer in 0..86400
shape tail order|shape_tail_min = 300;shape_tail_max = 200|shape_tail_min = 300 is over shape_tail_max = 200
shape answer|shape_answer = 1300|shape_answer = '1300': want an integer in 1200..1252
shape tail bound|shape_tail_max = 1200|shape_tail_max = '1200': want an integer in 64..1199
shape PTO|shape_pto_ms = 10|shape_pto_ms = '10': want an integer in 50..2000
shape ACK|shape_ack = maybe|shape_ack = 'maybe': want yes or no
shape 1-RTT size|shape_short = 12|shape_short = 12: 0 (none) or 21..63 bytes
shape 1-RTT bound|shape_short = 64|shape_short = '64': want an integer in 0..63
shape 1-RTT tail bound|shape_short_tail = 1200|shape_short_tail = '1200': want an integer in 0..1199
shape coalesce bound|shape_coalesce = 4|shape_coalesce = '4': want an integer in 0..3
EOF
# expect_check_ok WHAT LINES PATTERN...: --check-config takes quic.conf with
# the [quic] LINES (as quic_conf) and says each PATTERN
expect_check_ok() {
	what=$1
	quic_conf "$2"
	shift 2
	"$DUSTGW" -- --config quic-edited.conf --check-config >check.txt 2>&1 ||
		{ cat check.txt >&2; fail "--check-config refused $what"; }
	for p in "$@"; do
		grep -q -e "$p" check.txt || { cat check.txt >&2; fail "--check-config, $what: no '$p'"; }
	done
}
expect_check_ok "a configured shape" \
	"shape_answer = 1240;shape_tail_min = 300;shape_tail_max = 320;shape_ack = no;shape_pto_ms = 300;shape_short = 30;shape_short_tail = 310;shape_coalesce = 2" \
	"quic first flight: answer 1240 B, tail 300..320 B, no ACK first, PTO 300 ms, 1-RTT 30 B after tails to 310 B, coalesced behind the tail in 2/3"
expect_check_ok "a cover config" "cover = tap;cover_iface = cov7;cover_learn_sni = www.example.com" \
	"cover: .*kernel interface cov7" \
	"learned from the cover server at start and every 300 s (hellos for www.example.com from 192.0.2.1" \
	"quic data sizes: the cover's" "quic downstream pacing: cover (gaps"
echo "ok: shape config"
expect_check_ok "pacing = off" "pacing = off" "quic downstream pacing: off"
expect_check_ok "acks = off" "acks = off" "quic ACK-sized datagrams to clients: off"
echo "ok: cover config"
echo "PASS gw-config"
