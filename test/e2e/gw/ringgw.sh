#!/bin/sh
# Runs a gateway test program over a --no-huge EAL (ringgw.c's users:
# gw_lcores.c, gw_live.c, gw_quic.c; gw_msgs.c and the unit tier's
# test/unit/test_{pending,pubwait,slow}.c with RINGGW_LCORES=1): the main
# lcore, the gateway's workers and one driver lcore, RINGGW_LCORES in all
# (default 3; gw_lcores needs 4).
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
lcores=0@0
i=1
while [ "$i" -lt "${RINGGW_LCORES:-3}" ]; do
	lcores="$lcores,$i@$((i % cpus))"
	i=$((i + 1))
done
timeout 120 "$EXE" --lcores "$lcores" --no-huge -m 512 \
	--no-pci --file-prefix "$PREFIX" --log-level=dustgw:info -- "$WORK" "$@"
