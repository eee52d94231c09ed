package lake

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
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
