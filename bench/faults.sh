#!/usr/bin/env bash
# The long fault-injection run (docs/faults.md): starts the local S3 server and
# runs the suite of test/faults in its long version (more files, several seeds,
# 40 kill -9 trials), then prints the figures: trials, runs, faults injected,
# rows checked. `go test ./...` runs the short version.
#
#   bench/faults.sh                  long run, seeds from 1
#   SEED=7 bench/faults.sh           another first seed
#
# The figures go to bench/results/faults-<date>.json (gitignored).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mkdir -p bench/results
FIGURES="$PWD/bench/results/faults-$(date -u +%Y%m%dT%H%M%SZ).json"

STATE="$(mktemp -d "${TMPDIR:-/tmp}/timelake-faults-s3.XXXXXX")"
trap 'bash scripts/s3-server.sh stop "$STATE" >/dev/null || true; rm -rf "$STATE"' EXIT
bash scripts/s3-server.sh start "$STATE" >/dev/null
# shellcheck disable=SC1091
. "$STATE/env"

echo "faults: long run of test/faults (figures in $FIGURES)" >&2
TIMELAKE_TEST_S3_REQUIRED=1 \
	TIMELAKE_FAULTS_LONG=1 \
	TIMELAKE_FAULTS_SEED="${SEED:-1}" \
	TIMELAKE_FAULTS_FIGURES="$FIGURES" \
	go test -count=1 -timeout 3h ./test/faults/
cat "$FIGURES"
