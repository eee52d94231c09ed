package tables_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// sourceRows counts the rows of iot.readings by their _source value ("" for
// none), through iceberg-go's scan of the current snapshot.
func sourceRows(t *testing.T, l *lake.Lake) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	tbl, err := l.LoadTable(ctx, lake.TableName{Namespace: "iot", Name: "readings"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Iceberg().Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	idx := at.Schema().FieldIndices("_source")
	if len(idx) != 1 {
		t.Fatalf("the table has no _source column: %s", at.Schema())
	}
	rr := array.NewTableReader(at, 1024)
	defer rr.Release()
	out := map[string]int64{}
	for rr.Next() {
		col := rr.RecordBatch().Column(idx[0]).(*array.String)
		for i := range col.Len() {
			out[col.Value(i)]++ // "" for a null
		}
	}
	return out
}

// TestTablesDeleteBatchIDCompacted: the files of one gateway loaded before
// the table had a source column, then, with timelake.source-column set,
// those of another, all merged into one data file by tables maintain.
// delete --batch-id of one of the latter removes exactly its rows,
// rewriting the merged file; the rows loaded before the source column hold
// no key, and their files' batch ids match none of them. On a local
// warehouse and on one in the test S3 server.
func TestTablesDeleteBatchIDCompacted(t *testing.T) {
	for _, tc := range []struct {
		name      string
		warehouse func(t *testing.T) (wh string, env map[string]string, opts lake.Options)
	}{
		{"local", func(t *testing.T) (string, map[string]string, lake.Options) {
			return filepath.Join(t.TempDir(), "lake"), nil, lake.Options{}
		}},
		{"s3", func(t *testing.T) (string, map[string]string, lake.Options) {
			srv := s3test.FromEnv(t)
			return "s3://" + srv.NewBucket(t) + "/warehouse", map[string]string{
				"AWS_ENDPOINT_URL_S3":   srv.Endpoint,
				"AWS_REGION":            srv.Region,
				"AWS_ACCESS_KEY_ID":     srv.AccessKey,
				"AWS_SECRET_ACCESS_KEY": srv.SecretKey,
			}, lake.Options{S3: srv.Client(t)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh, s3env, opts := tc.warehouse(t)
			landing, before := copyLanding(t, "gateway-2/")
			env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "LANDING_BUCKET": landing, "TIMELAKE_TABLE": "iot.readings",
				"TIMELAKE_MAINTENANCE_BUDGET": "0"} // the files as ingest loaded them, until tables maintain
			maps.Copy(env, s3env)
			mustRun(t, env, false, "ingest", "--series-key", "device_id")
			// The next files land after the first were loaded.
			more, keys := copyLanding(t, "gateway-1/")
			if err := os.Rename(filepath.Join(more, "gateway-1"), filepath.Join(landing, "gateway-1")); err != nil {
				t.Fatal(err)
			}
			mustRun(t, env, false, "tables", "alter", "iot.readings", "--set", "timelake.source-column=_source")
			mustRun(t, env, false, "ingest")

			type file struct{ Path string }
			loaded := len(decode[[]file](t, mustRun(t, env, false, "tables", "files", "--json")))
			mustRun(t, env, false, "tables", "maintain", "iot.readings")
			if n := len(decode[[]file](t, mustRun(t, env, false, "tables", "files", "--json"))); loaded < 3 || n != 1 {
				t.Fatalf("tables maintain left %d data files of %d, want them merged into one", n, loaded)
			}

			l, err := lake.Open(context.Background(), wh, opts)
			if err != nil {
				t.Fatal(err)
			}
			rows := sourceRows(t, l)
			if len(rows) != 3 || rows[""] == 0 || rows[keys[0]] == 0 || rows[keys[1]] == 0 {
				t.Fatalf("rows by source before the delete: %v, want those of %s (no key), %v", rows, before, keys)
			}
			type report struct {
				Predicate string `json:"predicate"`
				Rows      int64  `json:"rows"`
				Rewritten int    `json:"files_rewritten"`
				Dropped   int    `json:"files_dropped"`
			}
			rep := decode[report](t, mustRun(t, env, false, "tables", "delete", "iot.readings", "--batch-id", keys[0], "--yes", "--json"))
			if rep.Rows != rows[keys[0]] || rep.Rewritten != 1 || rep.Dropped != 0 || rep.Predicate != `_source = "`+keys[0]+`"` {
				t.Fatalf("delete --batch-id %s: %+v; it loaded %d rows", keys[0], rep, rows[keys[0]])
			}
			want := maps.Clone(rows)
			delete(want, keys[0])
			if got := sourceRows(t, l); !maps.Equal(got, want) {
				t.Fatalf("rows by source after the delete: %v, want %v", got, want)
			}

			rep = decode[report](t, mustRun(t, env, false, "tables", "delete", "iot.readings", "--batch-id", before[0], "--yes", "--json"))
			if rep.Rows != 0 || rep.Rewritten != 0 || rep.Dropped != 0 {
				t.Fatalf("delete --batch-id %s, loaded before the source column: %+v", before[0], rep)
			}
			if got := sourceRows(t, l); !maps.Equal(got, want) {
				t.Fatalf("rows by source after deleting a batch without keys: %v, want %v", got, want)
			}
		})
	}
}
