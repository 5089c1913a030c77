#!/usr/bin/env bash
# The test suite beside two CPU-bound busy loops (issue 30: no verdict may depend on load).
#
#   bash benchmarks/suite_beside_hogs.sh [LOG]     # default: /tmp/suite_beside_hogs.log
#
# Starts two `yes > /dev/null`, runs `bash scripts/test.sh`, stops them; prints the exit
# status, the wall seconds and the load average at the start and the end.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=${1:-/tmp/suite_beside_hogs.log}
yes >/dev/null &
h1=$!
yes >/dev/null &
h2=$!
trap 'kill "$h1" "$h2" 2>/dev/null' EXIT
echo "hogs $h1 $h2; start $(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
bash scripts/test.sh -p no:cacheprovider >"$LOG" 2>&1
rc=$?
echo "exit $rc after $(($(date +%s) - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg); log: $LOG"
tail -n 1 "$LOG"
exit "$rc"
