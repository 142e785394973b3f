#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The classifier benchmark of issue 22 (SPEC §12.6): real Chromium 156 ->
# caddy HTTP/3 page loads against the same loads through Dust quic sessions,
# with the control beside them (two sets of real loads), all captured in this
# run. Prints accuracy and ROC AUC at N = 10/20/50 on sizes and with timing,
# a measurement, not a pass mark; exits non-zero only if a capture fails or
# a Dust capture breaks a quic size rule (classify.py --bounds).
#
# usage: run.sh BUILD_DIR [LOADS] [OUT_DIR]     (root; LOADS default 40)
#   SIZES="cover padding" (default) picks the Dust runs' size policies; a
#   policy with "-plain" after it (cover-plain) runs with --ack-compress off
#   (no compact packets, SPEC §6.5), for the two side by side. CONNECT=on-demand
#   (passed to tunnel-capture.sh) starts each Dust session with the load's first
#   packet (dust-client --connect on-demand) instead of before it.
set -e
set -o pipefail

B=$(realpath "$1")
LOADS=${2:-40}
OUT=${3:-$(mktemp -d /tmp/dust-classify.XXXXXX)}
SIZES=${SIZES:-cover padding}
HERE=$(dirname "$(realpath "$0")")
mkdir -p "$OUT"
PEER=$B/test/e2e/netns/netns-peer
CLIENT=$B/tools/dust-client/dust-client
[[ -x $PEER && -x $CLIENT ]] || { echo "run.sh: build $B first (netns-peer, dust-client)" >&2; exit 1; }

"$HERE/capture.sh" "$OUT/real-a.pcap" "$LOADS"
"$HERE/capture.sh" "$OUT/real-b.pcap" "$LOADS"
args=("$OUT/real-a.pcap" "$OUT/real-b.pcap" --label "control: real vs real")
for s in $SIZES; do
	zip=on
	[[ $s == *-plain ]] && zip=off
	ACK_COMPRESS=$zip "$HERE/tunnel-capture.sh" "$PEER" "$CLIENT" "$OUT/dust-$s.pcap" "$LOADS" \
		"${s%-plain}"
	# the size rules against the capture the model was made from (quic_sizes.h)
	[[ ${s%-plain} == padding ]] ||
		"$HERE/classify.py" --bounds "$HERE/../../test/data/chromium156-caddy-loads.pcap" \
			"$OUT/dust-$s.pcap"
	args+=("$OUT/real-b.pcap" "$OUT/dust-$s.pcap" --label "real vs Dust (sizes = $s)")
done
"$HERE/classify.py" "${args[@]}" | tee "$OUT/classify.txt"
echo "captures and figures in $OUT"
