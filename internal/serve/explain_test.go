package serve_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/serve"
	"github.com/timelake/timelake/internal/storage"
)

// syncBuffer is a log buffer written by the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

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
	var logs syncBuffer
	cfg := serve.Config{
		Ingest: ingest.Config{Landing: st, Lake: l, Table: tableName, LeaseTTL: 5 * time.Second},
		Sweep:  50 * time.Millisecond, LeaseRetry: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}
	r := start(t, cfg)
	waitFor(t, "the lease", func() bool { code, _ := health(r); return code == 200 })
	// The folder is removed (a disk not mounted): the sweep cannot list it.
	if err := os.RemoveAll(landingDir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a failed sweep", func() bool { return strings.Contains(logs.String(), "sweep failed") })
	line := logs.String()[strings.Index(logs.String(), "sweep failed"):]
	line, _, _ = strings.Cut(line, "\n")
	if !strings.Contains(line, "fix=\"create the folder") {
		t.Errorf("the sweep's error has no fix: %s", line)
	}
}
