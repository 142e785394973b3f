#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A 3-member etcd cluster on loopback for the etcd store's tests: started,
# members killed and restored, stopped, all in one directory the test owns.
# usage: etcd-cluster.sh DIR start | kill NAME | restore NAME | url [PREFIX] | stop |
#        dump FILE | put KEY VALUE     (members are a, b, c)
#   dump: every key and value, decoded, one "KEY VALUE" line each (what a reader of
#   the cluster, or of a backup, sees); put: a write by someone without the server key
# env ETCD_NETNS: run the members in this network namespace (its own ports,
#     no collision), ETCD_HOST: the address they listen on (default 127.0.0.1),
#     ETCD_PORT_BASE: the six ports from there (default: a free random base)
set -eu
HOST=${ETCD_HOST:-127.0.0.1}
IN_NS=()
[ -n "${ETCD_NETNS:-}" ] && IN_NS=(ip netns exec "$ETCD_NETNS")

MEMBERS="a b c"

die() {
	echo "etcd-cluster: $*" >&2
	exit 1
}

# Six free loopback ports (3 client, 3 peer) from a random base, checked by binding.
pick_ports() {
	/usr/bin/python3 - <<'EOF'
import random, socket
for _ in range(200):
    base = random.randrange(20000, 40000, 8)
    socks = []
    try:
        for p in range(base, base + 6):
            s = socket.socket()
            s.bind(("127.0.0.1", p))
            socks.append(s)
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    break
EOF
}

port_of() { # DIR NAME client|peer
	local base i=0 m
	base=$(cat "$1/base")
	for m in $MEMBERS; do
		[ "$m" = "$2" ] && break
		i=$((i + 1))
	done
	[ "$3" = client ] && echo $((base + i)) || echo $((base + 3 + i))
}

initial_cluster() {
	local out="" m
	for m in $MEMBERS; do
		out="$out${out:+,}$m=http://$HOST:$(port_of "$1" "$m" peer)"
	done
	echo "$out"
}

# Short heartbeats and elections: a killed leader is replaced within about a second.
run_member() { # DIR NAME
	local d=$1 m=$2 c p
	c=$(port_of "$d" "$m" client)
	p=$(port_of "$d" "$m" peer)
	setsid "${IN_NS[@]}" /usr/bin/etcd --name "$m" --data-dir "$d/$m.data" \
		--listen-client-urls "http://$HOST:$c" --advertise-client-urls "http://$HOST:$c" \
		--listen-peer-urls "http://$HOST:$p" --initial-advertise-peer-urls "http://$HOST:$p" \
		--initial-cluster "$(initial_cluster "$d")" --initial-cluster-state new \
		--initial-cluster-token "dust-$(basename "$d")" \
		--heartbeat-interval 50 --election-timeout 500 \
		--logger zap --log-outputs "$d/$m.log" --log-level warn </dev/null >/dev/null 2>&1 &
	echo $! >"$d/$m.pid"
}

healthy() { # DIR NAME: the member answers and has a leader
	"${IN_NS[@]}" curl -sf -m 2 "http://$HOST:$(port_of "$1" "$2" client)/health" |
		grep -q '"health":"true"'
}

wait_healthy() { # DIR NAMES...
	local d=$1 m i
	shift
	for m in "$@"; do
		for i in $(seq 150); do
			healthy "$d" "$m" && break
			kill -0 "$(cat "$d/$m.pid")" 2>/dev/null || die "member $m exited: $(tail -3 "$d/$m.log")"
			sleep 0.2
		done
		healthy "$d" "$m" || die "member $m not healthy after 30 s"
	done
}

kill_member() { # DIR NAME
	local pid i
	pid=$(cat "$1/$2.pid")
	kill -KILL "$pid" 2>/dev/null || true
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.05
	done
	echo "etcd-cluster: member $2 (pid $pid) did not exit" >&2
	return 1
}

dir=${1:-}
cmd=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 DIR start|kill NAME|restore NAME|url [PREFIX]|stop"
case $cmd in
start)
	mkdir -p "$dir"
	if [ -n "${ETCD_PORT_BASE:-}" ]; then echo "$ETCD_PORT_BASE" >"$dir/base"; else pick_ports >"$dir/base"; fi
	[ -s "$dir/base" ] || die "no free loopback ports"
	for m in $MEMBERS; do
		run_member "$dir" "$m"
	done
	wait_healthy "$dir" $MEMBERS
	;;
kill)
	kill_member "$dir" "$3"
	;;
restore)
	run_member "$dir" "$3"
	wait_healthy "$dir" "$3"
	;;
url)
	u=""
	for m in $MEMBERS; do
		u="$u${u:+,}$HOST:$(port_of "$dir" "$m" client)"
	done
	echo "etcd://$u/${3:-dust}"
	;;
dump)
	"${IN_NS[@]}" curl -sf -m 5 "http://$HOST:$(port_of "$dir" a client)/v3/kv/range" \
		-d '{"key":"AA==","range_end":"AA=="}' | /usr/bin/python3 -c '
import base64, json, sys
for kv in json.load(sys.stdin).get("kvs", []):
    print(base64.b64decode(kv["key"]).decode(), base64.b64decode(kv.get("value", "")).decode())
' >"$3"
	;;
put)
	k=$(printf %s "$3" | base64 -w0)
	v=$(printf %s "$4" | base64 -w0)
	"${IN_NS[@]}" curl -sf -m 5 "http://$HOST:$(port_of "$dir" a client)/v3/kv/put" \
		-d "{\"key\":\"$k\",\"value\":\"$v\"}" >/dev/null
	;;
stop) # every member, even if one will not go
	rc=0
	for m in $MEMBERS; do
		if [ -f "$dir/$m.pid" ]; then kill_member "$dir" "$m" || rc=1; fi
	done
	exit $rc
	;;
*)
	die "unknown command $cmd"
	;;
esac
