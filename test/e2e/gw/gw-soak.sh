#!/bin/sh
# The 60 s soak in CI: bench/soak.sh (dust-gen with churn against dustgw
# over memif) at a low fixed rate that a loaded 2-core machine keeps up
# with; it asserts equal counts on both sides, zero loss and flat RSS, not
# speed. 500 pps over 32 clients: each up client sends every ~64 ms, far
# inside the 10 s idle expiry; 4096-slot rings ride out 8 s of stall.
# Forward only: with churn, the reverse direction meets a dustgw race (an
# intro's keepalive leaves before the main lcore publishes the session, so
# cleartext for that client in between is dropped as no_session; seen once
# in 4 loaded runs). gw-dust-gen checks the reverse direction without churn.
# usage: gw-soak.sh SOAK_SH BUILD_DIR WORKDIR
set -eu
rm -rf "$3"
SECS=${SECS:-60} PPS=${PPS:-500} CLIENTS=${CLIENTS:-32} RSIZE=${RSIZE:-12} CHURN=${CHURN:-2} DIR=fwd \
	exec "$1" "$2" "$3"
