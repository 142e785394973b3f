#!/bin/sh
# Run one libFuzzer harness for a bounded time over a fresh seed corpus.
# Fails (exit 1) on any finding; prints executions and coverage at the end.
# usage: run-fuzz.sh HARNESS MKCORPUS CORPUS_NAME SECONDS [WORKDIR]
set -u
harness=$1 mkcorpus=$2 name=$3 secs=$4
work=${5:-}
if [ -z "$work" ]; then
  work=$(mktemp -d /tmp/dust-fuzz-run.XXXXXX) || exit 99
  trap 'rm -rf "$work"' EXIT
fi
art="$work/artifacts-$name"
mkdir -p "$work/seeds" "$work/corpus-$name" "$art"
"$mkcorpus" "$work/seeds" || { echo "mkcorpus failed"; exit 1; }
# ASan's leak check at exit is on by default under libFuzzer; keep it so.
"$harness" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -print_final_stats=1 -artifact_prefix="$art/" \
  "$work/corpus-$name" "$work/seeds/$name" >"$work/$name.log" 2>&1
rc=$?
grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|stat::new_units_added)' "$work/$name.log"
if [ "$rc" -ne 0 ] || ls "$art" | grep -q .; then
  echo "FINDING in $name (exit $rc):"
  grep -E 'ERROR|SUMMARY|==[0-9]+==|runtime error|Test unit written' "$work/$name.log" | head -40
  exit 1
fi
echo "ok: $name: no finding in ${secs}s"
