#!/usr/bin/env bash
# The project's test command: starts a real S3 server (versitygw on 127.0.0.1, see
# scripts/s3-server.sh), exports TIMELAKE_TEST_S3_* for it, and runs go test.
#
#   ./scripts/test.sh                                  go test -count=1 ./...
#   ./scripts/test.sh -run S3 ./internal/testutil/...  go test -count=1 -run S3 ./internal/testutil/...
#
# With no arguments it tests ./...; with arguments they are passed to go test as they
# are (so give the package patterns yourself, e.g. "-v ./...").
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

STATE="$(mktemp -d "${TMPDIR:-/tmp}/timelake-s3.XXXXXX")"
cleanup() {
	bash scripts/s3-server.sh stop "$STATE" || true
	rm -rf "$STATE"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "test.sh: starting versitygw S3 server in $STATE, then running go test (S3 tests required)" >&2
bash scripts/s3-server.sh start "$STATE" >/dev/null
# shellcheck disable=SC1091
. "$STATE/env"
export TIMELAKE_TEST_S3_REQUIRED=1

if [[ $# -gt 0 ]]; then
	set -- "$@"
else
	set -- ./...
fi
status=0
go test -count=1 "$@" || status=$?
exit "$status"
