#!/bin/sh
# Run dust-fulldisk on a 64 KiB tmpfs in a private mount namespace, so the
# disk really is full and nothing outside the test sees the mount.
# usage: fulldisk.sh DUST_FULLDISK
set -u
prog=$(realpath "$1")
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (mount)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: no unshare"; exit 77; }
dir=$(mktemp -d /tmp/dust-fulldisk.XXXXXX) || exit 99
trap 'rmdir "$dir"' EXIT
unshare -m --propagation private true 2>/dev/null || { echo "SKIP: no mount namespaces"; exit 77; }
unshare -m --propagation private sh -c 'mount -t tmpfs -o size=64k,mode=700 dust-full "$1" && exec "$2" "$1"' \
  sh "$dir" "$prog"
