package decode

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// failingAt is a file whose reads fail with err from byte at on.
type failingAt struct {
	data []byte
	at   int64
	err  error
}

func (f failingAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) <= f.at {
		return bytes.NewReader(f.data).ReadAt(p, off)
	}
	n := 0
	if off < f.at {
		n, _ = bytes.NewReader(f.data[:f.at]).ReadAt(p, off)
	}
	return n, f.err
}

// TestPlanTextChunksReadErrorIsTheFirst: a file that cannot be read from
// some byte on fails the plan with the error of the one-reader plan (the
// first failed read's), however many goroutines read it.
func TestPlanTextChunksReadErrorIsTheFirst(t *testing.T) {
	data := []byte("a,b\n" + strings.Repeat("1,2\n", 2<<20)) // 8 MiB
	size := int64(len(data))
	cases := []struct {
		name string
		r    io.ReaderAt
		size int64
	}{
		{"shorter than its size", bytes.NewReader(data), size + 5<<20},
		{"failing from 3 MiB on", failingAt{data, 3 << 20, errors.New("input/output error")}, size},
	}
	for _, c := range cases {
		_, _, want := sequentialPlan(c.r, c.size, 1<<20)
		if want == nil {
			t.Fatalf("%s: the one-reader plan has no error", c.name)
		}
		for _, workers := range []int{1, 2, 4, 8} {
			_, _, err := planTextChunks(c.r, c.size, 1<<20, workers)
			if err == nil || err.Error() != want.Error() || !errors.Is(err, want) {
				t.Errorf("%s, %d workers: error %q, want %q", c.name, workers, err, want)
			}
		}
	}
}
