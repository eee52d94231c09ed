package decode

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
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

// int96NanosOfDay is the number of nanoseconds in a day: an INT96 time of
// day must be less.
const int96NanosOfDay = 86_400_000_000_000

// julianUnixEpoch is the Julian day number of 1970-01-01, the day INT96
// timestamps count from.
const julianUnixEpoch = 2_440_588

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
func checkNarrowIntegers(ro *resolved, pf *file.Reader) error {
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
			return parquetProblem(ro.key, c.Name(), "cannot read parquet data", err)
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
		return &FileError{Key: ro.key, Row: row + 1, Column: c.Name(), Value: s,
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
func locateReadError(ctx context.Context, ro *resolved, pf *file.Reader, err error) error {
	var found error
	_ = flatColumns(pf, func(col int, c *schema.Column) error {
		if c.PhysicalType() != parquet.Types.Int96 {
			return nil
		}
		row, v, ok, rerr := firstBadRaw(pf, col, func(v parquet.Int96) bool { _, err := v.ToTimestamp(); return err != nil })
		if rerr == nil && ok {
			value, reason := int96Problem(v)
			found = &FileError{Key: ro.key, Row: row + 1, Column: c.Name(), Value: value, Reason: reason}
		}
		return found
	})
	if found != nil {
		return found
	}
	if fe := failingColumn(ctx, ro, pf); fe != nil {
		return fe
	}
	return parquetProblem(ro.key, "", "cannot read parquet data", err)
}

// int96Problem words an INT96 value pqarrow cannot read: its value as text
// (the instant, or its day and time of day) and the reason.
func int96Problem(v parquet.Int96) (value, reason string) {
	nanos := binary.LittleEndian.Uint64(v[:8])
	day := binary.LittleEndian.Uint32(v[8:])
	if nanos >= int96NanosOfDay {
		value = fmt.Sprintf("Julian day %d, %d ns into the day", day, nanos)
		return value, fmt.Sprintf("INT96 timestamp %s has a time of day of %d ns, not less than the %d ns of a day: not a valid INT96 timestamp (its writer is broken)",
			quoteValue(value), nanos, int64(int96NanosOfDay))
	}
	t := time.Unix((int64(day)-julianUnixEpoch)*86400, int64(nanos)).UTC()
	value = t.Format(time.RFC3339Nano)
	return value, fmt.Sprintf("INT96 timestamp %s is outside the range INT96 timestamps are read in, that of a nanosecond timestamp (%s to %s): write the column as TIMESTAMP(MICROS) instead (in Spark, spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS)",
		value, time.Unix(0, math.MinInt64).UTC().Format(time.RFC3339Nano), time.Unix(0, math.MaxInt64).UTC().Format(time.RFC3339Nano))
}

// failingColumn reads each flat column of pf on its own, as the decode
// reads it, and returns a refusal naming the first whose data cannot be
// read (and the rows of the batch that failed); nil when every column
// reads.
func failingColumn(ctx context.Context, ro *resolved, pf *file.Reader) *FileError {
	batch := int64(ro.batchRows)
	pa, err := parquetReader.Open(pf, batch, ro.mem)
	if err != nil {
		return nil
	}
	var fe *FileError
	_ = flatColumns(pf, func(col int, c *schema.Column) error {
		read, err := pa.ReadColumn(ctx, col, batch)
		if err != nil {
			fe = parquetProblem(ro.key, c.Name(), fmt.Sprintf("cannot read parquet data of rows %d to %d", read+1, min(read+batch, pf.NumRows())), err)
			return fe
		}
		return nil
	})
	return fe
}
