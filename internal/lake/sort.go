package lake

import (
	"context"
	"fmt"
	"math"
	"slices"
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

	perm, sorted, err := sortPermutation(cols, sc, times, unit, chunk, seriesKey, keys)
	if err != nil {
		return nil, err
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

// rowKey is the sort key of one row when the series key has at most two
// columns: the partition ordinal, each series column as an int64 rank
// (nulls first), the time, and the row index as the final tie-break, which
// makes the order stable.
type rowKey struct {
	part, k1, k2, time int64
	row                int64
}

// sortPermutation returns the row order. The common case (at most two
// series key columns) sorts flat keys, several times faster than comparing
// through the Arrow arrays; other shapes use the generic comparators.
func sortPermutation(cols []arrow.Array, sc *arrow.Schema, times *array.Timestamp, unit arrow.TimeUnit,
	chunk Granularity, seriesKey []string, keys []func(i, j int) int,
) ([]int64, bool, error) {
	n := times.Len()
	perm := make([]int64, n)
	if len(seriesKey) > 2 {
		for i := range perm {
			perm[i] = int64(i)
		}
		sorted := sort.SliceIsSorted(perm, func(a, b int) bool { return less(keys, int(perm[a]), int(perm[b])) })
		if !sorted {
			sort.SliceStable(perm, func(a, b int) bool { return less(keys, int(perm[a]), int(perm[b])) })
		}
		return perm, sorted, nil
	}
	ranks := make([][]int64, 2)
	for k, name := range seriesKey {
		r, err := columnRanks(cols[sc.FieldIndices(name)[0]])
		if err != nil {
			return nil, false, fmt.Errorf("series key column %q: %w", name, err)
		}
		ranks[k] = r
	}
	rk := make([]rowKey, n)
	for i := range rk {
		t := times.Value(i)
		rk[i] = rowKey{part: chunk.bucket(t, unit), time: int64(t), row: int64(i)}
		if ranks[0] != nil {
			rk[i].k1 = ranks[0][i]
		}
		if ranks[1] != nil {
			rk[i].k2 = ranks[1][i]
		}
	}
	cmpKey := func(a, b rowKey) int {
		switch {
		case a.part != b.part:
			return cmpInt(a.part, b.part)
		case a.k1 != b.k1:
			return cmpInt(a.k1, b.k1)
		case a.k2 != b.k2:
			return cmpInt(a.k2, b.k2)
		case a.time != b.time:
			return cmpInt(a.time, b.time)
		}
		return cmpInt(a.row, b.row)
	}
	sorted := slices.IsSortedFunc(rk, cmpKey)
	if !sorted {
		slices.SortFunc(rk, cmpKey)
	}
	for i := range rk {
		perm[i] = rk[i].row
	}
	return perm, sorted, nil
}

// columnRanks maps each row of a column to an int64 that orders like the
// value, nulls first (-1 for strings, math.MinInt64 for numbers).
func columnRanks(c arrow.Array) ([]int64, error) {
	out := make([]int64, c.Len())
	switch a := c.(type) {
	case *array.String:
		uniq := map[string]int64{}
		for i := range out {
			if !a.IsNull(i) {
				uniq[a.Value(i)] = 0
			}
		}
		names := make([]string, 0, len(uniq))
		for v := range uniq {
			names = append(names, v)
		}
		slices.Sort(names)
		for r, v := range names {
			uniq[v] = int64(r)
		}
		for i := range out {
			if a.IsNull(i) {
				out[i] = -1
			} else {
				out[i] = uniq[a.Value(i)]
			}
		}
		return out, nil
	case *array.Int64, *array.Int32, *array.Timestamp, *array.Date32, *array.Boolean:
		for i := range out {
			switch {
			case c.IsNull(i):
				out[i] = math.MinInt64
			default:
				switch v := a.(type) {
				case *array.Int64:
					out[i] = v.Value(i)
				case *array.Int32:
					out[i] = int64(v.Value(i))
				case *array.Timestamp:
					out[i] = int64(v.Value(i))
				case *array.Date32:
					out[i] = int64(v.Value(i))
				case *array.Boolean:
					if v.Value(i) {
						out[i] = 1
					}
				}
			}
		}
		return out, nil
	case *array.Float64, *array.Float32:
		for i := range out {
			if c.IsNull(i) {
				out[i] = math.MinInt64
				continue
			}
			var f float64
			if v, ok := a.(*array.Float64); ok {
				f = v.Value(i)
			} else {
				f = float64(a.(*array.Float32).Value(i))
			}
			if f == 0 {
				f = 0 // -0 sorts as 0
			}
			// Order-preserving map of IEEE 754 bits to signed integers.
			b := int64(math.Float64bits(f))
			if b < 0 {
				b ^= math.MaxInt64
			}
			if b == math.MinInt64 {
				b++ // keep MinInt64 for nulls
			}
			out[i] = b
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot sort by type %s (use a string, integer, float, boolean or timestamp column)", c.DataType())
}
