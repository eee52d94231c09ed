#!/usr/bin/env bash
# Quick start: build timelake and run `timelake ingest` on the embedded default:
# the sample gateway files in examples/landing are copied to a scratch landing
# folder (the samples themselves are never consumed) and loaded into an Iceberg
# table in a local warehouse folder. Nothing else needs to be installed.
#
#   ./scripts/quickstart.sh            scratch folder ./quickstart (gitignored)
#   QUICKSTART_DIR=/tmp/tl ./scripts/quickstart.sh
#
# Running it again re-sends the same files: they are reported "already loaded"
# and deleted, and the table does not change.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir="${QUICKSTART_DIR:-quickstart}"
mkdir -p bin "$dir/landing"
echo "quickstart: building bin/timelake" >&2
go build -o bin/timelake ./cmd/timelake
cp -R examples/landing/. "$dir/landing/"
# The copies are complete: give them a modification time in the past, so that
# ingest loads them at once instead of waiting the settle time of a local
# landing folder (--settle-time, 30s: a file modified since may still be being
# written). touch -t is POSIX.
find "$dir/landing" -type f ! -path '*/_*' -exec touch -t 202601050000 {} +
echo "quickstart: timelake ingest --landing $dir/landing --warehouse $dir/lake --table iot.readings --series-key device_id" >&2
./bin/timelake ingest --landing "$dir/landing" --warehouse "$dir/lake" --table iot.readings --series-key device_id
