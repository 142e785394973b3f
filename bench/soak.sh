#!/bin/sh
# Soak: dust-gen drives dustgw over net_memif for SECS seconds with churn
# (clients joining late, going idle until the gateway expires them, roaming
# to new source ports, re-introducing) while dustgw's RSS is sampled every
# second, in both directions (Dust in and cleartext out; cleartext in to the
# tunnel addresses and Dust out). It then checks: zero loss each way; every
# dust-gen count equal to dustgw's counter (sent = decoded, received =
# delivered; reverse sent = dlv_rx, reverse received = encoded; intros =
# intro_ok + the retried ones dropped as replays, joins = first uses, idle
# silences = sessions_expired, roams = sessions_evicted, keepalives =
# keepalive_tx); every churn kind happened; RSS flat after
# warm-up. "Flat": over the traffic's seconds after the warm-up, max - min
# of dustgw's VmRSS less the part in memif's shared regions is at most
# RSS_SLACK_KB (1024 kB). dustgw allocates its pools and tables at start;
# what still grows is pages touched for the first time. The memif regions
# are left out: their buffers (2^RSIZE slots of 2 KB per ring) are touched
# as each ring first wraps, 2 kB per packet, and the rings that carry only
# keepalives take hours to wrap; they are bounded by the mapping's size and
# their RSS is printed. The warm-up is the first fifth of the run, at least
# 10 s and at least the time the busy rings take to wrap + 5 s (DPDK's own
# memory, its mbufs among them, is touched by then). A leak of a few bytes
# per packet, or a page per churn event, grows past 1 MiB in a 10-minute soak.
# PPS=auto (the default) first runs a short dust-gen --search against a
# throwaway dustgw (on a copy of the store) and soaks at half its result.
# usage: bench/soak.sh [BUILD_DIR] [OUT_DIR]
#   env SECS=600 PPS=auto CLIENTS=256 SIZE=512 CHURN=2 IDLE_TIMEOUT=10 RSS_SLACK_KB=1024
#       RSIZE=14 (log2 of the memif ring slots) DIR=both (dust-gen --dir: fwd, rev, both;
#       the rate is PPS each way)
# Exits 0 on PASS; the CI runs SECS=60 at a low fixed rate (test gw-soak).
set -eu
. "$(dirname "$0")/../test/e2e/harness.sh" # dust_store, gw_conf_memif, memif_vdevs, gen_*
BUILD=$(realpath "${1:-build}")
OUT=$(realpath -m "${2:-$(mktemp -d /tmp/dust-soak.XXXXXX)}")
SECS=${SECS:-600}
PPS=${PPS:-auto}
CLIENTS=${CLIENTS:-256}
START=${START:-$((CLIENTS / 2))}
SIZE=${SIZE:-512}
CHURN=${CHURN:-2}
IDLE_TIMEOUT=${IDLE_TIMEOUT:-10}
RSS_SLACK_KB=${RSS_SLACK_KB:-1024}
RSIZE=${RSIZE:-14}
DIR=${DIR:-both}
GW_LCORES=${GW_LCORES:-0@0,1@$(($(nproc) > 1 ? 1 : 0))}
PY=/usr/bin/python3
mkdir -p "$OUT"
cd "$OUT"
PREFIX=dust-soak-$$
GW=
GEN=
cleanup() {
	[ -z "$GEN" ] || kill -TERM "$GEN" 2>/dev/null || true
	[ -z "$GW" ] || kill -TERM "$GW" 2>/dev/null || true
	rm -rf "/var/run/dpdk/$PREFIX"*
}
trap cleanup EXIT
fail() {
	echo "soak: FAIL: $*" >&2
	exit 1
}

dust_store "$BUILD/tools/dust-invite/dust-invite" "$CLIENTS"
conf() { # conf STORE: the gateway's configuration (idle expiry IDLE_TIMEOUT s)
	gw_conf_memif "$1" "queues = 1" "[sessions]" "max_per_lcore = $((CLIENTS + 64))" \
		"idle_timeout_s = $IDLE_TIMEOUT"
}
memif() { memif_vdevs "$1" "$OUT" "$RSIZE"; }
# gw NAME: start dustgw on NAME.conf. gen stops it (SIGTERM: its summary and
# stats) once dust-gen's JSON is whole, i.e. right after dust-gen's drain,
# before any session still up can reach its idle expiry, and while dust-gen
# lingers without polling (see dust-gen --linger-ms). No idle exit: dustgw's
# idle clock runs from its own start, which a slow dust-gen start outlasts.
gw() {
	rm -f net.sock dlv.sock
	# shellcheck disable=SC2046
	"$BUILD/app/dustgw/dustgw" --lcores "$GW_LCORES" --no-huge -m 1024 --no-pci \
		--file-prefix "$PREFIX-gw" $(memif server) -- --config "$1.conf" \
		--stats-out "$1.stats" >"$1.summary" 2>"$1.log" &
	GW=$!
	for _ in $(seq 600); do [ -S dlv.sock ] && break; sleep 0.1; done
	[ -S dlv.sock ] || { cat "$1.log"; fail "dustgw made no memif sockets"; }
}
gen() { # gen NAME DUST-GEN-ARGS...: dust-gen against the running dustgw
	name=$1
	shift
	rm -f "$name.json"
	# shellcheck disable=SC2046
	"$BUILD/app/dust-gen/dust-gen" --lcores 0@0 --no-huge -m 1024 --no-pci \
		--file-prefix "$PREFIX-gen" --log-level=lib.eal:warning $(memif client) -- \
		--size "$SIZE" --drain-ms 2000 --linger-ms 12000 --json "$name.json" "$@" \
		>"$name.out" 2>"$name.log" &
	GEN=$!
	gen_json_wait "$name.json"
	gen_stop_gw "dustgw ($name)" "$name.log"
	gen_reap "dust-gen ($name)" "$name.log" "$name.out"
}

if [ "$PPS" = auto ]; then
	cp inv.store search.store
	conf search.store >search.conf
	gw search
	gen search --store search.store --key server.key --clients "$CLIENTS" --dir "$DIR" --search --duration 2 \
		--steps 5 --quiet
	PPS=$($PY -c "import json,sys; r=json.load(open(sys.argv[1]))['result']; print(int(max(r['tx_pps'], r.get('reverse', {}).get('tx_pps', 0)) / 2) if r else 0)" search.json)
	[ "$PPS" -gt 0 ] || fail "the search found no rate without loss"
	echo "soak: capacity search $((PPS * 2)) pps ($DIR) without loss: soaking at $PPS pps"
fi

conf inv.store >soak.conf
gw soak
(
	# when (unix s), VmRSS and the part of it in memif's shared regions, in kB
	while kill -0 "$GW" 2>/dev/null; do
		printf '%s ' "$(date +%s.%N)"
		awk '/^VmRSS:/ { print $2 }' "/proc/$GW/status" 2>/dev/null | tr '\n' ' ' || true
		awk '/memif_region/ { m = 1; next } /^[0-9a-f]+-/ { m = 0 } m && /^Rss:/ { s += $2 }
			END { print s + 0 }' "/proc/$GW/smaps" 2>/dev/null || true
		sleep 1
	done
) >rss.txt &
T0=$(date +%s.%N)
gen soak --store inv.store --key server.key --clients "$CLIENTS" --dir "$DIR" --start-clients "$START" --pps "$PPS" \
	--duration "$SECS" --churn "$CHURN" --idle-s $((IDLE_TIMEOUT + 8))
tail -4 soak.out
$PY - soak.json soak.stats rss.txt "$SECS" "$START" "$CHURN" "$RSS_SLACK_KB" "$RSIZE" "$T0" <<'PY' || fail "see above"
import json, sys
j = json.load(open(sys.argv[1]))
r, ch = j["result"], j["churn"]
st = dict(l.split() for l in open(sys.argv[2]) if len(l.split()) == 2)
# each sample: when, VmRSS, memif's part; kept from the generator's start on, by time
# (a loaded machine stretches the sampler's 1 s, so an index is no second)
t0 = float(sys.argv[9])
sm = [l.split() for l in open(sys.argv[3]) if len(l.split()) == 3]
sm = [(float(t) - t0, int(a), int(m)) for t, a, m in sm if float(t) >= t0]
rss = [a - m for t, a, m in sm]
mem = [m for t, a, m in sm]
secs, start, churn, slack = int(float(sys.argv[4])), int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
ok = True
def check(cond, what):
    global ok
    print("soak: %s %s" % ("ok  " if cond else "FAIL", what))
    ok &= cond
def eq(gen, gw, what):
    check(int(st[gw]) == gen, "%s: dust-gen %d, dustgw %s %s" % (what, gen, gw, st[gw]))
fwd, rev = r, r.get("reverse")
for name, d in (("forward", fwd), ("reverse", rev)):
    if d and (d is rev or d["tx"] or not rev):
        check(d["lost"] == 0 and d["duplicates"] == 0 and d["tx"] > 0,
              "%s: zero loss (sent %d, received %d, duplicates %d)" % (name, d["tx"], d["rx"], d["duplicates"]))
# each client confirms its answer with a keepalive (SPEC §9.1): decoded counts them
check(int(st["ctr.decoded"]) - int(st["ctr.keepalive_rx"]) == fwd["tx"],
      "probes sent = decoded - keepalive_rx: dust-gen %d, dustgw %s - %s"
      % (fwd["tx"], st["ctr.decoded"], st["ctr.keepalive_rx"]))
eq(fwd["rx"], "ctr.delivered", "probes received = delivered")
if rev:
    eq(rev["tx"], "ctr.dlv_rx", "reverse probes sent = dlv_rx")
    eq(rev["rx"], "ctr.encoded", "reverse probes received = encoded")
# a retry (no answer in 3 s) is a second intro of the same client: the
# gateway accepts one of the two and drops the older as a replay
late = int(st.get("drop.intro_replay", 0)) + int(st.get("drop.intro_dup", 0))
check(int(st["ctr.intro_ok"]) + late == ch["intros"] and late <= ch["retries"],
      "intros: dust-gen %d (retries %d), dustgw ctr.intro_ok %s + intro_replay/dup %d"
      % (ch["intros"], ch["retries"], st["ctr.intro_ok"], late))
eq(ch["started"] + ch["joins"], "ctr.intro_first_use", "first uses (started + joins)")
eq(ch["expiries"], "ctr.sessions_expired", "idle expiries")
eq(ch["roams"], "ctr.sessions_evicted", "roams")
eq(ch["keepalives"], "ctr.keepalive_tx", "keepalives")
if churn > 0:
    check(min(ch["joins"], ch["expiries"], ch["roams"], ch["reintros"]) > 0,
          "every churn kind happened: %s" % ch)
wrap = (1 << int(sys.argv[8])) / max(r["tx_pps"], 1)
w = int(max(10, secs // 5, wrap + 5))
# the traffic's seconds after the warm-up: not the drain or the exit
after = [a - m for t, a, m in sm if w <= t < secs]
w_at = min([i for i, (t, a, m) in enumerate(sm) if t >= w] or [0])
end_at = max([i for i, (t, a, m) in enumerate(sm) if t < secs] or [0])
check(len(after) >= 2, "%d RSS samples, %d after the %d s warm-up" % (len(rss), len(after), w))
if len(after) >= 2:
    check(max(after) - min(after) <= slack,
          "RSS (less memif's regions) flat after warm-up: min %d kB, max %d kB, first %d, last %d (max-min <= %d kB)"
          % (min(after), max(after), after[0], after[-1], slack))
    print("soak: memif regions' RSS %d kB after warm-up, %d kB at the end of traffic" % (mem[w_at], mem[end_at]))
for name, d in (("forward", fwd), ("reverse", rev)):
    if d and d["tx"]:
        print("soak: %s latency us p50 %.1f p99 %.1f p99.9 %.1f; %d s at %.0f pps" % (
            name, d["latency_ns"]["p50"] / 1e3, d["latency_ns"]["p99"] / 1e3,
            d["latency_ns"]["p99_9"] / 1e3, secs, d["tx_pps"]))
print("soak: %d clients up at the end" % ch["up"])
sys.exit(0 if ok else 1)
PY
echo "soak: PASS ($OUT)"
