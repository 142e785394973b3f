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
sed 's/^udp_port.*/udp_prot = 4433/' gw.conf >typo.conf
EXPECT="unknown key 'udp_prot'" expect_err "unknown key" --config typo.conf
sed 's/^udp_port.*/udp_port = 70000/' gw.conf >range.conf
EXPECT="udp_port = '70000'" expect_err "bad value" --config range.conf
sed 's/^key_file.*/key_file = missing.key/' gw.conf >nokey.conf
EXPECT="missing.key" expect_err "missing key file" --config nokey.conf
cp server.key open.key && chmod 644 open.key
sed 's/^key_file.*/key_file = open.key/' gw.conf >perm.conf
EXPECT="readable by group or others" expect_err "key file mode 0644" --config perm.conf
sed 's/^store.*/store = nowhere.store/' gw.conf >nostore.conf
EXPECT="nowhere.store" expect_err "missing store" --config nostore.conf
sed 's/^delivery = .*/delivery = net_ring7/' gw.conf >noport.conf
EXPECT="no DPDK port 'net_ring7'" expect_err "missing port" --config noport.conf
# the cover server: only on the quic port, only with one, a known mode
printf '[random]\ncover = tap\n' | cat gw.conf - >cover-random.conf
EXPECT="random port stays silent" expect_err "cover on the random port" --config cover-random.conf
printf '[quic]\ncover = tap\n' | cat gw.conf - >cover-noquic.conf
EXPECT="cover = tap needs \\[gateway\\] quic_port" expect_err "cover, no quic port" \
	--config cover-noquic.conf
sed 's/^udp_port = 4433/udp_port = 4433\nquic_port = 443/' gw.conf >quic.conf
printf '[quic]\ncover = nginx\n' | cat quic.conf - >cover-mode.conf
EXPECT="cover = 'nginx': want off or tap" expect_err "cover mode" --config cover-mode.conf
printf '[quic]\nsizes = uniform\n' | cat quic.conf - >sizes.conf
EXPECT="sizes = 'uniform': want cover or padding" expect_err "quic sizes" --config sizes.conf
printf '[quic]\npacing = fast\n' | cat quic.conf - >pacing.conf
EXPECT="pacing = 'fast': want cover or off" expect_err "quic pacing" --config pacing.conf
printf '[quic]\nacks = some\n' | cat quic.conf - >acks.conf
EXPECT="acks = 'some': want cover or off" expect_err "quic acks" --config acks.conf
printf '[quic]\ncover = tap\ncover_iface = a/b\n' | cat quic.conf - >cover-if.conf
EXPECT="not an interface name" expect_err "cover interface" --config cover-if.conf
# the first flight's shape (SPEC §12.3, §12.5): learned from the cover, or configured
expect_check_err() { # expect_check_err WHAT CONF: --check-config refuses CONF, saying $EXPECT
	if "$DUSTGW" -- --config "$2" --check-config >check.txt 2>&1; then
		fail "$1: --check-config exit 0"
	fi
	grep -q -e "$EXPECT" check.txt || { cat check.txt >&2; fail "$1: no '$EXPECT'"; }
	echo "ok: $1"
}
printf '[quic]\ncover = tap\ncover_iface = cov7\n' | cat quic.conf - >learn-nosni.conf
EXPECT="set cover_learn_sni to the host name" expect_check_err "cover learning, no SNI" learn-nosni.conf
printf '[quic]\ncover = tap\ncover_learn_sni = Not_A_Host\n' | cat quic.conf - >learn-sni.conf
EXPECT="cover_learn_sni = 'Not_A_Host': not a host name" expect_check_err "learn SNI" learn-sni.conf
printf '[quic]\ncover = tap\ncover_learn_sni = www.example.com\ncover_learn_src = 10.0.0.1\n' |
	cat quic.conf - >learn-src.conf
EXPECT="cover_learn_src is the gateway's own address" expect_check_err "learn source" learn-src.conf
printf '[quic]\ncover_learn_src = 2001:db8::1\n' | cat quic.conf - >learn-src6.conf
EXPECT="cover_learn_src = '2001:db8::1': not an IPv4 address" expect_check_err "learn source v6" learn-src6.conf
printf '[quic]\ncover_learn_s = 90000\n' | cat quic.conf - >learn-s.conf
EXPECT="cover_learn_s = '90000': want an integer in 0..86400" expect_check_err "learn period" learn-s.conf
printf '[quic]\nshape_tail_min = 300\nshape_tail_max = 200\n' | cat quic.conf - >tail.conf
EXPECT="shape_tail_min = 300 is over shape_tail_max = 200" expect_check_err "shape tail order" tail.conf
printf '[quic]\nshape_answer = 1300\n' | cat quic.conf - >answer.conf
EXPECT="shape_answer = '1300': want an integer in 1200..1252" expect_check_err "shape answer" answer.conf
printf '[quic]\nshape_tail_max = 1200\n' | cat quic.conf - >tailmax.conf
EXPECT="shape_tail_max = '1200': want an integer in 64..1199" expect_check_err "shape tail bound" tailmax.conf
printf '[quic]\nshape_pto_ms = 10\n' | cat quic.conf - >pto.conf
EXPECT="shape_pto_ms = '10': want an integer in 50..2000" expect_check_err "shape PTO" pto.conf
printf '[quic]\nshape_ack = maybe\n' | cat quic.conf - >ack.conf
EXPECT="shape_ack = 'maybe': want yes or no" expect_check_err "shape ACK" ack.conf
printf '[quic]\nshape_short = 12\n' | cat quic.conf - >short.conf
EXPECT="shape_short = 12: 0 (none) or 21..63 bytes" expect_check_err "shape 1-RTT size" short.conf
printf '[quic]\nshape_short = 64\n' | cat quic.conf - >shortmax.conf
EXPECT="shape_short = '64': want an integer in 0..63" expect_check_err "shape 1-RTT bound" shortmax.conf
printf '[quic]\nshape_short_tail = 1200\n' | cat quic.conf - >shorttail.conf
EXPECT="shape_short_tail = '1200': want an integer in 0..1199" \
	expect_check_err "shape 1-RTT tail bound" shorttail.conf
printf '[quic]\nshape_coalesce = 4\n' | cat quic.conf - >coalesce.conf
EXPECT="shape_coalesce = '4': want an integer in 0..3" expect_check_err "shape coalesce bound" coalesce.conf
printf '[quic]\nshape_answer = 1240\nshape_tail_min = 300\nshape_tail_max = 320\nshape_ack = no\nshape_pto_ms = 300\nshape_short = 30\nshape_short_tail = 310\nshape_coalesce = 2\n' |
	cat quic.conf - >shape.conf
"$DUSTGW" -- --config shape.conf --check-config >check.txt 2>&1 ||
	{ cat check.txt >&2; fail "--check-config refused a configured shape"; }
grep -q "quic first flight: answer 1240 B, tail 300..320 B, no ACK first, PTO 300 ms, 1-RTT 30 B after tails to 310 B, coalesced behind the tail in 2/3" check.txt ||
	{ cat check.txt >&2; fail "--check-config: the configured shape not shown"; }
printf '[quic]\ncover = tap\ncover_iface = cov7\ncover_learn_sni = www.example.com\n' |
	cat quic.conf - >cover.conf
"$DUSTGW" -- --config cover.conf --check-config >check.txt 2>&1 ||
	{ cat check.txt >&2; fail "--check-config refused a cover config"; }
grep -q "cover: .*kernel interface cov7" check.txt || { cat check.txt >&2; fail "--check-config: no cover line"; }
grep -q "learned from the cover server at start and every 300 s (hellos for www.example.com from 192.0.2.1" check.txt ||
	{ cat check.txt >&2; fail "--check-config: no learning line"; }
echo "ok: shape config"
grep -q "quic data sizes: the cover's" check.txt || { cat check.txt >&2; fail "--check-config: no sizes line"; }
grep -q "quic downstream pacing: cover (gaps" check.txt || { cat check.txt >&2; fail "--check-config: no pacing line"; }
printf '[quic]\npacing = off\n' | cat quic.conf - >pacing-off.conf
"$DUSTGW" -- --config pacing-off.conf --check-config >check.txt 2>&1 ||
	{ cat check.txt >&2; fail "--check-config refused pacing = off"; }
grep -q "quic downstream pacing: off" check.txt || { cat check.txt >&2; fail "--check-config: pacing = off not shown"; }
printf '[quic]\nacks = off\n' | cat quic.conf - >acks-off.conf
"$DUSTGW" -- --config acks-off.conf --check-config >check.txt 2>&1 ||
	{ cat check.txt >&2; fail "--check-config refused acks = off"; }
grep -q "quic ACK-sized datagrams to clients: off" check.txt || { cat check.txt >&2; fail "--check-config: acks = off not shown"; }
echo "ok: cover config"
echo "PASS gw-config"
