package datafile

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/timelake/timelake/internal/decode"
)

// CreateFunc starts the object of a data file at path (a full location,
// as the table's location provider makes it). An object that is not to be
// kept is closed, or, when it has an Abort() error method, aborted; what
// a closed object stored is removed through the file system.
type CreateFunc func(ctx context.Context, path string) (io.WriteCloser, error)

// Write writes recs (batches of the Arrow schema the layout was made for,
// in its Order, none spanning two partitions; each is released) as data
// files of layout l, one or more per partition, and yields each file once
// it is closed. The files are created with create (nil: fs.Create) and
// removed through fs. The writer runs on its own goroutine, up to
// BufferBatches batches behind the caller's iteration of recs. On an
// error the files already yielded are the caller's to remove (the file
// being written is removed here).
func Write(ctx context.Context, l *Layout, fs icebergio.WriteFileIO, create CreateFunc, recs iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[iceberg.DataFile, error] {
	return func(yield func(iceberg.DataFile, error) bool) {
		type item struct {
			rec arrow.RecordBatch
			err error
		}
		ctx, cancel := context.WithCancel(ctx)
		in := make(chan item, BufferBatches)
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
		w := &writer{ctx: ctx, layout: l, fs: fs, create: create, writeID: uuid.New()}
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

// writer writes one data file at a time of a layout.
type writer struct {
	ctx     context.Context
	layout  *Layout
	fs      icebergio.WriteFileIO
	create  CreateFunc // nil: fs.Create
	writeID uuid.UUID
	files   int

	locations map[string]table.LocationProvider // by partition folder

	// The open file: its path and partition, its writers, and the
	// series the row group rule follows.
	path      string
	partition PartitionRecord
	out       io.WriteCloser
	counted   *countingWriter
	pw        *pqarrow.FileWriter // nil: a small file not written yet
	small     *smallFormat        // the open file's small file format, if any
	pending   []arrow.RecordBatch // the batches of a small file, written at close
	pendRows  int64               // rows of pending
	pendBytes int64               // plain bytes of pending's largest columns
	enc       *columnEncoder      // the small files' page writers and buffers
	schema    *arrow.Schema       // the open file's Arrow schema (fileSchema)
	dict      bool                // whether it has dictionary columns
	last      arrow.RecordBatch   // the last row written
	seriesLen int64               // rows of the series being written
	prevLen   int64               // rows of the series before it
}

// write writes rec to the open file, or to a new one when rec is of
// another partition or the open file reached the target size; it returns
// the file it closed, if any.
func (w *writer) write(rec arrow.RecordBatch) (iceberg.DataFile, error) {
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
	sc, dict := w.schema, w.dict
	if sc == nil || !sameColumnTypes(sc, rec) {
		var err error
		if sc, dict, err = fileSchema(l.arrowSc, rec); err != nil {
			return nil, err
		}
	}
	var done iceberg.DataFile
	var err error
	if w.out != nil && (!slices.Equal(part, w.partition) || w.counted.n >= l.target || sc != w.schema) {
		if done, err = w.close(); err != nil {
			return nil, err
		}
	}
	if w.out == nil {
		if err := w.open(part, times, sc, dict); err != nil {
			return done, err
		}
	}
	rec = array.NewRecordBatch(w.schema, rec.Columns(), rec.NumRows())
	defer rec.Release()
	if w.pw == nil {
		// A small file while its rows fit; pqarrow's file once they no
		// longer do.
		if rows := w.pendRows + int64(n); rows <= w.small.limit {
			if b := w.pendBytes + plainBytes(rec); w.small.fits(b) {
				rec.Retain()
				w.pending = append(w.pending, rec)
				w.pendRows, w.pendBytes = rows, b
				return done, nil
			}
		}
		first := rec
		if len(w.pending) > 0 {
			first = w.pending[0]
		}
		if err := w.startParquet(first.Column(l.timeCol).(*array.Timestamp)); err != nil {
			return done, err
		}
	}
	return done, w.writeBatch(rec)
}

// writeBatch writes rec (of the open file's schema) to the open file's
// pqarrow writer, ending row groups at series boundaries.
func (w *writer) writeBatch(rec arrow.RecordBatch) error {
	l, n := w.layout, int(rec.NumRows())
	// Row groups end at a series boundary once the series before would
	// no longer fit (series of one table tend to be alike in length);
	// the writer ends them at rowGroup rows within a longer series. Rows
	// between two such ends are written at once.
	cur, err := w.pw.RowGroupNumRows()
	if err != nil {
		return err
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
					return err
				}
				if err := w.pw.NewBufferedRowGroupChecked(); err != nil {
					return err
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
		return err
	}
	if len(l.series) > 0 { // a copy: the batch's buffers are not kept
		tail := rec.NewSlice(int64(n-1), int64(n))
		last, err := SizedRecord(tail)
		tail.Release()
		if err != nil {
			return err
		}
		if w.last != nil {
			w.last.Release()
		}
		w.last = last
	}
	return nil
}

// writeRows writes rows [from, to) of rec to the open file.
func (w *writer) writeRows(rec arrow.RecordBatch, from, to int) error {
	if from == to {
		return nil
	}
	part := rec.NewSlice(int64(from), int64(to))
	defer part.Release()
	part = WithValueBytes(part)
	defer part.Release()
	return w.pw.WriteBuffered(part)
}

// WithValueBytes returns rec (retained), or a copy of it whose string and
// binary columns that hold values but whose value buffer holds no bytes
// (every value "", as a permuted take leaves them) have no value buffer.
// arrow-go's writer reads such a buffer's values as nil, which its
// statistics take for no value at all: the batch's "" would be left out
// of the column chunk's minimum, and of the manifest entry's lower bound
// (TestEmptyStringBound). Without a buffer it writes the values of an
// empty one, which count. The batches of iceberg-go's writer go through
// it too (internal/lake's writeLaidOut).
func WithValueBytes(rec arrow.RecordBatch) arrow.RecordBatch {
	var cols []arrow.Array
	for i, c := range rec.Columns() {
		switch c.DataType().ID() {
		case arrow.STRING, arrow.BINARY:
		default:
			continue
		}
		bufs := c.Data().Buffers()
		if c.Len() == c.NullN() || len(bufs) != 3 || bufs[2] == nil || len(bufs[2].Bytes()) > 0 {
			continue
		}
		if cols == nil {
			cols = slices.Clone(rec.Columns())
		}
		d := array.NewData(c.DataType(), c.Len(), []*memory.Buffer{bufs[0], bufs[1], nil}, nil, c.NullN(), c.Data().Offset())
		cols[i] = array.MakeFromData(d)
		d.Release()
		defer cols[i].Release()
	}
	if cols == nil {
		rec.Retain()
		return rec
	}
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
}

// seriesEnd is the end of the run of rows of rec from start that are of
// the series of row start (rows are sorted by series key).
func (w *writer) seriesEnd(rec arrow.RecordBatch, start int) int {
	n := int(rec.NumRows())
	if len(w.layout.series) == 0 {
		return n
	}
	return start + sort.Search(n-start, func(i int) bool { return !w.sameSeries(rec, start, rec, start+i) })
}

// sameSeries reports whether row i of a and row j of b have the same
// series key.
func (w *writer) sameSeries(a arrow.RecordBatch, i int, b arrow.RecordBatch, j int) bool {
	for _, c := range w.layout.series {
		if CompareValues(a.Column(c), i, b.Column(c), j) != 0 {
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

// open starts the next data file, in the partition's folder, of Arrow
// schema sc (dict: with dictionary columns, fileSchema); its time
// column's encoding follows the times of its first batch. A file that may
// be small (smallfile.go) gets its pqarrow writer once its rows no longer
// fit one (startParquet).
func (w *writer) open(part PartitionRecord, times *array.Timestamp, sc *arrow.Schema, dict bool) error {
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
	out, err := w.createFile(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	small := l.small
	w.path, w.partition, w.out, w.counted, w.schema, w.dict = path, part, out, &countingWriter{w: out}, sc, dict
	w.small = small
	if small == nil {
		return w.startParquet(times)
	}
	return nil
}

// startParquet starts the open file's pqarrow writer and writes the
// batches of the small file it was so far; the encoding of its time
// column follows times, those of its first batch.
func (w *writer) startParquet(times *array.Timestamp) error {
	props := w.layout.plainTime
	if timeDictionaryPays(times, w.layout.rowGroup) {
		props = w.layout.dictTime
	}
	arrowProps := []pqarrow.WriterOption{pqarrow.WithAllocator(memory.DefaultAllocator)}
	if !w.dict { // fileSchema stored the schema of a file with dictionary columns
		arrowProps = append(arrowProps, pqarrow.WithStoreSchema())
	}
	pw, err := pqarrow.NewFileWriter(w.schema, w.counted, props, pqarrow.NewArrowWriterProperties(arrowProps...))
	if err != nil {
		w.abort()
		return err
	}
	w.pw, w.small = pw, nil
	pending := w.pending
	w.pending, w.pendRows, w.pendBytes = nil, 0, 0
	defer decode.ReleaseAll(pending)
	for _, rec := range pending {
		if err := w.writeBatch(rec); err != nil {
			return err
		}
	}
	return nil
}

// close finishes the open file and returns its manifest entry's data
// file; nil when no file is open.
func (w *writer) close() (iceberg.DataFile, error) {
	if w.out == nil {
		return nil, nil
	}
	if w.pw == nil {
		return w.closeSmall()
	}
	pw, out, path, counted, part := w.pw, w.out, w.path, w.counted, w.partition
	w.reset()
	if err := endFile(out, pw.Close()); err != nil {
		w.remove(path)
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	md, err := pw.FileMetadata()
	if err != nil {
		w.remove(path)
		return nil, err
	}
	return w.dataFile(md, path, counted.n, part)
}

// closeSmall writes and closes the open small file.
func (w *writer) closeSmall() (iceberg.DataFile, error) {
	small, pending, out, path, part := w.small, w.pending, w.out, w.path, w.partition
	w.pending = nil // reset must not release them before they are written
	w.reset()
	defer decode.ReleaseAll(pending)
	if w.enc == nil {
		w.enc = &columnEncoder{}
	}
	md, size, err := writeSmallFile(out, small, pending, w.enc)
	if err := endFile(out, err); err != nil {
		w.remove(path)
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return w.dataFile(md, path, size, part)
}

// endFile ends the object of a data file whose writing ended with
// written: closed (stored) after a success, discarded after an error.
func endFile(out io.WriteCloser, written error) error {
	if written != nil {
		discard(out)
		return written
	}
	return out.Close()
}

// dataFile is the manifest entry's data file of the file at path of size
// bytes in partition part, whose footer is md.
func (w *writer) dataFile(md *metadata.FileMetaData, path string, size int64, part PartitionRecord) (iceberg.DataFile, error) {
	l := w.layout
	values := make(map[int]any, len(part))
	for i, f := range l.parts {
		values[f.id] = part[i]
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{Schema: l.schema, Spec: l.spec, Format: iceberg.ParquetFile,
		Metadata: md, FilePath: path, FileSize: size, Content: iceberg.EntryContentData,
		PartitionValues: values, Properties: l.meta.Properties(), FormatVersion: l.meta.Version()})
	if err != nil {
		w.remove(path)
		return nil, fmt.Errorf("data file %s: %w", path, err)
	}
	return df, nil
}

// abort closes and removes the open file, if any.
func (w *writer) abort() {
	if w.out == nil {
		return
	}
	pw, out, path := w.pw, w.out, w.path
	w.reset()
	if pw != nil {
		_ = pw.Close()
	}
	discard(out)
	w.remove(path)
}

// discard ends the object of a data file that is not to be kept: one
// that can be aborted is not stored; another is closed (what it stored is
// removed by the caller).
func discard(out io.WriteCloser) {
	if a, ok := out.(interface{ Abort() error }); ok {
		_ = a.Abort()
	} else {
		_ = out.Close()
	}
}

// createFile starts the object of a data file: create's, else the file
// system's writer.
func (w *writer) createFile(path string) (io.WriteCloser, error) {
	if w.create != nil {
		return w.create(w.ctx, path)
	}
	return w.fs.Create(path)
}

// reset forgets the open file.
func (w *writer) reset() {
	if w.last != nil {
		w.last.Release()
	}
	decode.ReleaseAll(w.pending)
	w.path, w.partition, w.out, w.counted, w.pw, w.last, w.schema, w.dict = "", nil, nil, nil, nil, nil, nil, false
	w.small, w.pending, w.pendRows, w.pendBytes = nil, nil, 0, 0
	w.seriesLen, w.prevLen = 0, 0
}

func (w *writer) remove(path string) {
	// A stopped run's cancelled delete leaves the file to orphan removal,
	// as the lake's removeFiles does.
	if err := w.fs.Remove(path); err != nil && !errors.Is(err, iofs.ErrNotExist) && !errors.Is(err, context.Canceled) {
		slog.Warn("data file not removed", "path", path, "err", err)
	}
}

// countingWriter counts the bytes written through it (the file's size);
// Tell makes it the sink of arrow-go's page writer (small files).
type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Tell() int64 { return c.n }

// SizedRecord copies rec's columns into buffers of their size
// (array.Concatenate of each column alone): a batch kept after the
// buffers it was read or sliced from are released, or that holds fewer
// rows than its buffers were made for.
func SizedRecord(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range rec.Columns() {
		var err error
		if cols[i], err = array.Concatenate([]arrow.Array{c}, memory.DefaultAllocator); err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()), nil
}
