package interop

import (
	"context"
	"encoding/json"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
)

// The recipes of docs/query.md that can run here (no JVM, no DuckDB
// extension download, no PyPI): a reader given the metadata file `timelake
// tables show` prints, the trap of a glob over data/ after compaction, and
// the version hint that a reader without a catalog starts from.

// tablesShow runs `timelake tables show NAME --json` on the warehouse at
// uri (catalog-free) and returns its metadata_location.
func tablesShow(t *testing.T, uri string, n lake.TableName) string {
	t.Helper()
	var d struct {
		MetadataLocation string `json:"metadata_location"`
	}
	runTimelake(t, map[string]string{"TIMELAKE_WAREHOUSE": uri}, &d, "tables", "show", n.String(), "--json")
	return d.MetadataLocation
}

// runTimelake runs the timelake CLI in the environment env (its only
// variables), failing the test unless it exits 0, and decodes its stdout
// (one JSON document) into out.
func runTimelake(t *testing.T, env map[string]string, out any, args ...string) {
	t.Helper()
	ios, stdout, stderr := iostreams.Test()
	code := commands.Execute(context.Background(), args, ios,
		func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if code != 0 {
		t.Fatalf("timelake %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("timelake %s: %v\n%s", strings.Join(args, " "), err, stdout)
	}
}

// TestQueryRecipes: docs/query.md's runnable recipes.
func TestQueryRecipes(t *testing.T) {
	ctx := context.Background()

	// "The metadata file": the URI tables show prints is what a reader that
	// takes one reads, with every row.
	t.Run("metadata file from tables show", func(t *testing.T) {
		dir := t.TempDir()
		w := localWarehouseAt(t, dir)
		ingestExamples(t, w, readings, lake.Day)
		loc := tablesShow(t, dir, readings)
		tbl, err := w.lake.LoadTable(ctx, readings)
		if err != nil {
			t.Fatal(err)
		}
		if loc != tbl.MetadataLocation() {
			t.Fatalf("tables show prints %s, the current metadata file is %s", loc, tbl.MetadataLocation())
		}
		cols := ColumnsOf(tbl.Metadata().CurrentSchema())
		want, err := SourceDir(ctx, duckDB(t), examplesDir, cols)
		if err != nil {
			t.Fatal(err)
		}
		got, err := icebirdHarness(t, "").ReadAt(ctx, tbl.Location(), path.Base(loc))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := got.Rows()
		if err != nil {
			t.Fatal(err)
		}
		if err := CompareRows(cols, rows, want, 1000); err != nil {
			t.Errorf("icebird given %s: %v", loc, err)
		}
	})

	// "Never glob data/": after compaction, before the replaced files
	// expire, a glob over data/ counts rows twice; the files of the current
	// snapshot (what every Iceberg reader reads) count them once.
	t.Run("glob over data counts replaced files", func(t *testing.T) {
		s := maintainedSubject(localWarehouse, false)(t)
		tbl, err := s.w.lake.LoadTable(ctx, s.name)
		if err != nil {
			t.Fatal(err)
		}
		cols := ColumnsOf(tbl.Metadata().CurrentSchema())
		want := len(s.want(t, cols))
		db := duckDB(t)
		var globbed int
		glob := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "**", "*.parquet")
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM read_parquet("+quoteString(glob)+")").Scan(&globbed); err != nil {
			t.Fatal(err)
		}
		if globbed <= want {
			t.Fatalf("a glob over data/ counts %d rows of a table of %d: the compaction left no replaced file to show the trap", globbed, want)
		}
		if n := len(scanRows(t, tbl, cols)); n != want {
			t.Fatalf("the table's own files hold %d rows, want %d", n, want)
		}
		t.Logf("glob over data/: %d rows; the table: %d", globbed, want)
	})

	// "The version hint": after more than nine commits the lexically largest
	// vN.metadata.json is not the newest; the hint names the newest.
	t.Run("version hint past v9", func(t *testing.T) {
		dir := t.TempDir()
		w := localWarehouseAt(t, dir)
		tbl, err := w.lake.CreateTable(ctx, readings, genSchema,
			lake.CreateSpec{TimeColumn: "time", SeriesKey: []string{"device"}, Partition: lake.Day})
		if err != nil {
			t.Fatal(err)
		}
		if err := tbl.SetProperties(ctx, map[string]string{"write.metadata.previous-versions-max": "20"}, nil); err != nil {
			t.Fatal(err)
		}
		for b := range 11 {
			appendRows(t, tbl, "gen/"+string(rune('a'+b)), genRows(b, 5, 1, genStart), lake.AppendOptions{})
		}
		names, err := filepath.Glob(filepath.Join(dir, "iot", "readings", "metadata", "v*.metadata.json"))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		if last := filepath.Base(names[len(names)-1]); last != "v9.metadata.json" {
			t.Fatalf("the lexically largest metadata file is %s", last)
		}
		got, err := icebirdHarness(t, "").Read(ctx, tbl.Location())
		if err != nil {
			t.Fatal(err)
		}
		if want := path.Base(tbl.MetadataLocation()); got.MetadataFile != want || want == "v9.metadata.json" {
			t.Fatalf("icebird started from %s (the version hint), the newest is %s", got.MetadataFile, want)
		}
	})
}
