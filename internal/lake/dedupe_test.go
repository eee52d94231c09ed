package lake

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/maintenance"
)

func TestMergeRunsNewest(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	k, err := newSortKey(testSchema, Contract{TimeColumn: "time", SeriesKey: []string{"device"}, Chunk: Day})
	if err != nil {
		t.Fatal(err)
	}
	// Three runs ranked 1 < 5 < 9 (the newest batch last), one with a key
	// twice across its two batches, and a null device.
	older := sliceRun(mem, "older", 1,
		[]mergeRow{{0, 1, "", 1}, {0, 1, "a", 2}, {0, 2, "a", 3}},
		[]mergeRow{{0, 3, "a", 4}, {1, 0, "b", 5}})
	middle := sliceRun(mem, "middle", 5,
		[]mergeRow{{0, 2, "a", 30}, {0, 2, "b", 31}, {0, 2, "b", 32}},
		[]mergeRow{{0, 2, "b", 33}})
	newest := sliceRun(mem, "newest", 9,
		[]mergeRow{{0, 1, "", 100}, {0, 2, "a", 300}, {1, 0, "b", 500}})
	var got []string
	for rec, err := range mergeRunsNewest(context.Background(), mem, testSchema, k, []*mergeRun{newest, older, middle}, 2) {
		if err != nil {
			t.Fatal(err)
		}
		times := rec.Column(0).(*array.Timestamp)
		for i := range int(rec.NumRows()) {
			at := times.Value(i).ToTime(arrow.Microsecond).Sub(day0)
			got = append(got, fmt.Sprintf("%v:%s:%s", at, rec.Column(1).ValueStr(i), rec.Column(2).ValueStr(i)))
		}
		rec.Release()
	}
	want := []string{
		"1s:(null):100", // the newest run's null key wins
		"1s:a:2",
		"2s:a:300", // three runs, the newest wins
		"3s:a:4",
		"2s:b:33", // three rows of one run, the last wins
		"24h0m0s:b:500",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("merged:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// dedupeTable is the test table with timelake.read-dedup on.
func dedupeTable(t testing.TB, l *Lake) (*Table, *time.Time) {
	t.Helper()
	tbl, clock := clockedTable(t, l)
	if err := tbl.SetProperties(context.Background(), map[string]string{PropReadDedup: "true"}, nil); err != nil {
		t.Fatal(err)
	}
	return tbl, clock
}

// appendValues appends rows of device d at day0+minutes with values.
func appendValues(t testing.TB, tbl *Table, batch string, d string, minutes []int, values []float64) AppendResult {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
	defer b.Release()
	for i, m := range minutes {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(day0.Add(time.Duration(m) * time.Minute).UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append(d)
		b.Field(2).(*array.Float64Builder).Append(values[i])
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	res, err := tbl.Append(context.Background(), batch, []arrow.RecordBatch{rec}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestReadDedupAppendKeepsTheLastRowOfAKey(t *testing.T) {
	l := newLocalLake(t)
	tbl, _ := dedupeTable(t, l)
	res := appendValues(t, tbl, "a.csv", "d1", []int{1, 2, 1, 3, 2}, []float64{10, 20, 11, 30, 21})
	if res.Rows != 3 {
		t.Fatalf("rows = %d, want 3", res.Rows)
	}
	if got := scanRows(t, tbl, 0); len(got) != 3 || !strings.HasSuffix(got[0], "d1|11|") || !strings.HasSuffix(got[1], "d1|21|") {
		t.Fatalf("rows = %q", got)
	}
	if s := tbl.Metadata().CurrentSnapshot().Summary.Properties; s[SummaryReplacedRows] != "2" || s["added-records"] != "3" {
		t.Fatalf("summary = %v", s)
	}
}

func TestReadDedupCompactionKeepsTheNewestBatch(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		tbl, clock := dedupeTable(t, l)
		appendValues(t, tbl, "a.csv", "d1", []int{1, 2, 3}, []float64{1, 2, 3})
		appendValues(t, tbl, "b.csv", "d2", []int{1, 2, 3}, []float64{1, 2, 3})
		appendValues(t, tbl, "a-fix.csv", "d1", []int{2}, []float64{200}) // the correction
		if got := len(scanRows(t, tbl, 0)); got != 7 {
			t.Fatalf("before compaction readers see %d rows", got)
		}
		d, err := tbl.UnresolvedDuplicates(ctx)
		if err != nil || !d.ReadDedup || d.Rows != 1 || !slices.Equal(d.Partitions, []string{"time_day=2026-01-05"}) {
			t.Fatalf("duplicates before: %+v %v", d, err)
		}
		// Live partition: the tier needs 4 files; cold, its sharing files
		// are merged.
		*clock = clock.Add(2 * time.Hour)
		res, err := tbl.Compact(ctx, CompactOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Groups) == 0 || res.Groups[0].Replaced != 1 {
			t.Fatalf("compaction: %+v", res)
		}
		got := scanRows(t, tbl, 0)
		want := []string{"d1|1|", "d1|200|", "d1|3|", "d2|1|", "d2|2|", "d2|3|"}
		for i := range got {
			got[i] = got[i][strings.Index(got[i], "|")+1:]
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("rows after compaction = %q, want %q", got, want)
		}
		snap := tbl.Metadata().CurrentSnapshot()
		if snap.Summary.Operation != table.OpOverwrite || snap.Summary.Properties[SummaryReplacedRows] != "1" {
			t.Fatalf("snapshot %+v", snap.Summary)
		}
		// The new files keep the newest input's data sequence number.
		h, _ := tbl.loaded()
		files, _, err := tbl.liveFiles(ctx, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		if seq := files[0].Entry.SequenceNum(); seq >= h.LastSeq() {
			t.Fatalf("the new file's data sequence number %d is the compaction's (%d), not its newest input's", seq, h.LastSeq())
		}
		if d, err := tbl.UnresolvedDuplicates(ctx); err != nil || d.Rows != 0 {
			t.Fatalf("duplicates after: %+v %v", d, err)
		}
		// A second correction, newer than the compacted file, wins over it.
		appendValues(t, tbl, "a-fix2.csv", "d1", []int{2, 3}, []float64{2000, 3000})
		*clock = clock.Add(2 * time.Hour)
		if _, err := tbl.Compact(ctx, CompactOptions{}); err != nil {
			t.Fatal(err)
		}
		got = scanRows(t, tbl, 0)
		if len(got) != 6 || !slices.ContainsFunc(got, func(s string) bool { return strings.HasSuffix(s, "d1|2000|") }) ||
			!slices.ContainsFunc(got, func(s string) bool { return strings.HasSuffix(s, "d1|3000|") }) {
			t.Fatalf("rows after the second correction: %q", got)
		}
	})
}

func TestReadDedupGroupsAreClosed(t *testing.T) {
	ctx := context.Background()
	l := newLocalLake(t)
	tbl, _ := dedupeTable(t, l)
	appendValues(t, tbl, "a.csv", "d1", []int{1, 2}, []float64{1, 2})
	appendValues(t, tbl, "b.csv", "d1", []int{2}, []float64{20})
	appendValues(t, tbl, "c.csv", "d1", []int{2}, []float64{200})
	appendValues(t, tbl, "z.csv", "d9", []int{5}, []float64{9})
	h, _ := tbl.loaded()
	files, _, err := tbl.liveFiles(ctx, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(files, maintenance.BySequence)
	cols := boundColumns(h)
	a, b, c, z := files[0], files[1], files[2], files[3]
	if !maintenance.MayShareKeys(a, c, cols) || maintenance.MayShareKeys(a, z, cols) {
		t.Fatal("bounds overlap wrongly judged")
	}
	group := func(fs ...liveFile) CompactionGroup {
		g := CompactionGroup{Partition: a.Partition}
		for _, f := range fs {
			g.Inputs = append(g.Inputs, f.Entry.DataFile())
		}
		return g
	}
	if maintenance.ClosedGroup(group(a, c), files, cols) {
		t.Error("{a, c} is closed although b, between them, shares a key")
	}
	if maintenance.ClosedGroup(group(a, z), files, cols) {
		t.Error("{a, z} is closed although b and c, between them, share a key with a")
	}
	if !maintenance.ClosedGroup(group(a, b), files, cols) || !maintenance.ClosedGroup(group(b, c), files, cols) || !maintenance.ClosedGroup(group(c, z), files, cols) {
		t.Error("a closed group judged open")
	}
	if comps := maintenance.SharingComponents(files, cols); len(comps) != 1 || len(comps[0]) != 3 {
		t.Fatalf("components = %d", len(comps))
	}
}
