#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# `meson install` as far as a machine without systemd allows: install into
# a DESTDIR; the binaries, the systemd unit, the example configuration and
# the 0700 state directory are where the unit says; a reinstall keeps an
# edited configuration; dustgw --check-config on the installed files fails
# clearly without a key, passes with one; the unit's own ExecStart line
# (instance, EAL arguments on net_null/net_pcap vdevs) starts the installed
# binary under the unit's sandbox (its capabilities, no new privileges,
# no writable-executable memory), and SIGTERM stops it with exit 0 and a
# summary; `systemd-analyze security` rates the unit 5.0 or below and
# `systemd-analyze verify` finds nothing to say.
#
# usage: install.sh BUILD_DIR WORKDIR
set -eu
set -o pipefail

BUILD=$(realpath "$1")
W=$(realpath -m "$2")
I=ci$$ # unit instance (also the EAL file prefix dustgw-$I)
D=$W/root
GWPID=
cleanup() {
	[[ -n $GWPID ]] && kill -KILL "$GWPID" 2>/dev/null
	rm -rf "/var/run/dpdk/dustgw-$I"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
rm -rf "$W"
mkdir -p "$W"
cd "$W"

opt() { # opt NAME: a meson build option's value
	meson introspect "$BUILD" --buildoptions |
		/usr/bin/python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]))' "$1"
}
PREFIX=$(opt prefix)
BINDIR=$PREFIX/$(opt bindir)
ETC=$(cd / && realpath -m "$PREFIX/$(opt sysconfdir)")
UNITDIR=$(opt systemdunitdir)
[[ -n $UNITDIR ]] || UNITDIR=$PREFIX/lib/systemd/system

echo "== meson install --destdir $D"
meson install -C "$BUILD" --destdir "$D" --no-rebuild --quiet >install.log 2>&1 ||
	{ cat install.log; fail "meson install"; }
for b in dustgw dust-invite dust-client; do
	[[ -x $D$BINDIR/$b ]] || fail "no $BINDIR/$b"
done
UNIT=$D$UNITDIR/dustgw@.service
[[ -f $UNIT ]] || fail "no unit at $UNITDIR/dustgw@.service"
[[ -f $D$ETC/dustgw/dustgw.conf && -f $D$ETC/dustgw/dustgw.eal ]] ||
	fail "no $ETC/dustgw/dustgw.conf and .eal"
[[ $(stat -c %a "$D/var/lib/dustgw") == 700 ]] || fail "/var/lib/dustgw is not mode 0700"
grep -q "^ExecStartPre=$BINDIR/dustgw --check-config --config $ETC/dustgw/%i.conf$" "$UNIT" ||
	fail "the unit does not check its config before start"
grep -q "^StateDirectory=dustgw$" "$UNIT" || fail "the unit has no StateDirectory"
grep -q "^key_file = /var/lib/dustgw/" "$D$ETC/dustgw/dustgw.conf" ||
	fail "the example config does not keep its key in /var/lib/dustgw"
grep -q "^DUSTGW_EAL=" "$D$ETC/dustgw/dustgw.eal" || fail "the .eal file sets no DUSTGW_EAL"

echo "== a reinstall keeps the operator's configuration"
echo "; edited by the operator" >>"$D$ETC/dustgw/dustgw.conf"
meson install -C "$BUILD" --destdir "$D" --no-rebuild --quiet >install2.log 2>&1 ||
	{ cat install2.log; fail "second meson install"; }
grep -q "edited by the operator" "$D$ETC/dustgw/dustgw.conf" || fail "reinstall overwrote the config"

echo "== --check-config on the installed files"
# the installed config, pointed at the DESTDIR's state directory
STATE=$D/var/lib/dustgw
sed "s#/var/lib/dustgw#$STATE#" "$D$ETC/dustgw/dustgw.conf" >"$D$ETC/dustgw/$I.conf"
CONF=$D$ETC/dustgw/$I.conf
if "$D$BINDIR/dustgw" --check-config --config "$CONF" >check1.out 2>&1; then
	fail "--check-config passed without a key"
fi
grep -q "server.key.*dust-invite keygen" check1.out || { cat check1.out; fail "no clear message"; }
"$D$BINDIR/dust-invite" keygen --out "$STATE/server.key" >/dev/null
"$D$BINDIR/dust-invite" create --store "$STATE/invites.store" --key "$STATE/server.key" \
	--server 10.0.0.1 --port 4433 --tunnel-net 10.9.0.0/24 --count 3 --store-only 2>/dev/null
"$D$BINDIR/dustgw" --check-config --config "$CONF" >check2.out 2>&1 ||
	{ cat check2.out; fail "--check-config failed on a good config"; }
grep -q ": ok (3 invitations" check2.out || { cat check2.out; fail "no ok line"; }
sed 's/^udp_port.*/udp_port = 0/' "$CONF" >bad.conf
if "$D$BINDIR/dustgw" --check-config --config bad.conf >check3.out 2>&1; then
	fail "--check-config passed udp_port = 0"
fi
grep -q "udp_port = '0'" check3.out || { cat check3.out; fail "bad value not named"; }

echo "== the unit's sandbox: systemd-analyze security and verify"
command -v systemd-analyze >/dev/null || fail "no systemd-analyze (package systemd; tools/bootstrap test)"
systemd-analyze security --offline=true "$UNIT" >security.out 2>&1 || true
EXPOSURE=$(sed -n 's/^→ Overall exposure level for .*: \([0-9.]*\) .*/\1/p' security.out)
[[ -n $EXPOSURE ]] || { cat security.out; fail "no exposure level from systemd-analyze security"; }
echo "exposure $EXPOSURE (at most 5.0)"
awk -v e="$EXPOSURE" 'BEGIN { exit !(e <= 5.0) }' ||
	{ grep "✗" security.out; fail "unit exposure $EXPOSURE is above 5.0"; }
# verify needs the commands to exist: the unit with its paths in the DESTDIR
sed "s#$BINDIR/#$D$BINDIR/#g" "$UNIT" >"dustgw@$I.service"
systemd-analyze verify "./dustgw@$I.service" >verify.out 2>&1 || { cat verify.out; fail "verify"; }
[[ ! -s verify.out ]] || { cat verify.out; fail "systemd-analyze verify warns"; }

# The unit's capability bounding set as setpriv spells it (-all,+net_admin,...).
CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
[[ -n $CAPS ]] || fail "the unit has no CapabilityBoundingSet"
SETPRIV_CAPS=-all
for c in $CAPS; do
	c=${c#CAP_}
	SETPRIV_CAPS+=",+${c,,}"
done
grep -q "^NoNewPrivileges=yes$" "$UNIT" || fail "the unit lacks NoNewPrivileges=yes"
grep -q "^MemoryDenyWriteExecute=yes$" "$UNIT" || fail "the unit lacks MemoryDenyWriteExecute=yes"
# What the unit grants, outside systemd: root with only the unit's
# capabilities (bounding set), no new privileges, and the kernel's own
# write-xor-execute (PR_SET_MDWE = 65, kept across execve) for
# MemoryDenyWriteExecute. Linux before 6.3 has no PR_SET_MDWE (EINVAL):
# there that one property goes unchecked, and the test says so.
sandboxed() {
	exec setpriv --bounding-set "$SETPRIV_CAPS" --inh-caps -all --no-new-privs -- /usr/bin/python3 -c '
import ctypes, errno, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(65, 1, 0, 0, 0) != 0:
    e = ctypes.get_errno()
    if e != errno.EINVAL:
        sys.exit("prctl(PR_SET_MDWE): errno %d" % e)
    print("NOTE: this kernel has no PR_SET_MDWE: MemoryDenyWriteExecute not checked",
          file=sys.stderr)
os.execv(sys.argv[1], sys.argv[1:])' "$@"
}

# run_unit EAL: the unit's ExecStart with EAL as $DUSTGW_EAL, in the sandbox;
# it must start, hold exactly the unit's capabilities, and stop on SIGTERM.
run_unit() {
	local exec rc
	exec=$(sed -n 's/^ExecStart=//p' "$UNIT")
	exec=${exec//%i/$I}
	exec=${exec//$ETC/$D$ETC}
	exec=${exec//$BINDIR/$D$BINDIR}
	exec=${exec//\$DUSTGW_EAL/$1}
	echo "$exec"
	# shellcheck disable=SC2086 # systemd splits ExecStart on spaces too
	sandboxed $exec >gw.out 2>gw.err &
	GWPID=$!
	for _ in $(seq 1800); do
		grep -q "^dustgw: 3 invitations" gw.out && break
		kill -0 $GWPID 2>/dev/null || { cat gw.out gw.err; fail "dustgw exited at start"; }
		sleep 0.1
	done
	grep -q "^dustgw: 3 invitations" gw.out || { cat gw.out gw.err; fail "no start banner"; }
	grep "^NOTE:" gw.err || true
	local eff want
	eff=$(capsh --decode="$(sed -n 's/^CapEff:\s*//p' /proc/$GWPID/status)" | sed 's/.*=//')
	want=$(echo "$CAPS" | tr 'A-Z ' 'a-z\n' | sort | paste -sd,)
	[[ $(echo "$eff" | tr , '\n' | sort | paste -sd,) == "$want" ]] ||
		fail "dustgw holds capabilities '$eff', the unit grants '$want'"
	kill -TERM $GWPID
	rc=0
	wait $GWPID || rc=$?
	GWPID=
	[[ $rc -eq 0 ]] || { cat gw.out gw.err; fail "exit status $rc after SIGTERM"; }
	grep -q "^dustgw summary" gw.out || fail "no summary after SIGTERM"
}

echo "== start and stop the installed binary by the unit's ExecStart, sandboxed"
run_unit "-l 0,1 --no-huge -m 256 --no-pci --vdev net_null0,no-rx=1 --vdev net_pcap0,tx_pcap=$W/clear.pcap"
echo "== the same with the delivery side on a TAP (CAP_NET_ADMIN, /dev/net/tun)"
run_unit "-l 0,1 --no-huge -m 256 --no-pci --vdev net_null0,no-rx=1 --vdev net_tap0,iface=dgwi$$"
! ip link show "dgwi$$" >/dev/null 2>&1 || fail "the TAP outlived dustgw"
echo "PASS: install"
