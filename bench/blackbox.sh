#!/bin/sh
# Black-box benchmark: dust-gen drives dustgw as a separate process over
# net_memif (one dustgw worker lcore, dust-gen on one lcore), beside the
# in-process pipeline (bench/pipeline/dgw_pipe, one worker, decode, same
# sizes, same run) and beside dust-gen alone into net_null (its own ceiling).
# Per size: a max-rate trial, then an RFC 2544-style search for the highest
# rate with loss <= LOSS percent; latency percentiles of the search result.
# Rates are wall-clock: on a shared machine they measure the machine too.
# usage: bench/blackbox.sh [BUILD_DIR] [OUT_DIR]
#        env SIZES="64 1400" SECS=2 STEPS=5 LOSS=0 GEN_CPU=0 GW_CPU=1
set -eu
. "$(dirname "$0")/../test/e2e/harness.sh" # dust_store, gw_conf_memif, memif_vdevs
BUILD=$(realpath "${1:-build}")
OUT=$(realpath -m "${2:-$(mktemp -d /tmp/dust-blackbox.XXXXXX)}")
SIZES=${SIZES:-64 1400}
SECS=${SECS:-2}
STEPS=${STEPS:-5}
LOSS=${LOSS:-0}
GEN_CPU=${GEN_CPU:-0}
GW_CPU=${GW_CPU:-1}
PY=/usr/bin/python3
mkdir -p "$OUT"
cd "$OUT"
PREFIX=dust-blackbox-$$
GW=
cleanup() {
	[ -z "$GW" ] || kill -TERM "$GW" 2>/dev/null || true
	rm -rf "/var/run/dpdk/$PREFIX"*
}
trap cleanup EXIT

dust_store "$BUILD/tools/dust-invite/dust-invite" 64
gw_conf_memif inv.store "queues = 1" "mbufs = 32767" >gw.conf
memif() { memif_vdevs "$1" "$OUT" 12; }
eal_gen="--lcores 0@$GEN_CPU --no-huge -m 1024 --no-pci --log-level=lib.eal:warning"
# One dustgw per dust-gen run, leaving first (--exit-on-idle) while dust-gen
# lingers without polling: a memif peer that leaves under a poller can crash it.
gw_start() {
	rm -f net.sock dlv.sock
	# shellcheck disable=SC2046
	"$BUILD/app/dustgw/dustgw" --lcores "0@$GEN_CPU,1@$GW_CPU" --no-huge -m 1024 --no-pci \
		--file-prefix "$PREFIX-gw" $(memif server) -- --config gw.conf --exit-on-idle 3000 \
		--stats-out "gw-$1.stats" >"gw-$1.summary" 2>"gw-$1.log" &
	GW=$!
	while [ ! -S dlv.sock ]; do sleep 0.1; done
}

: >blackbox.jsonl
for s in $SIZES; do
	pipe=null
	if [ -x "$BUILD/bench/pipeline/dgw_pipe" ]; then
		"$BUILD/bench/pipeline/dgw_pipe" --lcores "0@$GEN_CPU,1@$GW_CPU" --no-huge -m 2560 \
			--no-pci --file-prefix "$PREFIX-pipe" --log-level=4 -- --workers 1 --dir decode \
			--size "$s" >"pipe-$s.json" 2>"pipe-$s.log" &&
			pipe=$(tail -1 "pipe-$s.json")
	fi
	# shellcheck disable=SC2086
	"$BUILD/app/dust-gen/dust-gen" $eal_gen --file-prefix "$PREFIX-null" \
		--vdev net_null0,no-rx=1 --vdev net_null1,no-rx=1 -- --store inv.store --key server.key --clients 64 --size "$s" \
		--duration "$SECS" --no-confirm --quiet --json "null-$s.json" >"null-$s.out"
	gw_start "$s"
	# shellcheck disable=SC2046,SC2086
	"$BUILD/app/dust-gen/dust-gen" $eal_gen --file-prefix "$PREFIX-gen" $(memif client) -- \
		--store inv.store --key server.key --clients 64 --size "$s" --duration "$SECS" --search \
		--steps "$STEPS" --loss-max "$LOSS" --drain-ms 500 --linger-ms 5000 --quiet \
		--json "gen-$s.json" >"gen-$s.out"
	wait "$GW" || true
	GW=
	$PY - "$s" "gen-$s.json" "null-$s.json" "$pipe" >>blackbox.jsonl <<'PY'
import json, sys
size, gen, null, pipe = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), json.loads(sys.argv[4])
mx, res, alone = gen["trials"][0], gen["result"], null["trials"][0]
row = {"size": int(size),
       "pipeline_decode_mpps": pipe["mpps_per_lcore"] if pipe else None,
       "blackbox_max_rx_mpps": mx["rx_pps"] / 1e6,
       "blackbox_search_mpps": res["rx_pps"] / 1e6 if res else None,
       "search_loss_pct": res["loss_pct"] if res else None,
       "latency_us": {k: res["latency_ns"][k] / 1e3 for k in ("p50", "p99", "p99_9")} if res else None,
       "gen_alone_mpps": alone["tx_pps"] / 1e6}
if pipe:
    row["separation_ratio"] = row["blackbox_max_rx_mpps"] / pipe["mpps_per_lcore"]
    row["gen_headroom"] = row["gen_alone_mpps"] / pipe["mpps_per_lcore"]
print(json.dumps(row))
PY
done
$PY - blackbox.jsonl <<'PY'
import json, sys
f = lambda v, p="%.3f": "-" if v is None else p % v
print("| inner B | pipeline decode Mpps/lcore | black box max Mpps | ratio | search Mpps (loss <= limit) | latency us p50 / p99 / p99.9 | dust-gen alone Mpps | headroom |")
print("|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    lat = r["latency_us"]
    print("| %d | %s | %s | %s | %s | %s | %s | %s |" % (r["size"], f(r["pipeline_decode_mpps"]),
          f(r["blackbox_max_rx_mpps"]), f(r.get("separation_ratio"), "%.2f"), f(r["blackbox_search_mpps"]),
          "%.0f / %.0f / %.0f" % (lat["p50"], lat["p99"], lat["p99_9"]) if lat else "-",
          f(r["gen_alone_mpps"]), f(r.get("gen_headroom"), "%.2fx")))
PY
echo "raw: $OUT/blackbox.jsonl; dustgw's counters: $OUT/gw-SIZE.stats"
