package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// The data files of appends and compaction are written here, with
// arrow-go's Parquet writer and iceberg-go's DataFileFromMetadata (the
// manifest entry's statistics), instead of iceberg-go's WriteRecords,
// whose writer decides row groups by a row count and bytes only and has
// no page index: a reader prunes row groups by their statistics, so a
// row group holds whole series (as many as fit in
// write.parquet.row-group-limit rows, 122,880 by default: DuckDB's own
// row group size), a series longer than that fills row groups of its
// own, and every column chunk has statistics and a page index
// (docs/performance.md, "How data files are laid out"). Tables whose
// partition spec is not a time transform of the time column, with nested
// columns, or of a format version other than 2 are written by iceberg-go's
// writer.

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

// dataFileLayout is how one table's data files are written: the file
// schema (column names sanitized as iceberg-go and Iceberg Java write
// them, field ids), the Parquet writer properties from the table's
// properties, and the row group rule.
type dataFileLayout struct {
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
}

// partitionField computes one partition field of the spec from a time.
type partitionField struct {
	id  int
	day bool // day transform: an iceberg.Date, else an int32
	fn  func(any) iceberg.Optional[int32]
}

// newDataFileLayout returns the layout of v's data files, or nil when the
// table is written by iceberg-go's writer (its partition spec or format
// version is not one timelake lays out).
func newDataFileLayout(v tableView) (*dataFileLayout, error) {
	meta := v.meta.write
	if meta.Version() != 2 {
		return nil, nil
	}
	sc := meta.CurrentSchema()
	tf, ok := sc.FindFieldByName(v.contract.TimeColumn)
	if !ok {
		return nil, nil
	}
	for _, f := range sc.Fields() {
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
		if f.SourceID() != tf.ID || !coarserThanChunk(f.Transform, v.contract.Chunk) {
			return nil, nil
		}
	}
	fileSchema, err := iceberg.SanitizeColumnNames(sc)
	if err != nil {
		return nil, err
	}
	arrowSc, err := table.SchemaToArrowSchema(fileSchema, nil, true, false)
	if err != nil {
		return nil, err
	}
	k, err := newSortKey(v.arrowSc, v.contract)
	if err != nil {
		return nil, err
	}
	props := meta.Properties()
	l := &dataFileLayout{meta: meta, schema: fileSchema, arrowSc: arrowSc, spec: spec,
		timeCol: k.timeCol, series: k.seriesCol,
		rowGroup: positiveProperty(props, table.ParquetRowGroupLimitKey, DefaultRowGroupRows),
		target:   positiveProperty(props, table.WriteTargetFileSizeBytesKey, table.WriteTargetFileSizeBytesDefault)}
	timeName := arrowSc.Field(k.timeCol).Name
	l.plainTime = parquet.NewWriterProperties(parquetWriterProperties(props, arrowSc, l.rowGroup, timeName, false)...)
	l.dictTime = parquet.NewWriterProperties(parquetWriterProperties(props, arrowSc, l.rowGroup, timeName, true)...)
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

// coarserThanChunk reports whether t is a time transform whose partitions
// hold whole chunks of granularity g (the buckets rows are sorted by), so
// that a batch of one bucket is in one partition.
func coarserThanChunk(t iceberg.Transform, g Granularity) bool {
	rank := map[Granularity]int{Hour: 0, Day: 1, Month: 2}[g]
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
	codec := compress.Codecs.Uncompressed
	switch c := props.Get(table.ParquetCompressionKey, table.ParquetCompressionDefault); c {
	case "zstd":
		codec = compress.Codecs.Zstd
	case "snappy":
		codec = compress.Codecs.Snappy
	case "gzip":
		codec = compress.Codecs.Gzip
	case "brotli":
		codec = compress.Codecs.Brotli
	case "lz4", "lz4raw":
		// LZ4_RAW: the deprecated LZ4 codec's framing differs between
		// writers, and readers (DuckDB among them) read only some.
		codec = compress.Codecs.Lz4Raw
	case "uncompressed":
	default:
		slog.Warn("unknown Parquet compression codec: writing uncompressed pages", "property", table.ParquetCompressionKey, "codec", c)
	}
	level, err := strconv.Atoi(props[table.ParquetCompressionLevelKey])
	if err != nil {
		level = table.ParquetCompressionLevelDefault
	}
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
func (l *dataFileLayout) partition(ts arrow.Timestamp) partitionRecord {
	rec := make(partitionRecord, len(l.parts))
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
func (l *dataFileLayout) folder(rec partitionRecord) string {
	if len(rec) == 0 {
		return ""
	}
	return l.spec.PartitionToPath(rec, l.schema)
}

// writeRecords writes recs (batches of v's Arrow schema, sorted by
// partition, series key and time, none spanning two partitions; each is
// released) as data files, one or more per partition, and yields each
// file once it is closed. The writer runs on its own goroutine, up to
// writeBufferBatches batches behind the caller's iteration of recs. On an
// error the files already yielded are the caller's to remove (the file
// being written is removed here).
func (t *Table) writeRecords(ctx context.Context, v tableView, recs iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[iceberg.DataFile, error] {
	l, err := newDataFileLayout(v)
	if err != nil {
		return func(yield func(iceberg.DataFile, error) bool) { yield(nil, err) }
	}
	if l == nil {
		return table.WriteRecords(ctx, v.iceberg, v.arrowSc, recs,
			table.WithClusteredWrite(), table.WithRecordBatchBufferSize(writeBufferBatches))
	}
	return func(yield func(iceberg.DataFile, error) bool) {
		fs, err := t.lake.fsF(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		wfs, ok := fs.(icebergio.WriteFileIO)
		if !ok {
			yield(nil, errors.New("the warehouse's file system cannot write files"))
			return
		}
		type item struct {
			rec arrow.RecordBatch
			err error
		}
		ctx, cancel := context.WithCancel(ctx)
		in := make(chan item, writeBufferBatches)
		go func() {
			defer close(in)
			defer func() {
				if v := recover(); v != nil {
					select {
					case in <- item{nil, writePanic(v)}:
					case <-ctx.Done():
					}
				}
			}()
			for rec, err := range recs {
				select {
				case in <- item{rec, err}:
				case <-ctx.Done():
					if rec != nil {
						rec.Release()
					}
					return
				}
				if err != nil {
					return
				}
			}
		}()
		w := &dataFileWriter{ctx: ctx, layout: l, fs: wfs, writeID: uuid.New(), table: t}
		defer func() {
			cancel()
			for it := range in {
				if it.rec != nil {
					it.rec.Release()
				}
			}
			w.abort()
		}()
		for it := range in {
			if it.err != nil {
				yield(nil, it.err)
				return
			}
			done, err := w.write(it.rec)
			it.rec.Release()
			if done != nil && !yield(done, nil) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
		}
		if err := ctx.Err(); err != nil { // the input stopped early
			yield(nil, err)
			return
		}
		if done, err := w.close(); err != nil {
			yield(nil, err)
		} else if done != nil {
			yield(done, nil)
		}
	}
}

// dataFileWriter writes one data file at a time of a layout.
type dataFileWriter struct {
	ctx     context.Context
	layout  *dataFileLayout
	fs      icebergio.WriteFileIO
	table   *Table
	writeID uuid.UUID
	files   int

	locations map[string]table.LocationProvider // by partition folder

	// The open file: its path and partition, its writers, and the
	// series the row group rule follows.
	path      string
	partition partitionRecord
	out       io.WriteCloser
	counted   *countingWriter
	pw        *pqarrow.FileWriter
	last      arrow.RecordBatch // the last row written
	seriesLen int64             // rows of the series being written
	prevLen   int64             // rows of the series before it
}

// write writes rec to the open file, or to a new one when rec is of
// another partition or the open file reached the target size; it returns
// the file it closed, if any.
func (w *dataFileWriter) write(rec arrow.RecordBatch) (iceberg.DataFile, error) {
	n := int(rec.NumRows())
	if n == 0 {
		return nil, nil
	}
	l := w.layout
	times, ok := rec.Column(l.timeCol).(*array.Timestamp)
	if !ok {
		return nil, fmt.Errorf("time column is %s, expected a timestamp", rec.Column(l.timeCol).DataType())
	}
	part := l.partition(times.Value(0))
	if last := l.partition(times.Value(n - 1)); !slices.Equal(last, part) {
		return nil, fmt.Errorf("internal: a batch spans partitions %s and %s", l.folder(part), l.folder(last))
	}
	var done iceberg.DataFile
	var err error
	if w.pw != nil && (!slices.Equal(part, w.partition) || w.counted.n >= l.target) {
		if done, err = w.close(); err != nil {
			return nil, err
		}
	}
	if w.pw == nil {
		if err := w.open(part, times); err != nil {
			return done, err
		}
	}
	rec = array.NewRecordBatch(l.arrowSc, rec.Columns(), rec.NumRows())
	defer rec.Release()
	// Row groups end at a series boundary once the series before would
	// no longer fit (series of one table tend to be alike in length);
	// the writer ends them at rowGroup rows within a longer series. Rows
	// between two such ends are written at once.
	cur, err := w.pw.RowGroupNumRows()
	if err != nil {
		return done, err
	}
	rows, from := int64(cur), 0
	for start := 0; start < n; {
		end := w.seriesEnd(rec, start)
		if start > 0 || w.last != nil && !w.sameSeries(w.last, 0, rec, 0) {
			if w.seriesLen > 0 {
				w.prevLen, w.seriesLen = w.seriesLen, 0
			}
			if rows > 0 && rows+w.prevLen > l.rowGroup {
				if err := w.writeRows(rec, from, start); err != nil {
					return done, err
				}
				if err := w.pw.NewBufferedRowGroupChecked(); err != nil {
					return done, err
				}
				rows, from = 0, start
			}
		}
		rows += int64(end - start)
		if rows > l.rowGroup { // the writer started row groups of the rest
			rows = (rows-1)%l.rowGroup + 1
		}
		w.seriesLen += int64(end - start)
		start = end
	}
	if err := w.writeRows(rec, from, n); err != nil {
		return done, err
	}
	if len(l.series) > 0 { // a copy: the batch's buffers are not kept
		tail := rec.NewSlice(int64(n-1), int64(n))
		last, err := sizedRecord(tail)
		tail.Release()
		if err != nil {
			return done, err
		}
		if w.last != nil {
			w.last.Release()
		}
		w.last = last
	}
	return done, nil
}

// writeRows writes rows [from, to) of rec to the open file.
func (w *dataFileWriter) writeRows(rec arrow.RecordBatch, from, to int) error {
	if from == to {
		return nil
	}
	part := rec.NewSlice(int64(from), int64(to))
	defer part.Release()
	return w.pw.WriteBuffered(part)
}

// seriesEnd is the end of the run of rows of rec from start that are of
// the series of row start (rows are sorted by series key).
func (w *dataFileWriter) seriesEnd(rec arrow.RecordBatch, start int) int {
	n := int(rec.NumRows())
	if len(w.layout.series) == 0 {
		return n
	}
	return start + sort.Search(n-start, func(i int) bool { return !w.sameSeries(rec, start, rec, start+i) })
}

// sameSeries reports whether row i of a and row j of b have the same
// series key.
func (w *dataFileWriter) sameSeries(a arrow.RecordBatch, i int, b arrow.RecordBatch, j int) bool {
	for _, c := range w.layout.series {
		if compareValues(a.Column(c), i, b.Column(c), j) != 0 {
			return false
		}
	}
	return true
}

// timeRepeatsForDictionary is how many times, on average, each time of a
// file's first batch must repeat for its time column to have a dictionary.
const timeRepeatsForDictionary = 4

// timeDictionaryPays reports whether the time column of a file whose first
// batch has times should have a dictionary: when its first times (as many
// as a row group of rowGroup rows holds, at most 16,384) repeat, at least
// timeRepeatsForDictionary times each on average. Series of a fleet
// share a clock, so a file of short series (appends, today's size tiers:
// every series of the fleet in one row group) repeats each time once per
// series, and a reader decodes its small dictionary's indices instead of
// the plain values (a quarter-hour tier file: 39 KB against 256 KB before
// zstd; DuckDB reads one series over an hour of it in 1.34 ms against
// 1.59 ms). A file
// of long series (a cold day: 4 series to a row group) starts with
// thousands of rows of one series, and its plain times compress better
// than dictionary indices (zstd finds the times the series repeat: a fleet
// day's time column is 2.1 MB plain, 3.8 MB as indices).
func timeDictionaryPays(times *array.Timestamp, rowGroup int64) bool {
	n := int(min(int64(times.Len()), rowGroup, 16_384))
	distinct := make(map[arrow.Timestamp]struct{}, n/timeRepeatsForDictionary+1)
	for i := range n {
		distinct[times.Value(i)] = struct{}{}
		if len(distinct)*timeRepeatsForDictionary > n {
			return false
		}
	}
	return n > 0
}

// open starts the next data file, in the partition's folder; its time
// column's encoding follows the times of its first batch.
func (w *dataFileWriter) open(part partitionRecord, times *array.Timestamp) error {
	l := w.layout
	folder := l.folder(part)
	loc := w.locations[folder]
	if loc == nil {
		props := l.meta.Properties()
		if folder != "" {
			withPath := maps.Clone(props)
			withPath[table.WriteDataPathKey] = strings.TrimSuffix(l.meta.Location(), "/") + "/data/" + folder
			props = withPath
		}
		var err error
		if loc, err = table.LoadLocationProvider(l.meta.Location(), props); err != nil {
			return err
		}
		if w.locations == nil {
			w.locations = map[string]table.LocationProvider{}
		}
		w.locations[folder] = loc
	}
	w.files++
	// Iceberg's data file names: partition, task, write id, file count.
	path := loc.NewDataLocation(fmt.Sprintf("%05d-%d-%s-%05d.parquet", 0, w.files-1, w.writeID, 1))
	out, err := w.create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	counted := &countingWriter{w: out}
	props := l.plainTime
	if timeDictionaryPays(times, l.rowGroup) {
		props = l.dictTime
	}
	pw, err := pqarrow.NewFileWriter(l.arrowSc, counted, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(memory.DefaultAllocator)))
	if err != nil {
		out.Close()
		w.remove(path)
		return err
	}
	w.path, w.partition, w.out, w.counted, w.pw = path, part, out, counted, pw
	return nil
}

// close finishes the open file and returns its manifest entry's data
// file; nil when no file is open.
func (w *dataFileWriter) close() (iceberg.DataFile, error) {
	if w.pw == nil {
		return nil, nil
	}
	pw, out, path, counted, part := w.pw, w.out, w.path, w.counted, w.partition
	w.reset()
	err := pw.Close()
	if err != nil {
		discard(out)
	} else {
		err = out.Close()
	}
	if err != nil {
		w.remove(path)
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	md, err := pw.FileMetadata()
	if err != nil {
		w.remove(path)
		return nil, err
	}
	l := w.layout
	values := make(map[int]any, len(part))
	for i, f := range l.parts {
		values[f.id] = part[i]
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{Schema: l.schema, Spec: l.spec, Format: iceberg.ParquetFile,
		Metadata: md, FilePath: path, FileSize: counted.n, Content: iceberg.EntryContentData,
		PartitionValues: values, Properties: l.meta.Properties(), FormatVersion: l.meta.Version()})
	if err != nil {
		w.remove(path)
		return nil, fmt.Errorf("data file %s: %w", path, err)
	}
	return df, nil
}

// abort closes and removes the open file, if any.
func (w *dataFileWriter) abort() {
	if w.pw == nil {
		return
	}
	pw, out, path := w.pw, w.out, w.path
	w.reset()
	_ = pw.Close()
	discard(out)
	w.remove(path)
}

// discard ends the object of a data file that is not to be kept: a
// putFile is not stored; the file system's writer is closed (what it
// stored is removed by the caller).
func discard(out io.WriteCloser) {
	if f, ok := out.(*putFile); ok {
		_ = f.abort()
	} else {
		_ = out.Close()
	}
}

// create starts the object of a data file: a putFile in an S3 warehouse
// for a path inside the table's location, else the file system's writer.
func (w *dataFileWriter) create(path string) (io.WriteCloser, error) {
	lk := w.table.lake
	if lk.loc.IsS3() {
		if rel, err := lk.tableRel(w.table.name, path); err == nil {
			spill := func() (io.WriteCloser, error) { return w.fs.Create(path) }
			return newPutFile(w.ctx, lk.store, tablePrefix(w.table.name)+rel, spill), nil
		}
	}
	return w.fs.Create(path)
}

// reset forgets the open file.
func (w *dataFileWriter) reset() {
	if w.last != nil {
		w.last.Release()
	}
	w.path, w.partition, w.out, w.counted, w.pw, w.last = "", nil, nil, nil, nil, nil
	w.seriesLen, w.prevLen = 0, 0
}

func (w *dataFileWriter) remove(path string) {
	// A stopped run's cancelled delete leaves the file to orphan removal,
	// as the lake's removeFiles does.
	if err := w.fs.Remove(path); err != nil && !isNotExist(err) && !errors.Is(err, context.Canceled) {
		slog.Warn("data file not removed", "path", path, "err", err)
	}
}

// countingWriter counts the bytes written through it (the file's size).
type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
