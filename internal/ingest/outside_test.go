package ingest_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/logbuf"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// TestLoadHistoryEntriesOutsideTheTable: a timelake.load-history entry of
// the table's metadata that leads out of the table ("../" in it) or is not
// a file name is never read, cached or deleted: ingest warns, loads the
// next files as usual, and the file that the entry points at (through the
// table's folder, and through the cache folder) is untouched; maintenance
// drops the entries. On local folders and on the S3 server.
func TestLoadHistoryEntriesOutsideTheTable(t *testing.T) {
	const entry, victim = "../../../victim.parquet", "not a load history segment\n"
	bad := []string{entry, "gw/../../x.parquet", "/etc/passwd"}
	for name, open := range map[string]func(t *testing.T, base string, log *slog.Logger) (storage.Store, *lake.Lake, func() (string, error)){
		"local": func(t *testing.T, base string, log *slog.Logger) (storage.Store, *lake.Lake, func() (string, error)) {
			st, err := storage.NewLocalStore(filepath.Join(base, "landing"))
			if err != nil {
				t.Fatal(err)
			}
			// base/lake/iot/readings/metadata/../../../victim.parquet
			// is base/lake/victim.parquet.
			l, err := lake.Open(context.Background(), filepath.Join(base, "lake"), lake.Options{CacheDir: filepath.Join(base, "cache"), Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(base, "lake", "victim.parquet")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(victim), 0o644); err != nil {
				t.Fatal(err)
			}
			return st, l, func() (string, error) { b, err := os.ReadFile(p); return string(b), err }
		},
		"s3": func(t *testing.T, base string, log *slog.Logger) (storage.Store, *lake.Lake, func() (string, error)) {
			srv := s3test.FromEnv(t)
			client := srv.Client(t)
			lakeBucket := srv.NewBucket(t)
			l, err := lake.Open(context.Background(), "s3://"+lakeBucket+"/warehouse", lake.Options{S3: client, CacheDir: filepath.Join(base, "cache"), Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			raw := storage.NewS3Store(client, lakeBucket, "", storage.S3StoreOptions{})
			if _, err := raw.Put(context.Background(), "warehouse/victim.parquet", strings.NewReader(victim), storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			return storage.NewS3Store(client, srv.NewBucket(t), "", storage.S3StoreOptions{}), l, func() (string, error) {
				b, _, err := storage.ReadAll(context.Background(), raw, "warehouse/victim.parquet")
				return string(b), err
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			base := t.TempDir()
			// base/cache/load-history/<table>/../../../victim.parquet is
			// base/victim.parquet: the cache folder's way out.
			if err := os.WriteFile(filepath.Join(base, "victim.parquet"), []byte(victim), 0o644); err != nil {
				t.Fatal(err)
			}
			var logs logbuf.Buffer
			landingStore, l, readVictim := open(t, base, slog.New(slog.NewTextHandler(&logs, nil)))
			e := env{landing: landingStore, lake: l}
			e.put(t, "gw/a.csv", csvFile(readings(1, 0, 5), false, false))
			if _, err := ingest.Run(ctx, e.config()); err != nil {
				t.Fatal(err)
			}
			tbl, err := l.LoadTable(ctx, tableName)
			if err != nil {
				t.Fatal(err)
			}
			if err := tbl.SetProperties(ctx, map[string]string{lake.PropLoadHistory: strings.Join(bad, ",")}, nil); err != nil {
				t.Fatal(err)
			}

			e.put(t, "gw/b.csv", csvFile(readings(1, 1, 5), false, false))
			rep, err := ingest.Run(ctx, e.config())
			if err != nil || rep.Loaded != 1 {
				t.Fatalf("ingest with entries outside the table: %+v, %v; want gw/b.csv loaded", rep, err)
			}
			for _, b := range bad {
				if !strings.Contains(logs.String(), "entry="+b) && !strings.Contains(logs.String(), `entry="`+b) {
					t.Errorf("no warning names %q:\n%s", b, logs.String())
				}
			}
			for what, read := range map[string]func() (string, error){
				"through the table's folder": readVictim,
				"through the cache folder": func() (string, error) {
					b, err := os.ReadFile(filepath.Join(base, "victim.parquet"))
					return string(b), err
				},
			} {
				if got, err := read(); err != nil || got != victim {
					t.Errorf("the file %s: %q, %v; want it untouched", what, got, err)
				}
			}

			if err := tbl.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			mr, err := tbl.Maintain(ctx, lake.MaintainOptions{})
			if err != nil || strings.Join(mr.DroppedSegments, ",") != strings.Join(bad, ",") {
				t.Fatalf("maintenance: dropped %q, %v; want %q", mr.DroppedSegments, err, bad)
			}
			if got := tbl.Properties()[lake.PropLoadHistory]; got != "" {
				t.Fatalf("timelake.load-history after maintenance: %q", got)
			}
		})
	}
}

// TestLoadHistoryEntryThatIsALink: a timelake.load-history entry naming a
// file of the table's metadata folder that is a symbolic link (to a file
// outside the table) is never read or deleted: ingest warns and loads on,
// run after run, and maintenance (inline and tables maintain's) drops the
// entry; the link and the file it points at stay as they are. A local
// warehouse only: S3 has no links.
func TestLoadHistoryEntryThatIsALink(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	victim := filepath.Join(base, "victim.parquet")
	if err := os.WriteFile(victim, []byte("not a load history segment\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs logbuf.Buffer
	l, err := lake.Open(ctx, filepath.Join(base, "lake"), lake.Options{CacheDir: filepath.Join(base, "cache"), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocalStore(filepath.Join(base, "landing"))
	if err != nil {
		t.Fatal(err)
	}
	e := env{landing: st, lake: l}
	e.put(t, "gw/a.csv", csvFile(readings(1, 0, 5), false, false))
	if _, err := ingest.Run(ctx, e.config()); err != nil {
		t.Fatal(err)
	}
	// One link named as timelake names its segments (an old one, which
	// an expiry would drop), one not.
	links := []string{"_load-history-evil.parquet", "_load-history-1000-5-00000000-0000-0000-0000-000000000000.parquet"}
	meta := filepath.Join(base, "lake", "iot", "readings", "metadata")
	for _, name := range links {
		if err := os.Symlink(victim, filepath.Join(meta, name)); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := l.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropLoadHistory: strings.Join(links, ",")}, nil); err != nil {
		t.Fatal(err)
	}

	for i := 1; i <= 2; i++ {
		e.put(t, fmt.Sprintf("gw/b%d.csv", i), csvFile(readings(1, i, 5), false, false))
		rep, err := ingest.Run(ctx, e.config())
		if err != nil || rep.Loaded != 1 {
			t.Fatalf("run %d with links in the load history: %+v, %v", i, rep, err)
		}
	}
	for _, name := range links {
		if !strings.Contains(logs.String(), "entry="+name) {
			t.Errorf("no warning names %s:\n%s", name, logs.String())
		}
	}
	if strings.Count(logs.String(), "entry="+links[0]) != 1 {
		t.Errorf("the warning is not given once per process:\n%s", logs.String())
	}

	// Inline maintenance drops the entries; nothing is read or deleted.
	cfg := e.config()
	cfg.MaintenanceBudget = time.Minute
	e.put(t, "gw/c.csv", csvFile(readings(1, 3, 5), false, false))
	rep, err := ingest.Run(ctx, cfg)
	if err != nil || rep.Loaded != 1 || rep.Maintenance == nil || rep.Maintenance.Error != "" {
		t.Fatalf("run with maintenance: %+v, %+v, %v", rep, rep.Maintenance, err)
	}
	if err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tbl.Properties()[lake.PropLoadHistory]; got != "" {
		t.Fatalf("timelake.load-history after maintenance: %q", got)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "not a load history segment\n" {
		t.Fatalf("the file the links point at: %q, %v", b, err)
	}
	for _, name := range links {
		if fi, err := os.Lstat(filepath.Join(meta, name)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("link %s: %v, %v; want it left as it is", name, fi, err)
		}
	}

	// tables maintain on a table that names them again (another process:
	// a new Lake) drops them too, without an error.
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropLoadHistory: strings.Join(links, ",")}, nil); err != nil {
		t.Fatal(err)
	}
	l2, err := lake.Open(ctx, filepath.Join(base, "lake"), lake.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tbl2, err := l2.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := tbl2.Maintain(ctx, lake.MaintainOptions{Force: true})
	if err != nil || !slices.Equal(mr.DroppedSegments, links) {
		t.Fatalf("tables maintain: dropped %q, %v; want %q", mr.DroppedSegments, err, links)
	}
}
