package serve_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/serve"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/wait"
)

// TestSweepErrorHasItsFix checks that a sweep that fails on a setup
// problem of the landing folder logs the fix env check gives with it.
func TestSweepErrorHasItsFix(t *testing.T) {
	dir := t.TempDir()
	landingDir := filepath.Join(dir, "landing")
	if err := os.MkdirAll(landingDir, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocalStore(landingDir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lake.Open(context.Background(), filepath.Join(dir, "lake"), lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "serve.log") // the handler serializes its writes
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logs := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	cfg := serve.Config{
		Ingest: ingest.Config{Landing: st, Lake: l, Table: tableName, LeaseTTL: 5 * time.Second},
		Sweep:  50 * time.Millisecond, LeaseRetry: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logFile, nil)),
	}
	r := start(t, cfg)
	wait.For(t, "the lease", func() bool { code, _ := health(r); return code == 200 })
	// The folder is removed (a disk not mounted): the sweep cannot list it.
	if err := os.RemoveAll(landingDir); err != nil {
		t.Fatal(err)
	}
	wait.For(t, "a failed sweep", func() bool { return strings.Contains(logs(), "sweep failed") })
	line := logs()[strings.Index(logs(), "sweep failed"):]
	line, _, _ = strings.Cut(line, "\n")
	if !strings.Contains(line, "fix=\"create the folder") {
		t.Errorf("the sweep's error has no fix: %s", line)
	}
}
