#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Do quic-profile flows pass as QUIC to real parsers? On a capture of them:
# tshark dissects every datagram on PORT as QUIC, with no malformed packet
# and no expert item of Error severity, and decrypts one ClientHello naming
# SNI in every connection a client opened (its CRYPTO stream reassembled
# across the connection's Initials, as a browser's hello spans two). As tshark hands any datagram on a QUIC port to
# its QUIC dissector, it must also have followed every datagram into a
# connection, and every client short header's DCID must be one it learnt
# from that connection's handshake (random bytes fail these two); every
# hello split over its Initials as Chromium 156 splits it; nDPI (DPI only, no port guess) labels >= 99% of
# the flows QUIC. No client datagram is over 1250 bytes, no server one over
# 1252 (SPEC §12.4: Chromium's and quic-go's bounds) but behind path MTU
# discovery's probes: a server datagram over its flow's bound must be the
# next probe of quic-go's search on a path that loses none ((bound + 1452)
# / 2: 1352, 1402, 1427, 1439), which then becomes the bound. Prints the
# figures; exit 1 with the reason on a failure.
#
# A real server grows its datagrams past 1252 once it has probed the path
# MTU (quic-go on loopback: 1439): with BOUNDS "none" the sizes are only
# reported, for captures of real QUIC.
#
# usage: quic-wire.sh PCAP PORT SNI MIN_FLOWS [BOUNDS]   (BOUNDS: dust or none)
set -u
F=$1 PORT=$2 SNI=$3 MINFLOWS=$4 BOUNDS=${5:-dust}
bad=0

no() {
	echo "quic-wire: $*" >&2
	bad=1
}

# ts FILTER [tshark args]: the frames of F that FILTER matches, one a line
ts() {
	local filter=$1
	shift
	tshark -n -r "$F" -d "udp.port==$PORT,quic" -Y "$filter" "$@" 2>/dev/null
}

TOTAL=$(ts "udp.port==$PORT" | wc -l)
NOTQ=$(ts "udp.port==$PORT && !quic" | wc -l)
MAL=$(ts "_ws.malformed" | wc -l)
ERR=$(ts "_ws.expert.severity==error" | wc -l)
NOCONN=$(ts "udp.port==$PORT && !quic.connection.number" | wc -l)
NODCID=$(ts "udp.dstport==$PORT && quic.header_form==0 && !quic.dcid" | wc -l)
SHORT=$(ts "udp.dstport==$PORT && quic.header_form==0" | wc -l)
# A browser's hello spans several Initials (Chromium 156: two, its CRYPTO
# frames shuffled across them), and a client repeats Initials (PTO, its
# ACK of the server's): tshark reassembles each connection's CRYPTO stream
# (connections keyed by the client's DCID), so count connections, not
# datagrams: every connection a client opened with an Initial must yield
# exactly one decrypted ClientHello.
# One pass over the client Initials gives both their connections and, for
# hello-split.py below, their packet numbers and CRYPTO spans.
ts "udp.dstport==$PORT && quic.long.packet_type==0" -T fields -e quic.connection.number \
	-e quic.packet_number -e quic.crypto.offset -e quic.crypto.length >"$F.initials"
INIT=$(wc -l <"$F.initials")
cut -f1 "$F.initials" | cut -d, -f1 | sort -un >"$F.iconn"
CONNS=$(wc -l <"$F.iconn")
ts "tls.handshake.type==1" -T fields -e quic.connection.number \
	-e tls.handshake.extensions_server_name >"$F.hello"
cut -f1 "$F.hello" | cut -d, -f1 | sort -n >"$F.hconn"
HELLOS=$(wc -l <"$F.hello")
HCONNS=$(sort -u "$F.hconn" | wc -l)
cut -f2 "$F.hello" >"$F.sni"
WITHSNI=$(grep -cx "$SNI" "$F.sni")
[[ $TOTAL -gt 0 ]] || no "no datagram on port $PORT in $F"
[[ $NOTQ -eq 0 ]] || no "$NOTQ of $TOTAL datagrams are not dissected as QUIC"
[[ $MAL -eq 0 ]] || no "$MAL malformed packets"
[[ $ERR -eq 0 ]] || no "$ERR packets with an expert item of Error severity"
[[ $NOCONN -eq 0 ]] || no "$NOCONN datagrams outside any QUIC connection tshark followed"
[[ $SHORT -gt 0 && $NODCID -eq 0 ]] ||
	no "$NODCID of $SHORT client short headers without a DCID of a known connection"
[[ $INIT -gt 0 && $HELLOS -eq $CONNS && $HCONNS -eq $CONNS ]] ||
	no "$CONNS connections opened by $INIT client Initials, $HELLOS decrypted ClientHellos in $HCONNS of them"
[[ $WITHSNI -eq $HELLOS ]] || no "$WITHSNI of $HELLOS ClientHellos name $SNI"
# Chromium 156 splits its ClientHello over the hello's two Initials one way
# (the head and the tail, then the middle) and resends those same spans:
# a censor who decrypts Initials sees any other split (hello-split.py).
SPLIT=$("$(dirname "$0")/hello-split.py" <"$F.initials" 2>"$F.split") ||
	no "hellos not split over their Initials as Chromium 156's: $(head -c 600 "$F.split")"
read -r SPLIT_CONNS SPLIT_BAD HEAD_MIN HEAD_MAX <<<"$SPLIT"
# largest UDP payload each way (udp.length counts the 8-byte header); per
# flow (the client's port), the server's bound: 1252, raised by each probe
read -r CMAX SMAX OVER PROBED < <(ts "udp.port==$PORT" -T fields -e udp.dstport -e udp.length |
	awk -v p="$PORT" '{ split($1, d, ","); split($2, l, ","); n = l[1] - 8
		if (d[1] == p) { if (n > c) c = n; next }
		if (n > s) s = n
		b = bound[d[1]] ? bound[d[1]] : 1252
		if (n <= b) next
		if (n == int((b + 1452) / 2) && 1452 - b >= 20) { bound[d[1]] = n; probes++ } else over++ }
		END { print c + 0, s + 0, over + 0, probes + 0 }')
[[ $BOUNDS == none ]] || [[ $CMAX -le 1250 && $OVER -eq 0 ]] ||
	no "datagrams over the quic bounds: client $CMAX (bound 1250), server $SMAX ($OVER over its flow's bound: 1252 or the last probe)"
echo "tshark $(tshark -v 2>/dev/null | sed -n '1s/.*(Wireshark) \([^ ]*\).*/\1/p') on $F: $TOTAL datagrams on udp $PORT," \
	"$NOTQ not QUIC, $MAL malformed, $ERR with an Error expert item, $NOCONN outside a" \
	"connection, $NODCID of $SHORT client short headers with an unknown DCID;" \
	"$CONNS connections in $INIT client Initials, $HELLOS ClientHellos decrypted, $WITHSNI with SNI $SNI;" \
	"${SPLIT_BAD:-?} of ${SPLIT_CONNS:-?} hellos split otherwise than Chromium's (head ends ${HEAD_MIN:-?}..${HEAD_MAX:-?});" \
	"largest datagram: client $CMAX (bound 1250), server $SMAX (bound 1252, $PROBED path MTU probes raised it)"

# nDPI: -d turns port guessing off, so a QUIC label comes from the payload
ndpiReader -d -i "$F" -v 2 >"$F.ndpi" 2>&1 || no "ndpiReader failed on $F"
FLOWS=$(grep -cE '^[[:space:]]+[0-9]+[[:space:]]+UDP ' "$F.ndpi")
QFLOWS=$(grep -E '^[[:space:]]+[0-9]+[[:space:]]+UDP ' "$F.ndpi" | grep -c '/QUIC\]')
NSNI=$(grep -E '^[[:space:]]+[0-9]+[[:space:]]+UDP ' "$F.ndpi" | grep -c "$SNI")
[[ $FLOWS -ge $MINFLOWS ]] || no "nDPI saw $FLOWS flows, want at least $MINFLOWS"
[[ $((QFLOWS * 100)) -ge $((FLOWS * 99)) ]] || no "nDPI labels $QFLOWS of $FLOWS flows QUIC"
echo "$(ndpiReader -h 2>&1 | sed -n 's/Welcome to \(nDPI [^ ]*\).*/\1/p') (ndpiReader -d -i F -v 2):" \
	"$QFLOWS of $FLOWS flows QUIC, $NSNI showing SNI $SNI"
exit $bad
