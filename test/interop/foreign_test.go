package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
)

// foreignTable is what icebird/make-foreign-table.mjs prints.
type foreignTable struct {
	Location string   `json:"location"`
	Columns  []Column `json:"columns"`
	RawRows  [][]any  `json:"rows"`
}

// makeForeignTable has make-foreign-table.mjs write a table (hyparquet-writer
// Parquet, hand-written Avro manifests and metadata JSON) into dir, and
// returns it with its rows.
func makeForeignTable(t *testing.T, ib Icebird, dir string, args ...string) (*foreignTable, []Row) {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "node", append([]string{"make-foreign-table.mjs", dir}, args...)...)
	cmd.Dir = ib.Dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("make-foreign-table.mjs: %v\n%s", err, errOut.String())
	}
	dec := json.NewDecoder(&out)
	dec.UseNumber()
	var ft foreignTable
	if err := dec.Decode(&ft); err != nil {
		t.Fatal(err)
	}
	rows := make([]Row, len(ft.RawRows))
	for i, raw := range ft.RawRows {
		rows[i] = make(Row, len(raw))
		for j, v := range raw {
			var err error
			if rows[i][j], err = icebirdValue(v, ft.Columns[j].Type); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &ft, rows
}

var foreignName = lake.TableName{Namespace: "iot", Name: "foreign"}

// TestAppendToForeignTable has timelake's ingest engine append the example
// files to a table that another writer made (make-foreign-table.mjs:
// unpartitioned, unsorted, Snappy, its own field ids, an extra column, no
// timelake.time-column, an unknown timelake.* property), empty or with a
// snapshot. The table keeps its schema, spec, sort order, properties and
// history, and icebird, iceberg-go and DuckDB read old and new rows.
func TestAppendToForeignTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"empty", []string{"--empty"}},
		{"with-snapshot", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ib := icebirdHarness(t, "")
			w := localWarehouse(t)
			ft, before := makeForeignTable(t, ib, filepath.Join(w.lake.URI(), foreignName.Namespace, foreignName.Name), tc.args...)

			tbl, err := w.lake.LoadTable(ctx, foreignName)
			if err != nil {
				t.Fatal(err)
			}
			if tbl.Location() != ft.Location {
				t.Fatalf("location %s, the writer used %s", tbl.Location(), ft.Location)
			}
			if c := tbl.Contract(); c.TimeColumn != "time" {
				t.Fatalf("contract %+v: want the first timestamptz column, time", c)
			}
			metaBefore := tbl.Metadata()
			var foreignSnapshot int64
			if s := metaBefore.CurrentSnapshot(); s != nil {
				foreignSnapshot = s.SnapshotID
				// iceberg-go reads the hand-made manifests and hyparquet's file.
				at, err := tbl.Iceberg().Scan().ToArrowTable(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ArrowRows(at, ft.Columns)
				at.Release()
				if err != nil {
					t.Fatal(err)
				}
				if err := CompareRows(ft.Columns, got, before, 1); err != nil {
					t.Fatalf("iceberg-go reading the foreign table: %v", err)
				}
			}

			rep := ingestExamples(t, w, foreignName, lake.Day)
			if rep.Created != nil {
				t.Fatalf("ingest created a table: %+v", rep.Created)
			}
			if err := tbl.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			meta := tbl.Metadata()
			for k, v := range metaBefore.Properties() {
				if got, ok := meta.Properties()[k]; !ok || got != v {
					t.Errorf("property %s = %q (present %v), was %q", k, got, ok, v)
				}
			}
			if cols := ColumnsOf(meta.CurrentSchema()); !slices.Equal(cols, ft.Columns) {
				t.Errorf("schema now %+v, was %+v", cols, ft.Columns)
			}
			if !meta.PartitionSpec().Equals(metaBefore.PartitionSpec()) || !meta.SortOrder().Equals(metaBefore.SortOrder()) {
				t.Errorf("spec or sort order changed: %s %s", meta.PartitionSpec(), meta.SortOrder())
			}
			if foreignSnapshot != 0 && !lake.InCurrentAncestry(meta)[foreignSnapshot] {
				t.Errorf("the foreign snapshot %d left the ancestry", foreignSnapshot)
			}

			source, err := SourceDir(ctx, duckDB(t), examplesDir, ft.Columns)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Concat(before, source)

			at, err := tbl.Iceberg().Scan().ToArrowTable(ctx)
			if err != nil {
				t.Fatal(err)
			}
			scanned, err := ArrowRows(at, ft.Columns)
			at.Release()
			if err != nil {
				t.Fatal(err)
			}
			if err := CompareRows(ft.Columns, scanned, want, 1); err != nil {
				t.Errorf("iceberg-go after the append: %v", err)
			}
			got, err := ib.Read(ctx, tbl.Location())
			if err != nil {
				t.Fatal(err)
			}
			rows, err := got.Rows()
			if err != nil {
				t.Fatal(err)
			}
			if err := CompareRows(ft.Columns, rows, want, 1000); err != nil {
				t.Errorf("icebird after the append: %v", err)
			}

			// DuckDB on every data file, ours and the foreign one: the
			// table's codec (snappy, from its properties), time type, field
			// ids, bounds, sorted by time.
			tasks, err := tbl.Iceberg().Scan().PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			db := duckDB(t)
			rules := Rules{TimeColumn: "time", Codec: "SNAPPY", RequireBounds: []string{"time"}}
			for _, task := range tasks {
				e, err := EntryFromDataFile(task.File, ft.Columns)
				if err != nil {
					t.Fatal(err)
				}
				facts, err := ReadFileFacts(ctx, db, strings.TrimPrefix(task.File.FilePath(), "file://"), ft.Columns, []string{"time"})
				if err != nil {
					t.Fatal(err)
				}
				if err := CheckFile(facts, e, ft.Columns, rules); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestIngestRefusesNewerTimelakeFormat: a table whose timelake.format-version
// has a newer major version than timelake writes is refused by the ingest
// run, which changes nothing: the landing files stay, no file is written.
func TestIngestRefusesNewerTimelakeFormat(t *testing.T) {
	ctx := context.Background()
	ib := icebirdHarness(t, "")
	w := localWarehouse(t)
	dir := filepath.Join(w.lake.URI(), foreignName.Namespace, foreignName.Name)
	makeForeignTable(t, ib, dir, "--timelake-format-version", "2.1.0")
	filesBefore := treeOf(t, dir)
	putExamples(t, w.landing)
	_, err := ingest.Run(ctx, ingest.Config{Landing: w.landing, Lake: w.lake, Table: foreignName, Logger: quiet, WorkDir: t.TempDir()})
	if !errors.Is(err, lake.ErrUnsupportedFormat) {
		t.Fatalf("ingest: %v, want ErrUnsupportedFormat", err)
	}
	if after := treeOf(t, dir); !slices.Equal(after, filesBefore) {
		t.Errorf("table files changed: %v -> %v", filesBefore, after)
	}
	m, err := filepath.Glob(filepath.Join(w.landing.URI(), "*", "*"))
	if err != nil || len(m) != 7 {
		t.Errorf("landing holds %v (%v), want the 7 files untouched", m, err)
	}
}

func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
