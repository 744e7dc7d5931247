#!/usr/bin/env bash
# chaos-loop.sh [N]: runs the chaos test (TestChaosWorkersUnderFaults, -race) N times in a row
# (default 20), stops at the first failure, and prints each run's result, duration and figures,
# then a summary. The test binary is built once; each run's output is kept in $CHAOS_LOOP_DIR
# (default: a new directory under /tmp), and a failing run also keeps its event logs (the test
# prints where).
set -euo pipefail

n=${1:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${CHAOS_LOOP_DIR:-$(mktemp -d /tmp/occ-chaos-loop-XXXXXX)}
mkdir -p "$out"
cd "$root/cmd/occ" # the test's TestMain builds the occ binary from the package directory
go test -c -race -o "$out/occ.test" .

passed=0
durations=()
summary() {
	echo "chaos-loop: $passed of $n runs green in a row; durations (s): ${durations[*]:-none}; logs in $out"
}
for i in $(seq 1 "$n"); do
	log="$out/run-$i.log"
	began=$(date +%s)
	status=pass
	"$out/occ.test" -test.run '^TestChaos' -test.count=1 -test.v -test.timeout 30m >"$log" 2>&1 || status=FAIL
	took=$(($(date +%s) - began))
	durations+=("$took")
	figures=$(grep -o 'chaos figures: .*' "$log" | tail -1 || true)
	echo "run $i/$n: $status in ${took}s (started $(date -u -d "@$began" +%H:%M:%S) UTC): ${figures:-no figures}"
	if [ "$status" = FAIL ]; then
		grep -E -- '--- FAIL|chaos: [0-9]+ invariant|_test.go:[0-9]+:.*(Error|want|did not|fail)' "$log" | head -20 || true
		echo "full log: $log"
		summary
		exit 1
	fi
	passed=$((passed + 1))
done
summary
