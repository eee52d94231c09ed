package lake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// mergeRow is (day, device or "" for null, second of the day, value).
type mergeRow struct {
	day, sec int
	device   string
	value    float64
}

func mergeBatch(mem memory.Allocator, rows ...mergeRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	for _, r := range rows {
		at := day0.Add(time.Duration(r.day)*24*time.Hour + time.Duration(r.sec)*time.Second)
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixMicro()))
		if r.device == "" {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(r.device)
		}
		b.Field(2).(*array.Float64Builder).Append(r.value)
	}
	return b.NewRecordBatch()
}

// sliceRun is a run of batches built as they are read.
func sliceRun(mem memory.Allocator, name string, order int, batches ...[]mergeRow) *mergeRun {
	return pullRun(name, order, func(yield func(arrow.RecordBatch, error) bool) {
		for _, rows := range batches {
			if !yield(mergeBatch(mem, rows...), nil) {
				return
			}
		}
	})
}

func TestMergeRuns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	k, err := newSortKey(testSchema, Contract{TimeColumn: "time", SeriesKey: []string{"device"}, Chunk: Day})
	if err != nil {
		t.Fatal(err)
	}
	// Nulls first, ties in run order, two partitions.
	a := sliceRun(mem, "a", 0,
		[]mergeRow{{0, 1, "", 1}, {0, 2, "a", 2}, {0, 1, "b", 3}},
		[]mergeRow{{1, 0, "a", 4}})
	b := sliceRun(mem, "b", 1,
		[]mergeRow{{0, 1, "", 10}, {0, 1, "a", 11}, {1, 0, "a", 12}})
	var got []string
	for rec, err := range mergeRuns(context.Background(), mem, testSchema, k, []*mergeRun{b, a}, 2) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumRows() > 2 {
			t.Errorf("batch of %d rows, want at most 2", rec.NumRows())
		}
		times := rec.Column(0).(*array.Timestamp)
		var parts []string
		for i := range int(rec.NumRows()) {
			day := times.Value(i).ToTime(arrow.Microsecond).Sub(day0) / (24 * time.Hour)
			parts = append(parts, fmt.Sprintf("%d:%s:%s", day, rec.Column(1).ValueStr(i), rec.Column(2).ValueStr(i)))
		}
		got = append(got, strings.Join(parts, " "))
		rec.Release()
	}
	want := []string{"0:(null):1 0:(null):10", "0:a:11 0:a:2", "0:b:3", "1:a:4 1:a:12"}
	if !slices.Equal(got, want) {
		t.Errorf("merged batches %q, want %q", got, want)
	}

	// A run out of order ends the merge; every batch is released.
	c := sliceRun(mem, "c", 0, []mergeRow{{0, 5, "a", 1}, {0, 4, "a", 2}})
	d := sliceRun(mem, "d", 1, []mergeRow{{0, 1, "a", 3}})
	var mergeErr error
	for rec, err := range mergeRuns(context.Background(), mem, testSchema, k, []*mergeRun{c, d}, 8) {
		if err != nil {
			mergeErr = err
			break
		}
		rec.Release()
	}
	if !errors.Is(mergeErr, errUnsortedRun) || !strings.Contains(mergeErr.Error(), "c: row 1") {
		t.Fatalf("unsorted run: %v", mergeErr)
	}

	// Out of order across two batches of a run.
	e := sliceRun(mem, "e", 0, []mergeRow{{0, 5, "a", 1}}, []mergeRow{{0, 4, "a", 2}})
	mergeErr = nil
	for rec, err := range mergeRuns(context.Background(), mem, testSchema, k, []*mergeRun{e}, 8) {
		if err != nil {
			mergeErr = err
			break
		}
		rec.Release()
	}
	if !errors.Is(mergeErr, errUnsortedRun) {
		t.Fatalf("run out of order across batches: %v", mergeErr)
	}

	// A consumer that stops early leaves nothing held.
	f := sliceRun(mem, "f", 0, []mergeRow{{0, 1, "a", 1}, {0, 2, "a", 2}}, []mergeRow{{0, 3, "a", 3}})
	for rec := range mergeRuns(context.Background(), mem, testSchema, k, []*mergeRun{f}, 1) {
		rec.Release()
		break
	}
}
