package lake

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// sortRows concatenates recs (all of schema sc) and returns batches of at
// most batchRows rows sorted by (partition of the time column, series key
// columns, time), ascending with nulls first: the order timelake-format.md
// asks for inside data files. Iceberg-go applies a table sort order per
// record batch only, so the whole append is sorted here. The caller releases
// the returned batches; recs are not released.
func sortRows(ctx context.Context, mem memory.Allocator, sc *arrow.Schema, recs []arrow.RecordBatch,
	timeCol string, seriesKey []string, chunk Granularity, batchRows int,
) ([]arrow.RecordBatch, error) {
	cols := make([]arrow.Array, sc.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range sc.NumFields() {
		parts := make([]arrow.Array, 0, len(recs))
		for _, r := range recs {
			parts = append(parts, r.Column(i))
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			return nil, fmt.Errorf("concatenate column %s: %w", sc.Field(i).Name, err)
		}
		cols[i] = c
	}
	n := 0
	if len(cols) > 0 {
		n = cols[0].Len()
	}

	ti := sc.FieldIndices(timeCol)
	if len(ti) != 1 {
		return nil, fmt.Errorf("time column %q not in schema", timeCol)
	}
	times, ok := cols[ti[0]].(*array.Timestamp)
	if !ok {
		return nil, fmt.Errorf("time column %q is %s, expected a timestamp", timeCol, cols[ti[0]].DataType())
	}
	unit := times.DataType().(*arrow.TimestampType).Unit
	keys := make([]func(i, j int) int, 0, len(seriesKey)+2)
	keys = append(keys, func(i, j int) int {
		return cmpInt(chunk.bucket(times.Value(i), unit), chunk.bucket(times.Value(j), unit))
	})
	for _, k := range seriesKey {
		idx := sc.FieldIndices(k)
		if len(idx) != 1 {
			return nil, fmt.Errorf("series key column %q not in schema", k)
		}
		cmp, err := columnComparator(cols[idx[0]])
		if err != nil {
			return nil, fmt.Errorf("series key column %q: %w", k, err)
		}
		keys = append(keys, cmp)
	}
	keys = append(keys, func(i, j int) int { return cmpInt(int64(times.Value(i)), int64(times.Value(j))) })

	perm := make([]int64, n)
	for i := range perm {
		perm[i] = int64(i)
	}
	sorted := sort.SliceIsSorted(perm, func(a, b int) bool { return less(keys, int(perm[a]), int(perm[b])) })
	if !sorted {
		sort.SliceStable(perm, func(a, b int) bool { return less(keys, int(perm[a]), int(perm[b])) })
	}

	if batchRows <= 0 {
		batchRows = 64 * 1024
	}
	var out []arrow.RecordBatch
	release := func() {
		for _, r := range out {
			r.Release()
		}
	}
	for start := 0; start < n; start += batchRows {
		if err := ctx.Err(); err != nil {
			release()
			return nil, err
		}
		end := min(start+batchRows, n)
		bld := array.NewInt64Builder(mem)
		bld.AppendValues(perm[start:end], nil)
		idx := bld.NewArray()
		bld.Release()
		taken := make([]arrow.Array, len(cols))
		for i, c := range cols {
			var t arrow.Array
			var err error
			if sorted {
				t = array.NewSlice(c, int64(start), int64(end))
			} else {
				t, err = compute.TakeArray(ctx, c, idx)
			}
			if err != nil {
				idx.Release()
				for _, tt := range taken[:i] {
					tt.Release()
				}
				release()
				return nil, fmt.Errorf("reorder column %s: %w", sc.Field(i).Name, err)
			}
			taken[i] = t
		}
		idx.Release()
		rec := array.NewRecordBatch(sc, taken, int64(end-start))
		for _, t := range taken {
			t.Release()
		}
		out = append(out, rec)
	}
	return out, nil
}

func less(keys []func(i, j int) int, i, j int) bool {
	for _, k := range keys {
		if c := k(i, j); c != 0 {
			return c < 0
		}
	}
	return false
}

func cmpInt[T int64 | int32 | float64 | float32](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// columnComparator orders two rows of one column, nulls first.
func columnComparator(c arrow.Array) (func(i, j int) int, error) {
	withNulls := func(f func(i, j int) int) func(i, j int) int {
		return func(i, j int) int {
			ni, nj := c.IsNull(i), c.IsNull(j)
			switch {
			case ni && nj:
				return 0
			case ni:
				return -1
			case nj:
				return 1
			}
			return f(i, j)
		}
	}
	switch a := c.(type) {
	case *array.String:
		return withNulls(func(i, j int) int {
			x, y := a.Value(i), a.Value(j)
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}), nil
	case *array.Int64:
		return withNulls(func(i, j int) int { return cmpInt(a.Value(i), a.Value(j)) }), nil
	case *array.Int32:
		return withNulls(func(i, j int) int { return cmpInt(a.Value(i), a.Value(j)) }), nil
	case *array.Float64:
		return withNulls(func(i, j int) int { return cmpInt(a.Value(i), a.Value(j)) }), nil
	case *array.Float32:
		return withNulls(func(i, j int) int { return cmpInt(a.Value(i), a.Value(j)) }), nil
	case *array.Boolean:
		return withNulls(func(i, j int) int {
			x, y := a.Value(i), a.Value(j)
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		}), nil
	case *array.Timestamp:
		return withNulls(func(i, j int) int { return cmpInt(int64(a.Value(i)), int64(a.Value(j))) }), nil
	case *array.Date32:
		return withNulls(func(i, j int) int { return cmpInt(int32(a.Value(i)), int32(a.Value(j))) }), nil
	}
	return nil, fmt.Errorf("cannot sort by type %s (use a string, integer, float, boolean or timestamp column)", c.DataType())
}
