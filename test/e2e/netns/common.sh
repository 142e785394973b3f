# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Shared helpers for the netns tests: namespaces and processes this test
# created (and only those), the gateway in a namespace, caddy. Waiting,
# stopping and failing are test/e2e/harness.sh's.

. "$(dirname "${BASH_SOURCE[0]}")/../harness.sh"

NS_LIST=()
PIDS=()

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

step() {
	echo "== $*"
}

need_root_tools() {
	[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces, TUN)"
	[[ -c /dev/net/tun ]] || skip "no /dev/net/tun"
	local t
	for t in ip "$@"; do
		command -v "$t" >/dev/null || fail "missing tool '$t' (see tools/bootstrap)"
	done
	ip netns add "${PFX}-probe" 2>/dev/null || skip "cannot create network namespaces here"
	ip netns del "${PFX}-probe"
}

ns_add() {
	ip netns add "$1"
	NS_LIST+=("$1")
	ip -n "$1" link set lo up
}

# abspath VAR PATH [VAR PATH...]: each VAR set to its PATH made absolute
# (realpath), for programs and files used from other folders and namespaces
abspath() {
	local p
	while (($# >= 2)); do
		p=$(realpath "$2")
		printf -v "$1" %s "$p"
		shift 2
	done
}

# noipv6 NS IFACE: no IPv6 on IFACE (a wire should carry only what the test sends)
noipv6() {
	n "$1" sysctl -qw "net.ipv6.conf.$2.disable_ipv6=1"
}

# veth NS_A IF_A ADDR_A NS_B IF_B ADDR_B: a veth pair, IF_A in NS_A to IF_B in
# NS_B, each end given its ADDR/LEN ("" for none) and up
veth() {
	ip link add "$2" netns "$1" type veth peer name "$5" netns "$4"
	[[ -z $3 ]] || n "$1" ip addr add "$3" dev "$2"
	n "$1" ip link set "$2" up
	[[ -z $6 ]] || n "$4" ip addr add "$6" dev "$5"
	n "$4" ip link set "$5" up
}

# wire_bridge NS BR: namespace NS with a bridge BR in it, up, no IPv6
wire_bridge() {
	ns_add "$1"
	n "$1" ip link add "$2" type bridge
	n "$1" ip link set "$2" up
	noipv6 "$1" "$2"
}

# n NS CMD...: run in a namespace
n() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# bg VAR NS LOG CMD...: start CMD in NS in the background, its pid in $VAR
bg() {
	local var=$1 ns=$2 log=$3
	shift 3
	ip netns exec "$ns" "$@" >"$log" 2>&1 &
	printf -v "$var" %s $!
	PIDS+=($!)
}

# common_cleanup [PID...]: the PIDs given (empty ones skipped) stopped first,
# then every process bg started, then the namespaces removed
common_cleanup() {
	local pid ns
	set +e
	for pid in "$@" "${PIDS[@]}"; do
		stop_pid "$pid"
	done
	wait 2>/dev/null
	for ns in "${NS_LIST[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
}

# tcpdump_bg VAR NS LOG TCPDUMP_ARG...: tcpdump in NS in the background (its
# pid in $VAR), returning once it listens
# cover_tap_up NS IFACE ADDR/LEN: wait for dustgw's cover tap IFACE in NS
# ([quic] cover = tap), give the kernel's side the gateway's address, up
cover_tap_up() {
	wait_for 30 n "$1" ip link show "$2" || fail "no cover tap $2"
	n "$1" ip addr replace "$3" dev "$2"
	n "$1" ip link set "$2" up
}

tcpdump_bg() {
	bg "$1" "$2" "$3" tcpdump "${@:4}"
	wait_for 10 grep -q "listening on" "$3" || fail "tcpdump did not start (its log: $3)"
}

# fresh_work PASSWORD DIR...: $W made afresh with the DIRs (paths), and the
# clients' password file $W/pw (mode 600) holding PASSWORD
fresh_work() {
	local pw=$1
	shift
	rm -rf "$W"
	mkdir -p "$W" "$@"
	echo "$pw" >"$W/pw"
	chmod 600 "$W/pw"
}

# invites ADDR PORT DUST_INVITE_CREATE_ARG...: dust-invite create ($INVITE)
# for the gateway at ADDR:PORT with its key $W/gw.key, store $W/store and
# the password file $W/pw
invites() {
	local addr=$1 port=$2
	shift 2
	"$INVITE" create --store "$W/store" --key "$W/gw.key" --server "$addr" --port "$port" \
		--password-file "$W/pw" "$@" >/dev/null
}

# stats_field LOG NAME: value of NAME=... in the client's stats line
stats_field() {
	grep -o "[ ]$2=[0-9]*" "$1" | tail -1 | cut -d= -f2
}

# gw_conf_head ADDR PORT [LINE...]: the head every test's dustgw config
# shares (key and store in $W, net on net_af_packet0, delivery on
# net_tap0); LINEs go into [gateway]. The caller appends the rest of [ports].
gw_conf_head() {
	printf '[gateway]\nipv4 = %s\nudp_port = %s\n' "$1" "$2"
	shift 2
	[[ $# -eq 0 ]] || printf '%s\n' "$@"
	printf 'key_file = %s\nstore = %s\n\n[ports]\nnet = net_af_packet0\ndelivery = net_tap0\n' \
		"$W/gw.key" "$W/store"
}

# gw_bg VAR NS LOG FILE_PREFIX MEM_MB DUSTGW_ARG...: $DUSTGW in NS in the
# background (pid in $VAR), net_af_packet on $PFX-g, its TAP $PFX-tap,
# two lcores (one core when the machine has only one)
gw_bg() {
	local var=$1 ns=$2 log=$3 fp=$4 mem=$5
	shift 5
	bg "$var" "$ns" "$log" "$DUSTGW" --no-huge -m "$mem" --no-pci --file-prefix "$fp" \
		--lcores "0@0,1@$(($(nproc) > 1 ? 1 : 0))" \
		--vdev "net_af_packet0,iface=$PFX-g" --vdev "net_tap0,iface=$PFX-tap" -- "$@"
	gw_up "${!var}" "$log"
}

# gw_up PID LOG: wait until dustgw's loop is about to run (its banner, printed
# after the ports started). Its TAP appears early in EAL start; a loaded
# machine took tens of seconds from there to the loop, and clients started
# meanwhile spent their tries on a gateway that was not listening yet.
gw_up() {
	local _
	for _ in $(seq 900); do
		grep -q "^dustgw: data AEAD" "$2" && return 0
		kill -0 "$1" 2>/dev/null || { cat "$2"; fail "dustgw exited before its loop ran"; }
		sleep 0.2
	done
	cat "$2"
	fail "dustgw's loop not up within 180 s"
}

# gw_stop PID LOG: SIGTERM, expect a clean exit (LOG shown if not)
gw_stop() {
	kill -TERM "$1"
	wait_exit "$1" 20 || fail "dustgw did not stop on SIGTERM"
	[[ $RC -eq 0 ]] || { cat "$2"; fail "dustgw exit status $RC"; }
}

# caddy_start VAR NS ADDR HOST SITE DIR [udp|tcp]: Debian's caddy in NS, serving the
# directory SITE as HOST on ADDR:443 (tls internal, its state under DIR, not in
# /root), its pid in VAR. Waits for its certificate and for 443 (udp or tcp, default
# udp), then sets PIN to the SPKI pin of the certificate (Chromium's
# --ignore-certificate-errors-spki-list).
caddy_start() {
	local var=$1 ns=$2 addr=$3 host=$4 site=$5 dir=$6 proto=${7:-udp} crt
	mkdir -p "$dir"
	cat >"$dir/Caddyfile" <<CADDY
{
	admin off
	skip_install_trust
	auto_https disable_redirects
}
$host {
	bind $addr
	tls internal
	root * $site
	file_server
}
CADDY
	bg "$var" "$ns" "$dir/caddy.log" env HOME="$dir" XDG_DATA_HOME="$dir/data" \
		XDG_CONFIG_HOME="$dir/config" caddy run --config "$dir/Caddyfile" --adapter caddyfile
	crt=$dir/data/caddy/certificates/local/$host/$host.crt
	wait_for 30 test -s "$crt" || { cat "$dir/caddy.log"; fail "caddy made no certificate"; }
	wait_for 30 n "$ns" sh -c "ss -ln${proto:0:1}H 'sport = :443' | grep -q ." ||
		{ cat "$dir/caddy.log"; fail "caddy does not listen on $proto 443"; }
	# shellcheck disable=SC2034 # PIN is for the caller's Chromium
	PIN=$(openssl x509 -in "$crt" -pubkey -noout | openssl pkey -pubin -outform der |
		openssl dgst -sha256 -binary | base64)
}
