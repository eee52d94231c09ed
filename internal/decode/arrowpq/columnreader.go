package arrowpq

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/timelake/timelake/internal/decode"
)

// A Parquet file's values are read as Arrow record batches by a Reader.
// The timelake binary gives Format arrow-go's pqarrow (package
// decode/pqarrowio, imported for its registration by internal/ingest and
// cmd/timelake), which reads every Parquet type, nested ones included, and
// writes the Parquet rejects file. Without it, as in the gateway binary
// (timelake-gateway), the files are read by columnReader below, built on
// arrow-go's low-level parquet/file and parquet/schema packages: pqarrow
// links arrow/flight and with it gRPC and protobuf, 14.6 MB of the
// gateway's 49.7 MB on amd64 (docs/performance.md, "The gateway binary"),
// for what Check needs of it, the values of flat columns. columnReader
// gives a file the Arrow types pqarrow gives it (pqarrow's getArrowType,
// the footer's ARROW:schema where it only refines them, arrowschema.go and
// decode.ApplyStored) and reads the values of every column chunk through
// the column chunk readers, pages and their checksums included, so that
// Check refuses what Decode refuses with the same reasons. Where they
// differ: a nested column is refused when the schema is read (no table
// takes one: normaliseType), named by its kind rather than its Arrow type;
// a file whose columns hold different numbers of values (a damaged value
// count in the footer) is refused, where pqarrow reads fewer rows; and the
// Parquet rejects file of --on-error skip-rows, which only ingest writes,
// is not written. TestColumnReaderAgrees (decode/pqarrowio) compares the
// two on the corpus, a file per type and damaged copies of both.

// Reader reads the values of a Parquet file opened with arrow-go's
// parquet/file as Arrow record batches: columnReader below (Format's
// Reader nil), or pqarrow (decode/pqarrowio).
type Reader interface {
	// Fields are the Arrow fields of the columns of a file of schema sc
	// with the footer's key-value metadata kv (nil: without the stored
	// Arrow schema).
	Fields(sc *schema.Schema, kv metadata.KeyValueMetadata) ([]arrow.Field, error)
	// Open reads pf in batches of at most batchRows rows allocated from mem.
	Open(pf *file.Reader, batchRows int64, mem memory.Allocator) (File, error)
	// Write writes rows (batches of one schema) as a zstd Parquet file.
	Write(w io.Writer, rows []arrow.RecordBatch) error
}

// File is a Parquet file opened by a Reader.
type File interface {
	// Schema is the Arrow schema of the file's columns.
	Schema() (*arrow.Schema, error)
	// Records reads every row of every column.
	Records(ctx context.Context) (array.RecordReader, error)
	// ReadColumn reads leaf column i alone, batch rows at a time, to its
	// end; read is the number of rows read before the batch that failed.
	ReadColumn(ctx context.Context, i int, batch int64) (read int64, err error)
}

// columnReader reads the flat columns of a Parquet file with the column
// chunk readers of parquet/file (see above).
type columnReader struct{}

func (columnReader) Fields(sc *schema.Schema, kv metadata.KeyValueMetadata) ([]arrow.Field, error) {
	root := sc.Root()
	fields := make([]arrow.Field, root.NumFields())
	for i := range fields {
		n, ok := root.Field(i).(*schema.PrimitiveNode)
		if !ok || n.RepetitionType() == parquet.Repetitions.Repeated {
			return nil, &decode.FileError{Column: root.Field(i).Name(), Reason: fmt.Sprintf("unsupported column type %s (lists, structs, maps and other nested or special types cannot be loaded)", nestedName(root.Field(i)))}
		}
		dt, err := parquetArrowType(n)
		if err != nil {
			return nil, err
		}
		fields[i] = arrow.Field{Name: n.Name(), Type: dt, Nullable: n.RepetitionType() != parquet.Repetitions.Required}
	}
	if v := kv.FindValue(decode.ArrowSchemaKey); v != nil {
		if err := decode.ApplyStoredSchema(fields, *v); err != nil {
			return nil, err
		}
	}
	return fields, nil
}

// nestedName names the kind of a nested Parquet column (pqarrow names its
// Arrow type, which depends on the list and map layouts of
// LogicalTypes.md, "Nested Types", and the footer's ARROW:schema).
func nestedName(n schema.Node) string {
	if n.RepetitionType() == parquet.Repetitions.Repeated {
		return "list (a repeated field)"
	}
	switch n.LogicalType().(type) {
	case schema.ListLogicalType:
		return "list"
	case schema.MapLogicalType:
		return "map"
	case schema.VariantLogicalType:
		return "variant"
	}
	return "struct"
}

// parquetArrowType is the Arrow type pqarrow reads a flat column of n as
// (pqarrow's getArrowType).
func parquetArrowType(n *schema.PrimitiveNode) (arrow.DataType, error) {
	logical := n.LogicalType()
	if !logical.IsValid() || logical.Equals(schema.NullLogicalType{}) {
		return arrow.Null, nil
	}
	decimal := func(l schema.DecimalLogicalType) arrow.DataType {
		if l.Precision() <= decimal128.MaxPrecision {
			return &arrow.Decimal128Type{Precision: l.Precision(), Scale: l.Scale()}
		}
		return &arrow.Decimal256Type{Precision: l.Precision(), Scale: l.Scale()}
	}
	integer := func(l schema.IntLogicalType) (arrow.DataType, error) {
		switch w, signed := l.BitWidth(), l.IsSigned(); {
		case w == 8 && signed:
			return arrow.PrimitiveTypes.Int8, nil
		case w == 8:
			return arrow.PrimitiveTypes.Uint8, nil
		case w == 16 && signed:
			return arrow.PrimitiveTypes.Int16, nil
		case w == 16:
			return arrow.PrimitiveTypes.Uint16, nil
		case w == 32 && signed:
			return arrow.PrimitiveTypes.Int32, nil
		case w == 32:
			return arrow.PrimitiveTypes.Uint32, nil
		case w == 64 && signed:
			return arrow.PrimitiveTypes.Int64, nil
		case w == 64:
			return arrow.PrimitiveTypes.Uint64, nil
		}
		return nil, errors.New("invalid logical type for int32")
	}
	cannot := func(what string) error { return errors.New(logical.String() + " cannot annotate " + what) }
	switch n.PhysicalType() {
	case parquet.Types.Boolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case parquet.Types.Int32:
		switch l := logical.(type) {
		case schema.NoLogicalType:
			return arrow.PrimitiveTypes.Int32, nil
		case schema.TimeLogicalType:
			if l.TimeUnit() == schema.TimeUnitMillis {
				return arrow.FixedWidthTypes.Time32ms, nil
			}
			return nil, cannot("a time32")
		case schema.DecimalLogicalType:
			return decimal(l), nil
		case schema.IntLogicalType:
			return integer(l)
		case schema.DateLogicalType:
			return arrow.FixedWidthTypes.Date32, nil
		}
		return nil, cannot("int32")
	case parquet.Types.Int64:
		switch l := logical.(type) {
		case schema.NoLogicalType:
			return arrow.PrimitiveTypes.Int64, nil
		case schema.IntLogicalType:
			return integer(l)
		case schema.DecimalLogicalType:
			return decimal(l), nil
		case schema.TimeLogicalType:
			switch l.TimeUnit() {
			case schema.TimeUnitMicros:
				return arrow.FixedWidthTypes.Time64us, nil
			case schema.TimeUnitNanos:
				return arrow.FixedWidthTypes.Time64ns, nil
			}
			return nil, cannot("int64")
		case schema.TimestampLogicalType:
			tz := ""
			if l.IsAdjustedToUTC() || l.IsFromConvertedType() {
				tz = "UTC"
			}
			switch l.TimeUnit() {
			case schema.TimeUnitMillis:
				return &arrow.TimestampType{TimeZone: tz, Unit: arrow.Millisecond}, nil
			case schema.TimeUnitMicros:
				return &arrow.TimestampType{TimeZone: tz, Unit: arrow.Microsecond}, nil
			case schema.TimeUnitNanos:
				return &arrow.TimestampType{TimeZone: tz, Unit: arrow.Nanosecond}, nil
			}
			return nil, errors.New("Unrecognized unit in timestamp logical type " + l.String())
		}
		return nil, cannot("int64")
	case parquet.Types.Int96:
		return arrow.FixedWidthTypes.Timestamp_ns, nil
	case parquet.Types.Float:
		return arrow.PrimitiveTypes.Float32, nil
	case parquet.Types.Double:
		return arrow.PrimitiveTypes.Float64, nil
	case parquet.Types.ByteArray:
		switch l := logical.(type) {
		case schema.StringLogicalType:
			return arrow.BinaryTypes.String, nil
		case schema.DecimalLogicalType:
			return decimal(l), nil
		case schema.NoLogicalType, schema.EnumLogicalType, schema.JSONLogicalType, schema.BSONLogicalType,
			schema.GeometryLogicalType, schema.GeographyLogicalType:
			return arrow.BinaryTypes.Binary, nil
		}
		return nil, errors.New("unhandled logicaltype " + logical.String() + " for byte_array")
	case parquet.Types.FixedLenByteArray:
		switch l := logical.(type) {
		case schema.DecimalLogicalType:
			return decimal(l), nil
		case schema.NoLogicalType, schema.IntervalLogicalType:
			return &arrow.FixedSizeBinaryType{ByteWidth: n.TypeLength()}, nil
		case schema.UUIDLogicalType:
			if uuid := arrow.GetExtensionType("arrow.uuid"); uuid != nil {
				return uuid, nil
			}
			return &arrow.FixedSizeBinaryType{ByteWidth: n.TypeLength()}, nil
		case schema.Float16LogicalType:
			return arrow.FixedWidthTypes.Float16, nil
		}
		return nil, errors.New("unhandled logical type " + logical.String() + " for fixed-length byte array")
	}
	return nil, errors.New("invalid physical column type")
}

func (columnReader) Open(pf *file.Reader, batchRows int64, mem memory.Allocator) (File, error) {
	return &columnFile{pf: pf, batch: max(batchRows, 1), mem: mem}, nil
}

func (columnReader) Write(io.Writer, []arrow.RecordBatch) error {
	return errors.New("write rejects: this binary does not write Parquet (timelake-gateway checks Parquet files; ingest writes their rejects)")
}

// columnFile is a Parquet file opened by columnReader.
type columnFile struct {
	pf    *file.Reader
	batch int64
	mem   memory.Allocator
}

// Schema is the schema pqarrow reads the file with, but for the types
// whose values columnReader reads in another layout (readableRefinement).
func (c *columnFile) Schema() (*arrow.Schema, error) {
	md := c.pf.MetaData()
	fields, err := columnReader{}.Fields(md.Schema, md.KeyValueMetadata())
	if err != nil {
		return nil, err
	}
	plain, err := columnReader{}.Fields(md.Schema, nil)
	if err != nil {
		return nil, err
	}
	for i := range fields {
		fields[i].Type = decode.ReadableRefinement(plain[i].Type, fields[i].Type)
	}
	return arrow.NewSchema(fields, nil), nil
}

func (c *columnFile) Records(ctx context.Context) (array.RecordReader, error) {
	sc, err := c.Schema()
	if err != nil {
		return nil, err
	}
	return &columnRecords{ctx: ctx, f: c, sc: sc}, nil
}

func (c *columnFile) ReadColumn(ctx context.Context, i int, batch int64) (int64, error) {
	sc, err := c.Schema()
	if err != nil {
		return 0, err
	}
	cs := &columnStream{pf: c.pf, col: i, dt: sc.Field(i).Type, mem: c.mem}
	return decode.ReadColumnRows(ctx, batch, cs.read)
}

// columnStream reads one leaf column through the row groups, as pqarrow
// does: a row group's column chunk to the end of its pages (whatever the
// row group's row count says), then the next row group's.
type columnStream struct {
	pf    *file.Reader
	col   int
	dt    arrow.DataType
	mem   memory.Allocator
	group int                    // the next row group
	cr    file.ColumnChunkReader // the current row group's chunk; nil before the first
}

// read reads the next at most n rows as an array of the stream's type: fewer
// at the end of the column, none after it.
func (cs *columnStream) read(n int64) (arrow.Array, error) {
	ext, isExt := cs.dt.(arrow.ExtensionType)
	dt := cs.dt
	if isExt {
		dt = ext.StorageType()
	}
	b := array.NewBuilder(cs.mem, dt)
	defer b.Release()
	for got := int64(0); got < n; {
		if cs.cr == nil || !cs.cr.HasNext() {
			if cs.cr != nil {
				if err := cs.cr.Err(); err != nil {
					return nil, err
				}
			}
			if cs.group >= cs.pf.NumRowGroups() {
				break
			}
			cr, err := cs.pf.RowGroup(cs.group).Column(cs.col)
			if err != nil {
				return nil, err
			}
			cs.group++
			cs.cr = cr
			continue
		}
		m, err := readColumnValues(cs.cr, dt, b, n-got)
		if err != nil {
			return nil, err
		}
		if m == 0 {
			cs.cr = nil // no more values, whatever HasNext said
		}
		got += m
	}
	arr := b.NewArray()
	if isExt {
		defer arr.Release()
		return array.NewExtensionArrayWithStorage(ext, arr), nil
	}
	return arr, nil
}

// columnRecords reads a columnFile's columns in batches of at most its
// batch rows.
type columnRecords struct {
	ctx     context.Context
	f       *columnFile
	sc      *arrow.Schema
	streams []*columnStream
	cur     arrow.RecordBatch
	err     error
}

func (r *columnRecords) Retain()                        {}
func (r *columnRecords) Release()                       { r.drop() }
func (r *columnRecords) Schema() *arrow.Schema          { return r.sc }
func (r *columnRecords) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *columnRecords) Record() arrow.RecordBatch      { return r.cur }
func (r *columnRecords) Err() error                     { return r.err }

func (r *columnRecords) drop() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *columnRecords) Next() bool {
	r.drop()
	if r.err != nil {
		return false
	}
	if err := r.ctx.Err(); err != nil {
		r.err = err
		return false
	}
	if r.streams == nil {
		r.streams = make([]*columnStream, r.sc.NumFields())
		for i := range r.streams {
			r.streams[i] = &columnStream{pf: r.f.pf, col: i, dt: r.sc.Field(i).Type, mem: r.f.mem}
		}
	}
	cols := make([]arrow.Array, len(r.streams))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, cs := range r.streams {
		arr, err := cs.read(r.f.batch)
		if err != nil {
			r.err = fmt.Errorf("column %s: %w", r.sc.Field(i).Name, err)
			return false
		}
		cols[i] = arr
		if arr.Len() != cols[0].Len() {
			r.err = fmt.Errorf("column %s has %d values where column %s has %d", r.sc.Field(i).Name, arr.Len(), r.sc.Field(0).Name, cols[0].Len())
			return false
		}
	}
	if len(cols) == 0 || cols[0].Len() == 0 {
		return false
	}
	r.cur = array.NewRecordBatch(r.sc, cols, int64(cols[0].Len()))
	return true
}

// readColumnValues appends at most n rows of the flat column chunk cr to
// b, a builder of type dt (columnReader.Fields; an extension type's
// storage), and returns how many it appended: fewer at the end of the
// chunk's pages.
func readColumnValues(cr file.ColumnChunkReader, dt arrow.DataType, b array.Builder, n int64) (int64, error) {
	maxDef := cr.Descriptor().MaxDefinitionLevel()
	var (
		got int64
		err error
	)
	switch dt.ID() {
	case arrow.NULL:
		return readNulls(cr, b.(*array.NullBuilder), n, maxDef)
	case arrow.DURATION:
		// pqarrow's refusal, word for word.
		return 0, errors.New("no support for reading columns of type: duration")
	}
	switch r := cr.(type) {
	case *file.BooleanColumnChunkReader:
		bb, ok := b.(*array.BooleanBuilder)
		if !ok {
			return 0, typeMismatch(cr, dt)
		}
		got, err = readValues(r, n, maxDef, b, func(v bool) error { bb.Append(v); return nil })
	case *file.Int32ColumnChunkReader:
		add, ok := decode.IntAppender(b)
		if !ok {
			return 0, typeMismatch(cr, dt)
		}
		got, err = readValues(r, n, maxDef, b, func(v int32) error { add(int64(v)); return nil })
	case *file.Int64ColumnChunkReader:
		add, ok := decode.IntAppender(b)
		if !ok {
			return 0, typeMismatch(cr, dt)
		}
		got, err = readValues(r, n, maxDef, b, func(v int64) error { add(v); return nil })
	case *file.Int96ColumnChunkReader:
		tb, ok := b.(*array.TimestampBuilder)
		if !ok {
			return 0, typeMismatch(cr, dt)
		}
		got, err = readValues(r, n, maxDef, b, func(v parquet.Int96) error {
			ts, err := v.ToTimestamp()
			if err != nil {
				return err
			}
			tb.Append(ts)
			return nil
		})
	case *file.Float32ColumnChunkReader:
		fb, ok := b.(*array.Float32Builder)
		if !ok {
			return 0, typeMismatch(cr, dt)
		}
		got, err = readValues(r, n, maxDef, b, func(v float32) error { fb.Append(v); return nil })
	case *file.Float64ColumnChunkReader:
		fb, ok := b.(*array.Float64Builder)
		if !ok {
			return 0, typeMismatch(cr, dt)
		}
		got, err = readValues(r, n, maxDef, b, func(v float64) error { fb.Append(v); return nil })
	case *file.ByteArrayColumnChunkReader:
		add, ok := decode.BytesAppender(b)
		if !ok {
			return 0, typeMismatch(cr, dt)
		}
		got, err = readValues(r, n, maxDef, b, func(v parquet.ByteArray) error { return add(v) })
	case *file.FixedLenByteArrayColumnChunkReader:
		add, ok := decode.BytesAppender(b)
		if !ok {
			return 0, typeMismatch(cr, dt)
		}
		got, err = readValues(r, n, maxDef, b, func(v parquet.FixedLenByteArray) error { return add(v) })
	default:
		return 0, typeMismatch(cr, dt)
	}
	return got, err
}

// readNulls reads at most n values of a column of nulls (Parquet's UNKNOWN
// logical type) into b, as nulls.
func readNulls(cr file.ColumnChunkReader, b *array.NullBuilder, n int64, maxDef int16) (int64, error) {
	switch r := cr.(type) {
	case *file.BooleanColumnChunkReader:
		return readValues(r, n, maxDef, b, func(bool) error { b.AppendNull(); return nil })
	case *file.Int32ColumnChunkReader:
		return readValues(r, n, maxDef, b, func(int32) error { b.AppendNull(); return nil })
	case *file.Int64ColumnChunkReader:
		return readValues(r, n, maxDef, b, func(int64) error { b.AppendNull(); return nil })
	case *file.Int96ColumnChunkReader:
		return readValues(r, n, maxDef, b, func(parquet.Int96) error { b.AppendNull(); return nil })
	case *file.Float32ColumnChunkReader:
		return readValues(r, n, maxDef, b, func(float32) error { b.AppendNull(); return nil })
	case *file.Float64ColumnChunkReader:
		return readValues(r, n, maxDef, b, func(float64) error { b.AppendNull(); return nil })
	case *file.ByteArrayColumnChunkReader:
		return readValues(r, n, maxDef, b, func(parquet.ByteArray) error { b.AppendNull(); return nil })
	case *file.FixedLenByteArrayColumnChunkReader:
		return readValues(r, n, maxDef, b, func(parquet.FixedLenByteArray) error { b.AppendNull(); return nil })
	}
	return 0, typeMismatch(cr, arrow.Null)
}

func typeMismatch(cr file.ColumnChunkReader, dt arrow.DataType) error {
	return fmt.Errorf("cannot read a Parquet %s column as %s", cr.Type(), dt)
}

// readValues appends at most n rows of r to b, to the end of its pages:
// add for a value, a null where the definition level is below maxDef.
func readValues[T any](r rawReader[T], n int64, maxDef int16, b array.Builder, add func(T) error) (int64, error) {
	const chunk = 4096
	vals, def := make([]T, min(n, chunk)), make([]int16, min(n, chunk))
	var got int64
	for got < n && r.HasNext() {
		total, _, err := r.ReadBatch(min(n-got, chunk), vals, def, nil)
		if err != nil {
			return got, err
		}
		if total == 0 {
			break
		}
		v := 0
		for k := range total {
			if maxDef > 0 && def[k] < maxDef {
				b.AppendNull()
				continue
			}
			if err := add(vals[v]); err != nil {
				return got, err
			}
			v++
		}
		got += total
	}
	return got, r.Err()
}
