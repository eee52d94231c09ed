// Package build holds the version stamped into the binary at release time
// (-ldflags "-X github.com/timelake/timelake/internal/build.Version=...").
package build

import "runtime/debug"

// Version, Commit and Date are set by the release build; Version falls back
// to the module version of a `go install` build.
var (
	Version = ""
	Commit  = ""
	Date    = ""
)

// String renders "v1.2.3 (commit abc, built 2026-01-05)" or "dev".
func String() string {
	v := Version
	if v == "" {
		v = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	if Commit != "" {
		v += " (commit " + Commit
		if Date != "" {
			v += ", built " + Date
		}
		v += ")"
	}
	return v
}
