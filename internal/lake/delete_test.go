package lake

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
)

// testRow is a row of the test table as an independent scan reads it.
type testRow struct {
	at     time.Time
	device string
	value  float64
}

// scanTestRows reads every row of tbl's current snapshot through
// iceberg-go's scan.
func scanTestRows(t testing.TB, tbl *Table) []testRow {
	t.Helper()
	at, err := tbl.Iceberg().Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rr := array.NewTableReader(at, 1024)
	defer rr.Release()
	var out []testRow
	for rr.Next() {
		rec := rr.RecordBatch()
		times := rec.Column(0).(*array.Timestamp)
		devices := rec.Column(1).(*array.String)
		values := rec.Column(2).(*array.Float64)
		for i := range int(rec.NumRows()) {
			out = append(out, testRow{at: times.Value(i).ToTime(arrow.Microsecond), device: devices.Value(i), value: values.Value(i)})
		}
	}
	return out
}

func countRows(rows []testRow, match func(testRow) bool) int64 {
	var n int64
	for _, r := range rows {
		if match(r) {
			n++
		}
	}
	return n
}

// deleteFixture is a table of three files: 30 rows on 2026-01-01 from
// 10:01 (devices d2, d1, d0 in turn, values 0 to 29), 30 rows on
// 2026-01-02 from 10:01, and one row of d2 on 2026-01-02 at 12:01.
func deleteFixture(t *testing.T, l *Lake) *Table {
	t.Helper()
	tbl := createTestTable(t, l)
	appendRows(t, tbl, "a.csv", time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC), 30)
	appendRows(t, tbl, "b.csv", time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC), 30)
	appendRows(t, tbl, "c.csv", time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC), 1)
	return tbl
}

func livePathSet(t testing.TB, tbl *Table) map[string]bool {
	t.Helper()
	h, _ := tbl.loaded()
	files, _, err := tbl.liveFiles(context.Background(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	return livePaths(files)
}

func TestDeletePredicates(t *testing.T) {
	day1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		where []string
		from  time.Time
		to    time.Time
		match func(testRow) bool
	}{
		{"one value", []string{"device=d1"}, time.Time{}, time.Time{},
			func(r testRow) bool { return r.device == "d1" }},
		{"two values of one column", []string{"device=d1", "device=d0"}, time.Time{}, time.Time{},
			func(r testRow) bool { return r.device == "d1" || r.device == "d0" }},
		{"two columns", []string{"device=d1", "value=4", "value=7"}, time.Time{}, time.Time{},
			func(r testRow) bool { return r.device == "d1" && (r.value == 4 || r.value == 7) }},
		{"from and to", nil, day1.Add(10*time.Hour + 5*time.Minute), day1.Add(10*time.Hour + 8*time.Minute),
			func(r testRow) bool {
				return !r.at.Before(day1.Add(10*time.Hour+5*time.Minute)) && r.at.Before(day1.Add(10*time.Hour+8*time.Minute))
			}},
		{"all kinds", []string{"device=d2"}, day1.Add(24 * time.Hour), day1.Add(36 * time.Hour),
			func(r testRow) bool {
				return r.device == "d2" && !r.at.Before(day1.Add(24*time.Hour)) && r.at.Before(day1.Add(36*time.Hour))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachLake(t, func(t *testing.T, l *Lake) {
				ctx := context.Background()
				tbl := deleteFixture(t, l)
				before := scanTestRows(t, tbl)
				want := countRows(before, tc.match)
				if want == 0 || want == int64(len(before)) {
					t.Fatalf("the fixture has %d of %d rows matching", want, len(before))
				}
				where, err := ParseWhere(tc.where)
				if err != nil {
					t.Fatal(err)
				}
				res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where, From: tc.from, To: tc.to}})
				if err != nil {
					t.Fatal(err)
				}
				if res.Rows != want || res.SnapshotID == 0 {
					t.Fatalf("deleted %+v, want %d rows", res, want)
				}
				after := scanTestRows(t, tbl)
				if got := countRows(after, tc.match); got != 0 {
					t.Fatalf("%d matching rows left", got)
				}
				if int64(len(after)) != int64(len(before))-want {
					t.Fatalf("rows after: %d, want %d", len(after), int64(len(before))-want)
				}
				snap := tbl.Metadata().CurrentSnapshot()
				props := snap.Summary.Properties
				if props[SummaryDeletePredicate] != res.Predicate || props[SummaryDeletedRows] != strconv.FormatInt(want, 10) ||
					props[summaryTotalRecords] != strconv.Itoa(len(after)) {
					t.Fatalf("summary: %+v", snap.Summary)
				}
				checkSortedFiles(t, tbl)
			})
		})
	}
}

func TestDeleteSkipsRewritesAndDrops(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := deleteFixture(t, l)
		before := livePathSet(t, tbl)
		// device=d1: the file of c.csv holds d2 only (its statistics
		// exclude it), the two others are rewritten.
		where, _ := ParseWhere([]string{"device=d1"})
		res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rewritten != 2 || res.Dropped != 0 || res.Skipped != 1 || res.Read != 2 || res.Rows != 20 {
			t.Fatalf("delete: %+v", res)
		}
		after := livePathSet(t, tbl)
		kept := 0
		for p := range before {
			if after[p] {
				kept++
				if !strings.Contains(p, "2026-01-02") {
					t.Fatalf("kept %s", p)
				}
			}
		}
		if kept != 1 || len(after) != 3 {
			t.Fatalf("%d of the files kept, %d live", kept, len(after))
		}
		if op := tbl.Metadata().CurrentSnapshot().Summary.Operation; op != table.OpOverwrite {
			t.Fatalf("operation %s", op)
		}

		// The day of a.csv whole: its file is dropped, no file is
		// written, and the partition of 2026-01-02 is not read.
		res, err = tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{
			From: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Dropped != 1 || res.Rewritten != 0 || res.Rows != 20 || res.Skipped != 2 {
			t.Fatalf("drop: %+v", res)
		}
		snap := tbl.Metadata().CurrentSnapshot()
		if snap.Summary.Operation != table.OpDelete || snap.Summary.Properties[summaryAddedDataFiles] != "" {
			t.Fatalf("snapshot: %+v", snap.Summary)
		}
		if got := len(livePathSet(t, tbl)); got != 2 {
			t.Fatalf("%d files live", got)
		}
		if got := scanCount(t, tbl); got != 21 {
			t.Fatalf("rows: %d", got)
		}
	})
}

func TestDeleteDryRunAndRefusals(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := deleteFixture(t, l)
	v, rows := tbl.Version(), scanCount(t, tbl)
	where, _ := ParseWhere([]string{"device=d0"})
	res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 20 || res.Rewritten != 2 || res.Bytes <= 0 || res.SnapshotID != 0 {
		t.Fatalf("dry run: %+v", res)
	}
	if tbl.Version() != v || scanCount(t, tbl) != rows {
		t.Fatal("the dry run changed the table")
	}
	if _, err := tbl.Delete(ctx, DeleteOptions{}); !errors.Is(err, ErrNoPredicate) {
		t.Fatalf("no predicate: %v", err)
	}
	for _, tc := range []struct{ term, want string }{
		{"site=x", `the table has no column "site"`},
		{"value=abc", "--where value=abc: column value is double: expected a number such as 21.5"},
		{"time=2026-01-05T10:00:03", "expected an RFC 3339 time with its zone such as 2026-01-05T10:00:00Z"},
	} {
		where, _ := ParseWhere([]string{tc.term})
		if _, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where}}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v, want %q", tc.term, err, tc.want)
		}
	}
	if _, err := ParseWhere([]string{"device"}); err == nil {
		t.Fatal("a term without = accepted")
	}
	// Nothing matches: no commit.
	where, _ = ParseWhere([]string{"device=d9"})
	res, err = tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where}})
	if err != nil || res.Rows != 0 || tbl.Version() != v {
		t.Fatalf("no match: %+v %v", res, err)
	}
}

func TestDeleteRacesAnotherWriter(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := deleteFixture(t, l)
		other, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		where, _ := ParseWhere([]string{"device=d1"})
		var attempts []int
		res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where},
			commit: CommitOptions{BeforeCommit: func(attempt int) error {
				attempts = append(attempts, attempt)
				if attempt == 1 {
					// Another writer appends after the delete read the table.
					appendRows(t, other, "theirs.csv", time.Date(2026, 1, 3, 10, 0, 0, 0, time.UTC), 9)
				}
				return nil
			}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(attempts) != 2 || res.Rows != 20 {
			t.Fatalf("attempts %v, %+v", attempts, res)
		}
		rows := scanTestRows(t, tbl)
		// 61 rows, 20 of d1 deleted; the 9 appended (3 of d1) all kept.
		if len(rows) != 61-20+9 || countRows(rows, func(r testRow) bool { return r.device == "d1" }) != 3 {
			t.Fatalf("%d rows", len(rows))
		}
		if _, ok := tbl.FindBatch("theirs.csv"); !ok {
			t.Fatal("the other writer's batch is gone")
		}
		assertOnlyCurrentFiles(t, l, tbl)
	})
}

// twoBatches is a clocked table of batches a.csv and b.csv, 30 rows each,
// from 5 and 4 hours before day0.
func twoBatches(t *testing.T) (*Lake, *Table, *time.Time) {
	t.Helper()
	l := newLocalLake(t)
	tbl, clock := clockedTable(t, l)
	appendRows(t, tbl, "a.csv", day0.Add(-5*time.Hour), 30)
	appendRows(t, tbl, "b.csv", day0.Add(-4*time.Hour), 30)
	return l, tbl, clock
}

func TestDeleteAfterInputsCompactedMeanwhile(t *testing.T) {
	ctx := context.Background()
	l, tbl, clock := twoBatches(t)
	other, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	before := livePathSet(t, tbl)
	where, _ := ParseWhere([]string{"device=d2"})
	compacted := false
	res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where},
		commit: CommitOptions{BeforeCommit: func(int) error {
			if !compacted {
				compacted = true
				// Another writer replaces the delete's inputs.
				cr, err := other.Compact(ctx, CompactOptions{MinFiles: 2})
				if err != nil || len(cr.Groups) != 1 {
					t.Fatalf("compaction: %+v %v", cr, err)
				}
			}
			return nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 20 || res.Rewritten != 1 {
		t.Fatalf("delete: %+v", res)
	}
	rows := scanTestRows(t, tbl)
	if len(rows) != 40 || countRows(rows, func(r testRow) bool { return r.device == "d2" }) != 0 {
		t.Fatalf("%d rows", len(rows))
	}
	for p := range livePathSet(t, tbl) {
		if before[p] {
			t.Fatalf("input %s still live", p)
		}
	}
	*clock = clock.Add(time.Minute) // the snapshots before are older than the expiry's age
	assertOnlyCurrentFiles(t, l, tbl)
}

// assertOnlyCurrentFiles expires every snapshot but the current one and
// checks that the table holds no file it does not reference: the losing
// attempts and rounds of a delete removed what they wrote.
func assertOnlyCurrentFiles(t *testing.T, l *Lake, tbl *Table) {
	t.Helper()
	if _, err := tbl.Expire(context.Background(), ExpireOptions{OlderThan: time.Nanosecond, RetainLast: 1}); err != nil {
		t.Fatal(err)
	}
	assertNoOrphans(t, l, tbl)
}

// TestDeleteLongValues: the statistics of long strings are truncated (the
// upper bound raised); a value beyond the truncation is still found.
func TestDeleteLongValues(t *testing.T) {
	ctx := context.Background()
	tbl := createTestTable(t, newLocalLake(t))
	long := strings.Repeat("gateway-", 4)
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	for i := range 30 {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(day0.Add(-time.Duration(i) * time.Minute).UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append(long + strconv.Itoa(i%3))
		b.Field(2).(*array.Float64Builder).Append(float64(i))
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	if _, err := tbl.Append(ctx, "long.csv", []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		value string
		rows  int64
	}{{long + "2", 10}, {long + "3", 0}, {long, 0}} {
		where, _ := ParseWhere([]string{"device=" + c.value})
		res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where}, DryRun: true})
		if err != nil || res.Rows != c.rows {
			t.Fatalf("%s: %+v %v, want %d rows", c.value, res, err, c.rows)
		}
	}
}

// TestDeleteUndoneByRollback: rolling back to the snapshot before a delete
// brings its rows back, as an independent scan counts them, while the
// delete's snapshot stays in the metadata outside the ancestry, and
// Deletions lists the delete until then.
func TestDeleteUndoneByRollback(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl := deleteFixture(t, l)
		before := scanTestRows(t, tbl)
		files := livePathSet(t, tbl)
		parent, _ := tbl.CurrentSnapshotID()
		where, _ := ParseWhere([]string{"device=d1"})
		res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where,
			From: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}})
		if err != nil {
			t.Fatal(err)
		}
		isD1 := func(r testRow) bool {
			return r.device == "d1" && !r.at.Before(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))
		}
		want := countRows(before, isD1)
		if res.Rows != want || want == 0 || countRows(scanTestRows(t, tbl), isD1) != 0 {
			t.Fatalf("delete: %+v, %d rows of d1 on 2026-01-02 before", res, want)
		}
		if d := tbl.Deletions(); len(d) != 1 || d[0].SnapshotID != res.SnapshotID || d[0].Rows != want ||
			d[0].Predicate != `device = "d1" AND time >= 2026-01-02T00:00:00Z` {
			t.Fatalf("deletions: %+v", d)
		}

		if err := tbl.RollbackTo(ctx, parent); err != nil {
			t.Fatal(err)
		}
		again, err := l.LoadTable(ctx, tbl.Name())
		if err != nil {
			t.Fatal(err)
		}
		after := scanTestRows(t, again)
		if int64(len(after)) != int64(len(before)) || countRows(after, isD1) != want {
			t.Fatalf("after the rollback: %d rows, %d of them the deleted; before: %d, %d", len(after), countRows(after, isD1), len(before), want)
		}
		live := livePathSet(t, again)
		if len(live) != len(files) {
			t.Fatalf("%d files live after the rollback, %d before the delete", len(live), len(files))
		}
		for p := range files {
			if !live[p] {
				t.Fatalf("%s not live after the rollback", p)
			}
		}
		if again.Metadata().SnapshotByID(res.SnapshotID) == nil {
			t.Fatal("the delete's snapshot left the metadata")
		}
		if d := again.Deletions(); len(d) != 0 {
			t.Fatalf("deletions after the rollback: %+v", d)
		}
	})
}

// TestDeleteByBatchID: with a source column, the rows of one batch go from
// the file a maintenance round compacted of it and others, and the others'
// stay, as do the rows loaded before the table had one (they hold no key),
// on a local warehouse and on one in the test S3 server.
func TestDeleteByBatchID(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl, _ := clockedTable(t, l)
		sc := tbl.ArrowSchema()
		appendRows(t, tbl, "before.csv", day0.Add(-6*time.Hour), 3)
		if err := tbl.SetProperties(ctx, map[string]string{PropSourceColumn: "_source"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{BatchIDs: []string{"before.csv"}}}); err == nil ||
			!strings.Contains(err.Error(), "not in its schema yet") {
			t.Fatalf("a source column not in the schema: %v", err)
		}
		keys := []string{"a.csv", "b.csv", "c.csv"}
		for i, key := range keys {
			rec := rows(t, sc, day0.Add(time.Duration(i-5)*time.Hour), 30, false)
			recs, err := WithSourceColumns(sc, []arrow.RecordBatch{rec}, []SourceValue{{Column: "_source", Text: key}})
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
			_, err = tbl.Append(ctx, key, recs, AppendOptions{})
			for _, r := range recs {
				r.Release()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		filesBefore := len(livePathSet(t, tbl))
		rep, err := tbl.Maintain(ctx, MaintainOptions{Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Compacted.Groups) == 0 || len(livePathSet(t, tbl)) >= filesBefore {
			t.Fatalf("maintenance merged no files: %d groups, %d files before, %d after", len(rep.Compacted.Groups),
				filesBefore, len(livePathSet(t, tbl)))
		}
		// b.csv's rows now share a file with those of other batches.
		var shared bool
		for _, n := range fileSources(t, tbl) {
			if n["b.csv"] > 0 && len(n) > 1 {
				shared = true
			}
		}
		if !shared {
			t.Fatal("no live file holds the rows of b.csv and of another batch")
		}
		res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{BatchIDs: []string{"b.csv"}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows != 30 || res.Rewritten != 1 || res.Dropped != 0 || res.Predicate != `_source = "b.csv"` {
			t.Fatalf("delete: %+v", res)
		}
		got := scanTestRows(t, tbl)
		ofBatch := func(i int) int64 {
			start := day0.Add(time.Duration(i-5) * time.Hour)
			return countRows(got, func(r testRow) bool { return r.at.After(start) && !r.at.After(start.Add(30*time.Minute)) })
		}
		ofBefore := countRows(got, func(r testRow) bool { return r.at.Before(day0.Add(-5 * time.Hour)) })
		if len(got) != 63 || ofBatch(0) != 30 || ofBatch(1) != 0 || ofBatch(2) != 30 || ofBefore != 3 {
			t.Fatalf("%d rows left: %d of a.csv, %d of b.csv, %d of c.csv, %d of before.csv", len(got),
				ofBatch(0), ofBatch(1), ofBatch(2), ofBefore)
		}
		// The rows loaded before the source column hold no key: no batch id
		// matches them, not even their own.
		res, err = tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{BatchIDs: []string{"before.csv"}}})
		if err != nil || res.Rows != 0 || res.SnapshotID != 0 || len(res.NotLoaded) != 0 {
			t.Fatalf("delete --batch-id before.csv: %+v %v", res, err)
		}
		// A key never loaded matches nothing, and is named.
		res, err = tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{BatchIDs: []string{"never.csv", "b.csv"}}, DryRun: true})
		if err != nil || res.Rows != 0 || !slices.Equal(res.NotLoaded, []string{"never.csv"}) {
			t.Fatalf("delete --batch-id never.csv: %+v %v", res, err)
		}
		if n := scanCount(t, tbl); n != 63 {
			t.Fatalf("%d rows after deleting a batch without keys, want 63", n)
		}
		if d := tbl.Deletions(); len(d) != 1 || d[0].Predicate != `_source = "b.csv"` || d[0].Rows != 30 {
			t.Fatalf("deletions: %+v", d)
		}
	})
}

// fileSources counts the rows of each live data file by their _source
// value ("" for a null, or a file written before the column existed).
func fileSources(t *testing.T, tbl *Table) map[string]map[string]int {
	t.Helper()
	ctx := context.Background()
	h, _ := tbl.loaded()
	files, _, err := tbl.liveFiles(ctx, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]int{}
	for _, f := range files {
		df := f.Entry.DataFile()
		n := map[string]int{}
		out[df.FilePath()] = n
		_, it, err := tbl.Iceberg().Scan().ReadTasks(ctx, []table.FileScanTask{{File: df, Length: df.FileSizeBytes()}})
		if err != nil {
			t.Fatal(err)
		}
		for rec, err := range it {
			if err != nil {
				t.Fatal(err)
			}
			idx := rec.Schema().FieldIndices("_source")
			for i := range int(rec.NumRows()) {
				key := ""
				if len(idx) == 1 && rec.Column(idx[0]).IsValid(i) {
					key = rec.Column(idx[0]).(*array.String).Value(i)
				}
				n[key]++
			}
			rec.Release()
		}
	}
	return out
}

// TestDeleteByBatchFiles: without a source column, a batch whose snapshot
// is in the current ancestry and whose files are all live is deleted by
// dropping its files (the other terms of the predicate still apply), and
// other files are not read; a batch not in the ancestry, or one a
// compaction rewrote, is refused with ErrBatchNotApart.
func TestDeleteByBatchFiles(t *testing.T) {
	ctx := context.Background()
	_, tbl, _ := twoBatches(t)
	appendRows(t, tbl, "c.csv", day0.Add(-28*time.Hour), 30)

	where, _ := ParseWhere([]string{"device=d1"})
	res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{BatchIDs: []string{"c.csv"}, Where: where}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 10 || res.Rewritten != 1 || res.Read != 1 || res.Skipped != 2 || res.Predicate != `device = "d1" AND batch-id = "c.csv"` {
		t.Fatalf("c.csv's rows of d1: %+v", res)
	}
	res, err = tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{BatchIDs: []string{"a.csv"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 30 || res.Dropped != 1 || res.Rewritten != 0 || res.Read != 1 {
		t.Fatalf("a.csv: %+v", res)
	}
	got := scanTestRows(t, tbl)
	ofB := countRows(got, func(r testRow) bool { return !r.at.Before(day0.Add(-4 * time.Hour)) })
	ofC := countRows(got, func(r testRow) bool { return r.at.Before(day0.Add(-6 * time.Hour)) })
	if len(got) != 50 || ofB != 30 || ofC != 20 || countRows(got, func(r testRow) bool { return r.at.Before(day0.Add(-6*time.Hour)) && r.device == "d1" }) != 0 {
		t.Fatalf("%d rows left, %d of b.csv, %d of c.csv", len(got), ofB, ofC)
	}

	// c.csv's file was rewritten by the first delete: no longer its own.
	if _, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{BatchIDs: []string{"c.csv"}}}); !errors.Is(err, ErrBatchNotApart) ||
		!strings.Contains(err.Error(), "0 of the 1 data files") {
		t.Fatalf("a rewritten batch: %v", err)
	}
	if _, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{BatchIDs: []string{"never.csv"}}}); !errors.Is(err, ErrBatchNotLoaded) ||
		!strings.Contains(err.Error(), "no such batch: never.csv: no snapshot loaded it") {
		t.Fatalf("a batch never loaded: %v", err)
	}
	appendRows(t, tbl, "d.csv", day0.Add(-3*time.Hour), 30)
	if cr, err := tbl.Compact(ctx, CompactOptions{MinFiles: 2}); err != nil || len(cr.Groups) != 1 {
		t.Fatalf("compaction: %+v %v", cr, err)
	}
	if _, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{BatchIDs: []string{"d.csv"}}}); !errors.Is(err, ErrBatchNotApart) {
		t.Fatalf("a compacted batch: %v", err)
	}
	if n := scanCount(t, tbl); n != 80 {
		t.Fatalf("%d rows after the refusals", n)
	}
}

// TestDeleteProgress: progress is reported once the files to read are
// known and after each, ending at the totals and the rows deleted.
func TestDeleteProgress(t *testing.T) {
	ctx := context.Background()
	tbl := deleteFixture(t, newLocalLake(t))
	for _, tc := range []struct {
		where []string
		files int
		rows  int64
	}{
		// Value 5 is d0's: no row matches, in the two files the
		// statistics cannot rule out (the third holds d2 alone).
		{[]string{"device=d1", "value=5"}, 2, 0},
		{[]string{"device=d1"}, 2, 20},
	} {
		where, _ := ParseWhere(tc.where)
		var seen []DeleteProgress
		res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where},
			Progress: func(p DeleteProgress) { seen = append(seen, p) }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows != tc.rows || res.Read != tc.files || len(seen) != tc.files+1 {
			t.Fatalf("%v: %+v, progress %+v", tc.where, res, seen)
		}
		first, last := seen[0], seen[len(seen)-1]
		if first.Files != tc.files || first.FilesRead != 0 || first.Bytes == 0 || last.FilesRead != tc.files ||
			last.BytesRead != first.Bytes || last.Rows != tc.rows {
			t.Fatalf("%v: progress %+v", tc.where, seen)
		}
	}
}

// TestDeleteSeveralBatches: several batch ids select the rows of any of
// them; the predicate's text quotes strings and writes numbers as given.
func TestDeleteSeveralBatches(t *testing.T) {
	ctx := context.Background()
	_, tbl, _ := twoBatches(t)
	appendRows(t, tbl, "c.csv", day0.Add(-3*time.Hour), 30)
	res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{BatchIDs: []string{"a.csv", "c.csv"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 60 || res.Dropped != 2 || res.Read != 2 || res.Skipped != 1 || res.Predicate != `(batch-id = "a.csv" OR batch-id = "c.csv")` {
		t.Fatalf("a.csv and c.csv: %+v", res)
	}
	if n := scanCount(t, tbl); n != 30 {
		t.Fatalf("%d rows left, want b.csv's 30", n)
	}
	where, _ := ParseWhere([]string{"device=d1", "value=4", "value=7"})
	res, err = tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := `device = "d1" AND (value = 4 OR value = 7)`; res.Predicate != want {
		t.Fatalf("predicate %s, want %s", res.Predicate, want)
	}
}

// TestDeleteExpiredBeforeItLearntItLanded: a delete's commit lands but its
// response is lost, and before it looks again other writers commit enough
// appends that its version is deleted as an old one, and an expiry removes
// its snapshot (timelake.max-snapshots expires young snapshots too). Its
// inputs are gone from the newest version, but the files it wrote are the
// table's: the rewritten file, and the manifests of a file dropped whole.
// They are kept, and every row left is read once. When the table still
// holds a file the delete wrote (a rewrite), the delete reports the rows
// it deleted (it reported none: planned again on the newest version, it
// found nothing left to delete); of a file dropped whole, whose manifests
// later appends merged, nothing is left to recognise it by.
func TestDeleteExpiredBeforeItLearntItLanded(t *testing.T) {
	start := day0.Add(-3 * time.Hour)
	rewrite, _ := ParseWhere([]string{"device=d1"})
	for _, tc := range []struct {
		name       string
		pred       DeletePredicate
		left       int64 // rows of the first file left
		recognised bool
	}{
		{"rewrite", DeletePredicate{Where: rewrite, From: start, To: start.Add(time.Hour)}, 3, true},
		{"drop", DeletePredicate{From: start, To: start.Add(time.Hour)}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forS3AndREST(t, func(t *testing.T, l *Lake, _ bool) {
				ctx := context.Background()
				tbl := createTestTable(t, l)
				appendRows(t, tbl, "first.csv", start, 5)
				other, err := l.LoadTable(ctx, testName)
				if err != nil {
					t.Fatal(err)
				}
				versions := DefaultMetadataVersions + 1
				landed, restore := outlive(t, l, other, day0, versions, true)
				res, err := tbl.Delete(ctx, DeleteOptions{Predicate: tc.pred})
				restore()
				t.Logf("delete whose snapshot expired before it learnt its outcome: %+v, %v", res, err)
				if tc.recognised && (err != nil || res.Rows != 5-tc.left || res.Version != tbl.Version()) {
					t.Errorf("delete: %d rows deleted at version %d, %v; want %d at version %d",
						res.Rows, res.Version, err, 5-tc.left, tbl.Version())
				}
				fresh := expiredSnapshot(t, l, "delete", *landed)
				if n := scanCount(t, fresh); n != tc.left+3*int64(versions) {
					t.Fatalf("%d rows, want %d", n, tc.left+3*int64(versions))
				}
			})
		})
	}
}

// TestDeleteLandedOnAnUnreadableVersion: another writer sets a property
// this build cannot read (an unknown timelake.chunk) while a delete runs;
// the delete's commit lands on that version, and then the Table cannot
// hold it. The delete fails, but the files it wrote (the rows it kept of
// the files it rewrote), which the table now references, stay.
func TestDeleteLandedOnAnUnreadableVersion(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl := deleteFixture(t, l)
	other, err := l.LoadTable(ctx, tbl.Name())
	if err != nil {
		t.Fatal(err)
	}
	rows := scanCount(t, tbl)
	fc := &faultyCatalog{Catalog: l.cat, before: func() {
		if err := other.SetProperties(ctx, map[string]string{PropChunk: "fortnight"}, nil); err == nil {
			t.Error("a table of timelake.chunk=fortnight was held")
		}
	}}
	l.cat = fc
	where, _ := ParseWhere([]string{"device=d1"})
	res, err := tbl.Delete(ctx, DeleteOptions{Predicate: DeletePredicate{Where: where}})
	l.cat = fc.Catalog
	if err == nil || res.SnapshotID == 0 {
		t.Fatalf("delete on a version of timelake.chunk=fortnight: %+v, %v", res, err)
	}
	if err := other.SetProperties(ctx, nil, []string{PropChunk}); err != nil {
		t.Fatal(err)
	}
	fresh, err := l.LoadTable(ctx, tbl.Name())
	if err != nil {
		t.Fatal(err)
	}
	if got := scanCount(t, fresh); got != rows-20 {
		t.Fatalf("%d rows, want %d", got, rows-20)
	}
}
