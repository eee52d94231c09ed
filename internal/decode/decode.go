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
// problems are named (text.go). DecodeEach hands a file over in pieces of
// a bounded size (ingest's --memory-budget) with the rows, values and
// errors of the whole decode, so that no file is held whole: Parquet
// column chunks are read through a buffer, parallel CSV ranges are parsed
// a few ahead, and a schema that depends on every row (inference,
// evolution) is worked out one batch at a time. CSV dialects (a delimiter, a decimal
// comma, null tokens, Excel's separator hint) are read only as configured
// (CSV) or as the file itself says (the hint); a file may change an
// existing table's schema only as DecodeOptions.Evolve allows (evolve.go).
//
// Own code where libraries exist, and why: CSV records are read by
// encoding/csv (inside arrow-go's CSV reader; see below for ranges without
// quotes), numbers by strconv and
// UTF-8 by unicode/utf8, but around them this package checks what they
// accept silently (hexadecimal floats, digit separators, underflow to 0,
// whole numbers rounded to a double; a quoted CRLF read as LF and a
// carriage return kept in an unquoted value, which lineends.go handles in
// front of encoding/csv for about 2% of a CSV decode's CPU time in
// BenchmarkDecodeCSV), Parquet is read through the format registered
// with this package (parquetformat.go; it imports no Parquet reader
// itself): pqarrow where ingest decodes (package decode/pqarrowio) and
// decode/pqlite's reader of flat columns in the gateway, which links
// neither pqarrow nor arrow-go's parquet/file, but the values pqarrow
// would change or refuse without saying where are checked on the file's
// pages (the formats' values.go), half floats are widened by IEEE 754 (arrow-go's
// float16 conversion gets the subnormals wrong), and it parses RFC 3339
// times itself (one fixed layout with the relaxations in timeparse.go,
// which time.Parse would need several layouts for), and it takes a
// column's values at given indices itself (take.go: arrow/compute would add
// about 20 MB to the gateway binary). Large CSV files are cut into
// ranges of whole lines decoded in parallel (chunked.go), with the table's
// number columns parsed by the CSV reader straight into their types
// (strictFloatType): BenchmarkDecodeCSV runs about 1.7 times as fast on two
// cores as on one (docs/performance.md). A range (or a gzipped file's block,
// gzipranges.go) without a quote character is split into lines and fields
// by csvfast.go instead of encoding/csv, about 2.7 times as fast for the
// parsing alone; anything it does not read positively (a quote, a wrong
// field count, a lone CR, a NUL) sends the range back to the CSV reader
// from its start, so values and errors are those of the reader. JSON Lines
// lines of the common shape are read the same way (jsonfast.go, json.go).
package decode

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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
	// FormatJSON is JSON text: one object per line (NDJSON), or one
	// top-level array of objects (json.go).
	FormatJSON Format = "json"
)

// DefaultBatchRows is the number of rows per output batch when
// DecodeOptions.BatchRows is 0.
const DefaultBatchRows = 64 * 1024

var (
	parquetMagic = []byte("PAR1")
	// encryptedParquetMagic starts and ends a Parquet file whose footer is
	// encrypted (Parquet modular encryption).
	encryptedParquetMagic = []byte("PARE")
	gzipMagic             = []byte{0x1f, 0x8b}
	utf8BOM               = []byte{0xef, 0xbb, 0xbf}
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
	return detectFormat(key, head, "")
}

// detectFormat is DetectFormat, with fallback (DecodeOptions.Format) the
// format of a name it does not recognise.
func detectFormat(key string, head []byte, fallback Format) (f Format, gzipped bool, err error) {
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
			return "", false, parquetProblem(key, "", "gzip-compressed parquet files are not supported", nil)
		}
		if bytes.HasPrefix(head, encryptedParquetMagic) {
			return "", false, parquetProblem(key, "", "an encrypted Parquet file (Parquet modular encryption: PARE magic bytes at the start), which timelake does not read: write the file without encryption", nil)
		}
		if len(head) >= len(parquetMagic) {
			return "", false, parquetProblem(key, "", "named .parquet but not a Parquet file (no PAR1 magic bytes at the start; a CSV file must be named .csv)", nil)
		}
		return FormatParquet, false, nil
	case strings.HasSuffix(base, ".csv"):
		return FormatCSV, gz, nil
	case strings.HasSuffix(base, ".tsv"):
		return FormatTSV, gz, nil
	case strings.HasSuffix(base, ".json"), strings.HasSuffix(base, ".jsonl"), strings.HasSuffix(base, ".ndjson"):
		return FormatJSON, gz, nil
	}
	switch fallback {
	case FormatParquet:
		return detectFormat(key+".parquet", head, "")
	case FormatCSV, FormatTSV, FormatJSON:
		return fallback, hasGzipMagic || (len(head) < len(gzipMagic) && gz), nil
	}
	reason := "unsupported file type (expected .csv, .tsv, .json, .jsonl, .ndjson, each optionally .gz, or .parquet)"
	if !strings.Contains(path.Base(key), ".") {
		reason += "; a key without an extension is read in the format its source profile's format setting gives (docs/schema.md, \"Source profiles\")"
	}
	return "", false, &FileError{Key: key, Reason: reason}
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
	// Format is the format of a file whose name DetectFormat does not
	// recognise (a key without an extension; a source profile's format
	// setting); "" refuses such a file. A known extension wins.
	Format Format
	// BatchRows is the maximum number of rows per output batch; 0 means
	// DefaultBatchRows.
	BatchRows int
	// Mem allocates all Arrow memory; nil means memory.DefaultAllocator.
	// It must be safe for concurrent use (parallel decoding).
	Mem memory.Allocator
	// Parallelism is how many goroutines decode one uncompressed CSV/TSV
	// or JSON Lines file larger than ChunkBytes, each a range of whole
	// lines, and how many parse a gzipped CSV, TSV or JSON Lines file of an
	// existing table in blocks of whole lines of about ChunkBytes as one
	// more decompresses it (gzipranges.go); 0 means runtime.GOMAXPROCS(0),
	// 1 means sequential. CSV and TSV files holding a quote character (a
	// quoted field may span lines; in a gzipped file, once a block shows
	// one), other gzipped files and Parquet files are decoded
	// sequentially. Results and errors (rows, values, line numbers) are
	// the same either way; memory grows by about two ranges of text per
	// goroutine.
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
	// OnError says what a row that cannot be loaded does to a file of an
	// existing table (Target set): OnErrorFile ("" too) refuses the file;
	// OnErrorSkipRows leaves the row out and reports it in
	// Decoded.Rejected (skiprows.go), up to MaxBadRows.
	OnError OnError
	// jsonTwoPasses reads a JSON file with both passes (json.go) after a
	// one-pass read found what it cannot judge.
	jsonTwoPasses bool
	// MaxBadRows bounds the rows OnErrorSkipRows sets aside in one file;
	// the zero value is DefaultMaxBadRows.
	MaxBadRows MaxBadRows
	// Renames maps a file's column names to the table's (a source
	// profile's time column: the file's "ts" is the table's "time"). The
	// file may not also have a column of the new name.
	Renames map[string]string
	// PieceBytes is the most decoded bytes DecodeEach hands over in one
	// piece (at least one batch each): the decompressed text of a CSV or
	// TSV file, the Arrow buffers of a Parquet file's values (see
	// DecodedSize). 0 means the whole file is one piece. Decode ignores it.
	PieceBytes int64
	// MaxRecordBytes is the most bytes one row of CSV or TSV text (the
	// header too, quoted line breaks included) may take: a longer one
	// refuses the file once that many of its bytes are read, before it is
	// held (limits.go). 0 means DefaultMaxRecordBytes.
	MaxRecordBytes int64
	// CheckColumns, when set, is given the file's columns as read (their
	// names; their types not decided yet) before any value is decoded:
	// an error refuses the file as it is (how wide a table may be is the
	// caller's to say).
	CheckColumns func(*arrow.Schema) error
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
	// Rows is the total number of data rows (of this piece, for
	// DecodeEach; those set aside not counted).
	Rows int64
	// Piece numbers the pieces of DecodeEach from 0; Decode's result is
	// piece 0. More is set on a piece the file's rows go on after.
	Piece int
	More  bool
	// Rejected are the rows of the whole file set aside under
	// OnErrorSkipRows, in file order, on its last piece (DecodeEach);
	// WriteRejects writes them as a file of their own.
	Rejected []RejectedRow

	skip *skipState
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
	d.skip.release()
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
	opts.PieceBytes = 0
	var out *Decoded
	err := DecodeEach(ctx, src, opts, func(d *Decoded) error {
		out.Release() // a decode started over (see DecodeEach)
		out = d
		return nil
	})
	if err != nil {
		out.Release()
		return nil, err
	}
	return out, nil
}

// DecodeEach decodes src as Decode does, but hands the rows to fn in
// pieces of at most opts.PieceBytes decoded bytes (one piece when it is 0),
// so that a file larger than memory is never held whole: fn owns each
// piece (it releases it) and has done with it before the next is decoded.
// Every piece has the same Schema and TimeColumn, and the pieces hold the
// rows in file order; a file without rows is one piece without records.
// Where the file's schema comes from all its rows (Target nil, or a change
// Evolve allows), the file is read twice when it does not fit one piece:
// once to work the schema out, once to decode it.
//
// A decode may start over: when a later piece finds a change of the schema
// that Evolve allows (or a parallel decode's error is decoded again
// sequentially), fn is handed a piece numbered 0 again, and whatever it
// made of the earlier pieces is to be dropped. An error returned by fn
// stops the decode and is returned as it is; other errors are Decode's.
//
// A panic while the file is read or converted (a reader's bug the file
// triggers) refuses the file (IsPanic) rather than stopping the caller;
// one of fn is returned the same way.
func DecodeEach(ctx context.Context, src Source, opts DecodeOptions, fn func(*Decoded) error) (err error) {
	out := &pieces{limit: opts.PieceBytes, fn: fn}
	defer out.release()
	defer recoverTo(&err, src.Key, "decoding the file", nil)
	evolving := false
	err = decodeFile(ctx, src, opts, evolving, false, out)
	if err != nil && !out.failed && evolvable(err, opts) {
		// A change the file may make to the table: decode it again,
		// working out the changed schema from all its rows.
		evolving = true
		out.restart()
		err = decodeFile(ctx, src, opts, evolving, false, out)
	}
	if err != nil && !out.failed && skippable(err, opts) {
		// A row the file may set aside (skiprows.go): decode it again,
		// leaving out every refused row.
		out.restart()
		err = decodeFile(ctx, src, opts, evolving || opts.Evolve == EvolveWiden, true, out)
	}
	var ce *callerError
	if errors.As(err, &ce) {
		return ce.err
	}
	return err
}

// callerError carries an error of DecodeEach's fn through the decoder.
type callerError struct{ err error }

func (e *callerError) Error() string { return e.err.Error() }

// pieces gathers decoded batches into the pieces DecodeEach hands to fn:
// a piece ends before the batch that would take it past limit decoded
// bytes (a batchSource's consumed count), and holds at least one batch.
type pieces struct {
	limit int64
	fn    func(*Decoded) error
	key   string
	mem   memory.Allocator
	cur   *Decoded
	n     int   // pieces handed over in this pass
	rows  int64 // rows of the pieces of this pass
	// lastPiece, when set, completes the last piece before it is handed
	// over (setAside); its error stops the decode.
	lastPiece func(*Decoded) error
	start     int64 // consumed count at the start of cur
	last      int64 // consumed count after the last batch added
	failed    bool  // fn returned an error
}

// begin starts a pass over a file of the given schema.
func (p *pieces) begin(ro *resolved, sc *arrow.Schema, timeCol string) {
	p.release()
	p.key, p.mem = ro.key, ro.mem
	p.cur = &Decoded{Schema: sc, TimeColumn: timeCol, Piece: p.n}
}

// add takes rec (owning it); consumed is the source's count after it. A
// batch whose buffers hold much more capacity than data (builders grow by
// doubling) is copied into exactly sized ones first (compact): a piece is
// held until it is written.
func (p *pieces) add(rec arrow.RecordBatch, consumed int64) error {
	rec, err := compact(rec, p.mem)
	if err != nil {
		return &FileError{Key: p.key, Reason: "cannot copy decoded data", Err: err}
	}
	if p.limit > 0 && len(p.cur.Records) > 0 && consumed-p.start > p.limit {
		p.cur.More = true // rec goes into the next piece
		if err := p.flush(); err != nil {
			rec.Release()
			return err
		}
		p.start = p.last
	}
	p.cur.Records = append(p.cur.Records, rec)
	p.cur.Rows += rec.NumRows()
	p.rows += rec.NumRows()
	p.last = consumed
	return nil
}

// flush hands the current piece to fn and starts the next.
func (p *pieces) flush() error {
	d := p.cur
	p.cur = &Decoded{Schema: d.Schema, TimeColumn: d.TimeColumn, Piece: p.n + 1}
	p.n++
	if err := p.fn(d); err != nil {
		p.failed = true
		return &callerError{err: err}
	}
	return nil
}

// finish hands over the last piece: the rest of the rows, or the only
// (empty) piece of a file without rows, or an empty one that carries the
// rows set aside.
func (p *pieces) finish() error {
	if p.lastPiece != nil {
		if err := p.lastPiece(p.cur); err != nil {
			return err
		}
	}
	if len(p.cur.Records) == 0 && p.n > 0 && p.cur.Rejected == nil {
		return nil
	}
	return p.flush()
}

// restart makes the next pass start again from piece 0.
func (p *pieces) restart() {
	p.release()
	p.n, p.start, p.last, p.rows, p.lastPiece = 0, 0, 0, 0, nil
}

func (p *pieces) release() {
	p.cur.Release()
	p.cur = nil
}

// decodeFile is one pass of DecodeEach; evolving reads the whole file first
// and decodes it into Target with the changes the file brings
// (decodeEvolve); skipping sets aside the rows that cannot be loaded
// (OnErrorSkipRows).
func decodeFile(ctx context.Context, src Source, opts DecodeOptions, evolving, skipping bool, out *pieces) error {
	ro, err := resolveOptions(src.Key, opts)
	if err != nil {
		return err
	}
	if evolving || skipping {
		ro.parallel = 1
	}
	if skipping {
		ro.skipRows = &rowSkipper{max: opts.MaxBadRows.orDefault()}
	}
	head := make([]byte, 8)
	n, err := src.R.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return &FileError{Key: src.Key, Reason: "cannot read file", Err: err}
	}
	format, gz, err := detectFormat(src.Key, head[:n], opts.Format)
	if err != nil {
		return err
	}
	if src.Size == 0 {
		return &FileError{Key: src.Key, Reason: "empty file (0 bytes)"}
	}
	ro.text = format != FormatParquet
	if format == FormatJSON {
		// A JSON number has a decimal point, whatever CSV text uses.
		ro.json, ro.decimalComma = true, false
	}
	if format == FormatTSV {
		ro.comma, ro.tsv = '\t', true
	}
	// A JSON file of a table whose columns are known is read in one pass;
	// what the pass cannot judge reads it again with two (json.go).
	jsonOnePass := format == FormatJSON && opts.Target != nil && !evolving && !skipping && len(ro.renames) == 0 && !opts.jsonTwoPasses
	ro.textBlocks = format != FormatJSON && opts.Target != nil && !evolving && !skipping
	opened := false
	open := func() (batchSource, error) {
		if opened && ro.skipRows != nil {
			// Read again (scanThenDecode): its rows are set aside again.
			ro.skipRows.reset()
		}
		opened = true
		switch format {
		case FormatParquet:
			return openParquet(ctx, ro, src)
		case FormatJSON:
			if jsonOnePass && !gz && ro.parallel > 1 && src.Size > ro.chunkBytes {
				if bs, err := openJSONRanges(ro, src, opts.Target); bs != nil || err != nil {
					return bs, err
				}
			}
			if jsonOnePass && gz && ro.parallel > 1 {
				if bs, err := openGzipJSONRanges(ro, src, opts.Target); bs != nil || err != nil {
					return bs, err
				}
			}
			if jsonOnePass {
				return openJSONInto(ro, src, gz, opts.Target)
			}
			return openJSON(ro, src, gz, opts.Target)
		}
		return openText(ctx, ro, src, gz)
	}
	bs, err := open()
	if err != nil {
		return err
	}
	defer bs.close()
	if decodeHook != nil {
		decodeHook(src.Key)
	}
	if skipping {
		out.lastPiece = func(d *Decoded) error { return setAside(ro, bs, gz, d, out.rows) }
	}
	if err := checkNames(ro.key, bs.schema()); err != nil {
		return err
	}
	if opts.CheckColumns != nil {
		if err := opts.CheckColumns(bs.schema()); err != nil {
			return err
		}
	}
	switch {
	case opts.Target != nil && evolving:
		err = decodeEvolve(ctx, ro, bs, open, opts.Target, opts.TimeColumn, out)
	case opts.Target != nil:
		err = decodeInto(ctx, ro, bs, opts.Target, opts.TimeColumn, out)
	default:
		err = decodeInfer(ctx, ro, bs, open, format != FormatParquet, opts.TimeColumn, out)
	}
	var ce *callerError
	if g, ok := bs.(*gzipRanges); ok && g.csv != nil && errors.Is(err, errJSONScan) && ctx.Err() == nil {
		// A quote, or an error, in a block: the sequential read judges
		// (and words) it.
		bs.close()
		opts.Parallelism = 1
		out.restart()
		return decodeFile(ctx, src, opts, evolving, skipping, out)
	}
	if jsonOnePass && err != nil && ctx.Err() == nil && !errors.As(err, &ce) {
		// Anything the one pass refuses, the two passes judge (and word).
		bs.close()
		out.restart()
		opts.jsonTwoPasses = true
		return decodeFile(ctx, src, opts, evolving, skipping, out)
	}
	if err != nil && ro.skipRows != nil {
		ro.skipRows.reset() // no piece holds them
	}
	var fe *FileError
	if !errors.As(err, &fe) || fe.Row == 0 || ctx.Err() != nil || format == FormatParquet {
		return err
	}
	if _, chunked := bs.(*chunkedText); chunked {
		// Which of several bad rows is reported depends on the batches
		// (the first batch with a problem; in it a CSV error before a
		// value error, else the first column in table order): decode
		// the bad file again sequentially to report exactly its error.
		bs.close()
		opts.Parallelism = 1
		out.restart()
		return decodeFile(ctx, src, opts, evolving, skipping, out)
	}
	switch bs := bs.(type) {
	case *textSource:
		addLine(ro, src, gz, bs.cols.read, fe)
	case *jsonSource:
		if fe.Line == 0 {
			fe.Line = locateJSONRow(ro, src, gz, fe.Row)
		}
	}
	return err
}

// setAside completes the last piece d of a file decoded with
// OnErrorSkipRows (rows: the rows of all its pieces): the rows of the file
// set aside, or the error that refuses it when they are more than
// MaxBadRows allows.
func setAside(ro *resolved, bs batchSource, gz bool, d *Decoded, rows int64) error {
	s := ro.skipRows
	if len(s.rejected) == 0 {
		return nil
	}
	if s.max.exceeded(int64(len(s.rejected)), rows+int64(len(s.rejected))) {
		return s.tooMany(rows + int64(len(s.rejected)))
	}
	// The CSV reader reads ahead of the conversion: rowFilter's rows
	// come first.
	slices.SortStableFunc(s.rejected, func(a, b RejectedRow) int { return cmp.Compare(a.Row, b.Row) })
	d.Rejected = s.rejected
	d.skip = &skipState{ro: ro, gz: gz, rows: s}
	if ts, ok := bs.(*textSource); ok {
		d.skip.header = ts.cols.read
	}
	return nil
}

// batchesPerPiece is how many batches at least a piece of
// DecodeOptions.PieceBytes holds: a batch takes at most this part of it,
// so that a piece is not cut a whole batch past its size.
const batchesPerPiece = 4

// pieceRows is the most rows of a batch whose rows take rowBytes each
// (an estimate), under DecodeOptions.PieceBytes; at least 256 rows.
func pieceRows(ro *resolved, rowBytes int64) int64 {
	if ro.pieceBytes <= 0 {
		return math.MaxInt64
	}
	return max(ro.pieceBytes/(batchesPerPiece*rowBytes), 256)
}

// resolveOptions validates opts and fills in defaults.
func resolveOptions(key string, opts DecodeOptions) (*resolved, error) {
	unit, set, ok := parseTimeUnit(opts.TimeUnit)
	if !ok {
		return nil, &FileError{Key: key, Reason: fmt.Sprintf("invalid time unit %q (expected s, ms, us or ns)", opts.TimeUnit)}
	}
	ro := &resolved{key: key, mem: opts.Mem, loc: opts.AssumeLocation, epoch: unit, epochSet: set, batchRows: opts.BatchRows,
		parallel: opts.Parallelism, chunkBytes: opts.ChunkBytes, comma: ',', decimalComma: opts.CSV.DecimalComma,
		nulls: append([]string{""}, opts.CSV.Null...), columns: opts.Columns, evolve: opts.Evolve, pieceBytes: opts.PieceBytes,
		renames: opts.Renames, maxRecord: cmp.Or(opts.MaxRecordBytes, DefaultMaxRecordBytes)}
	if d := opts.CSV.Delimiter; d != 0 {
		if !validDelimiter(d) {
			return nil, &FileError{Key: key, Reason: fmt.Sprintf("invalid CSV delimiter %s", strconv.QuoteRune(d))}
		}
		ro.comma, ro.delimiterSet = d, true
	}
	if _, err := ParseEvolution(string(opts.Evolve)); err != nil {
		return nil, &FileError{Key: key, Reason: err.Error()}
	}
	if _, err := ParseOnError(string(opts.OnError)); err != nil {
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

// decodeInto streams batches through a conformer for an existing table
// into pieces.
func decodeInto(ctx context.Context, ro *resolved, bs batchSource, target *arrow.Schema, timeCol string, out *pieces) error {
	if ct, ok := bs.(*chunkedText); ok {
		ct.cols = numbersAsTarget(ct.cols, target, ro.decimalComma)
	}
	if g, ok := bs.(*gzipRanges); ok && g.csv != nil {
		g.csv.cols = numbersAsTarget(g.csv.cols, target, ro.decimalComma)
	}
	conf, err := newConformer(ro, bs.schema(), target, timeCol)
	if err != nil {
		return err
	}
	// A chunked source converts on its workers.
	ct, converted := bs.(*chunkedText)
	if converted {
		ct.conv = conf.convert
	}
	if jr, ok := bs.(*jsonRanges); ok {
		jr.conv, converted = conf.convert, true
	}
	if gr, ok := bs.(*gzipRanges); ok {
		gr.conv, converted = conf.convert, true
		if gr.csv != nil {
			gr.csv.conv = conf.convert
		}
	}
	out.begin(ro, target, timeCol)
	var rows int64 // rows of the source so far (with those set aside)
	for {
		if err := ctx.Err(); err != nil {
			return &FileError{Key: ro.key, Reason: "decoding cancelled", Err: err}
		}
		rec, err := bs.next()
		if err != nil {
			return err
		}
		if rec == nil {
			break
		}
		conv, n := rec, rec.NumRows()
		if !converted {
			conv, err = conf.convert(rec, rows)
			rec.Release()
			if err != nil {
				return err
			}
		}
		rows += n
		if err := out.add(conv, bs.consumed()); err != nil {
			return err
		}
	}
	return out.finish()
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

// decodeInfer infers the schema from every batch (inference), then
// converts them to it (scanThenDecode).
func decodeInfer(ctx context.Context, ro *resolved, bs batchSource, reopen func() (batchSource, error),
	fromText bool, timeCol string, out *pieces) error {
	inf := newInference(ro, bs.schema(), fromText, timeCol)
	return scanThenDecode(ctx, ro, bs, reopen, inf.add, func() (*arrow.Schema, string, error) {
		sc, tc, err := inf.schema()
		if err == nil && inf.rows == 0 {
			err = &FileError{Key: ro.key, Err: ErrNoRows}
		}
		return sc, tc, err
	}, out)
}

// scanThenDecode reads every batch of bs and shows it to look; then
// decided gives the schema and time column they decode to, and the batches
// are converted to it into pieces. The batches are kept for that while
// they fit one piece; when they do not, the file is read again (reopen)
// and decoded into the schema as into an existing table's.
func scanThenDecode(ctx context.Context, ro *resolved, bs batchSource, reopen func() (batchSource, error),
	look func(arrow.RecordBatch), decided func() (*arrow.Schema, string, error), out *pieces) error {
	var kept []arrow.RecordBatch
	defer func() { ReleaseAll(kept) }()
	keep := true
	for {
		if err := ctx.Err(); err != nil {
			return &FileError{Key: ro.key, Reason: "decoding cancelled", Err: err}
		}
		rec, err := bs.next()
		if err != nil {
			return err
		}
		if rec == nil {
			break
		}
		look(rec)
		if keep && out.limit > 0 && bs.consumed() > out.limit {
			ReleaseAll(kept)
			kept, keep = nil, false
		}
		if keep {
			kept = append(kept, rec)
		} else {
			rec.Release()
		}
	}
	sc, tc, err := decided()
	if err != nil {
		return err
	}
	if !keep {
		again, err := reopen()
		if err != nil {
			return err
		}
		defer again.close()
		return decodeInto(ctx, ro, again, sc, tc, out)
	}
	conf, err := newConformer(ro, bs.schema(), sc, tc)
	if err != nil {
		return err
	}
	out.begin(ro, sc, tc)
	converted, stop := convertKept(ctx, conf, kept, ro.skipRows == nil && convertsOnWorkers(bs))
	defer stop()
	for i := range kept {
		conv, err := converted(i)
		if err != nil {
			return err
		}
		kept[i].Release()
		kept[i] = nil
		if err := out.add(conv, 0); err != nil { // all of them fit one piece
			return err
		}
	}
	return out.finish()
}

// convertsOnWorkers reports whether bs is a source whose batches are
// converted on several goroutines against a table (decodeInto): text
// chunks, JSON Lines ranges, gzipped ranges.
func convertsOnWorkers(bs batchSource) bool {
	switch bs.(type) {
	case *chunkedText, *jsonRanges, *gzipRanges:
		return true
	}
	return false
}

// convertKept converts the batches kept by scanThenDecode (in file order,
// their rows counted from the first): converted(i) returns batch i's
// result, asked for in order, and stop ends the conversion (the caller
// defers it). The batches are converted on every core when parallel (for the
// sources whose workers convert their batches concurrently against a table,
// convertsOnWorkers; not under --on-error skip-rows, whose rows set aside
// are counted in order), at most one per core ahead of the caller, so that the batches
// held twice stay few; else one by one as asked. The error of the first
// batch that fails is the one one pass gives. stop releases the batches
// converted and not asked for.
func convertKept(ctx context.Context, conf *conformer, kept []arrow.RecordBatch, parallel bool) (converted func(i int) (arrow.RecordBatch, error), stop func()) {
	bases := make([]int64, len(kept))
	var rows int64
	for i, rec := range kept {
		bases[i] = rows
		rows += rec.NumRows()
	}
	convert := func(i int) (rec arrow.RecordBatch, err error) {
		defer recoverTo(&err, conf.ro.key, "decoding the file", nil) // a reader's panic refuses its file alone
		if err := ctx.Err(); err != nil {
			return nil, &FileError{Key: conf.ro.key, Reason: "decoding cancelled", Err: err}
		}
		return conf.convert(kept[i], bases[i])
	}
	workers := runtime.GOMAXPROCS(0)
	if !parallel || workers < 2 || len(kept) < 2 {
		return convert, func() {}
	}
	type result struct {
		rec arrow.RecordBatch
		err error
	}
	results := make([]chan result, len(kept))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	// The batches to convert, workers of them at the start, one more each
	// time the caller takes a result.
	jobs := make(chan int, len(kept))
	fed := 0
	feed := func() {
		if fed < len(kept) {
			jobs <- fed
			fed++
		}
		if fed == len(kept) { // once: fed then passes len(kept)
			close(jobs)
			fed++
		}
	}
	for range workers {
		feed()
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				select {
				case <-done:
					return
				default:
				}
				rec, err := convert(i)
				results[i] <- result{rec, err}
			}
		})
	}
	converted = func(i int) (arrow.RecordBatch, error) {
		r := <-results[i]
		feed()
		return r.rec, r.err
	}
	stop = sync.OnceFunc(func() {
		close(done)
		if fed <= len(kept) { // the caller stopped early: no more jobs
			close(jobs)
		}
		wg.Wait()
		for _, c := range results {
			select {
			case r := <-c:
				if r.rec != nil {
					r.rec.Release()
				}
			default:
			}
		}
	})
	return converted, stop
}

// ReleaseAll releases every batch of recs that is not nil.
func ReleaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		if r != nil {
			r.Release()
		}
	}
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
// the end; the caller owns (releases) each returned batch. consumed counts
// the decoded bytes of the batches returned so far, in the unit of
// DecodeOptions.PieceBytes.
type batchSource interface {
	schema() *arrow.Schema
	next() (arrow.RecordBatch, error)
	consumed() int64
	close()
}

// parquetSource reads a Parquet file with the registered ParquetFormat
// (parquetformat.go), all columns and row groups, BatchRows rows per batch.
type parquetSource struct {
	ctx   context.Context
	ro    *resolved
	pa    ParquetFile
	rr    array.RecordReader
	sc    *arrow.Schema
	bytes int64 // Arrow bytes of the batches returned
	rows  int64 // rows of the batches returned
}

func openParquet(ctx context.Context, ro *resolved, src Source) (_ batchSource, err error) {
	pa, err := openParquetFile(ctx, ro, src)
	if err != nil {
		return nil, err
	}
	sc := pa.Schema()
	defer func() {
		if v := recover(); v != nil {
			_ = pa.Close()
			err = Recovered(ro.key, "the reader", "opening the file's columns", "", v)
		}
	}()
	if err := pa.Verify(ctx); err != nil {
		_ = pa.Close()
		return nil, err
	}
	rr, err := pa.Records(ctx)
	if err != nil {
		_ = pa.Close()
		return nil, parquetProblem(ro.key, "", "cannot read parquet data", err)
	}
	if len(ro.renames) > 0 {
		names := make([]string, sc.NumFields())
		for i, f := range sc.Fields() {
			names[i] = f.Name
		}
		if names, err = renameColumns(ro, names); err != nil {
			rr.Release()
			_ = pa.Close()
			return nil, err
		}
		fields := sc.Fields()
		for i := range fields {
			fields[i].Name = names[i]
		}
		md := sc.Metadata()
		sc = arrow.NewSchema(fields, &md)
	}
	return &parquetSource{ctx: ctx, ro: ro, pa: pa, rr: rr, sc: sc}, nil
}

// renameColumns applies DecodeOptions.Renames to a file's column names. A
// file with both a column and the name it is renamed to is refused: which
// one holds the values would be a guess.
func renameColumns(ro *resolved, names []string) ([]string, error) {
	if len(ro.renames) == 0 {
		return names, nil
	}
	for _, n := range names {
		for from, to := range ro.renames {
			if n == to && slices.Contains(names, from) {
				return nil, &FileError{Key: ro.key, Column: to, Reason: fmt.Sprintf("the file has both column %q and column %q, which the source profile reads as %q: remove one of them", from, to, to)}
			}
		}
	}
	out := slices.Clone(names)
	for i, n := range out {
		if to, ok := ro.renames[n]; ok {
			out[i] = to
		}
	}
	return out, nil
}

// openParquetFile reads the footer and the Arrow schema of a Parquet file
// with the registered ParquetFormat. The caller closes the file. A footer
// that does not read is refused saying why where that can be told: bytes
// after the end of the file (parquetEnd), or no PAR1 at its end.
func openParquetFile(ctx context.Context, ro *resolved, src Source) (ParquetFile, error) {
	if parquetFormat == nil {
		return nil, parquetProblem(ro.key, "", noParquetFormat, nil)
	}
	if reason := footerTooLarge(src); reason != "" {
		return nil, parquetProblem(ro.key, "", "cannot read parquet data: "+reason, nil)
	}
	opts := ParquetOpenOptions{Key: ro.key, Mem: ro.mem, BatchRows: ro.batchRows,
		PieceRows: func(rowBytes int64) int64 { return pieceRows(ro, rowBytes) }}
	pa, err := parquetFormat.Open(ctx, src, opts)
	if err == nil {
		return pa, nil
	}
	var fe *FileError
	if errors.As(err, &fe) {
		return nil, err
	}
	if end, ok := parquetEnd(src); ok {
		return nil, parquetProblem(ro.key, "", fmt.Sprintf("%d bytes after the end of the Parquet file (its footer ends at byte %d): the file was appended to or padded; upload the file as the writer wrote it", src.Size-end, end), nil)
	}
	if ends, _ := endsInPAR1(src.R, src.Size); !ends {
		return nil, parquetProblem(ro.key, "", "not a readable parquet file: it does not end in PAR1, so its footer is missing: "+
			"the file was cut short (sent before its writer closed it, or a transfer broke off); send the complete file again", err)
	}
	return nil, parquetProblem(ro.key, "", "not a readable parquet file", err)
}

// asText reads the binary columns of rec that sc gives as text (ENUM
// columns, decode/arrowpq's enumsAsText) as strings of the same bytes.
// rec is released when a new batch is returned.
func asText(rec arrow.RecordBatch, sc *arrow.Schema) arrow.RecordBatch {
	var cols []arrow.Array
	for j := range int(rec.NumCols()) {
		want := sc.Field(j).Type
		got := rec.Column(j).DataType()
		if (got.ID() != arrow.BINARY || want.ID() != arrow.STRING) && (got.ID() != arrow.LARGE_BINARY || want.ID() != arrow.LARGE_STRING) {
			continue
		}
		if cols == nil {
			cols = slices.Clone(rec.Columns())
		}
		d := rec.Column(j).Data()
		nd := array.NewData(want, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
		cols[j] = array.MakeFromData(nd)
		nd.Release()
		defer cols[j].Release()
	}
	if cols == nil {
		return rec
	}
	fields := rec.Schema().Fields()
	for j := range fields {
		fields[j].Type = cols[j].DataType()
	}
	md := rec.Schema().Metadata()
	out := array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, rec.NumRows())
	rec.Release()
	return out
}

// endsInPAR1 reports whether the size bytes of r end in PAR1, as a whole
// Parquet file does; an error when its last bytes cannot be read.
func endsInPAR1(r io.ReaderAt, size int64) (bool, error) {
	if size < int64(len(parquetMagic)) {
		return false, nil
	}
	tail := make([]byte, len(parquetMagic))
	if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return bytes.Equal(tail, parquetMagic), nil
}

// parquetEndScan bounds how far from its end a file that does not end in
// PAR1 is searched for the end of a Parquet file followed by other bytes.
const parquetEndScan = 64 << 20

// parquetEnd finds where a Parquet file followed by other bytes ends: the
// last "PAR1" within parquetEndScan bytes of the file's end, before which
// a footer length and a footer that reads lie. ok is false when the file
// ends in PAR1 (its own problem is another) or no such end is found, as
// in a truncated file.
func parquetEnd(src Source) (end int64, ok bool) {
	defer func() {
		if recover() != nil {
			end, ok = 0, false
		}
	}()
	const minFile = 12 // magic, footer length, magic
	if src.Size <= minFile {
		return 0, false
	}
	if ends, err := endsInPAR1(src.R, src.Size); err != nil || ends {
		return 0, false
	}
	const chunk = 64 << 10
	buf := make([]byte, chunk+len(parquetMagic)-1)
	tries := 0
	for hi := src.Size - 1; hi > minFile-int64(len(parquetMagic)) && src.Size-hi < parquetEndScan && tries < 16; hi -= chunk {
		lo := max(hi-chunk, 0)
		b := buf[:min(hi+int64(len(parquetMagic))-1, src.Size)-lo]
		if _, err := src.R.ReadAt(b, lo); err != nil && !errors.Is(err, io.EOF) {
			return 0, false
		}
		for i := bytes.LastIndex(b, parquetMagic); i >= 0; i = bytes.LastIndex(b[:i+len(parquetMagic)-1], parquetMagic) {
			at := lo + int64(i)
			if at+int64(len(parquetMagic)) >= src.Size || at < minFile-int64(len(parquetMagic)) {
				continue
			}
			var n [4]byte
			if _, err := src.R.ReadAt(n[:], at-4); err != nil {
				return 0, false
			}
			if footer := int64(binary.LittleEndian.Uint32(n[:])); footer == 0 || footer > at-4-int64(len(parquetMagic)) || footer > MaxParquetFooterBytes {
				continue
			}
			tries++
			if parquetFormat.FooterReads(src.R, at+int64(len(parquetMagic))) {
				return at + int64(len(parquetMagic)), true
			}
			if tries >= 16 {
				return 0, false
			}
		}
	}
	return 0, false
}

func (p *parquetSource) schema() *arrow.Schema { return p.sc }

func (p *parquetSource) next() (_ arrow.RecordBatch, err error) {
	defer func() {
		if v := recover(); v != nil {
			fe := Recovered(p.ro.key, "the reader", "decoding the file", safeWhere(p.rowGroupAt), v)
			fe.Column = p.panickingColumn()
			err = fe
		}
	}()
	for p.rr.Next() {
		rec := p.rr.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		rec = asText(rec, p.sc)
		p.bytes += recordBytes(rec)
		p.rows += rec.NumRows()
		return rec, nil
	}
	if err := p.rr.Err(); err != nil {
		return nil, p.pa.LocateReadError(p.ctx, err)
	}
	// A reader may end early without an error on a damaged footer (a
	// negative value count in a column chunk's metadata makes pqarrow read
	// no row): the rows read must be the rows the footer says.
	if n := p.pa.NumRows(); p.rows != n {
		return nil, parquetProblem(p.ro.key, "", fmt.Sprintf("cannot read parquet data: its footer says %d rows, %d were read (the file is damaged)", n, p.rows), nil)
	}
	return nil, nil
}

func (p *parquetSource) consumed() int64 { return p.bytes }

// panickingColumn is the name of the first column whose reading on its
// own panics, after the reading of every column at once did: "" when none
// does (or the file cannot be opened again).
func (p *parquetSource) panickingColumn() (name string) {
	defer func() {
		if recover() != nil {
			name = ""
		}
	}()
	sc := p.pa.Schema()
	for i := range sc.NumFields() {
		if columnPanics(p.ctx, p.pa, i, int64(p.ro.batchRows)) {
			return sc.Field(i).Name
		}
	}
	return ""
}

// columnPanics reports whether reading column i of pa, batch rows at a
// time, panics.
func columnPanics(ctx context.Context, pa ParquetFile, i int, batch int64) (panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	_, _ = pa.ReadColumn(ctx, i, batch)
	return false
}

// rowGroupAt says which row group the batch after those returned starts
// in, and from which row: where a read that panicked was.
func (p *parquetSource) rowGroupAt() string { return p.pa.RowGroupAt(p.rows) }

// recordBytes is the size of rec's buffers (arrow-go's util.TotalRecordSize,
// whose package would bring protobuf dependencies along).
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += arrayBytes(c.Data())
	}
	return n
}

func arrayBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += arrayBytes(c)
	}
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		n += arrayBytes(dict)
	}
	return n
}

func (p *parquetSource) close() {
	p.rr.Release()
	_ = p.pa.Close()
}

// ParseFormat reads a format's name: csv, tsv, json or parquet.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case FormatCSV, FormatTSV, FormatJSON, FormatParquet:
		return f, nil
	}
	return "", fmt.Errorf("unknown file format %q: expected csv, tsv, json or parquet", s)
}
