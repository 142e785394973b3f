#!/bin/sh
# dust-gen against dustgw, two processes over net_memif. Run 1: 16 clients
# introduce (real intros, bound at first use) and offer 5000 pps for 2 s:
# every probe comes back (delivered = offered; how many a starved process
# manages to send is not asserted), latency is reported. Run 2, against a
# restarted dustgw, is the same clients again (keys derived from their
# invitations, bindings from the store's journal) at 20000 pps with its
# delivery-side reads stalled for 1 s: dustgw's TX toward it overflows, and
# the loss dust-gen counts equals what dustgw counted as not sent. Run 3
# offers both directions at once (--dir both): Dust in and cleartext out,
# and cleartext in to the tunnel addresses with Dust back, which dust-gen
# opens and checks; each way delivered = offered, and dustgw's counters
# (decoded, delivered; dlv_rx, encoded) equal dust-gen's. Its 4 clients come
# from sealed invitation texts and their password file (--invites), made
# for this run and so bound at first use by it. It runs dust-gen on 2 lcores
# (a queue pair each on both memif ports) against dustgw with 2 workers
# (queues = 2): each worker carries one lcore's 2 clients. A quic-profile
# invitation is refused with a clear message (dust-gen sends the random one).
# memif: the client sets ring sizes (16384 slots ride out a busy machine's
# scheduling stalls; run 2's rings have 1024, so little is still queued in
# a slow dustgw when the trial ends, and it drains 3 s). A memif peer leaving
# while the other end polls can crash the poller (DPDK 22.11 frees the rings
# under it), so dustgw leaves first while dust-gen lingers without polling:
# the script stops dustgw (SIGTERM: it prints its summary and writes its
# stats) once dust-gen's JSON is whole, i.e. its traffic and drain are over.
# No idle exit: dustgw's idle clock runs from its own start, and a loaded
# machine delayed dust-gen's start past any fixed bound.
# usage: gw-dust-gen.sh DUSTGW DUST_GEN DUST_INVITE WORKDIR
DUSTGEN=$(realpath "$2")
set -- "$1" "$1" "$3" "$4"
. "$(dirname "$0")/lib.sh"

make_store 24
gw_conf_memif inv.store "queues = 1" >gw.conf
sed 's/^queues = 1$/queues = 2/' gw.conf >gw2.conf
memif() { memif_vdevs "$1" "$WORK" "${2:-14}"; } # memif ROLE [LOG2_RING]
GW=
GEN=
cleanup_gen() {
	[ -z "$GEN" ] || kill -TERM "$GEN" 2>/dev/null || true
	[ -z "$GW" ] || kill -TERM "$GW" 2>/dev/null || true
	rm -rf "/var/run/dpdk/$PREFIX" "/var/run/dpdk/$PREFIX-gen"
}
trap cleanup_gen EXIT

val() { # val FILE EXPR: a value of dust-gen's JSON summary
	/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"
}
run() { # run NAME DLV_LOG2_RING DUST-GEN-ARGS...: one dustgw, one dust-gen
	name=$1
	ring=$2
	shift 2
	rm -f net.sock dlv.sock
	# shellcheck disable=SC2046
	"$DUSTGW" --lcores "$(lcores "${WORKERS:-1}")" --no-huge -m 512 --no-pci \
		--file-prefix "$PREFIX" $(memif server) -- --config "${CONF:-gw.conf}" \
		--stats-out "$name.stats" >"$name.gw.summary" 2>"$name.gw.log" &
	GW=$!
	# memif sockets come after EAL start (over 10 s for ASan under load): up to 180 s
	for _ in $(seq 1800); do [ -S dlv.sock ] && break; kill -0 $GW 2>/dev/null || break; sleep 0.1; done
	[ -S dlv.sock ] || { cat "$name.gw.log"; fail "dustgw did not create its memif sockets"; }
	rm -f "$name.json"
	# shellcheck disable=SC2046,SC2086
	timeout 120 "$DUSTGEN" --lcores "${GEN_LCORES:-0@0}" --no-huge -m 512 --no-pci \
		--file-prefix "$PREFIX-gen" $(memif client "$ring") -- ${SRC:---store inv.store --key server.key --clients 16} \
		--size 300 --duration 2 --drain-ms 1500 --linger-ms 10000 \
		--json "$name.json" "$@" >"$name.out" 2>"$name.log" &
	GEN=$!
	# dust-gen writes its JSON after its drain, then lingers 10 s without
	# polling: dustgw is stopped in that time (or once dust-gen has failed)
	gen_json_wait "$name.json"
	gen_stop_gw "dustgw ($name)" "$name.gw.log"
	gen_reap "dust-gen $name" "$name.log" "$name.out"
	cat "$name.out"
	cat "$name.gw.summary"
}
st() { sed -n "s/^$2 //p" "$1.stats"; }
# data packets dustgw authenticated: decoded less the keepalives (each client
# confirms its answer with one, SPEC §9.1)
data() { echo $(( $(st "$1" ctr.decoded) - $(st "$1" ctr.keepalive_rx) )); }

run run1 14 --pps 5000
[ "$(val run1.json 'r["result"]["lost"]')" = 0 ] || fail "run 1 lost packets below capacity"
[ "$(val run1.json 'r["result"]["rx"] == r["result"]["tx"] > 500')" = True ] ||
	fail "run 1: delivered != offered"
[ "$(val run1.json 'r["result"]["latency_ns"]["samples"] == r["result"]["rx"] and
	0 < r["result"]["latency_ns"]["p50"] <= r["result"]["latency_ns"]["p99"] <=
	r["result"]["latency_ns"]["p99_9"]')" = True ] || fail "run 1: no latency percentiles"
[ "$(data run1)" = "$(val run1.json 'r["result"]["tx"]')" ] ||
	fail "run 1: dustgw decoded $(data run1) of dust-gen's probes"
[ "$(st run1 ctr.intro_first_use)" = 16 ] || fail "run 1: expected 16 bindings"

run run2 10 --pps 20000 --stall-ms 1000 --drain-ms 3000
tx2=$(val run2.json 'r["result"]["tx"]')
lost2=$(val run2.json 'r["result"]["lost"]')
[ "$lost2" -gt 0 ] || fail "run 2: the stall caused no loss"
[ "$(data run2)" = "$tx2" ] || fail "dustgw decoded $(data run2), dust-gen sent $tx2"
[ "$(st run2 ctr.intro_ok)" = 16 ] && [ "$(st run2 ctr.intro_first_use)" = 0 ] ||
	fail "run 2: the bound clients were not re-admitted with their own keys"
gw_lost=$(( $(st run2 ctr.delivered) - $(st run2 ctr.dlv_tx) ))
[ "$gw_lost" = "$lost2" ] || fail "dust-gen lost $lost2, dustgw did not send $gw_lost"
[ "$(st run2 drop.tx_full)" = "$lost2" ] || fail "dustgw tx_full $(st run2 drop.tx_full) != $lost2"
echo "run 2: $(val run2.json 'r["result"]["rx"]') received, $lost2 lost on both sides"

printf 'test-only password\n' >pw.txt
"$INVITE" create --store inv.store --key server.key --server 10.0.0.1 --port 4433 \
	--tunnel-net 10.9.0.0/16 --count 4 --out-dir texts --password-file pw.txt >/dev/null
SRC="--invites texts --password-file pw.txt" CONF=gw2.conf WORKERS=2 GEN_LCORES=$(lcores 1) \
	run run3 14 --pps 2000 --dir both
[ "$(val run3.json 'r["clients"]')" = 4 ] || fail "run 3: not the 4 clients of the texts"
[ "$(st run3 ctr.intro_first_use)" = 4 ] || fail "run 3: expected the 4 new invitations bound"
for d in 'r["result"]' 'r["result"]["reverse"]'; do
	[ "$(val run3.json "$d[\"lost\"] == 0 and $d[\"rx\"] == $d[\"tx\"] > 200 and
		$d[\"latency_ns\"][\"samples\"] == $d[\"rx\"]")" = True ] ||
		fail "run 3: $d: delivered != offered"
done
[ "$(data run3)" = "$(val run3.json 'r["result"]["tx"]')" ] &&
	[ "$(st run3 ctr.delivered)" = "$(val run3.json 'r["result"]["rx"]')" ] ||
	fail "run 3: forward counts differ from dustgw's"
[ "$(st run3 ctr.dlv_rx)" = "$(val run3.json 'r["result"]["reverse"]["tx"]')" ] &&
	[ "$(st run3 ctr.encoded)" = "$(val run3.json 'r["result"]["reverse"]["rx"]')" ] ||
	fail "run 3: reverse counts differ from dustgw's (dlv_rx, encoded)"
for w in w0 w1; do
	[ "$(st run3 $w.ctr.decoded)" -gt 100 ] && [ "$(st run3 $w.ctr.encoded)" -gt 100 ] &&
		[ "$(st run3 $w.ctr.intro_ok)" -ge 2 ] ||
		fail "run 3: dustgw worker $w did not carry one dust-gen lcore's 2 clients"
done
# (an intro retried after a slow answer counts twice, on both sides)
[ "$(st run3 ctr.intro_ok)" = "$(val run3.json 'r["churn"]["intros"]')" ] ||
	fail "run 3: dustgw intro_ok $(st run3 ctr.intro_ok) != dust-gen's intros"
echo "run 3: $(val run3.json 'r["result"]["rx"]') forward, $(val run3.json 'r["result"]["reverse"]["rx"]') reverse, none lost"
# quic invitations are refused: dust-gen sends the random profile only, and
# its sizes would not keep the quic bounds (SPEC §12.4)
"$INVITE" create --store q.store --key server.key --server 10.0.0.1 --port 443 \
	--tunnel-net 10.9.0.0/16 --count 1 --store-only --profile quic \
	--cover-sni www.example.com >/dev/null
if "$DUSTGEN" --lcores 0@0 --no-huge -m 512 --no-pci --file-prefix "$PREFIX-gen" -- \
	--store q.store --key server.key --duration 1 >q.out 2>q.log; then
	fail "dust-gen took a quic-profile invitation"
fi
grep -q "quic-profile one: dust-gen sends the random profile only" q.log ||
	{ cat q.log; fail "dust-gen's refusal of a quic invitation is unclear"; }
# numbers are checked whole ("1x" was 1, "x" 0), before any port is touched
for bad in "--clients 1x" "--duration x" "--size 20"; do
	# shellcheck disable=SC2086 # one option and its value
	if "$DUSTGEN" --lcores 0@0 --no-huge -m 512 --no-pci --file-prefix "$PREFIX-gen" -- \
		--store q.store $bad >q.out 2>q.log; then
		fail "dust-gen took $bad"
	fi
	grep -q -- "${bad%% *} '${bad#* }': want a" q.log || { cat q.log; fail "unclear error for $bad"; }
done
echo "PASS gw-dust-gen"
