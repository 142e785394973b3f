# Shell harness shared by the gateway, netns and hostile tests and the
# bench scripts (sourced, not run; POSIX sh, `local` aside). Plain functions
# with their inputs as arguments: no argument parsing, no directory changes
# and no traps of its own, so a script keeps its own layout and cleanup.
# Everything writes into the current directory.
#   . test/e2e/harness.sh   (or from a script: . "$(dirname "$0")/../harness.sh")

# fail MESSAGE...: the test's verdict, on stderr, and exit 1
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# stop_pid PID: TERM, then KILL after 5 s
stop_pid() {
	local pid=$1
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

# wait_for SECONDS CMD...: poll CMD every 0.2 s until it succeeds
wait_for() {
	local t=$1
	shift
	for _ in $(seq $((t * 5))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

# wait_exit PID SECONDS: wait for a process to end by itself; its status in $RC
wait_exit() {
	local pid=$1 t=$2
	for _ in $(seq $((t * 10))); do
		if ! kill -0 "$pid" 2>/dev/null; then
			RC=0
			wait "$pid" || RC=$?
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# dust_store DUST_INVITE COUNT [create options...]: a server identity
# (server.key) and COUNT store-only invitations for 10.0.0.1:4433 (inv.store)
dust_store() {
	_inv=$1 _n=$2
	shift 2
	"$_inv" keygen --out server.key >/dev/null
	"$_inv" create --store inv.store --key server.key --server 10.0.0.1 --port 4433 \
		--tunnel-net 10.9.0.0/16 --count "$_n" --store-only "$@" >/dev/null
}

# gw_conf_memif STORE [LINE...]: on stdout, a dustgw configuration for
# dust_store's identity and STORE on a memif pair (net_memif0 = net,
# net_memif1 = delivery), each LINE appended after [ports] (port lines, or a
# new [section] and its lines)
gw_conf_memif() {
	printf '[gateway]\nipv4 = 10.0.0.1\nudp_port = 4433\n'
	printf 'key_file = server.key\nstore = %s\n' "$1"
	printf '[ports]\nnet = net_memif0\ndelivery = net_memif1\n'
	shift
	for _l in "$@"; do
		echo "$_l"
	done
}

# big_store DUST_INVITE KEY STORE N: a file store STORE of N store-only
# invitations for 10.0.0.1:4433 (random profile, no texts) across
# 10.64.0.0/10, timed: "dust-invite create --count N --store-only: MS ms,
# SIZE KiB" in BIG_STORE
big_store() {
	_t0=$(date +%s%N)
	"$1" create --store "$3" --key "$2" --server 10.0.0.1 --port 4433 \
		--tunnel-net 10.64.0.0/10 --count "$4" --store-only >/dev/null 2>&1
	BIG_STORE="dust-invite create --count $4 --store-only: $(ms_since "$_t0") ms,"
	BIG_STORE="$BIG_STORE $(($(stat -c %s "$3") / 1024)) KiB"
}

# memif_vdevs ROLE DIR [LOG2_RING]: the two memif vdevs of gw_conf_memif, one
# socket per pair in DIR (server: dustgw, client: dust-gen), rings 2^LOG2_RING
memif_vdevs() {
	echo "--vdev net_memif0,role=$1,socket=$2/net.sock,socket-abstract=no,rsize=${3:-14}" \
		"--vdev net_memif1,role=$1,socket=$2/dlv.sock,socket-abstract=no,rsize=${3:-14}"
}

# ms_since NS: milliseconds from NS (date +%s%N) to now
ms_since() {
	echo $((($(date +%s%N) - $1) / 1000000))
}

# gw_start_null DUSTGW CONF LOG FILE_PREFIX SECONDS: dustgw on CONF with two
# net_null ports that receive nothing, in the background (its pid in GWPID);
# returns once its worker runs (fails if it exits first or takes over
# SECONDS), with "running MS ms after exec; VmHWM: N MiB VmRSS: N MiB " in
# GWUP: its start time (EAL, key, store and tag index, ports) and memory
gw_start_null() {
	_t0=$(date +%s%N)
	"$1" --no-huge -m 512 --no-pci --file-prefix "$4" -l 0,1 \
		--vdev net_null0,no-rx=1 --vdev net_null1,no-rx=1 -- --config "$2" >"$3" 2>&1 &
	GWPID=$!
	for _ in $(seq $(($5 * 100))); do
		! grep -q "worker 0 on lcore" "$3" || break
		kill -0 "$GWPID" 2>/dev/null || { cat "$3"; fail "dustgw exited before its worker ran"; }
		sleep 0.01
	done
	grep -q "worker 0 on lcore" "$3" || { cat "$3"; fail "dustgw's worker not running in $5 s"; }
	GWUP="running $(ms_since "$_t0") ms after exec; $(awk \
		'/^VmRSS|^VmHWM/ {printf "%s %d MiB ", $1, $2 / 1024}' "/proc/$GWPID/status")"
}

# dust-gen against a dustgw over net_memif, their pids in GEN and GW. A memif
# peer leaving while the other end polls can crash the poller, so dustgw is
# stopped first, while dust-gen lingers without polling (--linger-ms) after
# writing its JSON summary.
# gen_json_wait FILE: until FILE is whole JSON, or dust-gen has exited
gen_json_wait() {
	while kill -0 "$GEN" 2>/dev/null &&
		! /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" >/dev/null 2>&1; do
		sleep 0.1
	done
}

# gen_stop_gw WHAT LOG: SIGTERM dustgw (its summary and stats) and expect
# exit 0, else LOG and "WHAT exited with an error"; GW emptied
gen_stop_gw() {
	kill -TERM "$GW" 2>/dev/null || true
	wait "$GW" || { cat "$2"; fail "$1 exited with an error"; }
	GW=
}

# gen_reap WHAT LOG...: expect dust-gen to exit 0, else the LOGs and
# "WHAT failed"; GEN emptied
gen_reap() {
	_rc=0
	wait "$GEN" || _rc=$?
	GEN=
	_what=$1
	shift
	[ $_rc = 0 ] || { cat "$@"; fail "$_what failed"; }
}
