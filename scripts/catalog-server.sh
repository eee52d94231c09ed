#!/usr/bin/env bash
# Real Iceberg REST catalog for tests: SeaweedFS `weed mini` on 127.0.0.1, which
# runs an S3 server and an Iceberg REST catalog in one process (docs/catalogs.md,
# "The test catalog").
#
#   scripts/catalog-server.sh install             build weed into $TOOLS/bin (cached)
#   scripts/catalog-server.sh start <state-dir>   start on free ports; writes <state-dir>/env
#   scripts/catalog-server.sh stop <state-dir>    stop the server recorded in <state-dir>/pid
#
# TOOLS defaults to ${TIMELAKE_TOOLS_DIR:-$HOME/.cache/timelake-tools}. The first
# install builds weed from the Go module proxy's source: 15 to 25 minutes and about
# 2.6 GB of memory on two cores; the binary is then kept in $TOOLS/bin.
set -euo pipefail

# SeaweedFS is served by the module proxy as a pseudo-version only. Its go.mod
# pins iceberg-go and arrow-go at the versions timelake uses.
WEED_MODULE=github.com/seaweedfs/seaweedfs
WEED_VERSION=v0.0.0-20261109003541-7506e5f91cd6
TOOLS="${TIMELAKE_TOOLS_DIR:-$HOME/.cache/timelake-tools}"
WEED="$TOOLS/bin/weed-$WEED_VERSION"

# Fixed credentials: the server only listens on loopback and only for tests.
# They are an S3 identity of the server; its REST catalog takes them as OAuth2
# client credentials and as SigV4 keys.
ACCESS_KEY=timelake-test
SECRET_KEY=timelake-test-secret
REGION=us-east-1
# The table bucket every test table lives in (tests take a namespace each).
TABLE_BUCKET=timelake-tests

log() { echo "catalog-server: $*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=scripts/server-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/server-common.sh"

usage() {
	echo "usage: $0 install | start <state-dir> | stop <state-dir>" >&2
	exit 2
}

installed() {
	[[ -x "$WEED" ]] && "$WEED" version >/dev/null 2>&1
}

cmd_install() {
	if installed; then
		return 0
	fi
	command -v go >/dev/null || die "go is needed to build SeaweedFS"
	log "building SeaweedFS weed $WEED_VERSION into $TOOLS/bin (15-25 minutes the first time; cached after)"
	mkdir -p "$TOOLS/bin"
	local tmp dir start
	tmp="$(mktemp -d)"
	start=$SECONDS
	# `go install module@version` refuses a module with replace directives:
	# download the module and build inside its folder, outside this repository
	# so the project's go.mod and go.sum are not touched.
	dir="$(cd "$tmp" && GOWORK=off GOFLAGS= go mod download -json "$WEED_MODULE@$WEED_VERSION" |
		sed -n 's/.*"Dir": "\(.*\)".*/\1/p')" || {
		rm -rf "$tmp"
		die "go mod download of $WEED_MODULE@$WEED_VERSION failed"
	}
	[[ -n "$dir" && -d "$dir" ]] || {
		rm -rf "$tmp"
		die "go mod download of $WEED_MODULE@$WEED_VERSION gave no folder"
	}
	(cd "$dir" && GOWORK=off GOFLAGS= go build -trimpath -o "$WEED.tmp" ./weed) || {
		rm -rf "$tmp" "$WEED.tmp"
		die "go build of weed failed"
	}
	mv "$WEED.tmp" "$WEED"
	rm -rf "$tmp"
	installed || die "weed built but '$WEED version' fails"
	log "built in $((SECONDS - start)) s"
}

# free_ports N: N distinct free ports in 20000-39999.
free_ports() {
	local want="$1" start=$((20000 + RANDOM % 20000)) i p got=()
	for ((i = 0; i < 400 && ${#got[@]} < want; i++)); do
		p=$((20000 + (start - 20000 + i) % 20000))
		if ! port_in_use "$p"; then
			got+=("$p")
		fi
	done
	((${#got[@]} == want)) || die "not $want free TCP ports in 20000-39999"
	echo "${got[@]}"
}

http_code() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null || true
}

# try_start DIR: starts weed mini on free ports; 0 when ready, 1 if it exited, 2 on timeout.
try_start() {
	local dir="$1" pid i ports
	read -r -a ports <<<"$(free_ports 12)"
	S3_PORT=${ports[0]} ICEBERG_PORT=${ports[1]} MASTER_PORT=${ports[2]} MASTER_GRPC=${ports[3]}
	# Every port is given: the gRPC ports would otherwise be the HTTP ports + 10000.
	# Telemetry is on by default: off. Loopback only; no WebDAV, admin UI or Lance.
	# Every bucket is a collection of volumes of its own, and tests make a table
	# bucket each: small volumes, one per collection, many of them (sparse files).
	WEED_MASTER_VOLUME_GROWTH_COPY_1=1 \
	"$WEED" mini -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
		-master.telemetry=false -webdav=false -admin.ui=false -s3.port.lance=0 \
		-master.volumeSizeLimitMB=64 -volume.max=2000 \
		-s3.config="$dir/identities.json" \
		-s3.port="$S3_PORT" -s3.port.iceberg="$ICEBERG_PORT" \
		-master.port="$MASTER_PORT" -master.port.grpc="$MASTER_GRPC" \
		-filer.port="${ports[4]}" -filer.port.grpc="${ports[5]}" \
		-volume.port="${ports[6]}" -volume.port.grpc="${ports[7]}" \
		-s3.port.grpc="${ports[8]}" \
		-admin.port="${ports[9]}" -admin.port.grpc="${ports[10]}" -admin.port.legacy=0 \
		-debug.port="${ports[11]}" -s3.debug.port="${ports[11]}" \
		</dev/null >>"$dir/server.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/pid"
	# About 4 s on an idle machine; give up after ~60 s.
	for ((i = 0; i < 300; i++)); do
		if ! alive "$pid"; then
			wait "$pid" 2>/dev/null || true
			return 1
		fi
		if [[ "$(http_code "http://127.0.0.1:$ICEBERG_PORT/v1/config")" == 200 ]]; then
			return 0
		fi
		sleep 0.2
	done
	return 2
}

# create_table_bucket: S3-Tables-style table bucket, through weed shell on the
# master's gRPC port (host:port.grpcport).
create_table_bucket() {
	local dir="$1" i out token
	for ((i = 0; i < 20; i++)); do
		out="$(printf 's3tables.bucket -create -name %s -account 000000000000\nexit\n' "$TABLE_BUCKET" |
			"$WEED" shell -master="127.0.0.1:$MASTER_PORT.$MASTER_GRPC" 2>&1 || true)"
		echo "$out" >>"$dir/server.log"
		token="$(curl -s --max-time 2 -X POST "http://127.0.0.1:$ICEBERG_PORT/v1/oauth/tokens" \
			-d "grant_type=client_credentials&client_id=$ACCESS_KEY&client_secret=$SECRET_KEY&scope=catalog" 2>/dev/null |
			sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p' || true)"
		if [[ -n "$token" && "$(curl -s --max-time 2 -H "Authorization: Bearer $token" \
			"http://127.0.0.1:$ICEBERG_PORT/v1/$TABLE_BUCKET/namespaces" 2>/dev/null || true)" == *'"namespaces"'* ]]; then
			return 0
		fi
		sleep 0.5
	done
	log "table bucket $TABLE_BUCKET not created; weed shell said:"
	echo "$out" >&2
	return 1
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
	cat >"$dir/identities.json" <<EOF
{"identities":[{"name":"timelake-test","credentials":[{"accessKey":"$ACCESS_KEY","secretKey":"$SECRET_KEY"}],
  "actions":["Admin","Read","Write","List","Tagging"]}]}
EOF
	: >"$dir/server.log"
	local attempt rc start=$SECONDS
	# Retry on new ports if another process grabbed one between probe and bind.
	for attempt in 1 2 3; do
		rc=0
		try_start "$dir" || rc=$?
		case "$rc" in
		0) break ;;
		1) log "weed exited during start (attempt $attempt)" ;;
		*)
			log "weed not ready after 60 s"
			cmd_stop "$dir" || true
			tail -50 "$dir/server.log" >&2
			exit 1
			;;
		esac
	done
	if [[ "$rc" != 0 ]]; then
		rm -f "$dir/pid"
		log "server log:"
		tail -50 "$dir/server.log" >&2
		exit 1
	fi
	if ! create_table_bucket "$dir"; then
		cmd_stop "$dir" || true
		exit 1
	fi
	cat >"$dir/env" <<EOF
export TIMELAKE_TEST_CATALOG_URI=http://127.0.0.1:$ICEBERG_PORT
export TIMELAKE_TEST_CATALOG_WAREHOUSE=s3://$TABLE_BUCKET
export TIMELAKE_TEST_CATALOG_S3_ENDPOINT=http://127.0.0.1:$S3_PORT
export TIMELAKE_TEST_CATALOG_ACCESS_KEY=$ACCESS_KEY
export TIMELAKE_TEST_CATALOG_SECRET_KEY=$SECRET_KEY
export TIMELAKE_TEST_CATALOG_REGION=$REGION
EOF
	log "ready in $((SECONDS - start)) s (REST catalog on port $ICEBERG_PORT, S3 on port $S3_PORT)"
	cat "$dir/env"
}

cmd_stop() {
	local dir="${1:-}"
	[[ -n "$dir" ]] || usage
	stop_server "$dir" "weed-$WEED_VERSION mini" "weed" 100
}

case "${1:-}" in
install) cmd_install ;;
start) cmd_start "${2:-}" ;;
stop) cmd_stop "${2:-}" ;;
*) usage ;;
esac
