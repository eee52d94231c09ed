#!/usr/bin/env bash
# The benchmark: starts the local S3 server, generates reproducible gateway
# data (fixed seeds; cached between runs), runs every case and mode several
# times, one process per measured run, and prints a table of medians with
# the ratios to the baselines measured in the same run (docs/performance.md).
#
#   bench/run.sh                 all cases: c1 c1-5k c2 c3 c4
#   bench/run.sh c1 c3           some cases
#   REPS=5 bench/run.sh          more runs per case and mode (default 3)
#   bench/run.sh fleet           the fleet bench: a simulated day of gateways
#
# The sequential baseline of c1 commits 1,000 times and runs once (REPS_SLOW).
# Results go to bench/results/<date>.jsonl (gitignored); the table to stdout.
#
# The fleet bench (docs/performance.md, "Fleet: a day of 20 gateways") runs
# one ingest per simulated minute, each its own process, on each store:
#   GATEWAYS=20         gateways, one ~100-row CSV file each per minute
#   MINUTES=1440        simulated minutes (one day)
#   STORES="local s3"   the local folder, the S3 server, or both
#   DUCKDB_EVERY=180    DuckDB query sample every N simulated minutes (and at the end)
#   STATE_EVERY=10      the table's state every N simulated minutes (and at the end)
#   EVERY=60            rows of the printed table every N simulated minutes
#   FLEET_SET=K=V,...   table properties set after the first run (experiments;
#                       the targets are about the defaults)
#   KEEP=1              keep the local store's landing and warehouse folders (path on stderr)
#   TLBENCH_PROFILE=DIR CPU and heap profiles of every run (cpu-<store>-<minute>.pprof)
# GATEWAYS=4 MINUTES=120 bench/run.sh fleet takes a few minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

REPS="${REPS:-3}"
REPS_SLOW="${REPS_SLOW:-1}"
DATA="${BENCH_DATA:-${HOME}/.cache/timelake-bench}"
mkdir -p bin bench/results "$DATA"
STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
RESULTS="bench/results/$STAMP.jsonl"

echo "bench: building tlbench and the DuckDB baseline" >&2
go build -o bin/tlbench ./bench/tlbench
(cd bench/duckdb && go build -o ../../bin/tlbench-duckdb .)

STATE="$(mktemp -d "${TMPDIR:-/tmp}/timelake-bench-s3.XXXXXX")"
trap 'bash scripts/s3-server.sh stop "$STATE" >/dev/null || true; rm -rf "$STATE"' EXIT
start_s3() {
	bash scripts/s3-server.sh start "$STATE" >/dev/null
	# shellcheck disable=SC1091
	. "$STATE/env"
}

if [[ ${1:-} == fleet ]]; then
	RESULTS="bench/results/$STAMP-fleet.jsonl"
	WORK="$(mktemp -d "${TMPDIR:-/tmp}/timelake-fleet.XXXXXX")"
	keep=()
	if [[ -n ${KEEP:-} ]]; then
		keep=(-keep)
		echo "bench: the fleet's folders stay in $WORK" >&2
		trap 'bash scripts/s3-server.sh stop "$STATE" >/dev/null || true; rm -rf "$STATE"' EXIT
	else
		trap 'bash scripts/s3-server.sh stop "$STATE" >/dev/null || true; rm -rf "$STATE" "$WORK"' EXIT
	fi
	for store in ${STORES:-local s3}; do
		[[ $store == s3 ]] && start_s3
		echo "bench: fleet on the $store store, ${GATEWAYS:-20} gateways, ${MINUTES:-1440} simulated minutes" >&2
		./bin/tlbench fleet -store "$store" -gateways "${GATEWAYS:-20}" -minutes "${MINUTES:-1440}" \
			-duckdb ./bin/tlbench-duckdb -duckdb-every "${DUCKDB_EVERY:-180}" -state-every "${STATE_EVERY:-10}" \
			-set "${FLEET_SET:-}" -work "$WORK" -out "$RESULTS" "${keep[@]}"
	done
	./bin/tlbench fleet-report -every "${EVERY:-60}" "$RESULTS"
	echo "bench: results in $RESULTS" >&2
	exit 0
fi
start_s3

modes_of() {
	case "$1" in
	c1) echo "ingest sequential rawcopy duckdb upload sdkupload" ;;
	c1-5k) echo "ingest" ;;
	c2) echo "ingest ingest-wide sequential rawcopy duckdb" ;;
	*) echo "ingest sequential rawcopy duckdb" ;;
	esac
}

one() { # case mode data
	local c=$1 m=$2 d=$3 setup="$STATE/setup.json"
	if [[ $m == duckdb ]]; then
		./bin/tlbench-duckdb -case "$c" -data "$d" >>"$RESULTS"
		return
	fi
	if [[ $m == upload || $m == sdkupload ]]; then
		./bin/tlbench setup >"$setup" # empty buckets: the files come from disk
	else
		./bin/tlbench setup -data "$d" >"$setup"
	fi
	./bin/tlbench run -case "$c" -mode "$m" -setup "$setup" -data "$d" >>"$RESULTS"
	./bin/tlbench cleanup -setup "$setup"
}

cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=(c1 c1-5k c2 c3 c4)
for c in "${cases[@]}"; do
	d="$DATA/$c"
	if [[ ! -f "$d.complete" ]]; then
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
