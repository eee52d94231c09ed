package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// createTable makes the table from a first clean file.
func createTable(t *testing.T, e env) *lake.Table {
	t.Helper()
	e.put(t, "seed/first.csv", []byte("time,device_id,temperature_c\n2026-01-05T09:00:00Z,seed,1.5\n"))
	if _, err := ingest.Run(context.Background(), e.config()); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lake.LoadTable(context.Background(), tableName)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func readReport(t *testing.T, e env, key string) landing.Report {
	t.Helper()
	body, _, err := storage.ReadAll(context.Background(), e.landing, key)
	if err != nil {
		t.Fatal(err)
	}
	var rep landing.Report
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestSkipRowsSetsAsideRefusedRows(t *testing.T) {
	for name, open := range map[string]func(*testing.T) env{"local": localEnv, "s3": s3Env} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := open(t)
			createTable(t, e)
			body := "time,device_id,temperature_c\n" +
				"2026-01-05T10:00:00Z,d1,21.5\n" +
				"2026-01-05T10:01:00Z,d1,ERR\n" +
				"2026-01-05T10:02:00Z,d1,22.5,extra\n" +
				"2026-01-05T10:03:00Z,d1,23.5\n"
			e.put(t, "gw-7/a.csv", []byte(body))
			cfg := e.config()
			cfg.OnError = decode.OnErrorSkipRows
			cfg.MaxBadRows, _ = decode.ParseMaxBadRows("50%")
			rep, err := ingest.Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			f := rep.Files[0]
			if f.Status != ingest.Loaded || f.Rows != 2 || f.RejectedRows != 2 || f.RejectsTo != "_rejected/gw-7/a.rejects.csv" || rep.RejectedRows != 2 || !rep.Partial() {
				t.Fatalf("report: %+v", f)
			}
			// The rejects file holds the header and the refused lines as
			// written; its report each row's place, value and rule.
			got, _, err := storage.ReadAll(ctx, e.landing, f.RejectsTo)
			if err != nil {
				t.Fatal(err)
			}
			if want := "time,device_id,temperature_c\n2026-01-05T10:01:00Z,d1,ERR\n2026-01-05T10:02:00Z,d1,22.5,extra\n"; string(got) != want {
				t.Fatalf("rejects file %q", got)
			}
			r := readReport(t, e, f.RejectsTo+".error.json")
			if r.Kind != landing.KindRows || r.Key != "gw-7/a.rejects.csv" || r.SourceKey != "gw-7/a.csv" || len(r.Rows) != 2 ||
				r.Rows[0].Row != 2 || r.Rows[0].Line != 3 || r.Rows[0].Column != "temperature_c" || r.Rows[0].Value != "ERR" || r.Rows[0].Rule != "type double" ||
				r.Rows[1].Rule != decode.RuleFields {
				t.Fatalf("rejects report: %+v", r)
			}
			// The snapshot and, once it expired, the load history count them.
			tbl, err := e.lake.LoadTable(ctx, tableName)
			if err != nil {
				t.Fatal(err)
			}
			b, ok, err := tbl.FindLoaded(ctx, "gw-7/a.csv")
			if err != nil || !ok || b.Summary[lake.SummaryRejectedRows] != "2" || b.Summary[lake.SummaryRejectsFile] != f.RejectsTo {
				t.Fatalf("batch: %+v %v %v", b, ok, err)
			}
			e.put(t, "gw-7/z.csv", []byte("time,device_id,temperature_c\n2026-01-05T11:00:00Z,d1,1\n"))
			if _, err := ingest.Run(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			if err := tbl.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := tbl.Expire(ctx, lake.ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 1}); err != nil {
				t.Fatal(err)
			}
			hist, err := tbl.LoadHistory(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rec, ok, err := hist.Find(ctx, "gw-7/a.csv")
			if err != nil || !ok || rec.RejectedRows != 2 {
				t.Fatalf("load history: %+v %v %v", rec, ok, err)
			}
			// Requeued (once fixed), the rejects file loads as a new file.
			fixed := "time,device_id,temperature_c\n2026-01-05T10:01:00Z,d1,22\n2026-01-05T10:02:00Z,d1,22.5\n"
			e.put(t, "gw-7/a.rejects.csv", []byte(fixed))
			if rep, err := ingest.Run(ctx, cfg); err != nil || rep.Loaded != 1 || rep.Rows != 2 {
				t.Fatalf("the fixed rows: %+v %v", rep, err)
			}
		})
	}
}

func TestSkipRowsTooManyQuarantinesTheFile(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	tbl := createTable(t, e)
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropOnError: "skip-rows", lake.PropMaxBadRows: "1"}, nil); err != nil {
		t.Fatal(err)
	}
	e.put(t, "gw/b.csv", []byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,d1,x\n2026-01-05T10:01:00Z,d1,y\n2026-01-05T10:02:00Z,d1,1\n"))
	rep, err := ingest.Run(ctx, e.config())
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Files[0]
	if f.Status != ingest.Quarantined || !strings.Contains(f.Reason, "more than --max-bad-rows 1") || f.QuarantinedTo != "_rejected/gw/b.csv" {
		t.Fatalf("file: %+v", f)
	}
	// The table property applies; the run's flag wins over it.
	e.put(t, "gw/c.csv", []byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,d1,x\n2026-01-05T10:01:00Z,d1,y\n2026-01-05T10:02:00Z,d1,1\n"))
	cfg := e.config()
	cfg.MaxBadRows, _ = decode.ParseMaxBadRows("70%")
	if rep, err = ingest.Run(ctx, cfg); err != nil || rep.Files[0].RejectedRows != 2 {
		t.Fatalf("with --max-bad-rows 70%%: %+v %v", rep.Files, err)
	}
}

func TestSourceProfiles(t *testing.T) {
	for name, open := range map[string]func(*testing.T) env{"local": localEnv, "s3": s3Env} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := open(t)
			tbl := createTable(t, e)
			if err := tbl.SetProperties(ctx, map[string]string{
				"timelake.profile.berlin.match":             "site-berlin/",
				"timelake.profile.berlin.csv-delimiter":     ";",
				"timelake.profile.berlin.csv-decimal-comma": "true",
				"timelake.profile.berlin.csv-null":          "NA",
				"timelake.profile.berlin.time-column":       "Zeit",
				"timelake.profile.berlin.assume-timezone":   "Europe/Berlin",
				"timelake.profile.csvs.match":               "**/*.tsv",
			}, nil); err != nil {
				t.Fatal(err)
			}
			e.put(t, "site-berlin/gw1.csv", []byte("Zeit;device_id;temperature_c\n2026-01-05 11:00:00;b1;21,5\n2026-01-05 11:01:00;b1;NA\n"))
			e.put(t, "site-paris/gw1.csv", []byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,p1,21.5\n"))
			e.put(t, "site-berlin/x.tsv", []byte("time\tdevice_id\ttemperature_c\n2026-01-05T10:00:00Z\tb2\t1\n"))
			// A dry run names the profile each file would be read with,
			// or why its key would be quarantined.
			dry := e.config()
			dry.DryRun = true
			rep, err := ingest.Run(ctx, dry)
			if err != nil {
				t.Fatal(err)
			}
			byKey := map[string]ingest.FileResult{}
			for _, f := range rep.Files {
				byKey[f.Key] = f
			}
			if f := byKey["site-berlin/gw1.csv"]; f.Status != ingest.WouldLoad || f.Profile != "berlin" || f.Reason != "" {
				t.Fatalf("dry run, berlin: %+v", f)
			}
			if f := byKey["site-paris/gw1.csv"]; f.Status != ingest.WouldLoad || f.Profile != "" || f.Reason != "" {
				t.Fatalf("dry run, paris: %+v", f)
			}
			if f := byKey["site-berlin/x.tsv"]; !strings.HasPrefix(f.Reason, "the key matches two source profiles: berlin (site-berlin/) and csvs (**/*.tsv)") {
				t.Fatalf("dry run, x.tsv: %+v", f)
			}
			rep, err = ingest.Run(ctx, e.config())
			if err != nil {
				t.Fatal(err)
			}
			byKey = map[string]ingest.FileResult{}
			for _, f := range rep.Files {
				byKey[f.Key] = f
			}
			if f := byKey["site-berlin/gw1.csv"]; f.Status != ingest.Loaded || f.Profile != "berlin" || f.Rows != 2 {
				t.Fatalf("berlin: %+v", f)
			}
			if f := byKey["site-paris/gw1.csv"]; f.Status != ingest.Loaded || f.Profile != "" {
				t.Fatalf("paris: %+v", f)
			}
			// Two profiles match: refused, naming both, as a setting.
			f := byKey["site-berlin/x.tsv"]
			if f.Status != ingest.Quarantined || !strings.Contains(f.Reason, "berlin (site-berlin/) and csvs (**/*.tsv)") {
				t.Fatalf("x.tsv: %+v", f)
			}
			if r := readReport(t, e, f.QuarantinedTo+".error.json"); r.Kind != landing.KindSetting {
				t.Fatalf("kind %q", r.Kind)
			}
			rows := tableRows(t, e)
			// 11:00 in Berlin is 10:00 UTC; 21,5 is 21.5.
			if !slices.Contains(rows, "b1|1767607200000000|21.5") {
				t.Fatalf("rows %v", rows)
			}
		})
	}
}

func TestSourceColumns(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	createTable(t, e)
	e.put(t, "gw-1/a.csv", []byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,d1,1\n2026-01-05T10:01:00Z,d1,2\n"))
	cfg := e.config()
	cfg.SourceColumn, cfg.LoadTimeColumn = "_source", "_loaded_at"
	loadTime := time.Date(2026, 1, 6, 8, 0, 0, 0, time.UTC)
	cfg.Now = func() time.Time { return loadTime }
	rep, err := ingest.Run(ctx, cfg)
	if err != nil || rep.Loaded != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Files[0]; len(f.SchemaChanges) != 2 {
		t.Fatalf("schema changes: %v", f.SchemaChanges)
	}
	at, err := tbl.Iceberg().Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, -1)
	defer tr.Release()
	var sources []string
	for tr.Next() {
		rec := tr.RecordBatch()
		src := rec.Column(rec.Schema().FieldIndices("_source")[0])
		ts := rec.Column(rec.Schema().FieldIndices("_loaded_at")[0]).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			sources = append(sources, src.ValueStr(i))
			if src.IsValid(i) && ts.Value(i) != arrow.Timestamp(loadTime.UnixMicro()) {
				t.Fatalf("load time %v", ts.Value(i))
			}
		}
	}
	slices.Sort(sources)
	if !slices.Equal(sources, []string{"(null)", "gw-1/a.csv", "gw-1/a.csv"}) {
		t.Fatalf("sources %q (the seed file was loaded before the column)", sources)
	}
	// A copy of a.csv from another sender, under content dedupe, is
	// deleted as a copy, and its line says its rows differed only in the
	// source column.
	e.put(t, "gw-2/a.csv", []byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,d1,1\n2026-01-05T10:01:00Z,d1,2\n"))
	dedupe := cfg
	dedupe.ContentDedupe = true
	rep, err = ingest.Run(ctx, dedupe)
	if err != nil || rep.AlreadyLoaded != 1 || rep.Files[0].SameAs != "gw-1/a.csv" ||
		!strings.HasSuffix(rep.Files[0].Reason, "(its rows would differ from those loaded only in _source; if two senders may send the same bytes, load with --content-dedupe=false)") {
		t.Fatalf("a copy from another sender: %+v %v", rep.Files, err)
	}
	// A file with values of its own in the column is refused.
	e.put(t, "gw-1/b.csv", []byte("time,device_id,temperature_c,_source\n2026-01-05T10:00:00Z,d1,1,mine\n"))
	rep, err = ingest.Run(ctx, cfg)
	if err != nil || rep.Quarantined != 1 || !strings.Contains(rep.Files[0].Reason, `values in column "_source"`) {
		t.Fatalf("%+v %v", rep.Files, err)
	}
	// Columns the table cannot fill refuse the run before a file is taken:
	// every file would be refused.
	e.put(t, "gw-1/c.csv", []byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,d1,1\n"))
	for _, names := range [][2]string{{"device_id", ""}, {"", "time"}, {"_loaded_at", ""}, {"_source", "_source"}} {
		cfg.SourceColumn, cfg.LoadTimeColumn = names[0], names[1]
		rep, err = ingest.Run(ctx, cfg)
		var sce *lake.SourceColumnError
		if !errors.As(err, &sce) || len(rep.Files) != 0 {
			t.Errorf("source columns %q: %v, %+v", names, err, rep.Files)
		}
	}
	if _, err := e.landing.Stat(ctx, "gw-1/c.csv"); err != nil {
		t.Fatalf("the waiting file: %v", err)
	}
}
