package pqlite

import (
	"encoding/binary"
	"fmt"
	"io"
)

// hybridDecoder reads values of Parquet's RLE/bit-packed hybrid encoding
// (levels, dictionary indexes, RLE booleans) one at a time, as far as
// they are asked for, as arrow-go's decoder does: bytes past them (a
// damaged length, a last bit-packed run cut short) do not refuse a page
// arrow-go reads, and a page of many values in a few bytes (a long run)
// is never held whole. A value past the data is io.ErrUnexpectedEOF.
type hybridDecoder struct {
	data    []byte
	width   int
	err     error  // set: every value is this error
	run     uint64 // values left of the current run of one value
	val     uint32 // the run's value
	lit     int    // values left of the current bit-packed run
	litData []byte // the bit-packed run's bytes
	bit     int    // the next value's bit in litData
}

// newHybrid decodes data of values of width bits.
func newHybrid(data []byte, width int) *hybridDecoder {
	d := &hybridDecoder{data: data, width: width}
	if width < 0 || width > 32 {
		d.err = fmt.Errorf("parquet: invalid bit width %d", width)
	}
	return d
}

// next is the next value.
func (d *hybridDecoder) next() (uint32, error) {
	if d.err != nil {
		return 0, d.err
	}
	for d.run == 0 && d.lit == 0 {
		indicator, m := binary.Uvarint(d.data)
		if m <= 0 {
			return 0, io.ErrUnexpectedEOF
		}
		d.data = d.data[m:]
		count := indicator >> 1
		if count == 0 || count > 1<<31-1 {
			return 0, io.ErrUnexpectedEOF
		}
		if indicator&1 == 0 { // a run of one value
			nb := (d.width + 7) / 8
			if len(d.data) < nb {
				return 0, io.ErrUnexpectedEOF
			}
			d.val = 0
			for i := range nb {
				d.val |= uint32(d.data[i]) << (8 * i)
			}
			d.data = d.data[nb:]
			d.run = count
			continue
		}
		if count > (1<<31-1)/8 {
			return 0, io.ErrUnexpectedEOF
		}
		d.lit = int(count) * 8
		n := min(len(d.data), d.lit*d.width/8)
		d.litData, d.data, d.bit = d.data[:n], d.data[n:], 0
	}
	if d.run > 0 {
		d.run--
		return d.val, nil
	}
	if (d.bit+d.width+7)/8 > len(d.litData) {
		return 0, io.ErrUnexpectedEOF
	}
	var v uint32
	for b := range d.width {
		p := d.bit + b
		v |= uint32(d.litData[p/8]>>(p%8)&1) << b
	}
	d.bit += d.width
	d.lit--
	return v, nil
}

// levels are a page's definition levels.
type levels interface {
	next() (uint32, error)
}

// packedLevels are the levels of the deprecated BIT_PACKED encoding,
// decoded whole (their bytes bound them).
type packedLevels struct {
	l   []byte
	pos int
}

func (p *packedLevels) next() (uint32, error) {
	if p.pos >= len(p.l) {
		return 0, io.ErrUnexpectedEOF
	}
	p.pos++
	return uint32(p.l[p.pos-1]), nil
}
