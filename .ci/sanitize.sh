#!/bin/sh
# CI: a second build with AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer on) running the unit, dpi and e2e suites. Any finding fails:
# UBSan does not recover, ASan halts, LSan reports fail the test that leaked.
# usage: .ci/sanitize.sh [BUILD_DIR]   (env SUITES="unit dpi e2e", JOBS=2)
set -eu
cd "$(dirname "$0")/.."
b=${1:-build-sanitize}
suites=${SUITES:-unit dpi e2e}
jobs=${JOBS:-2}

# UBSan's alignment check is off: DPDK's inline headers (rte_hash_crc.h, the
# rte_*_hdr accessors on packet bytes) load unaligned words by design on x86.
san_args="['-fno-sanitize-recover=all', '-fno-sanitize=alignment']"
set -- -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
  "-Dc_args=$san_args" "-Dcpp_args=$san_args" -Dbench=disabled
if [ -d "$b/meson-private" ]; then
  meson configure "$b" "$@"
else
  meson setup "$b" "$@"
fi
ninja -C "$b" -j"$jobs"

# Leaks inside DPDK's own libraries (EAL state kept until exit) are not ours.
cat >"$b/lsan.supp" <<'SUPP'
leak:librte_
leak:libdpdk
SUPP
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# ASan slows dustgw several-fold: give pcap replays more idle time before they stop.
export DGW_IDLE_MS=4000
export LSAN_OPTIONS="suppressions=$PWD/$b/lsan.supp:print_suppressions=0"

rc=0
for s in $suites; do
  echo "== sanitize: suite $s"
  meson test -C "$b" --suite "$s" --print-errorlogs --num-processes "$jobs" || rc=1
done
# A test can pass while a child process it ran reported a finding to a log.
if grep -rlE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$b/meson-logs" \
    "$b/test-artifacts" 2>/dev/null; then
  echo "sanitize: findings in the logs above"
  rc=1
fi
[ "$rc" -eq 0 ] && echo "sanitize: no finding in suites: $suites"
exit "$rc"
