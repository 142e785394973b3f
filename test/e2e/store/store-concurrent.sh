#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Concurrent writers on one file store lose nothing (issue 19), all at once,
# while the journal is compacted under them:
# CREATORS dust-invite create loops (RUNS runs of COUNT each, one tunnel
# net), two revokers (REVOKE invitations made beforehand, named by tunnel
# address), a list loop, and a gateway's store side (dust-store-binder:
# first uses of what is added, returning intros journaled). Then every
# invitation is listed once with its own tunnel address, every revocation
# is in effect, every binding is listed with its client's key.
# usage: store-concurrent.sh DUST-INVITE DUST-STORE-BINDER
set -u
INV=$1
BINDER=$2
CREATORS=${CREATORS:-4} RUNS=${RUNS:-20} COUNT=${COUNT:-50} REVOKE=${REVOKE:-100}
T=$(mktemp -d)
trap 'touch "$T/stop"; wait; rm -rf "$T"' EXIT
S=$T/store
fail=0

ok() { echo "ok   $1"; }
bad() {
	fail=$((fail + 1))
	echo "FAIL $1"
}
# check NAME COMMAND...: the command's exit status decides
check() {
	name=$1
	shift
	if "$@"; then ok "$name"; else bad "$name"; fi
}

"$INV" keygen --out "$T/key" >/dev/null || exit 99
C="--key $T/key --server 192.0.2.1 --port 4433 --store-only"
"$INV" create --store "$S" $C --tunnel-net 10.1.0.0/16 --count "$REVOKE" 2>/dev/null || exit 99

creator() {
	for r in $(seq "$RUNS"); do
		"$INV" create --store "$S" $C --tunnel-net 10.2.0.0/16 --count "$COUNT" 2>&1 ||
			echo "create $r failed: exit $?"
	done >"$T/create.$1"
}
# revoker PARITY: revokes the beforehand invitations of that parity (10.1.0.2 on)
revoker() {
	i=$((2 + $1))
	while [ "$i" -le $((REVOKE + 1)) ]; do
		"$INV" revoke --store "$S" --key "$T/key" --tunnel "10.1.$((i / 256)).$((i % 256))" 2>&1 ||
			echo "revoke $i failed: exit $?"
		i=$((i + 2))
	done >"$T/revoke.$1"
}
lister() {
	n=0
	while [ ! -e "$T/stop" ]; do
		"$INV" list --store "$S" --key "$T/key" >/dev/null 2>"$T/list.err" ||
			echo "list failed: $(cat "$T/list.err")" >>"$T/list.fail"
		n=$((n + 1))
	done
	echo "$n" >"$T/lists"
}

start=$(date +%s)
# the binder compacts the journal every 64 KiB of growth, under the writers
BINDER_COMPACT_SLACK=65536 "$BINDER" "$S" "$T/key" "$T/stop" 10.1. >"$T/bound" 2>"$T/binder.err" &
binder=$!
lister &
lister_pid=$!
writers=""
for c in $(seq "$CREATORS"); do
	creator "$c" &
	writers="$writers $!"
done
revoker 0 &
writers="$writers $!"
revoker 1 &
writers="$writers $!"
wait $writers
touch "$T/stop"
wait "$binder"
brc=$?
wait "$lister_pid"
echo "writers done in $(($(date +%s) - start)) s; $(cat "$T/lists") lists;" \
	"$(cat "$T/binder.err")"

"$INV" list --store "$S" --key "$T/key" >"$T/list" 2>&1 || bad "final list: $(tail -1 "$T/list")"
total=$((REVOKE + CREATORS * RUNS * COUNT))
added=$(cat "$T"/create.* | grep -c 'invitation(s) added')
check "every create reported success ($added of $((CREATORS * RUNS)))" \
	[ "$added" -eq $((CREATORS * RUNS)) ]
grep '^[0-9a-f]\{16\} ' "$T/list" >"$T/entries"
listed=$(wc -l <"$T/entries")
check "every invitation listed ($listed of $total)" [ "$listed" -eq "$total" ]
addrs=$(awk '{ print $2 }' "$T/entries" | sort -u | wc -l)
check "each with its own tunnel address ($addrs distinct)" [ "$addrs" -eq "$total" ]
said=$(cat "$T"/revoke.* | grep -c '^dust-invite: revoked ')
check "every revoke reported success ($said of $REVOKE)" [ "$said" -eq "$REVOKE" ]
revoked=$(awk '$2 ~ /^10\.1\./ && $NF == "revoked"' "$T/entries" | wc -l)
check "every revocation in effect ($revoked of $REVOKE)" [ "$revoked" -eq "$REVOKE" ]
nb=$(wc -l <"$T/bound")
check "the binder ran to the end" [ "$brc" -eq 0 ]
check "the binder took first uses ($nb), none refused" \
	grep -q "^binder: $nb bound, .* 0 refused\$" "$T/binder.err"
check "enough of them to count (20 or more)" [ "$nb" -ge 20 ]
nc=$(sed -n 's/^binder: \([0-9]*\) compactions$/\1/p' "$T/binder.err")
check "the journal compacted while they wrote (${nc:-0} times)" [ "${nc:-0}" -ge 3 ]
awk '/ used by client / { print $1, $NF }' "$T/entries" | sort >"$T/used"
sort "$T/bound" >"$T/bound.sorted"
kept=$(comm -12 "$T/bound.sorted" "$T/used" | wc -l)
check "every binding kept ($kept of $nb)" [ "$kept" -eq "$nb" ]
used=$(wc -l <"$T/used")
check "no binding but the binder's ($used used)" [ "$used" -eq "$nb" ]
check "no list failed while the writers ran" [ ! -e "$T/list.fail" ]
[ -e "$T/list.fail" ] && head -3 "$T/list.fail"
grep -h failed "$T"/create.* "$T"/revoke.* | head -5
[ "$fail" -eq 0 ]
