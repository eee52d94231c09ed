#!/usr/bin/env bash
# The benchmark: starts the local S3 server, generates reproducible gateway
# data (fixed seeds; cached between runs), runs every case and mode several
# times, one process per measured run, and prints a table of medians with
# the ratios to the baselines measured in the same run (docs/performance.md).
#
#   bench/run.sh                 all cases: c1 c1-5k c2 c2-json c2-json-gz c3 c4 c5 c6 p1 p2 routes latency-1 latency-20 latency-200
#   bench/run.sh c2 c2-json c2-json-gz
#                                c2's rows as CSV, as JSON lines and as gzipped JSON lines; DuckDB's
#                                modes read them with read_ndjson; the report puts each JSON
#                                mode's rows/s beside the CSV case's
#   MODES="ingest dataputs duckdb-peer" bench/run.sh c4
#                                mode dataputs (c1 to c4) is the floor of a case's output: the data
#                                files of an ingest of the case (not measured) stored again as ingest
#                                stores them, 32 at once; the report says how many times DuckDB's
#                                time that floor allows (docs/performance.md)
#   bench/run.sh routes          a routed run of 3 tables x 300 small files (mode routed: one
#                                `ingest --route` run) against three single-table runs one after
#                                the other (mode single: `ingest --table --prefix`); the column
#                                "vs single" is files/s of routed over single (docs/performance.md)
#   bench/run.sh latency-20      serve's notification-to-commit latency at 20 files/s, next to cron's
#   bench/run.sh c1 c3           some cases
#   REPS=5 bench/run.sh          more runs per case and mode (default 3)
#   MODES="ingest duckdb" bench/run.sh c3
#                                only these modes (of those the case has)
#   TLBENCH_PROFILE=DIR bench/run.sh c3
#                                also write pprof profiles of every measured
#                                timelake run to DIR/<case>-<mode>-<run>/:
#                                cpu.pprof (the whole run) and allocs.pprof
#                                (every allocation of the run); read them with
#                                `go tool pprof -top bin/tlbench DIR/.../cpu.pprof`
#   BEFORE=/tmp/tlbench-old bench/run.sh c3
#                                also run the ingest mode with another tlbench
#                                binary (built from an earlier commit), reported
#                                as mode "before": a before/after comparison
#                                under the same load
#   bench/run.sh fleet           the fleet bench: a simulated day of gateways
#   bench/run.sh backlog         maintenance of a 1,000-snapshot backlog with every request to
#                                the warehouse held DELAYS (default "10ms 30ms") by the fault
#                                proxy, ROUNDS rounds each (docs/maintenance.md, "On real object
#                                storage")
#
# The runs of a case are interleaved (run 1 of every mode, then run 2, ...),
# so that a change in the machine's load hits every mode alike.
# The sequential baseline of c1 commits 1,000 times and runs once (REPS_SLOW).
# Results go to bench/results/<date>.jsonl (gitignored); the table to stdout.
#
# The fleet bench (docs/performance.md, "Fleet: a day of 20 gateways") runs
# one ingest per simulated minute, each its own process, on each store:
#   GATEWAYS=20         gateways, one ~100-row CSV file each per minute
#   MINUTES=1440        simulated minutes (one day)
#   STORES="local s3"   the local folder, the S3 server, or both
#   DELAY=20ms          hold every request to the S3 server this long (a fault proxy in front
#                       of it, for every run): object storage's latency; the store is then
#                       named s3+20ms in the results, next to the local folder's runs
#   DUCKDB_EVERY=180    DuckDB query sample every N simulated minutes (and at the end)
#   STATE_EVERY=10      the table's state every N simulated minutes (and at the end)
#   EVERY=60            rows of the printed table every N simulated minutes
#   SEED_DAY=1          load the day before minute 0 first (24 runs, not measured),
#                       so that it is a cold day from an hour in; 0: none
#   FLEET_SET=K=V,...   table properties set after the first run (experiments;
#                       the targets are about the defaults)
#   KEEP=1              keep the local store's landing and warehouse folders (path on stderr)
#   TLBENCH_PROFILE=DIR CPU and heap profiles of every run (cpu-<store>-<minute>.pprof, allocs-...)
# GATEWAYS=4 MINUTES=120 bench/run.sh fleet takes a few minutes.
# STORES="local s3" DELAY=20ms bench/run.sh fleet: the day on the local folder next to the S3
# server at 20 ms a request.
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
	# tlbench reports the server's CPU seconds of each timed part.
	TLBENCH_S3_SERVER_PID="$(cat "$STATE/pid")"
	export TLBENCH_S3_SERVER_PID
}

if [[ ${1:-} == backlog ]]; then
	start_s3
	for delay in ${DELAYS:-10ms 30ms}; do
		echo "bench: backlog at $delay a request" >&2
		./bin/tlbench backlog -files "${FILES:-1000}" -delay "$delay" -rounds "${ROUNDS:-8}"
	done
	exit 0
fi

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
		delay=()
		on=""
		if [[ $store == s3 && -n ${DELAY:-} ]]; then
			delay=(-delay "$DELAY")
			on=", $DELAY a request"
		fi
		echo "bench: fleet on the $store store$on, ${GATEWAYS:-20} gateways, ${MINUTES:-1440} simulated minutes" >&2
		./bin/tlbench fleet -store "$store" "${delay[@]}" -gateways "${GATEWAYS:-20}" -minutes "${MINUTES:-1440}" \
			-duckdb ./bin/tlbench-duckdb -duckdb-every "${DUCKDB_EVERY:-180}" -state-every "${STATE_EVERY:-10}" \
			-seed-day="${SEED_DAY:-1}" -set "${FLEET_SET:-}" -work "$WORK" -out "$RESULTS" "${keep[@]}"
	done
	./bin/tlbench fleet-report -every "${EVERY:-60}" "$RESULTS"
	echo "bench: results in $RESULTS" >&2
	exit 0
fi
start_s3

modes_of() {
	case "$1" in
	c1) echo "ingest pollers4 sequential rawcopy dataputs duckdb duckdb-peer upload sdkupload" ;;
	c1-5k) echo "ingest" ;;
	c2) echo "ingest ingest-wide sequential rawcopy dataputs duckdb duckdb-peer" ;;
	c5 | c6) echo "ingest duckdb duckdb-peer" ;; # one file: the sequential loop is ingest
	c2-json*) echo "ingest duckdb duckdb-peer" ;;
	p1 | p2) echo "ingest" ;;                    # a poison file beside a good one: peak RSS
	latency-*) echo "serve cron" ;;
	routes) echo "routed single" ;;
	*) echo "ingest sequential rawcopy dataputs duckdb duckdb-peer" ;;
	esac
}

one() { # case mode data run
	local c=$1 m=$2 d=$3 i=$4 setup="$STATE/setup.json" prof=""
	if [[ $m == duckdb ]]; then
		./bin/tlbench-duckdb -case "$c" -data "$d" >>"$RESULTS"
		return
	fi
	if [[ $m == duckdb-peer ]]; then
		./bin/tlbench-duckdb -peer -case "$c" -data "$d" >>"$RESULTS"
		return
	fi
	if [[ $m == upload || $m == sdkupload || $c == latency-* ]]; then
		./bin/tlbench setup >"$setup" # empty buckets: the files come from disk or are sent during the run
	else
		./bin/tlbench setup -data "$d" >"$setup"
	fi
	if [[ -n ${TLBENCH_PROFILE:-} ]]; then
		prof="$TLBENCH_PROFILE/$c-$m-$i"
		mkdir -p "$prof"
	fi
	if [[ $m == before ]]; then
		TLBENCH_PROFILE="$prof" "$BEFORE" run -case "$c" -mode ingest -setup "$setup" -data "$d" |
			sed 's/"mode":"ingest"/"mode":"before"/' >>"$RESULTS"
	else
		TLBENCH_PROFILE="$prof" ./bin/tlbench run -case "$c" -mode "$m" -setup "$setup" -data "$d" >>"$RESULTS"
	fi
	./bin/tlbench cleanup -setup "$setup"
}

cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=(c1 c1-5k c2 c2-json c2-json-gz c3 c4 c5 c6 p1 p2 routes latency-1 latency-20 latency-200)
for c in "${cases[@]}"; do
	d="$DATA/$c"
	if [[ $c != latency-* && ! -f "$d.complete" ]]; then
		echo "bench: generating $c in $d" >&2
		rm -rf "$d"
		./bin/tlbench gen -case "$c" -out "$d"
		touch "$d.complete"
	fi
	modes=()
	for m in $(modes_of "$c"); do
		if [[ -z ${MODES:-} || " $MODES " == *" $m "* ]]; then
			modes+=("$m")
		fi
		if [[ $m == ingest && -n ${BEFORE:-} ]]; then
			modes+=(before)
		fi
	done
	for ((i = 1; i <= REPS; i++)); do
		for m in "${modes[@]}"; do
			# The sequential baseline of c1 runs only REPS_SLOW times.
			[[ $c == c1 && $m == sequential && $i -gt $REPS_SLOW ]] && continue
			echo "bench: $c $m run $i/$REPS" >&2
			one "$c" "$m" "$d" "$i"
		done
	done
done
./bin/tlbench report "$RESULTS"
echo "bench: results in $RESULTS" >&2
