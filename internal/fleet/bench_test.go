package fleet

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/peakheap"
)

// generatedLanding is a landing bucket of n keys of 100 gateways, made up
// as its listing goes (the store holds none of them), with an empty
// quarantine: what an audit's memory holds is the audit's alone.
type generatedLanding struct {
	storage.Store // nil: only List is called
	n             int
	modified      time.Time
}

func (g generatedLanding) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	if prefix != "" {
		return nil // the quarantine, the alert state
	}
	for i := range g.n {
		key := fmt.Sprintf("gw-%03d/20260105T%07d.csv", i%100, i)
		if err := fn(storage.ObjectInfo{Key: key, Size: 96, LastModified: g.modified}); err != nil {
			return err
		}
	}
	return nil
}

func (g generatedLanding) URI() string { return "generated" }

// BenchmarkAudit audits landing buckets of 10,000 and 1,000,000 keys, none
// of them loaded and all stuck, against a table with a load history: the
// peak heap (peak-heap-MiB) stays the same whatever the bucket's size,
// since the audit keeps only each finding's first files and its counts.
func BenchmarkAudit(b *testing.B) {
	ctx := context.Background()
	l, err := lake.Open(ctx, filepath.Join(b.TempDir(), "lake"), lake.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tbl := newTable(b, l)
	now := time.Now().UTC()
	for i := range 20 {
		load(b, tbl, fmt.Sprintf("gw-%03d/loaded.csv", i), "x", now, now, lake.LoadedByPoll)
	}
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			bucket := &landing.Bucket{Store: generatedLanding{n: n, modified: now.Add(-time.Hour)}}
			var peak uint64
			for range b.N {
				runtime.GC()
				stop := peakheap.Sample(&peak)
				rep, err := Audit(ctx, AuditOptions{Bucket: bucket, Table: tbl, Now: now})
				stop()
				if err != nil {
					b.Fatal(err)
				}
				if f, _ := findingOf(rep, FindingStuck); f.Count != n || len(f.Files) != DefaultAuditLimit {
					b.Fatalf("stuck: %d (%d listed), want %d", f.Count, len(f.Files), n)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(n), "keys")
		})
	}
}

// findingOf returns rep's finding of kind.
func findingOf(rep *AuditReport, kind string) (Finding, bool) {
	for _, f := range rep.Findings {
		if f.Kind == kind {
			return f, true
		}
	}
	return Finding{}, false
}
