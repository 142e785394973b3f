# Shared helpers for the gateway pcap-replay tests (sourced, not run).
# Each test: lib.sh DUSTGW DUST_PCAP DUST_INVITE WORKDIR; a fresh WORKDIR,
# a unique EAL --file-prefix, everything removed again on exit.
set -eu

DUSTGW=$(realpath "$1")
PCAP=$(realpath "$2")
INVITE=$(realpath "$3")
WORK=$(realpath -m "$4")
PREFIX=dgwtest-$(basename "$0" .sh)-$$
HERE=$(realpath "$(dirname "$0")") # the test scripts and frames.py
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

cleanup() {
	rm -rf "/var/run/dpdk/$PREFIX"
}
trap cleanup EXIT

. "$HERE/../harness.sh" # fail, dust_store, gw_conf_memif, memif_vdevs

# lcore map for the main lcore plus N workers, on whatever CPUs exist.
lcores() {
	n=$1
	cpus=$(nproc)
	map="0@0"
	for i in $(seq 1 "$n"); do
		map="$map,$i@$(( i % cpus ))"
	done
	echo "$map"
}

# identity + COUNT invitations for 10.0.0.1:4433 (no passwords: store only)
make_store() {
	dust_store "$INVITE" "$1"
}

# write gw.conf: QUEUES [extra lines for [runtime]]
make_conf() {
	cat >gw.conf <<CONF
; written by $(basename "$0")
[gateway]
ipv4 = 10.0.0.1
udp_port = 4433
key_file = server.key
store = inv.store
[ports]
net = net_pcap0
delivery = net_pcap1
queues = $1
mbufs = 16383
[runtime]
exit_on_idle_ms = ${DGW_IDLE_MS:-1500}
delivery_hold_ms = ${2:-0}
CONF
}

# run_gw NAME NETVDEV DLVVDEV WORKERS: replay, summary in NAME.summary, stats NAME.stats
run_gw() {
	name=$1
	rc=0
	timeout 120 "$DUSTGW" --lcores "$(lcores "$4")" --no-huge -m 512 --no-pci \
		--file-prefix "$PREFIX" --log-level=dustgw:info \
		--vdev "net_pcap0,$2" --vdev "net_pcap1,$3" -- \
		--config gw.conf --stats-out "$name.stats" >"$name.summary" 2>"$name.log" || rc=$?
	[ $rc = 0 ] || { cat "$name.log" "$name.summary" >&2; fail "dustgw exited with $rc"; }
	cat "$name.summary"
}
