package serve_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/serve"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/logbuf"
	"github.com/timelake/timelake/internal/testutil/s3test"
	"github.com/timelake/timelake/internal/testutil/wait"
)

// countingStore counts the lookups of one key (Stat: a HEAD on S3) and the
// listings made through a real store.
type countingStore struct {
	storage.Store
	stats, lists atomic.Int64
}

func (c *countingStore) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	c.stats.Add(1)
	return c.Store.Stat(ctx, key)
}

func (c *countingStore) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	c.lists.Add(1)
	return c.Store.List(ctx, prefix, fn)
}

// TestNotificationFlood: ten notifications of 1,000 keys that do not exist,
// then one for a file that does: the keys cost no lookup each (a listing
// answers them), the real file loads, and a notification of more than
// serve.MaxEventsPerRequest events is refused whole; on a local folder and
// on the S3 server. Requests are counted, not timed.
func TestNotificationFlood(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) (storage.Store, string, *lake.Lake){
		"local": func(t *testing.T) (storage.Store, string, *lake.Lake) {
			st, err := storage.NewLocalStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			l, err := lake.Open(context.Background(), t.TempDir(), lake.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return st, "", l
		},
		"s3": func(t *testing.T) (storage.Store, string, *lake.Lake) {
			srv := s3test.FromEnv(t)
			client := srv.Client(t)
			bucket := srv.NewBucket(t)
			l, err := lake.Open(context.Background(), "s3://"+srv.NewBucket(t)+"/warehouse", lake.Options{S3: client})
			if err != nil {
				t.Fatal(err)
			}
			return storage.NewS3Store(client, bucket, "", storage.S3StoreOptions{}), bucket, l
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st, bucket, l := open(t)
			if _, err := st.Put(ctx, "gw/seed.csv", strings.NewReader(csv(1, 3)), storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			store := &countingStore{Store: st}
			cfg := serve.Config{
				Ingest: ingest.Config{Landing: store, Lake: l, Table: tableName, SeriesKey: []string{"device_id"},
					SettleTime: -1, LeaseTTL: 5 * time.Second},
				Sweep: time.Hour, Logger: slog.New(slog.DiscardHandler),
			}
			r := start(t, cfg)
			wait.For(t, "the first sweep to load gw/seed.csv", func() bool { return len(r.resultsOf("gw/seed.csv")) > 0 })
			stats0, lists0 := store.stats.Load(), store.lists.Load()

			events := func(keys ...string) string {
				evs := make([]string, len(keys))
				for i, k := range keys {
					evs[i] = `{"eventName":"OBJECT_CREATED_PUT","bucket":"` + bucket + `","object":{"key":"` + k + `"}}`
				}
				return `{"events":[` + strings.Join(evs, ",") + `]}`
			}
			for n := range 10 {
				keys := make([]string, serve.MaxEventsPerRequest)
				for i := range keys {
					keys[i] = fmt.Sprintf("gw/bogus-%d-%04d.csv", n, i)
				}
				if code := notify(t, r, "", events(keys...)); code != 200 {
					t.Fatalf("flood notification %d: %d", n, code)
				}
			}
			tooMany := make([]string, serve.MaxEventsPerRequest+1)
			for i := range tooMany {
				tooMany[i] = fmt.Sprintf("gw/more-%04d.csv", i)
			}
			if code := notify(t, r, "", events(tooMany...)); code != 413 {
				t.Fatalf("a notification of %d events: %d, want 413", len(tooMany), code)
			}
			if _, err := st.Put(ctx, "gw/real.csv", strings.NewReader(csv(2, 4)), storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if code := notify(t, r, "", events("gw/real.csv")); code != 200 {
				t.Fatalf("notification of the real file: %d", code)
			}
			wait.For(t, "gw/real.csv loaded", func() bool {
				res := r.resultsOf("gw/real.csv")
				return len(res) > 0 && res[0].Status == ingest.Loaded
			})
			wait.For(t, "the queue to drain", func() bool { _, body := health(r); return strings.Contains(body, `"queue":0`) })
			stats, lists := store.stats.Load()-stats0, store.lists.Load()-lists0
			t.Logf("after %d announced keys that do not exist: %d lookups, %d listings", 10*serve.MaxEventsPerRequest, stats, lists)
			// One load's worth of lookups at most (2 x files per commit),
			// and at most a listing per notification.
			if stats > 2*ingest.DefaultFilesPerCommit || lists > 11 {
				t.Fatalf("%d lookups and %d listings for 10,001 announced keys", stats, lists)
			}
		})
	}
}

// TestServeRefusesLinks: on a local landing folder, notifications for a
// key through a link to a folder outside, and for a link to a file
// outside, load nothing, copy nothing into the quarantine and delete
// nothing outside, with a warning; the real file announced with them
// loads at once.
func TestServeRefusesLinks(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	root, outside := filepath.Join(base, "landing"), filepath.Join(base, "elsewhere")
	for _, d := range []string{filepath.Join(root, "gw"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	important := csv(3, 5)
	for p, body := range map[string]string{filepath.Join(outside, "important.csv"): important,
		filepath.Join(outside, "passwd"): "root:x:0:0:root:/root:/bin/sh\n"} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "gw", "v")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(root, "gw", "passwd.csv")); err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocalStore(root)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lake.Open(ctx, filepath.Join(base, "lake"), lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var logs logbuf.Buffer
	r := start(t, serve.Config{
		Ingest: ingest.Config{Landing: st, Lake: l, Table: tableName, SeriesKey: []string{"device_id"}, SettleTime: -1},
		Sweep:  time.Hour, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	wait.For(t, "the lease", func() bool { code, _ := health(r); return code == 200 })
	if _, err := st.Put(ctx, "gw/real.csv", strings.NewReader(csv(4, 2)), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	body := `{"events":[` + strings.Join([]string{
		`{"eventName":"OBJECT_CREATED_PUT","object":{"key":"gw/v/important.csv"}}`,
		`{"eventName":"OBJECT_CREATED_PUT","object":{"key":"gw/passwd.csv"}}`,
		`{"eventName":"OBJECT_CREATED_PUT","object":{"key":"gw/real.csv"}}`}, ",") + `]}`
	if code := notify(t, r, "", body); code != 200 {
		t.Fatalf("notify: %d", code)
	}
	wait.For(t, "gw/real.csv loaded", func() bool { return len(r.resultsOf("gw/real.csv")) > 0 })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"gw/v/important.csv", "gw/passwd.csv"} {
		if res := r.resultsOf(k); len(res) != 0 {
			t.Errorf("%s: %+v, want no result", k, res)
		}
		if !strings.Contains(logs.String(), k) || !strings.Contains(logs.String(), "symbolic link") {
			t.Errorf("no warning names %s:\n%s", k, logs.String())
		}
	}
	if b, err := os.ReadFile(filepath.Join(outside, "important.csv")); err != nil || string(b) != important {
		t.Errorf("the file outside: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "_rejected")); !os.IsNotExist(err) {
		t.Errorf("something was quarantined: %v", err)
	}
	tbl, err := l.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	if bs := tbl.Batches(); len(bs) != 1 || bs[0].BatchID != "gw/real.csv" {
		t.Fatalf("batches %+v, want gw/real.csv alone", bs)
	}
}
