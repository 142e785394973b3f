#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A dust-gen run watched by Prometheus: dustgw and dust-gen over net_memif
# (as bench/blackbox.sh), both serving /metrics, a Prometheus on loopback
# scraping both every second, and a PNG of what it recorded, drawn from its
# HTTP API (query_range) with gnuplot: offered and received probes/s per
# direction beside dustgw's decoded/s, and the probes' p50/p99 latency.
# dust-gen runs --search, so the graph shows each trial's rate.
#
# usage: bench/prom-graph.sh [BUILD_DIR] [OUT_DIR]   (root; Debian prometheus, gnuplot-nox)
# env: CLIENTS=32 SIZE=512 SECS=4 STEPS=4
set -eu
. "$(dirname "$0")/../test/e2e/harness.sh" # dust_store, gw_conf_memif, memif_vdevs
BUILD=$(realpath "${1:-build}")
OUT=$(realpath -m "${2:-$(mktemp -d /tmp/dust-prom-graph.XXXXXX)}")
CLIENTS=${CLIENTS:-32}
SIZE=${SIZE:-512}
SECS=${SECS:-4}
STEPS=${STEPS:-4}
PY=/usr/bin/python3
for p in prometheus gnuplot curl; do
	command -v $p >/dev/null || { echo "prom-graph: no $p" >&2; exit 1; }
done
mkdir -p "$OUT"
cd "$OUT"
PREFIX=dust-prom-graph-$$
GW=
GEN=
PROM=
cleanup() {
	for p in $GEN $GW $PROM; do kill -TERM "$p" 2>/dev/null || true; done
	rm -rf "/var/run/dpdk/$PREFIX"*
}
trap cleanup EXIT
port() { $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
GWP=$(port) GENP=$(port) PP=$(port)

dust_store "$BUILD/tools/dust-invite/dust-invite" "$CLIENTS"
gw_conf_memif inv.store "mbufs = 32767" "[telemetry]" \
	"prometheus = 127.0.0.1:$GWP" >gw.conf
cat >prometheus.yml <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: dustgw
    static_configs: [{targets: ['127.0.0.1:$GWP']}]
  - job_name: dust-gen
    static_configs: [{targets: ['127.0.0.1:$GENP']}]
YML
prometheus --config.file=prometheus.yml --storage.tsdb.path=tsdb \
	--web.listen-address="127.0.0.1:$PP" >prometheus.log 2>&1 &
PROM=$!
memif() { memif_vdevs "$1" "$OUT" 12; }
# shellcheck disable=SC2046
"$BUILD/app/dustgw/dustgw" --lcores 0@0,1@1 --no-huge -m 1024 --no-pci --file-prefix "$PREFIX-gw" \
	$(memif server) -- --config gw.conf >gw.summary 2>gw.log &
GW=$!
while [ ! -S dlv.sock ]; do kill -0 $GW || exit 1; sleep 0.1; done
sleep 3 # a few scrapes of the idle gateway first
T0=$(date +%s)
# shellcheck disable=SC2046
"$BUILD/app/dust-gen/dust-gen" --lcores 0@0 --no-huge -m 1024 --no-pci --file-prefix "$PREFIX-gen" \
	$(memif client) -- --store inv.store --key server.key --clients "$CLIENTS" --size "$SIZE" --duration "$SECS" \
	--search --steps "$STEPS" --drain-ms 500 --linger-ms 8000 --quiet --json gen.json \
	--prometheus "127.0.0.1:$GENP" >gen.out 2>gen.log &
GEN=$!
while kill -0 $GEN 2>/dev/null && ! $PY -c 'import json; json.load(open("gen.json"))' 2>/dev/null; do
	sleep 0.2
done
sleep 3 # the last scrapes of dust-gen, while it lingers
kill -TERM $GW
wait $GW || true
GW=
wait $GEN || true
GEN=
T1=$(date +%s)
cat gen.out

q() { # q NAME EXPR: query_range over the run into NAME.dat (seconds since T0, value)
	curl -sf "http://127.0.0.1:$PP/api/v1/query_range" --data-urlencode "query=$2" \
		--data-urlencode "start=$T0" --data-urlencode "end=$T1" --data-urlencode step=1 |
		$PY -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
for t, v in (r[0]["values"] if r else []):
    print(float(t) - float(sys.argv[1]), v)' "$T0" >"$1.dat"
}
q sent 'sum(rate(dustgen_probes_sent_total{dir="forward"}[3s]))'
q received 'sum(rate(dustgen_probes_received_total{dir="forward"}[3s]))'
q decoded 'sum(rate(dustgw_decoded_total[3s]))'
q p50 'histogram_quantile(0.5, sum by (le) (rate(dustgen_latency_seconds_bucket{dir="forward"}[3s]))) * 1e3'
q p99 'histogram_quantile(0.99, sum by (le) (rate(dustgen_latency_seconds_bucket{dir="forward"}[3s]))) * 1e3'
gnuplot <<'GP'
set terminal pngcairo size 1000,650 font ",10"
set output "dust-gen-prometheus.png"
set multiplot layout 2,1 title "dust-gen against dustgw over memif, as Prometheus recorded it (1 s scrapes, rate over 3 s)"
set ylabel "probes/s"
set key top right
set grid
plot "sent.dat" using 1:2 with lines lw 2 title "dust-gen sent (forward)", \
     "received.dat" using 1:2 with lines lw 2 title "dust-gen received", \
     "decoded.dat" using 1:2 with lines dt 2 title "dustgw decoded"
set ylabel "latency, ms"
set xlabel "seconds since dust-gen started"
set logscale y
plot "p50.dat" using 1:2 with lines lw 2 title "p50", \
     "p99.dat" using 1:2 with lines lw 2 title "p99"
unset multiplot
GP
echo "prom-graph: $OUT/dust-gen-prometheus.png"
