#!/usr/bin/env bash
# Real S3-compatible server for tests: versitygw (posix backend) on 127.0.0.1.
# docs/architecture.md ("Tests") says what the tests use it for.
#
#   scripts/s3-server.sh install             install versitygw into $TOOLS/bin (cached)
#   scripts/s3-server.sh start <state-dir>   start on a free port; writes <state-dir>/env
#   scripts/s3-server.sh stop <state-dir>    stop the server recorded in <state-dir>/pid
#   scripts/s3-server.sh bucket <name>...    create buckets (an existing one of ours is fine) on the
#                                            server the TIMELAKE_TEST_S3_* variables name
#                                            (`. <state-dir>/env` first); needs curl 7.75+ (SigV4)
#
# TOOLS defaults to ${TIMELAKE_TOOLS_DIR:-$HOME/.cache/timelake-tools}.
set -euo pipefail

VERSITYGW_VERSION=v1.8.0
TOOLS="${TIMELAKE_TOOLS_DIR:-$HOME/.cache/timelake-tools}"
VERSITYGW="$TOOLS/bin/versitygw"

# Fixed credentials: the server only listens on loopback and only for tests.
ACCESS_KEY=timelake-test
SECRET_KEY=timelake-test-secret
REGION=us-east-1

log() { echo "s3-server: $*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=scripts/server-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/server-common.sh"

usage() {
	echo "usage: $0 install | start <state-dir> | stop <state-dir> | bucket <name>..." >&2
	exit 2
}

installed() {
	[[ -x "$VERSITYGW" ]] && "$VERSITYGW" --version >/dev/null 2>&1
}

cmd_install() {
	if installed; then
		return 0
	fi
	command -v go >/dev/null || die "go is needed to install versitygw"
	log "installing versitygw $VERSITYGW_VERSION into $TOOLS/bin (takes a few minutes the first time)"
	mkdir -p "$TOOLS/bin"
	local tmp
	tmp="$(mktemp -d)"
	# Run outside the repository so the project's go.mod/go.sum are not touched.
	(
		cd "$tmp"
		GOWORK=off GOBIN="$TOOLS/bin" \
			go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
	) || {
		rm -rf "$tmp"
		die "go install of versitygw failed"
	}
	rm -rf "$tmp"
	installed || die "versitygw installed but '$VERSITYGW --version' fails"
}

free_port() {
	local start=$((20000 + RANDOM % 20000)) i p
	for ((i = 0; i < 200; i++)); do
		p=$((20000 + (start - 20000 + i) % 20000))
		if ! port_in_use "$p"; then
			echo "$p"
			return 0
		fi
	done
	die "no free TCP port found in 20000-39999"
}

# try_start DIR PORT: starts the server; 0 when ready, 1 if it exited, 2 on timeout.
try_start() {
	local dir="$1" port="$2" pid i keep=(--keep-alive)
	# Object stores keep a client's connections open between requests;
	# versitygw closes each one unless told to keep them.
	[[ -n ${S3_SERVER_CLOSE_CONNECTIONS:-} ]] && keep=()
	ROOT_ACCESS_KEY="$ACCESS_KEY" ROOT_SECRET_KEY="$SECRET_KEY" \
		"$VERSITYGW" --port "127.0.0.1:$port" --region "$REGION" --health /healthz --quiet "${keep[@]}" ${S3_SERVER_PPROF:+--pprof "$S3_SERVER_PPROF"} \
		posix "$dir/data" </dev/null >>"$dir/server.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/pid"
	# ~0.1 s usually; give up after ~10 s.
	for ((i = 0; i < 100; i++)); do
		if ! alive "$pid"; then
			wait "$pid" 2>/dev/null || true
			return 1
		fi
		if [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$port/healthz" 2>/dev/null || true)" == 200 ]]; then
			return 0
		fi
		sleep 0.1
	done
	return 2
}

cmd_start() {
	local dir="${1:-}"
	[[ -n "$dir" ]] || usage
	cmd_install
	mkdir -p "$dir/data"
	dir="$(cd "$dir" && pwd)"
	if [[ -f "$dir/pid" ]] && alive "$(cat "$dir/pid")"; then
		die "a server is already running for $dir (pid $(cat "$dir/pid")); stop it first"
	fi
	: >"$dir/server.log"
	local port attempt rc
	# Retry on a new port if another process grabbed ours between probe and bind.
	for attempt in 1 2 3; do
		port="$(free_port)"
		rc=0
		try_start "$dir" "$port" || rc=$?
		case "$rc" in
		0) break ;;
		1) log "versitygw exited during start (attempt $attempt, port $port)" ;;
		*)
			log "versitygw not ready after 10 s on port $port"
			cmd_stop "$dir" || true
			cat "$dir/server.log" >&2
			exit 1
			;;
		esac
	done
	if [[ "$rc" != 0 ]]; then
		rm -f "$dir/pid"
		log "server log:"
		cat "$dir/server.log" >&2
		exit 1
	fi
	cat >"$dir/env" <<EOF
export TIMELAKE_TEST_S3_ENDPOINT=http://127.0.0.1:$port
export TIMELAKE_TEST_S3_ACCESS_KEY=$ACCESS_KEY
export TIMELAKE_TEST_S3_SECRET_KEY=$SECRET_KEY
export TIMELAKE_TEST_S3_REGION=$REGION
EOF
	cat "$dir/env"
}

cmd_stop() {
	local dir="${1:-}"
	[[ -n "$dir" ]] || usage
	# Guard against PID reuse: only signal a versitygw process.
	stop_server "$dir" versitygw versitygw 50
}

# The SHA-256 of an empty body: S3 wants it in x-amz-content-sha256, which curl
# does not add by itself.
EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855

cmd_bucket() {
	[[ $# -gt 0 ]] || usage
	local endpoint="${TIMELAKE_TEST_S3_ENDPOINT:-}" name code out
	[[ -n "$endpoint" ]] || die "TIMELAKE_TEST_S3_ENDPOINT is unset: run '. <state-dir>/env' after start"
	out="$(mktemp)"
	for name in "$@"; do
		# A signed PUT /<bucket> (CreateBucket, path-style), as any S3 client sends it.
		code="$(curl -sS -o "$out" -w '%{http_code}' -X PUT \
			-H "x-amz-content-sha256: $EMPTY_SHA256" \
			--aws-sigv4 "aws:amz:${TIMELAKE_TEST_S3_REGION:-$REGION}:s3" \
			--user "${TIMELAKE_TEST_S3_ACCESS_KEY:-$ACCESS_KEY}:${TIMELAKE_TEST_S3_SECRET_KEY:-$SECRET_KEY}" \
			"$endpoint/$name")" || {
			rm -f "$out"
			die "create bucket $name at $endpoint: curl failed"
		}
		if [[ "$code" == 200 ]] || grep -q BucketAlreadyOwnedByYou "$out"; then
			log "bucket $name ready"
			continue
		fi
		cat "$out" >&2
		rm -f "$out"
		die "create bucket $name at $endpoint: HTTP $code"
	done
	rm -f "$out"
}

case "${1:-}" in
install) cmd_install ;;
start) cmd_start "${2:-}" ;;
stop) cmd_stop "${2:-}" ;;
bucket)
	shift
	cmd_bucket "$@"
	;;
*) usage ;;
esac
