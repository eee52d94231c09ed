package envcheck_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The release packaging stamps the version that `env check` and
// `timelake --version` print. scripts/release-check.sh is the check of
// .goreleaser.yaml; this test runs it from `go test`:
//   - TIMELAKE_TEST_RELEASE=1: the whole script (installs GoReleaser if
//     needed, `goreleaser check`, snapshot build for this host, version
//     stamped); never skipped.
//   - otherwise, when the pinned GoReleaser is already in the tools dir:
//     `goreleaser check` only (a fraction of a second).
//   - otherwise skipped.
func TestReleaseConfig(t *testing.T) {
	root := repoRoot(t)
	if os.Getenv("TIMELAKE_TEST_RELEASE") == "1" {
		cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(root, "scripts", "release-check.sh"))
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scripts/release-check.sh: %v\n%s", err, out)
		}
		return
	}
	tools := os.Getenv("TIMELAKE_TOOLS_DIR")
	if tools == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Skip("no home folder:", err)
		}
		tools = filepath.Join(home, ".cache", "timelake-tools")
	}
	gr := filepath.Join(tools, "bin", "goreleaser")
	if _, err := os.Stat(gr); err != nil {
		t.Skipf("%s not installed (scripts/release-check.sh installs it; TIMELAKE_TEST_RELEASE=1 runs it)", gr)
	}
	cmd := exec.CommandContext(t.Context(), gr, "check")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goreleaser check: %v\n%s", err, out)
	}
}

// repoRoot is the folder holding go.mod, above the test's folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test folder")
		}
		dir = parent
	}
}
