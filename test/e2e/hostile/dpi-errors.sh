#!/bin/sh
# dust-dpi must refuse to judge what it cannot read: exit status 2 and a
# message for a missing file, a file that is not a capture, too few
# payloads, and bad options.
# usage: dpi-errors.sh DUST_DPI GENERATOR
set -u
dpi=$1 gen=$2
tmp=$(mktemp -d /tmp/dpi-errors.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT
fails=0

expect2() {
  what=$1; shift
  "$dpi" "$@" >"$tmp/out" 2>&1
  rc=$?
  if [ "$rc" -ne 2 ] || [ ! -s "$tmp/out" ]; then
    echo "FAIL: $what: exit $rc (want 2 and a message)"; cat "$tmp/out"; fails=$((fails + 1))
  else
    echo "ok: $what: $(tail -n 1 "$tmp/out")"
  fi
}

expect2 "missing file" "$tmp/nope.pcap"
echo "this is not a capture" >"$tmp/text.pcap"
expect2 "not a capture" "$tmp/text.pcap"
"$gen" random "$tmp/few.pcap" 20 2>/dev/null
expect2 "too few payloads" "$tmp/few.pcap"
"$gen" random "$tmp/ok.pcap" 500 2>/dev/null
expect2 "bad direction" --dir sideways --port 1 "$tmp/ok.pcap"
expect2 "direction without port" --dir to "$tmp/ok.pcap"
expect2 "bad alpha" --alpha 2 "$tmp/ok.pcap"
expect2 "port filter leaves nothing" --port 9 "$tmp/ok.pcap"
# a capture cut off mid-record still yields the frames before the cut
size=$(wc -c <"$tmp/ok.pcap")
# 10 bytes: every record (16-byte header + 42 of headers + payload) is longer, so
# the cut always lands in the last record, whatever lengths dpi-gen drew
head -c $((size - 10)) "$tmp/ok.pcap" >"$tmp/cut.pcap"
"$dpi" "$tmp/cut.pcap" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] || ! grep -q "499 UDP payloads" "$tmp/out"; then
  echo "FAIL: truncated capture: exit $rc"; cat "$tmp/out"; fails=$((fails + 1))
else
  echo "ok: truncated capture read up to the cut"
fi
exit $fails
