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

// TestServeSurvivesAPanickingFile: a panic while serve's session decodes
// or writes one file quarantines that file; the server keeps running and
// loads the files announced with it and after it.
func TestServeSurvivesAPanickingFile(t *testing.T) {
	for _, stage := range []string{"decode", "write"} {
		t.Run(stage, func(t *testing.T) {
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
			const poison = "gw/b.csv"
			cfg := serve.Config{
				Ingest: ingest.Config{Landing: store, Lake: l, Table: tableName, SettleTime: -1, OpenEndSettleTime: -1,
					FaultHook: func(s, key string) {
						if s == stage && key == poison {
							var m map[string]int
							m[key]++ // a nil map: the kind of bug a reader has
						}
					}},
				Sweep: time.Hour, Logger: slog.New(slog.DiscardHandler),
			}
			r := start(t, cfg)
			wait.For(t, "the lease", func() bool { code, _ := health(r); return code == 200 })

			if err := os.MkdirAll(filepath.Join(dir, "gw"), 0o755); err != nil {
				t.Fatal(err)
			}
			for i, k := range []string{"gw/a.csv", poison, "gw/c.csv"} {
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(k)), []byte(csv(i, 4)), 0o644); err != nil {
					t.Fatal(err)
				}
				if code := notify(t, r, "", eventBody("tigris", "any", k)); code != 200 {
					t.Fatalf("notify %s: %d", k, code)
				}
			}
			for _, k := range []string{"gw/a.csv", poison, "gw/c.csv"} {
				wait.For(t, k+" settled", func() bool { return len(r.resultsOf(k)) > 0 })
			}
			if res := r.resultsOf(poison); res[0].Status != ingest.Quarantined ||
				!strings.Contains(res[0].Reason, "crashed while") || strings.Contains(res[0].Reason, "goroutine") {
				t.Fatalf("%s: %+v", poison, res)
			}
			for _, k := range []string{"gw/a.csv", "gw/c.csv"} {
				if res := r.resultsOf(k); res[0].Status != ingest.Loaded || res[0].Rows != 4 {
					t.Fatalf("%s: %+v", k, res)
				}
			}

			// The server still runs: a later file loads.
			if code, _ := health(r); code != 200 {
				t.Fatalf("healthz %d after the panic", code)
			}
			if err := os.MkdirAll(filepath.Join(dir, "gw"), 0o755); err != nil { // emptied folders go
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "gw", "d.csv"), []byte(csv(3, 4)), 0o644); err != nil {
				t.Fatal(err)
			}
			if code := notify(t, r, "", eventBody("tigris", "any", "gw/d.csv")); code != 200 {
				t.Fatalf("notify: %d", code)
			}
			wait.For(t, "gw/d.csv loaded", func() bool {
				res := r.resultsOf("gw/d.csv")
				return len(res) > 0 && res[0].Status == ingest.Loaded
			})
			if err := r.stop(); err != nil {
				t.Fatalf("serve ended with %v", err)
			}
		})
	}
}
