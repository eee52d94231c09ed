// Package pqlite reads Parquet files for package decode and registers
// itself as decode's ParquetFormat (decode.SetParquetFormat) when
// imported: timelake-gateway's Parquet format. It is own code over
// low-level packages: parquet-go's format structs, its DELTA and
// BYTE_STREAM_SPLIT decoders, Apache Thrift's compact protocol (which
// package decode links already) for the footer and the page headers
// (thrift.go), and the codecs of klauspost/compress, pierrec/lz4 and
// andybalholm/brotli. The reason is the size of the gateway binary
// (docs/performance.md, "The gateway binary"): arrow-go's parquet/file,
// which decode/arrowpq reads with, links arrow/compute, and the main
// parquet-go package links protobuf and go-geom; the gateway links none
// of them. It behaves as decode/arrowpq's format with its own reader of
// flat columns: the footer and its counts, the Arrow types pqarrow gives
// (arrowschema.go), the stored ARROW:schema where it agrees, ENUM as
// text, narrow integers and INT96 values (values.go), page checksums,
// data pages v1 and v2, dictionaries and definition levels (pages.go,
// hybrid.go); a nested column is refused when the schema is read.
// TestColumnReaderAgrees (decode/pqarrowio) compares it with pqarrow on
// the corpus, a file per type and damaged copies of both. It writes no
// Parquet: the rejects file is ingest's, through decode/pqarrowio.
package pqlite

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/timelake/timelake/internal/decode"
)

func init() {
	decode.SetParquetFormat(Format{})
}

// Format is decode's ParquetFormat on parquet-go's low-level packages.
type Format struct{}

// Open reads the footer and the Arrow schema of a Parquet file; a panic
// refuses the file.
func (Format) Open(ctx context.Context, src decode.Source, opts decode.ParquetOpenOptions) (_ decode.ParquetFile, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = decode.Recovered(opts.Key, "the reader", "reading the Parquet footer and schema", "", v)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ft, err := readFooter(ctx, src.R, src.Size)
	if err != nil {
		return nil, err // the footer does not read: decode says why
	}
	if reason := ft.footerCounts(); reason != "" {
		return nil, decode.ParquetProblem(opts.Key, "", "cannot read parquet data: "+reason+" (the file is damaged)", nil)
	}
	numRows := ft.meta.NumRows
	batch := min(int64(opts.BatchRows), max(numRows, 1))
	if values, ok := ft.valueBytes(); ok && numRows > 0 && opts.PieceRows != nil {
		batch = min(batch, opts.PieceRows(max(values/numRows, 1)))
	}
	sc, err := ft.schema(ft.storedAgrees())
	if err != nil {
		var fe *decode.FileError
		if errors.As(err, &fe) {
			fe.Key = opts.Key
			return nil, fe
		}
		return nil, decode.ParquetProblem(opts.Key, "", "cannot read parquet schema", err)
	}
	return &openFile{ft: ft, sc: sc, src: src, opts: opts, batch: max(batch, 1)}, nil
}

// ValueBytes estimates the Arrow bytes of src's values from its footer
// (decode.ParquetValueBytes).
func (Format) ValueBytes(src decode.Source) (n int64, ok bool) {
	ft, err := readFooter(context.Background(), src.R, src.Size)
	if err != nil {
		return 0, false
	}
	return ft.valueBytes()
}

// FooterReads reports whether the first size bytes of r are a Parquet file
// whose footer reads.
func (Format) FooterReads(r io.ReaderAt, size int64) bool {
	_, err := readFooter(context.Background(), r, size)
	return err == nil
}

// Write refuses: the gateway writes no Parquet rejects file.
func (Format) Write(io.Writer, []arrow.RecordBatch) error {
	return errors.New("write rejects: this binary does not write Parquet (timelake-gateway checks Parquet files; ingest writes their rejects)")
}

// openFile is a file opened by Format.
type openFile struct {
	ft    *footer
	sc    *arrow.Schema
	src   decode.Source
	opts  decode.ParquetOpenOptions
	batch int64
}

func (f *openFile) Schema() *arrow.Schema { return f.sc }
func (f *openFile) NumRows() int64        { return f.ft.meta.NumRows }
func (f *openFile) Close() error          { return nil }

func (f *openFile) Verify(ctx context.Context) error {
	if err := checkNarrowIntegers(ctx, f); err != nil {
		return err
	}
	return decode.VerifyPageChecksums(ctx, f.opts.Key, f.src.R, f.src.Size, f.ft.columnChunks())
}

func (f *openFile) Records(ctx context.Context) (array.RecordReader, error) {
	return &records{ctx: ctx, f: f}, nil
}

func (f *openFile) ReadColumn(ctx context.Context, i int, batch int64) (int64, error) {
	cs := &columnStream{ctx: ctx, f: f, col: i, dt: f.sc.Field(i).Type, mem: f.opts.Mem}
	defer cs.close()
	return decode.ReadColumnRows(ctx, batch, cs.read)
}

func (f *openFile) LocateReadError(ctx context.Context, err error) error {
	return locateReadError(ctx, f, err)
}

// RowGroupAt says which row group the row after the first rows starts in,
// and from which row.
func (f *openFile) RowGroupAt(rows int64) string {
	groups := f.ft.meta.RowGroups
	var start int64
	for g := range groups {
		n := groups[g].NumRows
		if rows < start+n {
			return fmt.Sprintf("row group %d of %d, reading from row %d", g+1, len(groups), rows+1)
		}
		start += n
	}
	return ""
}

// columnStream reads one leaf column through the row groups: a row
// group's column chunk to the end of its pages, then the next one's.
type columnStream struct {
	ctx   context.Context
	f     *openFile
	col   int
	dt    arrow.DataType
	mem   memory.Allocator
	group int
	cr    *chunkReader
}

func (cs *columnStream) close() {
	if cs.cr != nil {
		cs.cr.close()
		cs.cr = nil
	}
}

// read reads the next at most n rows as an array of the stream's type.
func (cs *columnStream) read(n int64) (arrow.Array, error) {
	ext, isExt := cs.dt.(arrow.ExtensionType)
	dt := cs.dt
	if isExt {
		dt = ext.StorageType()
	}
	b := array.NewBuilder(cs.mem, dt)
	defer b.Release()
	leaf := cs.f.ft.leaves[cs.col]
	add, err := appender(leaf, dt, b)
	if err != nil {
		return nil, err
	}
	for got := int64(0); got < n; {
		if cs.cr == nil {
			if cs.group >= len(cs.f.ft.meta.RowGroups) {
				break
			}
			cr, err := cs.f.ft.openChunk(cs.ctx, cs.f.src.R, cs.group, leaf)
			if err != nil {
				return nil, err
			}
			cs.group++
			cs.cr = cr
		}
		m, err := cs.cr.read(n-got, add)
		if err != nil {
			return nil, err
		}
		if m < n-got {
			cs.close()
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

// records reads an openFile's columns in batches.
type records struct {
	ctx     context.Context
	f       *openFile
	streams []*columnStream
	cur     arrow.RecordBatch
	err     error
}

func (r *records) Retain()                        {}
func (r *records) Schema() *arrow.Schema          { return r.f.sc }
func (r *records) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *records) Record() arrow.RecordBatch      { return r.cur }
func (r *records) Err() error                     { return r.err }

func (r *records) Release() {
	r.drop()
	for _, s := range r.streams {
		s.close()
	}
}

func (r *records) drop() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *records) Next() bool {
	r.drop()
	if r.err != nil {
		return false
	}
	if err := r.ctx.Err(); err != nil {
		r.err = err
		return false
	}
	sc := r.f.sc
	if r.streams == nil {
		r.streams = make([]*columnStream, sc.NumFields())
		for i := range r.streams {
			r.streams[i] = &columnStream{ctx: r.ctx, f: r.f, col: i, dt: sc.Field(i).Type, mem: r.f.opts.Mem}
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
			r.err = fmt.Errorf("column %s: %w", sc.Field(i).Name, err)
			return false
		}
		cols[i] = arr
		if arr.Len() != cols[0].Len() {
			r.err = fmt.Errorf("column %s has %d values where column %s has %d", sc.Field(i).Name, arr.Len(), sc.Field(0).Name, cols[0].Len())
			return false
		}
	}
	if len(cols) == 0 || cols[0].Len() == 0 {
		return false
	}
	r.cur = array.NewRecordBatch(sc, cols, int64(cols[0].Len()))
	return true
}
