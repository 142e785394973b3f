#!/bin/sh
# CI: build the libFuzzer harnesses (clang, ASan+UBSan, -Dfuzz=true) and run
# each for a bounded time over a fresh seed corpus; any crash, sanitizer
# report, leak or timeout fails, and so does a listed harness that was not
# built (a run of zero harnesses is no pass). Prints executions per harness.
# usage: .ci/fuzz.sh [BUILD_DIR]   (env FUZZ_SECS=60 per harness, JOBS=2 builds
# and harnesses at a time)
set -eu
cd "$(dirname "$0")/.."
b=${1:-build-fuzz}
secs=${FUZZ_SECS:-60}
jobs=${JOBS:-2}

command -v clang >/dev/null || { echo "fuzz: clang not installed"; exit 1; }
if [ -d "$b/meson-private" ]; then
  meson configure "$b" -Dfuzz=true
else
  # the gateway itself is not needed: the config harness compiles its config.c
  CC=clang CXX=clang++ meson setup "$b" -Dfuzz=true -Dapp=disabled -Dbench=disabled \
    -Dbuildtype=debugoptimized
fi
ninja -C "$b" -j"$jobs"

work=$(mktemp -d /tmp/dust-fuzz-ci.XXXXXX)
trap 'rm -rf "$work"' EXIT
rc=0
ran=0
missing=0
# Harnesses run JOBS at a time (each libFuzzer process is single-threaded):
# the same seconds of fuzzing per harness in about 1/JOBS of the wall time.
# Each one's summary goes to its own file and is printed when its batch ends.
batch=""
flush() {
  for n in $batch; do
    wait "$(cat "$work/$n.pid")" || rc=1
    cat "$work/$n.out"
  done
  batch=""
}
for h in data intro invite config quic inner mlkem store etcd dpi shape; do
  exe="$b/test/fuzz/fuzz_$h"
  if [ ! -x "$exe" ]; then
    echo "== fuzz $h: FAIL: not built (see the meson message)"
    missing=$((missing + 1))
    continue
  fi
  ran=$((ran + 1))
  mkdir -p "$work/$h" # its own seeds: mkcorpus runs never share a folder
  { echo "== fuzz $h: ${secs}s"
    test/fuzz/run-fuzz.sh "$exe" "$b/test/fuzz/mkcorpus" "$h" "$secs" "$work/$h"
  } >"$work/$h.out" 2>&1 &
  echo $! >"$work/$h.pid"
  batch="$batch $h"
  [ "$(echo $batch | wc -w)" -ge "$jobs" ] && flush
done
flush
echo "fuzz: $ran harnesses ran, $missing not built"
if [ "$rc" -ne 0 ]; then
  mkdir -p "$b/fuzz-artifacts"
  cp -r "$work"/*/artifacts-* "$b/fuzz-artifacts/" 2>/dev/null || true
  echo "fuzz: findings; crashing inputs copied to $b/fuzz-artifacts/"
fi
[ "$missing" -eq 0 ] || { echo "fuzz: FAIL: $missing listed harnesses not built"; exit 1; }
exit "$rc"
