package lake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The compacted-month fixture: 30 days of 8 series (devices s0..s7), one
// row per series and minute, loaded as 4 appends of 6 hours per day and
// then compacted, every day into one file.
const (
	monthDays       = 30
	monthSeries     = 8
	monthRowsPerDay = monthSeries * 24 * 60
)

var monthStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// seriesRows builds one batch of the test schema: a row per series and
// minute of [from, from+span), devices s0..s<monthSeries-1>, values drawn
// from a generator seeded with from (the same rows on every run).
func seriesRows(tb testing.TB, sc *arrow.Schema, from time.Time, span time.Duration) arrow.RecordBatch {
	tb.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	rnd := rand.New(rand.NewPCG(uint64(from.Unix()), 1))
	for m := range int(span / time.Minute) {
		for s := range monthSeries {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(from.Add(time.Duration(m) * time.Minute).UnixMicro()))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("s%d", s))
			b.Field(2).(*array.Float64Builder).Append(float64(rnd.IntN(100_000)) / 100)
		}
	}
	return b.NewRecordBatch()
}

// compactedMonth creates the test table in the warehouse at dir and loads
// and compacts the fixture.
func compactedMonth(tb testing.TB, dir string) *Table {
	tb.Helper()
	ctx := context.Background()
	l, err := Open(ctx, dir, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tbl := createTestTable(tb, l)
	for d := range monthDays {
		day := monthStart.AddDate(0, 0, d)
		ps := make([]*Prepared, 4)
		for q := range ps {
			rec := seriesRows(tb, tbl.ArrowSchema(), day.Add(time.Duration(q)*6*time.Hour), 6*time.Hour)
			p, err := tbl.Prepare(ctx, fmt.Sprintf("%s/%d.csv", day.Format(time.DateOnly), q), []arrow.RecordBatch{rec}, nil, 0)
			rec.Release()
			if err != nil {
				tb.Fatal(err)
			}
			ps[q] = p
		}
		if _, err := tbl.Commit(ctx, ps, CommitOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond) // older than ColdAfter below
	res, err := tbl.Compact(ctx, CompactOptions{ColdAfter: time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	if len(res.Groups) != monthDays || res.SnapshotID == 0 {
		tb.Fatalf("compaction: %d groups, snapshot %d; want %d", len(res.Groups), res.SnapshotID, monthDays)
	}
	if live := liveByPartition(tb, tbl); len(live) != monthDays {
		tb.Fatalf("%d partitions live after compaction, want %d", len(live), monthDays)
	}
	return tbl
}

// liveFileInfo is a live data file: its path and size.
type liveFileInfo struct {
	path string
	size int64
}

// liveByPartition returns the live data files of tbl by partition
// (time_day=2026-01-05).
func liveByPartition(tb testing.TB, tbl *Table) map[string][]liveFileInfo {
	tb.Helper()
	h, _ := tbl.loaded()
	files, _, err := tbl.liveFiles(context.Background(), h, nil)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string][]liveFileInfo{}
	for _, f := range files {
		df := f.Entry.DataFile()
		out[f.Partition] = append(out[f.Partition], liveFileInfo{df.FilePath(), df.FileSizeBytes()})
	}
	for _, fs := range out {
		slices.SortFunc(fs, func(a, b liveFileInfo) int { return strings.Compare(a.path, b.path) })
	}
	return out
}

// oneSeriesDay is the predicate of the benchmark and its test: series s3
// on the 15th day.
func oneSeriesDay() DeletePredicate {
	day := monthStart.AddDate(0, 0, 14)
	return DeletePredicate{Where: []WhereColumn{{Column: "device", Values: []string{"s3"}}}, From: day, To: day.AddDate(0, 0, 1)}
}

// TestDeleteOneDayOf30: deleting one series' rows of one day from a table
// of 30 compacted days reads and rewrites that day's file alone; the other
// 29 are skipped on their partition and stay live, the same files.
func TestDeleteOneDayOf30(t *testing.T) {
	ctx := context.Background()
	tbl := compactedMonth(t, t.TempDir())
	before := liveByPartition(t, tbl)
	target := "time_day=" + monthStart.AddDate(0, 0, 14).Format(time.DateOnly)
	in := before[target]
	if len(in) != 1 {
		t.Fatalf("partition %s holds %v, want one file", target, in)
	}
	var progress DeleteProgress
	res, err := tbl.Delete(ctx, DeleteOptions{Predicate: oneSeriesDay(), Progress: func(p DeleteProgress) { progress = p }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Read != 1 || res.Skipped != monthDays-1 || res.Rewritten != 1 || res.Dropped != 0 ||
		res.Rows != 24*60 || res.Bytes != in[0].size || res.SnapshotID == 0 {
		t.Fatalf("delete: %+v; want 1 file read and rewritten (%d bytes), %d skipped, %d rows", res, in[0].size, monthDays-1, 24*60)
	}
	if progress.Files != 1 || progress.FilesRead != 1 || progress.Bytes != in[0].size || progress.BytesRead != in[0].size {
		t.Fatalf("progress: %+v; want the one file of %s (%d bytes) to read, and read", progress, target, in[0].size)
	}
	after := liveByPartition(t, tbl)
	if len(after) != monthDays {
		t.Fatalf("%d partitions live, want %d", len(after), monthDays)
	}
	for p, files := range before {
		if p == target {
			if len(after[p]) != 1 || after[p][0].path == in[0].path || after[p][0].size >= in[0].size {
				t.Fatalf("partition %s: %v live after the delete, was %v; want one new, smaller file", p, after[p], in)
			}
			continue
		}
		if !slices.Equal(after[p], files) {
			t.Fatalf("partition %s: %v live after the delete, was %v", p, after[p], files)
		}
	}
	rows := scanTestRows(t, tbl)
	if len(rows) != monthDays*monthRowsPerDay-24*60 {
		t.Fatalf("%d rows left, want %d", len(rows), monthDays*monthRowsPerDay-24*60)
	}
	pred := oneSeriesDay()
	if n := countRows(rows, func(r testRow) bool {
		return r.device == "s3" && !r.at.Before(pred.From) && r.at.Before(pred.To)
	}); n != 0 {
		t.Fatalf("%d rows of s3 on %s left", n, pred.From.Format(time.DateOnly))
	}
	if n := countRows(rows, func(r testRow) bool { return !r.at.Before(pred.From) && r.at.Before(pred.To) }); n != monthRowsPerDay-24*60 {
		t.Fatalf("%d rows left on %s, want %d", n, pred.From.Format(time.DateOnly), monthRowsPerDay-24*60)
	}
}

// BenchmarkDeleteOneDayOf30 measures one delete of one series' rows of one
// day (1,440 rows) from a local table of 30 compacted days of 8 series,
// each day one file. Between iterations (not timed) the warehouse folder is
// put back as it was before the delete. It reports the files the delete
// read, skipped (not read) and rewrote, and the bytes it rewrote, per
// delete, and the seconds the fixture took (setup-s, not timed).
func BenchmarkDeleteOneDayOf30(b *testing.B) {
	ctx := context.Background()
	began := time.Now()
	dir, saved := b.TempDir(), b.TempDir()
	compactedMonth(b, dir)
	if err := os.CopyFS(saved, os.DirFS(dir)); err != nil {
		b.Fatal(err)
	}
	setup := time.Since(began)
	var res DeleteResult
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		if err := os.CopyFS(dir, os.DirFS(saved)); err != nil {
			b.Fatal(err)
		}
		l, err := Open(ctx, dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		tbl, err := l.LoadTable(ctx, testName)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err = tbl.Delete(ctx, DeleteOptions{Predicate: oneSeriesDay()})
		if err != nil {
			b.Fatal(err)
		}
		if res.Rows != 24*60 || res.SnapshotID == 0 {
			b.Fatalf("delete: %+v", res)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(res.Read), "files-read/op")
	b.ReportMetric(float64(res.Skipped), "files-skipped/op")
	b.ReportMetric(float64(res.Rewritten), "files-rewritten/op")
	b.ReportMetric(float64(res.Bytes), "bytes-rewritten/op")
	b.ReportMetric(setup.Seconds(), "setup-s")
}
