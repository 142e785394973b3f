#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The etcd store's library test: a 3-member TLS cluster on loopback in a
# temporary directory (etcd-cluster.sh), test_store_etcd against it, the
# cluster stopped and removed on exit whatever happens.
# usage: store-etcd.sh TEST_STORE_ETCD
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exe=$1
[ -x /usr/bin/etcd ] || { echo "SKIP: no /usr/bin/etcd (etcd-server)"; exit 77; }
dir=$(mktemp -d /tmp/dust-etcd-XXXXXX)
cleanup() {
	"$here/etcd-cluster.sh" "$dir" stop || true
	rm -rf "$dir"
}
trap cleanup EXIT
# the ports of this test: 23790-23795 (ETCD_PORT_BASE=23790), unless set otherwise
# over TLS with client certificates and etcd auth (SPEC §7.5), as production
ETCD_TLS=1 ETCD_PORT_BASE=${ETCD_PORT_BASE:-23790} "$here/etcd-cluster.sh" "$dir" start
# the prefixes the test uses besides lib: their grants to role dust
"$here/etcd-cluster.sh" "$dir" url lib-bench >/dev/null
"$here/etcd-cluster.sh" "$dir" url mig >/dev/null
"$here/etcd-cluster.sh" "$dir" url batch1 >/dev/null
"$here/etcd-cluster.sh" "$dir" url batch8 >/dev/null
"$here/etcd-cluster.sh" "$dir" url split >/dev/null
DUST_ETCD_URL=$("$here/etcd-cluster.sh" "$dir" url lib)
DUST_ETCD_CTL="$here/etcd-cluster.sh $dir"
export DUST_ETCD_URL DUST_ETCD_CTL
"$exe"
