#!/bin/sh
# The Prometheus endpoint ([telemetry] prometheus): a bad address stops
# dustgw with a message naming the key; a running gateway that carried 20
# clients' traffic serves /metrics that promtool accepts, with the intro,
# decode, delivery, session and port series equal to what was sent and to
# /dustgw/stats; requests other than GET /metrics are refused; a real
# Prometheus on loopback scrapes it (up == 1, the same delivered count).
. "$(dirname "$0")/lib.sh"

command -v promtool >/dev/null || { echo "SKIP: no promtool (apt-get install prometheus)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: no curl"; exit 77; }
TEL=$(command -v dpdk-telemetry.py || true)

free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

eal() {
	echo --lcores "$(lcores 1)" --no-huge -m 512 --no-pci --file-prefix "$PREFIX"
}

make_store 30
make_conf 1
sed -i 's/^exit_on_idle_ms.*/exit_on_idle_ms = 0/' gw.conf
cp gw.conf good.conf
"$PCAP" gen --store inv.store --key server.key --out in.pcap --manifest manifest.txt --clients 20 --packets 2

# 1. bad addresses: --check-config and a start both refuse, naming the key
for bad in 127.0.0.1:99999 localhost:9464 127.0.0.1 '[::1:9464' 300.1.1.1:80; do
	cp good.conf gw.conf
	printf '[telemetry]\nprometheus = %s\n' "$bad" >>gw.conf
	if "$DUSTGW" --check-config --config gw.conf >bad.out 2>&1; then
		fail "--check-config accepted prometheus = $bad"
	fi
	grep -qF "[telemetry] prometheus = '$bad'" bad.out || { cat bad.out; fail "no clear message for $bad"; }
done
# shellcheck disable=SC2046
if timeout 60 "$DUSTGW" $(eal) --vdev net_pcap0,rx_pcap=in.pcap --vdev net_pcap1,tx_pcap=x.pcap \
	-- --config gw.conf >bad.out 2>&1; then
	fail "dustgw started with prometheus = 300.1.1.1:80"
fi
grep -q "prometheus = '300.1.1.1:80': not an IPv4 address" bad.out || { cat bad.out; fail "start message"; }

# 2. a running gateway with traffic
PORT=$(free_port)
cp good.conf gw.conf
printf '[telemetry]\nprometheus = 127.0.0.1:%s\n' "$PORT" >>gw.conf
# shellcheck disable=SC2046
"$DUSTGW" $(eal) --vdev net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap \
	--vdev net_pcap1,tx_pcap=clear.pcap -- --config gw.conf --stats-out t.stats >t.summary 2>t.log &
GW=$!
PROM=
stop_all() {
	[ -z "$PROM" ] || kill -TERM "$PROM" 2>/dev/null || true
	kill -TERM "$GW" 2>/dev/null || true
	cleanup
}
trap stop_all EXIT
URL=http://127.0.0.1:$PORT/metrics
ok=0
for _ in $(seq 1 60); do
	if curl -sf "$URL" >m.txt 2>/dev/null && grep -q '^dustgw_delivered_total{lcore="1"} 40$' m.txt; then
		ok=1
		break
	fi
	sleep 0.5
done
[ $ok = 1 ] || { cat t.log; fail "/metrics never showed 40 delivered"; }
promtool check metrics <m.txt || fail "promtool check metrics"
has() {
	grep -qx "$1" m.txt || { grep "^${1%%[{ ]*}" m.txt >&2 || true; fail "no series '$1'"; }
}
has 'dustgw_intro_ok_total{lcore="1"} 20'
has 'dustgw_intro_first_use_total{lcore="1"} 20'
has 'dustgw_decoded_total{lcore="1"} 40'
has 'dustgw_net_rx_total{lcore="1"} 40'
has 'dustgw_sessions{lcore="1"} 20'
has 'dustgw_sessions_max{lcore="1"} 4096'
has 'dustgw_sessions_published 20'
has 'dustgw_invitations 30'
has 'dustgw_invitations_bound 20'
has 'dustgw_store_up 1'
has 'dustgw_store_remote 0'
has 'dustgw_intro_queue_depth{lcore="1"} 0'
has 'dustgw_pending_bindings{lcore="1"} 0'
has 'dustgw_drops_total{reason="auth",lcore="1"} 0'
has 'dustgw_drops_total{reason="quic_too_big",lcore="1"} 0'
has 'dustgw_port_receive_packets_total{port="net",device="net_pcap0"} 40'
has 'dustgw_port_transmit_packets_total{port="delivery",device="net_pcap1"} 40'
has 'dustgw_workers 1'
grep -q '^dustgw_build_info{version="[^"]*",aead_backend="[a-z-]*",aead_version="[0-9.]*",aead_code_path="[^"]*"} 1$' m.txt ||
	fail "build_info"
grep -q '^# TYPE dustgw_drops_total counter$' m.txt || fail "drops type"
awk '/^dustgw_uptime_seconds / { exit !($2 > 0 && $2 < 120) }' m.txt || fail "uptime"
awk '/^dustgw_worker_heartbeat_age_seconds/ { exit !($2 < 1) }' m.txt || fail "heartbeat age"
awk '/^dustgw_mbufs_in_use / { exit !($2 >= 0 && $2 <= 16383) }' m.txt || fail "mbufs in use"
# the same counters as DPDK telemetry's JSON
if [ -n "$TEL" ]; then
	echo /dustgw/stats | /usr/bin/python3 "$TEL" -f "$PREFIX" 2>/dev/null | tr -d ' \n' >stats.json
	for c in decoded delivered intro_ok net_rx net_tx; do
		v=$(sed -n "s/^dustgw_${c}_total{lcore=\"1\"} //p" m.txt)
		grep -q "\"$c\":${v}[,}]" stats.json || fail "$c: $v in /metrics, not in /dustgw/stats"
	done
fi

# a second gateway cannot take the same port: it says so and exits before
# it opens the running gateway's store
if timeout 60 "$DUSTGW" --lcores "$(lcores 1)" --no-huge -m 512 --no-pci --file-prefix "$PREFIX-2" \
	--vdev net_pcap0,rx_pcap=in.pcap --vdev net_pcap1,tx_pcap=x.pcap \
	-- --config gw.conf >busy.out 2>&1; then
	fail "a second dustgw started on the same prometheus port"
fi
rm -rf "/var/run/dpdk/$PREFIX-2"
grep -q "prometheus = 127.0.0.1:$PORT: Address already in use" busy.out || { cat busy.out; fail "busy port message"; }
! grep -q "close cleanly" busy.out || fail "the second gateway opened the store before its bind failed"

# 3. only GET (or HEAD) /metrics, bounded requests
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code "http://127.0.0.1:$PORT/")" = 404 ] || fail "/ is not 404"
[ "$(code -X POST "$URL")" = 405 ] || fail "POST is not 405"
[ "$(code -I "$URL")" = 200 ] || fail "HEAD is not 200"
big=$(head -c 5000 /dev/zero | tr '\0' a)
[ "$(code -H "X-Big: $big" "$URL")" = 431 ] || fail "a 5 kB header is not 431"
curl -sf "$URL" >/dev/null || fail "the endpoint died after bad requests"

# 4. a real Prometheus scrapes it on loopback
if command -v prometheus >/dev/null; then
	PP=$(free_port)
	cat >prometheus.yml <<YML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ['$(realpath "$HERE/../../../config/prometheus/dustgw-alerts.yml")']
scrape_configs:
  - job_name: dustgw
    static_configs: [{targets: ['127.0.0.1:$PORT']}]
YML
	prometheus --config.file=prometheus.yml --storage.tsdb.path=tsdb \
		--web.listen-address="127.0.0.1:$PP" >prometheus.log 2>&1 &
	PROM=$!
	q() { curl -sf "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" | tr -d ' \n'; }
	ok=0
	for _ in $(seq 1 40); do
		if q 'up{job="dustgw"}' | grep -q '"value":\[[0-9.]*,"1"\]' &&
			q 'sum(dustgw_delivered_total)' | grep -q '"value":\[[0-9.]*,"40"\]'; then
			ok=1
			break
		fi
		sleep 0.5
	done
	[ $ok = 1 ] || { tail prometheus.log; fail "prometheus: up != 1 or delivered != 40"; }
	q 'ALERTS' >alerts.json
	grep -q '"result":\[\]' alerts.json || { cat alerts.json; fail "alerts fire on a healthy gateway"; }
	kill -TERM "$PROM"
	wait "$PROM" || true
	PROM=
else
	echo "no prometheus server: scrape by a real Prometheus not tried"
fi
kill -TERM $GW
wait $GW || fail "dustgw exit status after SIGTERM"
trap cleanup EXIT
grep -q "dustgw summary" t.summary || fail "no summary after SIGTERM"
# every drop reason the gateway counts has its series
[ "$(grep -c '^drop\.' t.stats)" = "$(grep -c '^dustgw_drops_total{' m.txt)" ] ||
	fail "drop reasons: $(grep -c '^drop\.' t.stats) counted, $(grep -c '^dustgw_drops_total{' m.txt) exported"
echo "PASS gw-prometheus"
