package lake

import (
	"context"
	"iter"
	"runtime"

	"golang.org/x/sync/errgroup"
)

// minParallelWriteRows is the row count from which an append's partitions
// are written by concurrent writers; smaller appends use one writer (most
// appends of small files, which run several at once anyway).
const minParallelWriteRows = 128 * 1024

// writeBufferBatches bounds how many sorted batches a data file writer's
// input may hold ahead of it (iceberg-go's default, 64 batches of 64K rows,
// would copy a whole large file in sorted order before writing it).
const writeBufferBatches = 2

// writeSplits is how many ranges of whole partitions an append of n rows is
// cut into (sortedRows.split): two per available core, so that a range
// that happens to be large does not leave a core idle, or 1 below
// minParallelWriteRows.
func writeSplits(n int) int {
	if n < minParallelWriteRows {
		return 1
	}
	return 2 * runtime.GOMAXPROCS(0)
}

// writeRanges calls write for every row range, at most GOMAXPROCS calls at
// once, and returns the data files (F) of all calls in range order. write
// returns the files written for the rows [start, end). On the first error
// the other calls are cancelled and the error is returned together with
// every file written so far, which the caller removes.
func writeRanges[F any](ctx context.Context, ranges [][2]int,
	write func(ctx context.Context, start, end int) iter.Seq2[F, error],
) ([]F, error) {
	got := make([][]F, len(ranges))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, r := range ranges {
		g.Go(func() error {
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
