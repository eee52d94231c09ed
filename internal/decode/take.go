package decode

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The values of an array at given indices, as compute.TakeArray gives
// them, are taken by own code: linking arrow/compute (whose init registers
// every kernel) adds about 20 MB to the gateway binary, and the decode
// takes only flat columns: a Parquet dictionary column's values at its
// indices (convert.go) and a batch's columns without the rows set aside
// (skiprows.go). take reads the layouts of the types a table's columns and
// a dictionary's values can have: null, booleans, fixed-width numbers,
// times, 128- and 256-bit decimals and fixed-size binaries, the (large)
// strings and binaries, and extension types over those; others are an
// error. A value is null where its index or the value at the index is
// null, and an index out of range is an error, as in compute.TakeArray.

// take returns the values of values at indices, an array of integers,
// allocated from mem.
func take(mem memory.Allocator, values, indices arrow.Array) (arrow.Array, error) {
	if ext, ok := values.DataType().(arrow.ExtensionType); ok {
		storage, err := take(mem, values.(array.ExtensionArray).Storage(), indices)
		if err != nil {
			return nil, err
		}
		defer storage.Release()
		return array.NewExtensionArrayWithStorage(ext, storage), nil
	}
	idx, err := takeIndices(indices, values.Len())
	if err != nil {
		return nil, err
	}
	in := values.Data()
	n := len(idx)
	if in.DataType().ID() == arrow.NULL {
		return array.NewNull(n), nil
	}
	validity, nulls := takeValidity(mem, values, indices, idx)
	if validity != nil {
		defer validity.Release()
	}
	var valid []byte
	if validity != nil {
		valid = validity.Bytes()
	}
	var bufs []*memory.Buffer
	switch dt := in.DataType(); dt.ID() {
	case arrow.BOOL:
		bufs = []*memory.Buffer{validity, takeBits(mem, in, valid, idx)}
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64,
		arrow.TIMESTAMP, arrow.DURATION,
		arrow.DECIMAL128, arrow.DECIMAL256,
		arrow.FIXED_SIZE_BINARY:
		bufs = []*memory.Buffer{validity, takeFixed(mem, in, dt.(arrow.FixedWidthDataType).BitWidth()/8, valid, idx)}
	case arrow.STRING, arrow.BINARY:
		offsets, data := takeVarBinary[int32](mem, in, 4, valid, idx)
		bufs = []*memory.Buffer{validity, offsets, data}
	case arrow.LARGE_STRING, arrow.LARGE_BINARY:
		offsets, data := takeVarBinary[int64](mem, in, 8, valid, idx)
		bufs = []*memory.Buffer{validity, offsets, data}
	default:
		return nil, fmt.Errorf("%w: take of type %s", arrow.ErrNotImplemented, dt)
	}
	for _, b := range bufs[1:] {
		defer b.Release()
	}
	out := array.NewData(in.DataType(), n, bufs, nil, nulls, 0)
	defer out.Release()
	return array.MakeFromData(out), nil
}

// takeIndices reads indices as int64s, each in [0, length) unless null
// (a null index is read as 0 and its value is null).
func takeIndices(indices arrow.Array, length int) ([]int64, error) {
	idx := make([]int64, indices.Len())
	var at func(i int) int64
	switch a := indices.(type) {
	case *array.Int8:
		at = func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int16:
		at = func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int32:
		at = func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int64:
		at = a.Value
	case *array.Uint8:
		at = func(i int) int64 { return int64(a.Value(i)) }
	case *array.Uint16:
		at = func(i int) int64 { return int64(a.Value(i)) }
	case *array.Uint32:
		at = func(i int) int64 { return int64(a.Value(i)) }
	case *array.Uint64:
		at = func(i int) int64 {
			if v := a.Value(i); v <= uint64(length) {
				return int64(v)
			}
			return int64(length)
		}
	default:
		return nil, fmt.Errorf("%w: take indices of type %s (must be integers)", arrow.ErrInvalid, indices.DataType())
	}
	for i := range idx {
		if indices.IsNull(i) {
			continue
		}
		v := at(i)
		if v < 0 || v >= int64(length) {
			return nil, fmt.Errorf("%w: %s out of bounds", arrow.ErrIndex, indices.ValueStr(i))
		}
		idx[i] = v
	}
	return idx, nil
}

// takeValidity returns the validity bitmap of the taken values and their
// number of nulls, or no bitmap where none is null.
func takeValidity(mem memory.Allocator, values, indices arrow.Array, idx []int64) (*memory.Buffer, int) {
	if values.NullN() == 0 && indices.NullN() == 0 {
		return nil, 0
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(idx)))))
	bits := buf.Bytes()
	clear(bits)
	nulls := 0
	for i, v := range idx {
		if indices.IsNull(i) || values.IsNull(int(v)) {
			nulls++
			continue
		}
		bitutil.SetBit(bits, i)
	}
	if nulls == 0 {
		buf.Release()
		return nil, 0
	}
	return buf, nulls
}

// takeBits takes the values of a boolean array; a value not valid (valid,
// nil where all are) is false.
func takeBits(mem memory.Allocator, in arrow.ArrayData, valid []byte, idx []int64) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(len(idx)))))
	bits := buf.Bytes()
	clear(bits)
	src, off := in.Buffers()[1].Bytes(), int64(in.Offset())
	for i, v := range idx {
		if isValid(valid, i) && bitutil.BitIsSet(src, int(off+v)) {
			bitutil.SetBit(bits, i)
		}
	}
	return buf
}

// takeFixed takes the values of an array of width bytes each; a value not
// valid is zeros.
func takeFixed(mem memory.Allocator, in arrow.ArrayData, width int, valid []byte, idx []int64) *memory.Buffer {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(len(idx) * width)
	dst := buf.Bytes()
	clear(dst)
	var src []byte
	if b := in.Buffers()[1]; b != nil {
		src = b.Bytes()[in.Offset()*width:]
	}
	for i, v := range idx {
		if !isValid(valid, i) {
			continue
		}
		copy(dst[i*width:(i+1)*width], src[int(v)*width:(int(v)+1)*width])
	}
	return buf
}

// takeVarBinary takes the values of a string or binary array with offsets
// of type O, size bytes each, returning the offsets and the data buffers;
// a value not valid is empty.
func takeVarBinary[O int32 | int64](mem memory.Allocator, in arrow.ArrayData, size int, valid []byte, idx []int64) (*memory.Buffer, *memory.Buffer) {
	var srcOffsets []O
	if b := in.Buffers()[1]; b != nil && b.Len() > 0 {
		srcOffsets = arrow.GetData[O](b.Bytes())[in.Offset():]
	}
	var srcData []byte
	if b := in.Buffers()[2]; b != nil {
		srcData = b.Bytes()
	}
	total := 0
	for i, v := range idx {
		if isValid(valid, i) {
			total += int(srcOffsets[v+1] - srcOffsets[v])
		}
	}
	offsets := memory.NewResizableBuffer(mem)
	offsets.Resize((len(idx) + 1) * size)
	dstOffsets := arrow.GetData[O](offsets.Bytes())
	data := memory.NewResizableBuffer(mem)
	data.Resize(total)
	dst := data.Bytes()
	var end O
	dstOffsets[0] = 0
	for i, v := range idx {
		if isValid(valid, i) {
			end += O(copy(dst[end:], srcData[srcOffsets[v]:srcOffsets[v+1]]))
		}
		dstOffsets[i+1] = end
	}
	return offsets, data
}

// isValid reports whether value i of a validity bitmap (nil where all
// are valid) is set.
func isValid(valid []byte, i int) bool {
	return valid == nil || bitutil.BitIsSet(valid, i)
}
