package serve_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/serve"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
	"github.com/timelake/timelake/internal/testutil/wait"
)

// TestLoadedByNotificationOrSweep, on a local folder and on S3: a file
// the first sweep finds is noted as loaded by the sweep; files announced
// together, more than one load takes (so that one listing looks them up),
// as loaded by their notification, though a sweep's load loads them: what
// landing audit tells lost notifications by.
func TestLoadedByNotificationOrSweep(t *testing.T) {
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
			put := func(key string, seed int) {
				t.Helper()
				if _, err := st.Put(ctx, key, strings.NewReader(csv(seed, 3)), storage.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			put("gw/seed.csv", 1)
			r := start(t, serve.Config{
				Ingest: ingest.Config{Landing: st, Lake: l, Table: tableName, SeriesKey: []string{"device_id"},
					SettleTime: -1, FilesPerCommit: 1, MaintenanceBudget: 0},
				Sweep: time.Hour, Logger: slog.New(slog.DiscardHandler),
			})
			wait.For(t, "the first sweep to load gw/seed.csv", func() bool { return len(r.resultsOf("gw/seed.csv")) > 0 })
			keys := []string{"gw/a.csv", "gw/b.csv", "gw/c.csv"}
			var evs []string
			for i, k := range keys {
				put(k, i+2)
				evs = append(evs, `{"eventName":"OBJECT_CREATED_PUT","bucket":"`+bucket+`","object":{"key":"`+k+`"}}`)
			}
			if code := notify(t, r, "", `{"events":[`+strings.Join(evs, ",")+`]}`); code != 200 {
				t.Fatalf("notification: %d", code)
			}
			wait.For(t, "the announced files loaded", func() bool {
				for _, k := range keys {
					if res := r.resultsOf(k); len(res) == 0 || res[0].Status != ingest.Loaded {
						return false
					}
				}
				return true
			})
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			tbl, err := l.LoadTable(ctx, tableName)
			if err != nil {
				t.Fatal(err)
			}
			by := map[string]string{}
			if _, err := tbl.ScanHistory(ctx, func(rec lake.LoadRecord) error { by[rec.Key] = rec.LoadedBy; return nil }); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"gw/seed.csv": lake.LoadedBySweep, "gw/a.csv": lake.LoadedByNotification,
				"gw/b.csv": lake.LoadedByNotification, "gw/c.csv": lake.LoadedByNotification}
			for k, w := range want {
				if by[k] != w {
					t.Errorf("%s loaded by %q, want %q (all: %v)", k, by[k], w, by)
				}
			}
		})
	}
}
