#!/usr/bin/env bash
# The S3 path in one command, on a local S3 server: the same steps as on Tigris,
# which the end of the output shows how to take.
#
#   ./scripts/s3-trial.sh                    scratch folder ./s3-trial (gitignored)
#   S3_TRIAL_DIR=/tmp/trial ./scripts/s3-trial.sh
#   S3_TRIAL_KEEP=1 ./scripts/s3-trial.sh    leave the S3 server running afterwards (a later run
#                                            uses it; scripts/s3-server.sh stop s3-trial/s3 stops it)
#
# 1. builds bin/timelake and bin/timelake-gateway;
# 2. starts a local S3 server (versitygw on 127.0.0.1, scripts/s3-server.sh, installed
#    through the Go module proxy on first use), or uses the one the TIMELAKE_TEST_S3_*
#    variables name (the test suite runs it so on its server: TestS3TrialScript in
#    cmd/timelake, under scripts/test.sh);
# 3. creates two buckets: the lake (the Iceberg tables) and the landing bucket (what
#    gateways upload);
# 4. writes the env files timelake.env (the poller's) and gateway.env (a gateway's),
#    chmod 600, in the scratch folder;
# 5. uploads the sample files of examples/landing with timelake-gateway, as four
#    gateways would;
# 6. runs one ingest and shows the table.
#
# Run it again and the uploads are reported as already loaded: the table's data does not
# change.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir="${S3_TRIAL_DIR:-s3-trial}" # a relative folder is relative to the repository
mkdir -p bin "$dir"
say() { echo "s3-trial: $*" >&2; }

say "building bin/timelake and bin/timelake-gateway"
go build -o bin/timelake ./cmd/timelake
go build -o bin/timelake-gateway ./cmd/timelake-gateway

# 2. The S3 server. Started here, it gets fixed bucket names (those of docs/tigris.md);
# a shared one (the test suite's) gets names of their own for this run.
if [[ -n "${TIMELAKE_TEST_S3_ENDPOINT:-}" ]]; then
	say "using the S3 server at $TIMELAKE_TEST_S3_ENDPOINT"
	suffix="$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
	lake="trial-lake-$suffix" landing="trial-landing-$suffix"
else
	if [[ -f "$dir/s3/pid" && -f "$dir/s3/env" ]] && kill -0 "$(cat "$dir/s3/pid")" 2>/dev/null; then
		say "using the S3 server left running in $dir/s3 (S3_TRIAL_KEEP=1)"
	else
		say "starting a local S3 server (state in $dir/s3)"
		bash scripts/s3-server.sh start "$dir/s3" >/dev/null
	fi
	if [[ "${S3_TRIAL_KEEP:-}" != 1 ]]; then
		trap 'bash scripts/s3-server.sh stop "$dir/s3"' EXIT
	fi
	# shellcheck disable=SC1091
	. "$dir/s3/env"
	lake=my-lake landing=my-lake-landing
fi

# 3. The buckets: any S3 client creates them (on Tigris, its console or the AWS CLI).
bash scripts/s3-server.sh bucket "$lake" "$landing"

# 4. The env files: timelake.env, the poller's settings for every timelake command below,
# and gateway.env, a gateway's (the landing bucket alone; on Tigris, a key of its own that
# may only put objects). They hold the secret key, so only their owner reads them (timelake
# refuses a file others can write, and warns while they can read it).
env_file="$dir/timelake.env" gateway_env="$dir/gateway.env"
(
	umask 077
	cat >"$env_file" <<EOF
AWS_ENDPOINT=$TIMELAKE_TEST_S3_ENDPOINT
AWS_REGION=${TIMELAKE_TEST_S3_REGION:-us-east-1}
AWS_ACCESS_KEY_ID=$TIMELAKE_TEST_S3_ACCESS_KEY
AWS_SECRET_ACCESS_KEY=$TIMELAKE_TEST_S3_SECRET_KEY
TIMELAKE_WAREHOUSE=s3://$lake/warehouse
TIMELAKE_TABLE=iot.readings
TIMELAKE_SERIES_KEY=device_id
LANDING_BUCKET=$landing
EOF
	grep -E '^(AWS_|LANDING_BUCKET=)' "$env_file" >"$gateway_env"
)
chmod 600 "$env_file" "$gateway_env"
say "wrote $env_file (and $(basename "$gateway_env"), its AWS_* and LANDING_BUCKET lines):"
sed 's/^\(AWS_SECRET_ACCESS_KEY=\).*/\1.../' "$env_file" >&2

# The commands run with a clean environment, so that the env file alone sets them up
# (variables of the shell, such as AWS_PROFILE, would win over it).
run() {
	say "$(basename "$1") ${*:2}"
	env -i PATH="$PATH" HOME="$HOME" "$@"
}

# 5. Uploads, one gateway at a time: each file gets the key
# <gateway>/<UTC time>-<hash>.<ext> (docs/gateways.md).
for gw in examples/landing/*/; do
	gw="$(basename "$gw")"
	run bin/timelake-gateway upload --env-file "$gateway_env" --gateway "$gw" "examples/landing/$gw"/*
done

# 6. One ingest (cron runs this line every minute), then the table.
run bin/timelake ingest --env-file "$env_file"
run bin/timelake tables show iot.readings --env-file "$env_file"

cat >&2 <<EOF

s3-trial: done. The same env file points at Tigris (docs/tigris.md) once its values are
your buckets and keys:

  AWS_ENDPOINT=https://t3.storage.dev
  AWS_REGION=auto
  AWS_ACCESS_KEY_ID=tid_...
  AWS_SECRET_ACCESS_KEY=tsec_...
  TIMELAKE_WAREHOUSE=s3://my-lake/warehouse
  LANDING_BUCKET=my-lake-landing

then: timelake env check --env-file timelake.env
EOF
if [[ "${S3_TRIAL_KEEP:-}" != 1 && -f "$dir/s3/pid" ]]; then
	say "the S3 server stops now (S3_TRIAL_KEEP=1 leaves it running)"
elif [[ -f "$dir/s3/pid" ]]; then
	say "the S3 server keeps running: bash scripts/s3-server.sh stop $dir/s3"
fi
