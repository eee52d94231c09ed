package interop

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/corpus"
)

// TestCorpusThroughIngest loads every file of the decoder's regression
// corpus (internal/decode/testdata/corpus) with the ingest engine, into a
// table of its own (created ahead from the case's columns, or from the
// file), and reads the table back with icebird, DuckDB and iceberg-go. An
// accepted file must come back with exactly the rows written by hand in
// manifest.json (so no value changed on the way, whatever timelake's
// decoder thinks); a refused file must be quarantined (or, when it was to
// create the table, fail the run) with a reason that names what the case is
// about, leaving no snapshot and no data file behind.
func TestCorpusThroughIngest(t *testing.T) {
	cases, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	ib := icebirdHarness(t, "")
	db := duckDB(t)
	for _, c := range cases {
		t.Run(c.File, func(t *testing.T) {
			t.Parallel() // most of the time goes to starting node for icebird
			ctx := context.Background()
			w := localWarehouse(t)
			name := lake.TableName{Namespace: "corpus", Name: "t"}
			loc, err := c.Location()
			if err != nil {
				t.Fatal(err)
			}
			if c.Table != nil {
				if _, err := w.lake.CreateTable(ctx, name, arrowSchema(t, c),
					lake.CreateSpec{TimeColumn: c.Time(), SeriesKey: c.SeriesKey, Partition: lake.Day}); err != nil {
					t.Fatal(err)
				}
			}
			body, err := os.ReadFile(c.Path())
			if err != nil {
				t.Fatal(err)
			}
			key := "corpus/" + c.File
			if _, err := w.landing.Put(ctx, key, bytes.NewReader(body), storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			types, err := c.Types()
			if err != nil {
				t.Fatal(err)
			}
			rep, runErr := ingest.Run(ctx, ingest.Config{Landing: w.landing, Lake: w.lake, Table: name,
				TimeColumn: c.TimeColumn, TimeUnit: c.TimeUnit, AssumeLocation: loc, SeriesKey: c.SeriesKey,
				CSV:     decode.CSV{Delimiter: c.Delimiter(), DecimalComma: c.CSVDecimalComma, Null: c.CSVNull},
				Columns: types, Evolve: decode.Evolution(c.Evolve),
				Logger: quiet, WorkDir: t.TempDir(), SettleTime: -1, OpenEndSettleTime: -1})
			if c.Refused != nil {
				checkIngestRefusal(t, c, w, name, rep, runErr)
				return
			}
			if runErr != nil || rep.Loaded != 1 || rep.Rows != int64(len(c.Rows)) {
				t.Fatalf("ingest: %+v, %v; want 1 file loaded with %d rows", rep, runErr, len(c.Rows))
			}
			if got := rep.Files[0].DuplicateRows; got != c.DuplicateRows {
				t.Errorf("report: %d duplicate rows, want %d", got, c.DuplicateRows)
			}
			tbl, err := w.lake.LoadTable(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if b, ok := tbl.FindBatch(key); !ok || b.Rows != int64(len(c.Rows)) {
				t.Fatalf("batch %s: %+v, %v", key, b, ok)
			}
			cols := ColumnsOf(tbl.Metadata().CurrentSchema())
			wantSpec := c.Columns
			if wantSpec == nil {
				wantSpec = c.Table
			}
			want := expectedRows(t, cols, wantSpec, c.Rows)

			if err := CompareRows(cols, scanRows(t, tbl, cols), want, 1); err != nil {
				t.Errorf("iceberg-go: %v", err)
			}

			got, err := ib.Read(ctx, tbl.Location())
			if err != nil {
				t.Fatal(err)
			}
			ibRows, err := got.Rows()
			if err != nil {
				t.Fatal(err)
			}
			if err := CompareRows(cols, ibRows, want, 1000); err != nil {
				t.Errorf("icebird: %v", err)
			}

			tasks, err := tbl.Iceberg().Scan().PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var duck []Row
			for _, task := range tasks {
				p, err := LocalFile(ctx, nil, task.File.FilePath(), t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				rows, err := sourceParquet(ctx, db, p, cols)
				if err != nil {
					t.Fatal(err)
				}
				duck = append(duck, rows...)
			}
			if err := CompareRows(cols, duck, want, 1); err != nil {
				t.Errorf("DuckDB: %v", err)
			}
		})
	}
}

// checkIngestRefusal: the file is quarantined (the table existing) or the
// run fails without creating the table, with a reason naming what the case
// is about; no snapshot and no data file remain.
func checkIngestRefusal(t *testing.T, c corpus.Case, w warehouse, name lake.TableName, rep *ingest.Report, runErr error) {
	t.Helper()
	ctx := context.Background()
	var reason string
	if c.Table != nil {
		if runErr != nil || rep.Quarantined != 1 || rep.Loaded != 0 {
			t.Fatalf("ingest: %+v, %v; want the file quarantined", rep, runErr)
		}
		reason = rep.Files[0].Reason
		tbl, err := w.lake.LoadTable(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if s := tbl.Metadata().CurrentSnapshot(); s != nil {
			t.Errorf("the refused file left snapshot %d", s.SnapshotID)
		}
		objs, err := dataObjects(ctx, w, tbl.Location())
		if err != nil || len(objs) != 0 {
			t.Errorf("data files left behind: %v, %v", objs, err)
		}
	} else {
		switch {
		case runErr == nil && (strings.HasSuffix(c.File, ".parquet") || strings.Contains(c.File, ".json")):
			// A file no setting can make readable (a broken Parquet file,
			// JSON that is not UTF-8) is quarantined at once, even before
			// the table exists.
			if rep.Quarantined != 1 || rep.Loaded != 0 {
				t.Fatalf("ingest: %+v; want the unreadable file quarantined", rep)
			}
			reason = rep.Files[0].Reason
		case !errors.Is(runErr, ingest.ErrCannotCreate):
			t.Fatalf("ingest: %+v, %v; want %v", rep, runErr, ingest.ErrCannotCreate)
		default:
			reason = runErr.Error()
		}
		if _, err := w.lake.LoadTable(ctx, name); !errors.Is(err, lake.ErrTableNotFound) {
			t.Errorf("a table was created: %v", err)
		}
	}
	for _, k := range c.Refused.Keywords {
		if !strings.Contains(strings.ToLower(reason), strings.ToLower(k)) {
			t.Errorf("reason %q does not say %q (%s)", reason, k, c.About)
		}
	}
}

// arrowSchema is the Arrow schema of a case's table columns.
func arrowSchema(t *testing.T, c corpus.Case) *arrow.Schema {
	t.Helper()
	isc, err := c.IcebergSchema()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(isc, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// expectedRows turns the manifest's rows (text, in the order of spec's
// columns) into canonical rows of the table's columns, checking that the
// table has exactly those columns.
func expectedRows(t *testing.T, cols []Column, spec []string, rows [][]*string) []Row {
	t.Helper()
	want, err := corpus.ParseColumns(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(cols) {
		t.Fatalf("table columns %+v, want %v", cols, spec)
	}
	for i, w := range want {
		if cols[i].Name != w.Name || cols[i].Type != w.Type || cols[i].Required != w.Required {
			t.Fatalf("table column %d is %+v, want %q", i, cols[i], spec[i])
		}
	}
	out := make([]Row, len(rows))
	for r, vals := range rows {
		row := make(Row, len(cols))
		for i, v := range vals {
			if v == nil {
				continue
			}
			var err error
			if row[i], err = parseText(*v, cols[i].Type); err != nil {
				t.Fatalf("manifest row %d column %s: %v", r+1, cols[i].Name, err)
			}
		}
		out[r] = row
	}
	return out
}
