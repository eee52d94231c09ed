package lake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
)

// clockedTable creates the test table on l, whose clock then reads *clock
// (2026-01-06 10:00 UTC until the test moves it).
func clockedTable(t testing.TB, l *Lake) (*Table, *time.Time) {
	t.Helper()
	clock := time.Date(2026, 1, 6, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return clock }
	return createTestTable(t, l), &clock
}

// scanRows reads every row of snapshot id (0: the current one) as text,
// sorted, so that tables can be compared row for row.
func scanRows(t testing.TB, tbl *Table, id int64) []string {
	t.Helper()
	var opts []table.ScanOption
	if id != 0 {
		opts = append(opts, table.WithSnapshotID(id))
	}
	at, err := tbl.Iceberg().Scan(opts...).ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rr := array.NewTableReader(at, 1024)
	defer rr.Release()
	var out []string
	for rr.Next() {
		rec := rr.RecordBatch()
		for i := range int(rec.NumRows()) {
			row := ""
			for c := range int(rec.NumCols()) {
				row += rec.Column(c).ValueStr(i) + "|"
			}
			out = append(out, row)
		}
	}
	slices.Sort(out)
	return out
}

// liveDataFiles returns the live data files of the current snapshot, by
// partition.
func liveDataFiles(t testing.TB, tbl *Table) map[string]int {
	t.Helper()
	h, _ := tbl.loaded()
	files, _, err := tbl.liveFiles(context.Background(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range files {
		out[f.Partition]++
	}
	return out
}

// checkSortedFile: the rows of every live data file are in (series key,
// time) order.
func checkSortedFiles(t testing.TB, tbl *Table) {
	t.Helper()
	ctx := context.Background()
	h, _ := tbl.loaded()
	files, _, err := tbl.liveFiles(ctx, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		df := f.Entry.DataFile()
		_, it, err := tbl.Iceberg().Scan().ReadTasks(ctx, []table.FileScanTask{{File: df, Length: df.FileSizeBytes()}})
		if err != nil {
			t.Fatal(err)
		}
		prev := ""
		for rec, err := range it {
			if err != nil {
				t.Fatal(err)
			}
			dev := rec.Column(rec.Schema().FieldIndices("device")[0]).(*array.String)
			ts := rec.Column(rec.Schema().FieldIndices("time")[0]).(*array.Timestamp)
			for i := range int(rec.NumRows()) {
				k := fmt.Sprintf("%s|%020d", dev.ValueStr(i), ts.Value(i))
				if k < prev {
					t.Fatalf("%s: rows not sorted by (device, time): %s after %s", df.FilePath(), k, prev)
				}
				prev = k
			}
			rec.Release()
		}
	}
}

func TestCompactTieredAndCold(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl, clock := clockedTable(t, l)
		// Ten small files in one day, one in the next.
		for i := range 10 {
			appendRows(t, tbl, fmt.Sprintf("gw-%d.csv", i), day0.Add(-time.Duration(i+2)*time.Hour), 7)
			*clock = clock.Add(time.Minute)
		}
		before := scanRows(t, tbl, 0)
		beforeID, _ := tbl.CurrentSnapshotID()
		if got := liveDataFiles(t, tbl); got["time_day=2026-01-05"] != 10 {
			t.Fatalf("files before: %v", got)
		}
		dry, err := tbl.Compact(ctx, CompactOptions{DryRun: true})
		if err != nil || len(dry.Groups) != 1 || dry.Groups[0].FilesIn != 10 || dry.SnapshotID != 0 || dry.Idle != "" || dry.Deferred != 0 {
			t.Fatalf("dry run: %+v, %v", dry, err)
		}

		res, err := tbl.Compact(ctx, CompactOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Groups) != 1 || res.Groups[0].Reason != "tiered" || res.Groups[0].FilesOut != 1 || res.SnapshotID == 0 {
			t.Fatalf("compaction: %+v", res)
		}
		if got := liveDataFiles(t, tbl); got["time_day=2026-01-05"] != 1 {
			t.Fatalf("files after: %v", got)
		}
		if got := scanRows(t, tbl, 0); !slices.Equal(got, before) {
			t.Fatalf("rows changed by compaction: %d rows, want %d", len(got), len(before))
		}
		// Time travel to the snapshot before the rewrite still works.
		if got := scanRows(t, tbl, beforeID); !slices.Equal(got, before) {
			t.Fatal("time travel before the compaction reads other rows")
		}
		checkSortedFiles(t, tbl)
		requireConformantTable(t, l, tbl)

		// Two more files: three in the smallest tier, below its 4, so
		// nothing to do while the partition is hot; once cold, the three
		// are merged into one.
		for i := range 2 {
			appendRows(t, tbl, fmt.Sprintf("late-%d.csv", i), day0.Add(-time.Duration(i+1)*time.Hour), 5)
		}
		if res, err := tbl.Compact(ctx, CompactOptions{}); err != nil || len(res.Groups) != 0 ||
			res.Idle != "3 files below 8MiB in 1 partition, but no partition has 4 of one size tier (timelake.compact-min-files), or 2 of any size once its files are cold (older than 1h0m0s, timelake.compact-cold-after)" {
			t.Fatalf("hot partition with 3 small files: %+v, %v", res, err)
		}
		*clock = clock.Add(2 * time.Hour)
		res, err = tbl.Compact(ctx, CompactOptions{})
		if err != nil || len(res.Groups) != 1 || res.Groups[0].Reason != "cold" || res.Groups[0].FilesIn != 3 {
			t.Fatalf("cold partition: %+v, %v", res, err)
		}
		if got := liveDataFiles(t, tbl); got["time_day=2026-01-05"] != 1 {
			t.Fatalf("files after the cold compaction: %v", got)
		}
		if n := len(scanRows(t, tbl, 0)); n != 10*7+2*5 {
			t.Fatalf("%d rows, want %d", n, 10*7+2*5)
		}
		checkSortedFiles(t, tbl)
		requireConformantTable(t, l, tbl)
	})
}

// TestCompactSaysWhatItLeft: the round's byte bound spent by the first
// group leaves the next partition's for a later round, counted; a table
// of files at the target size has nothing to do, and says why.
func TestCompactSaysWhatItLeft(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl, clock := clockedTable(t, l)
		if res, err := tbl.Compact(ctx, CompactOptions{}); err != nil || res.Idle != "the table has no data files" {
			t.Fatalf("empty table: %+v, %v", res, err)
		}
		for i := range 8 {
			appendRows(t, tbl, fmt.Sprintf("gw-%d.csv", i), day0.Add(-time.Duration(i/4*24+1)*time.Hour), 3)
			*clock = clock.Add(time.Minute)
		}
		res, err := tbl.Compact(ctx, CompactOptions{DryRun: true, MaxBytes: 1})
		if err != nil || len(res.Groups) != 1 || res.Deferred != 1 || res.Idle != "" {
			t.Fatalf("bounded: %+v, %v", res, err)
		}
		if res, err := tbl.Compact(ctx, CompactOptions{DryRun: true, TargetFileSize: 1}); err != nil || len(res.Groups) != 0 ||
			res.Idle != "every data file is at least 1B (timelake.target-file-size)" {
			t.Fatalf("files at the target size: %+v, %v", res, err)
		}
	})
}

// TestCompactRacesAppends: an append committed between the compaction's
// planning and its commit does not conflict; a compaction whose inputs
// another compaction replaced gives up that group and leaves no file.
func TestCompactRacesAppends(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl, other := sixSmallFiles(t, l)
	fc := &faultyCatalog{Catalog: l.cat, before: func() { appendRows(t, other, "racer.csv", day0, 3) }}
	l.cat = fc
	res, err := tbl.Compact(ctx, CompactOptions{})
	l.cat = fc.Catalog
	if err != nil || len(res.Groups) != 1 || fc.commits != 2 {
		t.Fatalf("compaction racing an append: %+v, %v, %d commits", res, err, fc.commits)
	}
	if n := len(scanRows(t, tbl, 0)); n != 6*5+3 {
		t.Fatalf("%d rows, want %d", n, 6*5+3)
	}
	// A second compaction planned on the old version loses its inputs.
	for i := range 4 {
		appendRows(t, tbl, fmt.Sprintf("b-%d.csv", i), day0.Add(-time.Duration(i+1)*time.Hour), 5)
	}
	first, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	fc = &faultyCatalog{Catalog: l.cat, before: func() {
		if _, err := first.Compact(ctx, CompactOptions{}); err != nil {
			t.Error(err)
		}
	}}
	l.cat = fc
	res, err = tbl.Compact(ctx, CompactOptions{})
	l.cat = fc.Catalog
	if err != nil || len(res.Groups) != 0 || res.Dropped != 1 || res.SnapshotID != 0 {
		t.Fatalf("compaction whose inputs were replaced: %+v, %v", res, err)
	}
	fresh, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(scanRows(t, fresh, 0)); n != 6*5+3+4*5 {
		t.Fatalf("%d rows, want %d", n, 6*5+3+4*5)
	}
	requireConformantTable(t, l, fresh)
}

// TestCompactLandedBeforeItsVersionWasDeleted: a compaction's commit lands
// but its response is lost, and before it looks again other writers commit
// enough appends that its version is deleted as an old one (the table
// keeps write.metadata.previous-versions-max of them). The compaction is
// recognised as committed by its snapshot in the newest version: its new
// files and manifests stay, and every row is read once.
func TestCompactLandedBeforeItsVersionWasDeleted(t *testing.T) {
	forS3AndREST(t, func(t *testing.T, l *Lake, rest bool) {
		ctx := context.Background()
		tbl, other := sixSmallFiles(t, l)
		versions := DefaultMetadataVersions + 1
		_, restore := outlive(t, l, other, day0, versions, false)
		res, err := tbl.Compact(ctx, CompactOptions{})
		restore()
		if err != nil || len(res.Groups) != 1 || res.SnapshotID == 0 || res.Groups[0].FilesOut != 1 {
			t.Fatalf("compaction whose version was deleted before it learnt its outcome: %+v, %v", res, err)
		}
		fresh, err := l.LoadTable(ctx, testName)
		if err != nil {
			t.Fatal(err)
		}
		if fresh.Metadata().SnapshotByID(res.SnapshotID) == nil {
			t.Fatalf("the compaction's snapshot %d is not in the table", res.SnapshotID)
		}
		if n := len(scanRows(t, fresh, 0)); n != 6*5+versions*3 {
			t.Fatalf("%d rows, want %d", n, 6*5+versions*3)
		}
		if !rest {
			requireConformantTable(t, l, fresh)
		}
	})
}

// TestCompactExpiredBeforeItLearntItLanded: a compaction's commit lands
// but its response is lost, and before it looks again other writers commit
// enough appends that its version is deleted as an old one, and an expiry
// removes its snapshot (timelake.max-snapshots expires young snapshots
// too). Its new files are live in the newest version: the compaction keeps
// them and the manifests it wrote, and every row is read once.
func TestCompactExpiredBeforeItLearntItLanded(t *testing.T) {
	forS3AndREST(t, func(t *testing.T, l *Lake, _ bool) {
		ctx := context.Background()
		tbl, other := sixSmallFiles(t, l)
		versions := DefaultMetadataVersions + 1
		landed, restore := outlive(t, l, other, day0, versions, true)
		res, err := tbl.Compact(ctx, CompactOptions{})
		restore()
		compaction := *landed
		if err != nil {
			t.Fatalf("compaction whose snapshot expired before it learnt its outcome: %+v, %v", res, err)
		}
		fresh := expiredSnapshot(t, l, "compaction", compaction)
		if n := len(scanRows(t, fresh, 0)); n != 6*5+versions*3 {
			t.Fatalf("%d rows, want %d", n, 6*5+versions*3)
		}
	})
}

// requireConformantTable runs the conformance checks on a test table,
// orphans included (files of expired snapshots aside).
func requireConformantTable(t *testing.T, l *Lake, tbl *Table) {
	t.Helper()
	c := confOf(l, tbl.Name())
	requireConformant(t, c, contractWant{timeCol: "time", seriesKey: []string{"device"}, chunk: Day})
}

var _ = arrow.RecordBatch(nil)

// TestCompactMergesLargeFiles: a group with files too large to pool is
// merged file by file (merge.go); the rows are the same and sorted, ties
// and interleaved series included. A large file out of order (written by
// another tool) makes the group fall back to the whole-group sort.
func TestCompactMergesLargeFiles(t *testing.T) {
	forEachLake(t, testCompactMergesLargeFiles)
}

func testCompactMergesLargeFiles(t *testing.T, l *Lake) {
	ctx := context.Background()
	tbl, clock := clockedTable(t, l)
	base := day0.Add(-12 * time.Hour)
	const large = mergePoolFileRows + 4000
	// Three large files of the same devices, their times interleaved (the
	// first and the third identical: ties), and small ones in between.
	for i, off := range []time.Duration{0, 333 * time.Millisecond, 0} {
		rec := rowsAt(t, tbl, base.Add(off), large, 0)
		if _, err := tbl.Append(ctx, fmt.Sprintf("large-%d", i), []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		appendRows(t, tbl, fmt.Sprintf("small-%d.csv", i), day0.Add(-time.Duration(i+2)*time.Hour), 7)
	}
	before := scanRows(t, tbl, 0)
	*clock = clock.Add(2 * time.Hour) // cold: one group of all six
	dry, err := tbl.Compact(ctx, CompactOptions{DryRun: true})
	if err != nil || len(dry.Groups) != 1 || dry.Groups[0].FilesIn != 6 {
		t.Fatalf("plan: %+v, %v", dry, err)
	}
	pooled, streamed := splitMergeInputs(dry.Groups[0].Inputs)
	if len(pooled) != 3 || len(streamed) != 3 {
		t.Fatalf("merge inputs: %d pooled, %d streamed; want 3 and 3", len(pooled), len(streamed))
	}
	// The merge itself succeeds (Compact would fall back silently).
	merged, err := tbl.mergeGroup(ctx, tbl.view(), &dry.Groups[0], pooled, streamed)
	if err != nil || len(merged) != 1 || merged[0].Count() != dry.Groups[0].Rows {
		t.Fatalf("merge: %d files, %v", len(merged), err)
	}
	tbl.removeFiles(ctx, dataFilePaths(merged))
	res, err := tbl.Compact(ctx, CompactOptions{})
	if err != nil || len(res.Groups) != 1 || res.Groups[0].FilesOut != 1 {
		t.Fatalf("compaction: %+v, %v", res, err)
	}
	if got := scanRows(t, tbl, 0); !slices.Equal(got, before) {
		t.Fatalf("rows changed by the merge: %d rows, want %d", len(got), len(before))
	}
	checkSortedFiles(t, tbl)
	requireConformantTable(t, l, tbl)

	// A large file written unsorted, as another writer may: its rows in
	// reverse order.
	v := tbl.view()
	rec := rowsAt(t, tbl, base.Add(time.Second/2), large, 1)
	idx := make([]int64, large)
	for i := range idx {
		idx[i] = int64(large - 1 - i)
	}
	rev := takeRows(t, rec, idx)
	rec.Release()
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, v.iceberg, v.arrowSc, func(yield func(arrow.RecordBatch, error) bool) { yield(rev, nil) }) {
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, df)
	}
	p := &Prepared{BatchID: "foreign-unsorted", Rows: large, files: files, summary: iceberg.Properties{SummaryBatchID: "foreign-unsorted"}}
	if _, err := tbl.Commit(ctx, []*Prepared{p}, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	appendRows(t, tbl, "small-late.csv", day0.Add(-5*time.Hour), 7)
	before = scanRows(t, tbl, 0)
	*clock = clock.Add(2 * time.Hour)
	g := CompactionGroup{Inputs: liveInputs(t, tbl), Rows: int64(len(before))}
	if _, streamed := splitMergeInputs(g.Inputs); len(streamed) < 2 {
		t.Fatalf("%d files streamed, want the compacted file and the unsorted one", len(streamed))
	}
	_, err = tbl.mergeGroup(ctx, tbl.view(), &g, splitPooled(g.Inputs), splitStreamed(g.Inputs))
	if !errors.Is(err, errUnsortedRun) {
		t.Fatalf("merging an unsorted file: %v, want errUnsortedRun", err)
	}
	if res, err = tbl.Compact(ctx, CompactOptions{}); err != nil || len(res.Groups) != 1 || res.Groups[0].FilesIn != 3 {
		t.Fatalf("compaction with an unsorted file: %+v, %v", res, err)
	}
	if got := scanRows(t, tbl, 0); !slices.Equal(got, before) {
		t.Fatalf("rows changed by the fallback: %d rows, want %d", len(got), len(before))
	}
	checkSortedFiles(t, tbl)
}

func splitPooled(in []iceberg.DataFile) []iceberg.DataFile { p, _ := splitMergeInputs(in); return p }
func splitStreamed(in []iceberg.DataFile) []int            { _, s := splitMergeInputs(in); return s }

// liveInputs returns the current snapshot's data files.
func liveInputs(t testing.TB, tbl *Table) []iceberg.DataFile {
	t.Helper()
	h, _ := tbl.loaded()
	files, _, err := tbl.liveFiles(context.Background(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []iceberg.DataFile
	for _, f := range files {
		out = append(out, f.Entry.DataFile())
	}
	return out
}

// takeRows returns the rows idx of rec, in that order.
func takeRows(t testing.TB, rec arrow.RecordBatch, idx []int64) arrow.RecordBatch {
	t.Helper()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues(idx, nil)
	ia := b.NewArray()
	b.Release()
	defer ia.Release()
	out, err := compute.TakeArray(context.Background(), array.RecordToStructArray(rec), ia)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	return array.RecordFromStructArray(out.(*array.Struct), rec.Schema())
}

// TestCompactLeavesRowLevelDeletesAlone: rows another engine deleted with
// position delete files (merge-on-read) would come back if compaction
// rewrote their data files without the deletes: it plans nothing and says
// why.
func TestCompactLeavesRowLevelDeletesAlone(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl, clock := clockedTable(t, l)
	for i := range 6 {
		appendRows(t, tbl, fmt.Sprintf("gw-%d.csv", i), day0.Add(-time.Duration(i+2)*time.Hour), 7)
	}
	if err := tbl.SetProperties(ctx, map[string]string{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}, nil); err != nil {
		t.Fatal(err)
	}
	if err := tbl.commitTransaction(ctx, func(txn *table.Transaction) error {
		return txn.Delete(ctx, iceberg.EqualTo(iceberg.Reference("value"), 3.0), nil)
	}); err != nil {
		t.Fatal(err)
	}
	before := scanRows(t, tbl, 0)
	if len(before) != 6*7-6 {
		t.Fatalf("%d rows after the delete, want %d", len(before), 6*7-6)
	}
	*clock = clock.Add(2 * time.Hour)
	res, err := tbl.Compact(ctx, CompactOptions{})
	if err != nil || len(res.Groups) != 0 || res.Skipped == "" {
		t.Fatalf("compaction of a table with delete files: %+v, %v", res, err)
	}
	if got := scanRows(t, tbl, 0); !slices.Equal(got, before) {
		t.Fatalf("rows changed: %d rows, want %d", len(got), len(before))
	}
}

// TestCompactBoundsStreamedFiles: a cold partition of many files too large
// to pool is merged at most mergeMaxStreams files per group, then the
// groups' outputs once the partition is cold again; the rows stay the same.
func TestCompactBoundsStreamedFiles(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl, clock := clockedTable(t, l)
	const files = mergeMaxStreams + 2
	for i := range files {
		rec := rowsAt(t, tbl, day0.Add(-12*time.Hour+time.Duration(i)*time.Millisecond), mergePoolFileRows+1, i%3)
		if _, err := tbl.Append(ctx, fmt.Sprintf("mid-%d", i), []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	before := scanRows(t, tbl, 0)
	*clock = clock.Add(2 * time.Hour)
	res, err := tbl.Compact(ctx, CompactOptions{})
	if err != nil || len(res.Groups) != 2 || res.Groups[0].FilesIn != mergeMaxStreams || res.Groups[1].FilesIn != 2 {
		t.Fatalf("first round: %+v, %v; want groups of %d and 2 files", res.Groups, err, mergeMaxStreams)
	}
	// The outputs are new files: the partition is cold again after
	// compact-cold-after.
	*clock = clock.Add(2 * time.Hour)
	res, err = tbl.Compact(ctx, CompactOptions{})
	if err != nil || len(res.Groups) != 1 || res.Groups[0].FilesIn != 2 {
		t.Fatalf("second round: %+v, %v; want the two outputs merged", res.Groups, err)
	}
	if got := liveDataFiles(t, tbl); got["time_day=2026-01-05"] != 1 {
		t.Fatalf("files after two rounds: %v", got)
	}
	if got := scanRows(t, tbl, 0); !slices.Equal(got, before) {
		t.Fatalf("rows changed: %d rows, want %d", len(got), len(before))
	}
	checkSortedFiles(t, tbl)
}

// TestCompactExpiredBeforeItLearntItLandedKeepsFilesOfRetainedSnapshots: as
// TestCompactExpiredBeforeItLearntItLanded, but an append merges the
// compaction's manifest into one of its own and a later compaction
// replaces its new files before the expiry, which removes the
// compaction's snapshot and keeps the later ones. The newest snapshot
// names none of its files, the append's snapshot still does: the
// compaction keeps them, and every snapshot the table keeps can be read.
func TestCompactExpiredBeforeItLearntItLandedKeepsFilesOfRetainedSnapshots(t *testing.T) {
	ctx := context.Background()
	l := newS3Lake(t)
	tbl, other := sixSmallFiles(t, l)
	versions := DefaultMetadataVersions + 1
	var compaction, later int64
	fc := &faultyCatalog{Catalog: l.cat, lose: fmt.Errorf("put: %w", catalog.ErrVersionTaken), after: func() {
		if err := other.SetProperties(ctx, map[string]string{table.ManifestMinMergeCountKey: "2",
			"timelake.compact-min-files": "2"}, nil); err != nil {
			t.Fatal(err)
		}
		compaction = other.Metadata().CurrentSnapshot().SnapshotID
		appendRows(t, other, "late-0.csv", day0.Add(-30*time.Minute), 3)
		later = other.Metadata().CurrentSnapshot().SnapshotID
		if res, err := other.Compact(ctx, CompactOptions{}); err != nil || len(res.Groups) == 0 {
			t.Fatalf("the later compaction: %+v, %v", res, err)
		}
		for i := 1; i < versions; i++ {
			appendRows(t, other, fmt.Sprintf("late-%d.csv", i), day0, 3)
		}
		if _, err := other.Expire(ctx, ExpireOptions{RetainLast: versions + 1, RetainAtMost: versions + 1}); err != nil {
			t.Fatal(err)
		}
	}}
	l.cat = fc
	res, err := tbl.Compact(ctx, CompactOptions{})
	l.cat = fc.Catalog
	if err != nil {
		t.Fatalf("compaction whose snapshot expired before it learnt its outcome: %+v, %v", res, err)
	}
	fresh, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	if compaction == 0 || fresh.Metadata().SnapshotByID(compaction) != nil || fresh.Metadata().SnapshotByID(later) == nil {
		t.Fatalf("the compaction's snapshot %d was not expired, or the append's %d was: the race did not take place", compaction, later)
	}
	if n := len(scanRows(t, fresh, 0)); n != 6*5+versions*3 {
		t.Fatalf("%d rows, want %d", n, 6*5+versions*3)
	}
	if n := len(scanRows(t, fresh, later)); n != 6*5+3 {
		t.Fatalf("the append's snapshot %d: %d rows, want %d", later, n, 6*5+3)
	}
}

// TestCompactLandedOnAnUnreadableVersion: another writer sets a property
// this build cannot read (an unknown timelake.chunk) while a compaction
// runs; the compaction's commit lands on that version, and then the Table
// cannot hold it. The compaction fails, but its new files, which the
// table now references, stay: every row is read once.
func TestCompactLandedOnAnUnreadableVersion(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl, other := sixSmallFiles(t, l)
	fc := &faultyCatalog{Catalog: l.cat, before: func() {
		// Committed, then refused by the Table that committed it.
		if err := other.SetProperties(ctx, map[string]string{PropChunk: "fortnight"}, nil); err == nil {
			t.Error("a table of timelake.chunk=fortnight was held")
		}
	}}
	l.cat = fc
	_, err := tbl.Compact(ctx, CompactOptions{})
	l.cat = fc.Catalog
	if err == nil {
		t.Fatal("compaction held a version of timelake.chunk=fortnight")
	}
	if err := other.SetProperties(ctx, nil, []string{PropChunk}); err != nil {
		t.Fatal(err)
	}
	fresh, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	if s := fresh.Metadata().CurrentSnapshot(); s == nil || s.Summary == nil || s.Summary.Operation != "replace" {
		t.Fatalf("the compaction did not land: current snapshot %+v", s)
	}
	if n := len(scanRows(t, fresh, 0)); n != 6*5 {
		t.Fatalf("%d rows, want %d", n, 6*5)
	}
}

// sixSmallFiles is a new table of l holding six appends of 5 rows, an
// hour apart, one day (a compaction group), and a second handle on it
// (another writer).
func sixSmallFiles(t *testing.T, l *Lake) (tbl, other *Table) {
	t.Helper()
	tbl = createTestTable(t, l)
	for i := range 6 {
		appendRows(t, tbl, fmt.Sprintf("a-%d.csv", i), day0.Add(-time.Duration(i+1)*time.Hour), 5)
	}
	other, err := l.LoadTable(context.Background(), testName)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, other
}
