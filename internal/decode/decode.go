// Package decode turns the bytes of one landing file (CSV, TSV, optionally
// gzip-compressed, and Parquet) dropped by a field gateway into Arrow record
// batches that conform to an Iceberg table's Arrow schema, or infers the
// schema of a new table from a first file. It does no I/O of its own: the
// caller hands it a downloaded file (Source) and a target schema. Both
// ingest (Decode) and upload --validate (Check) decode through it, so they
// give the same reason for the same file. The rules come from
// docs/table-format.md ("Schema, partitioning, sort order" and "A file
// whose schema differs from the table"), docs/iceberg-go.md ("Schemas") and the
// Timelake convention that a value is loaded exactly or its file is refused
// (docs/ingest.md, "What loads and what is refused"): text numbers follow
// strict rules (numbers.go), wall-clock times must exist once in their
// zone (timeparse.go), strings must be UTF-8 (utf8.go), and whole-file
// problems are named (text.go). CSV dialects (a delimiter, a decimal
// comma, null tokens, Excel's separator hint) are read only as configured
// (CSV) or as the file itself says (the hint); a file may change an
// existing table's schema only as DecodeOptions.Evolve allows (evolve.go).
//
// Own code where libraries exist, and why: CSV records are read by
// encoding/csv (inside arrow-go's CSV reader), numbers by strconv and
// UTF-8 by unicode/utf8, but around them this package checks what they
// accept silently (hexadecimal floats, digit separators, underflow to 0,
// whole numbers rounded to a double; a quoted CRLF read as LF and a
// carriage return kept in an unquoted value, which lineends.go handles in
// front of encoding/csv for about 2% of a CSV decode's CPU time in
// BenchmarkDecodeCSV), Parquet is read by pqarrow, but the values it would
// change or refuse without saying where are checked on the file's pages
// (parquetvalues.go), half floats are widened by IEEE 754 (arrow-go's
// float16 conversion gets the subnormals wrong), and it parses RFC 3339
// times itself (one fixed layout with the relaxations in timeparse.go,
// which time.Parse would need several layouts for). Large CSV files are cut into
// ranges of whole lines decoded in parallel (chunked.go), with the table's
// number columns parsed by the CSV reader straight into their types
// (strictFloatType): BenchmarkDecodeCSV runs about 1.7 times as fast on two
// cores as on one (docs/performance.md).
package decode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Format is the container format of a landing file.
type Format string

// Supported landing file formats.
const (
	// FormatCSV is comma-separated text with a header row (RFC 4180 quoting).
	FormatCSV Format = "csv"
	// FormatTSV is tab-separated text with a header row (same quoting rules).
	FormatTSV Format = "tsv"
	// FormatParquet is an Apache Parquet file.
	FormatParquet Format = "parquet"
)

// DefaultBatchRows is the number of rows per output batch when
// DecodeOptions.BatchRows is 0.
const DefaultBatchRows = 64 * 1024

var (
	parquetMagic = []byte("PAR1")
	gzipMagic    = []byte{0x1f, 0x8b}
	utf8BOM      = []byte{0xef, 0xbb, 0xbf}
)

// DetectFormat decides the format of a landing file from its object key and
// its first bytes (head; 4 bytes are enough, fewer are tolerated).
//
// Parquet magic "PAR1" at offset 0 means Parquet whatever the name; so does a
// ".parquet" suffix. Otherwise ".csv"/".csv.gz" means CSV and ".tsv"/".tsv.gz"
// means TSV (suffixes compared case-insensitively). gzipped is true when head
// starts with the gzip magic 0x1f 0x8b; when head is shorter than 2 bytes a
// ".gz" suffix decides instead, and a ".gz" file whose bytes are not gzip
// (already decompressed in transit) is read as plain text. Any other name is
// a *FileError "unsupported file type (...)"; so is a gzip-compressed
// Parquet file.
func DetectFormat(key string, head []byte) (f Format, gzipped bool, err error) {
	if bytes.HasPrefix(head, parquetMagic) {
		return FormatParquet, false, nil
	}
	name := strings.ToLower(key)
	hasGzipMagic := bytes.HasPrefix(head, gzipMagic)
	gz := strings.HasSuffix(name, ".gz")
	if len(head) >= len(gzipMagic) {
		gz = hasGzipMagic
	}
	base := strings.TrimSuffix(name, ".gz")
	switch {
	case strings.HasSuffix(name, ".parquet"):
		if hasGzipMagic {
			return "", false, &FileError{Key: key, Reason: "gzip-compressed parquet files are not supported"}
		}
		if len(head) >= len(parquetMagic) {
			return "", false, &FileError{Key: key, Reason: "named .parquet but not a Parquet file (no PAR1 magic bytes at the start; a CSV file must be named .csv)"}
		}
		return FormatParquet, false, nil
	case strings.HasSuffix(base, ".csv"):
		return FormatCSV, gz, nil
	case strings.HasSuffix(base, ".tsv"):
		return FormatTSV, gz, nil
	}
	return "", false, &FileError{Key: key, Reason: "unsupported file type (expected .csv, .tsv, .csv.gz, .tsv.gz or .parquet)"}
}

// Source is one landing file, already downloaded (typically to a temp file).
type Source struct {
	// Key is the landing object key; every error message starts with it.
	Key string
	// R reads the whole file. Decode reads it in more than one pass (the
	// CSV header, then the data), all from the calling goroutine.
	R io.ReaderAt
	// Size is the file size in bytes.
	Size int64
}

// DecodeOptions controls Decode.
type DecodeOptions struct {
	// Target is the table's Arrow schema (iceberg-go table.SchemaToArrowSchema,
	// field IDs in field metadata). Output batches use exactly this schema
	// object. nil means the table does not exist yet and a schema is inferred
	// from all rows of the file.
	Target *arrow.Schema
	// TimeColumn names the time column. Required when Target is set; with
	// Target nil, "" means infer it.
	TimeColumn string
	// TimeUnit is "", "s", "ms", "us" or "ns". Numeric epoch values in the
	// time column (integer/float columns, or numeric text) are accepted only
	// when it is set; RFC 3339 text is parsed as text either way.
	TimeUnit string
	// AssumeLocation is the zone of text times without an offset and of
	// Parquet timestamps without a zone written into a zoned column; nil
	// means UTC.
	AssumeLocation *time.Location
	// BatchRows is the maximum number of rows per output batch; 0 means
	// DefaultBatchRows.
	BatchRows int
	// Mem allocates all Arrow memory; nil means memory.DefaultAllocator.
	// It must be safe for concurrent use (parallel decoding).
	Mem memory.Allocator
	// Parallelism is how many goroutines decode one uncompressed CSV/TSV
	// file larger than ChunkBytes, each a range of whole lines; 0 means
	// runtime.GOMAXPROCS(0), 1 means sequential. Files holding a quote
	// character (a quoted field may span lines), gzipped files and Parquet
	// files are always decoded sequentially. Results and errors (rows,
	// values, line numbers) are the same either way; memory grows by about
	// two ranges of text per goroutine.
	Parallelism int
	// ChunkBytes is the size of those ranges in bytes; 0 means
	// DefaultChunkBytes.
	ChunkBytes int64
	// CSV is how CSV and TSV text is written: the delimiter, the decimal
	// comma, the tokens read as null.
	CSV CSV
	// Columns gives the type of columns by name where a type is inferred
	// (Target nil, or a column added by Evolve), instead of inferring it:
	// Arrow types of Iceberg primitive types (ParseColumnType). The
	// time column is always timestamptz. Columns not in the file are
	// ignored.
	Columns map[string]arrow.DataType
	// Evolve says which changes of Target a file may bring (evolve.go);
	// "" is EvolveOff.
	Evolve Evolution
}

// CSV is how the CSV and TSV text of landing files is written (the
// --csv-delimiter, --csv-decimal-comma and --csv-null settings). The zero
// value is RFC 4180 as the default: comma-separated, a decimal point, only
// the empty cell null.
type CSV struct {
	// Delimiter separates the fields of .csv files; 0 means ','. .tsv
	// files are separated by tabs. A file whose first line is an Excel
	// separator hint ("sep=;") is separated by that character, and the
	// line is skipped.
	Delimiter rune
	// DecimalComma reads numbers in float, double and decimal columns (and
	// when a column's type is inferred) with a comma as the decimal
	// separator ("22,5" is 22.5); a point in such a number is refused
	// rather than guessed (1.234 is one thousand two hundred thirty-four
	// in the same locales). Integers, times and other columns are read as
	// without it.
	DecimalComma bool
	// Null lists cell texts read as null in every column, matched exactly
	// (case and spaces count), besides the empty cell; e.g. "NA", "NULL".
	Null []string
}

// Decoded is the result of Decode.
type Decoded struct {
	// Schema is opts.Target (same pointer), the inferred schema, or, when
	// the file changes an existing table (DecodeOptions.Evolve), Target's
	// fields (those widened with their new type) followed by the new
	// columns, without field ids.
	Schema *arrow.Schema
	// TimeColumn is the time column used, as spelled in Schema.
	TimeColumn string
	// Records are the output batches, each with Schema as its schema and at
	// most BatchRows rows. Release them with Decoded.Release.
	Records []arrow.RecordBatch
	// Rows is the total number of data rows.
	Rows int64
}

// Release releases every record batch; d may be used no more afterwards.
// It is safe to call on nil and more than once.
func (d *Decoded) Release() {
	if d == nil {
		return
	}
	for _, r := range d.Records {
		r.Release()
	}
	d.Records = nil
}

// Decode reads the whole file and returns record batches that conform to
// opts.Target (matched by column name, cast as described in
// docs/table-format.md, "A file whose schema differs from the table"), or, when Target is nil, to a schema inferred from all rows. The
// time column always holds timestamps (microseconds, UTC for zoned columns),
// parsed from RFC 3339 text or from numeric epochs when opts.TimeUnit is set.
// A file with a header (or a Parquet schema) and no rows decodes to a
// Decoded with no records into a Target; with Target nil it is an error
// wrapping ErrNoRows (no table can be inferred from it).
//
// Every error is a *FileError carrying the key and, where known, the 1-based
// data row, the line of a text file, the column and the value. ctx is
// checked between batches; its error is wrapped in a *FileError too.
func Decode(ctx context.Context, src Source, opts DecodeOptions) (*Decoded, error) {
	out, err := decodeFile(ctx, src, opts, false)
	if err != nil && evolvable(err, opts) {
		// A change the file may make to the table: decode it again,
		// working out the changed schema from all its rows.
		return decodeFile(ctx, src, opts, true)
	}
	return out, err
}

// decodeFile is Decode; evolving reads the whole file first and decodes it
// into Target with the changes the file brings (decodeEvolve).
func decodeFile(ctx context.Context, src Source, opts DecodeOptions, evolving bool) (*Decoded, error) {
	ro, err := resolveOptions(src.Key, opts)
	if err != nil {
		return nil, err
	}
	if evolving {
		ro.parallel = 1
	}
	head := make([]byte, 8)
	n, err := src.R.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, &FileError{Key: src.Key, Reason: "cannot read file", Err: err}
	}
	format, gz, err := DetectFormat(src.Key, head[:n])
	if err != nil {
		return nil, err
	}
	if src.Size == 0 {
		return nil, &FileError{Key: src.Key, Reason: "empty file (0 bytes)"}
	}
	ro.text = format != FormatParquet
	if format == FormatTSV {
		ro.comma, ro.tsv = '\t', true
	}
	var bs batchSource
	if format == FormatParquet {
		bs, err = openParquet(ctx, ro, src)
	} else {
		bs, err = openText(ctx, ro, src, gz)
	}
	if err != nil {
		return nil, err
	}
	defer bs.close()
	if err := checkNames(ro.key, bs.schema()); err != nil {
		return nil, err
	}
	var out *Decoded
	switch {
	case opts.Target != nil && evolving:
		out, err = decodeEvolve(ctx, ro, bs, opts.Target, opts.TimeColumn)
	case opts.Target != nil:
		out, err = decodeInto(ctx, ro, bs, opts.Target, opts.TimeColumn)
	default:
		out, err = decodeInfer(ctx, ro, bs, format != FormatParquet, opts.TimeColumn)
	}
	var fe *FileError
	if !errors.As(err, &fe) || fe.Row == 0 || ctx.Err() != nil || format == FormatParquet {
		return out, err
	}
	if _, chunked := bs.(*chunkedText); chunked {
		// Which of several bad rows is reported depends on the batches
		// (the first batch with a problem; in it a CSV error before a
		// value error, else the first column in table order): decode
		// the bad file again sequentially to report exactly its error.
		bs.close()
		opts.Parallelism = 1
		return decodeFile(ctx, src, opts, evolving)
	}
	if ts, ok := bs.(*textSource); ok {
		addLine(ro, src, gz, ts.cols.read, fe)
	}
	return out, err
}

// resolveOptions validates opts and fills in defaults.
func resolveOptions(key string, opts DecodeOptions) (*resolved, error) {
	unit, set, ok := parseTimeUnit(opts.TimeUnit)
	if !ok {
		return nil, &FileError{Key: key, Reason: fmt.Sprintf("invalid time unit %q (expected s, ms, us or ns)", opts.TimeUnit)}
	}
	ro := &resolved{key: key, mem: opts.Mem, loc: opts.AssumeLocation, epoch: unit, epochSet: set, batchRows: opts.BatchRows,
		parallel: opts.Parallelism, chunkBytes: opts.ChunkBytes, comma: ',', decimalComma: opts.CSV.DecimalComma,
		nulls: append([]string{""}, opts.CSV.Null...), columns: opts.Columns, evolve: opts.Evolve}
	if d := opts.CSV.Delimiter; d != 0 {
		if !validDelimiter(d) {
			return nil, &FileError{Key: key, Reason: fmt.Sprintf("invalid CSV delimiter %s", strconv.QuoteRune(d))}
		}
		ro.comma, ro.delimiterSet = d, true
	}
	if _, err := ParseEvolution(string(opts.Evolve)); err != nil {
		return nil, &FileError{Key: key, Reason: err.Error()}
	}
	if ro.mem == nil {
		ro.mem = memory.DefaultAllocator
	}
	if ro.parallel <= 0 {
		ro.parallel = runtime.GOMAXPROCS(0)
	}
	if ro.chunkBytes <= 0 {
		ro.chunkBytes = DefaultChunkBytes
	}
	if ro.batchRows <= 0 {
		ro.batchRows = DefaultBatchRows
	}
	if opts.Target != nil && opts.TimeColumn == "" {
		return nil, &FileError{Key: key, Reason: "no time column given for the table"}
	}
	return ro, nil
}

// decodeInto streams batches through a conformer for an existing table.
func decodeInto(ctx context.Context, ro *resolved, bs batchSource, target *arrow.Schema, timeCol string) (*Decoded, error) {
	if ct, ok := bs.(*chunkedText); ok {
		ct.cols = numbersAsTarget(ct.cols, target, ro.decimalComma)
	}
	conf, err := newConformer(ro, bs.schema(), target, timeCol)
	if err != nil {
		return nil, err
	}
	// A chunked source converts on its workers.
	ct, converted := bs.(*chunkedText)
	if converted {
		ct.conv = conf.convert
	}
	out := &Decoded{Schema: target, TimeColumn: timeCol}
	for {
		if err := ctx.Err(); err != nil {
			out.Release()
			return nil, &FileError{Key: ro.key, Reason: "decoding cancelled", Err: err}
		}
		rec, err := bs.next()
		if err != nil {
			out.Release()
			return nil, err
		}
		if rec == nil {
			break
		}
		conv := rec
		if !converted {
			conv, err = conf.convert(rec, out.Rows)
			rec.Release()
			if err != nil {
				out.Release()
				return nil, err
			}
		}
		out.Rows += conv.NumRows()
		out.Records = append(out.Records, conv)
	}
	return out, nil
}

// numbersAsTarget returns the text columns with those whose table type is
// int, long, float or double read as that type: arrow-go's CSV reader then
// parses them as the text converters do (integers with strconv base 10,
// floats with strictFloatType; "" is null) without building a string column
// first. Whatever it refuses (also what the converters accept: spaces
// around a number) is a row error, and Decode decodes such a file again
// sequentially, with the text converters.
func numbersAsTarget(cols textColumns, target *arrow.Schema, decimalComma bool) textColumns {
	fields := cols.read.Fields()
	for i, f := range fields {
		idx := target.FieldIndices(f.Name)
		if len(idx) != 1 || f.Name == "" {
			continue
		}
		switch dt := target.Field(idx[0]).Type; dt.ID() {
		case arrow.INT32, arrow.INT64:
			fields[i].Type = dt
		case arrow.FLOAT32, arrow.FLOAT64:
			if !decimalComma { // else the text converters read them, on the workers too
				fields[i].Type = newStrictFloatType(dt)
			}
		}
	}
	return textColumns{read: arrow.NewSchema(fields, nil), out: arrow.NewSchema(fields[:cols.out.NumFields()], nil)}
}

// decodeInfer reads every batch, infers the schema from all of them, then
// converts them to it.
func decodeInfer(ctx context.Context, ro *resolved, bs batchSource, fromText bool, timeCol string) (*Decoded, error) {
	raw, rows, err := readAll(ctx, ro, bs)
	defer release(raw)
	if err != nil {
		return nil, err
	}
	sc, tc, err := inferSchema(ro, bs.schema(), raw, fromText, timeCol)
	if err != nil {
		return nil, err
	}
	if rows == 0 {
		return nil, &FileError{Key: ro.key, Err: ErrNoRows}
	}
	return convertAll(ctx, ro, bs.schema(), sc, tc, raw)
}

// readAll reads every batch of bs and counts their rows. The caller
// releases the batches, also on error.
func readAll(ctx context.Context, ro *resolved, bs batchSource) ([]arrow.RecordBatch, int64, error) {
	var raw []arrow.RecordBatch
	var rows int64
	for {
		if err := ctx.Err(); err != nil {
			return raw, rows, &FileError{Key: ro.key, Reason: "decoding cancelled", Err: err}
		}
		rec, err := bs.next()
		if err != nil {
			return raw, rows, err
		}
		if rec == nil {
			return raw, rows, nil
		}
		rows += rec.NumRows()
		raw = append(raw, rec)
	}
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// convertAll converts raw batches of schema src to sc (time column tc);
// raw are not released.
func convertAll(ctx context.Context, ro *resolved, src, sc *arrow.Schema, tc string, raw []arrow.RecordBatch) (*Decoded, error) {
	conf, err := newConformer(ro, src, sc, tc)
	if err != nil {
		return nil, err
	}
	out := &Decoded{Schema: sc, TimeColumn: tc}
	for _, rec := range raw {
		if err := ctx.Err(); err != nil {
			out.Release()
			return nil, &FileError{Key: ro.key, Reason: "decoding cancelled", Err: err}
		}
		conv, err := conf.convert(rec, out.Rows)
		if err != nil {
			out.Release()
			return nil, err
		}
		out.Rows += rec.NumRows()
		out.Records = append(out.Records, conv)
	}
	return out, nil
}

// ErrNoRows is the cause (FileError.Err) of the error of a file without
// data rows when no table exists: a table's columns cannot be inferred from
// it. Against an existing table the same file decodes to 0 rows.
var ErrNoRows = errors.New("no data rows to create a table from (once the table exists, a file without data rows loads as 0 rows)")

// checkNames rejects empty, duplicate and non-UTF-8 column names: columns
// are matched by name, so the first two would be ambiguous, and Iceberg
// names are UTF-8.
func checkNames(key string, sc *arrow.Schema) error {
	if sc.NumFields() == 0 {
		return &FileError{Key: key, Reason: "the header names no columns"}
	}
	seen := make(map[string]bool, sc.NumFields())
	for i, f := range sc.Fields() {
		if f.Name == "" {
			return &FileError{Key: key, Reason: fmt.Sprintf("column %d has an empty name (only unnamed columns at the end of the header are allowed, and only when empty in every row)", i+1)}
		}
		if off, ok := invalidUTF8At(f.Name); !ok {
			return &FileError{Key: key, Value: f.Name, Reason: fmt.Sprintf("the name of column %d, %s, is not valid UTF-8: %s",
				i+1, quoteValue(f.Name), invalidUTF8(f.Name, off))}
		}
		if seen[f.Name] {
			return &FileError{Key: key, Column: f.Name, Reason: "duplicate column name"}
		}
		seen[f.Name] = true
	}
	return nil
}

// batchSource yields the raw batches of one file. next returns (nil, nil) at
// the end; the caller owns (releases) each returned batch.
type batchSource interface {
	schema() *arrow.Schema
	next() (arrow.RecordBatch, error)
	close()
}

// parquetSource reads a Parquet file with pqarrow, all columns and row
// groups, BatchRows rows per batch.
type parquetSource struct {
	ctx context.Context
	ro  *resolved
	pf  *file.Reader
	rr  pqarrow.RecordReader
	sc  *arrow.Schema
}

func openParquet(ctx context.Context, ro *resolved, src Source) (batchSource, error) {
	pf, fr, sc, err := openParquetFile(ro, src)
	if err != nil {
		return nil, err
	}
	if err := checkNarrowIntegers(ro, pf); err != nil {
		_ = pf.Close()
		return nil, err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		_ = pf.Close()
		return nil, &FileError{Key: ro.key, Reason: "cannot read parquet data", Err: err}
	}
	return &parquetSource{ctx: ctx, ro: ro, pf: pf, rr: rr, sc: sc}, nil
}

// openParquetFile reads the footer and the Arrow schema of a Parquet file.
// The caller closes pf.
func openParquetFile(ro *resolved, src Source) (pf *file.Reader, fr *pqarrow.FileReader, sc *arrow.Schema, err error) {
	pf, err = file.NewParquetReader(io.NewSectionReader(src.R, 0, src.Size),
		file.WithReadProps(parquet.NewReaderProperties(ro.mem)))
	if err != nil {
		return nil, nil, nil, &FileError{Key: ro.key, Reason: "not a readable parquet file", Err: err}
	}
	// Batches no longer than the file: the reader reserves value buffers
	// for a whole batch per column, so a 40,000-row file read in batches of
	// 64 Ki rows would allocate buffers 60% larger than its values.
	batch := min(int64(ro.batchRows), max(pf.NumRows(), 1))
	fr, err = pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batch}, ro.mem)
	if err == nil {
		sc, err = fr.Schema()
	}
	if err != nil {
		_ = pf.Close()
		return nil, nil, nil, &FileError{Key: ro.key, Reason: "cannot read parquet schema", Err: err}
	}
	return pf, fr, sc, nil
}

func (p *parquetSource) schema() *arrow.Schema { return p.sc }

func (p *parquetSource) next() (arrow.RecordBatch, error) {
	for p.rr.Next() {
		rec := p.rr.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		return rec, nil
	}
	if err := p.rr.Err(); err != nil {
		return nil, locateReadError(p.ctx, p.ro, p.pf, err)
	}
	return nil, nil
}

func (p *parquetSource) close() {
	p.rr.Release()
	_ = p.pf.Close()
}
