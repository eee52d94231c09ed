package ingest_test

import (
	"bytes"
	"context"
	"log/slog"
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
)

// forEachEnv runs test on a local landing folder and warehouse, and on the
// test S3 server.
func forEachEnv(t *testing.T, test func(t *testing.T, e env)) {
	for name, open := range map[string]func(*testing.T) env{"local": localEnv, "s3": s3Env} {
		t.Run(name, func(t *testing.T) { test(t, open(t)) })
	}
}

// columnsOf renders a table's columns as "name type".
func columnsOf(t *testing.T, e env) string {
	t.Helper()
	tbl, err := e.lake.LoadTable(context.Background(), tableName)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range tbl.Metadata().CurrentSchema().Fields() {
		out = append(out, f.Name+" "+f.Type.String())
	}
	return strings.Join(out, ", ")
}

// batteryOf reads the battery column of every row, keyed by device and
// time ("-" for null).
func batteryOf(t *testing.T, e env) []string {
	t.Helper()
	var out []string
	eachRecord(t, e, func(rec arrow.RecordBatch) {
		dev := rec.Column(rec.Schema().FieldIndices("device_id")[0])
		bat := rec.Column(rec.Schema().FieldIndices("battery")[0])
		for i := range int(rec.NumRows()) {
			v := "-"
			if bat.IsValid(i) {
				v = bat.ValueStr(i)
			}
			out = append(out, dev.ValueStr(i)+"="+v)
		}
	})
	slices.Sort(out)
	return out
}

// TestNewColumnQuarantinedThenEvolved: a file with a column the table
// lacks is quarantined without --evolve, the reason naming the column and
// the setting; with the table property timelake.evolve=add-columns (as
// serve and cron share it) the requeued file adds the column, and the
// older rows read back with it null.
func TestNewColumnQuarantinedThenEvolved(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e env) {
		ctx := context.Background()
		e.put(t, "gw/1.csv", []byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,d1,21.5\n"))
		if _, err := ingest.Run(ctx, e.config()); err != nil {
			t.Fatal(err)
		}
		e.put(t, "gw/2.csv", []byte("time,device_id,temperature_c,battery\n2026-01-05T10:01:00Z,d2,22,80\n2026-01-05T10:02:00Z,d3,22,79.5\n"))
		rep, err := ingest.Run(ctx, e.config())
		if err != nil || rep.Quarantined != 1 {
			t.Fatalf("report %+v, %v; want the file quarantined", rep, err)
		}
		reason := rep.Files[0].Reason
		for _, want := range []string{`column "battery"`, "not in the table schema", "--evolve add-columns"} {
			if !strings.Contains(reason, want) {
				t.Errorf("reason %q does not say %q", reason, want)
			}
		}
		b := &landing.Bucket{Store: e.landing}
		rejected, err := b.Rejected(ctx)
		if err != nil || len(rejected) != 1 || !strings.Contains(rejected[0].Hint, "landing requeue") {
			t.Fatalf("rejected %+v, %v", rejected, err)
		}

		tbl, err := e.lake.LoadTable(ctx, tableName)
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.SetProperties(ctx, map[string]string{lake.PropEvolve: "add-columns"}, nil); err != nil {
			t.Fatal(err)
		}
		if res, err := b.Requeue(ctx, rejected[0], t.TempDir()); err != nil || res.Status != landing.Requeued {
			t.Fatalf("requeue %+v, %v", res, err)
		}
		rep, err = ingest.Run(ctx, e.config())
		if err != nil || rep.Loaded != 1 || rep.Rows != 2 {
			t.Fatalf("report %+v, %v; want the requeued file loaded", rep, err)
		}
		if got := strings.Join(rep.Files[0].SchemaChanges, ";"); got != `added "battery" double` {
			t.Errorf("schema changes %q", got)
		}
		if got := columnsOf(t, e); got != "time timestamptz, device_id string, temperature_c double, battery double" {
			t.Errorf("columns %s", got)
		}
		if got, want := batteryOf(t, e), []string{"d1=-", "d2=80", "d3=79.5"}; !slices.Equal(got, want) {
			t.Errorf("battery %v, want %v", got, want)
		}
	})
}

// TestEvolveSettingWinsOverTheProperty: --evolve off refuses a new column
// although the table property allows it; a table ingest creates with
// --evolve keeps the rule as its property.
func TestEvolveSettingWinsOverTheProperty(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	cfg := e.config()
	cfg.Evolve = decode.EvolveAddColumns
	e.put(t, "gw/1.csv", []byte("time,device_id,v\n2026-01-05T10:00:00Z,d1,1\n"))
	if _, err := ingest.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	if got := tbl.Properties()[lake.PropEvolve]; got != "add-columns" {
		t.Errorf("property %q, want add-columns", got)
	}
	e.put(t, "gw/2.csv", []byte("time,device_id,v,extra\n2026-01-05T10:01:00Z,d1,1,x\n"))
	cfg = e.config()
	cfg.Evolve = decode.EvolveOff
	if rep, err := ingest.Run(ctx, cfg); err != nil || rep.Quarantined != 1 {
		t.Fatalf("report %+v, %v; want the file quarantined with --evolve off", rep, err)
	}
	// A value another tool wrote is ignored: the table does not change.
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropEvolve: "yes"}, nil); err != nil {
		t.Fatal(err)
	}
	e.put(t, "gw/3.csv", []byte("time,device_id,v,extra\n2026-01-05T10:02:00Z,d1,1,x\n"))
	if rep, err := ingest.Run(ctx, e.config()); err != nil || rep.Quarantined != 1 || !strings.Contains(rep.Files[0].Reason, "--evolve add-columns") {
		t.Fatalf("report %+v, %v; want the file quarantined", rep, err)
	}
}

// TestSchemaConflictInOneCommit: two files decoded at once against the same
// schema each add a column; both take the same new field id, so the second
// does not fit the commit. It is prepared again against the schema the
// first one committed and loaded under the next id, within the same run.
func TestSchemaConflictInOneCommit(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gw/0.csv", []byte("time,device_id,v\n2026-01-05T10:00:00Z,d1,1\n"))
	if _, err := ingest.Run(ctx, e.config()); err != nil {
		t.Fatal(err)
	}
	e.put(t, "gw/1.csv", []byte("time,device_id,v,battery\n2026-01-05T10:01:00Z,d1,1,80.5\n"))
	e.put(t, "gw/2.csv", []byte("time,device_id,v,rssi\n2026-01-05T10:02:00Z,d1,1,-70\n"))
	cfg := e.config()
	cfg.Evolve, cfg.Parallel, cfg.FilesPerCommit, cfg.CommitWait = decode.EvolveAddColumns, 2, 2, 10*time.Second
	var log bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	rep, err := ingest.Run(ctx, cfg)
	if err != nil || rep.Loaded != 2 {
		t.Fatalf("report %+v, %v; want both loaded", rep, err)
	}
	if !strings.Contains(log.String(), "preparing it again") {
		t.Errorf("no file was prepared again; log:\n%s", log.String())
	}
	// Which file's column comes first depends on which was ready first.
	got := columnsOf(t, e)
	if got != "time timestamptz, device_id string, v long, battery double, rssi long" &&
		got != "time timestamptz, device_id string, v long, rssi long, battery double" {
		t.Errorf("columns %s", got)
	}
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, f := range tbl.Metadata().CurrentSchema().Fields() {
		ids[f.Name] = f.ID
	}
	if ids["battery"]+ids["rssi"] != 9 || ids["battery"] < 4 || ids["rssi"] < 4 {
		t.Errorf("field ids %v, want 4 and 5 for the new columns", ids)
	}
	for _, f := range rep.Files {
		if len(f.SchemaChanges) != 1 {
			t.Errorf("%s: schema changes %v", f.Key, f.SchemaChanges)
		}
	}
	at, err := tbl.Iceberg().Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 3 {
		t.Errorf("%d rows, want 3", at.NumRows())
	}
}

// TestColumnTypesAndDialect: the first file's whole numbers make a double
// column with --column, so later fractions load; a German export loads
// exactly with --csv-delimiter ; and --csv-decimal-comma, NA as null with
// --csv-null.
func TestColumnTypesAndDialect(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	cfg := e.config()
	cfg.Columns = map[string]arrow.DataType{"temperature_c": arrow.PrimitiveTypes.Float64}
	e.put(t, "gw/1.csv", []byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,d1,22\n"))
	if _, err := ingest.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e.put(t, "gw/2.csv", []byte("time,device_id,temperature_c\n2026-01-05T10:01:00Z,d1,22.5\n"))
	e.put(t, "gw/3.csv", []byte("time;device_id;temperature_c\n2026-01-05T10:02:00Z;d1;-3,25\n2026-01-05T10:03:00Z;d1;NA\n"))
	cfg = e.config()
	if rep, err := ingest.Run(ctx, cfg); err != nil || rep.Loaded != 1 || rep.Quarantined != 1 {
		t.Fatalf("report %+v, %v; want gw/2 loaded and gw/3 quarantined", rep, err)
	}
	b := &landing.Bucket{Store: e.landing}
	rejected, err := b.Rejected(ctx)
	if err != nil || len(rejected) != 1 {
		t.Fatalf("rejected %+v, %v", rejected, err)
	}
	if _, err := b.Requeue(ctx, rejected[0], ""); err != nil {
		t.Fatal(err)
	}
	cfg.CSV = decode.CSV{Delimiter: ';', DecimalComma: true, Null: []string{"NA"}}
	if rep, err := ingest.Run(ctx, cfg); err != nil || rep.Loaded != 1 || rep.Rows != 2 {
		t.Fatalf("report %+v, %v; want gw/3 loaded", rep, err)
	}
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Iceberg().Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rr := array.NewTableReader(at, 0)
	defer rr.Release()
	var temps []string
	for rr.Next() {
		c := rr.RecordBatch().Column(2)
		for i := range c.Len() {
			temps = append(temps, c.ValueStr(i))
		}
	}
	slices.Sort(temps)
	if want := []string{"(null)", "-3.25", "22", "22.5"}; !slices.Equal(temps, want) {
		t.Errorf("temperatures %v, want %v", temps, want)
	}
}
