package ingest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
)

// TestRemoveStaleDownloads: the download copies and the data files
// waiting for their upload of a process that ended are removed, those of a
// running one stay, and copies named without a process are removed once
// older than an hour.
func TestRemoveStaleDownloads(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot start a process:", err)
	}
	self := landing.NewHolder()
	files := map[string]bool{ // name -> should remain
		downloadPrefix(landing.Holder{PID: cmd.Process.Pid, Start: 1}) + "111": false,
		downloadPrefix(self) + "222": true,
		"timelake-ingest-333":        true, // fresh, no process
		"timelake-ingest-444":        false,
		"other-file":                 true,
		// The data files waiting for their upload to an S3 warehouse.
		fmt.Sprintf("%s%d-555", lake.UploadTempPrefix, cmd.Process.Pid): false,
		fmt.Sprintf("%s%d-666", lake.UploadTempPrefix, os.Getpid()):     true,
	}
	for name := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("rows"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "timelake-ingest-444"), old, old); err != nil {
		t.Fatal(err)
	}
	if n := removeStaleDownloads(dir, time.Now()); n != 3 {
		t.Errorf("removed %d, want 3", n)
	}
	for name, keep := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if keep != (err == nil) {
			t.Errorf("%s: kept %v, want %v", name, err == nil, keep)
		}
	}
	if got := downloadPrefix(self); got != fmt.Sprintf("timelake-ingest-%d-%d-", os.Getpid(), self.Start) {
		t.Errorf("prefix %q", got)
	}
}
