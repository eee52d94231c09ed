package serve_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/serve"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/wait"
)

// TestServeWaitsForFilesBeingWritten: on a local landing folder, a file
// announced while it is not complete (modified within the settle time) is
// reported waiting once, held back until it may be complete, and then
// loaded, without a sweep and without loading it again and again
// meanwhile.
func TestServeWaitsForFilesBeingWritten(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := storage.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lake.Open(ctx, t.TempDir(), lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const settle = 3 * time.Second // longer than a load waits (ingest.MaxSettleWait)
	cfg := serve.Config{
		Ingest: ingest.Config{Landing: store, Lake: l, Table: tableName, SettleTime: settle, OpenEndSettleTime: -1},
		Sweep:  time.Hour, Logger: slog.New(slog.DiscardHandler),
	}
	r := start(t, cfg)
	wait.For(t, "the lease", func() bool { code, _ := health(r); return code == 200 })

	if err := os.MkdirAll(filepath.Join(dir, "gw"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gw", "a.csv"), []byte(csv(1, 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := notify(t, r, "", eventBody("tigris", "any", "gw/a.csv")); code != 200 {
		t.Fatalf("notify: %d", code)
	}
	wait.For(t, "gw/a.csv loaded", func() bool {
		res := r.resultsOf("gw/a.csv")
		return len(res) > 0 && res[len(res)-1].Status == ingest.Loaded
	})
	res := r.resultsOf("gw/a.csv")
	if len(res) != 2 || res[0].Status != ingest.Waiting || res[0].ReadyAt.IsZero() || res[1].Rows != 4 {
		t.Fatalf("results %+v, want waiting once, then loaded", res)
	}
}
