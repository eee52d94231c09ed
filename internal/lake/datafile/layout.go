package datafile

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// DefaultRowGroupRows is the most rows of a row group in the data files
// timelake writes when write.parquet.row-group-limit is not set.
const DefaultRowGroupRows = 122_880

// Table properties of iceberg-go's Parquet writer that timelake's writer
// honours as iceberg-go does and that iceberg-go does not export.
const (
	propDictEnabled       = "parquet.enable.dictionary"
	propDictColumnPrefix  = "write.parquet.dict-encoding-enabled.column."
	propBloomColumnPrefix = table.ParquetBloomFilterColumnEnabledKeyPrefix + "."
)

// Layout is how one table's data files are written: the file schema
// (column names sanitized as iceberg-go and Iceberg Java write them, field
// ids), the Parquet writer properties from the table's properties, and
// the row group rule.
type Layout struct {
	meta     table.Metadata
	schema   *iceberg.Schema // the file schema: sanitized names, the table's field ids
	arrowSc  *arrow.Schema   // schema as Arrow, with field ids
	spec     iceberg.PartitionSpec
	timeCol  int
	series   []int // series key columns
	rowGroup int64 // most rows per row group
	target   int64 // write.target-file-size-bytes
	// The writer properties of a file whose time column is written plain,
	// and of one whose time column has a dictionary (timeDictionaryPays).
	plainTime, dictTime *parquet.WriterProperties
	parts               []partitionField
	// The format of the data files of at most small.limit rows
	// (smallfile.go); nil: all are pqarrow's.
	small *smallFormat
}

// partitionField computes one partition field of the spec from a time.
type partitionField struct {
	id  int
	day bool // day transform: an iceberg.Date, else an int32
	fn  func(any) iceberg.Optional[int32]
}

// NewLayout returns the layout of the data files of the table version
// meta, whose rows are batches of the Arrow schema sc in order o, with
// partitions of the time transform chunk (hour, day or month:
// timelake.chunk's). It returns nil when the table is written by
// iceberg-go's writer instead: a format version other than 2, nested or
// other columns timelake's writer does not write, or a partition spec
// other than time transforms of the time column no finer than chunk.
func NewLayout(meta table.Metadata, sc *arrow.Schema, o Order, chunk iceberg.Transform) (*Layout, error) {
	if _, _, err := ParquetCompression(meta.Properties()); err != nil {
		return nil, err
	}
	if meta.Version() != 2 {
		return nil, nil
	}
	tsc := meta.CurrentSchema()
	tf, ok := tsc.FindFieldByName(o.TimeColumn)
	if !ok {
		return nil, nil
	}
	for _, f := range tsc.Fields() {
		if _, ok := f.Type.(iceberg.PrimitiveType); !ok {
			return nil, nil // nested columns: iceberg-go's writer
		}
		switch f.Type.(type) {
		case iceberg.VariantType, iceberg.GeometryType, iceberg.GeographyType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			return nil, nil
		}
	}
	spec := meta.PartitionSpec()
	for _, f := range spec.Fields() {
		if f.SourceID() != tf.ID || !coarserThanChunk(f.Transform, chunk) {
			return nil, nil
		}
	}
	fileSchema, err := iceberg.SanitizeColumnNames(tsc)
	if err != nil {
		return nil, err
	}
	arrowSc, err := table.SchemaToArrowSchema(fileSchema, nil, true, false)
	if err != nil {
		return nil, err
	}
	timeCol, series, err := keyColumns(sc, o)
	if err != nil {
		return nil, err
	}
	props := meta.Properties()
	l := &Layout{meta: meta, schema: fileSchema, arrowSc: arrowSc, spec: spec,
		timeCol: timeCol, series: series,
		rowGroup: positiveProperty(props, table.ParquetRowGroupLimitKey, DefaultRowGroupRows),
		target:   positiveProperty(props, table.WriteTargetFileSizeBytesKey, table.WriteTargetFileSizeBytesDefault)}
	timeName := arrowSc.Field(timeCol).Name
	l.plainTime = parquet.NewWriterProperties(parquetWriterProperties(props, arrowSc, l.rowGroup, timeName, false)...)
	l.dictTime = parquet.NewWriterProperties(parquetWriterProperties(props, arrowSc, l.rowGroup, timeName, true)...)
	if l.small, err = newSmallFormat(arrowSc, l.plainTime, l.rowGroup); err != nil {
		return nil, err
	}
	for i := range spec.NumFields() {
		f := spec.Field(i)
		fn, err := f.Transform.(iceberg.TimeTransform).Transformer(tf.Type)
		if err != nil {
			return nil, fmt.Errorf("partition field %s: %w", f.Name, err)
		}
		_, day := f.Transform.(iceberg.DayTransform)
		l.parts = append(l.parts, partitionField{id: f.FieldID, day: day, fn: fn})
	}
	return l, nil
}

// RowGroupRows is the most rows of a row group (write.parquet.row-group-limit).
func (l *Layout) RowGroupRows() int64 { return l.rowGroup }

// keyColumns returns the indexes in sc of o's time column and series key
// columns; errors name a missing column or a time column that is not a
// timestamp.
func keyColumns(sc *arrow.Schema, o Order) (int, []int, error) {
	ti := sc.FieldIndices(o.TimeColumn)
	if len(ti) != 1 {
		return 0, nil, fmt.Errorf("time column %q not in schema", o.TimeColumn)
	}
	if _, ok := sc.Field(ti[0]).Type.(*arrow.TimestampType); !ok {
		return 0, nil, fmt.Errorf("time column %q is %s, expected a timestamp", o.TimeColumn, sc.Field(ti[0]).Type)
	}
	var series []int
	for _, name := range o.SeriesKey {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			return 0, nil, fmt.Errorf("series key column %q not in schema", name)
		}
		series = append(series, idx[0])
	}
	return ti[0], series, nil
}

// coarserThanChunk reports whether t is a time transform whose partitions
// hold whole chunks of the time transform chunk (the partitions rows are
// sorted by), so that a batch of one chunk is in one partition.
func coarserThanChunk(t, chunk iceberg.Transform) bool {
	rank := 0
	switch chunk.(type) {
	case iceberg.DayTransform:
		rank = 1
	case iceberg.MonthTransform:
		rank = 2
	}
	switch t.(type) {
	case iceberg.HourTransform:
		return rank <= 0
	case iceberg.DayTransform:
		return rank <= 1
	case iceberg.MonthTransform:
		return rank <= 2
	case iceberg.YearTransform:
		return true
	}
	return false
}

// positiveProperty reads an integer table property; a value that is
// missing, does not parse or is not positive gives def (as iceberg-go's
// writer does).
func positiveProperty(props iceberg.Properties, key string, def int64) int64 {
	if n, err := strconv.ParseInt(strings.TrimSpace(props[key]), 10, 64); err == nil && n > 0 {
		return n
	}
	return def
}

// ParquetCompression returns the codec and level of a table's data files
// (write.parquet.compression-codec, write.parquet.compression-level), or
// an error naming the property, what it holds and what it takes. Codec
// names are read in any case, as Iceberg's Java writer reads them; lz4 is
// Parquet's LZ4_RAW (the deprecated LZ4 codec's framing differs between
// writers, and readers, DuckDB among them, read only some). A level must
// be a whole number within the range arrow-go's codec takes (zstd up to 22,
// gzip -3 to 9, brotli -1 to 11); codecs without levels ignore it. A value refused here
// used to be taken silently (uncompressed pages for an unknown codec, the
// default for a level that is no number), or to make the writer panic on
// every file (a gzip level of 10), quarantining good files.
func ParquetCompression(props iceberg.Properties) (compress.Compression, int, error) {
	c := props.Get(table.ParquetCompressionKey, table.ParquetCompressionDefault)
	pc, ok := parquetCodecs[strings.ToLower(c)]
	if !ok {
		return 0, 0, fmt.Errorf("table property %s=%q: expected zstd, snappy, gzip, brotli, lz4 or uncompressed (timelake tables alter NAME --set %s=zstd)",
			table.ParquetCompressionKey, c, table.ParquetCompressionKey)
	}
	v, set := props[table.ParquetCompressionLevelKey]
	if !set || v == "" {
		return pc.codec, table.ParquetCompressionLevelDefault, nil
	}
	level, err := strconv.Atoi(v)
	if err != nil || (pc.levels != "" && (level < pc.lo || level > pc.hi)) {
		what := pc.levels
		if what == "" {
			what = "a whole number"
		}
		return 0, 0, fmt.Errorf("table property %s=%q: expected %s (timelake tables alter NAME --unset %s for the codec's default)",
			table.ParquetCompressionLevelKey, v, what, table.ParquetCompressionLevelKey)
	}
	return pc.codec, level, nil
}

// parquetCodec is a value of write.parquet.compression-codec: its codec,
// its name as every writer reads it, and the levels arrow-go's codec takes
// (levels "": any, ignored).
type parquetCodec struct {
	codec  compress.Compression
	name   string
	lo, hi int
	levels string
}

// parquetCodecs are the codecs by lower-case name.
var parquetCodecs = func() map[string]parquetCodec {
	lz4 := parquetCodec{codec: compress.Codecs.Lz4Raw, name: "lz4"}
	return map[string]parquetCodec{
		"zstd": {codec: compress.Codecs.Zstd, name: "zstd", lo: math.MinInt, hi: 22,
			levels: "a zstd level of at most 22 (1 to 22; 3 is zstd's default)"},
		"snappy": {codec: compress.Codecs.Snappy, name: "snappy"},
		"gzip": {codec: compress.Codecs.Gzip, name: "gzip", lo: -3, hi: 9,
			levels: "a gzip level from 1 to 9 (0: no compression, -1: its default, -2 and -3: Huffman only and constant)"},
		"brotli": {codec: compress.Codecs.Brotli, name: "brotli", lo: -1, hi: 11,
			levels: "a brotli level from 0 to 11 (-1: its default)"},
		"lz4": lz4, "lz4raw": lz4, "lz4_raw": lz4,
		"uncompressed": {codec: compress.Codecs.Uncompressed, name: "uncompressed"},
	}
}()

// CanonicalCodec is the name of a write.parquet.compression-codec value
// that ParquetCompression takes as every writer of a table reads it:
// lower case (iceberg-go's writer, which writes the tables Layout does
// not cover, reads only that), lz4 for LZ4_RAW; the value itself when it
// names no codec.
func CanonicalCodec(value string) string {
	if pc, ok := parquetCodecs[strings.ToLower(value)]; ok {
		return pc.name
	}
	return value
}

// parquetWriterProperties maps the table's write.parquet.* properties to
// arrow-go's writer as iceberg-go's writer does (iceberg-go's mapping is
// internal to it), with rowGroup rows at most per row group, statistics and
// a page index for every column, and dictionaries kept only where they
// are smaller than the plain values (the cost rule of Parquet's Java
// writer, which iceberg-go also sets). The time column timeCol has a
// dictionary only with timeDict (see timeDictionaryPays).
// write.parquet.dict-encoding-enabled.column.<name> overrides both.
func parquetWriterProperties(props iceberg.Properties, sc *arrow.Schema, rowGroup int64, timeCol string, timeDict bool) []parquet.WriterProperty {
	pageVersion := parquet.DataPageV2
	if props.Get(table.ParquetPageVersionKey, table.ParquetPageVersionDefault) == "1" {
		pageVersion = parquet.DataPageV1
	}
	codec, level, _ := ParquetCompression(props) // checked by NewLayout
	// Java's Boolean.parseBoolean, as iceberg-go and Iceberg Java read them.
	dict, set := props[propDictEnabled]
	dictDefault := !set || strings.EqualFold(dict, "true")
	out := []parquet.WriterProperty{
		parquet.WithMaxRowGroupLength(rowGroup),
		parquet.WithDataPageSize(positiveProperty(props, table.ParquetPageSizeBytesKey, table.ParquetPageSizeBytesDefault)),
		parquet.WithDataPageVersion(pageVersion),
		parquet.WithBatchSize(positiveProperty(props, table.ParquetPageRowLimitKey, table.ParquetPageRowLimitDefault)),
		parquet.WithDictionaryPageSizeLimit(positiveProperty(props, table.ParquetDictSizeBytesKey, table.ParquetDictSizeBytesDefault)),
		parquet.WithCompression(codec),
		parquet.WithCompressionLevel(level),
		parquet.WithStats(true),
		parquet.WithPageIndexEnabled(true),
		parquet.WithMaxBloomFilterBytes(positiveProperty(props, table.ParquetBloomFilterMaxBytesKey, table.ParquetBloomFilterMaxBytesDefault)),
		parquet.WithDictionaryDefault(dictDefault),
		parquet.WithDictionaryFor(timeCol, dictDefault && timeDict),
	}
	for key, val := range props {
		if col, ok := strings.CutPrefix(key, propBloomColumnPrefix); ok && col != "" {
			out = append(out, parquet.WithBloomFilterEnabledFor(col, strings.EqualFold(val, "true")))
		}
		if col, ok := strings.CutPrefix(key, propDictColumnPrefix); ok && col != "" {
			out = append(out, parquet.WithDictionaryFor(col, strings.EqualFold(val, "true")))
		}
	}
	for _, f := range sc.Fields() {
		out = append(out, parquet.WithDictionaryCostFallbackFor(f.Name, true))
	}
	return out
}

// partition returns the partition tuple (in spec order) of a row whose
// time is ts (table microseconds).
func (l *Layout) partition(ts arrow.Timestamp) PartitionRecord {
	rec := make(PartitionRecord, len(l.parts))
	for i, f := range l.parts {
		v := f.fn(iceberg.Timestamp(ts)).Val
		if f.day {
			rec[i] = iceberg.Date(v)
		} else {
			rec[i] = v
		}
	}
	return rec
}

// folder is the data folder of a partition, e.g. time_day=2026-01-05 ("":
// unpartitioned).
func (l *Layout) folder(rec PartitionRecord) string {
	if len(rec) == 0 {
		return ""
	}
	return l.spec.PartitionToPath(rec, l.schema)
}

// PartitionRecord is a partition tuple in spec field order (iceberg's
// structLike), as iceberg.PartitionSpec.PartitionToPath reads it.
type PartitionRecord []any

func (r PartitionRecord) Size() int        { return len(r) }
func (r PartitionRecord) Get(i int) any    { return r[i] }
func (r PartitionRecord) Set(i int, v any) { r[i] = v }
