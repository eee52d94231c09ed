#!/usr/bin/env bash
# The benchmark: starts the local S3 server, generates reproducible gateway
# data (fixed seeds; cached between runs), runs every case and mode several
# times, one process per measured run, and prints a table of medians with
# the ratios to the baselines measured in the same run (docs/performance.md).
#
#   bench/run.sh                 all cases: c1 c1-5k c2 c3 c4 latency-1 latency-20 latency-200
#   bench/run.sh latency-20      serve's notification-to-commit latency at 20 files/s, next to cron's
#   bench/run.sh c1 c3           some cases
#   REPS=5 bench/run.sh          more runs per case and mode (default 3)
#
# The sequential baseline of c1 commits 1,000 times and runs once (REPS_SLOW).
# Results go to bench/results/<date>.jsonl (gitignored); the table to stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

REPS="${REPS:-3}"
REPS_SLOW="${REPS_SLOW:-1}"
DATA="${BENCH_DATA:-${HOME}/.cache/timelake-bench}"
mkdir -p bin bench/results "$DATA"
RESULTS="bench/results/$(date -u +%Y%m%dT%H%M%SZ).jsonl"

echo "bench: building tlbench and the DuckDB baseline" >&2
go build -o bin/tlbench ./bench/tlbench
(cd bench/duckdb && go build -o ../../bin/tlbench-duckdb .)

STATE="$(mktemp -d "${TMPDIR:-/tmp}/timelake-bench-s3.XXXXXX")"
trap 'bash scripts/s3-server.sh stop "$STATE" >/dev/null || true; rm -rf "$STATE"' EXIT
bash scripts/s3-server.sh start "$STATE" >/dev/null
# shellcheck disable=SC1091
. "$STATE/env"

modes_of() {
	case "$1" in
	c1) echo "ingest pollers4 sequential rawcopy duckdb upload sdkupload" ;;
	c1-5k) echo "ingest" ;;
	c2) echo "ingest ingest-wide sequential rawcopy duckdb" ;;
	latency-*) echo "serve cron" ;;
	*) echo "ingest sequential rawcopy duckdb" ;;
	esac
}

one() { # case mode data
	local c=$1 m=$2 d=$3 setup="$STATE/setup.json"
	if [[ $m == duckdb ]]; then
		./bin/tlbench-duckdb -case "$c" -data "$d" >>"$RESULTS"
		return
	fi
	if [[ $m == upload || $m == sdkupload || $c == latency-* ]]; then
		./bin/tlbench setup >"$setup" # empty buckets: the files come from disk or are sent during the run
	else
		./bin/tlbench setup -data "$d" >"$setup"
	fi
	./bin/tlbench run -case "$c" -mode "$m" -setup "$setup" -data "$d" >>"$RESULTS"
	./bin/tlbench cleanup -setup "$setup"
}

cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=(c1 c1-5k c2 c3 c4 latency-1 latency-20 latency-200)
for c in "${cases[@]}"; do
	d="$DATA/$c"
	if [[ $c != latency-* && ! -f "$d.complete" ]]; then
		echo "bench: generating $c in $d" >&2
		rm -rf "$d"
		./bin/tlbench gen -case "$c" -out "$d"
		touch "$d.complete"
	fi
	for m in $(modes_of "$c"); do
		reps=$REPS
		[[ $c == c1 && $m == sequential ]] && reps=$REPS_SLOW
		for ((i = 1; i <= reps; i++)); do
			echo "bench: $c $m run $i/$reps" >&2
			one "$c" "$m" "$d"
		done
	done
done
./bin/tlbench report "$RESULTS"
echo "bench: results in $RESULTS" >&2
