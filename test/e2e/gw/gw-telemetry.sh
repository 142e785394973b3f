#!/bin/sh
# Telemetry, idle expiry and signals: while dustgw runs (no exit-on-idle),
# dpdk-telemetry.py reads /dustgw/stats and /dustgw/sessions; dust-invite
# revokes one invitation, which /dustgw/store shows as a new generation and
# which takes that client's session; the others then expire
# (idle_timeout_s = 5) and are unpublished; SIGTERM stops the workers
# cleanly and the summary is printed.
. "$(dirname "$0")/lib.sh"

TEL=$(command -v dpdk-telemetry.py || true)
[ -n "$TEL" ] || { echo "SKIP: no dpdk-telemetry.py"; exit 77; }
make_store 30
make_conf 1
sed -i 's/^exit_on_idle_ms.*/exit_on_idle_ms = 0/' gw.conf
sed -i 's/^\[runtime\]/[sessions]\nidle_timeout_s = 5\n&/' gw.conf
"$PCAP" gen --store inv.store --key server.key --out in.pcap --manifest m.txt --clients 20 --packets 2
"$DUSTGW" --lcores "$(lcores 1)" --no-huge -m 512 --no-pci --file-prefix "$PREFIX" \
	--vdev net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap --vdev net_pcap1,tx_pcap=clear.pcap \
	-- --config gw.conf --stats-out t.stats >t.summary 2>t.log &
GW=$!
tel() {
	echo "$1" | /usr/bin/python3 "$TEL" -f "$PREFIX" 2>/dev/null | tr -d ' \n'
}
ok=0
for i in $(seq 1 60); do
	if tel /dustgw/stats | grep -q '"delivered":40'; then
		ok=1
		break
	fi
	sleep 0.5
done
[ $ok = 1 ] || { kill -TERM $GW; fail "telemetry never showed delivered=40"; }
tel /dustgw/sessions | tee sessions.json | grep -q '"live":20' || { kill -TERM $GW; fail "sessions"; }
grep -q '"published":20' sessions.json || { kill -TERM $GW; fail "published sessions"; }
tel /dustgw/stats,0 | grep -q '"intro_ok":20' || { kill -TERM $GW; fail "per-worker stats"; }
# the first invitation's tunnel address (dust-invite hands out 10.9.0.2 first)
tel /dustgw/sessions,10.9.0.2 | tee one.json | grep -q '"live":1' || { kill -TERM $GW; fail "one session"; }
grep -q '"peer":"198.18.0.0","peer_port":20000' one.json || { kill -TERM $GW; fail "session peer"; }
tel /dustgw/store | tee store0.json | grep -q '"generation":0,"invitations":30,"bound":20,"revoked":0' ||
	{ kill -TERM $GW; fail "store telemetry before the revoke"; }
"$INVITE" revoke --store inv.store --key server.key --tunnel 10.9.0.3 || { kill -TERM $GW; fail "dust-invite revoke"; }
ok=0
for i in $(seq 1 20); do
	if tel /dustgw/store | grep -q '"generation":1,"invitations":30,"bound":20,"revoked":1' &&
		tel /dustgw/sessions,10.9.0.3 | grep -q '"live":0'; then
		ok=1
		break
	fi
	sleep 0.1
done
[ $ok = 1 ] || { kill -TERM $GW; fail "no new store generation or session still there after 2 s"; }
tel /dustgw/stats | grep -q '"sessions_revoked":1' || { kill -TERM $GW; fail "revoke count"; }
ok=0
for i in $(seq 1 60); do
	tel /dustgw/sessions >expired.json
	if grep -q '"live":0,"published":0' expired.json; then
		ok=1
		break
	fi
	sleep 0.5
done
[ $ok = 1 ] || { kill -TERM $GW; cat expired.json; fail "idle sessions did not expire"; }
tel /dustgw/stats | grep -q '"sessions_expired":19' || { kill -TERM $GW; fail "expiry count"; }
kill -TERM $GW
wait $GW || fail "dustgw exit status after SIGTERM"
grep -q "dustgw summary" t.summary || fail "no summary after SIGTERM"
"$PCAP" check --unordered --manifest m.txt --stats t.stats --delivered clear.pcap || fail "check"
echo "PASS gw-telemetry"
