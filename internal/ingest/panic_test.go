package ingest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/logbuf"
)

// TestPanicQuarantinesOneFile: a panic while one file is decoded, or while
// its data files are written, refuses that file alone: it is quarantined
// (kind file) with a reason naming it and what was being done, the stack
// only in a debug log line; the files after it load in the same run, which
// is partial (exit 3); the next run is clean.
func TestPanicQuarantinesOneFile(t *testing.T) {
	for name, open := range map[string]func(*testing.T) env{"local": localEnv, "s3": s3Env} {
		for _, stage := range []string{"decode", "write"} {
			t.Run(name+"/"+stage, func(t *testing.T) {
				ctx := context.Background()
				e := open(t)
				const poison = "gateway-1/20260105T0100.csv"
				first, after := readings(1, 0, 10), readings(1, 2, 10)
				e.put(t, "gateway-1/20260105T0000.csv", csvFile(first, false, false))
				e.put(t, poison, csvFile(readings(1, 1, 10), false, false))
				e.put(t, "gateway-1/20260105T0200.csv", csvFile(after, false, false))
				e.put(t, "gateway-3/20260105T0300.parquet", parquetFile(t, readings(3, 3, 10)))
				var logs logbuf.Buffer
				cfg := e.config()
				cfg.FaultHook = func(s, key string) {
					if s == stage && key == poison {
						var m map[string]int
						m[key]++ // a nil map: the kind of bug a reader has
					}
				}
				cfg.Parallel = 3
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
				rep, err := ingest.Run(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Loaded != 3 || rep.Quarantined != 1 || !rep.Partial() {
					t.Fatalf("loaded %d quarantined %d partial %v: %+v", rep.Loaded, rep.Quarantined, rep.Partial(), rep.Files)
				}
				doing := map[string]string{"decode": "the reader crashed while decoding the file", "write": "the writer crashed while writing its data files"}[stage]
				var q ingest.FileResult
				for _, f := range rep.Files {
					if f.Key == poison {
						q = f
					}
				}
				if q.Status != ingest.Quarantined || !strings.Contains(q.Reason, poison) || !strings.Contains(q.Reason, doing) ||
					!strings.Contains(q.Reason, "assignment to entry in nil map") || strings.Contains(q.Reason, "goroutine") {
					t.Fatalf("poison file: %s %q", q.Status, q.Reason)
				}
				raw, _, err := storage.ReadAll(ctx, e.landing, q.QuarantinedTo+".error.json")
				if err != nil {
					t.Fatal(err)
				}
				var r landing.Report
				if err := json.Unmarshal(raw, &r); err != nil {
					t.Fatal(err)
				}
				if r.Key != poison || r.Kind != landing.KindFile || !strings.Contains(r.Reason, doing) || r.Hint == "" {
					t.Fatalf("report %+v", r)
				}
				if !strings.Contains(logs.String(), "panicked on a file") || !strings.Contains(logs.String(), "goroutine") {
					t.Fatalf("no debug line with the stack:\n%s", logs.String())
				}
				var want []string
				for _, rd := range slices.Concat(first, after, readings(3, 3, 10)) {
					want = append(want, rd.String())
				}
				sort.Strings(want)
				if got := tableRows(t, e); !slices.Equal(got, want) {
					t.Fatalf("table rows %v, want %v", got, want)
				}

				rep, err = ingest.Run(ctx, e.config())
				if err != nil || len(rep.Files) != 0 || rep.Partial() {
					t.Fatalf("next run: %+v, %v", rep, err)
				}
			})
		}
	}
}

// TestPanicOnFirstFile: a panic on the file that would create the table
// quarantines it at once (it is unreadable, whatever the settings), and
// the next file creates the table.
func TestPanicOnFirstFile(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	const poison = "gateway-1/20260105T0000.csv"
	e.put(t, poison, csvFile(readings(1, 0, 10), false, false))
	e.put(t, "gateway-1/20260105T0100.csv", csvFile(readings(1, 1, 10), false, false))
	cfg := e.config()
	cfg.FaultHook = func(s, key string) {
		if key == poison {
			panic("reader bug")
		}
	}
	rep, err := ingest.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loaded != 1 || rep.Quarantined != 1 || rep.Created == nil || !rep.Partial() {
		t.Fatalf("loaded %d quarantined %d created %v: %+v", rep.Loaded, rep.Quarantined, rep.Created, rep.Files)
	}
}

// withArrowSchema returns the Parquet file data with its footer's
// ARROW:schema set to value: the footer is rewritten, its length with it.
func withArrowSchema(t *testing.T, data []byte, value string) []byte {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	md := pf.MetaData()
	size := md.Size()
	kv := metadata.KeyValueMetadata{}
	for i, k := range md.KeyValueMetadata().Keys() {
		if k != "ARROW:schema" {
			if err := kv.Append(k, md.KeyValueMetadata().Values()[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := kv.Append("ARROW:schema", value); err != nil {
		t.Fatal(err)
	}
	md.FileMetaData.KeyValueMetadata = kv
	var footer bytes.Buffer
	if _, err := md.WriteTo(&footer, nil); err != nil {
		t.Fatal(err)
	}
	out := slices.Clone(data[:len(data)-8-size])
	out = append(out, footer.Bytes()...)
	n := uint32(footer.Len())
	out = append(out, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	return append(out, "PAR1"...)
}

// TestArrowSchemaMismatchLoads: gateway Parquet files whose ARROW:schema
// names other columns and types, or is cut short, load by their Parquet
// schema, every value exactly, with the files around them.
func TestArrowSchemaMismatchLoads(t *testing.T) {
	for name, open := range map[string]func(*testing.T) env{"local": localEnv, "s3": s3Env} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := open(t)
			var other bytes.Buffer
			w := ipc.NewWriter(&other, ipc.WithSchema(arrow.NewSchema([]arrow.Field{
				{Name: "a", Type: arrow.BinaryTypes.LargeString},
				{Name: "b", Type: arrow.BinaryTypes.LargeString},
				{Name: "c", Type: arrow.BinaryTypes.LargeString},
			}, nil)))
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			mismatch := base64.StdEncoding.EncodeToString(other.Bytes())
			var want []string
			files := map[string]string{
				"gateway-3/20260105T0000.parquet": "",
				"gateway-3/20260105T0100.parquet": mismatch,
				"gateway-3/20260105T0200.parquet": mismatch[:len(mismatch)/2],
			}
			i := 0
			for key, value := range files {
				rows := readings(3, i, 20)
				i++
				for _, r := range rows {
					want = append(want, r.String())
				}
				data := parquetFile(t, rows)
				if value != "" {
					data = withArrowSchema(t, data, value)
				}
				e.put(t, key, data)
			}
			e.put(t, "gateway-1/20260105T0300.csv", csvFile(readings(1, 9, 5), false, false))
			for _, r := range readings(1, 9, 5) {
				want = append(want, r.String())
			}
			sort.Strings(want)
			rep, err := ingest.Run(ctx, e.config())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Loaded != 4 || rep.Partial() {
				t.Fatalf("loaded %d: %+v", rep.Loaded, rep.Files)
			}
			if got := tableRows(t, e); !slices.Equal(got, want) {
				t.Fatalf("table rows differ: %d rows, want %d", len(got), len(want))
			}
		})
	}
}
