#!/bin/sh
# CI: a third build with ThreadSanitizer (clang) running the unit suite:
# libdust's shared state (key epochs, the seen set, the store's queues and
# locks, the siphash CPU probe) and the gateway's queues and tables, whose
# unit tests run their threads for real. Any report fails: TSan exits the
# process with 66 at the first one (halt_on_error), and a report a child
# process left in the logs fails the stage too. The e2e suites do not run
# here: DPDK's rings, which hand mbufs between lcores, are not instrumented,
# so TSan would flag every hand-off (README, issue 21's note).
# usage: .ci/tsan.sh [BUILD_DIR]   (env JOBS=2)
set -eu
cd "$(dirname "$0")/.."
b=${1:-build-tsan}
jobs=${JOBS:-2}

command -v clang >/dev/null || { echo "tsan: clang not installed"; exit 1; }
set -- -Db_sanitize=thread -Db_lundef=false -Dbuildtype=debugoptimized -Dbench=disabled
if [ -d "$b/meson-private" ]; then
  meson configure "$b" "$@"
else
  CC=clang CXX=clang++ meson setup "$b" "$@"
fi
ninja -C "$b" -j"$jobs"

export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
rc=0
echo "== tsan: suite unit"
# TSan slows code 5-15x: the unit tests' own time limits, five times over
meson test -C "$b" --suite unit --print-errorlogs --num-processes "$jobs" -t 5 || rc=1
if grep -rl 'WARNING: ThreadSanitizer' "$b/meson-logs" 2>/dev/null; then
  echo "tsan: reports in the logs above"
  rc=1
fi
[ "$rc" -eq 0 ] && echo "tsan: no report in the unit suite"
exit "$rc"
