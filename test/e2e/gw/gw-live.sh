#!/bin/sh
# Runs gw_live (see gw_live.c): 1 gateway worker + 1 driver lcore.
# args: GW_LIVE_EXE WORKDIR
set -eu
EXE=$(realpath "$1")
WORK=$(realpath -m "$2")
PREFIX=dgwtest-live-$$
trap 'rm -rf "/var/run/dpdk/$PREFIX"' EXIT
rm -rf "$WORK"
mkdir -p "$WORK"
cpus=$(nproc)
timeout 120 "$EXE" --lcores "0@0,1@$((1 % cpus)),2@$((2 % cpus))" --no-huge -m 512 \
	--no-pci --file-prefix "$PREFIX" --log-level=dustgw:info -- "$WORK"
