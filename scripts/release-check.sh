#!/usr/bin/env bash
# Checks the release packaging: validates .goreleaser.yaml and builds a
# snapshot with GoReleaser, without publishing anything.
#
#   scripts/release-check.sh           goreleaser check + snapshot build for this host only
#   scripts/release-check.sh --full    goreleaser check + full snapshot (both binaries, all 7 targets, archives, checksums)
#   scripts/release-check.sh --check   goreleaser check only
#
# GoReleaser is installed through the Go module proxy into
# ${TIMELAKE_TOOLS_DIR:-$HOME/.cache/timelake-tools}/bin on first use (a few
# minutes), from a temporary folder so the project's go.mod is not touched.
# Output goes to dist/ (git-ignored). Prints how long each step took.
set -euo pipefail

GORELEASER_VERSION=v2.15.1 # newer ones need a newer Go than the project's
TOOLS="${TIMELAKE_TOOLS_DIR:-$HOME/.cache/timelake-tools}"
GORELEASER="$TOOLS/bin/goreleaser"

cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { echo "release-check: $*" >&2; }
die() { log "$*"; exit 1; }

mode=single
case "${1:-}" in
"") ;;
--full) mode=full ;;
--check) mode=check ;;
*)
	echo "usage: $0 [--full | --check]" >&2
	exit 2
	;;
esac

installed() {
	[[ -x "$GORELEASER" ]] && "$GORELEASER" --version 2>/dev/null | grep -q "${GORELEASER_VERSION#v}"
}

timed() {
	local what="$1" start end
	shift
	start=$(date +%s)
	"$@"
	end=$(date +%s)
	log "$what took $((end - start))s"
}

install() {
	command -v go >/dev/null || die "go is needed to install goreleaser"
	log "installing goreleaser $GORELEASER_VERSION into $TOOLS/bin (a few minutes the first time)"
	mkdir -p "$TOOLS/bin"
	local tmp
	tmp="$(mktemp -d)"
	# Outside the repository, so the project's go.mod/go.sum stay untouched.
	(
		cd "$tmp"
		GOWORK=off GOFLAGS= GOBIN="$TOOLS/bin" go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
	) || {
		rm -rf "$tmp"
		die "go install of goreleaser failed"
	}
	rm -rf "$tmp"
	installed || die "goreleaser installed but '$GORELEASER --version' does not report $GORELEASER_VERSION"
}

installed || timed "install" install

timed "goreleaser check" "$GORELEASER" check
[[ "$mode" == check ]] && exit 0

# A snapshot build needs no tag and no token; GoReleaser still wants a git
# repository with at least one commit.
git rev-parse HEAD >/dev/null 2>&1 || die "not a git checkout with a commit: goreleaser needs one"

if [[ "$mode" == full ]]; then
	timed "goreleaser release --snapshot (all targets)" "$GORELEASER" release --snapshot --clean
	ls -l dist/*.tar.gz dist/*.zip dist/*checksums.txt
else
	timed "goreleaser build --snapshot --single-target" "$GORELEASER" build --snapshot --clean --single-target
fi

# The version must be stamped into the binary by the ldflags.
bin="$(find dist -type f \( -name timelake -o -name timelake.exe \) -path "*$(go env GOOS)_$(go env GOARCH)*" | head -n 1)"
[[ -n "$bin" ]] || die "no timelake binary for $(go env GOOS)/$(go env GOARCH) under dist/"
version="$("$bin" --version)"
log "$bin --version: $version"
case "$version" in
*"(commit none,"*) log "note: commit is 'none': GoReleaser drops the git state of a clone without a remote" ;;
*"(commit "*) ;;
*) die "the binary's version has no commit: the -X ldflags did not apply" ;;
esac
