package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// TestJSONLoads: JSON Lines (gzip) create the table with nested keys as
// columns, an array file loads into it, a cut line is set aside with
// skip-rows into a .jsonl rejects file with its line, and the same bytes
// under another key are a duplicate: on a local folder and on the S3
// server.
func TestJSONLoads(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e env) {
		ctx := context.Background()
		var first bytes.Buffer
		zw := gzip.NewWriter(&first)
		for i := range 50 {
			fmt.Fprintf(zw, `{"time":"2026-01-05T10:%02d:00Z","device_id":"d%d","readings":{"temperature_c":%d.5}}`+"\n", i, i%3, 20+i%5)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		e.put(t, "gw-1/a.jsonl.gz", first.Bytes())
		rep, err := ingest.Run(ctx, e.config())
		if err != nil || rep.Loaded != 1 || rep.Rows != 50 {
			t.Fatalf("report %+v, %v; want 50 rows loaded", rep, err)
		}
		if got := columnsOf(t, e); got != "time timestamptz, device_id string, readings_temperature_c double" {
			t.Errorf("columns %s", got)
		}

		e.put(t, "gw-2/b.json", []byte(`[{"time":"2026-01-05T11:00:00Z","device_id":"d9","readings":{"temperature_c":-3}}]`))
		bad := `{"time":"2026-01-05T12:01:00Z","device_id":"d1","readings":{"temperature_c":`
		e.put(t, "gw-3/c.jsonl", []byte(`{"time":"2026-01-05T12:00:00Z","device_id":"d1","readings":{"temperature_c":1}}`+"\n"+bad+"\n"+
			`{"time":"2026-01-05T12:02:00Z","device_id":"d1","readings":{"temperature_c":2}}`+"\n"))
		e.put(t, "gw-4/copy.jsonl.gz", first.Bytes())
		cfg := e.config()
		cfg.OnError = decode.OnErrorSkipRows
		cfg.MaxBadRows, _ = decode.ParseMaxBadRows("50%")
		cfg.ContentDedupe = true
		rep, err = ingest.Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		byKey := map[string]ingest.FileResult{}
		for _, f := range rep.Files {
			byKey[f.Key] = f
		}
		if f := byKey["gw-2/b.json"]; f.Status != ingest.Loaded || f.Rows != 1 {
			t.Errorf("array file: %+v", f)
		}
		f := byKey["gw-3/c.jsonl"]
		if f.Status != ingest.Loaded || f.Rows != 2 || f.RejectedRows != 1 || f.RejectsTo != "_rejected/gw-3/c.rejects.jsonl" {
			t.Fatalf("file with a cut line: %+v", f)
		}
		got, _, err := storage.ReadAll(ctx, e.landing, f.RejectsTo)
		if err != nil || string(got) != bad+"\n" {
			t.Fatalf("rejects file %q, %v; want the cut line", got, err)
		}
		r := readReport(t, e, f.RejectsTo+".error.json")
		if r.Kind != landing.KindRows || len(r.Rows) != 1 || r.Rows[0].Row != 2 || r.Rows[0].Line != 2 || r.Rows[0].Rule != decode.RuleJSON ||
			!strings.Contains(r.Rows[0].Reason, "the line ends inside a JSON value") {
			t.Fatalf("rejects report: %+v", r)
		}
		if f := byKey["gw-4/copy.jsonl.gz"]; f.Status == ingest.Loaded {
			t.Errorf("the same bytes under another key loaded again: %+v", f)
		}
		var n int64
		eachRecord(t, e, func(rec arrow.RecordBatch) { n += rec.NumRows() })
		if n != 53 {
			t.Errorf("%d rows in the table, want 53", n)
		}
	})
}
