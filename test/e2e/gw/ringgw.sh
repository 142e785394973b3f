#!/bin/sh
# Runs a net_ring gateway test program (ringgw.c's users: gw_live.c,
# gw_quic.c): the main lcore, one gateway worker and one driver lcore.
# args: EXE WORKDIR [ARG...]: the program gets WORKDIR ARG... after "--".
set -eu
EXE=$(realpath "$1")
WORK=$(realpath -m "$2")
shift 2
PREFIX=dgwtest-ring-$$
trap 'rm -rf "/var/run/dpdk/$PREFIX"' EXIT
rm -rf "$WORK"
mkdir -p "$WORK"
cpus=$(nproc)
timeout 120 "$EXE" --lcores "0@0,1@$((1 % cpus)),2@$((2 % cpus))" --no-huge -m 512 \
	--no-pci --file-prefix "$PREFIX" --log-level=dustgw:info -- "$WORK" "$@"
