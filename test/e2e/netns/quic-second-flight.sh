#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Does a quic client answer the server's first flight as Chromium 156 does
# (SPEC §12.3)? In each connection of a capture, the client's datagrams
# after the server's 1252-byte long-header datagram, up to its first short
# header: their count, the type of each one's first packet (I Initial,
# H Handshake) and their sizes. REAL, a capture of Chromium -> a real
# server, gives the reference: its most common shape (e.g. "I H") and, per
# position, the size range over the connections of that shape. Every
# connection of TEST must have that shape with sizes in those ranges.
# Prints both; exit 1 with the reason on a failure.
#
# usage: quic-second-flight.sh REAL_PCAP REAL_PORT TEST_PCAP TEST_PORT MIN_FLOWS
set -u
REAL=$1 RPORT=$2 TEST=$3 TPORT=$4 MINFLOWS=$5

# flights PCAP PORT: one line per connection: "TYPES<TAB>SIZES"
flights() {
	tshark -n -r "$1" -d "udp.port==$2,quic" -Y "udp.port==$2" -T fields -E occurrence=f \
		-e udp.srcport -e udp.dstport -e udp.length -e quic.header_form \
		-e quic.long.packet_type 2>/dev/null |
		awk -F'\t' -v P="$2" '{
			c2s = ($2 == P); k = c2s ? $1 : $2; sz = $3 - 8
			if (!c2s && sz == 1252 && $4 == 1) { fl[k] = 1; next }
			if (!fl[k] || !c2s || done[k]) next
			if ($4 == 0) { done[k] = 1; print substr(t[k], 2) "\t" substr(s[k], 2); next }
			t[k] = t[k] " " ($5 == 0 ? "I" : $5 == 2 ? "H" : "?"); s[k] = s[k] " " sz }'
}

flights "$REAL" "$RPORT" >"$TEST.real-flights"
flights "$TEST" "$TPORT" >"$TEST.test-flights"
SHAPE=$(cut -f1 "$TEST.real-flights" | sort | uniq -c | sort -rn | head -1 | sed 's/^ *[0-9]* //')
NREAL=$(wc -l <"$TEST.real-flights")
NSHAPE=$(awk -F'\t' -v S="$SHAPE" '$1 == S' "$TEST.real-flights" | wc -l)
# per position: min..max of the real connections of that shape
RANGES=$(awk -F'\t' -v S="$SHAPE" '$1 == S {
		n = split($2, a, " ")
		for (i = 1; i <= n; i++) {
			if (!(i in lo) || a[i] < lo[i]) lo[i] = a[i]
			if (!(i in hi) || a[i] > hi[i]) hi[i] = a[i]
		}
	} END { for (i = 1; i <= n; i++) printf "%s%d..%d", (i > 1 ? " " : ""), lo[i], hi[i] }' \
	"$TEST.real-flights")
echo "quic-second-flight: $REAL: $NSHAPE of $NREAL connections answer with \"$SHAPE\"," \
	"sizes $RANGES"
NTEST=$(wc -l <"$TEST.test-flights")
BAD=$(awk -F'\t' -v S="$SHAPE" -v R="$RANGES" '{
		if ($1 != S) { print; next }
		n = split($2, a, " "); split(R, r, " ")
		for (i = 1; i <= n; i++) {
			split(r[i], b, "\\.\\.")
			if (a[i] < b[1] + 0 || a[i] > b[2] + 0) { print; next }
		}
	}' "$TEST.test-flights")
sed 's/\t/: /' "$TEST.test-flights" | sort | uniq -c | sed "s|^|quic-second-flight: $TEST: |"
if [[ -z $SHAPE || $NTEST -lt $MINFLOWS ]]; then
	echo "quic-second-flight: $NTEST connections in $TEST, want at least $MINFLOWS" >&2
	exit 1
fi
if [[ -n $BAD ]]; then
	echo "quic-second-flight: $(wc -l <<<"$BAD") of $NTEST connections differ from \"$SHAPE\" $RANGES:" >&2
	head -5 <<<"$BAD" >&2
	exit 1
fi
echo "quic-second-flight: $NTEST of $NTEST connections answer with \"$SHAPE\" within $RANGES"
