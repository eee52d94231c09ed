package datafile

import (
	"context"
	"iter"
	"runtime"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/decode"
)

// TestWriteRangesPanic: a panic of one writer's goroutine is the error of
// WriteRanges, with the goroutine's stack, and the other ranges' files
// are returned for removal.
func TestWriteRangesPanic(t *testing.T) {
	files, err := WriteRanges(context.Background(), [][2]int{{0, 1}, {1, 2}}, 1,
		func(ctx context.Context, start, end int) iter.Seq2[string, error] {
			return func(yield func(string, error) bool) {
				if start == 1 {
					var m map[int]int
					m[start]++
				}
				yield("data-0.parquet", nil)
			}
		})
	if !decode.IsPanic(err) || !strings.Contains(err.Error(), "assignment to entry in nil map") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(string(decode.PanicStack(err)), "TestWriteRangesPanic") {
		t.Fatalf("stack:\n%s", decode.PanicStack(err))
	}
	if len(files) != 1 {
		t.Fatalf("files = %v", files)
	}
}

// TestWritePlan: a large append gets a range per partition, at least two
// and at most eight per core, written a core at a time and one more; a small one up to
// smallAppendWriters ranges, written at once.
func TestWritePlan(t *testing.T) {
	p := runtime.GOMAXPROCS(0)
	for _, c := range []struct {
		rows, partitions      int
		wantSplits, wantWrite int
	}{
		{800_000, 10, min(max(10, 2*p), 8*p), p + 1},
		{800_000, 1, 2 * p, p + 1},
		{800_000, 1000, 8 * p, p + 1},
		{10_000, 90, smallAppendWriters, smallAppendWriters},
		{10_000, 3, 3, 3},
		{100, 1, 1, 1},
	} {
		splits, writers := WritePlan(c.rows, c.partitions)
		if splits != c.wantSplits || writers != c.wantWrite {
			t.Errorf("%d rows over %d partitions: %d ranges, %d writers; want %d and %d", c.rows, c.partitions, splits, writers, c.wantSplits, c.wantWrite)
		}
	}
}
