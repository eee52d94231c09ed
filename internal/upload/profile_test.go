package upload

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/profile"
	"github.com/timelake/timelake/internal/storage"
)

// berlinTable is a table whose source profile berlin reads German Excel
// exports (;, decimal commas, a time column named Zeit) below
// site-berlin/.
func berlinTable(t *testing.T) *lake.Table {
	t.Helper()
	ctx := context.Background()
	l, err := lake.Open(ctx, t.TempDir(), lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "device_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "temperature_c", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	tbl, err := l.CreateTable(ctx, lake.TableName{Namespace: "iot", Name: "readings"}, sc,
		lake.CreateSpec{TimeColumn: "time", SeriesKey: []string{"device_id"}, Partition: lake.Day})
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.SetProperties(ctx, map[string]string{
		"timelake.profile.berlin.match":             "site-berlin/",
		"timelake.profile.berlin.csv-delimiter":     ";",
		"timelake.profile.berlin.csv-decimal-comma": "true",
		"timelake.profile.berlin.time-column":       "Zeit",
	}, nil); err != nil {
		t.Fatal(err)
	}
	return tbl
}

func TestValidateWithTheTablesProfiles(t *testing.T) {
	tbl := berlinTable(t)
	set, err := profile.FromProperties(tbl.Properties())
	if err != nil {
		t.Fatal(err)
	}
	rules := &Rules{Target: tbl.ArrowSchema(), TimeColumn: "time", Profiles: set, Properties: tbl.Properties()}
	dir := t.TempDir()
	german := writeFile(t, filepath.Join(dir, "export.csv"), "Zeit;device_id;temperature_c\n2026-01-05T10:00:00Z;b1;21,5\n", t0)
	typo := writeFile(t, filepath.Join(dir, "typo.csv"), "time,device_id,temperature_c\n2026-01-05T10:00:00Z,p1,warm\n", t0)
	s, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	up := func(prefix, file string, r *Rules) (*Report, error) {
		return Run(t.Context(), Config{Store: s, Files: []string{file}, Gateway: "gw-1", Prefix: prefix, Validate: true, Rules: r})
	}
	// The German export loads below site-berlin/ and is refused elsewhere,
	// as the poller would read it.
	if rep, err := up("site-berlin", german, rules); err != nil || rep.Uploaded != 1 {
		t.Fatalf("berlin: %+v %v", rep, err)
	}
	if _, err := up("site-paris", german, rules); err == nil || !strings.Contains(err.Error(), "give --csv-delimiter") {
		t.Fatalf("paris: %v", err)
	}
	// With the table's schema, a type error is caught at the gateway
	// (without it, "warm" only makes a string column).
	if _, err := up("site-paris", typo, rules); err == nil || !strings.Contains(err.Error(), `cannot parse "warm" as double`) {
		t.Fatalf("the type error: %v", err)
	}
	if rep, err := up("site-paris", typo, nil); err != nil || rep.Uploaded != 1 {
		t.Fatalf("without the table: %+v %v", rep, err)
	}

	// Exported to a file: the same rules without the warehouse, and a key
	// the profile does not match is refused.
	schema, err := json.Marshal(tbl.Metadata().CurrentSchema())
	if err != nil {
		t.Fatal(err)
	}
	exp, err := profile.NewExport("iot.readings", tbl.Properties(), schema, "time", "berlin", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(exp)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "berlin.json")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	e, p, target, err := profile.ReadExport(path)
	if err != nil {
		t.Fatal(err)
	}
	exported := &Rules{Target: target, TimeColumn: e.TimeColumn, Exported: p}
	german2 := writeFile(t, filepath.Join(dir, "export2.csv"), "Zeit;device_id;temperature_c\n2026-01-05T11:00:00Z;b1;22,5\n", t0)
	if rep, err := up("site-berlin", german2, exported); err != nil || rep.Uploaded != 1 {
		t.Fatalf("exported: %+v %v", rep, err)
	}
	if _, err := up("site-munich", german2, exported); err == nil || !strings.Contains(err.Error(), "is not one source profile berlin applies to") {
		t.Fatalf("a key the profile does not match: %v", err)
	}
}

// TestValidateReportsRowsSetAside: under --on-error skip-rows a file whose
// bad rows ingest would set aside is uploaded, and its result says which
// rows (CSV and JSON Lines alike).
func TestValidateReportsRowsSetAside(t *testing.T) {
	tbl := berlinTable(t)
	rules := &Rules{Target: tbl.ArrowSchema(), TimeColumn: "time", Properties: tbl.Properties()}
	dir := t.TempDir()
	var csvText, jsonText strings.Builder
	csvText.WriteString("time,device_id,temperature_c\n")
	for i := range 30 {
		temp := fmt.Sprintf("%d.5", 20+i%5)
		if i == 16 {
			temp = "warm"
		}
		fmt.Fprintf(&csvText, "2026-01-05T10:%02d:00Z,p1,%s\n", i, temp)
		if i == 16 {
			temp = `"warm"`
		}
		fmt.Fprintf(&jsonText, `{"time":"2026-01-05T10:%02d:00Z","device_id":"p1","temperature_c":%s}`+"\n", i, temp)
	}
	s, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"r.csv", "r.jsonl"} {
		text := csvText.String()
		if strings.HasSuffix(name, ".jsonl") {
			text = jsonText.String()
		}
		file := writeFile(t, filepath.Join(dir, name), text, t0)
		cfg := Config{Store: s, Files: []string{file}, Gateway: "gw-1", Validate: true, Rules: rules,
			ValidateOptions: ValidateOptions{OnError: decode.OnErrorSkipRows}}
		rep, err := Run(t.Context(), cfg)
		if err != nil || rep.Uploaded != 1 {
			t.Fatalf("%s: %+v %v", name, rep, err)
		}
		r := rep.Files[0]
		if r.RowsSetAside != 1 || len(r.SetAside) != 1 || r.SetAside[0].Row != 17 || r.SetAside[0].Column != "temperature_c" {
			t.Errorf("%s: rows set aside %d %+v, want row 17's temperature_c", name, r.RowsSetAside, r.SetAside)
		}
		if len(r.SetAside) == 1 && !strings.Contains(r.SetAside[0].Reason, `cannot parse "warm" as double`) {
			t.Errorf("%s: reason %q", name, r.SetAside[0].Reason)
		}
		// Without skip-rows the file is refused.
		cfg.ValidateOptions.OnError = decode.OnErrorFile
		if _, err := Run(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "warm") {
			t.Errorf("%s without skip-rows: %v", name, err)
		}
	}
}

// TestStaleExportNamed: a column the exported schema lacks is refused
// naming the profile file and when it was exported (the table may have
// gained the column since); without an export the reason is as before.
func TestStaleExportNamed(t *testing.T) {
	tbl := berlinTable(t)
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "new.csv"), "time,device_id,temperature_c,meta_fw\n2026-01-05T10:00:00Z,p1,21.5,1.2\n", t0)
	s, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"gw.json at 2026-01-05T09:00:00Z", ""} {
		rules := &Rules{Target: tbl.ArrowSchema(), TimeColumn: "time", Properties: tbl.Properties(), ExportedFrom: from}
		_, err := Run(t.Context(), Config{Store: s, Files: []string{file}, Gateway: "gw-1", Validate: true, Rules: rules})
		hint := "the table's schema here is the one exported to gw.json at 2026-01-05T09:00:00Z: if the table has changed since"
		if err == nil || !strings.Contains(err.Error(), "not in the table schema") || strings.Contains(err.Error(), hint) != (from != "") {
			t.Errorf("exported from %q: %v", from, err)
		}
	}
}
