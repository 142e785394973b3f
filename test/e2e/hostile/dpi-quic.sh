#!/bin/sh
# dust-dpi --quic self-test: a quic-profile capture of both directions from
# dust-pcap gen --profile quic --wire must pass (every datagram QUIC v1, every
# Initial decrypting to a ClientHello or ServerHello, CIDs consistent), as
# must real Chromium 156 Initials; a random-profile capture, and the quic
# capture with one short header's DCID or one Initial's ciphertext changed,
# must be flagged. Every hello, Dust's and Chromium's, must be split over its
# Initials as Chromium 156 splits it (SPEC §12.2); test_dpi_quic flags the
# splits that differ.
# usage: dpi-quic.sh DUST_DPI DUST_PCAP DUST_INVITE CHROMIUM_PCAP
set -u
dpi=$(realpath "$1") pcap=$(realpath "$2") invite=$(realpath "$3") chrome=$(realpath "$4")
tmp=$(mktemp -d /tmp/dpi-quic.XXXXXX) || exit 99
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 99

fail() {
	echo "FAIL: $*"
	exit 1
}

# judge WANT ARGS...: dust-dpi must exit WANT; the report stays in report.txt
judge() {
	want=$1
	shift
	"$dpi" "$@" >report.txt 2>&1
	rc=$?
	cat report.txt
	[ "$rc" -eq "$want" ] || fail "dust-dpi $* exited $rc, expected $want"
}

"$invite" keygen --out server.key >/dev/null || fail "keygen"
"$invite" create --store q.store --key server.key --server 10.0.0.1 --port 443 \
	--tunnel-net 10.9.0.0/16 --count 20 --store-only --profile quic \
	--cover-sni www.example.com >/dev/null 2>&1 || fail "quic invitations"
"$invite" create --store r.store --key server.key --server 10.0.0.1 --port 4433 \
	--tunnel-net 10.8.0.0/16 --count 20 --store-only >/dev/null 2>&1 ||
	fail "random invitations"
"$pcap" gen --profile quic --store q.store --key server.key --out c2s.pcap \
	--manifest q.txt --packets 6 --wire wire.pcap >/dev/null || fail "gen --profile quic"
"$pcap" gen --store r.store --key server.key --out random.pcap --manifest r.txt --packets 6 >/dev/null ||
	fail "gen (random)"

judge 0 --quic --port 443 wire.pcap
# each hello is two client Initials (SPEC §12.2), each flight opens with an ACK-only
# Initial, as quic-go's (SPEC §12.3): not ack-eliciting, so under 1200 bytes is allowed
# (RFC 9000 §14.1); each client's second flight opens with an Initial to the server's
# CID under its first keys (ACK, PADDING), as Chromium's (SPEC §12.3)
grep -q "60 client Initials (20 ClientHellos, SNI www.example.com), 40 server Initials (20 ServerHellos, 20 ACK-only)" report.txt ||
	fail "not every pair of Initials decrypted to its hello"
# 200 of data, and the 1-RTT packet behind each second flight's Handshake packet
grep -q "80 other long, 220 short headers (0 after a move);" report.txt || fail "short headers"
grep -q "hellos split as Chromium's 20, not 0;" report.txt || fail "a Dust hello not split as Chromium's"
grep -q "; 0 bad" report.txt || fail "bad packets"
judge 0 --quic --port 443 --min 1 "$chrome"
# the captured hellos and their resends (packet numbers 4, 6, 8)
grep -q "hellos split as Chromium's 6, not 0; hello Initials laid out unlike the captures 0;" \
	report.txt || fail "a Chromium hello not split as Chromium's"
judge 1 --quic --port 4433 random.pcap
judge 1 --quic --port 443 --dir to c2s.pcap # no server Initial: CIDs unknown

# change one byte of a datagram: the first UDP payload (to port 443, first
# byte matching MASK/VALUE) gets byte OFF xored
tamper() {
	/usr/bin/python3 - "$1" "$2" "$3" "$4" "$5" <<'PY'
import struct, sys
src, dst, mask, value, off = sys.argv[1], sys.argv[2], int(sys.argv[3], 0), int(sys.argv[4], 0), int(sys.argv[5])
b = bytearray(open(src, 'rb').read())
pos = 24
while pos < len(b):
    n = struct.unpack('<I', b[pos + 8:pos + 12])[0]
    f = pos + 16
    if b[f + 36:f + 38] == b'\x01\xbb' and b[f + 42] & mask == value:
        b[f + 42 + off] ^= 0x01
        open(dst, 'wb').write(b)
        sys.exit(0)
    pos = f + n
sys.exit(1)
PY
}
tamper wire.pcap cid.pcap 0xc0 0x40 1 || fail "no short header to change"
judge 1 --quic --port 443 cid.pcap
grep -q "client short header names no connection ID" report.txt || fail "CID change not seen"
tamper wire.pcap init.pcap 0xc0 0xc0 600 || fail "no Initial to change"
judge 1 --quic --port 443 init.pcap
grep -q "does not decrypt" report.txt || fail "Initial change not seen"
echo "ok: dpi-quic"
