#!/bin/sh
# Soak: dust-gen drives dustgw over net_memif at a steady rate for SECS
# seconds while dustgw's RSS is sampled every second; then checks zero loss,
# dust-gen's counts equal to dustgw's (decoded = sent, delivered = received)
# and RSS flat after warm-up (the first fifth of the run): the last sample
# within 2% (at least 1 MiB) of the first after warm-up. No churn yet: the
# same clients stay up the whole run (see /work/notes or the README).
# usage: bench/soak.sh [BUILD_DIR] [OUT_DIR]   env SECS=600 PPS=20000 CLIENTS=256 SIZE=512
set -eu
BUILD=$(realpath "${1:-build}")
OUT=$(realpath -m "${2:-$(mktemp -d /tmp/dust-soak.XXXXXX)}")
SECS=${SECS:-600}
PPS=${PPS:-20000}
CLIENTS=${CLIENTS:-256}
SIZE=${SIZE:-512}
PY=/usr/bin/python3
mkdir -p "$OUT"
cd "$OUT"
PREFIX=dust-soak-$$
GW=
cleanup() {
	[ -z "$GW" ] || kill -TERM "$GW" 2>/dev/null || true
	rm -rf "/var/run/dpdk/$PREFIX"*
}
trap cleanup EXIT
fail() {
	echo "soak: FAIL: $*" >&2
	exit 1
}

"$BUILD/tools/dust-invite/dust-invite" keygen --out server.key >/dev/null
"$BUILD/tools/dust-invite/dust-invite" create --store inv.store --key server.key \
	--server 10.0.0.1 --port 4433 --tunnel-net 10.9.0.0/16 --count "$CLIENTS" \
	--store-only >/dev/null
cat >gw.conf <<CONF
[gateway]
ipv4 = 10.0.0.1
udp_port = 4433
key_file = server.key
store = inv.store
[ports]
net = net_memif0
delivery = net_memif1
queues = 1
[sessions]
max_per_lcore = $((CLIENTS + 64))
CONF
memif() {
	echo "--vdev net_memif0,role=$1,socket=$OUT/net.sock,socket-abstract=no,rsize=14" \
		"--vdev net_memif1,role=$1,socket=$OUT/dlv.sock,socket-abstract=no,rsize=14"
}
rm -f net.sock dlv.sock
# shellcheck disable=SC2046
"$BUILD/app/dustgw/dustgw" --lcores "0@0,1@1" --no-huge -m 1024 --no-pci \
	--file-prefix "$PREFIX-gw" $(memif server) -- --config gw.conf --exit-on-idle 4000 \
	--stats-out gw.stats >gw.summary 2>gw.log &
GW=$!
while [ ! -S dlv.sock ]; do sleep 0.1; done
(
	while kill -0 "$GW" 2>/dev/null; do
		awk '/^VmRSS:/ { print $2 }' "/proc/$GW/status" 2>/dev/null || true
		sleep 1
	done
) >rss.txt &
# shellcheck disable=SC2046
"$BUILD/app/dust-gen/dust-gen" --lcores 0@0 --no-huge -m 1024 --no-pci \
	--file-prefix "$PREFIX-gen" --log-level=lib.eal:warning $(memif client) -- \
	--store inv.store --clients "$CLIENTS" --size "$SIZE" --pps "$PPS" --duration "$SECS" \
	--drain-ms 2000 --linger-ms 6000 --json gen.json >gen.out
wait "$GW" || fail "dustgw exited with an error"
GW=
tail -3 gen.out
$PY - gen.json gw.stats rss.txt "$SECS" <<'PY' || fail "see above"
import json, sys
r = json.load(open(sys.argv[1]))["result"]
st = dict(l.split() for l in open(sys.argv[2]) if len(l.split()) == 2)
rss = [int(x) for x in open(sys.argv[3]).read().split()]
secs = int(float(sys.argv[4]))
ok = True
def check(cond, what):
    global ok
    print("soak: %s %s" % ("ok  " if cond else "FAIL", what))
    ok &= cond
check(r["lost"] == 0, "zero loss (sent %d, received %d)" % (r["tx"], r["rx"]))
check(int(st["ctr.decoded"]) == r["tx"], "dustgw decoded %s = dust-gen sent %d" % (st["ctr.decoded"], r["tx"]))
check(int(st["ctr.delivered"]) == r["rx"], "dustgw delivered %s = dust-gen received %d" % (st["ctr.delivered"], r["rx"]))
w = max(1, len(rss) // 5)
check(len(rss) > w + 1, "%d RSS samples" % len(rss))
if len(rss) > w + 1:
    a, b = rss[w], rss[-1]
    check(b - a <= max(1024, a // 50), "RSS flat after warm-up: %d kB at %d s, %d kB at the end (max %d kB)" % (a, w, b, max(rss[w:])))
print("soak: latency us p50 %.1f p99 %.1f p99.9 %.1f; %d s at %.0f pps" % (
    r["latency_ns"]["p50"] / 1e3, r["latency_ns"]["p99"] / 1e3, r["latency_ns"]["p99_9"] / 1e3, secs, r["tx_pps"]))
sys.exit(0 if ok else 1)
PY
echo "soak: PASS ($OUT)"
