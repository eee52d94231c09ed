package pqlite

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"
)

// TestDeltaCountBounded: a DELTA page whose header declares 2^31-1 values
// in a few bytes is refused without allocating them (parquet-go's
// decoders allocate the values a header declares before reading them):
// more values than the page's, as arrow-go refuses them, or more than its
// blocks hold.
func TestDeltaCountBounded(t *testing.T) {
	// Block of 128 values in 4 mini-blocks, 2^31-1 values, the first 0,
	// and one block: a min delta of 0 and four widths of 0.
	stream := []byte{0x80, 0x01, 0x04, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00, 0x00, 0, 0, 0, 0}
	twice := append(append([]byte(nil), stream...), stream...)
	for _, c := range []struct {
		physical format.Type
		enc      format.Encoding
		data     []byte
	}{
		{format.Int32, format.DeltaBinaryPacked, stream},
		{format.Int64, format.DeltaBinaryPacked, stream},
		{format.ByteArray, format.DeltaLengthByteArray, stream},
		{format.ByteArray, format.DeltaByteArray, twice},
		{format.FixedLenByteArray, format.DeltaByteArray, twice},
	} {
		leaf := &node{el: &format.SchemaElement{Name: "v"}, physical: c.physical}
		leaf.el.TypeLength.Set(4)
		cr := &chunkReader{leaf: leaf}
		for _, want := range []int{3, math.MaxInt32} {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := cr.decodeValues(c.enc, c.data, want)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Errorf("%s %s of %d values: read", c.physical, c.enc, want)
			} else if want == 3 && !strings.Contains(err.Error(), "invalid delta value count") {
				t.Errorf("%s %s of %d values: %v", c.physical, c.enc, want, err)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
				t.Errorf("%s %s of %d values: %d bytes allocated", c.physical, c.enc, want, n)
			}
		}
	}
}

// TestDeltaStreamWalks: the walk counts the values of a stream as
// parquet-go decodes them and ends where parquet-go's decoder ends.
func TestDeltaStreamWalks(t *testing.T) {
	// 3 values: the first and a block of 4 mini-blocks of 32 whose first
	// width is 1 (4 bytes of packed deltas), the rest unused.
	s := []byte{0x80, 0x01, 0x04, 0x03, 0x02, 0x00, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x09}
	d, ok := deltaStream(s, 64)
	if !ok || d.total != 3 || d.held != 3 || d.end != len(s)-1 {
		t.Errorf("deltaStream = %+v, %v", d, ok)
	}
	// Cut short after the header: no value past the first.
	if d, ok := deltaStream(s[:5], 64); !ok || d.total != 3 || d.held != 1 {
		t.Errorf("deltaStream cut = %+v, %v", d, ok)
	}
}

// TestSplitCountBounded: BYTE_STREAM_SPLIT data of more values than the
// page's is refused, as arrow-go refuses it; of as many or fewer, read.
func TestSplitCountBounded(t *testing.T) {
	for _, c := range []struct {
		physical format.Type
		width    int
	}{{format.Int32, 4}, {format.Int64, 8}, {format.Float, 4}, {format.Double, 8}, {format.FixedLenByteArray, 3}} {
		leaf := &node{el: &format.SchemaElement{Name: "v"}, physical: c.physical}
		leaf.el.TypeLength.Set(3)
		cr := &chunkReader{leaf: leaf}
		data := make([]byte, 3*c.width)
		for _, want := range []int{2, 3, 4} {
			v, err := cr.decodeValues(format.ByteStreamSplit, data, want)
			if (err != nil) != (want < 3) {
				t.Errorf("%s: 3 values for a page of %d: %v", c.physical, want, err)
			}
			if err == nil && v.n != 3 {
				t.Errorf("%s: %d values read", c.physical, v.n)
			}
		}
	}
}
