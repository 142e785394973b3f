#!/bin/sh
# dust-gen's Prometheus endpoint (--prometheus ADDR:PORT) while it drives
# dustgw over net_memif, both directions: a scrape during the trial shows
# probes counted so far (fewer than at the end), the scrape after it equals
# dust-gen's own JSON summary (probes sent and received each way, the
# latency histogram's count, intros), the histogram's buckets rise to +Inf,
# and promtool accepts both scrapes. A port in use stops dust-gen at once
# with a message naming it.
# usage: gen-prometheus.sh DUSTGW DUST_GEN DUST_INVITE WORKDIR
DUSTGEN=$(realpath "$2")
set -- "$1" "$1" "$3" "$4"
. "$(dirname "$0")/lib.sh"

command -v promtool >/dev/null || fail "no promtool (package prometheus: tools/bootstrap test)"
command -v curl >/dev/null || fail "no curl"

make_store 8
gw_conf_memif inv.store "queues = 1" >gw.conf
memif() { memif_vdevs "$1" "$WORK"; }
GW=
GEN=
HOLD=
stop_all() {
	[ -z "$HOLD" ] || kill "$HOLD" 2>/dev/null || true
	[ -z "$GEN" ] || kill -TERM "$GEN" 2>/dev/null || true
	[ -z "$GW" ] || kill -TERM "$GW" 2>/dev/null || true
	rm -rf "/var/run/dpdk/$PREFIX" "/var/run/dpdk/$PREFIX-gen"
}
trap stop_all EXIT
PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT/metrics
val() { # val FILE EXPR: a value of dust-gen's JSON summary
	/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"
}
# m FILE NAME [LABELS]: the sum of a scrape's samples of NAME whose labels contain LABELS
m() {
	awk -v n="$2" -v l="${3:-}" '$1 == n || index($1, n "{") == 1 {
		if (l == "" || index($1, l)) s += $2 } END { printf "%.0f\n", s }' "$1"
}

# shellcheck disable=SC2046
"$DUSTGW" --lcores "$(lcores 1)" --no-huge -m 512 --no-pci --file-prefix "$PREFIX" \
	$(memif server) -- --config gw.conf >gw.summary 2>gw.log &
GW=$!
for _ in $(seq 1800); do [ -S dlv.sock ] && break; kill -0 $GW 2>/dev/null || break; sleep 0.1; done
[ -S dlv.sock ] || { cat gw.log; fail "dustgw did not create its memif sockets"; }
# shellcheck disable=SC2046
timeout 120 "$DUSTGEN" --lcores 0@0 --no-huge -m 512 --no-pci --file-prefix "$PREFIX-gen" \
	$(memif client) -- --store inv.store --key server.key --clients 8 --size 300 --pps 2000 --duration 4 \
	--dir both --drain-ms 1500 --linger-ms 8000 --json gen.json --prometheus "127.0.0.1:$PORT" \
	>gen.out 2>gen.log &
GEN=$!

# during the trial: the first scrape with probes sent, before the JSON exists
mid=
while kill -0 "$GEN" 2>/dev/null && [ ! -s gen.json ]; do
	if curl -sf "$URL" -o s.txt && [ "$(m s.txt dustgen_probes_sent_total 'dir="forward"')" -gt 0 ] &&
		[ ! -s gen.json ]; then
		mv s.txt mid.txt
		mid=1
		break
	fi
	sleep 0.2
done
[ -n "$mid" ] || { cat gen.log gen.out; fail "no scrape during the trial showed probes sent"; }
gen_json_wait gen.json
val gen.json True >/dev/null 2>&1 || { cat gen.log gen.out; fail "dust-gen wrote no JSON"; }
gen_stop_gw dustgw gw.log
# after the trial, while dust-gen lingers: the final counts
curl -sf "$URL" -o end.txt || { cat gen.log; fail "no scrape after the trial"; }
gen_reap dust-gen gen.log gen.out
cat gen.out

promtool check metrics <mid.txt || fail "promtool check metrics (during the trial)"
promtool check metrics <end.txt || fail "promtool check metrics (after the trial)"
for d in forward reverse; do
	j='r["result"]'
	[ $d = reverse ] && j='r["result"]["reverse"]'
	tx=$(val gen.json "${j}[\"tx\"]")
	rx=$(val gen.json "${j}[\"rx\"]")
	[ "$tx" -gt 200 ] || fail "$d: only $tx probes sent"
	[ "$(m end.txt dustgen_probes_sent_total "dir=\"$d\"")" = "$tx" ] ||
		fail "$d: dustgen_probes_sent_total $(m end.txt dustgen_probes_sent_total "dir=\"$d\"") != JSON tx $tx"
	[ "$(m end.txt dustgen_probes_received_total "dir=\"$d\"")" = "$rx" ] ||
		fail "$d: dustgen_probes_received_total != JSON rx $rx"
	[ "$(m end.txt dustgen_latency_seconds_count "dir=\"$d\"")" = "$rx" ] ||
		fail "$d: latency histogram count != JSON rx $rx"
	[ "$(m end.txt dustgen_latency_seconds_bucket "dir=\"$d\",le=\"+Inf\"")" = "$rx" ] ||
		fail "$d: +Inf bucket != count"
	# buckets never fall as le grows (the exposition lists them in order)
	awk -v d="dir=\"$d\"" 'index($1, "dustgen_latency_seconds_bucket{") == 1 && index($1, d) {
		if ($2 < last) bad = 1; last = $2 } END { exit bad }' end.txt ||
		fail "$d: latency buckets are not cumulative"
	sent_mid=$(m mid.txt dustgen_probes_sent_total "dir=\"$d\"")
	[ "$sent_mid" -lt "$tx" ] || fail "$d: the mid-trial scrape ($sent_mid) is not below the end ($tx)"
done
[ "$(m end.txt dustgen_intros_total)" = "$(val gen.json 'r["churn"]["intros"]')" ] ||
	fail "dustgen_intros_total != the JSON's intros"
[ "$(m end.txt dustgen_clients_up)" = 8 ] || fail "dustgen_clients_up is not 8"
[ "$(m end.txt dustgen_trials_total)" = 1 ] || fail "dustgen_trials_total is not 1"
[ "$(m mid.txt dustgen_offered_rate_pps)" = 2000 ] || fail "offered rate is not 2000 during the trial"
echo "scraped: forward $(m end.txt dustgen_probes_received_total 'dir="forward"'), reverse" \
	"$(m end.txt dustgen_probes_received_total 'dir="reverse"') received; mid-trial" \
	"$(m mid.txt dustgen_probes_sent_total 'dir="forward"') sent"

# a port in use: dust-gen stops before it touches a port, naming it
/usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); time.sleep(60)' "$PORT" &
HOLD=$!
sleep 0.5
if "$DUSTGEN" --lcores 0@0 --no-huge -m 512 --no-pci --file-prefix "$PREFIX-gen" -- \
	--store inv.store --key server.key --duration 1 --prometheus "127.0.0.1:$PORT" >busy.out 2>&1; then
	fail "dust-gen ran with its Prometheus port in use"
fi
grep -q "dust-gen: --prometheus 127.0.0.1:$PORT: Address already in use" busy.out ||
	{ cat busy.out; fail "no clear message for a port in use"; }
echo "PASS gen-prometheus"
