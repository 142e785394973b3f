#!/bin/sh
# dust-dpi over a capture another e2e test left behind (the netns test's
# client<->gateway wire): the whole capture and each direction of the Dust
# port must pass. Skips (77) only when that test cannot have run here (not
# root, no namespaces); a missing capture when it could have run is a failure.
# usage: dpi-artifact.sh DUST_DPI CAPTURE PORT
set -u
dpi=$1 cap=$2 port=$3
if [ ! -s "$cap" ]; then
  if [ "$(id -u)" -ne 0 ] || ! ip netns add dpi-probe-$$ 2>/dev/null; then
    echo "SKIP: $cap missing and the netns test cannot run here (needs root and namespaces)"
    exit 77
  fi
  ip netns del dpi-probe-$$
  echo "FAIL: $cap missing: run the netns test first (meson test --suite e2e runs it before this)"
  exit 1
fi
rc=0
for args in "" "--dir to" "--dir from"; do
  # shellcheck disable=SC2086
  "$dpi" --port "$port" $args "$cap" || rc=1
done
exit $rc
