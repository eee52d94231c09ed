package pqlite

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go/format"

	"github.com/timelake/timelake/internal/decode"
)

// appender is the function that appends value j of vals (j < 0: a null)
// of leaf column l to b, a builder of type dt.
func appender(l *node, dt arrow.DataType, b array.Builder) (func(vals *values, j int) error, error) {
	mismatch := fmt.Errorf("cannot read a Parquet %s column as %s", l.physical, dt)
	switch dt.ID() {
	case arrow.NULL:
		return func(*values, int) error { b.AppendNull(); return nil }, nil
	case arrow.DURATION:
		// pqarrow's refusal, word for word.
		return nil, errors.New("no support for reading columns of type: duration")
	}
	null := func(vals *values, j int) bool {
		if j < 0 {
			b.AppendNull()
			return true
		}
		return false
	}
	switch l.physical {
	case format.Boolean:
		bb, ok := b.(*array.BooleanBuilder)
		if !ok {
			return nil, mismatch
		}
		return func(v *values, j int) error {
			switch {
			case null(v, j):
			case v.rle != nil:
				b, err := v.rle.next()
				if err != nil {
					return fmt.Errorf("parquet: boolean values: %w", err)
				}
				bb.Append(b != 0)
			default:
				bb.Append(v.bools[j] != 0)
			}
			return nil
		}, nil
	case format.Int32, format.Int64:
		add, ok := decode.IntAppender(b)
		if !ok {
			return nil, mismatch
		}
		if l.physical == format.Int32 {
			return func(v *values, j int) error {
				if !null(v, j) {
					add(int64(v.i32[j]))
				}
				return nil
			}, nil
		}
		return func(v *values, j int) error {
			if !null(v, j) {
				add(v.i64[j])
			}
			return nil
		}, nil
	case format.Int96:
		tb, ok := b.(*array.TimestampBuilder)
		if !ok {
			return nil, mismatch
		}
		return func(v *values, j int) error {
			if null(v, j) {
				return nil
			}
			ts, ok := int96Nanos(v.i96[j])
			if !ok {
				_, reason := decode.Int96Problem(v.i96[j])
				return errors.New(reason)
			}
			tb.Append(arrow.Timestamp(ts))
			return nil
		}, nil
	case format.Float:
		fb, ok := b.(*array.Float32Builder)
		if !ok {
			return nil, mismatch
		}
		return func(v *values, j int) error {
			if !null(v, j) {
				fb.Append(v.f32[j])
			}
			return nil
		}, nil
	case format.Double:
		fb, ok := b.(*array.Float64Builder)
		if !ok {
			return nil, mismatch
		}
		return func(v *values, j int) error {
			if !null(v, j) {
				fb.Append(v.f64[j])
			}
			return nil
		}, nil
	case format.ByteArray, format.FixedLenByteArray:
		add, ok := decode.BytesAppender(b)
		if !ok {
			return nil, mismatch
		}
		return func(v *values, j int) error {
			if null(v, j) {
				return nil
			}
			return add(v.bytesAt(j))
		}, nil
	}
	return nil, mismatch
}

// int96Nanos is the nanoseconds since the epoch of an INT96 timestamp;
// ok is false outside the range of a nanosecond timestamp or for a time
// of day of a day or more.
func int96Nanos(v [12]byte) (int64, bool) {
	nanos := binary.LittleEndian.Uint64(v[:8])
	day := int64(binary.LittleEndian.Uint32(v[8:]))
	const nanosOfDay = 86_400_000_000_000
	if nanos >= nanosOfDay {
		return 0, false
	}
	t := new(big.Int).Mul(big.NewInt(day-2_440_588), big.NewInt(nanosOfDay))
	t.Add(t, new(big.Int).SetUint64(nanos))
	if !t.IsInt64() {
		return 0, false
	}
	return t.Int64(), true
}

// firstBad reads flat leaf column col of every row group and returns the
// first non-null value bad refuses and its row (0-based in the file);
// found is false when there is none.
func firstBad(ctx context.Context, f *openFile, col int, bad func(v *values, j int) bool) (row int64, vals *values, at int, found bool, err error) {
	leaf := f.ft.leaves[col]
	var base int64
	for g := range f.ft.meta.RowGroups {
		cr, err := f.ft.openChunk(ctx, f.src.R, g, leaf)
		if err != nil {
			return 0, nil, 0, false, err
		}
		r := base
		_, err = cr.read(1<<62, func(v *values, j int) error {
			if j >= 0 && bad(v, j) {
				vals, at, found = v, j, true
				return errStop
			}
			r++
			return nil
		})
		cr.close()
		if found {
			return r, vals, at, true, nil
		}
		if err != nil {
			return 0, nil, 0, false, err
		}
		base += f.ft.meta.RowGroups[g].NumRows
	}
	return 0, nil, 0, false, nil
}

// errStop stops a scan of a column.
var errStop = errors.New("stop")

// flatColumns calls fn for each leaf column that is a top-level column of
// its own (no nesting, no repetition).
func (f *footer) flatColumns(fn func(col int, l *node) error) error {
	for i, l := range f.leaves {
		if l.maxRep > 0 || l.parent != f.root {
			continue
		}
		if err := fn(i, l); err != nil {
			return err
		}
	}
	return nil
}

// checkNarrowIntegers refuses the first value of an INT(8) or INT(16)
// column outside its type's range, which pqarrow would cut to it.
func checkNarrowIntegers(ctx context.Context, f *openFile) error {
	key := f.opts.Key
	return f.ft.flatColumns(func(col int, l *node) error {
		it, ok := elementLogical(l.el).v.(*format.IntType)
		if !ok || l.physical != format.Int32 || it.BitWidth > 16 {
			return nil
		}
		var lo, hi int64 = 0, 1<<it.BitWidth - 1
		if it.IsSigned {
			lo, hi = -1<<(it.BitWidth-1), 1<<(it.BitWidth-1)-1
		}
		row, vals, at, found, err := firstBad(ctx, f, col, func(v *values, j int) bool { return int64(v.i32[j]) < lo || int64(v.i32[j]) > hi })
		if err != nil {
			return decode.ParquetProblem(key, l.name(), "cannot read parquet data", err)
		}
		if !found {
			return nil
		}
		v := vals.i32[at]
		cut := int64(int8(v))
		switch {
		case it.BitWidth == 8 && !it.IsSigned:
			cut = int64(uint8(v))
		case it.BitWidth == 16 && it.IsSigned:
			cut = int64(int16(v))
		case it.BitWidth == 16:
			cut = int64(uint16(v))
		}
		s := strconv.FormatInt(int64(v), 10)
		return &decode.FileError{Key: key, Row: row + 1, Column: l.name(), Value: s,
			Reason: fmt.Sprintf("value %s is outside the range of the column's Parquet type %s (%d to %d): the file's writer stored a wider integer than the type says, which would be cut to %d",
				s, fmt.Sprintf("INT(%d, %v)", it.BitWidth, it.IsSigned), lo, hi, cut)}
	})
}

// locateReadError returns the refusal naming the column, row and value of
// the first INT96 timestamp that cannot be read, or else the first column
// whose data cannot be read and the rows it failed in; failing that, err
// in a FileError.
func locateReadError(ctx context.Context, f *openFile, err error) error {
	var found error
	_ = f.ft.flatColumns(func(col int, l *node) error {
		if l.physical != format.Int96 {
			return nil
		}
		row, vals, at, ok, rerr := firstBad(ctx, f, col, func(v *values, j int) bool { _, ok := int96Nanos(v.i96[j]); return !ok })
		if rerr == nil && ok {
			value, reason := decode.Int96Problem(vals.i96[at])
			found = &decode.FileError{Key: f.opts.Key, Row: row + 1, Column: l.name(), Value: value, Reason: reason}
		}
		return found
	})
	if found != nil {
		return found
	}
	batch := int64(f.opts.BatchRows)
	var fe *decode.FileError
	_ = f.ft.flatColumns(func(col int, l *node) error {
		read, err := f.ReadColumn(ctx, col, batch)
		if err != nil {
			fe = decode.ParquetProblem(f.opts.Key, l.name(), fmt.Sprintf("cannot read parquet data of rows %d to %d", read+1, min(read+batch, f.NumRows())), err)
			return fe
		}
		return nil
	})
	if fe != nil {
		return fe
	}
	return decode.ParquetProblem(f.opts.Key, "", "cannot read parquet data", err)
}

// columnChunks lists the column chunks for decode.VerifyPageChecksums, in
// the order of the footer; none for a writer before PARQUET-816's fix
// (see decode/arrowpq).
func (f *footer) columnChunks() []decode.ParquetColumnChunk {
	if f.before816() {
		return nil
	}
	var out []decode.ParquetColumnChunk
	groups := len(f.meta.RowGroups)
	for g := range groups {
		for c := range f.meta.RowGroups[g].Columns {
			cc := &f.meta.RowGroups[g].Columns[c]
			cm := &cc.MetaData
			if cc.CryptoMetadata.Value != nil || len(cc.EncryptedColumnMetadata) > 0 || cm.NumValues <= 0 {
				out = append(out, decode.ParquetColumnChunk{Group: g, Groups: groups, Skip: true})
				continue
			}
			start := cm.DataPageOffset
			if cm.DictionaryPageOffset > 0 && cm.DictionaryPageOffset < start {
				start = cm.DictionaryPageOffset
			}
			out = append(out, decode.ParquetColumnChunk{Column: strings.Join(cm.PathInSchema, "."), Group: g, Groups: groups,
				Start: start, Length: cm.TotalCompressedSize})
		}
	}
	return out
}
