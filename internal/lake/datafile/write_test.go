package datafile

import (
	"context"
	"iter"
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
