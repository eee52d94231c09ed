package datafile

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Small data files: one row group, one plain data page per column.
//
// A fleet's appends are small: a gateway's file of a minute holds a few
// hundred rows, and a backfill spreads a file over many day partitions (a
// 10,000-row file over 90 days writes 90 data files of about 110 rows).
// pqarrow's writer costs about half a millisecond of CPU for each such
// file whatever its rows (the Parquet schema and the ARROW:schema made
// again, a column writer with a dictionary encoder, page buffers and a
// page index builder per column, a data page split by the dictionary's
// cost rule, a metadata snapshot), which was half of the CPU of such an
// ingest. A data file of at most smallFileRows rows is therefore written
// here: the Parquet schema and footer metadata made once per layout
// (smallFormat, NewLayout), each column one PLAIN data page (v2) of its non-null
// values after its definition levels (one RLE run, or the validity bitmap
// as one bit-packed run), compressed with the table's codec. Page headers,
// column chunk metadata, statistics and the footer are arrow-go's
// (file.NewPageWriter, metadata builders, the typed statistics pqarrow's
// column writers use), so a reader, and the manifest entry's metrics,
// see what pqarrow would write for the same rows (TestSmallFileAgrees).
// What differs: no dictionary page (zstd finds the repeats of a few
// hundred rows as well) and no page index (one page per column: the
// column chunk's statistics are the page's).
//
// String columns given as dictionary arrays (WithDictionaries) are
// written as their values, the file being the one of plain strings.
// Larger files, and tables this writer does not cover (data page v1,
// bloom filters, encryption, types other than the flat primitives
// below), are written by pqarrow.

// smallFileRows is the most rows of a data file written as a small file.
const smallFileRows = 8192

// smallFormat is what writing small data files of one file schema needs,
// made once: nil when the schema or the writer properties are not ones a
// small file covers.
type smallFormat struct {
	schema *schema.Schema
	props  *parquet.WriterProperties
	kv     metadata.KeyValueMetadata
	limit  int64 // most rows: smallFileRows, the page and row group row limits
}

// newSmallFormat returns the small file format of Arrow file schema sc
// written with props, or nil when small files do not cover them.
func newSmallFormat(sc *arrow.Schema, props *parquet.WriterProperties, rowGroup int64) (*smallFormat, error) {
	if props.DataPageVersion() != parquet.DataPageV2 || props.FileEncryptionProperties() != nil {
		return nil, nil
	}
	for _, f := range sc.Fields() {
		switch f.Type.ID() {
		case arrow.BOOL, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64, arrow.DATE32,
			arrow.TIME64, arrow.TIMESTAMP, arrow.STRING, arrow.BINARY:
		default:
			return nil, nil
		}
	}
	psc, err := pqarrow.ToParquet(sc, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, err
	}
	if psc.NumColumns() != sc.NumFields() {
		return nil, nil
	}
	for i := range psc.NumColumns() {
		path := psc.Column(i).Path()
		if props.BloomFilterEnabledFor(path) || psc.Column(i).MaxRepetitionLevel() != 0 {
			return nil, nil
		}
	}
	// The key-value metadata pqarrow's WithStoreSchema writes: the schema's
	// own, then ARROW:schema (flat columns need no renaming).
	kv := make(metadata.KeyValueMetadata, 0, sc.Metadata().Len()+1)
	for i, k := range sc.Metadata().Keys() {
		kv.Append(k, sc.Metadata().Values()[i])
	}
	kv.Append("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(sc, memory.DefaultAllocator)))
	// A file of at most half a row group's rows is one row group under
	// the writer's series rule too (a row group ends early only once the
	// rows so far and the series before them exceed a row group).
	limit := min(int64(smallFileRows), rowGroup/2, props.WriteBatchSize(), math.MaxInt32)
	if limit < 1 {
		return nil, nil
	}
	return &smallFormat{schema: psc, props: props, kv: kv, limit: limit}, nil
}

// fits reports whether a small file of plain bytes (the sum over its
// batches of plainBytes) keeps each page within the data page size.
func (f *smallFormat) fits(bytes int64) bool {
	return bytes <= f.props.DataPageSize()
}

// plainBytes is an upper bound of the plain bytes of any one column of
// rec: the bytes of its largest column.
func plainBytes(rec arrow.RecordBatch) int64 {
	var most int64
	for _, c := range rec.Columns() {
		n := 8 * int64(c.Len())
		switch a := c.(type) {
		case *array.String:
			offs := a.ValueOffsets()
			n = int64(offs[len(offs)-1]-offs[0]) + 4*int64(a.Len())
		case *array.Binary:
			offs := a.ValueOffsets()
			n = int64(offs[len(offs)-1]-offs[0]) + 4*int64(a.Len())
		case *array.Dictionary:
			bin, index := binaryValues(a)
			n = 0
			for i := range a.Len() {
				if a.IsValid(i) {
					n += 4 + int64(bin.ValueLen(index(i)))
				}
			}
			bin.Release()
		}
		most = max(most, n)
	}
	return most
}

// writeSmallFile writes recs (batches of the format's schema, together at
// most its row limit) to out as one Parquet file with enc (reused from
// file to file of the format; nil: a new one) and returns its footer
// metadata and size.
func writeSmallFile(out io.Writer, f *smallFormat, recs []arrow.RecordBatch, enc *columnEncoder) (*metadata.FileMetaData, int64, error) {
	sink := &countingWriter{w: out}
	if _, err := sink.Write([]byte("PAR1")); err != nil {
		return nil, sink.n, err
	}
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	fmb := metadata.NewFileMetadataBuilder(f.schema, f.props, f.kv)
	rgb := fmb.AppendRowGroup()
	rgb.SetNumRows(int(rows))
	if enc == nil {
		enc = &columnEncoder{}
	}
	for i := range f.schema.NumColumns() {
		cols := make([]arrow.Array, len(recs))
		for j, r := range recs {
			cols[j] = r.Column(i)
		}
		col, err := concatColumn(cols)
		if err != nil {
			return nil, sink.n, err
		}
		err = enc.writeColumn(sink, f, rgb, i, col)
		col.Release()
		if err != nil {
			return nil, sink.n, fmt.Errorf("column %s: %w", f.schema.Column(i).Path(), err)
		}
	}
	if err := rgb.Finish(0, 0); err != nil {
		return nil, sink.n, err
	}
	md, err := fmb.Finish()
	if err != nil {
		return nil, sink.n, err
	}
	n, err := md.WriteTo(sink, nil)
	if err != nil {
		return nil, sink.n, err
	}
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], uint32(n))
	copy(tail[4:], "PAR1")
	if _, err := sink.Write(tail[:]); err != nil {
		return nil, sink.n, err
	}
	return md, sink.n, nil
}

// concatColumn is one array of cols (retained when it is one).
func concatColumn(cols []arrow.Array) (arrow.Array, error) {
	if len(cols) == 1 {
		cols[0].Retain()
		return cols[0], nil
	}
	return array.Concatenate(cols, memory.DefaultAllocator)
}

// columnEncoder holds what writing a small file's columns needs, reused
// from column to column and from file to file of one format (one
// writer's): the pages' buffers, and each column's page writer and
// statistics.
type columnEncoder struct {
	levels, values, compressed bytes.Buffer
	page                       []byte
	byteValues                 []parquet.ByteArray
	pagers                     []file.PageWriter
	stats                      []metadata.TypedStatistics
}

// column returns the page writer of column i, set to write to sink under
// ccb, and its statistics, reset.
func (e *columnEncoder) column(sink *countingWriter, f *smallFormat, ccb *metadata.ColumnChunkMetaDataBuilder, i int) (file.PageWriter, metadata.TypedStatistics, error) {
	descr := f.schema.Column(i)
	codec, level := f.props.CompressionFor(descr.Path()), f.props.CompressionLevelFor(descr.Path())
	for len(e.pagers) <= i {
		e.pagers, e.stats = append(e.pagers, nil), append(e.stats, nil)
	}
	if e.pagers[i] == nil {
		pager, err := file.NewPageWriter(sink, codec, level, ccb, 0, int16(i), memory.DefaultAllocator, false, nil, nil)
		if err != nil {
			return nil, nil, err
		}
		e.pagers[i], e.stats[i] = pager, metadata.NewStatistics(descr, memory.DefaultAllocator)
	} else if err := e.pagers[i].Reset(sink, codec, level, ccb, 0, int16(i), nil, nil); err != nil {
		return nil, nil, err
	}
	e.stats[i].Reset()
	return e.pagers[i], e.stats[i], nil
}

// writeColumn writes col as column i of the row group: one data page v2
// of PLAIN values, its statistics on the page and the column chunk.
func (e *columnEncoder) writeColumn(sink *countingWriter, f *smallFormat, rgb *metadata.RowGroupMetaDataBuilder, i int, col arrow.Array) error {
	descr := f.schema.Column(i)
	path := descr.Path()
	ccb := rgb.NextColumnChunk()
	pager, stats, err := e.column(sink, f, ccb, i)
	if err != nil {
		return err
	}
	n, nulls := col.Len(), col.NullN()
	if nulls > 0 && descr.MaxDefinitionLevel() == 0 {
		return fmt.Errorf("%d nulls in a required column", nulls)
	}
	e.levels.Reset()
	if descr.MaxDefinitionLevel() > 0 {
		definitionLevels(&e.levels, col)
	}
	e.values.Reset()
	if err := e.plainValues(stats, col); err != nil {
		return err
	}
	enc, err := stats.Encode()
	if err != nil {
		return err
	}
	enc.ApplyStatSizeLimits(int(f.props.MaxStatsSizeFor(path)))
	enc.Signed = descr.SortOrder() == schema.SortSIGNED
	// A page of only nulls has no values: they are written as they are
	// (is_compressed false) rather than as a compressed stream of no
	// bytes, which some readers cannot decode (arrow-go's brotli codec:
	// decode/pagecodec).
	data, compressed := e.values.Bytes(), pager.HasCompressor() && e.values.Len() > 0
	if compressed {
		e.compressed.Reset()
		data = pager.Compress(&e.compressed, data)
	}
	// The page writer writes the page at once: its buffer is reused.
	e.page = append(append(e.page[:0], e.levels.Bytes()...), data...)
	dp := file.NewDataPageV2WithConfig(memory.NewBufferBytes(e.page), int32(nulls), int32(n), int32(e.levels.Len()), 0,
		compressed, file.DataPageConfig{
			Num:              int32(n),
			Encoding:         parquet.Encodings.Plain,
			UncompressedSize: int32(e.levels.Len() + e.values.Len()),
			Stats:            enc,
		})
	if _, err := pager.WriteDataPage(dp); err != nil {
		return err
	}
	if n > 0 && enc.IsSet() {
		ccb.SetStats(enc)
	}
	return finishChunk(pager, ccb)
}

// pageTotals is what arrow-go's page writer tells of the pages it wrote.
type pageTotals interface {
	NumValues() int64
	DictionaryPageOffset() int64
	DataPageoffset() int64
	TotalCompressedSize() int64
	TotalUncompressedSize() int64
}

// closeChunks makes finishChunk close the page writer instead (tests).
var closeChunks = false

// finishChunk finishes the column chunk metadata of the one PLAIN data
// page pager wrote, as the page writer's Close does (Close also gives the
// chunk's metadata to a Thrift writer over a buffer of 4 KiB that it
// never flushes: a quarter of the bytes a small file allocated, and
// nothing written; TestFinishChunkIsClose).
func finishChunk(pager file.PageWriter, ccb *metadata.ColumnChunkMetaDataBuilder) error {
	t, ok := pager.(pageTotals)
	if !ok || closeChunks {
		return pager.Close(false, false)
	}
	return ccb.Finish(metadata.ChunkMetaInfo{
		NumValues:        t.NumValues(),
		DictPageOffset:   t.DictionaryPageOffset(),
		IndexPageOffset:  -1,
		DataPageOffset:   t.DataPageoffset(),
		CompressedSize:   t.TotalCompressedSize(),
		UncompressedSize: t.TotalUncompressedSize(),
	}, false, false, metadata.EncodingStats{
		DictEncodingStats: map[parquet.Encoding]int32{},
		DataEncodingStats: map[parquet.Encoding]int32{parquet.Encodings.Plain: 1},
	})
}

// definitionLevels appends the definition levels of col (bit width 1, the
// RLE/bit-packed hybrid without a length, as data page v2 has them): one
// RLE run of 1 when no value is null, else the validity bitmap as one
// bit-packed run (its bit order is the hybrid's).
func definitionLevels(b *bytes.Buffer, col arrow.Array) {
	n := col.Len()
	var hdr [binary.MaxVarintLen64]byte
	if col.NullN() == 0 {
		b.Write(hdr[:binary.PutUvarint(hdr[:], uint64(n)<<1)])
		b.WriteByte(1)
		return
	}
	groups := (n + 7) / 8
	b.Write(hdr[:binary.PutUvarint(hdr[:], uint64(groups)<<1|1)])
	bits := make([]byte, groups)
	bitutil.CopyBitmap(col.NullBitmapBytes(), col.Data().Offset(), n, bits, 0)
	b.Write(bits)
}

// plainValues appends the PLAIN encoding of col's non-null values to
// e.values and updates stats (the typed statistics of its column) as
// pqarrow's column writers do.
func (e *columnEncoder) plainValues(stats metadata.TypedStatistics, col arrow.Array) error {
	b := &e.values
	nulls := int64(col.NullN())
	valid, offset := col.NullBitmapBytes(), int64(col.Data().Offset())
	switch a := col.(type) {
	case *array.Boolean:
		vals := make([]bool, 0, a.Len()-int(nulls))
		for i := range a.Len() {
			if a.IsValid(i) {
				vals = append(vals, a.Value(i))
			}
		}
		packed := make([]byte, (len(vals)+7)/8)
		for i, v := range vals {
			if v {
				bitutil.SetBit(packed, i)
			}
		}
		b.Write(packed)
		s, ok := stats.(*metadata.BooleanStatistics)
		if !ok {
			return fmt.Errorf("boolean array for %T", stats)
		}
		s.Update(vals, nulls)
	case *array.String, *array.Binary, *array.Dictionary:
		s, ok := stats.(*metadata.ByteArrayStatistics)
		if !ok {
			return fmt.Errorf("%s array for %T", col.DataType(), stats)
		}
		bin, index := binaryValues(col)
		defer bin.Release()
		// Every slot, nulls empty, as the column writers pass them.
		vals := slices.Grow(e.byteValues[:0], col.Len())[:col.Len()]
		clear(vals)
		defer func() { e.byteValues = vals[:0] }()
		var l [4]byte
		for i := range col.Len() {
			if col.IsNull(i) {
				continue
			}
			v := bin.Value(index(i))
			vals[i] = v
			binary.LittleEndian.PutUint32(l[:], uint32(len(v)))
			b.Write(l[:])
			b.Write(v)
		}
		if nulls == 0 {
			s.Update(vals, 0)
		} else {
			s.UpdateSpaced(vals, valid, offset, nulls)
		}
	default:
		width := 0
		if fw, ok := col.DataType().(arrow.FixedWidthDataType); ok {
			width = fw.BitWidth() / 8
		}
		if width != 4 && width != 8 {
			return fmt.Errorf("cannot write %s", col.DataType())
		}
		raw := col.Data().Buffers()[1].Bytes()[int(offset)*width : (int(offset)+col.Len())*width]
		if nulls == 0 {
			b.Write(raw)
		} else {
			for i := range col.Len() {
				if col.IsValid(i) {
					b.Write(raw[i*width : (i+1)*width])
				}
			}
		}
		switch s := stats.(type) {
		case *metadata.Int32Statistics:
			updateFixed(s, arrow.Int32Traits.CastFromBytes(raw), valid, offset, nulls)
		case *metadata.Int64Statistics:
			updateFixed(s, arrow.Int64Traits.CastFromBytes(raw), valid, offset, nulls)
		case *metadata.Float32Statistics:
			updateFixed(s, arrow.Float32Traits.CastFromBytes(raw), valid, offset, nulls)
		case *metadata.Float64Statistics:
			updateFixed(s, arrow.Float64Traits.CastFromBytes(raw), valid, offset, nulls)
		default:
			return fmt.Errorf("%s array for %T", col.DataType(), stats)
		}
	}
	return nil
}

// binaryValues returns the values of a string or binary array, or of a
// dictionary array of either, as a binary array over the same buffers (no
// copy of a value) and the index there of the value of row i; the caller
// releases the array.
func binaryValues(a arrow.Array) (*array.Binary, func(i int) int) {
	row := func(i int) int { return i }
	if d, ok := a.(*array.Dictionary); ok {
		bin, _ := binaryValues(d.Dictionary())
		return bin, d.GetValueIndex
	}
	if b, ok := a.(*array.Binary); ok {
		b.Retain()
		return b, row
	}
	return array.NewBinaryData(a.Data()), row
}

// fixedStatistics are the typed statistics of a fixed-width type.
type fixedStatistics[T int32 | int64 | float32 | float64] interface {
	Update(values []T, numNull int64)
	UpdateSpaced(values []T, validBits []byte, validBitsOffset, numNull int64)
}

// updateFixed updates s with vals (the array's values, nulls included as
// valid says), as the column writers of pqarrow do.
func updateFixed[T int32 | int64 | float32 | float64](s fixedStatistics[T], vals []T, valid []byte, offset, nulls int64) {
	if nulls == 0 {
		s.Update(vals, 0)
		return
	}
	s.UpdateSpaced(vals, valid, offset, nulls)
}
