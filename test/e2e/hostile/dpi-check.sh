#!/bin/sh
# dust-dpi self-test: generate a capture (synthetic, or real Dust via libdust),
# run dust-dpi on it, and check the verdict. EXPECT is "none" (nothing may be
# flagged) or the name of the check that must flag.
# usage: dpi-check.sh DUST_DPI GENERATOR MODE EXPECT
set -u
dpi=$1 gen=$2 mode=$3 expect=$4
tmp=$(mktemp -d /tmp/dpi-check.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT
cap=$tmp/$mode.pcap

if [ "$mode" = dust ]; then
  "$gen" "$cap" 8 500 || { echo "dpi-dustcap failed"; exit 1; }
else
  "$gen" "$mode" "$cap" || { echo "dpi-gen failed"; exit 1; }
fi

# judge: run dust-dpi with args, expect exit status want, show the report
judge() {
  want=$1; shift
  "$dpi" "$@" >"$tmp/report" 2>&1
  rc=$?
  cat "$tmp/report"
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: dust-dpi $* exited $rc, expected $want"
    exit 1
  fi
}

if [ "$expect" = none ]; then
  judge 0 "$cap"
  if [ "$mode" = dust ]; then
    # each direction on its own, as a DPI box on one side of a link sees it
    judge 0 --port 4789 --dir to "$cap"
    judge 0 --port 4789 --dir from "$cap"
  fi
  # every failing check must have run (a skipped check would prove nothing)
  for c in bit-bias byte-chi2 length-mode shared-prefix repeats; do
    grep -Eq "^  $c +PASS" "$tmp/report" || { echo "FAIL: $c did not run"; exit 1; }
  done
else
  judge 1 "$cap"
  grep -Eq "^  $expect +FLAG" "$tmp/report" || { echo "FAIL: $expect did not flag"; exit 1; }
fi
echo "ok: $mode -> ${expect}"
