package lake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/timelake/timelake/internal/lake/loadhistory"
	"github.com/timelake/timelake/internal/testutil/peakheap"
)

// BenchmarkAppend measures one append (one snapshot, one metadata write) on
// a local table that grows by b.N snapshots, and reports the live heap at
// the end: it must stay flat as the table's history grows (a retained
// metadata copy per commit once made it grow quadratically).
func BenchmarkAppend(b *testing.B) {
	l := newLocalLake(b)
	tbl := createTestTable(b, l)
	rec := rows(b, tbl.ArrowSchema(), day0, 100, false)
	defer rec.Release()
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if _, err := tbl.Append(ctx, fmt.Sprint(i), []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(len(tbl.Metadata().Snapshots())), "snapshots")
}

// BenchmarkCommitBatch measures committing 100 prepared batches (100
// snapshots) in one metadata write.
func BenchmarkCommitBatch(b *testing.B) {
	l := newLocalLake(b)
	tbl := createTestTable(b, l)
	rec := rows(b, tbl.ArrowSchema(), day0, 100, false)
	defer rec.Release()
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		ps := make([]*Prepared, 100)
		for j := range ps {
			p, err := tbl.Prepare(ctx, fmt.Sprintf("%d/%d", i, j), []arrow.RecordBatch{rec}, nil, 0)
			if err != nil {
				b.Fatal(err)
			}
			ps[j] = p
		}
		b.StartTimer()
		if _, err := tbl.Commit(ctx, ps, CommitOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(100, "snapshots/op")
}

// gatewaySchema is the benchmark's gateway table (bench/tlbench gen).
var gatewaySchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "device_id", Type: arrow.BinaryTypes.String},
	{Name: "site", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "temperature_c", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "humidity_pct", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "battery_v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// gatewayBatch is one landing file of the benchmark as decoded: n rows of
// 10 devices, in time order (one reading per device every 10 s from
// start), or, with spanDays > 0, at random times over that many days.
func gatewayBatch(tb testing.TB, sc *arrow.Schema, start time.Time, n, spanDays int) arrow.RecordBatch {
	tb.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for j := range n {
		t := start.Add(time.Duration(j/10) * 10 * time.Second)
		if spanDays > 0 {
			t = start.Add(time.Duration(rng.Int64N(int64(spanDays) * 24 * int64(time.Hour))))
		}
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(t.UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("dev-01-%02d", j%10))
		b.Field(2).(*array.StringBuilder).Append("north-field-station")
		b.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(400))/10 - 5)
		b.Field(4).(*array.Float64Builder).Append(float64(rng.IntN(1000)) / 10)
		b.Field(5).(*array.Float64Builder).Append(3 + float64(rng.IntN(120))/100)
	}
	return b.NewRecordBatch()
}

// BenchmarkPrepare measures writing one landing file's rows as data files
// (sort, Parquet encoding, local files) without the commit: "parquet" is a
// file of the bench's c3 case (40,000 rows in time order over 11 hours,
// crossing midnight), "90days" one of c4 (10,000 rows at random times over
// 90 days: 90 data files).
func BenchmarkPrepare(b *testing.B) {
	for _, c := range []struct {
		name           string
		rows, spanDays int
	}{{"parquet", 40_000, 0}, {"90days", 10_000, 90}} {
		b.Run(c.name, func(b *testing.B) {
			l := newLocalLake(b)
			tbl, err := l.CreateTable(context.Background(), testName, gatewaySchema,
				CreateSpec{TimeColumn: "time", SeriesKey: []string{"device_id"}, Partition: Day})
			if err != nil {
				b.Fatal(err)
			}
			rec := gatewayBatch(b, tbl.ArrowSchema(), time.Date(2026, 1, 5, 18, 0, 0, 0, time.UTC), c.rows, c.spanDays)
			defer rec.Release()
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				p, err := tbl.Prepare(ctx, fmt.Sprint(i), []arrow.RecordBatch{rec}, nil, 0)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				tbl.Discard(ctx, p)
				b.StartTimer()
			}
			b.ReportMetric(float64(c.rows), "rows/op")
		})
	}
}

// BenchmarkRewriteGroup measures rewriting one compaction group of six
// large, well-compressed files of one day (86,400 rows each, sorted, the
// same devices with interleaved times: the merge's worst case) into one, by the merge of the sorted files ("merge", what
// compaction does) and by reading the group whole and sorting it ("whole",
// the fallback for a file out of order), and reports the peak of the Go
// heap during the rewrite (sampled every millisecond): the merge's must
// not grow with the group.
func BenchmarkRewriteGroup(b *testing.B) {
	ctx := context.Background()
	l := newLocalLake(b)
	tbl, err := l.CreateTable(ctx, testName, gatewaySchema,
		CreateSpec{TimeColumn: "time", SeriesKey: []string{"device_id"}, Partition: Day})
	if err != nil {
		b.Fatal(err)
	}
	const files, rowsPerFile = 6, 86_400
	for i := range files {
		rec := gatewayBatch(b, tbl.ArrowSchema(), time.Date(2026, 1, 5, 0, 0, i, 0, time.UTC), rowsPerFile, 0)
		if _, err := tbl.Append(ctx, fmt.Sprint(i), []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
			b.Fatal(err)
		}
		rec.Release()
	}
	inputs := liveInputs(b, tbl)
	g := &CompactionGroup{Inputs: inputs, Rows: files * rowsPerFile}
	for _, df := range inputs {
		g.BytesIn += df.FileSizeBytes()
	}
	for _, mode := range []string{"merge", "whole"} {
		b.Run(mode, func(b *testing.B) {
			var peak uint64
			for range b.N {
				runtime.GC()
				stop := peakheap.Sample(&peak)
				var out []iceberg.DataFile
				if mode == "merge" {
					pooled, streamed := splitMergeInputs(inputs)
					out, err = tbl.mergeGroup(ctx, tbl.view(), g, pooled, streamed)
				} else {
					out, err = tbl.rewriteWhole(ctx, tbl.view(), g)
				}
				stop()
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				tbl.removeFiles(ctx, dataFilePaths(out))
				b.StartTimer()
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(g.BytesIn)/(1<<20), "input-MiB")
		})
	}
}

// BenchmarkScanHistory measures ScanHistory over a day of 20 gateways
// (28,800 loaded keys in one segment, and 1,000 outcomes), read from the
// cache folder as a poller's status after each run reads it.
func BenchmarkScanHistory(b *testing.B) {
	ctx := context.Background()
	l, err := Open(ctx, b.TempDir(), Options{CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	tbl := createTestTable(b, l)
	now := time.Now().UTC()
	// A day of 20 gateways' files (the segment format's own benchmarks in
	// loadhistory use the same shape).
	recs := make([]LoadRecord, 28_800)
	for i := range recs {
		recs[i] = LoadRecord{Key: fmt.Sprintf("gateway-%d/%05d.csv", i%20, i/20), Size: int64(3000 + i%500),
			SHA256: fmt.Sprintf("%064x", i), Rows: 100, SnapshotID: int64(i/20) + 1, LoadedAt: now.Add(-time.Duration(i) * time.Second)}
	}
	name, err := l.writeTestSegment(ctx, loadHistoryLog, recs)
	if err != nil {
		b.Fatal(err)
	}
	if err := tbl.SetProperties(ctx, map[string]string{PropLoadHistory: name}, nil); err != nil {
		b.Fatal(err)
	}
	outcomes := make([]LoadRecord, 1000)
	for i := range outcomes {
		outcomes[i] = LoadRecord{Key: fmt.Sprintf("gw-%02d/r%04d.csv", i%20, i), LoadedAt: now, Status: OutcomeRejected, Reason: "a reason"}
	}
	if err := tbl.RecordOutcomes(ctx, outcomes); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		n := 0
		if _, err := tbl.ScanHistory(ctx, func(LoadRecord) error { n++; return nil }); err != nil || n != 29_800 {
			b.Fatalf("%d records, %v", n, err)
		}
	}
}

// writeTestSegment writes recs as one segment of g and returns its name.
func (l *Lake) writeTestSegment(ctx context.Context, g recordLog, recs []LoadRecord) (string, error) {
	_, name, err := l.writeSegment(ctx, testName, g, loadhistory.Plan{Added: recs}, time.Now(), DefaultDedupeWindow)
	return name, err
}

// longHistory is the snapshot count of the LongHistory benchmarks' tables.
const longHistory = 2000

// appendSmall commits n small appends to tbl, of 5 rows each at start and
// of their own batch ids prefix/0, prefix/1, ..., one snapshot each, 100
// per metadata write.
func appendSmall(tb testing.TB, tbl *Table, prefix string, start time.Time, n int) {
	tb.Helper()
	ctx := context.Background()
	rec := rows(tb, tbl.ArrowSchema(), start, 5, false)
	defer rec.Release()
	for done := 0; done < n; {
		ps := make([]*Prepared, min(100, n-done))
		for j := range ps {
			p, err := tbl.Prepare(ctx, fmt.Sprintf("%s/%d", prefix, done+j), []arrow.RecordBatch{rec}, nil, 0)
			if err != nil {
				tb.Fatal(err)
			}
			ps[j] = p
		}
		if _, err := tbl.Commit(ctx, ps, CommitOptions{}); err != nil {
			tb.Fatal(err)
		}
		done += len(ps)
	}
}

// longHistoryTable creates the test table on a local warehouse with
// longHistory snapshots of small appends in one day (no maintenance: they
// all stay).
func longHistoryTable(b *testing.B) *Table {
	b.Helper()
	tbl := createTestTable(b, newLocalLake(b))
	appendSmall(b, tbl, "history", day0.Add(-12*time.Hour), longHistory)
	if n := len(tbl.Metadata().Snapshots()); n != longHistory {
		b.Fatalf("%d snapshots after setup, want %d", n, longHistory)
	}
	return tbl
}

// BenchmarkAppendLongHistory measures one append of 5 rows (one batch,
// one snapshot, one metadata write) on a local table of 2,000 snapshots,
// and reports the seconds the table's setup took (setup-s, not timed).
func BenchmarkAppendLongHistory(b *testing.B) {
	began := time.Now()
	tbl := longHistoryTable(b)
	setup := time.Since(began)
	rec := rows(b, tbl.ArrowSchema(), day0, 5, false)
	defer rec.Release()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := tbl.Append(ctx, fmt.Sprint(i), []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(tbl.Metadata().Snapshots())), "snapshots")
	b.ReportMetric(setup.Seconds(), "setup-s")
}

// BenchmarkCompactLongHistory measures one compaction (one replace
// snapshot) of 8 small files, appended as 8 snapshots to a day of their
// own, on a local table of 2,000 snapshots whose own small files were
// compacted before the timer started (setup-s, with the table's setup).
func BenchmarkCompactLongHistory(b *testing.B) {
	const files = 8
	began := time.Now()
	tbl := longHistoryTable(b)
	ctx := context.Background()
	if res, err := tbl.Compact(ctx, CompactOptions{}); err != nil || res.SnapshotID == 0 {
		b.Fatalf("compaction of the history: %+v, %v", res, err)
	}
	setup := time.Since(began)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		appendSmall(b, tbl, fmt.Sprintf("day-%d", i), day0.Add(time.Duration(i+1)*24*time.Hour), files)
		b.StartTimer()
		res, err := tbl.Compact(ctx, CompactOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Groups) != 1 || res.Groups[0].FilesIn != files || res.SnapshotID == 0 {
			b.Fatalf("compaction %d: %+v", i, res)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(tbl.Metadata().Snapshots())), "snapshots")
	b.ReportMetric(setup.Seconds(), "setup-s")
}
