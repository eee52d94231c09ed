// Package arrowpq reads Parquet files for package decode with arrow-go's
// low-level parquet/file and parquet/schema packages, and registers
// itself as decode's ParquetFormat (decode.SetParquetFormat) when
// imported. It reads the footer, checks its counts and its stored
// ARROW:schema, checks narrow integers and page checksums, and reads the
// values of flat columns with its own column reader (columnreader.go),
// which gives a file the Arrow types pqarrow gives it. decode/pqarrowio
// builds on it with pqarrow as the Reader, which reads every Parquet
// type and writes the Parquet rejects file. arrow-go's parquet/file links
// arrow/compute (through parquet/internal/encoding), which is why package
// decode itself imports none of this (docs/performance.md, "The gateway
// binary").
package arrowpq

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/timelake/timelake/internal/decode"
	_ "github.com/timelake/timelake/internal/decode/pagecodec" // brotli pages of only nulls
)

func init() {
	compress.RegisterCodec(compress.Codecs.Lz4, decode.LZ4Codec{})
	decode.SetParquetFormat(Format{})
}

// Format is decode's ParquetFormat on arrow-go's parquet/file, reading
// values with Reader (nil: its own column reader of flat columns).
type Format struct {
	Reader Reader
}

func (f Format) reader() Reader {
	if f.Reader == nil {
		return columnReader{}
	}
	return f.Reader
}

// readBuffer is the buffer a Parquet column chunk is read through (a page
// larger than it grows it to the page's size).
const readBuffer = 256 << 10

// Open reads the footer and the Arrow schema of a Parquet file. Column
// chunks are read through a buffer (readBuffer, BufferedStreamEnabled)
// rather than whole: arrow-go otherwise reads every column chunk of a row
// group into memory before it decodes a batch, the whole file for a file
// of one row group.
//
// The footer's ARROW:schema is read only when it agrees with the Parquet
// schema (dropDisagreeingArrowSchema); a panic of the reader refuses the
// file.
func (f Format) Open(ctx context.Context, src decode.Source, opts decode.ParquetOpenOptions) (_ decode.ParquetFile, err error) {
	var pf *file.Reader
	defer func() {
		if v := recover(); v != nil {
			if pf != nil {
				_ = pf.Close()
			}
			err = decode.Recovered(opts.Key, "the reader", "reading the Parquet footer and schema", "", v)
		}
	}()
	props := parquet.NewReaderProperties(opts.Mem)
	props.BufferedStreamEnabled, props.BufferSize = true, readBuffer
	pf, err = file.NewParquetReader(io.NewSectionReader(src.R, 0, src.Size), file.WithReadProps(props))
	if err != nil {
		return nil, err // the footer does not read: decode says why
	}
	if reason := footerCounts(pf); reason != "" {
		_ = pf.Close()
		return nil, decode.ParquetProblem(opts.Key, "", "cannot read parquet data: "+reason+" (the file is damaged)", nil)
	}
	// Batches no longer than the file: the reader reserves value buffers
	// for a whole batch per column, so a 40,000-row file read in batches of
	// 64 Ki rows would allocate buffers 60% larger than its values.
	batch := min(int64(opts.BatchRows), max(pf.NumRows(), 1))
	if values, ok := parquetValueBytes(pf); ok && pf.NumRows() > 0 && opts.PieceRows != nil {
		batch = min(batch, opts.PieceRows(max(values/pf.NumRows(), 1)))
	}
	r := f.reader()
	dropDisagreeingArrowSchema(pf, r)
	pa, err := r.Open(pf, batch, opts.Mem)
	var sc *arrow.Schema
	if err == nil {
		sc, err = pa.Schema()
	}
	if err != nil {
		_ = pf.Close()
		var fe *decode.FileError
		if errors.As(err, &fe) {
			fe.Key = opts.Key
			return nil, fe
		}
		return nil, decode.ParquetProblem(opts.Key, "", "cannot read parquet schema", err)
	}
	return &openFile{pf: pf, pa: pa, sc: enumsAsText(pf, sc), src: src, opts: opts, reader: r}, nil
}

// ValueBytes estimates the Arrow bytes of src's values from its footer
// (decode.ParquetValueBytes).
func (Format) ValueBytes(src decode.Source) (n int64, ok bool) {
	pf, err := file.NewParquetReader(io.NewSectionReader(src.R, 0, src.Size))
	if err != nil {
		return 0, false
	}
	defer pf.Close()
	return parquetValueBytes(pf)
}

// FooterReads reports whether the first size bytes of r are a Parquet file
// whose footer reads.
func (Format) FooterReads(r io.ReaderAt, size int64) bool {
	pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, size))
	if err != nil {
		return false
	}
	_ = pf.Close()
	return true
}

// Write writes rows with the Reader.
func (f Format) Write(w io.Writer, rows []arrow.RecordBatch) error {
	return f.reader().Write(w, rows)
}

// openFile is a file opened by Format.
type openFile struct {
	pf     *file.Reader
	pa     File
	sc     *arrow.Schema
	src    decode.Source
	opts   decode.ParquetOpenOptions
	reader Reader
}

func (f *openFile) Schema() *arrow.Schema { return f.sc }
func (f *openFile) NumRows() int64        { return f.pf.NumRows() }
func (f *openFile) Close() error          { return f.pf.Close() }

func (f *openFile) Verify(ctx context.Context) error {
	if err := checkNarrowIntegers(f.opts.Key, f.pf); err != nil {
		return err
	}
	return decode.VerifyPageChecksums(ctx, f.opts.Key, f.src.R, f.src.Size, columnChunks(f.pf.MetaData()))
}

func (f *openFile) Records(ctx context.Context) (array.RecordReader, error) {
	return f.pa.Records(ctx)
}

func (f *openFile) ReadColumn(ctx context.Context, i int, batch int64) (int64, error) {
	return f.pa.ReadColumn(ctx, i, batch)
}

func (f *openFile) LocateReadError(ctx context.Context, err error) error {
	return locateReadError(ctx, f, err)
}

// RowGroupAt says which row group the row after the first rows starts in,
// and from which row: where a read that panicked was.
func (f *openFile) RowGroupAt(rows int64) string {
	md := f.pf.MetaData()
	var start int64
	for g := range md.NumRowGroups() {
		n := md.RowGroup(g).NumRows()
		if rows < start+n {
			return fmt.Sprintf("row group %d of %d, reading from row %d", g+1, md.NumRowGroups(), rows+1)
		}
		start += n
	}
	return ""
}

// enumsAsText gives the columns of sc that are Parquet ENUM columns
// (BYTE_ARRAY annotated ENUM, UTF-8 text by the Parquet format), which
// pqarrow reads as binary, the string type; decode reads their values as
// such.
func enumsAsText(pf *file.Reader, sc *arrow.Schema) *arrow.Schema {
	root := pf.MetaData().Schema.Root()
	if root.NumFields() != sc.NumFields() {
		return sc
	}
	var fields []arrow.Field
	for i := range sc.NumFields() {
		n, ok := root.Field(i).(*schema.PrimitiveNode)
		if !ok || n.PhysicalType() != parquet.Types.ByteArray {
			continue
		}
		if _, enum := n.LogicalType().(schema.EnumLogicalType); !enum && n.ConvertedType() != schema.ConvertedTypes.Enum {
			continue
		}
		var text arrow.DataType
		switch sc.Field(i).Type.ID() {
		case arrow.BINARY:
			text = arrow.BinaryTypes.String
		case arrow.LARGE_BINARY:
			text = arrow.BinaryTypes.LargeString
		default:
			continue
		}
		if fields == nil {
			fields = sc.Fields()
		}
		fields[i].Type = text
	}
	if fields == nil {
		return sc
	}
	md := sc.Metadata()
	return arrow.NewSchema(fields, &md)
}

// footerCounts checks the counts of a Parquet footer that readers trust:
// every row group's rows at least 0 and adding up to the file's, every
// column chunk's values at least 0. pqarrow reads no row of a row group
// whose count is negative, without an error. "" when they hold.
func footerCounts(pf *file.Reader) string {
	md := pf.MetaData()
	var rows int64
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		if rg.NumRows() < 0 {
			return fmt.Sprintf("row group %d has %d rows by its metadata", g, rg.NumRows())
		}
		rows += rg.NumRows()
		for c := range rg.NumColumns() {
			if cc, err := rg.ColumnChunk(c); err == nil && cc.NumValues() < 0 {
				return fmt.Sprintf("row group %d: column chunk %d has %d values by its metadata", g, c, cc.NumValues())
			}
		}
	}
	if rows != md.NumRows {
		return fmt.Sprintf("its footer says %d rows, its row groups %d", md.NumRows, rows)
	}
	return ""
}

// parquetValueBytes is decode.ParquetValueBytes of an open file.
func parquetValueBytes(pf *file.Reader) (n int64, ok bool) {
	md := pf.MetaData()
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return 0, false
			}
			values := cc.NumValues()
			n += values / 8 // validity
			switch cc.Type() {
			case parquet.Types.Boolean:
				n += values / 8
			case parquet.Types.Int32, parquet.Types.Float:
				n += 4 * values
			case parquet.Types.Int64, parquet.Types.Double, parquet.Types.Int96:
				n += 8 * values // INT96 reads as a timestamp
			case parquet.Types.FixedLenByteArray:
				n += int64(md.Schema.Column(c).TypeLength()) * values
			default:
				data := cc.TotalUncompressedSize()
				if set, _ := cc.StatsSet(); set {
					if st, err := cc.Statistics(); err == nil && st.HasMinMax() {
						data = max(data, values*int64(len(st.EncodeMin())+len(st.EncodeMax()))/2)
					}
				}
				n += 4*values + data
			}
		}
	}
	return n, true
}
