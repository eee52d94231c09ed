package datafile

import (
	"context"
	"fmt"
	"iter"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Order is a table's row order inside its data files
// (docs/table-format.md): by the partition of the time column, the series
// key columns, then time, ascending with nulls first, ties in input order.
type Order struct {
	TimeColumn string   // timelake.time-column
	SeriesKey  []string // timelake.series-key
	// Partition maps a time of the given unit to the ordinal of its
	// partition (timelake.chunk: hour, day or month), monotonic in time.
	Partition func(arrow.Timestamp, arrow.TimeUnit) int64
}

// SortedRows holds the rows of one append in Order.
// Iceberg-go applies a table sort order per record batch only, so the whole
// append is ordered here. The rows are not copied in that order up front,
// nor concatenated: Batches takes them from the input batches on demand,
// so that only the batches being written are held twice.
type SortedRows struct {
	mem      memory.Allocator
	sc       *arrow.Schema
	cols     []*arrow.Chunked // the input columns: the input batches' arrays, or one concatenated array (see chunkedTake)
	perm     []int64          // sorted position -> input row; nil when already in order
	runs     []int            // start of each partition's rows in sorted order, then the row count
	runParts []int64          // the partition ordinal of each run
	// newest keeps one row of each (partition, series key, time), the
	// last in input order (timelake.read-dedup): the others are left out
	// of perm.
	newest bool
	// dicts are the columns Take returns as dictionary arrays
	// (WithDictionaries), by column; nil when none.
	dicts []*dictionaryColumn
	// dictLayout is the layout whose dictionary columns Take returns as
	// dictionary arrays (WithDictionaries); keyRanks are the ranks of the
	// string series key columns the order was computed from, by column,
	// until encodeDictionaries takes them.
	dictLayout *Layout
	keyRanks   map[int]stringRanking
	// repeated is RepeatedRows.
	repeated int64
}

// chunkedTake reports whether arrow's take reads values of type dt from
// several chunks in place (fixed-width and variable-length binary types);
// for other types it concatenates the chunks on every call, so they are
// concatenated once up front instead.
func chunkedTake(dt arrow.DataType) bool {
	return arrow.IsPrimitive(dt.ID()) || arrow.IsBaseBinary(dt.ID())
}

// NewSortedRows takes recs (all of schema sc; retained, not released) and
// computes their order. Errors name a missing or unsortable time or series
// key column. The caller releases the result.
func NewSortedRows(mem memory.Allocator, sc *arrow.Schema, recs []arrow.RecordBatch, o Order, opts ...SortOption) (*SortedRows, error) {
	return newSortedRows(mem, sc, recs, o, false, opts)
}

// NewNewestRows is NewSortedRows keeping one row of each key, the last in
// input order (timelake.read-dedup).
func NewNewestRows(mem memory.Allocator, sc *arrow.Schema, recs []arrow.RecordBatch, o Order, opts ...SortOption) (*SortedRows, error) {
	return newSortedRows(mem, sc, recs, o, true, opts)
}

// A SortOption prepares more of the sorted rows than their order.
type SortOption func(*SortedRows)

// WithDictionaries makes Take return the string columns of few values
// that the writer of layout l would give a dictionary
// (Layout.DictionaryColumns) as dictionary arrays, one dictionary per
// partition (dictionary.go). Only l's writer (Write) takes such batches.
func WithDictionaries(l *Layout) SortOption {
	return func(s *SortedRows) { s.dictLayout = l }
}

func newSortedRows(mem memory.Allocator, sc *arrow.Schema, recs []arrow.RecordBatch, o Order, newest bool, opts []SortOption) (*SortedRows, error) {
	s, err := newChunkedRows(mem, sc, recs)
	if err != nil {
		return nil, err
	}
	s.newest = newest
	for _, opt := range opts {
		opt(s)
	}
	var early map[int]func() numbered
	if s.dictLayout != nil { // numbered while the rows are sorted
		early = s.startStringCodes(s.dictLayout, o.SeriesKey)
	}
	if err := s.order(o); err != nil {
		for _, wait := range early {
			wait()
		}
		s.Release()
		return nil, err
	}
	if s.dictLayout != nil {
		if err := s.encodeDictionaries(s.dictLayout, early); err != nil {
			s.Release()
			return nil, err
		}
	}
	return s, nil
}

// TakeRows builds one batch of schema sc of the rows idx of recs (indexes
// into the rows of recs one after the other, each row at most once), in
// idx's order: a merge's output batch.
func TakeRows(ctx context.Context, mem memory.Allocator, sc *arrow.Schema, recs []arrow.RecordBatch, idx []int64) (arrow.RecordBatch, error) {
	s, err := newChunkedRows(mem, sc, recs)
	if err != nil {
		return nil, err
	}
	defer s.Release()
	s.perm = idx
	return s.Take(ctx, 0, len(idx))
}

// newChunkedRows holds the columns of recs (retained) as Take reads them,
// in input order: no perm, no runs (TakeRows sets perm).
func newChunkedRows(mem memory.Allocator, sc *arrow.Schema, recs []arrow.RecordBatch) (*SortedRows, error) {
	s := &SortedRows{mem: mem, sc: sc, cols: make([]*arrow.Chunked, sc.NumFields())}
	for i, f := range sc.Fields() {
		parts := make([]arrow.Array, 0, len(recs))
		for _, r := range recs {
			parts = append(parts, r.Column(i))
		}
		if len(parts) <= 1 || chunkedTake(f.Type) {
			s.cols[i] = arrow.NewChunked(f.Type, parts)
			continue
		}
		c, err := s.flat(i, parts)
		if err != nil {
			s.Release()
			return nil, err
		}
		s.cols[i] = arrow.NewChunked(f.Type, []arrow.Array{c})
		c.Release()
	}
	return s, nil
}

// flat returns column i as one array (the caller releases it).
func (s *SortedRows) flat(i int, parts []arrow.Array) (arrow.Array, error) {
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	c, err := array.Concatenate(parts, s.mem)
	if err != nil {
		return nil, fmt.Errorf("concatenate column %s: %w", s.sc.Field(i).Name, err)
	}
	return c, nil
}

// Release releases the columns.
func (s *SortedRows) Release() {
	for _, d := range s.dicts {
		if d != nil {
			d.release()
		}
	}
	s.dicts = nil
	for i, c := range s.cols {
		if c != nil {
			c.Release()
			s.cols[i] = nil
		}
	}
}

// Len is the number of rows.
func (s *SortedRows) Len() int { return s.runs[len(s.runs)-1] }

// Partitions is the number of partitions the rows fall in.
func (s *SortedRows) Partitions() int { return len(s.runs) - 1 }

// PartitionOrdinals are the partitions the rows fall in, in order: each
// one's ordinal by the Order's Partition function.
func (s *SortedRows) PartitionOrdinals() []int64 { return s.runParts }

// order computes perm and runs from the time and series key columns, which
// it concatenates for the while.
func (s *SortedRows) order(o Order) error {
	sc, timeCol, seriesKey := s.sc, o.TimeColumn, o.SeriesKey
	cols := make([]arrow.Array, sc.NumFields()) // the key columns only
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for _, name := range append([]string{timeCol}, seriesKey...) {
		for _, i := range sc.FieldIndices(name) {
			if cols[i] != nil {
				continue
			}
			c, err := s.flat(i, s.cols[i].Chunks())
			if err != nil {
				return err
			}
			cols[i] = c
		}
	}
	ti := sc.FieldIndices(timeCol)
	if len(ti) != 1 {
		return fmt.Errorf("time column %q not in schema", timeCol)
	}
	times, ok := cols[ti[0]].(*array.Timestamp)
	if !ok {
		return fmt.Errorf("time column %q is %s, expected a timestamp", timeCol, cols[ti[0]].DataType())
	}
	unit := times.DataType().(*arrow.TimestampType).Unit
	parts := partitionOrdinals(times, unit, o.Partition)
	keys := make([]func(i, j int) int, 0, len(seriesKey)+2)
	keys = append(keys, func(i, j int) int { return cmpInt(parts[i], parts[j]) })
	for _, k := range seriesKey {
		idx := sc.FieldIndices(k)
		if len(idx) != 1 {
			return fmt.Errorf("series key column %q not in schema", k)
		}
		cmp, err := columnComparator(cols[idx[0]])
		if err != nil {
			return fmt.Errorf("series key column %q: %w", k, err)
		}
		keys = append(keys, cmp)
	}
	keys = append(keys, func(i, j int) int { return cmpInt(int64(times.Value(i)), int64(times.Value(j))) })

	var ranked func(int, stringRanking)
	if s.dictLayout != nil { // encodeDictionaries takes the series key's values from the sort
		ranked = func(col int, r stringRanking) {
			if s.keyRanks == nil {
				s.keyRanks = map[int]stringRanking{}
			}
			s.keyRanks[col] = r
		}
	}
	perm, sorted, err := sortPermutation(cols, sc, times, parts, seriesKey, keys, ranked)
	if err != nil {
		return err
	}
	same := sameKey(times, keys[1:len(keys)-1])
	if len(seriesKey) > 0 { // without one, rows only share times
		s.repeated = repeatedRows(perm, same)
	}
	if s.newest {
		// Ties are in input order: of the rows of one key, the last stays.
		kept := perm[:0:0]
		for i, p := range perm {
			if i+1 < len(perm) && same(int(p), int(perm[i+1])) {
				continue
			}
			kept = append(kept, p)
		}
		if len(kept) < len(perm) {
			perm, sorted = kept, false
		}
	}
	n := len(perm)
	s.runs, s.runParts = nil, nil
	prev := int64(math.MinInt64)
	for i := range n {
		if p := parts[perm[i]]; i == 0 || p != prev {
			s.runs = append(s.runs, i)
			s.runParts = append(s.runParts, p)
			prev = p
		}
	}
	s.runs = append(s.runs, n)
	if !sorted {
		s.perm = perm
	}
	return nil
}

// RepeatedRows counts the input rows whose series key and time an earlier
// input row has (a row sent twice, a gateway's second reading of one
// instant): all the rows of each (series key, time) but one. It counts
// them before NewNewestRows leaves any out, so that under
// timelake.read-dedup it is the number of rows left out. With no series
// key it is 0 (rows of such a table only share times).
//
// Keys compare as the sort compares them (CompareValues), not as text: a
// null equals a null, a float key's -0 equals 0, and a NaN equals any
// value, so a row of a NaN key counts when the row before it in order has
// the same time and the same other key values.
func (s *SortedRows) RepeatedRows() int64 { return s.repeated }

// repeatedRows counts the positions of perm (rows in sorted order, so
// rows of one series key and time are adjacent) whose row has the time and
// the series key of the row before it (same).
func repeatedRows(perm []int64, same func(a, b int) bool) int64 {
	var n int64
	for i := 1; i < len(perm); i++ {
		if same(int(perm[i-1]), int(perm[i])) {
			n++
		}
	}
	return n
}

// sameKey reports whether two rows have the same time and the same values
// of the series key columns (compared by seriesKeys), the time first: it
// most often tells rows apart. An equal time is an equal partition: the
// partition is a function of the time's value.
func sameKey(times *array.Timestamp, seriesKeys []func(i, j int) int) func(a, b int) bool {
	vals := times.TimestampValues()
	return func(a, b int) bool {
		if vals[a] != vals[b] {
			return false
		}
		for _, k := range seriesKeys {
			if k(a, b) != 0 {
				return false
			}
		}
		return true
	}
}

// Split cuts the sorted rows into at most k ranges [start, end) that begin
// and end at partition boundaries, each of about Len()/k rows (a partition
// larger than that makes its range larger). Ranges are in order and cover
// every row.
func (s *SortedRows) Split(k int) [][2]int {
	n := s.Len()
	var out [][2]int
	start := 0
	for j := 1; j <= k && start < n; j++ {
		target := n * j / k
		// The first partition start at or after target, but past start.
		i, _ := slices.BinarySearch(s.runs, target)
		end := s.runs[min(i, len(s.runs)-1)]
		if j == k {
			end = n
		}
		if end <= start {
			continue
		}
		out = append(out, [2]int{start, end})
		start = end
	}
	return out
}

// Batches yields the sorted rows [start, end) as record batches of at most
// batchRows rows (0 means 65,536) that never span two partitions, each
// taken from the columns only when asked for; the consumer releases every
// batch it receives. A batch of one partition is what iceberg-go's writer
// passes on as it is; one of several it would split with a copy of every
// column. It stops with ctx's error once ctx is done. Safe for concurrent
// use over any ranges.
func (s *SortedRows) Batches(ctx context.Context, start, end, batchRows int) iter.Seq2[arrow.RecordBatch, error] {
	if batchRows <= 0 {
		batchRows = 64 * 1024
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		for lo, hi := start, start; lo < end; lo = hi {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			// The next partition's first row after lo.
			r, _ := slices.BinarySearch(s.runs, lo+1)
			hi = min(lo+batchRows, end, s.runs[min(r, len(s.runs)-1)])
			rec, err := s.Take(ctx, lo, hi)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(rec, nil) {
				return // the consumer took rec, as WriteRecords does
			}
		}
	}
}

// Take builds the batch of sorted rows [lo, hi).
func (s *SortedRows) Take(ctx context.Context, lo, hi int) (arrow.RecordBatch, error) {
	taken := make([]arrow.Array, 0, len(s.cols))
	defer func() {
		for _, t := range taken {
			t.Release()
		}
	}()
	var idx compute.Datum
	if s.perm != nil {
		bld := array.NewInt64Builder(s.mem)
		bld.AppendValues(s.perm[lo:hi], nil)
		a := bld.NewArray()
		bld.Release()
		idx = compute.NewDatumWithoutOwning(a)
		defer a.Release()
	}
	ctx = compute.WithAllocator(ctx, s.mem)
	sc := s.sc
	p := -1 // the partition of the rows, for dictionary columns
	if s.dicts != nil {
		p = sort.SearchInts(s.runs, lo+1) - 1
		if p < 0 || hi > s.runs[p+1] {
			return nil, fmt.Errorf("internal: rows %d to %d span partitions", lo, hi)
		}
	}
	for i, c := range s.cols {
		if s.dicts != nil && s.dicts[i] != nil {
			if a := s.dicts[i].take(s.mem, p, lo, hi); a != nil {
				sc = withFieldType(sc, i, a.DataType())
				taken = append(taken, a)
				continue
			}
		}
		var part *arrow.Chunked
		if idx == nil {
			part = array.NewChunkedSlice(c, int64(lo), int64(hi))
		} else {
			// perm holds every row once: no bounds check needed.
			out, err := compute.Take(ctx, compute.TakeOptions{BoundsCheck: false}, compute.NewDatumWithoutOwning(c), idx)
			if err != nil {
				return nil, fmt.Errorf("reorder column %s: %w", s.sc.Field(i).Name, err)
			}
			switch d := out.(type) {
			case *compute.ArrayDatum:
				part = arrow.NewChunked(c.DataType(), []arrow.Array{d.MakeArray()})
				part.Chunk(0).Release()
			case *compute.ChunkedDatum:
				part = d.Value
				part.Retain()
			}
			out.Release()
			if part == nil {
				return nil, fmt.Errorf("reorder column %s: unexpected take result %s", s.sc.Field(i).Name, out.Kind())
			}
		}
		a, err := s.flat(i, part.Chunks())
		part.Release()
		if err != nil {
			return nil, err
		}
		taken = append(taken, a)
	}
	return array.NewRecordBatch(sc, taken, int64(hi-lo)), nil
}

// withFieldType is sc with field i of type dt.
func withFieldType(sc *arrow.Schema, i int, dt arrow.DataType) *arrow.Schema {
	fields := slices.Clone(sc.Fields())
	fields[i].Type = dt
	md := sc.Metadata()
	return arrow.NewSchema(fields, &md)
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

// columnComparator orders two rows of one column, nulls first
// (CompareValues); errors name a type that cannot be a sort key.
func columnComparator(c arrow.Array) (func(i, j int) int, error) {
	switch c.(type) {
	case *array.String, *array.Int64, *array.Int32, *array.Float64, *array.Float32,
		*array.Boolean, *array.Timestamp, *array.Date32:
		return func(i, j int) int { return CompareValues(c, i, c, j) }, nil
	}
	return nil, fmt.Errorf("cannot sort by type %s (use a string, integer, float, boolean or timestamp column)", c.DataType())
}

// CompareValues orders row i of a and row j of b, two arrays of the same
// type (one of columnComparator's): nulls first, false before true.
// Values of other types compare equal.
func CompareValues(a arrow.Array, i int, b arrow.Array, j int) int {
	ni, nj := a.IsNull(i), b.IsNull(j)
	switch {
	case ni && nj:
		return 0
	case ni:
		return -1
	case nj:
		return 1
	}
	if x, ok := a.(*array.Dictionary); ok { // a batch of WithDictionaries
		a, i = x.Dictionary(), x.GetValueIndex(i)
	}
	if y, ok := b.(*array.Dictionary); ok {
		b, j = y.Dictionary(), y.GetValueIndex(j)
	}
	switch x := a.(type) {
	case *array.String:
		return strings.Compare(x.Value(i), b.(*array.String).Value(j))
	case *array.Int64:
		return cmpInt(x.Value(i), b.(*array.Int64).Value(j))
	case *array.Int32:
		return cmpInt(x.Value(i), b.(*array.Int32).Value(j))
	case *array.Float64:
		return cmpInt(x.Value(i), b.(*array.Float64).Value(j))
	case *array.Float32:
		return cmpInt(x.Value(i), b.(*array.Float32).Value(j))
	case *array.Boolean:
		u, v := x.Value(i), b.(*array.Boolean).Value(j)
		switch {
		case u == v:
			return 0
		case !u:
			return -1
		}
		return 1
	case *array.Timestamp:
		return cmpInt(int64(x.Value(i)), int64(b.(*array.Timestamp).Value(j)))
	case *array.Date32:
		return cmpInt(int32(x.Value(i)), int32(b.(*array.Date32).Value(j)))
	}
	return 0
}

// partitionOrdinals is the partition ordinal of every row's time (a null
// time's value is what the array holds there: its rows sort by that),
// computed once for the sort, its groups and its partition runs.
func partitionOrdinals(times *array.Timestamp, unit arrow.TimeUnit, partition func(arrow.Timestamp, arrow.TimeUnit) int64) []int64 {
	vals := times.TimestampValues()
	parts := make([]int64, len(vals))
	for i, v := range vals {
		parts[i] = partition(v, unit)
	}
	return parts
}

// groupKey is the leading part of a row's sort key when the series key has
// at most two columns: the partition ordinal and each series column as an
// int64 rank (nulls first).
type groupKey struct{ part, k1, k2 int64 }

// sortPermutation returns the row order (sorted position -> row) and
// whether it is the input order. The common case (at most two series key
// columns) is a stable counting sort of the rows by their groupKey, then a
// stable sort by time inside each group that is not already in time order
// (gateways write in time order, so usually none): O(rows) plus the sort of
// the distinct groups. Other shapes use the generic comparators.
func sortPermutation(cols []arrow.Array, sc *arrow.Schema, times *array.Timestamp,
	parts []int64, seriesKey []string, keys []func(i, j int) int,
	ranked func(col int, r stringRanking),
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
		col := sc.FieldIndices(name)[0]
		if a, ok := cols[col].(*array.String); ok {
			r := rankStrings(a)
			if ranked != nil {
				ranked(col, r)
			}
			ranks[k] = r.ranks
			continue
		}
		r, err := columnRanks(cols[col])
		if err != nil {
			return nil, false, fmt.Errorf("series key column %q: %w", name, err)
		}
		ranks[k] = r
	}
	// Number the distinct groups in order of first appearance.
	keyOf := func(i int) groupKey {
		g := groupKey{part: parts[i]}
		if ranks[0] != nil {
			g.k1 = ranks[0][i]
		}
		if ranks[1] != nil {
			g.k2 = ranks[1][i]
		}
		return g
	}
	ids := make([]int32, n)
	var groups []groupKey
	if n > 0 {
		lo, hi := keyOf(0), keyOf(0)
		for i := range n {
			g := keyOf(i)
			lo = groupKey{min(lo.part, g.part), min(lo.k1, g.k1), min(lo.k2, g.k2)}
			hi = groupKey{max(hi.part, g.part), max(hi.k1, g.k1), max(hi.k2, g.k2)}
		}
		if slots, ok := denseSlots(lo, hi, n); ok {
			// Few possible keys (e.g. days x devices): index them directly.
			span1, span2 := hi.k1-lo.k1+1, hi.k2-lo.k2+1
			slot := make([]int32, slots)
			for i := range n {
				g := keyOf(i)
				j := ((g.part-lo.part)*span1+(g.k1-lo.k1))*span2 + (g.k2 - lo.k2)
				if slot[j] == 0 {
					groups = append(groups, g)
					slot[j] = int32(len(groups))
				}
				ids[i] = slot[j] - 1
			}
		} else {
			index := map[groupKey]int32{}
			for i := range n {
				g := keyOf(i)
				id, ok := index[g]
				if !ok {
					id = int32(len(groups))
					index[g] = id
					groups = append(groups, g)
				}
				ids[i] = id
			}
		}
	}
	// Each group's first position in sorted order.
	byKey := make([]int32, len(groups))
	for i := range byKey {
		byKey[i] = int32(i)
	}
	slices.SortFunc(byKey, func(a, b int32) int {
		x, y := groups[a], groups[b]
		switch {
		case x.part != y.part:
			return cmpInt(x.part, y.part)
		case x.k1 != y.k1:
			return cmpInt(x.k1, y.k1)
		}
		return cmpInt(x.k2, y.k2)
	})
	count := make([]int, len(groups))
	for _, id := range ids {
		count[id]++
	}
	next := make([]int, len(groups))
	pos := 0
	for _, id := range byKey {
		next[id] = pos
		pos += count[id]
	}
	for i, id := range ids {
		perm[next[id]] = int64(i)
		next[id]++
	}
	// next[id] is now the end of group id; order each group by time.
	for _, id := range byKey {
		seg := perm[next[id]-count[id] : next[id]]
		inOrder := true
		for j := 1; j < len(seg); j++ {
			if times.Value(int(seg[j])) < times.Value(int(seg[j-1])) {
				inOrder = false
				break
			}
		}
		if !inOrder {
			slices.SortStableFunc(seg, func(a, b int64) int {
				return cmpInt(int64(times.Value(int(a))), int64(times.Value(int(b))))
			})
		}
	}
	sorted := true
	for i, r := range perm {
		if r != int64(i) {
			sorted = false
			break
		}
	}
	return perm, sorted, nil
}

// denseSlots returns the number of possible keys between lo and hi
// (inclusive, per field) when it is small enough to index them directly:
// at most 4 slots per row plus 4096.
func denseSlots(lo, hi groupKey, rows int) (int64, bool) {
	limit := 4*int64(rows) + 4096
	total := int64(1)
	for _, span := range []int64{hi.part - lo.part, hi.k1 - lo.k1, hi.k2 - lo.k2} {
		if span < 0 || span >= limit { // also catches overflow of hi-lo
			return 0, false
		}
		total *= span + 1
		if total > limit {
			return 0, false
		}
	}
	return total, true
}

// stringRanking is a string column's rows as the ranks of their values
// (-1 for null) and the distinct values in rank order.
type stringRanking struct {
	ranks  []int64
	values []string
}

// rankStrings gives each row of a the rank of its value (numberStrings'
// codes mapped to the order of the values), and the values in rank order.
func rankStrings(a *array.String) stringRanking {
	codes, names := numberInParts(a, runtime.GOMAXPROCS(0))
	byValue := make([]int32, len(names))
	for i := range byValue {
		byValue[i] = int32(i)
	}
	slices.SortFunc(byValue, func(x, y int32) int { return strings.Compare(names[x], names[y]) })
	rank := make([]int64, len(names))
	values := make([]string, len(names))
	for r, id := range byValue {
		rank[id] = int64(r)
		values[r] = names[id]
	}
	out := make([]int64, len(codes))
	for i, id := range codes {
		out[i] = -1
		if id >= 0 {
			out[i] = rank[id]
		}
	}
	return stringRanking{ranks: out, values: values}
}

// columnRanks maps each row of a column to an int64 that orders like the
// value, nulls first (-1 for strings, math.MinInt64 for numbers).
func columnRanks(c arrow.Array) ([]int64, error) {
	out := make([]int64, c.Len())
	switch a := c.(type) {
	case *array.String:
		return rankStrings(a).ranks, nil
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
