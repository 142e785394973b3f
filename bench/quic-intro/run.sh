#!/bin/sh
# The quic intro's cost on the gateway before and after the hybrid hello
# (issue 18): dust_quic_intro_accept of a returning client's hellos, the
# same program built against REV's libdust (default main) and against
# BUILD's (this tree), run alternately N times; the minimum of each is the
# figure (a loaded machine only adds). Prints both, the ratio, ML-KEM-768
# encapsulation alone.
# usage: bench/quic-intro/run.sh [BUILD=build] [REV=main] [N=12]
set -eu
cd "$(dirname "$0")/../.."
b=${1:-build} rev=${2:-main} n=${3:-12}
w=$(mktemp -d /tmp/quic-intro.XXXXXX)
trap 'rm -rf "$w"' EXIT
git archive "$rev" | tar -x -C "$w"
(cd "$w" && meson setup b -Dapp=disabled -Dbench=disabled -Dbuildtype=release >/dev/null &&
	ninja -j 2 -C b lib/dust/libdust.a >/dev/null)
libs="-lsodium -lcrypto -lpthread -lIPSec_MB -lcurl -ljansson"
cc -O2 -std=gnu11 -I"$w/lib/dust" -I"$w/b/lib/dust" bench/quic-intro/quicbench.c \
	"$w/b/lib/dust/libdust.a" $libs -o "$w/before"
cc -O2 -std=gnu11 -DPQ -Ilib/dust -I"$b/lib/dust" bench/quic-intro/quicbench.c \
	"$b/lib/dust/libdust.a" $libs -o "$w/after"
for _ in $(seq "$n"); do
	"$w/before" 4 | sed 's/^/before /'
	"$w/after" 4 | sed 's/^/after /'
done >"$w/out"
awk '/accept/ { split($0, a, "accept "); v = a[2] + 0; if (!($1 in m) || v < m[$1]) m[$1] = v }
	/encaps/ { split($0, e, "encaps "); v = e[2] + 0; if (!em || v < em) em = v }
	END { printf "quic intro accept: before %.1f us, after %.1f us, ratio %.2f; ML-KEM-768 encaps %.1f us\n",
		m["before"], m["after"], m["after"] / m["before"], em }' "$w/out"
