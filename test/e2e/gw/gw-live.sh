#!/bin/sh
# gw_live (see gw_live.c) in three modes through ringgw.sh. evict: the full
# table; invite: dust-invite create and revoke while the gateway runs, then
# dust-invite list must show the three revocations; burst: established data
# goes ahead of a burst of 1000 first uses (the slow path's share).
# args: GW_LIVE_EXE DUST_INVITE WORKDIR
set -eu
HERE=$(dirname "$0")
INVITE=$(realpath "$2")
WORK=$(realpath -m "$3")
"$HERE/ringgw.sh" "$1" "$WORK/evict"
"$HERE/ringgw.sh" "$1" "$WORK/invite" "$INVITE"
"$HERE/ringgw.sh" "$1" "$WORK/burst" burst
"$INVITE" list --store "$WORK/invite/inv.store" --key "$WORK/invite/server.key" | tee "$WORK/list.txt"
[ "$(grep -cE '^[0-9a-f]{16} .* revoked$' "$WORK/list.txt")" = 3 ] ||
	{ echo "FAIL: list does not show 3 revoked invitations"; exit 1; }
grep -q ', 3 revoked$' "$WORK/list.txt" || { echo "FAIL: list summary"; exit 1; }
echo "PASS gw-live (three modes)"
