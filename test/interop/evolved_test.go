package interop

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
)

// TestEvolvedTableReadByIndependentReaders: a table whose schema a landing
// file changed (ingest --evolve add-columns adds battery_v and status,
// typed by --column: status is empty in every row of the file) is read by icebird (the whole table, through its
// metadata) and by DuckDB (each data file: field ids, bounds, rows): the
// rows loaded before the change come back with the new columns null, the
// others with their values. Then compaction rewrites old and new files
// together, and the readers agree again.
func TestEvolvedTableReadByIndependentReaders(t *testing.T) {
	for wname, open := range map[string]func(*testing.T) warehouse{"local": localWarehouse, "s3": s3Warehouse} {
		t.Run(wname, func(t *testing.T) {
			ctx := context.Background()
			w := open(t)
			name := lake.TableName{Namespace: "iot", Name: "evolved"}
			base := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
			run := func(key, body string, evolve decode.Evolution, columns map[string]arrow.DataType) *ingest.Report {
				t.Helper()
				if _, err := w.landing.Put(ctx, key, bytes.NewReader([]byte(body)), storage.PutOptions{}); err != nil {
					t.Fatal(err)
				}
				rep, err := ingest.Run(ctx, ingest.Config{Landing: w.landing, Lake: w.lake, Table: name, SeriesKey: []string{"device_id"},
					Evolve: evolve, Columns: columns, Logger: quiet, WorkDir: t.TempDir(), SettleTime: -1, OpenEndSettleTime: -1})
				if err != nil || rep.Loaded != 1 {
					t.Fatalf("ingest %s: %+v, %v", key, rep, err)
				}
				return rep
			}
			var want []Row
			var old, late strings.Builder
			old.WriteString("time,device_id,temperature_c\n")
			late.WriteString("time,device_id,temperature_c,battery_v,status\n")
			for i := range 6 {
				ts := base.Add(time.Duration(i) * time.Minute)
				dev := fmt.Sprintf("d%d", i%2)
				fmt.Fprintf(&old, "%s,%s,%d.5\n", ts.Format(time.RFC3339), dev, 20+i)
				want = append(want, Row{ts.UnixMicro(), dev, float64(20+i) + 0.5, nil, nil})
				ts = ts.Add(time.Hour)
				// status is empty in every row: a page of only nulls, no
				// values (read by every reader whatever the codec).
				fmt.Fprintf(&late, "%s,%s,%d.25,%d,\n", ts.Format(time.RFC3339), dev, 30+i, 3+i%2)
				var status any
				want = append(want, Row{ts.UnixMicro(), dev, float64(30+i) + 0.25, float64(3 + i%2), status})
			}
			run("gw/1.csv", old.String(), "", nil)
			rep := run("gw/2.csv", late.String(), decode.EvolveAddColumns, map[string]arrow.DataType{"battery_v": arrow.PrimitiveTypes.Float64, "status": arrow.BinaryTypes.String})
			if got := strings.Join(rep.Files[0].SchemaChanges, ", "); got != `added "battery_v" double, added "status" string` {
				t.Errorf("schema changes %q", got)
			}
			tbl, err := w.lake.LoadTable(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			cols := ColumnsOf(tbl.Metadata().CurrentSchema())
			if got := fmt.Sprint(cols); got != "[{1 time timestamptz true} {2 device_id string false} {3 temperature_c double false} {4 battery_v double false} {5 status string false}]" {
				t.Fatalf("columns %s", got)
			}
			readBack(t, w, tbl, cols, want, true)

			// Compaction reads the old files projected to the new schema.
			res, err := tbl.Compact(ctx, lake.CompactOptions{MinFiles: 2, ColdAfter: time.Nanosecond, TargetFileSize: 64 << 20})
			if err != nil || res.SnapshotID == 0 {
				t.Fatalf("compact: %+v, %v", res, err)
			}
			readBack(t, w, tbl, cols, want, false)
		})
	}
}

// readBack reads tbl with iceberg-go, icebird and DuckDB and compares each
// with want. oldFiles says whether some data files predate the new columns
// (and must lack them).
func readBack(t *testing.T, w warehouse, tbl *lake.Table, cols []Column, want []Row, oldFiles bool) {
	t.Helper()
	ctx := context.Background()
	if err := CompareRows(cols, scanRows(t, tbl, cols), want, 1); err != nil {
		t.Errorf("iceberg-go: %v", err)
	}

	ib := icebirdHarness(t, w.proxy)
	got, err := ib.Read(ctx, tbl.Location())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Columns, cols) {
		t.Errorf("icebird schema %+v, want %+v", got.Columns, cols)
	}
	ibRows, err := got.Rows()
	if err != nil {
		t.Fatal(err)
	}
	if err := CompareRows(cols, ibRows, want, 1000); err != nil {
		t.Errorf("icebird: %v", err)
	}

	db := duckDB(t)
	tasks, err := tbl.Iceberg().Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	contract := tbl.Contract()
	sortKeys := append(slices.Clone(contract.SeriesKey), contract.TimeColumn)
	rules := Rules{TimeColumn: contract.TimeColumn, Codec: "ZSTD", RequireBounds: sortKeys}
	var duck []Row
	without := 0
	for _, task := range tasks {
		local, err := LocalFile(ctx, w.s3, task.File.FilePath(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		facts, err := ReadFileFacts(ctx, db, local, cols, sortKeys)
		if err != nil {
			t.Fatal(err)
		}
		// A file written before the change has the columns of its time;
		// each column it has carries the table's field id.
		var present []Column
		for _, c := range cols {
			if _, ok := facts.DuckTypes[c.Name]; ok {
				present = append(present, c)
			}
		}
		if len(present) < len(cols) {
			without++
		}
		e, err := EntryFromDataFile(task.File, cols)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckFile(facts, e, present, rules); err != nil {
			t.Errorf("DuckDB: %v", err)
		}
		rows, err := sourceParquet(ctx, db, local, cols)
		if err != nil {
			t.Fatal(err)
		}
		duck = append(duck, rows...)
	}
	if err := CompareRows(cols, duck, want, 1); err != nil {
		t.Errorf("DuckDB: %v", err)
	}
	if (without > 0) != oldFiles {
		t.Errorf("%d of %d data files lack the new columns; want some: %v", without, len(tasks), oldFiles)
	}
}
