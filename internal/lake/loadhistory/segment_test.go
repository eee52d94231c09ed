package loadhistory

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func TestSegmentRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	in := []Record{
		{Key: "gw-2/b.csv", Size: 10, SHA256: "aa", Rows: 3, SnapshotID: 7, LoadedAt: at,
			LandedAt: at.Add(-time.Minute), MaxRowTime: at.Add(-90*time.Second + time.Microsecond), LoadedBy: LoadedBySweep},
		{Key: "gw-1/a.csv.gz", Size: 20, SHA256: "bb", ContentSHA256: "cc", Rows: 0, SnapshotID: -8, LoadedAt: at.Add(time.Second)},
		{Key: "gw-3/c.csv", Size: 5, SHA256: "dd", LoadedAt: at, Status: OutcomeRejected, Reason: "gw-3/c.csv: row 2: bad",
			QuarantinedTo: "_rejected/gw-3/c.csv", LoadedBy: LoadedByPoll},
		{Key: "gw-3/d.csv", Size: 5, SHA256: "aa", SnapshotID: 7, LoadedAt: at, Status: OutcomeDuplicate, SameAs: "gw-2/b.csv"},
	}
	body, err := EncodeSegment(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeSegment(context.Background(), body)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 || out[0] != in[1] || out[1] != in[0] || out[2] != in[2] || out[3] != in[3] {
		t.Fatalf("round trip: %+v, want %+v sorted by key", out, in)
	}
	if out[0].ContentHash() != "cc" || out[1].ContentHash() != "aa" {
		t.Fatal("content hash: the content sum of a compressed file, else its sum")
	}
	if out[1].Outcome() != OutcomeLoaded || out[2].Outcome() != OutcomeRejected {
		t.Errorf("outcomes %q %q", out[1].Outcome(), out[2].Outcome())
	}
	// The footer describes 14 columns: most of a small segment.
	if n := len(body); n > 4000 {
		t.Errorf("segment of four records is %d bytes", n)
	}
}

func TestSegmentBytesPerKey(t *testing.T) {
	// The budget: the load history costs at most 100 bytes per key.
	recs := gatewayRecords(20000)
	body, err := EncodeSegment(recs)
	if err != nil {
		t.Fatal(err)
	}
	if per := float64(len(body)) / float64(len(recs)); per > 100 {
		t.Errorf("%.1f bytes per key, want at most 100", per)
	}
}

func TestPlanSegmentsTiers(t *testing.T) {
	now := time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC)
	window := 14 * 24 * time.Hour
	var segs []SegmentInfo
	add := func(records int, newest time.Time) {
		segs = append(segs, SegmentInfo{Name: fmt.Sprintf("s%d", len(segs)), Newest: newest, Records: records})
	}
	for range 7 {
		add(20, now.Add(-time.Hour)) // a full tier 1 (8..63 records) but one
	}
	add(30, now.Add(-15*24*time.Hour)) // past the window
	p := PlanSegments(segs, make([]Record, 20), now, window)
	if len(p.Dropped) != 1 || p.Dropped[0].Name != "s7" {
		t.Errorf("dropped %v, want s7 (past the window)", p.Dropped)
	}
	if len(p.Merge) != 7 || len(p.Keep) != 0 {
		t.Errorf("merge %d, keep %d: the 8th segment of tier 1 merges the tier", len(p.Merge), len(p.Keep))
	}
	p = PlanSegments(segs[:3], make([]Record, 20), now, window)
	if len(p.Merge) != 0 || len(p.Keep) != 3 {
		t.Errorf("merge %d, keep %d: a tier below the fan-in is kept", len(p.Merge), len(p.Keep))
	}
	if p := PlanSegments(segs[:3], nil, now, window); len(p.Keep) != 3 || len(p.Merge)+len(p.Dropped) != 0 {
		t.Errorf("nothing added, nothing expired: %+v", p)
	}
}

// BenchmarkSegmentIndex measures what a run spends to look keys up in a
// day of 20 gateways' history (28,800 keys in one segment): "decode"
// builds the index from the segment (a run without the cached index),
// "cached" reads the index file the cache folder keeps.
func BenchmarkSegmentIndex(b *testing.B) {
	recs := gatewayRecords(28800)
	body, err := EncodeSegment(recs)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode", func(b *testing.B) {
		for range b.N {
			out, err := DecodeSegment(context.Background(), body)
			if err != nil {
				b.Fatal(err)
			}
			IndexSegment(SegmentInfo{}, out)
		}
	})
	idx := EncodeIndex(IndexSegment(SegmentInfo{}, recs))
	b.Run("cached", func(b *testing.B) {
		for range b.N {
			if _, ok := DecodeIndex(SegmentInfo{}, idx); !ok {
				b.Fatal("index not read")
			}
		}
	})
}

// TestSegmentOfAnOlderVersion: a segment written with the first seven
// columns reads, the later ones zero.
func TestSegmentOfAnOlderVersion(t *testing.T) {
	old := arrow.NewSchema(segmentSchema.Fields()[:7], nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, old)
	defer b.Release()
	at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	b.Field(0).(*array.StringBuilder).Append("gw/a.csv")
	b.Field(1).(*array.Int64Builder).Append(10)
	b.Field(2).(*array.StringBuilder).Append("aa")
	b.Field(3).(*array.StringBuilder).AppendNull()
	b.Field(4).(*array.Int64Builder).Append(3)
	b.Field(5).(*array.Int64Builder).Append(7)
	b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixMilli()))
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(old, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	recs, err := DecodeSegment(context.Background(), buf.Bytes())
	want := Record{Key: "gw/a.csv", Size: 10, SHA256: "aa", Rows: 3, SnapshotID: 7, LoadedAt: at}
	if err != nil || len(recs) != 1 || recs[0] != want || recs[0].Outcome() != OutcomeLoaded {
		t.Fatalf("%+v, %v; want %+v", recs, err, want)
	}
}

// gatewayRecords is the load history of n files of 20 gateways, one file per
// gateway and minute from 2026-01-05.
func gatewayRecords(n int) []Record {
	at := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	recs := make([]Record, 0, n)
	for i := range n {
		gw, minute := i%20, i/20
		recs = append(recs, Record{
			Key:    fmt.Sprintf("gateway-%d/%s.csv", gw, at.Add(time.Duration(minute)*time.Minute).Format("20060102T1504")),
			Size:   int64(3000 + i%500),
			SHA256: fmt.Sprintf("%064x", uint64(i)*0x9e3779b97f4a7c15^uint64(i)<<17),
			Rows:   100, SnapshotID: int64(minute)*1000003 + 17, LoadedAt: at.Add(time.Duration(minute) * time.Minute),
		})
	}
	return recs
}
