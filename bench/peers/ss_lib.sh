# Start and stop a shadowsocks-libev UDP relay on loopback for the peer bench.
# ss_start SS_SERVER [CPU]: sets SS_PID, SS_PORT, SS_KEY. ss_stop: kills it.

ss_key() {
	local k
	# ss-server's --key wants base64; avoid '+' and '/' whose alphabet varies.
	while :; do
		k=$(head -c 32 /dev/urandom | base64)
		case $k in *[+/]*) ;; *) echo "$k"; return ;; esac
	done
}

ss_start() {
	local bin=$1 cpu=${2:-} try pin=()
	[ -n "$cpu" ] && pin=(taskset -c "$cpu")
	SS_KEY=$(ss_key)
	for try in 1 2 3 4 5; do
		SS_PORT=$((20000 + RANDOM % 40000))
		"${pin[@]}" "$bin" -s 127.0.0.1 -p "$SS_PORT" --key "$SS_KEY" \
			-m chacha20-ietf-poly1305 -U >/dev/null 2>&1 &
		SS_PID=$!
		sleep 0.3
		if kill -0 "$SS_PID" 2>/dev/null &&
			grep -qi ":$(printf '%04X' "$SS_PORT") " /proc/net/udp; then
			return 0
		fi
		kill "$SS_PID" 2>/dev/null
		wait "$SS_PID" 2>/dev/null
	done
	echo "ss_start: ss-server did not come up" >&2
	return 1
}

ss_stop() {
	if [ -n "${SS_PID:-}" ]; then
		kill "$SS_PID" 2>/dev/null
		wait "$SS_PID" 2>/dev/null
		SS_PID=
	fi
}
