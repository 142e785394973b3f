#!/bin/sh
# The alert rules (config/prometheus): promtool checks their syntax and
# runs their unit tests (input series, the alerts that must and must not fire).
set -eu
DIR=$1
command -v promtool >/dev/null || { echo "SKIP: no promtool (apt-get install prometheus)"; exit 77; }
cd "$DIR"
promtool check rules dustgw-alerts.yml
promtool test rules dustgw-alerts.test.yml
echo "PASS prom-rules"
