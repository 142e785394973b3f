#!/bin/sh
# The store journal's size and dustgw's RSS under returning intros at a
# steady rate (issue 19 item 2): bench/soak.sh with churn (joins, roams and
# re-intros: every roam and re-intro is an accepted intro whose freshness
# record is appended) while <store>.bind's size is sampled every second.
# Prints the journal's size and the RSS (less memif's regions) at each
# fifth of the run and their maxima, and the gateway's compactions.
# usage: bench/journal.sh [BUILD_DIR] [OUT_DIR]
#   env SECS=180 PPS=1000 CHURN=200 CLIENTS=256 (passed on to soak.sh)
set -eu
BUILD=$(realpath "${1:-build}")
OUT=$(realpath -m "${2:-$(mktemp -d /tmp/dust-journal.XXXXXX)}")
SECS=${SECS:-180}
mkdir -p "$OUT"
(
	while [ ! -e "$OUT/inv.store.bind" ]; do sleep 0.2; done
	while [ ! -e "$OUT/soak.json" ] || ! grep -q result "$OUT/soak.json" 2>/dev/null; do
		stat -c %s "$OUT/inv.store.bind" 2>/dev/null || echo 0
		sleep 1
	done
) >"$OUT/journal.txt" &
sampler=$!
rc=0
SECS=$SECS PPS=${PPS:-1000} CHURN=${CHURN:-200} CLIENTS=${CLIENTS:-256} DIR=fwd \
	"$(dirname "$0")/soak.sh" "$BUILD" "$OUT" >"$OUT/soak.txt" 2>&1 || rc=$?
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
grep -E "^soak: (ok|FAIL)  *(intros|first uses|RSS)" "$OUT/soak.txt" || tail -5 "$OUT/soak.txt"
/usr/bin/python3 - "$OUT/journal.txt" "$OUT/rss.txt" "$OUT/soak.stats" "$SECS" <<'PY'
import sys
j = [int(l) for l in open(sys.argv[1]) if l.strip().isdigit()]
sm = [l.split() for l in open(sys.argv[2]) if len(l.split()) == 3]  # when, VmRSS, memif's part
rss = [int(a) - int(m) for t, a, m in sm]
st = dict(l.split() for l in open(sys.argv[3]) if len(l.split()) == 2)
secs = int(sys.argv[4])
marks = [min(len(j) - 1, secs * k // 5) for k in range(6)] if j else []
print("journal bytes at each fifth:", " ".join(str(j[m]) for m in marks), "max", max(j or [0]))
rm = [min(len(rss) - 1, secs * k // 5) for k in range(6)] if rss else []
print("RSS kB (less memif) at each fifth:", " ".join(str(rss[m]) for m in rm), "max", max(rss or [0]))
print("intro_ok", st.get("ctr.intro_ok"), "first uses", st.get("ctr.intro_first_use"))
PY
exit $rc
