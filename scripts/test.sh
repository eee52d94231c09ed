#!/usr/bin/env bash
# The project's test command: starts a real S3 server (versitygw on 127.0.0.1, see
# scripts/s3-server.sh) and a real Iceberg REST catalog (SeaweedFS weed mini on
# 127.0.0.1, see scripts/catalog-server.sh), exports TIMELAKE_TEST_S3_* and
# TIMELAKE_TEST_CATALOG_* for them, and runs go test. The first run builds SeaweedFS
# (15-25 minutes); later runs take the cached binary.
#
#   ./scripts/test.sh                                  go test -count=1 ./..., then the interop tests
#   ./scripts/test.sh -run S3 ./internal/testutil/...  go test -count=1 -run S3 ./internal/testutil/...
#   ./scripts/test.sh interop                          only the interop tests
#   INTEROP_RUN=TestX ./scripts/test.sh interop        only the interop tests matching TestX
#
# go test ./... includes TestS3TrialScript (cmd/timelake), which runs scripts/s3-trial.sh
# on this S3 server and checks the rows it loads.
#
# With no arguments it tests ./... and then runs the interop tests (docs/interop.md):
# `npm ci` in test/interop/icebird (skipped while node_modules matches package-lock.json)
# and `go test ./...` in the separate module test/interop (icebird and DuckDB read our
# tables, also through the REST catalog), with both servers still up. With arguments they are passed to go test as
# they are (so give the package patterns yourself, e.g. "-v ./..."), and the interop
# tests are not run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

STATE="$(mktemp -d "${TMPDIR:-/tmp}/timelake-s3.XXXXXX")"
CATALOG_STATE="$(mktemp -d "${TMPDIR:-/tmp}/timelake-catalog.XXXXXX")"
cleanup() {
	bash scripts/s3-server.sh stop "$STATE" || true
	bash scripts/catalog-server.sh stop "$CATALOG_STATE" || true
	rm -rf "$STATE" "$CATALOG_STATE"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "test.sh: starting versitygw S3 server in $STATE" >&2
bash scripts/s3-server.sh start "$STATE" >/dev/null
# shellcheck disable=SC1091
. "$STATE/env"
export TIMELAKE_TEST_S3_REQUIRED=1
start=$SECONDS
echo "test.sh: starting the SeaweedFS REST catalog in $CATALOG_STATE" >&2
bash scripts/catalog-server.sh start "$CATALOG_STATE" >/dev/null
echo "test.sh: REST catalog ready after $((SECONDS - start)) s; running go test (S3 and catalog tests required)" >&2
# shellcheck disable=SC1091
. "$CATALOG_STATE/env"
export TIMELAKE_TEST_CATALOG_REQUIRED=1

# interop_tests runs test/interop (needs Node.js >= 20 with npm, and a C compiler for
# DuckDB's cgo bindings). node_modules stays between runs (it is gitignored) and is
# reinstalled only when package-lock.json changes.
interop_tests() {
	local dir=test/interop/icebird stamp sum
	if ! command -v npm >/dev/null; then
		echo "test.sh: npm not found: the interop tests need Node.js >= 20 and npm (docs/interop.md)" >&2
		return 1
	fi
	stamp="$dir/node_modules/.timelake-package-lock.sha256"
	sum="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
	if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$sum" ]]; then
		echo "test.sh: npm ci in $dir" >&2
		(cd "$dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error) || return 1
		echo "$sum" >"$stamp"
	fi
	echo "test.sh: interop tests in test/interop (icebird and DuckDB read our tables)" >&2
	(cd test/interop && TIMELAKE_TEST_INTEROP_REQUIRED=1 go test -count=1 ${INTEROP_RUN:+-run "$INTEROP_RUN"} ./...)
}

status=0
if [[ $# -eq 1 && "$1" == interop ]]; then
	interop_tests || status=$?
	exit "$status"
fi
if [[ $# -gt 0 ]]; then
	go test -count=1 "$@" || status=$?
	exit "$status"
fi
go test -count=1 ./... || status=$?
interop_tests || status=$?
exit "$status"
