package pqlite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// hybrid decodes the first n values of width bits of Parquet's
// RLE/bit-packed hybrid encoding (levels, dictionary indexes, RLE
// booleans). It reads only as far as the n values, as arrow-go's decoder
// does, so bytes past them (a damaged length, a last bit-packed run cut
// short) do not refuse a page arrow-go reads; fewer than n values are
// io.ErrUnexpectedEOF.
func hybrid(data []byte, width, n int) ([]uint32, error) {
	if width < 0 || width > 32 {
		return nil, fmt.Errorf("parquet: invalid bit width %d", width)
	}
	out := make([]uint32, 0, n)
	for len(out) < n {
		indicator, m := binary.Uvarint(data)
		if m <= 0 {
			return out, io.ErrUnexpectedEOF
		}
		data = data[m:]
		count := indicator >> 1
		if indicator&1 == 0 { // a run of one value
			if count == 0 || count > 1<<31-1 {
				return out, io.ErrUnexpectedEOF
			}
			nb := (width + 7) / 8
			if len(data) < nb {
				return out, io.ErrUnexpectedEOF
			}
			var v uint32
			for i := range nb {
				v |= uint32(data[i]) << (8 * i)
			}
			data = data[nb:]
			for k := uint64(0); k < count && len(out) < n; k++ {
				out = append(out, v)
			}
			continue
		}
		if count == 0 || count > (1<<31-1)/8 {
			return out, io.ErrUnexpectedEOF
		}
		values := int(count) * 8
		bit := 0
		for k := 0; k < values && len(out) < n; k++ {
			if (bit+width+7)/8 > len(data) {
				return out, io.ErrUnexpectedEOF
			}
			var v uint64
			for b := 0; b < width; b++ {
				p := bit + b
				v |= uint64(data[p/8]>>(p%8)&1) << b
			}
			bit += width
			out = append(out, uint32(v))
		}
		if len(out) >= n {
			break
		}
		data = data[min(len(data), values*width/8):]
	}
	return out, nil
}

// errShortLevels refuses a page with fewer levels than values.
var errShortLevels = errors.New("parquet: fewer definition levels than the page's values")
