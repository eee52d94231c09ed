package decode

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/float16"
)

// The Arrow side of reading Parquet values, shared by the ParquetFormats
// (parquetformat.go): the type a column is read as when the footer's
// ARROW:schema refines it (ApplyStored, ReadableRefinement) and the
// appenders of Parquet's physical values to Arrow builders as pqarrow
// converts them (IntAppender, BytesAppender). decode/arrowpq's and
// decode/pqlite's readers of flat columns read with them;
// TestColumnReaderAgrees (decode/pqarrowio) compares them with pqarrow.

// ApplyStoredSchema gives fields, the Arrow fields of a file's Parquet
// columns, the types the footer's ARROW:schema (its value stored) says
// more about (ApplyStored, field by field). Errors: a stored schema that
// does not parse or names other columns.
func ApplyStoredSchema(fields []arrow.Field, stored string) error {
	sc, err := StoredArrowSchema(stored)
	if err != nil {
		return err
	}
	if sc.NumFields() != len(fields) {
		return errors.New("the stored Arrow schema names other columns")
	}
	for i := range fields {
		if fields[i].Type, _, err = ApplyStored(fields[i].Type, sc.Field(i).Type); err != nil {
			return err
		}
	}
	return nil
}

// ReadColumnRows reads a column to its end through read, batch values at
// a time (at least one), and returns how many it read (a ParquetFile's
// ReadColumn); it stops with ctx's error once ctx is done.
func ReadColumnRows(ctx context.Context, batch int64, read func(batch int64) (arrow.Array, error)) (int64, error) {
	batch = max(batch, 1)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		arr, err := read(batch)
		if err != nil {
			return n, err
		}
		got := int64(arr.Len())
		arr.Release()
		if got == 0 {
			return n, nil
		}
		n += got
	}
}

// ApplyStored is the type pqarrow reads a flat column of type plain as
// whose stored Arrow type is origin (pqarrow's
// applyOriginalStorageMetadata): origin where it says more about plain's
// values (a zone on a UTC timestamp of the same unit, a duration over
// INT64, a 256-bit decimal over a 128-bit one, a large string or binary
// whatever plain is, a dictionary of a string or binary, an extension type
// over such a type), else plain. modified is pqarrow's: whether the stored
// type was applied, or would be to an extension's storage.
func ApplyStored(plain, origin arrow.DataType) (_ arrow.DataType, modified bool, err error) {
	switch o := origin.(type) {
	case arrow.ExtensionType:
		inferred, modified, err := ApplyStored(plain, o.StorageType())
		if err != nil || !modified || arrow.TypeEqual(o, inferred) {
			return inferred, modified, err
		}
		storage := inferred
		if e, ok := storage.(arrow.ExtensionType); ok && e.ExtensionName() == o.ExtensionName() {
			storage = e.StorageType()
		}
		if !arrow.TypeEqual(o.StorageType(), storage) {
			return nil, true, fmt.Errorf("%w: mismatch storage type '%s' for extension type '%s'", arrow.ErrInvalid, inferred, o)
		}
		return o, true, nil
	case *arrow.TimestampType:
		p, ok := plain.(*arrow.TimestampType)
		if !ok {
			return plain, false, nil
		}
		if o.Unit == p.Unit && p.TimeZone == "UTC" && o.TimeZone != "" {
			return o, true, nil
		}
		return plain, true, nil
	case *arrow.DurationType:
		if plain.ID() == arrow.INT64 {
			return o, true, nil
		}
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		return o, true, nil
	case *arrow.DictionaryType:
		if arrow.IsBinaryLike(plain.ID()) {
			return &arrow.DictionaryType{IndexType: o.IndexType, ValueType: plain, Ordered: o.Ordered}, true, nil
		}
	case *arrow.Decimal256Type:
		if plain.ID() == arrow.DECIMAL128 {
			return o, true, nil
		}
	case *arrow.SparseUnionType, *arrow.DenseUnionType:
		return nil, false, errors.New("unimplemented type")
	}
	return plain, false, nil
}

// ReadableRefinement is the type decode/arrowpq's column reader reads a column of type plain
// as whose stored Arrow type is refined (refines): refined where its
// values are those of plain in another type (a zone, a duration, an
// extension type), plain where only their layout differs (the large
// variants, a dictionary), which the decode reads alike.
func ReadableRefinement(plain, refined arrow.DataType) arrow.DataType {
	switch r := refined.(type) {
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		return plain
	case *arrow.DictionaryType:
		return ReadableRefinement(plain, r.ValueType)
	case arrow.ExtensionType:
		if st := ReadableRefinement(plain, r.StorageType()); !arrow.TypeEqual(st, r.StorageType()) {
			return st
		}
	}
	return refined
}

// IntAppender appends an integer of an INT32 or INT64 column to b as
// pqarrow converts it to b's type.
func IntAppender(b array.Builder) (func(int64), bool) {
	switch b := b.(type) {
	case *array.Int8Builder:
		return func(v int64) { b.Append(int8(v)) }, true
	case *array.Int16Builder:
		return func(v int64) { b.Append(int16(v)) }, true
	case *array.Int32Builder:
		return func(v int64) { b.Append(int32(v)) }, true
	case *array.Int64Builder:
		return func(v int64) { b.Append(v) }, true
	case *array.Uint8Builder:
		return func(v int64) { b.Append(uint8(v)) }, true
	case *array.Uint16Builder:
		return func(v int64) { b.Append(uint16(v)) }, true
	case *array.Uint32Builder:
		return func(v int64) { b.Append(uint32(v)) }, true
	case *array.Uint64Builder:
		return func(v int64) { b.Append(uint64(v)) }, true
	case *array.Date32Builder:
		return func(v int64) { b.Append(arrow.Date32(v)) }, true
	case *array.Time32Builder:
		return func(v int64) { b.Append(arrow.Time32(v)) }, true
	case *array.Time64Builder:
		return func(v int64) { b.Append(arrow.Time64(v)) }, true
	case *array.TimestampBuilder:
		return func(v int64) { b.Append(arrow.Timestamp(v)) }, true
	case *array.Decimal128Builder:
		return func(v int64) { b.Append(decimal128.FromI64(v)) }, true
	case *array.Decimal256Builder:
		return func(v int64) { b.Append(decimal256.FromI64(v)) }, true
	}
	return nil, false
}

// BytesAppender appends a BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY value to b:
// as text or bytes, a half float (little-endian), or a decimal (big-endian
// two's complement, Parquet LogicalTypes.md, "DECIMAL").
func BytesAppender(b array.Builder) (func([]byte) error, bool) {
	switch b := b.(type) {
	case *array.StringBuilder:
		return func(v []byte) error { b.BinaryBuilder.Append(v); return nil }, true
	case *array.BinaryBuilder:
		return func(v []byte) error { b.Append(v); return nil }, true
	case *array.FixedSizeBinaryBuilder:
		return func(v []byte) error { b.Append(v); return nil }, true
	case *array.Float16Builder:
		return func(v []byte) error {
			if len(v) != 2 {
				return fmt.Errorf("a FLOAT16 value of %d bytes", len(v))
			}
			b.Append(float16.FromBits(binary.LittleEndian.Uint16(v)))
			return nil
		}, true
	case *array.Decimal128Builder:
		return func(v []byte) error {
			w, err := bigEndianWords(v, 2)
			if err != nil {
				return err
			}
			b.Append(decimal128.New(int64(w[0]), w[1]))
			return nil
		}, true
	case *array.Decimal256Builder:
		return func(v []byte) error {
			w, err := bigEndianWords(v, 4)
			if err != nil {
				return err
			}
			b.Append(decimal256.New(w[0], w[1], w[2], w[3]))
			return nil
		}, true
	}
	return nil, false
}

// bigEndianWords sign-extends the big-endian two's complement integer v,
// of 1 to 8*words bytes, to words 64-bit words, most significant first.
// Longer values are refused, as pqarrow refuses them, whatever their
// leading bytes.
func bigEndianWords(v []byte, words int) ([]uint64, error) {
	if len(v) == 0 || len(v) > 8*words {
		// pqarrow's refusals, word for word.
		if words == 2 {
			return nil, fmt.Errorf("length of byte array passed to bigEndianToDecimal128 was %d but must be between 1 and 16", len(v))
		}
		return nil, fmt.Errorf("%w: length of byte array for bigEndianToDecimal256 was %d but must be between 1 and %d", arrow.ErrInvalid, len(v), 8*words)
	}
	buf := make([]byte, 8*words)
	if v[0]&0x80 != 0 {
		for i := range buf {
			buf[i] = 0xff
		}
	}
	copy(buf[len(buf)-len(v):], v)
	out := make([]uint64, words)
	for i := range out {
		out[i] = binary.BigEndian.Uint64(buf[8*i:])
	}
	return out, nil
}
