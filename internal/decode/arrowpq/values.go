package arrowpq

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/timelake/timelake/internal/decode"
)

// Parquet values that arrow-go's reader (pqarrow) changes, or refuses
// without saying where, are checked on the file's own column chunks with
// its low-level reader:
//
//   - INT(8) and INT(16) columns (signed or not) are INT32 on disk; pqarrow
//     cuts a value outside the annotated width to it (UINT_8 256 becomes
//     0). checkNarrowIntegers reads such columns before the decode and
//     refuses the first value outside its type (Parquet LogicalTypes.md,
//     "Signed Integers", "Unsigned Integers": the value must fit).
//   - INT96 timestamps are read as nanosecond timestamps; pqarrow fails on
//     one outside that range or with a time of day past midnight, naming
//     neither the column nor the row. locateReadError finds the value in
//     the file once the read has failed, and otherwise the column whose
//     data cannot be read.

// rawReader is the low-level column chunk reader of values of type T.
type rawReader[T any] interface {
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (total int64, valuesRead int, err error)
	HasNext() bool
	Err() error
	Close() error
}

// firstBadRaw reads flat leaf column col of every row group of pf and
// returns the first non-null value bad refuses and its row (0-based in the
// file); found is false when there is none.
func firstBadRaw[T any](pf *file.Reader, col int, bad func(T) bool) (row int64, v T, found bool, err error) {
	const batch = 4096
	vals, def := make([]T, batch), make([]int16, batch)
	maxDef := pf.MetaData().Schema.Column(col).MaxDefinitionLevel()
	// group reads row group g, whose first row is row.
	group := func(g int, row int64) (int64, T, bool, error) {
		var zero T
		cr, err := pf.RowGroup(g).Column(col)
		if err != nil {
			return 0, zero, false, err
		}
		rd, ok := cr.(rawReader[T])
		if !ok {
			return 0, zero, false, fmt.Errorf("column %d is not read as %T", col, zero)
		}
		defer rd.Close()
		for rd.HasNext() {
			total, _, err := rd.ReadBatch(batch, vals, def, nil)
			if err != nil || total == 0 {
				return 0, zero, false, err
			}
			next := 0
			for i := range total {
				if maxDef > 0 && def[i] < maxDef {
					row++
					continue
				}
				if bad(vals[next]) {
					return row, vals[next], true, nil
				}
				next++
				row++
			}
		}
		return 0, zero, false, nil
	}
	var base int64
	for g := range pf.NumRowGroups() {
		if row, v, found, err := group(g, base); found || err != nil {
			return row, v, found, err
		}
		base += pf.RowGroup(g).NumRows()
	}
	return 0, v, false, nil
}

// flatColumns calls fn for each leaf column of pf that is a top-level
// column of its own (no nesting, no repetition), with its name.
func flatColumns(pf *file.Reader, fn func(col int, c *schema.Column) error) error {
	sc := pf.MetaData().Schema
	for i := range sc.NumColumns() {
		c := sc.Column(i)
		if c.MaxRepetitionLevel() > 0 || sc.ColumnRoot(i) != c.SchemaNode() {
			continue
		}
		if err := fn(i, c); err != nil {
			return err
		}
	}
	return nil
}

// checkNarrowIntegers refuses the first value of an INT(8) or INT(16)
// column of pf outside its type's range, which pqarrow would cut to it.
func checkNarrowIntegers(key string, pf *file.Reader) error {
	return flatColumns(pf, func(col int, c *schema.Column) error {
		it, ok := c.LogicalType().(schema.IntLogicalType)
		if !ok || c.PhysicalType() != parquet.Types.Int32 || it.BitWidth() > 16 {
			return nil
		}
		var lo, hi int64 = 0, 1<<it.BitWidth() - 1
		if it.IsSigned() {
			lo, hi = -1<<(it.BitWidth()-1), 1<<(it.BitWidth()-1)-1
		}
		row, v, found, err := firstBadRaw(pf, col, func(v int32) bool { return int64(v) < lo || int64(v) > hi })
		if err != nil {
			return decode.ParquetProblem(key, c.Name(), "cannot read parquet data", err)
		}
		if !found {
			return nil
		}
		cut := int64(int8(v))
		switch {
		case it.BitWidth() == 8 && !it.IsSigned():
			cut = int64(uint8(v))
		case it.BitWidth() == 16 && it.IsSigned():
			cut = int64(int16(v))
		case it.BitWidth() == 16:
			cut = int64(uint16(v))
		}
		s := strconv.FormatInt(int64(v), 10)
		return &decode.FileError{Key: key, Row: row + 1, Column: c.Name(), Value: s,
			Reason: fmt.Sprintf("value %s is outside the range of the column's Parquet type %s (%d to %d): the file's writer stored a wider integer than the type says, which would be cut to %d",
				s, intTypeName(it), lo, hi, cut)}
	})
}

// intTypeName names a Parquet integer type as LogicalTypes.md does.
func intTypeName(it schema.IntLogicalType) string {
	return fmt.Sprintf("INT(%d, %v)", it.BitWidth(), it.IsSigned())
}

// locateReadError is called when reading the data of pf failed with err:
// it returns the refusal naming the column, row and value of the first
// INT96 timestamp that cannot be read, or else the first column whose data
// cannot be read and the rows it failed in; failing that, err in a
// FileError.
func locateReadError(ctx context.Context, f *openFile, err error) error {
	pf := f.pf
	var found error
	_ = flatColumns(pf, func(col int, c *schema.Column) error {
		if c.PhysicalType() != parquet.Types.Int96 {
			return nil
		}
		row, v, ok, rerr := firstBadRaw(pf, col, func(v parquet.Int96) bool { _, err := v.ToTimestamp(); return err != nil })
		if rerr == nil && ok {
			value, reason := decode.Int96Problem(v)
			found = &decode.FileError{Key: f.opts.Key, Row: row + 1, Column: c.Name(), Value: value, Reason: reason}
		}
		return found
	})
	if found != nil {
		return found
	}
	if fe := failingColumn(ctx, f); fe != nil {
		return fe
	}
	return decode.ParquetProblem(f.opts.Key, "", "cannot read parquet data", err)
}

// failingColumn reads each flat column of pf on its own, as the decode
// reads it, and returns a refusal naming the first whose data cannot be
// read (and the rows of the batch that failed); nil when every column
// reads.
func failingColumn(ctx context.Context, f *openFile) *decode.FileError {
	pf := f.pf
	batch := int64(f.opts.BatchRows)
	pa, err := f.reader.Open(pf, batch, f.opts.Mem)
	if err != nil {
		return nil
	}
	var fe *decode.FileError
	_ = flatColumns(pf, func(col int, c *schema.Column) error {
		read, err := pa.ReadColumn(ctx, col, batch)
		if err != nil {
			fe = decode.ParquetProblem(f.opts.Key, c.Name(), fmt.Sprintf("cannot read parquet data of rows %d to %d", read+1, min(read+batch, pf.NumRows())), err)
			return fe
		}
		return nil
	})
	return fe
}
