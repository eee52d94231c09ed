package lake

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestBatchWriterCountsRepeatedRows: Prepared.Repeated adds up the rows of
// each Write whose device and time an earlier row of the same Write has (a
// row repeating one of an earlier Write is not counted), with or without
// timelake.read-dedup (which leaves those rows out: Replaced); Discard
// starts the count over.
func TestBatchWriterCountsRepeatedRows(t *testing.T) {
	ctx := context.Background()
	piece := func(tbl *Table, devs []string, minutes []int) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, tbl.ArrowSchema())
		defer b.Release()
		for i, m := range minutes {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(day0.Add(time.Duration(m) * time.Minute).UnixMicro()))
			if devs[i] == "" {
				b.Field(1).(*array.StringBuilder).AppendNull()
			} else {
				b.Field(1).(*array.StringBuilder).Append(devs[i])
			}
			b.Field(2).(*array.Float64Builder).Append(float64(i))
		}
		return b.NewRecordBatch()
	}
	for _, dedupe := range []bool{false, true} {
		l := newLocalLake(t)
		tbl := createTestTable(t, l)
		if dedupe {
			if err := tbl.SetProperties(ctx, map[string]string{PropReadDedup: "true"}, nil); err != nil {
				t.Fatal(err)
			}
		}
		w, err := tbl.NewBatchWriter("gw/a.csv", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The first piece: d1 at 120 three times, the null device twice
		// (rows of two days, out of order): 3 repeats.
		first := piece(tbl, []string{"d1", "d2", "d1", "", "", "d1", "d1"}, []int{120, 120, 5, 7, 7, 120, 5})
		defer first.Release()
		// The second: d1 at 5 again (a repeat of the first piece's: not
		// counted), d2 at 120 twice: 1 repeat.
		second := piece(tbl, []string{"d1", "d2", "d2"}, []int{5, 120, 120})
		defer second.Release()
		for _, rec := range []arrow.RecordBatch{first, second} {
			if err := w.Write(ctx, []arrow.RecordBatch{rec}); err != nil {
				t.Fatal(err)
			}
		}
		p := w.Prepared()
		if p.Repeated != 4 {
			t.Errorf("read-dedup %v: %d repeated rows, want 4", dedupe, p.Repeated)
		}
		if wantReplaced := map[bool]int64{false: 0, true: 4}[dedupe]; p.Replaced != wantReplaced || p.Rows != 10-wantReplaced {
			t.Errorf("read-dedup %v: %d rows, %d replaced; want %d, %d", dedupe, p.Rows, p.Replaced, 10-wantReplaced, wantReplaced)
		}
		w.Discard(ctx)
		if err := w.Write(ctx, []arrow.RecordBatch{second}); err != nil {
			t.Fatal(err)
		}
		if p := w.Prepared(); p.Repeated != 1 {
			t.Errorf("read-dedup %v, after Discard: %d repeated rows, want 1", dedupe, p.Repeated)
		}
		w.Discard(ctx)
	}
}
