package interop

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake"
)

// deleteReport and rollbackReport are the JSON of `timelake tables delete`
// and `timelake tables rollback` (docs/tables.md).
type deleteReport struct {
	Rows       int64  `json:"rows"`
	Rewritten  int    `json:"files_rewritten"`
	Dropped    int    `json:"files_dropped"`
	Read       int    `json:"files_read"`
	Skipped    int    `json:"files_skipped"`
	SnapshotID *int64 `json:"snapshot_id"`
}

type rollbackReport struct {
	Delete     int64  `json:"delete_snapshot_id"`
	Rows       int64  `json:"rows"`
	SnapshotID *int64 `json:"snapshot_id"`
}

// rowPredicate is a delete predicate evaluated on generated rows (genSchema
// order: time, site, device, ...), independently of timelake's: device ""
// matches any device, a null device matches no device.
type rowPredicate struct {
	device   string
	from, to time.Time
}

func (p rowPredicate) matches(r Row) bool {
	if p.device != "" {
		if d, ok := r[2].(string); !ok || d != p.device {
			return false
		}
	}
	ts := r[0].(int64)
	return ts >= p.from.UnixMicro() && ts < p.to.UnixMicro()
}

func (p rowPredicate) args() []string {
	var out []string
	if p.device != "" {
		out = append(out, "--where", "device="+p.device)
	}
	return append(out, "--from", p.from.Format(time.RFC3339), "--to", p.to.Format(time.RFC3339))
}

const dayMicros = int64(24 * time.Hour / time.Microsecond)

// dayOf is the UTC day (days since the epoch) of a row's time.
func dayOf(r Row) int64 { return floorDiv(r[0].(int64), dayMicros) }

// TestDeletedRowsReadByIndependentReaders deletes rows with `timelake tables
// delete` (a device over a day and a half, which rewrites files; a whole
// day, which drops files), then undoes the first and then the second with
// `timelake tables rollback`, and after each step has icebird read the table and DuckDB read
// the data files icebird's manifests list: both must see exactly the rows
// computed here from the generated rows, per device and day and row by row.
// On a local warehouse and on one in the test S3 server.
func TestDeletedRowsReadByIndependentReaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(*testing.T) warehouse
	}{{"local", localWarehouse}, {"s3", s3Warehouse}} {
		t.Run(tc.name, func(t *testing.T) { testDeletedRows(t, tc.open(t)) })
	}
}

func testDeletedRows(t *testing.T, w warehouse) {
	ctx := context.Background()
	ib := icebirdHarness(t, w.proxy)
	name := lake.TableName{Namespace: "gen", Name: "deleted"}
	tbl, err := w.lake.CreateTable(ctx, name, genSchema,
		lake.CreateSpec{TimeColumn: "time", SeriesKey: []string{"site", "device"}, Partition: lake.Day})
	if err != nil {
		t.Fatal(err)
	}
	// Five days, one data file per batch and day: batch 1 on days 0-3,
	// batch 2 on days 1-3, batches 3 and 4 on day 4 alone.
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	batches := [][]Row{
		genRows(1, 600, 4, start),
		genRows(2, 400, 3, start.Add(day)),
		genRows(3, 200, 1, start.Add(4*day)),
		genRows(4, 100, 1, start.Add(4*day)),
	}
	files := map[string]int{} // rows per data file: batch and day
	var all []Row
	for b, rows := range batches {
		appendRows(t, tbl, fmt.Sprintf("gen/%d", b+1), rows, lake.AppendOptions{})
		for _, r := range rows {
			files[fmt.Sprint(b, dayOf(r))]++
		}
		all = append(all, rows...)
	}
	if len(files) != 9 {
		t.Fatalf("%d data files expected from the batches, want 9", len(files))
	}
	cols := ColumnsOf(tbl.Metadata().CurrentSchema())

	without := func(rows []Row, preds ...rowPredicate) []Row {
		return slices.DeleteFunc(slices.Clone(rows), func(r Row) bool {
			return slices.ContainsFunc(preds, func(p rowPredicate) bool { return p.matches(r) })
		})
	}
	// filesHit counts the data files (batch and day) with rows p matches:
	// all of them (dropped) or some (rewritten).
	filesHit := func(p rowPredicate) (rewritten, dropped int) {
		matched := map[string]int{}
		for b, rows := range batches {
			for _, r := range rows {
				if p.matches(r) {
					matched[fmt.Sprint(b, dayOf(r))]++
				}
			}
		}
		for f, n := range matched {
			if n == files[f] {
				dropped++
			} else {
				rewritten++
			}
		}
		return rewritten, dropped
	}
	del := func(p rowPredicate) deleteReport {
		t.Helper()
		var rep deleteReport
		runTimelake(t, w.env, &rep, append([]string{"tables", "delete", name.String(), "--yes", "--json"}, p.args()...)...)
		wantRows := int64(len(all) - len(without(all, p)))
		wantRewritten, wantDropped := filesHit(p)
		if rep.Rows != wantRows || rep.Rewritten != wantRewritten || rep.Dropped != wantDropped || rep.SnapshotID == nil {
			t.Fatalf("delete %v: %+v; want %d rows, %d files rewritten, %d dropped, a snapshot",
				p.args(), rep, wantRows, wantRewritten, wantDropped)
		}
		return rep
	}

	// A device over a day and a half: files of days 0-2 keep their other
	// rows; days 3 and 4 are not read.
	device := rowPredicate{device: "dev-03", from: start.Add(12 * time.Hour), to: start.Add(60 * time.Hour)}
	a := del(device)
	if a.Rewritten == 0 || a.Read != 5 || a.Skipped != 4 {
		t.Fatalf("device delete: %+v; want files rewritten, the 5 of days 0-2 read, the 4 of days 3 and 4 not", a)
	}
	// A whole day: the two files of day 4 go whole, nothing is rewritten.
	wholeDay := rowPredicate{from: start.Add(4 * day), to: start.Add(5 * day)}
	b := del(wholeDay)
	if b.Dropped != 2 || b.Rewritten != 0 || b.Rows != 300 {
		t.Fatalf("whole-day delete: %+v; want 2 files (300 rows) dropped", b)
	}
	t.Run("after deletes", func(t *testing.T) {
		checkReaders(t, w, ib, name, cols, without(all, device, wholeDay))
	})

	// Undo the device delete (not the newest one): its rows come back, the
	// day stays deleted.
	rollback := func(d deleteReport) {
		t.Helper()
		var undo rollbackReport
		runTimelake(t, w.env, &undo, "tables", "rollback", name.String(), strconv.FormatInt(*d.SnapshotID, 10), "--json")
		if undo.Delete != *d.SnapshotID || undo.Rows != d.Rows || undo.SnapshotID == nil {
			t.Fatalf("rollback: %+v; want the %d rows of snapshot %d restored in a snapshot", undo, d.Rows, *d.SnapshotID)
		}
	}
	rollback(a)
	t.Run("after rollback", func(t *testing.T) {
		checkReaders(t, w, ib, name, cols, without(all, wholeDay))
	})
	// Undo the day's delete too: every row is back.
	rollback(b)
	t.Run("after both rollbacks", func(t *testing.T) {
		checkReaders(t, w, ib, name, cols, all)
	})
}

// checkReaders has icebird read the table (its current metadata file, from
// the version hint) and DuckDB read every data file icebird's manifests
// list (and iceberg-go's scan plans), and compares both with want: the row
// count, the rows per device and day, and every row.
func checkReaders(t *testing.T, w warehouse, ib Icebird, name lake.TableName, cols []Column, want []Row) {
	ctx := context.Background()
	tbl, err := w.lake.LoadTable(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := map[string]int64{}
	for _, r := range want {
		wantCounts[fmt.Sprintf("%v|%d", r[2], dayOf(r))]++
	}

	got, err := ib.Read(ctx, tbl.Location())
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Base(tbl.MetadataLocation()); got.MetadataFile != want {
		t.Errorf("icebird read %s, the current metadata file is %s", got.MetadataFile, want)
	}
	ibRows, err := got.Rows()
	if err != nil {
		t.Fatal(err)
	}
	if got.RowCount != len(want) {
		t.Errorf("icebird reads %d rows, want %d", got.RowCount, len(want))
	}
	ibCounts := map[string]int64{}
	for _, r := range ibRows {
		// Milliseconds: the day is the same.
		ibCounts[fmt.Sprintf("%v|%d", r[2], floorDiv(r[0].(int64), dayMicros))]++
	}
	if err := compareCounts(ibCounts, wantCounts); err != nil {
		t.Errorf("icebird, rows per device and day: %v", err)
	}
	if err := CompareRows(cols, ibRows, want, 1000); err != nil {
		t.Errorf("icebird: %v", err)
	}

	var ibFiles []string
	var manifestRows int64
	for _, f := range got.Files {
		ibFiles = append(ibFiles, f.Path)
		manifestRows += f.RecordCount
	}
	slices.Sort(ibFiles)
	tasks, err := tbl.Iceberg().Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var goFiles []string
	for _, task := range tasks {
		goFiles = append(goFiles, task.File.FilePath())
	}
	slices.Sort(goFiles)
	if !slices.Equal(ibFiles, goFiles) {
		t.Errorf("icebird's manifests list %v, iceberg-go's %v", ibFiles, goFiles)
	}
	if manifestRows != int64(len(want)) {
		t.Errorf("icebird's manifests count %d rows, want %d", manifestRows, len(want))
	}

	db := duckDB(t)
	var local, quoted []string
	for _, p := range ibFiles {
		l, err := LocalFile(ctx, w.s3, p, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		local = append(local, l)
		quoted = append(quoted, quoteString(l))
	}
	q := "SELECT coalesce(device, '<nil>'), epoch_us(time) // " + strconv.FormatInt(dayMicros, 10) + ", count(*) FROM read_parquet([" +
		strings.Join(quoted, ", ") + "], hive_partitioning=false) GROUP BY ALL"
	counts, err := queryRows(ctx, db, q, 3)
	if err != nil {
		t.Fatal(err)
	}
	duckCounts := map[string]int64{}
	for _, c := range counts {
		duckCounts[fmt.Sprintf("%v|%d", c[0], c[1])] = c[2].(int64)
	}
	if err := compareCounts(duckCounts, wantCounts); err != nil {
		t.Errorf("DuckDB, rows per device and day: %v", err)
	}
	var duckRows []Row
	for _, l := range local {
		rows, err := sourceParquet(ctx, db, l, cols)
		if err != nil {
			t.Fatal(err)
		}
		duckRows = append(duckRows, rows...)
	}
	if err := CompareRows(cols, duckRows, want, 1); err != nil {
		t.Errorf("DuckDB: %v", err)
	}
	t.Logf("%d rows expected, %d data files listed", len(want), len(ibFiles))
}

// compareCounts compares row counts by key (device|day).
func compareCounts(got, want map[string]int64) error {
	var diffs []string
	for _, k := range sortedKeys(want) {
		if got[k] != want[k] {
			diffs = append(diffs, fmt.Sprintf("%s: %d, want %d", k, got[k], want[k]))
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %d, want none", k, got[k]))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%d differ: %s", len(diffs), strings.Join(head(diffs, 5), "; "))
	}
	return nil
}
