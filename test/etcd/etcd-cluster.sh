#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A 3-member etcd cluster on loopback for the etcd store's tests: started,
# members killed and restored, stopped, all in one directory the test owns.
# usage: etcd-cluster.sh DIR start | kill NAME | restore NAME | url [PREFIX] | stop |
#        dump FILE | revs FILE KEYPREFIX | ranges FILE | put KEY VALUE | post PATH BODY
#        (members are a, b, c)
#   dump: every key and value, decoded, one "KEY VALUE" line each (what a reader of
#   the cluster, or of a backup, sees); revs: "KEYS REVISIONS", how many keys
#   start with KEYPREFIX and how many revisions wrote them (one txn: one);
#   ranges: the range requests the members have answered, all together (their
#   /metrics: how a load read the store);
#   put: a write by someone without the server key;
#   post: a request to member a's JSON gateway, its reply on stdout (as root under TLS)
# env ETCD_TLS=1 (at start): the client port is https with --client-cert-auth and
#     etcd auth on (SPEC §7.5): DIR/tls holds a CA, the members' and a client's
#     certificates (made here with openssl), a second CA and a client of it (for
#     tests of refusals); users root, dust (role dust: READWRITE on each PREFIX
#     that `url PREFIX` names) and nobody (no role); their passwords in
#     DIR/tls/*.pass. url then gives the etcds:// URL as user dust.
# env ETCD_NETNS: run the members in this network namespace (its own ports,
#     no collision), ETCD_HOST: the address they listen on (default 127.0.0.1),
#     ETCD_PORT_BASE: the six ports from there (default: a free random base)
set -eu
HOST=${ETCD_HOST:-127.0.0.1}
IN_NS=()
[ -n "${ETCD_NETNS:-}" ] && IN_NS=(ip netns exec "$ETCD_NETNS")

MEMBERS="a b c"
TLS=0

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
	local tls=()
	# tokens live 2 s unused (300 by default), so that clients renew them often
	[ "$TLS" = 1 ] && tls=(--cert-file "$d/tls/server.pem" --key-file "$d/tls/server.key"
		--client-cert-auth --trusted-ca-file "$d/tls/ca.pem" --auth-token-ttl 2)
	setsid "${IN_NS[@]}" /usr/bin/etcd --name "$m" --data-dir "$d/$m.data" "${tls[@]}" \
		--listen-client-urls "$(scheme)://$HOST:$c" --advertise-client-urls "$(scheme)://$HOST:$c" \
		--listen-peer-urls "http://$HOST:$p" --initial-advertise-peer-urls "http://$HOST:$p" \
		--initial-cluster "$(initial_cluster "$d")" --initial-cluster-state new \
		--initial-cluster-token "dust-$(basename "$d")" \
		--heartbeat-interval 50 --election-timeout 500 \
		--logger zap --log-outputs "$d/$m.log" --log-level warn </dev/null >/dev/null 2>&1 &
	echo $! >"$d/$m.pid"
}

healthy() { # DIR NAME: the member answers and has a leader
	ecurl "$1" "$2" /health -f -m 2 | grep -q '"health":"true"'
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

# The certificates of a TLS cluster: CA, members (one certificate, SAN the
# listen address), client; a stranger's CA and client.
make_tls() { # DIR
	local t=$1/tls n
	mkdir -p "$t"
	chmod 700 "$t"
	for n in ca other-ca; do
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
			-subj "/CN=dust test $n" -keyout "$t/$n.key" -out "$t/$n.pem" 2>/dev/null
	done
	issue() { # NAME CA EXT SUBJECT
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "$4" \
			-keyout "$t/$1.key" -out "$t/$1.csr" 2>/dev/null
		printf '%s\n' "$3" >"$t/$1.ext"
		openssl x509 -req -in "$t/$1.csr" -CA "$t/$2.pem" -CAkey "$t/$2.key" -CAcreateserial \
			-days 2 -extfile "$t/$1.ext" -out "$t/$1.pem" 2>/dev/null
	}
	# No CN on a client certificate: with auth on, etcd's JSON gateway answers
	# HTTP 400 to a client whose certificate has one (its embed/serve.go), so
	# the user is told by password and token only. The members' CN names no user.
	issue server ca "subjectAltName=IP:$HOST,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth" "/CN=dust test etcd member"
	issue client ca "extendedKeyUsage=clientAuth" "/O=dust test client"
	issue stranger other-ca "extendedKeyUsage=clientAuth" "/O=dust test stranger"
	for n in root dust nobody; do
		head -c 18 /dev/urandom | base64 >"$t/$n.pass"
	done
	chmod 600 "$t"/*
	echo 1 >"$1/tls-on"
}

scheme() { [ "$TLS" = 1 ] && echo https || echo http; }

# curl to a member's client port, with the client certificate under TLS.
ecurl() { # DIR NAME PATH [curl args...]
	local d=$1 m=$2 path=$3
	shift 3
	local tls=()
	[ "$TLS" = 1 ] && tls=(--cacert "$d/tls/ca.pem" --cert "$d/tls/client.pem" --key "$d/tls/client.key")
	"${IN_NS[@]}" curl -s "${tls[@]}" "$@" "$(scheme)://$HOST:$(port_of "$d" "$m" client)$path"
}

# POST as root (a token once auth is on), the reply on stdout; fails on an
# HTTP error. A refused token (it expires) is renewed once.
rpost() { # DIR PATH BODY
	local hdr=()
	if [ -f "$1/tls/auth-on" ]; then
		[ -s "$1/tls/root.tok" ] || root_login "$1"
		hdr=(-H "Authorization: $(cat "$1/tls/root.tok")")
		ecurl "$1" a "$2" -f -m 5 "${hdr[@]}" -X POST -d "$3" && return 0
		root_login "$1"
		hdr=(-H "Authorization: $(cat "$1/tls/root.tok")")
	fi
	ecurl "$1" a "$2" -f -m 5 "${hdr[@]}" -X POST -d "$3"
}

root_login() { # DIR
	ecurl "$1" a /v3/auth/authenticate -f -m 5 -X POST \
		-d "{\"name\":\"root\",\"password\":\"$(cat "$1/tls/root.pass")\"}" |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' >"$1/tls/root.tok"
	[ -s "$1/tls/root.tok" ] || die "root cannot log in"
}

# Users root, dust, nobody; role dust (no permission until url grants one); auth on.
enable_auth() { # DIR
	local d=$1 u
	for u in root dust nobody; do
		rpost "$d" /v3/auth/user/add "{\"name\":\"$u\",\"password\":\"$(cat "$d/tls/$u.pass")\"}" >/dev/null ||
			die "cannot add user $u"
	done
	rpost "$d" /v3/auth/role/add '{"name":"root"}' >/dev/null &&
		rpost "$d" /v3/auth/user/grant '{"user":"root","role":"root"}' >/dev/null &&
		rpost "$d" /v3/auth/role/add '{"name":"dust"}' >/dev/null &&
		rpost "$d" /v3/auth/user/grant '{"user":"dust","role":"dust"}' >/dev/null &&
		rpost "$d" /v3/auth/enable '{}' >/dev/null || die "cannot enable auth"
	touch "$d/tls/auth-on"
}

# Role dust may read and write PREFIX/ and nothing else.
grant_prefix() { # DIR PREFIX
	local k e
	k=$(printf '%s/' "$2" | base64 -w0)
	e=$(printf '%s0' "$2" | base64 -w0)
	rpost "$1" /v3/auth/role/grant \
		"{\"name\":\"dust\",\"perm\":{\"permType\":\"READWRITE\",\"key\":\"$k\",\"range_end\":\"$e\"}}" \
		>/dev/null || die "cannot grant $2/ to role dust"
}

dir=${1:-}
cmd=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 DIR start|kill NAME|restore NAME|url [PREFIX]|stop"
if [ -f "$dir/tls-on" ]; then TLS=1; fi
case $cmd in
start)
	mkdir -p "$dir"
	if [ -n "${ETCD_PORT_BASE:-}" ]; then echo "$ETCD_PORT_BASE" >"$dir/base"; else pick_ports >"$dir/base"; fi
	[ -s "$dir/base" ] || die "no free loopback ports"
	if [ "${ETCD_TLS:-0}" = 1 ]; then
		make_tls "$dir"
		TLS=1
	fi
	for m in $MEMBERS; do
		run_member "$dir" "$m"
	done
	wait_healthy "$dir" $MEMBERS
	if [ "$TLS" = 1 ]; then enable_auth "$dir"; fi
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
	if [ "$TLS" = 1 ]; then
		grant_prefix "$dir" "${3:-dust}"
		t=$dir/tls
		echo "etcds://$u/${3:-dust}?dir=$t&ca=ca.pem&cert=client.pem&key=client.key&user=dust&password-file=dust.pass"
	else
		echo "etcd://$u/${3:-dust}"
	fi
	;;
post)
	rpost "$dir" "$3" "$4"
	;;
dump)
	rpost "$dir" /v3/kv/range '{"key":"AA==","range_end":"AA=="}' | /usr/bin/python3 -c '
import base64, json, sys
for kv in json.load(sys.stdin).get("kvs", []):
    print(base64.b64decode(kv["key"]).decode(), base64.b64decode(kv.get("value", "")).decode())
' >"$3"
	;;
revs) # FILE KEYPREFIX: "KEYS REVISIONS" under KEYPREFIX (the puts of one txn share one)
	s=$(printf %s "$4" | base64 -w0)
	e=$(printf %s "$4" | /usr/bin/python3 -c 'import base64, sys
k = bytearray(sys.stdin.buffer.read())
k[-1] += 1
print(base64.b64encode(bytes(k)).decode())')
	rpost "$dir" /v3/kv/range "{\"key\":\"$s\",\"range_end\":\"$e\"}" | /usr/bin/python3 -c '
import json, sys
kvs = json.load(sys.stdin).get("kvs", [])
print(len(kvs), len({kv["mod_revision"] for kv in kvs}))' >"$3"
	;;
ranges) # FILE
	n=0
	for m in $MEMBERS; do
		r=$(ecurl "$dir" "$m" /metrics -f -m 5 |
			awk '/^grpc_server_handled_total\{grpc_code="OK",grpc_method="Range",/ {s += $2} END {print s + 0}')
		n=$((n + r))
	done
	echo "$n" >"$3"
	;;
put)
	k=$(printf %s "$3" | base64 -w0)
	v=$(printf %s "$4" | base64 -w0)
	rpost "$dir" /v3/kv/put "{\"key\":\"$k\",\"value\":\"$v\"}" >/dev/null
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
