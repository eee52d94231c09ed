package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// TestFileOverTooManyPartitionsIsQuarantined: a file whose rows fall on
// more days than the table's timelake.max-file-partitions is quarantined
// as a setting's refusal, before it writes a data file; the run's other
// files load; under the limit (the default's, or the table's raised) it
// loads.
func TestFileOverTooManyPartitionsIsQuarantined(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gateway-1/00-good.csv", csvFile(readings(1, 0, 10), false, false))
	if _, err := ingest.Run(ctx, e.config()); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropMaxFilePartitions: "5"}, nil); err != nil {
		t.Fatal(err)
	}
	// days: a file of one row on each of n days.
	days := func(n int) []byte {
		var b strings.Builder
		b.WriteString("time,device_id,temperature_c\n")
		for i := range n {
			fmt.Fprintf(&b, "%s,clock,%d\n", time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format(time.RFC3339), i)
		}
		return []byte(b.String())
	}
	e.put(t, "gateway-1/clock.csv", days(6))
	e.put(t, "gateway-1/five-days.csv", days(5))
	rep, err := ingest.Run(ctx, e.config())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loaded != 1 || rep.Quarantined != 1 {
		t.Fatalf("loaded %d, quarantined %d: %+v", rep.Loaded, rep.Quarantined, rep.Files)
	}
	var f ingest.FileResult
	for _, r := range rep.Files {
		if r.Key == "gateway-1/clock.csv" {
			f = r
		}
	}
	if f.Status != ingest.Quarantined || !strings.Contains(f.Reason, "gateway-1/clock.csv") ||
		!strings.Contains(f.Reason, "its rows fall in too many partitions: 6, more than the table's timelake.max-file-partitions (5)") {
		t.Fatalf("clock.csv: %s %q", f.Status, f.Reason)
	}
	raw, _, err := storage.ReadAll(ctx, e.landing, f.QuarantinedTo+".error.json")
	if err != nil {
		t.Fatal(err)
	}
	var r landing.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if r.Kind != landing.KindSetting || !strings.Contains(r.Hint, "timelake tables alter --set timelake.max-file-partitions=N") {
		t.Fatalf("report %+v, want kind setting and a hint naming the property", r)
	}
	if n := len(tableRows(t, e)); n != 10+5 {
		t.Fatalf("%d rows, want the good file's 10 and five-days.csv's 5", n)
	}
	// A file decoded in pieces: the partitions of all its pieces count,
	// and the data files of the pieces written before are deleted.
	var b strings.Builder
	b.WriteString("time,device_id,temperature_c\n")
	for i := range 150_000 { // 49 days, a row every 28.224 s, pieces of 1 MiB
		fmt.Fprintf(&b, "%s,wide-%d,%d.5\n", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i)*28224*time.Millisecond).Format(time.RFC3339Nano), i%7, i)
	}
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropMaxFilePartitions: "34"}, nil); err != nil {
		t.Fatal(err)
	}
	e.put(t, "gateway-1/pieces.csv", []byte(b.String()))
	cfg := e.config()
	cfg.MemoryBudget = smallBudget
	rep, err = ingest.Run(ctx, cfg)
	if err != nil || rep.Quarantined != 1 || rep.Loaded != 0 || !strings.Contains(rep.Files[0].Reason, "its rows fall in too many partitions: 35 in its rows read so far, more than the table's timelake.max-file-partitions (34)") {
		t.Fatalf("a file of 49 days in pieces under a limit of 34: %+v, %v", rep.Files, err)
	}
	if o := dataOrphans(t, e); len(o) > 0 {
		t.Fatalf("data files of the refused file's pieces left behind: %v", o)
	}
	// Its first piece alone over the limit: the count is of the rows read
	// so far too.
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropMaxFilePartitions: "1"}, nil); err != nil {
		t.Fatal(err)
	}
	e.put(t, "gateway-1/pieces-again.csv", []byte(strings.ReplaceAll(b.String(), "wide-", "again-")))
	rep, err = ingest.Run(ctx, cfg)
	if err != nil || rep.Quarantined != 1 || !strings.Contains(rep.Files[0].Reason, " in its rows read so far, more than the table's timelake.max-file-partitions (1)") {
		t.Fatalf("a file in pieces whose first piece passes the limit: %+v, %v", rep.Files, err)
	}
	if n := len(tableRows(t, e)); n != 10+5 {
		t.Fatalf("%d rows, want 15", n)
	}

	// Raised, the limit lets the same rows load (a requeue).
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropMaxFilePartitions: "6"}, nil); err != nil {
		t.Fatal(err)
	}
	e.put(t, "gateway-1/clock.csv", days(6))
	if rep, err := ingest.Run(ctx, e.config()); err != nil || rep.Loaded != 1 {
		t.Fatalf("under a raised limit: %+v, %v", rep, err)
	}
	if n := len(tableRows(t, e)); n != 10+5+6 {
		t.Fatalf("%d rows, want 21", n)
	}
}

// TestColumnNamedAsThePartitionField: a new column named as the table's
// partition field (time_day beside day(time)), which Iceberg's Java and
// Rust readers refuse, is refused: the file that would add it is
// quarantined, and no table is created with it.
func TestColumnNamedAsThePartitionField(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gateway-1/00-good.csv", csvFile(readings(1, 0, 10), false, false))
	cfg := e.config()
	cfg.Evolve = "add-columns"
	if _, err := ingest.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e.put(t, "gateway-1/day.csv", []byte("time,device_id,temperature_c,time_day\n2026-01-05T10:00:00Z,d,1,monday\n"))
	e.put(t, "gateway-1/other.csv", []byte("time,device_id,temperature_c,humidity\n2026-01-05T10:00:00Z,d,1,50\n"))
	rep, err := ingest.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loaded != 1 || rep.Quarantined != 1 {
		t.Fatalf("loaded %d, quarantined %d: %+v", rep.Loaded, rep.Quarantined, rep.Files)
	}
	for _, f := range rep.Files {
		if f.Key == "gateway-1/day.csv" && (f.Status != ingest.Quarantined || !strings.Contains(f.Reason, `new column "time_day": the name of one of the table's partition fields`)) {
			t.Fatalf("day.csv: %s %q", f.Status, f.Reason)
		}
	}
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.Metadata().CurrentSchema().FindFieldByName("time_day"); ok {
		t.Fatal("the table has a column time_day")
	}

	// A table is not created with such a column.
	sc := arrow.NewSchema([]arrow.Field{{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "time_day", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	if _, err := e.lake.CreateTable(ctx, lake.TableName{Namespace: "iot", Name: "other"}, sc, lake.CreateSpec{TimeColumn: "time"}); !errors.Is(err, lake.ErrPartitionName) {
		t.Fatalf("create with a column time_day: %v", err)
	}
}
