#!/bin/sh
# The planted race (tsan_planted.c) must be reported by ThreadSanitizer and
# fail its process. Its report goes to a file, not to the test log, where
# .ci/tsan.sh looks for reports of real races.
# usage: tsan-planted.sh BINARY
set -u
err=$(mktemp /tmp/tsan-planted.XXXXXX)
trap 'rm -f "$err"' EXIT
TSAN_OPTIONS="halt_on_error=1:exitcode=66" "$1" >/dev/null 2>"$err"
rc=$?
if [ "$rc" -ne 66 ] || ! grep -q 'ThreadSanitizer: data race' "$err"; then
	echo "tsan-planted: the planted race was not reported (exit $rc)"
	exit 1
fi
echo "tsan-planted: the planted race was reported (exit 66)"
