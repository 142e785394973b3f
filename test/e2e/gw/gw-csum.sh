#!/bin/sh
# Outer UDP checksums, [gateway] udp_checksum = verify | auto | ignore, over
# IPv4 and IPv6: a capture holds datagrams with a right checksum, with one
# left for offload (only the pseudo-header sum, as a veth sender leaves it)
# and with a wrong one, and one zero checksum per family ("none": allowed in
# IPv4, forbidden for UDP over IPv6 by RFC 8200 s8.1). verify drops the
# offload and wrong ones, auto (net_pcap is fed by the kernel) only the wrong
# ones, and every mode, ignore included, drops the IPv6 zero (counted as
# udp_csum); each run that drops logs one line naming the cause and the fix.
. "$(dirname "$0")/lib.sh"

make_store 1
make_conf 1
sed -i 's/^ipv4 = .*/&\nipv6 = fd00::1/' gw.conf

PYTHONPATH="$HERE" /usr/bin/python3 - <<'EOF'
import os, struct
from frames import fold, sum16, pcap_write

def frame(v6, kind, n):
    src = bytes([0xfd] + [0] * 14 + [2]) if v6 else bytes([192, 0, 2, 7])
    dst = bytes([0xfd] + [0] * 14 + [1]) if v6 else bytes([10, 0, 0, 1])
    pl = os.urandom(80 + n)
    ulen = 8 + len(pl)
    pseudo = sum16(src + dst + struct.pack("!HH", 17, ulen))
    udp = struct.pack("!HHHH", 40000 + n, 4433, ulen, 0) + pl
    good = (~fold(pseudo + sum16(udp))) & 0xffff or 0xffff
    ck = {"good": good, "partial": fold(pseudo), "bad": good ^ 0x0f0f, "zero": 0}[kind]
    assert kind in ("good", "zero") or ck not in (good, 0)
    udp = udp[:6] + struct.pack("!H", ck) + udp[8:]
    if v6:
        ip = struct.pack("!IHBB", 6 << 28, ulen, 17, 64) + src + dst
        et = 0x86DD
    else:
        ip = struct.pack("!BBHHHBBH", 0x45, 0, 20 + ulen, n, 0, 64, 17, 0) + src + dst
        ip = ip[:10] + struct.pack("!H", (~fold(sum16(ip))) & 0xffff) + ip[12:]
        et = 0x0800
    return b"\x02\0\0\0\0\1\x02\0\0\0\0\2" + struct.pack("!H", et) + ip + udp

# 3 right, 5 left for offload, 2 wrong, 1 zero per family
kinds = [(v6, kind) for v6 in (False, True)
         for kind, count in (("good", 3), ("partial", 5), ("bad", 2), ("zero", 1))
         for _ in range(count)]
pcap_write("csum.pcap", [frame(v6, kind, n) for n, (v6, kind) in enumerate(kinds)])
EOF

stat() { # stat NAME KEY
	sed -n "s/^$2 //p" "$1.stats"
}
# run MODE WANT_UDP_CSUM_DROPS [LOG_TEXT]
run() {
	sed "s/^udp_port.*/&\nudp_checksum = $1/" gw.conf >"gw-$1.conf"
	rc=0
	timeout 120 "$DUSTGW" --lcores "$(lcores 1)" --no-huge -m 512 --no-pci \
		--file-prefix "$PREFIX" --vdev "net_pcap0,rx_pcap=csum.pcap,tx_pcap=out-$1.pcap" \
		--vdev "net_pcap1,tx_pcap=clear-$1.pcap" -- --config "gw-$1.conf" \
		--exit-on-idle 500 --stats-out "$1.stats" >"$1.summary" 2>"$1.log" || rc=$?
	[ $rc = 0 ] || { cat "$1.log" "$1.summary" >&2; fail "$1: dustgw exited with $rc"; }
	[ "$(stat "$1" ctr.net_rx)" = 22 ] || fail "$1: net_rx $(stat "$1" ctr.net_rx), want 22"
	got=$(stat "$1" drop.udp_csum)
	[ "$got" = "$2" ] || { cat "$1.log" >&2; fail "$1: udp_csum drops $got, want $2"; }
	[ "$(stat "$1" ctr.net_tx)" = 0 ] || fail "$1: the gateway answered"
	if [ -n "${3:-}" ]; then
		[ "$(grep -c "bad UDP checksum" "$1.log")" = 1 ] ||
			{ cat "$1.log" >&2; fail "$1: want one checksum hint in the log"; }
		grep -q "$3" "$1.log" || { cat "$1.log" >&2; fail "$1: hint lacks '$3'"; }
	elif grep -q "bad UDP checksum" "$1.log"; then
		cat "$1.log" >&2
		fail "$1: a checksum hint with no checksum drop"
	fi
	echo "ok: udp_checksum = $1: $got udp_csum drops"
}
# the IPv4 zero passes in every mode, the IPv6 zero is dropped in every mode
run verify 15 "udp_checksum = auto"
run auto 5 "not merely left for offload"
run ignore 1 "IPv6 UDP with a zero checksum"
echo "PASS gw-csum"
