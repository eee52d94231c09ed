package datafile

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"runtime/debug"

	"github.com/timelake/timelake/internal/decode"

	"golang.org/x/sync/errgroup"
)

// minParallelWriteRows is the row count from which an append's partitions
// are written by concurrent writers; smaller appends use one writer (most
// appends of small files, which run several at once anyway).
const minParallelWriteRows = 128 * 1024

// BufferBatches bounds how many sorted batches a data file writer's
// input may hold ahead of it (iceberg-go's default, 64 batches of 64K rows,
// would copy a whole large file in sorted order before writing it).
const BufferBatches = 2

// smallAppendWriters is how many writers an append of fewer rows than
// minParallelWriteRows uses at most when its rows span several partitions.
// Each partition becomes a data file of its own, and a data file is
// uploaded when it is closed: one writer would wait for every upload in
// turn (an append spanning 90 days writes 90 files), while several overlap
// them. Their buffers hold no more than the append's own rows.
const smallAppendWriters = 8

// WritePlan is how an append of n rows over the given number of
// partitions is written: cut into splits ranges of whole partitions
// (SortedRows.Split), of which writers are written at once. A large append
// is cut into a range per partition (at least two and at most eight per
// available core), written GOMAXPROCS+1 at a time, so that the cores finish
// together: with two ranges per core, a file of ten days left one core
// writing its last range alone for a tenth of the file's time; and while a
// writer waits for its data file's upload, the one more writer has its
// core. A small one is cut into up to smallAppendWriters ranges, all
// written at once.
func WritePlan(n, partitions int) (splits, writers int) {
	if procs := runtime.GOMAXPROCS(0); n >= minParallelWriteRows {
		return min(max(partitions, 2*procs), 8*procs), procs + 1
	}
	k := max(1, min(partitions, smallAppendWriters))
	return k, k
}

// WriteRanges calls write for every row range, at most writers calls at
// once, and returns the data files (F) of all calls in range order. write
// returns the files written for the rows [start, end). On the first error
// the other calls are cancelled and the error is returned together with
// every file written so far, which the caller removes. A panic of a call
// is its error (recoverWrite), not the process's end.
func WriteRanges[F any](ctx context.Context, ranges [][2]int, writers int,
	write func(ctx context.Context, start, end int) iter.Seq2[F, error],
) ([]F, error) {
	got := make([][]F, len(ranges))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, writers))
	for i, r := range ranges {
		g.Go(func() (err error) {
			defer recoverWrite(&err)
			for df, err := range write(gctx, r[0], r[1]) {
				if err != nil {
					return err
				}
				got[i] = append(got[i], df)
			}
			return nil
		})
	}
	err := g.Wait()
	var files []F
	for _, fs := range got {
		files = append(files, fs...)
	}
	return files, err
}

// recoverWrite turns a panic of a data file writer's goroutine (arrow-go's
// Parquet writer on a value it cannot write) into *err (writePanic): on a
// goroutine of its own it would end the process. It must be deferred
// directly.
func recoverWrite(err *error) {
	if v := recover(); v != nil {
		*err = writePanic(v)
	}
}

// writePanic is the error of a panic v recovered while data files were
// written: a *decode.PanicError with the stack of the goroutine that
// panicked, which refuses the appended file (decode.IsPanic). The commit
// protocol does not run on these goroutines.
func writePanic(v any) error {
	return fmt.Errorf("writing data files: %w", &decode.PanicError{Value: v, Stack: debug.Stack()})
}
