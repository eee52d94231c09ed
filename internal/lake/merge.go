package lake

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"iter"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/timelake/timelake/internal/lake/datafile"
	"github.com/timelake/timelake/internal/lake/maintenance"
)

// A compaction's input files are each sorted already (appends and earlier
// rewrites write them in the order docs/table-format.md asks for), so a
// group is rewritten by merging them as sorted runs (a k-way merge), with
// each file read a few thousand rows at a time: the rewrite's memory is
// the runs' current batches and the writer's buffers, not the group's rows.
// Reading a group whole and sorting it held about 50 bytes of memory per
// byte of well-compressed input (a 6 MB group peaked at 400 MiB). Arrow's
// compute kernels sort one array at a time and have no merge of sorted
// inputs, hence this one.
//
// Small files (most of a fleet's files hold a gateway's minute) are not
// worth a reader each: up to mergePoolRows rows of files of at most
// mergePoolFileRows rows are read together and sorted in memory as one
// run. A file found out of order (written by another tool) ends the merge
// with errUnsortedRun, and the group is rewritten whole instead.
const (
	mergePoolFileRows = maintenance.MergePoolFileRows // a file this small is read whole into the pool
	mergePoolRows     = maintenance.MergePoolRows     // the pool's rows at most
	mergeReadRows     = 1 * 1024                      // rows per batch read from a streamed file
	mergeOutRows      = 8 * 1024                      // rows per merged batch handed to the writer
	// mergeMaxStreams bounds the files a merge streams at once
	// (maintenance.PackGroups cuts groups to it).
	mergeMaxStreams = maintenance.MergeMaxStreams
)

// errUnsortedRun: a merge input is not in sort order.
var errUnsortedRun = errors.New("input not in sort order")

// sortKey locates a table's sort key (partition of the time column, series
// key columns, time) in batches of its Arrow schema.
type sortKey struct {
	timeCol   int
	seriesCol []int
	unit      arrow.TimeUnit
	chunk     Granularity
}

func newSortKey(sc *arrow.Schema, c Contract) (sortKey, error) {
	k := sortKey{chunk: c.Chunk}
	ti := sc.FieldIndices(c.TimeColumn)
	if len(ti) != 1 {
		return k, fmt.Errorf("time column %q not in schema", c.TimeColumn)
	}
	ts, ok := sc.Field(ti[0]).Type.(*arrow.TimestampType)
	if !ok {
		return k, fmt.Errorf("time column %q is %s, expected a timestamp", c.TimeColumn, sc.Field(ti[0]).Type)
	}
	k.timeCol, k.unit = ti[0], ts.Unit
	for _, name := range c.SeriesKey {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			return k, fmt.Errorf("series key column %q not in schema", name)
		}
		k.seriesCol = append(k.seriesCol, idx[0])
	}
	return k, nil
}

// keyCols are the sort key columns of one batch.
type keyCols struct {
	times  *array.Timestamp
	series []arrow.Array
}

func (k sortKey) of(rec arrow.RecordBatch) (keyCols, error) {
	times, ok := rec.Column(k.timeCol).(*array.Timestamp)
	if !ok {
		return keyCols{}, fmt.Errorf("time column is %s, expected a timestamp", rec.Column(k.timeCol).DataType())
	}
	kc := keyCols{times: times}
	for _, i := range k.seriesCol {
		kc.series = append(kc.series, rec.Column(i))
	}
	return kc, nil
}

func (k sortKey) bucket(c keyCols, i int) int64 { return k.chunk.bucket(c.times.Value(i), k.unit) }

// compare orders row i of a and row j of b as datafile.SortedRows does.
func (k sortKey) compare(a keyCols, i int, b keyCols, j int) int {
	if c := cmp.Compare(k.bucket(a, i), k.bucket(b, j)); c != 0 {
		return c
	}
	for s := range a.series {
		if c := datafile.CompareValues(a.series[s], i, b.series[s], j); c != 0 {
			return c
		}
	}
	return cmp.Compare(int64(a.times.Value(i)), int64(b.times.Value(j)))
}

// mergeRun is one sorted input of a merge.
type mergeRun struct {
	name  string // for errors: a file path, or "small files"
	order int    // ties go to the lower order (input order)
	next  func() (arrow.RecordBatch, error, bool)
	stop  func()
	batch arrow.RecordBatch // current batch; nil once exhausted
	keys  keyCols
	row   int   // next row of batch
	src   int64 // where batch starts in the merged batch being built; -1 when not in it
}

// advance loads the run's next non-empty batch, checking that it is in
// order and continues the previous one; batch is nil at the end.
func (r *mergeRun) advance(k sortKey) error {
	prev, prevKeys := r.batch, r.keys
	defer func() {
		if prev != nil {
			prev.Release()
		}
	}()
	r.batch, r.row, r.src = nil, 0, -1
	for {
		rec, err, ok := r.next()
		if !ok {
			return nil
		}
		if err != nil {
			return err
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		keys, err := k.of(rec)
		if err != nil {
			rec.Release()
			return err
		}
		n := int(rec.NumRows())
		if prev != nil && k.compare(prevKeys, int(prev.NumRows())-1, keys, 0) > 0 {
			rec.Release()
			return fmt.Errorf("%s: %w", r.name, errUnsortedRun)
		}
		for i := 1; i < n; i++ {
			if k.compare(keys, i-1, keys, i) > 0 {
				rec.Release()
				return fmt.Errorf("%s: row %d: %w", r.name, i, errUnsortedRun)
			}
		}
		r.batch, r.keys = rec, keys
		return nil
	}
}

// before reports whether row i of r goes before the current row of o.
func (k sortKey) before(r *mergeRun, i int, o *mergeRun) bool {
	c := k.compare(r.keys, i, o.keys, o.row)
	return c < 0 || c == 0 && r.order < o.order
}

type runHeap struct {
	k    sortKey
	runs []*mergeRun
}

func (h *runHeap) Len() int           { return len(h.runs) }
func (h *runHeap) Less(i, j int) bool { return h.k.before(h.runs[i], h.runs[i].row, h.runs[j]) }
func (h *runHeap) Swap(i, j int)      { h.runs[i], h.runs[j] = h.runs[j], h.runs[i] }
func (h *runHeap) Push(x any)         { h.runs = append(h.runs, x.(*mergeRun)) }
func (h *runHeap) Pop() any {
	r := h.runs[len(h.runs)-1]
	h.runs = h.runs[:len(h.runs)-1]
	return r
}

// mergeRuns yields the rows of runs (each sorted by k) in sort order, in
// batches of schema sc of at most outRows rows that never span two
// partitions. Ties keep the runs' order. It stops all runs when done. An
// out-of-order run ends it with an error wrapping errUnsortedRun.
//
// A merged batch is taken from the run batches it draws on with arrow's
// take (as datafile.SortedRows takes an append's rows), or passed on as a slice
// when it is one run's consecutive rows: runs that interleave row by row
// cost an index per row, not an array per row.
func mergeRuns(ctx context.Context, mem memory.Allocator, sc *arrow.Schema, k sortKey, runs []*mergeRun, outRows int) iter.Seq2[arrow.RecordBatch, error] {
	return mergeRunsKeeping(ctx, mem, sc, k, runs, outRows, false)
}

// mergeRunsNewest is mergeRuns keeping one row of each sort key, the row
// of timelake.read-dedup (dedupe.go): the one of the run with the highest
// order (the newest batch), and within a run its last. Each run's order
// is its file's rank; the rows it leaves out are the difference between
// the runs' rows and the merged ones.
func mergeRunsNewest(ctx context.Context, mem memory.Allocator, sc *arrow.Schema, k sortKey, runs []*mergeRun, outRows int) iter.Seq2[arrow.RecordBatch, error] {
	for _, r := range runs {
		r.next = lastOfEqualKeys(mem, k, r.next)
	}
	return mergeRunsKeeping(ctx, mem, sc, k, runs, outRows, true)
}

// mergeRunsKeeping is mergeRuns; newest leaves out a row whose sort key
// the next run in line (a higher order: ties go to the lower order first)
// has too. Rows of one run with one key are taken out before
// (lastOfEqualKeys).
func mergeRunsKeeping(ctx context.Context, mem memory.Allocator, sc *arrow.Schema, k sortKey, runs []*mergeRun, outRows int, newest bool) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		h := &runHeap{k: k}
		out := &mergedBatch{mem: mem, sc: sc}
		defer func() {
			out.reset(runs)
			for _, r := range runs {
				if r.batch != nil {
					r.batch.Release()
					r.batch = nil
				}
				r.stop()
			}
		}()
		flush := func() bool {
			if len(out.idx) == 0 {
				return true
			}
			rec, err := out.build(ctx)
			out.reset(runs)
			if err != nil {
				yield(nil, err)
				return false
			}
			return yield(rec, nil)
		}
		for _, r := range runs {
			if err := r.advance(k); err != nil {
				yield(nil, err)
				return
			}
			if r.batch != nil {
				h.runs = append(h.runs, r)
			}
		}
		heap.Init(h)
		for h.Len() > 0 {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			r := heap.Pop(h).(*mergeRun)
			n := int(r.batch.NumRows())
			b := k.bucket(r.keys, r.row)
			if len(out.idx) > 0 && b != out.bucket && !flush() {
				return
			}
			out.bucket = b
			// The rows of r's batch that go before every other run's
			// current row, in r's partition, up to the batch size.
			end := min(n, r.row+outRows-len(out.idx))
			if h.Len() > 0 {
				o := h.runs[0]
				end = r.row + sort.Search(end-r.row, func(m int) bool { return !k.before(r, r.row+m, o) })
			}
			end = r.row + sort.Search(end-r.row, func(m int) bool { return k.bucket(r.keys, r.row+m) != b })
			end = max(end, r.row+1) // r's current row is the smallest
			if newest && h.Len() > 0 && k.compare(r.keys, end-1, h.runs[0].keys, h.runs[0].row) == 0 {
				// The next run in line holds the same key, of a newer
				// batch: the last row of the range is replaced.
				if end-1 > r.row {
					out.add(r, end-1)
				}
				r.row = end
			} else {
				out.add(r, end)
			}
			if len(out.idx) >= outRows && !flush() {
				return
			}
			if r.row == n {
				if err := r.advance(k); err != nil {
					yield(nil, err)
					return
				}
				if r.batch == nil {
					continue
				}
			}
			heap.Push(h, r)
		}
		flush()
	}
}

// mergedBatch collects the rows of one merged batch: the run batches they
// come from (retained) and, for each row, its position in those batches
// laid end to end.
type mergedBatch struct {
	mem    memory.Allocator
	sc     *arrow.Schema
	srcs   []arrow.RecordBatch
	rows   int64   // rows of srcs
	idx    []int64 // positions in srcs, in merged order
	bucket int64   // the partition of the rows
}

// add takes r's rows up to end (exclusive) and moves r past them.
func (m *mergedBatch) add(r *mergeRun, end int) {
	if r.src < 0 {
		r.batch.Retain()
		m.srcs = append(m.srcs, r.batch)
		r.src = m.rows
		m.rows += r.batch.NumRows()
	}
	for i := r.row; i < end; i++ {
		m.idx = append(m.idx, r.src+int64(i))
	}
	r.row = end
}

// build makes the batch: a slice when its rows are consecutive in one
// source batch, else taken from the sources.
func (m *mergedBatch) build(ctx context.Context) (arrow.RecordBatch, error) {
	n := len(m.idx)
	if len(m.srcs) == 1 && m.idx[n-1]-m.idx[0] == int64(n-1) {
		return m.srcs[0].NewSlice(m.idx[0], m.idx[n-1]+1), nil
	}
	return datafile.TakeRows(ctx, m.mem, m.sc, m.srcs, m.idx)
}

// reset empties m for the next batch and forgets the runs' places in it.
func (m *mergedBatch) reset(runs []*mergeRun) {
	for _, r := range m.srcs {
		r.Release()
	}
	m.srcs, m.rows, m.idx = m.srcs[:0], 0, m.idx[:0]
	for _, r := range runs {
		r.src = -1
	}
}

// sortedRun makes a run of the rows of sr, mergeReadRows at a time (sr is
// released by its owner).
func sortedRun(ctx context.Context, name string, order int, sr *datafile.SortedRows) *mergeRun {
	pos := 0
	return &mergeRun{name: name, order: order, stop: func() {},
		next: func() (arrow.RecordBatch, error, bool) {
			if pos >= sr.Len() {
				return nil, nil, false
			}
			lo := pos
			pos = min(pos+mergeReadRows, sr.Len())
			rec, err := sr.Take(ctx, lo, pos)
			return rec, err, true
		}}
}

// pullRun makes a run of seq (read lazily, stopped by the merge).
func pullRun(name string, order int, seq iter.Seq2[arrow.RecordBatch, error]) *mergeRun {
	next, stop := iter.Pull2(seq)
	return &mergeRun{name: name, order: order, next: next, stop: stop}
}

// lastOfEqualKeys passes on the batches of next leaving out each row
// whose sort key the row after it (in the same batch or the next) has
// too: of the rows of one key in one sorted run, the last stays. It holds
// one batch back to compare its last row with the next batch's first.
func lastOfEqualKeys(mem memory.Allocator, k sortKey, next func() (arrow.RecordBatch, error, bool)) func() (arrow.RecordBatch, error, bool) {
	var held arrow.RecordBatch
	var heldKeys keyCols
	done := false
	return func() (arrow.RecordBatch, error, bool) {
		for !done {
			rec, err, ok := next()
			if err != nil {
				return nil, err, true
			}
			if !ok {
				done = true
				break
			}
			if rec.NumRows() == 0 {
				rec.Release()
				continue
			}
			keys, err := k.of(rec)
			if err != nil {
				rec.Release()
				return nil, err, true
			}
			if held == nil {
				held, heldKeys = rec, keys
				continue
			}
			out, err := keepLastRows(mem, held, heldKeys, k, keys)
			held.Release()
			held, heldKeys = rec, keys
			if err != nil {
				return nil, err, true
			}
			return out, nil, true
		}
		if held == nil {
			return nil, nil, false
		}
		out, err := keepLastRows(mem, held, heldKeys, k, keyCols{})
		held.Release()
		held = nil
		return out, err, true
	}
}

// keepLastRows returns rec without the rows whose key the next row has:
// the next row of rec, or for its last row the first of the batch after
// it (after; none when its times are nil).
func keepLastRows(mem memory.Allocator, rec arrow.RecordBatch, keys keyCols, k sortKey, after keyCols) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	var drop []int
	for i := 0; i < n; i++ {
		switch {
		case i+1 < n && k.compare(keys, i, keys, i+1) == 0:
			drop = append(drop, i)
		case i+1 == n && after.times != nil && k.compare(keys, i, after, 0) == 0:
			drop = append(drop, i)
		}
	}
	if len(drop) == 0 {
		rec.Retain()
		return rec, nil
	}
	// Take the kept ranges as slices and join them.
	var parts []arrow.RecordBatch
	lo := 0
	for _, d := range drop {
		if d > lo {
			parts = append(parts, rec.NewSlice(int64(lo), int64(d)))
		}
		lo = d + 1
	}
	if lo < n {
		parts = append(parts, rec.NewSlice(int64(lo), int64(n)))
	}
	if len(parts) == 0 {
		return rec.NewSlice(0, 0), nil
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	return concatRecords(mem, rec.Schema(), parts)
}

// concatRecords joins batches of schema sc into one.
func concatRecords(mem memory.Allocator, sc *arrow.Schema, parts []arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, sc.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for _, p := range parts {
		rows += p.NumRows()
	}
	for i := range cols {
		chunks := make([]arrow.Array, len(parts))
		for j, p := range parts {
			chunks[j] = p.Column(i)
		}
		c, err := array.Concatenate(chunks, mem)
		if err != nil {
			return nil, fmt.Errorf("join rows of column %s: %w", sc.Field(i).Name, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(sc, cols, rows), nil
}
