package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
)

// The memory budget of the tests of large files: files of a few MB are
// larger than it.
const smallBudget = 1 << 20

// oneRowGroupFile writes rows as one Parquet row group, as the large
// exports of other tools are (Snappy, no dictionaries).
func oneRowGroupFile(t *testing.T, rows []reading) []byte {
	t.Helper()
	return parquetRowGroups(t, rows, len(rows),
		parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDictionaryDefault(false)))
}

// days counts the day partitions of rows.
func days(rows []reading) int {
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.t.UTC().Format(time.DateOnly)] = true
	}
	return len(seen)
}

// dataOrphans lists the data files of the table that no snapshot
// references (written and not committed, or not removed).
func dataOrphans(t *testing.T, e env) []string {
	t.Helper()
	tbl, err := e.lake.LoadTable(context.Background(), tableName)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tbl.RemoveOrphans(context.Background(), lake.OrphanOptions{MinAge: time.Nanosecond, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range res.Files {
		if strings.HasPrefix(f, "data/") {
			out = append(out, f)
		}
	}
	return out
}

// TestLargeFilesLoadInPieces: files larger than the memory budget (a
// gzipped CSV that creates the table, a plain CSV cut into parallel
// ranges, a Parquet file of one row group) are decoded and written in
// pieces: every row arrives exactly, one snapshot per file, and a file
// writes more data files than it has day partitions (its pieces meet in
// a day).
func TestLargeFilesLoadInPieces(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e env) {
		ctx := context.Background()
		files := map[string][]reading{
			"gateway-1/a.csv.gz":  readings(1, 0, 40_000),
			"gateway-2/b.csv":     readings(2, 1, 100_000),
			"gateway-3/c.parquet": readings(3, 2, 100_000),
		}
		var want []string
		for key, rows := range files {
			for _, r := range rows {
				want = append(want, r.String())
			}
			switch {
			case strings.HasSuffix(key, ".gz"):
				e.put(t, key, gzipped(t, csvFile(rows, false, false)))
			case strings.HasSuffix(key, ".csv"):
				e.put(t, key, csvFile(rows, false, false))
			default:
				e.put(t, key, oneRowGroupFile(t, rows))
			}
		}
		slices.Sort(want)
		cfg := e.config()
		cfg.MemoryBudget = smallBudget
		rep, err := ingest.Run(ctx, cfg)
		if err != nil || rep.Loaded != 3 || rep.Created == nil {
			t.Fatalf("run: %+v, %v", rep, err)
		}
		for _, f := range rep.Files {
			if f.DataFiles <= days(files[f.Key]) {
				t.Errorf("%s: %d data files for %d day partitions: not written in pieces", f.Key, f.DataFiles, days(files[f.Key]))
			}
		}
		if got := tableRows(t, e); !slices.Equal(got, want) {
			t.Fatalf("table holds %d rows that differ from the %d of the files", len(got), len(want))
		}
		if n := snapshotCount(t, e); n != 3 {
			t.Fatalf("%d snapshots, want one per file", n)
		}
		if o := dataOrphans(t, e); len(o) > 0 {
			t.Fatalf("data files left behind: %v", o)
		}
	})
}

// TestPiecesOfARefusedFileLeaveNothing: a bad value in the last piece of a
// large file quarantines the file, and the data files of its earlier
// pieces are deleted: the table holds the other file's rows only.
func TestPiecesOfARefusedFileLeaveNothing(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e env) {
		ctx := context.Background()
		good := readings(1, 0, 100)
		e.put(t, "gateway-1/good.csv", csvFile(good, false, false))
		bad := string(csvFile(readings(2, 1, 40_000), false, false)) + "2026-01-20T00:00:00Z,dev-2-0,warm\n"
		e.put(t, "gateway-2/bad.csv.gz", gzipped(t, []byte(bad)))
		cfg := e.config()
		cfg.MemoryBudget = smallBudget
		rep, err := ingest.Run(ctx, cfg)
		if err != nil || rep.Loaded != 1 || rep.Quarantined != 1 {
			t.Fatalf("run: %+v, %v", rep, err)
		}
		var want []string
		for _, r := range good {
			want = append(want, r.String())
		}
		slices.Sort(want)
		if got := tableRows(t, e); !slices.Equal(got, want) {
			t.Fatalf("table holds %d rows, want the %d of the good file", len(got), len(want))
		}
		if o := dataOrphans(t, e); len(o) > 0 {
			t.Fatalf("data files of the refused file left behind: %v", o)
		}
	})
}

// TestLateWideningStartsTheFileOver: with --evolve widen, a value too large
// for an int column near the end of a large file widens the column; the
// pieces written before it are deleted and the file is written again with
// the wider column, once.
func TestLateWideningStartsTheFileOver(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e env) {
		ctx := context.Background()
		row := func(b *strings.Builder, i int, level int64) {
			ts := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * time.Second)
			fmt.Fprintf(b, "%s,dev-%d,%d.5,%d\n", ts.Format(time.RFC3339), i%5, i%30, level)
		}
		var first, large strings.Builder
		first.WriteString("time,device_id,temperature_c,level\n")
		row(&first, 0, 1)
		e.put(t, "gateway-1/a.csv", []byte(first.String()))
		cfg := e.config()
		cfg.Columns = map[string]arrow.DataType{"level": arrow.PrimitiveTypes.Int32}
		if rep, err := ingest.Run(ctx, cfg); err != nil || rep.Loaded != 1 {
			t.Fatalf("first run: %+v, %v", rep, err)
		}
		large.WriteString("time,device_id,temperature_c,level\n")
		const n = 60_000
		for i := 1; i <= n; i++ {
			level := int64(i % 100)
			if i == n-5 {
				level = 3_000_000_000
			}
			row(&large, i, level)
		}
		e.put(t, "gateway-1/b.csv.gz", gzipped(t, []byte(large.String())))
		cfg.MemoryBudget, cfg.Evolve = smallBudget, decode.EvolveWiden
		rep, err := ingest.Run(ctx, cfg)
		if err != nil || rep.Loaded != 1 || rep.Files[0].Rows != n {
			t.Fatalf("run: %+v, %v", rep, err)
		}
		if got := columnsOf(t, e); !strings.Contains(got, "level long") {
			t.Fatalf("columns %s, want level widened to long", got)
		}
		if rows := len(tableRows(t, e)); rows != n+1 {
			t.Fatalf("%d rows, want %d", rows, n+1)
		}
		if o := dataOrphans(t, e); len(o) > 0 {
			t.Fatalf("data files of the first pass left behind: %v", o)
		}
	})
}
