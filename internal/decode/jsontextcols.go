package decode

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// maxBatchText bounds the bytes of one text column of a JSON batch (its
// offsets are 32-bit): a batch ends early when a column reaches it.
const maxBatchText = 1 << 30

// textColumn is a text column of a JSON batch being read: its values'
// bytes and ends, and which rows are null; kept from batch to batch (its
// memory reused), copied into arrow buffers when the batch is made.
type textColumn struct {
	data  []byte
	ends  []int32 // the end of each row's value in data, after a 0
	valid []byte  // a bit per row: not null
	nulls int
}

func (c *textColumn) reset() {
	c.data, c.ends, c.valid, c.nulls = c.data[:0], append(c.ends[:0], 0), c.valid[:0], 0
}

func (c *textColumn) rows() int { return len(c.ends) - 1 }

// add appends a row: its value, or null.
func (c *textColumn) add(v []byte, null bool) {
	row := c.rows()
	if row%8 == 0 {
		c.valid = append(c.valid, 0)
	}
	if null {
		c.nulls++
	} else {
		c.data = append(c.data, v...)
		c.valid[row/8] |= 1 << (row % 8)
	}
	c.ends = append(c.ends, int32(len(c.data)))
}

// array is the column as an arrow string array of memory from mem.
func (c *textColumn) array(mem memory.Allocator) arrow.Array {
	n := c.rows()
	buffer := func(b []byte) *memory.Buffer {
		buf := memory.NewResizableBuffer(mem)
		buf.Resize(len(b))
		copy(buf.Bytes(), b)
		return buf
	}
	bufs := []*memory.Buffer{nil, buffer(arrow.Int32Traits.CastToBytes(c.ends)), buffer(c.data)}
	if c.nulls > 0 {
		bufs[0] = buffer(c.valid)
	}
	d := array.NewData(arrow.BinaryTypes.String, n, bufs, nil, c.nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	defer d.Release()
	return array.MakeFromData(d)
}

// reserve makes room for rows rows in all, as many bytes each as the rows
// so far.
func (c *textColumn) reserve(rows int) {
	if have := c.rows(); rows > have && have > 0 {
		c.data = slices.Grow(c.data, min(len(c.data)/have*(rows-have)*9/8, maxBatchText))
		c.ends = slices.Grow(c.ends, rows-have)
		c.valid = slices.Grow(c.valid, (rows+7)/8-len(c.valid))
	}
}
