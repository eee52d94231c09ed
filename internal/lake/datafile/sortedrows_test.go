package datafile

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var sortedRowsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "dev", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
}, nil)

// sortedRowsInput builds n rows in batches of the given sizes (cycled):
// random times over 3 days, or times in order with devices cycling (how
// gateways write), or rows already in table order.
func sortedRowsInput(t *testing.T, mem memory.Allocator, shape string, n int, sizes []int) []arrow.RecordBatch {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	base := time.Date(2026, 1, 5, 20, 0, 0, 0, time.UTC)
	devs := []string{"c", "a", "b", "aa"}
	var out []arrow.RecordBatch
	b := array.NewRecordBuilder(mem, sortedRowsSchema)
	defer b.Release()
	flush := func() {
		out = append(out, b.NewRecordBatch())
	}
	size := 0
	for i := range n {
		var ts time.Time
		dev := devs[i%len(devs)]
		switch shape {
		case "random":
			ts = base.Add(time.Duration(rng.IntN(3*86400)) * time.Second)
			dev = devs[rng.IntN(len(devs))]
		case "time order":
			ts = base.Add(time.Duration(i/len(devs)*60) * time.Second)
		case "table order":
			// one device per 0.25 day partition slice, in order
			ts = base.Add(time.Duration(i) * time.Minute)
			dev = "d"
		}
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts.UnixMicro()))
		if shape == "random" && rng.IntN(8) == 0 {
			b.Field(1).(*array.StringBuilder).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(dev)
		}
		b.Field(2).(*array.Float64Builder).Append(float64(i))
		b.Field(3).(*array.BooleanBuilder).Append(i%3 == 0)
		if i%5 == 0 {
			b.Field(4).(*array.Decimal128Builder).AppendNull()
		} else {
			b.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i)))
		}
		size++
		if size == sizes[len(out)%len(sizes)] {
			flush()
			size = 0
		}
	}
	if size > 0 {
		flush()
	}
	return out
}

// flatRows renders rows as strings, in order.
func flatRows(recs []arrow.RecordBatch) [][]string {
	var out [][]string
	for _, r := range recs {
		for i := range int(r.NumRows()) {
			row := make([]string, r.NumCols())
			for c := range row {
				row[c] = r.Column(c).ValueStr(i)
			}
			out = append(out, row)
		}
	}
	return out
}

// TestSortedRowsMatchesReference checks the counting sort and the chunked
// take against a plain stable sort with the comparators, over every split
// of the rows into write ranges, and that ranges hold whole partitions.
func TestSortedRowsMatchesReference(t *testing.T) {
	tests := []struct {
		shape string
		n     int
		sizes []int
		keys  []string
	}{
		{"random", 3000, []int{3000}, []string{"dev"}},
		{"random", 3000, []int{700, 1, 450}, []string{"dev"}},
		{"random", 2000, []int{300}, []string{"dev", "v"}},
		{"random", 2000, []int{300}, nil},
		{"time order", 4000, []int{1000, 999}, []string{"dev"}},
		{"table order", 3000, []int{512}, []string{"dev"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s %d in %v by %v", tc.shape, tc.n, tc.sizes, tc.keys), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			recs := sortedRowsInput(t, mem, tc.shape, tc.n, tc.sizes)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			// Reference: concatenate, stable sort by the comparators.
			tbl := array.NewTableFromRecords(sortedRowsSchema, recs)
			defer tbl.Release()
			cols := make([]arrow.Array, tbl.NumCols())
			for i := range cols {
				c, err := array.Concatenate(tbl.Column(i).Data().Chunks(), mem)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Release()
				cols[i] = c
			}
			times := cols[0].(*array.Timestamp)
			cmps := []func(i, j int) int{func(i, j int) int {
				return cmpInt(byDay(times.Value(i), arrow.Microsecond), byDay(times.Value(j), arrow.Microsecond))
			}}
			for _, k := range tc.keys {
				c, err := columnComparator(cols[sortedRowsSchema.FieldIndices(k)[0]])
				if err != nil {
					t.Fatal(err)
				}
				cmps = append(cmps, c)
			}
			cmps = append(cmps, func(i, j int) int { return cmpInt(int64(times.Value(i)), int64(times.Value(j))) })
			order := make([]int, tc.n)
			for i := range order {
				order[i] = i
			}
			sort.SliceStable(order, func(a, b int) bool { return less(cmps, order[a], order[b]) })
			var want [][]string
			for _, i := range order {
				row := make([]string, len(cols))
				for c := range row {
					row[c] = cols[c].ValueStr(i)
				}
				want = append(want, row)
			}

			s, err := NewSortedRows(mem, sortedRowsSchema, recs, dailyOrder(tc.keys...))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release()
			if s.Len() != tc.n {
				t.Fatalf("Len = %d, want %d", s.Len(), tc.n)
			}
			if (s.perm == nil) != (tc.shape == "table order") {
				t.Fatalf("in order = %v for shape %s", s.perm == nil, tc.shape)
			}
			for _, k := range []int{1, 2, 4, 7, 100} {
				var got [][]string
				prevEnd := 0
				for _, r := range s.Split(k) {
					if r[0] != prevEnd || r[1] <= r[0] {
						t.Fatalf("split(%d): range %v after %d", k, r, prevEnd)
					}
					if r[0] > 0 && want[r[0]-1][0][:10] == want[r[0]][0][:10] {
						t.Fatalf("split(%d): range %v starts inside a partition", k, r)
					}
					prevEnd = r[1]
					var batches []arrow.RecordBatch
					for rec, err := range s.Batches(context.Background(), r[0], r[1], 333) {
						if err != nil {
							t.Fatal(err)
						}
						if rec.NumRows() > 333 || !rec.Schema().Equal(sortedRowsSchema) {
							t.Fatalf("batch of %d rows, schema %s", rec.NumRows(), rec.Schema())
						}
						batches = append(batches, rec)
					}
					// Each batch holds one partition, and ends short of
					// 333 rows only where its partition or the range does.
					at := r[0]
					for _, b := range batches {
						n := int(b.NumRows())
						if day := want[at][0][:10]; want[at+n-1][0][:10] != day {
							t.Fatalf("split(%d): batch at row %d spans two partitions", k, at)
						}
						if at += n; n < 333 && at < r[1] && want[at-1][0][:10] == want[at][0][:10] {
							t.Fatalf("split(%d): batch of %d rows ends inside a partition at row %d", k, n, at)
						}
					}
					got = append(got, flatRows(batches)...)
					for _, b := range batches {
						b.Release()
					}
				}
				if prevEnd != tc.n {
					t.Fatalf("split(%d) covers %d of %d rows", k, prevEnd, tc.n)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("split(%d): rows differ from the reference order", k)
				}
			}
			// sortRows (all batches at once) agrees too.
			all, err := sortRows(context.Background(), mem, sortedRowsSchema, recs, dailyOrder(tc.keys...), 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(flatRows(all), want) {
				t.Fatalf("sortRows differs from the reference order")
			}
			for _, r := range all {
				r.Release()
			}
		})
	}
}

// TestWriteRanges checks that files come back in range order whatever order
// the writers finish in, and that an error cancels the other writers and
// still returns the files written.
func TestWriteRanges(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		ranges  [][2]int
		failAt  int // range index whose writer fails after one file; -1 none
		want    []string
		wantErr error
	}{
		{name: "one range", ranges: [][2]int{{0, 10}}, failAt: -1, want: []string{"0-10/a", "0-10/b"}},
		{name: "several", ranges: [][2]int{{0, 3}, {3, 5}, {5, 9}, {9, 10}}, failAt: -1,
			want: []string{"0-3/a", "0-3/b", "3-5/a", "3-5/b", "5-9/a", "5-9/b", "9-10/a", "9-10/b"}},
		{name: "error", ranges: [][2]int{{0, 3}, {3, 5}}, failAt: 1, wantErr: boom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			write := func(ctx context.Context, start, end int) iter.Seq2[string, error] {
				return func(yield func(string, error) bool) {
					// Later ranges finish first.
					time.Sleep(time.Duration(10-start) * time.Millisecond)
					if !yield(fmt.Sprintf("%d-%d/a", start, end), nil) {
						return
					}
					if tc.failAt >= 0 && tc.ranges[tc.failAt][0] == start {
						yield("", boom)
						return
					}
					if err := ctx.Err(); err != nil {
						yield("", err)
						return
					}
					yield(fmt.Sprintf("%d-%d/b", start, end), nil)
				}
			}
			got, err := WriteRanges(context.Background(), tc.ranges, 2, write)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				if len(got) == 0 {
					t.Fatalf("no files returned with the error: the caller could not remove them")
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("files %v, want %v", got, tc.want)
			}
		})
	}
}

// BenchmarkSortedRows orders 800,000 rows in time order with 4 devices
// cycling (a c2-sized gateway file, in 64K-row batches) and takes every
// sorted batch.
func BenchmarkSortedRows(b *testing.B) {
	t := &testing.T{}
	recs := sortedRowsInput(t, memory.DefaultAllocator, "time order", 800_000, []int{64 * 1024})
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		s, err := NewSortedRows(memory.DefaultAllocator, sortedRowsSchema, recs, dailyOrder("dev"))
		if err != nil {
			b.Fatal(err)
		}
		for rec, err := range s.Batches(ctx, 0, s.Len(), 0) {
			if err != nil {
				b.Fatal(err)
			}
			rec.Release()
		}
		s.Release()
	}
}

// sortRows returns every row of recs in table order (see SortedRows) as
// batches of at most batchRows rows. The caller releases the returned
// batches; recs are not released.
func sortRows(ctx context.Context, mem memory.Allocator, sc *arrow.Schema, recs []arrow.RecordBatch,
	o Order, batchRows int,
) ([]arrow.RecordBatch, error) {
	s, err := NewSortedRows(mem, sc, recs, o)
	if err != nil {
		return nil, err
	}
	defer s.Release()
	var out []arrow.RecordBatch
	for rec, err := range s.Batches(ctx, 0, s.Len(), batchRows) {
		if err != nil {
			for _, r := range out {
				r.Release()
			}
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}
