#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# dust-invite list against a hostile etcd on loopback (fake-etcd.py): keys
# that are not base64, "more" for ever, a page that does not move forward
# (with a count that splits its range, or none)
# and a 60 MB reply each end in a clear error, within a few requests and
# bounded memory, never a crash or a write out of bounds (the sanitizer
# build runs this too). The control, an empty store, must list.
# usage: etcd-hostile.sh DUST-INVITE FAKE-ETCD.PY
set -u
INV=$1
FAKE=$2
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
T=$(mktemp -d)
python3 "$FAKE" "$T/port" "$T" &
fake=$!
trap 'kill "$fake" 2>/dev/null; wait "$fake" 2>/dev/null; rm -rf "$T"' EXIT
for i in $(seq 100); do
	[ -s "$T/port" ] && break
	sleep 0.1
done
[ -s "$T/port" ] || { echo "FAIL: the fake etcd did not start"; exit 1; }
EP=127.0.0.1:$(cat "$T/port")
fail=0
"$INV" keygen --out "$T/key" >/dev/null || { echo "FAIL: keygen"; exit 1; }

ok() { echo "ok   $1"; }
bad() {
	fail=$((fail + 1))
	echo "FAIL $1"
}
# hostile NAME PATTERN MAXREQ: list fails (exit 1) saying PATTERN, after at most MAXREQ requests
hostile() {
	out=$(timeout 30 python3 "$FAKE" --rss "$INV" list --store "etcd://$EP/$1" --key "$T/key" 2>&1)
	rc=$?
	n=$(cat "$T/$1.count" 2>/dev/null || echo 0)
	rss=$(printf '%s\n' "$out" | sed -n 's/^maxrss //p')
	if [ "$rc" -eq 1 ] && printf '%s\n' "$out" | grep -q -- "$2" && [ "$n" -le "$3" ]; then
		ok "$1: refused after $n request(s), ${rss} KiB max RSS"
	else
		bad "$1 (exit $rc after $n request(s), output: $out)"
	fi
}

out=$(python3 "$FAKE" --rss "$INV" list --store "etcd://$EP/empty" --key "$T/key" 2>&1)
base=$(printf '%s\n' "$out" | sed -n 's/^maxrss //p')
if printf '%s\n' "$out" | grep -q '^0 invitations'; then
	ok "empty store lists (${base} KiB max RSS)"
else
	bad "empty store: $out"
fi
hostile badkey 'ends with a corrupt key' 2
hostile endless 'range page of 1 keys (limit 1000) says more follow' 2
hostile stuck 'does not move forward' 2
# a range split (by its count) after its first page: that page still checked
hostile split 'does not move forward' 1
hostile nocount 'does not move forward' 1
hostile huge 'reply over 8 MiB, refused' 1
# the 8 MiB cap, its buffer's growth and (under ASan) the freed blocks held in
# quarantine: well under the reply's 60 MB (before: 199 MB RSS in all)
rss=$(printf '%s\n' "$out" | sed -n 's/^maxrss //p')
if [ -n "$rss" ] && [ -n "$base" ] && [ "$rss" -lt $((base + 40960)) ]; then
	ok "huge: memory bounded (${rss} KiB max RSS, the empty store's + $((rss - base)) KiB)"
else
	bad "huge: max RSS ${rss:-?} KiB, the empty store's ${base:-?} KiB"
fi
[ "$fail" -eq 0 ]
