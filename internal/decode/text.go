package decode

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
)

// textSource reads CSV/TSV with arrow-go's csv reader, every column as a
// nullable string, empty cells as nulls.
type textSource struct {
	ro     *resolved
	cols   textColumns
	r      *arrowcsv.Reader
	stream *textStream
	ends   *lineEnds // the text the reader reads
	closer io.Closer
	rows   int64 // data rows returned so far
	// newReader opens the CSV reader of the next segment of ends (its
	// records without the header).
	newReader func() *arrowcsv.Reader
	lineBase  int64 // lines of the text before the reader's segment
	// broken is the error of a row whose structure is broken (the wrong
	// number of fields, a bare quote), returned once the rows of its batch
	// before it are: a value refused among them is the file's first
	// problem, and the one reported.
	broken error
}

// textColumns are the columns of a text file: all of them as the CSV reader
// reads them (read), and those a batch keeps (out): all but the unnamed
// trailing columns (a delimiter at the end of every line), which must be
// empty.
type textColumns struct {
	read, out *arrow.Schema
}

// newTextColumns names the string columns of a header; trailing empty names
// are left out of out.
func newTextColumns(header []string) textColumns {
	fields := make([]arrow.Field, len(header))
	for i, name := range header {
		fields[i] = arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	keep := len(fields)
	for keep > 1 && fields[keep-1].Name == "" {
		keep--
	}
	read := arrow.NewSchema(fields, nil)
	if keep == len(fields) {
		return textColumns{read: read, out: read}
	}
	return textColumns{read: read, out: arrow.NewSchema(fields[:keep], nil)}
}

// trim drops the unnamed trailing columns of rec (read with cols.read),
// which must hold no value; rowBase is the number of data rows before rec.
// rec is released when a new batch is returned, or on error.
func (c textColumns) trim(ro *resolved, rec arrow.RecordBatch, rowBase int64) (arrow.RecordBatch, error) {
	keep := c.out.NumFields()
	if keep == c.read.NumFields() {
		return rec, nil
	}
	for j := keep; j < int(rec.NumCols()); j++ {
		col := rec.Column(j)
		if col.NullN() == col.Len() {
			continue
		}
		get := textValues(col)
		for i := 0; i < col.Len(); i++ {
			if col.IsValid(i) {
				v := strings.Clone(get(i)) // rec is released before the error is made
				rec.Release()
				return nil, &FileError{Key: ro.key, Row: rowBase + int64(i) + 1, Value: v,
					Reason: fmt.Sprintf("column %d has no name in the header but holds the value %s: name the column, or remove the value (an unnamed column is dropped only when it is empty in every row)", j+1, quoteValue(v))}
			}
		}
	}
	out := array.NewRecordBatch(c.out, rec.Columns()[:keep], rec.NumRows())
	rec.Release()
	return out, nil
}

// sniffBytes is how much of the (decompressed) start of a text file is
// checked for whole-file problems.
const sniffBytes = 64 << 10

// openTextStream returns the decompressed byte stream of the file after a
// leading UTF-8 byte order mark and an Excel separator hint ("sep=;" as
// the whole first line), whose separator it makes ro.comma (the file's own
// word wins over the setting), with the line numbers of the file one more
// than those of the stream (ro.lineOffset). With sniff set it checks the
// start of the text for whole-file problems first (checkTextStart).
func openTextStream(ro *resolved, src Source, gz, sniff bool) (*textStream, io.Closer, error) {
	var r io.Reader = io.NewSectionReader(src.R, 0, src.Size)
	var closer io.Closer = nopCloser{}
	if gz {
		zr, err := newGzipStream(r, src.Size)
		if err != nil {
			return nil, nil, textReadError(ro, 0, 0, err)
		}
		r, closer = zr, zr
	}
	r = newLineLimit(r, ro.maxRecord)
	// A small uncompressed file needs no larger buffer than itself
	// (bufio's minimum is 16 bytes); a decode opens the stream twice.
	size := sniffBytes
	if !gz && src.Size < int64(size) {
		size = int(max(src.Size, 16))
	}
	read := &countingReader{r: r}
	br := bufio.NewReaderSize(read, size)
	head, err := br.Peek(size)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		_ = closer.Close()
		return nil, nil, textReadError(ro, 0, 0, err)
	}
	bom := bytes.HasPrefix(head, utf8BOM)
	var prefix []byte
	if bom {
		_, _ = br.Discard(len(utf8BOM))
		prefix, head = utf8BOM, head[len(utf8BOM):]
	}
	line := head
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i+1]
	}
	sep, isSep, problem := sepLine(string(line))
	if isSep && problem != "" {
		_ = closer.Close()
		return nil, nil, &FileError{Key: ro.key, Line: 1, Reason: problem}
	}
	if isSep {
		_, _ = br.Discard(len(line))
		prefix = append(slices.Clip(prefix), line...)
		head = head[len(line):]
		ro.comma, ro.lineOffset = sep, 1
	}
	if sniff {
		if err := checkTextStart(ro, head, gz, bom); err != nil {
			_ = closer.Close()
			return nil, nil, err
		}
	}
	lineBytes := len(head) / max(bytes.Count(head, []byte{'\n'}), 1)
	return &textStream{Reader: br, read: read, bom: bom, prefix: prefix, lineBytes: max(lineBytes, 1)}, closer, nil
}

// textStream is the decompressed text of a file after its byte order mark
// and its separator hint.
type textStream struct {
	*bufio.Reader
	read   *countingReader // the decompressed bytes read into the buffer
	bom    bool            // a UTF-8 byte order mark was skipped
	prefix []byte          // the bytes skipped: the mark and the hint's line
	// lineBytes is the mean length of the lines at the start of the text.
	lineBytes int
}

// consumed is the number of decompressed bytes read from the stream (the
// CSV reader's own small buffer aside).
func (t *textStream) consumed() int64 { return t.read.n - int64(t.Buffered()) }

// sepLine reads an Excel separator hint, "sep=X" as the whole first line
// (quoted or not, with its line end), which Excel writes in front of CSV
// exports in locales whose list separator is not a comma. isSep says
// whether line is one; problem why its separator cannot be used.
func sepLine(line string) (sep rune, isSep bool, problem string) {
	l := strings.TrimRight(line, "\r\n")
	if t := strings.TrimSpace(l); len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
		l = t[1 : len(t)-1]
	}
	if len(l) < 4 || !strings.EqualFold(l[:4], "sep=") {
		return 0, false, ""
	}
	r, size := utf8.DecodeRuneInString(l[4:])
	switch {
	case size == 0:
		return 0, true, fmt.Sprintf("the first line %s is an Excel separator hint without a separator", strconv.Quote(l))
	case 4+size != len(l):
		return 0, true, fmt.Sprintf("the first line %s is not an Excel separator hint of one character (sep=; or sep=,)", strconv.Quote(l))
	case !validDelimiter(r):
		return 0, true, fmt.Sprintf("the first line %s names %s as the separator, which cannot separate CSV fields", strconv.Quote(l), strconv.QuoteRune(r))
	}
	return r, true, ""
}

// checkHeaderSeparator refuses a header that the file's separator leaves
// as one column holding another likely separator (",", ";", tab, "|"):
// "time;device;v" read with commas. The reason names the separator used,
// where it came from (the file's Excel separator hint, .tsv, the
// --csv-delimiter setting or its default) and the fix, which beats a
// reason about a column named "time;device;v" (not in the table, or no
// time column).
func checkHeaderSeparator(ro *resolved, header []string) error {
	if len(header) != 1 {
		return nil
	}
	for _, d := range []rune{',', ';', '\t', '|'} {
		if d == ro.comma || !strings.ContainsRune(header[0], d) {
			continue
		}
		found := fmt.Sprintf("the header is one column, %s: fields are read as separated by %s", quoteValue(header[0]), strconv.QuoteRune(ro.comma))
		sepHint := "sep=" + string(d)
		if d == '\t' {
			sepHint = "sep= followed by a tab"
		}
		var reason string
		switch {
		case ro.lineOffset > 0:
			return &FileError{Key: ro.key, Line: 2, Reason: fmt.Sprintf("the header is one column, %s: the first line (an Excel separator hint) says fields are separated by %s, but the header is separated by %s; fix or remove that line",
				quoteValue(header[0]), strconv.QuoteRune(ro.comma), strconv.QuoteRune(d))}
		case ro.tsv:
			rename := "name the file .csv"
			if d != ',' {
				rename += " and give --csv-delimiter " + shellQuote(d)
			}
			reason = fmt.Sprintf("%s (the file is named .tsv), but the header is separated by %s: %s, or make the file's first line %s",
				found, strconv.QuoteRune(d), rename, sepHint)
		case ro.delimiterSet:
			reason = fmt.Sprintf("%s (--csv-delimiter), but the header is separated by %s: give --csv-delimiter %s, or make the file's first line %s",
				found, strconv.QuoteRune(d), shellQuote(d), sepHint)
		default:
			reason = fmt.Sprintf("%s (the default), but the header is separated by %s: give --csv-delimiter %s, or make the file's first line %s",
				found, strconv.QuoteRune(d), shellQuote(d), sepHint)
		}
		return &FileError{Key: ro.key, Line: 1, Reason: reason}
	}
	return nil
}

// shellQuote writes a delimiter as a shell word for a flag value: ';',
// '|', $'\t'.
func shellQuote(d rune) string {
	if d == '\t' {
		return `$'\t'`
	}
	return "'" + string(d) + "'"
}

// validDelimiter reports whether r can separate CSV fields (encoding/csv:
// not a quote, a line end, the replacement character or an invalid rune).
func validDelimiter(r rune) bool {
	return r != 0 && r != '"' && r != '\r' && r != '\n' && utf8.ValidRune(r) && r != utf8.RuneError
}

// openText reads the header in a first pass (to name the string columns and
// to report header problems precisely), then opens the data pass: in
// parallel chunks (chunkedText) when the file is large, uncompressed and
// safe to split (planTextChunks), as one chunk when it is small and would
// be safe to split (wholeTextChunk: the chunk scan of csvfast.go reads it
// faster than the CSV reader), else sequentially (textSource). Fields
// are separated by ro.comma (a separator hint changes it).
func openText(ctx context.Context, ro *resolved, src Source, gz bool) (batchSource, error) {
	hr, hc, err := openTextStream(ro, src, gz, true)
	if err != nil {
		return nil, err
	}
	comma := ro.comma
	cr := csv.NewReader(hr)
	cr.Comma = comma
	header, err := cr.Read()
	_ = hc.Close()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FileError{Key: ro.key, Reason: "empty file (no header line)"}
		}
		return nil, textReadError(ro, 0, 0, err)
	}
	if err := checkHeaderSeparator(ro, header); err != nil {
		return nil, err
	}
	if header, err = renameColumns(ro, header); err != nil {
		return nil, err
	}
	cols := newTextColumns(header)
	if err := checkNames(ro.key, cols.out); err != nil {
		return nil, err
	}
	if !gz && ro.parallel > 1 && ro.lineOffset == 0 {
		plan := planTextChunks
		if src.Size <= ro.chunkBytes {
			plan = wholeTextChunk
		}
		header, chunks, err := plan(src.R, src.Size, ro.chunkBytes, ro.parallel)
		if err != nil {
			return nil, &FileError{Key: ro.key, Reason: "cannot read file", Err: err}
		}
		if chunks != nil {
			return &chunkedText{ctx: ctx, ro: ro, src: src, cols: cols, comma: comma, header: header,
				chunks: chunks, workers: ro.parallel}, nil
		}
	}

	if gz && ro.textBlocks && ro.parallel > 1 && ro.lineOffset == 0 {
		if g := openGzipTextRanges(ctx, ro, src, cols, comma); g != nil {
			return g, nil
		}
	}

	dr, dc, err := openTextStream(ro, src, gz, false)
	if err != nil {
		return nil, err
	}
	// The reader preallocates builders for a whole chunk: size it to the
	// file (a row takes at least 16 bytes; gzip shrinks text ~8x) so that
	// small files do not allocate for 64K rows.
	est := src.Size / 16
	if gz {
		est *= 8
	}
	chunk := int(min(int64(ro.batchRows), max(est, 256), pieceRows(ro, int64(dr.lineBytes))))
	var data io.Reader = dr
	if ro.skipRows != nil {
		data = newRowFilter(dr, ro, cols) // records the CSV reader would refuse are set aside
	}
	ends := newLineEnds(data, comma, true)
	// A batch is cut by its bytes as well as by its rows: rows far longer
	// than the first lines (whose length sized chunk) would otherwise make
	// batches of many times a piece. Each segment of ends is read by a
	// CSV reader of its own.
	ends.segment = pieceText(ro)
	reader := func(header bool) *arrowcsv.Reader {
		return arrowcsv.NewReader(ends, cols.read,
			arrowcsv.WithHeader(header),
			arrowcsv.WithComma(comma),
			arrowcsv.WithNullReader(true, ro.nulls...),
			arrowcsv.WithChunk(chunk),
			arrowcsv.WithAllocator(ro.mem),
		)
	}
	r := reader(true)
	return &textSource{ro: ro, cols: cols, r: r, stream: dr, ends: ends, closer: dc,
		newReader: func() *arrowcsv.Reader { return reader(false) }}, nil
}

// pieceText is the most text of a batch of a sequential text read
// (textSource): a batchesPerPiece part of DecodeOptions.PieceBytes, 0 (no
// cut) without pieces.
func pieceText(ro *resolved) int64 {
	if ro.pieceBytes <= 0 {
		return 0
	}
	return max(ro.pieceBytes/batchesPerPiece, 1)
}

func (t *textSource) schema() *arrow.Schema { return t.cols.out }

func (t *textSource) consumed() int64 { return t.stream.consumed() }

func (t *textSource) next() (arrow.RecordBatch, error) {
	if t.broken != nil {
		return nil, t.broken
	}
	ok := t.r.Next()
	for !ok && t.r.Err() == nil && t.ends.segmentEnded() {
		t.lineBase = t.ends.cutLines
		t.ends.nextSegment()
		t.r.Release()
		t.r = t.newReader()
		ok = t.r.Next()
	}
	if err := t.r.Err(); err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			// encoding/csv counts the lines of its segment.
			pe.StartLine += int(t.lineBase)
			pe.Line += int(t.lineBase)
		}
		var done int64
		if rec := t.r.RecordBatch(); rec != nil {
			done = rec.NumRows()
		}
		row := t.rows + done + 1
		if t.ro.skipRows != nil {
			row = t.ro.skipRows.fileRow(row)
		}
		t.broken = textReadError(t.ro, row, t.cols.read.NumFields(), t.ends.explain(err))
		if done == 0 {
			return nil, t.broken
		}
		// The rows before the broken one first (t.broken is returned
		// by the next call).
	} else if !ok {
		return nil, nil
	}
	rec := t.r.RecordBatch()
	rec.Retain()
	if rec.NumRows() == 0 {
		rec.Release()
		return nil, nil
	}
	rec, err := t.cols.trim(t.ro, rec, t.rows)
	if err != nil {
		return nil, err
	}
	t.rows += rec.NumRows()
	return rec, nil
}

func (t *textSource) close() {
	t.r.Release()
	_ = t.closer.Close()
}

// errFieldCount marks the FileError of a line with the wrong number of
// fields, so that Decode can add how many it had (locateRow).
var errFieldCount = errors.New("wrong number of fields")

// textReadError turns a CSV or gzip read error into a FileError. row is the
// data row being read (0 for the header), width the number of header fields.
func textReadError(ro *resolved, row int64, width int, err error) error {
	var se *streamError
	if errors.As(err, &se) {
		return &FileError{Key: ro.key, Reason: se.reason, Err: se.err}
	}
	var tl *recordTooLongError
	if errors.As(err, &tl) {
		return &FileError{Key: ro.key, Line: tl.line, Reason: tl.Error()} // lineLimit counts the lines of the whole text
	}
	var le *lineEndError
	if errors.As(err, &le) {
		// addLine names the column (le.field of the header).
		return &FileError{Key: ro.key, Row: row, Line: le.line + ro.lineOffset, Value: le.text, Reason: le.reason(), Err: le, brokenRecord: row > 0}
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		line := int64(pe.Line) + ro.lineOffset
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return &FileError{Key: ro.key, Row: row, Line: line, Err: errFieldCount,
				Reason: fmt.Sprintf("wrong number of fields (the header has %d)", width), brokenRecord: row > 0}
		}
		return &FileError{Key: ro.key, Row: row, Line: line,
			Reason: fmt.Sprintf("malformed csv at byte %d of the line: %v", pe.Column, pe.Err), brokenRecord: row > 0}
	}
	if errors.Is(err, arrowcsv.ErrMismatchFields) {
		return &FileError{Key: ro.key, Row: row, Err: errFieldCount, Reason: fmt.Sprintf("wrong number of fields (the header has %d)", width), brokenRecord: row > 0}
	}
	return &FileError{Key: ro.key, Row: row, Reason: "cannot read file", Err: err}
}

// locateRow finds data row row (1-based) of a text file by reading it again
// with encoding/csv as arrow-go's reader does: the line the row starts on,
// its number of fields, whether it holds a carriage return not followed by
// a line feed or a NUL byte, and the text of field col (0-based; "" when
// col is out of range). ok is false when the file ends or fails before the
// row. Only a refused file is read again, so this costs nothing on good
// files.
func locateRow(ro *resolved, src Source, gz bool, row int64, col int) (line int64, fields int, bareCR, nul bool, cell string, ok bool) {
	r, c, err := openTextStream(ro, src, gz, false)
	if err != nil {
		return 0, 0, false, false, "", false
	}
	defer c.Close()
	cr := csv.NewReader(r)
	cr.Comma = ro.comma
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	for i := int64(0); i <= row; i++ {
		rec, err := cr.Read()
		if err != nil {
			return 0, 0, false, false, "", false
		}
		if i == row {
			l, _ := cr.FieldPos(0)
			for _, f := range rec {
				bareCR = bareCR || strings.Contains(f, "\r")
				nul = nul || strings.Contains(f, "\x00")
			}
			if col >= 0 && col < len(rec) {
				cell = rec[col]
			}
			return int64(l) + ro.lineOffset, len(rec), bareCR, nul, cell, true
		}
	}
	return 0, 0, false, false, "", false
}

// addLine completes a row error of a text file (header: the file's
// columns) with its line and, for a line with the wrong number of fields,
// how many it has; a null in a required column that was a CSV.Null token
// ("NA") is said to be one, quoting it.
func addLine(ro *resolved, src Source, gz bool, header *arrow.Schema, fe *FileError) {
	if fe.Row <= 0 {
		return
	}
	col := -1
	if fe.nullCell && fe.Column != "" {
		if idx := header.FieldIndices(fe.Column); len(idx) > 0 {
			col = idx[0]
		}
	}
	var le *lineEndError
	if errors.As(fe.Err, &le) {
		if le.field < header.NumFields() {
			fe.Column = header.Field(le.field).Name
		}
		fe.Err = nil
		return
	}
	line, fields, bareCR, nul, cell, ok := locateRow(ro, src, gz, fe.Row, col)
	if !ok {
		return
	}
	width := header.NumFields()
	if cell != "" && slices.Contains(ro.nulls, cell) {
		fe.Value = cell
		fe.Reason = quoteValue(cell) + " is a null token (--csv-null) but the column is required"
	}
	if fe.Line == 0 {
		fe.Line = line
	}
	if errors.Is(fe.Err, errFieldCount) {
		fe.Err = nil
		fe.Reason = fmt.Sprintf("wrong number of fields: the line has %d, the header has %d", fields, width)
		if bareCR {
			fe.Reason += " (the line holds a carriage return without a line feed: line ends must be LF or CRLF, not CR alone)"
		}
		if nul {
			fe.Reason += " (the line holds NUL bytes: binary content, such as the zeros a file system leaves at the end of a file whose writing was cut off)"
		}
	}
}

// streamError is a problem with the bytes of the whole file, found while
// reading it (gzip data); reason says what was found and what to do.
type streamError struct {
	reason string
	err    error
}

func (e *streamError) Error() string { return e.reason }
func (e *streamError) Unwrap() error { return e.err }

// gzipStream decompresses a gzip file of one or more members (RFC 1952
// section 2.2: members may be concatenated) and refuses bytes after the last
// member that are not another member (padding, an appended copy of the
// text, a broken upload) instead of Go's "invalid header".
//
// The inflater is github.com/klauspost/compress's gzip, the standard
// library's API with a faster decoder: 1.5x the standard library's speed on
// a bench case's gzipped JSON Lines (1.27 GB/s against 0.85 GB/s of text on
// one core), where decompression on one goroutine is what a gzipped file's
// parsers on both cores wait for (docs/performance.md).
type gzipStream struct {
	in    *countingReader
	br    *bufio.Reader
	zr    *gzip.Reader
	size  int64
	guard expansionGuard
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func newGzipStream(r io.Reader, size int64) (*gzipStream, error) {
	in := &countingReader{r: r}
	g := &gzipStream{in: in, br: bufio.NewReader(in), size: size}
	g.guard.in = func() int64 { return in.n }
	head, _ := g.br.Peek(gzipHeaderPeek) // not consumed: the reader reads it again
	head = slices.Clone(head)
	zr, err := gzip.NewReader(g.br)
	if err != nil {
		if errors.Is(err, gzip.ErrHeader) {
			if what, n, exact := longGzipHeaderString(head); n > 0 {
				size := fmt.Sprintf("of %d bytes", n)
				if !exact {
					size = fmt.Sprintf("of more than %d bytes", n)
				}
				return nil, &streamError{reason: fmt.Sprintf("its gzip header stores a %s %s, longer than the %d the gzip reader reads "+
					"(the format sets no limit): compress the file again without storing its name (gzip -n) and upload it under a new key", what, size, gzipHeaderString-1), err: err}
			}
		}
		return nil, gzipError(err)
	}
	zr.Multistream(false)
	g.zr = zr
	return g, nil
}

func (g *gzipStream) Read(p []byte) (int, error) {
	for {
		n, err := g.zr.Read(p)
		if gerr := g.guard.add(n); gerr != nil {
			return n, gerr
		}
		if !errors.Is(err, io.EOF) {
			if err != nil {
				err = gzipError(err)
			}
			return n, err
		}
		// The end of a member: the end of the file, another member, or
		// bytes that are neither.
		if _, perr := g.br.Peek(1); errors.Is(perr, io.EOF) {
			return n, io.EOF
		}
		at := g.in.n - int64(g.br.Buffered())
		if rerr := g.zr.Reset(g.br); rerr != nil {
			return n, &streamError{reason: fmt.Sprintf("%d bytes after the end of the gzip data (at byte offset %d) are not gzip data: the file was appended to or padded after it was compressed; compress the text again into a new file", g.size-at, at)}
		}
		g.zr.Multistream(false)
		if n > 0 {
			return n, nil
		}
	}
}

func (g *gzipStream) Close() error { return g.zr.Close() }

// gzipHeaderString is the longest string of a gzip header (the original
// file name, the comment) the gzip reader reads, its NUL included;
// gzipHeaderPeek the bytes of a file's start kept to tell why its header
// was refused.
const (
	gzipHeaderString = 512
	gzipHeaderPeek   = 4096
)

// longGzipHeaderString reports which string of a gzip header (the file
// name or the comment) has no NUL within gzipHeaderString bytes, which the
// gzip reader refuses as a bad header: what it is and its length (n > 0),
// or, not exact, the bytes of it in head (no NUL among them); n is 0 when
// head is no gzip header or its strings are short.
func longGzipHeaderString(head []byte) (what string, n int, exact bool) {
	const fextra, fname, fcomment = 1 << 2, 1 << 3, 1 << 4
	if len(head) < 10 || head[0] != 0x1f || head[1] != 0x8b || head[2] != 8 {
		return "", 0, false
	}
	flg, at := head[3], 10
	if flg&fextra != 0 {
		if len(head) < at+2 {
			return "", 0, false
		}
		at += 2 + (int(head[at]) | int(head[at+1])<<8)
	}
	for _, f := range []struct {
		bit  byte
		what string
	}{{fname, "file name"}, {fcomment, "comment"}} {
		if flg&f.bit == 0 {
			continue
		}
		if at >= len(head) {
			return "", 0, false
		}
		end := bytes.IndexByte(head[at:], 0)
		if end < 0 && len(head)-at >= gzipHeaderString {
			return f.what, len(head) - at, false // no NUL in the bytes kept
		}
		if end < 0 {
			return "", 0, false
		}
		if end >= gzipHeaderString {
			return f.what, end, true
		}
		at += end + 1
	}
	return "", 0, false
}

// gzipError words a gzip decompression error.
func gzipError(err error) error {
	var ce flate.CorruptInputError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &streamError{reason: "the gzip data is truncated (the file ends inside the compressed data): upload the whole file again"}
	case errors.Is(err, gzip.ErrChecksum):
		return &streamError{reason: "the gzip data is corrupt (its checksum does not match): upload the file again"}
	case errors.Is(err, gzip.ErrHeader):
		return &streamError{reason: "not valid gzip data (bad gzip header)", err: err}
	case errors.As(err, &ce):
		return &streamError{reason: "the gzip data is corrupt", err: err}
	}
	return err
}

// Magic bytes of formats that are not text, found at the start of a file
// named .csv or .tsv (or inside its gzip data): what they are and what to do.
var notTextMagic = []struct {
	magic      []byte
	what, todo string
}{
	{gzipMagic, "gzip data inside gzip data", "the file was compressed twice: decompress it once"},
	{[]byte{0x28, 0xb5, 0x2f, 0xfd}, "zstd-compressed data", recompress},
	{[]byte("BZh"), "bzip2-compressed data", recompress},
	{[]byte{0xfd, '7', 'z', 'X', 'Z', 0x00}, "xz-compressed data", recompress},
	{[]byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c}, "a 7-Zip archive", "extract the CSV file and upload it"},
	{[]byte("PK\x05\x06"), "an empty zip archive", "upload the CSV file itself"},
	{[]byte{0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1}, "an Excel .xls workbook", "export the sheet as CSV UTF-8"},
	{parquetMagic, "a Parquet file inside gzip data", "upload Parquet files uncompressed, named .parquet"},
}

// archiveReason names what a text file's start (head, decompressed when
// gz) is when it is zlib data, a tar archive or a zip archive (an Excel
// .xlsx workbook among them), naming the first file of an archive, and
// what to do; "" when it is none of them.
func archiveReason(key string, head []byte, gz bool) string {
	named := ""
	if !gz && strings.HasSuffix(strings.ToLower(key), ".gz") {
		named = ", though the file is named .gz"
	}
	inside := ""
	if gz {
		inside = " inside the gzip data"
	}
	switch {
	case isZlib(head) && gz:
		return fmt.Sprintf("not a text file: the gzip data holds zlib data (deflate with a zlib header, the bytes % x): the text was compressed twice; compress the text itself with gzip", head[:2])
	case isZlib(head):
		return fmt.Sprintf("not a text file: it is zlib data (deflate with a zlib header, the bytes % x), not gzip%s; compress the text with gzip (the gzip tool, or Python's gzip module rather than zlib) and name it .csv.gz or .tsv.gz", head[:2], named)
	case isTar(head):
		what := "a tar archive"
		if gz {
			what = "a tar archive compressed with gzip (a .tar.gz)"
		}
		first, files := tarFiles(head)
		of := ""
		if files > 0 {
			of = fmt.Sprintf(" of %d files", files)
		}
		return fmt.Sprintf("not a text file: it is %s%s%s whose first file is %s; upload the CSV files themselves, each as a file of its own", what, of, named, quoteValue(first))
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		name := ""
		if len(head) >= 30 {
			n := int(binary.LittleEndian.Uint16(head[26:28]))
			name = string(head[30:min(len(head), 30+n)])
		}
		if name == "[Content_Types].xml" || strings.HasPrefix(name, "xl/") || strings.HasPrefix(name, "docProps/") || strings.HasPrefix(name, "_rels/") {
			return fmt.Sprintf("not a text file: it is an Excel .xlsx workbook (a zip archive)%s%s; export the sheet as CSV UTF-8", named, inside)
		}
		what := "a zip archive"
		if name != "" {
			what += " whose first file is " + quoteValue(name)
		}
		return fmt.Sprintf("not a text file: it is %s%s%s; extract the CSV file and upload it (only gzip compression is supported: compress it with gzip and name it .csv.gz or .tsv.gz)", what, named, inside)
	}
	return ""
}

// isZlib reports whether head starts with a zlib header (RFC 1950: deflate,
// a 32 KiB window, a valid check) whose data decompresses: its first 4 KiB,
// or all of it with a matching checksum. Text that starts "x^" has such a
// header, but is no deflate data.
func isZlib(head []byte) bool {
	if len(head) < 2 || head[0] != 0x78 || (int(head[0])<<8|int(head[1]))%31 != 0 || head[1]&0x20 != 0 {
		return false
	}
	zr, err := zlib.NewReader(bytes.NewReader(head))
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, io.LimitReader(zr, 4<<10))
	return err == nil
}

// isTar reports whether head starts with a tar header (POSIX ustar or
// GNU): "ustar" at byte 257 and a header checksum that matches.
func isTar(head []byte) bool {
	if len(head) < 512 || !bytes.Equal(head[257:262], []byte("ustar")) {
		return false
	}
	want, err := strconv.ParseUint(strings.Trim(string(head[148:156]), " \x00"), 8, 32)
	if err != nil {
		return false
	}
	var sum uint64
	for i, b := range head[:512] {
		if i >= 148 && i < 156 {
			b = ' '
		}
		sum += uint64(b)
	}
	return sum == want
}

// tarFiles reads the tar archive at the start of head: the name of its
// first file (directories aside), and the number of its files when the
// whole archive is in head (shorter than sniffBytes, which is all of the
// text), else 0.
func tarFiles(head []byte) (first string, files int) {
	tr := tar.NewReader(bytes.NewReader(head))
	for {
		h, err := tr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) || len(head) >= sniffBytes {
				files = 0
			}
			if first == "" {
				first = string(bytes.TrimRight(head[:100], "\x00"))
			}
			return first, files
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if files == 0 {
			first = h.Name
		}
		files++
	}
}

const recompress = "only gzip compression is supported: decompress the file, or compress it with gzip and name it .csv.gz or .tsv.gz"

// Byte order marks of the Unicode encodings other than UTF-8, longest
// first (UTF-32LE begins with the UTF-16LE mark).
var otherBOMs = []struct {
	bom  []byte
	name string
}{
	{[]byte{0xff, 0xfe, 0x00, 0x00}, "UTF-32 (little-endian)"},
	{[]byte{0x00, 0x00, 0xfe, 0xff}, "UTF-32 (big-endian)"},
	{[]byte{0xff, 0xfe}, "UTF-16 (little-endian)"},
	{[]byte{0xfe, 0xff}, "UTF-16 (big-endian)"},
}

// checkTextStart refuses a text file whose start (head: decompressed, without
// its UTF-8 byte order mark and separator hint) shows a problem with the
// whole file, naming what was found and what to do: no bytes at all,
// another Unicode encoding than UTF-8, compressed or archive formats,
// binary content, line ends of a lone carriage return.
func checkTextStart(ro *resolved, head []byte, gz, bom bool) error {
	fail := func(reason string) error { return &FileError{Key: ro.key, Reason: reason} }
	if len(bytes.TrimSpace(head)) == 0 && ro.lineOffset > 0 {
		return fail("empty file (only an Excel separator hint, no header line)")
	}
	if len(head) == 0 {
		if gz {
			return fail("empty file (the gzip data holds no text)")
		}
		if bom {
			return fail("empty file (only a byte order mark)")
		}
		return fail("empty file (0 bytes)")
	}
	for _, b := range otherBOMs {
		if !bom && bytes.HasPrefix(head, b.bom) {
			return fail(fmt.Sprintf("the file is %s text (it starts with the byte order mark % x); only UTF-8 is read: save it as UTF-8 (in Excel: \"CSV UTF-8\")", b.name, b.bom))
		}
	}
	if reason := archiveReason(ro.key, head, gz); reason != "" {
		return fail(reason)
	}
	for _, m := range notTextMagic {
		if bytes.HasPrefix(head, m.magic) && (gz || !bytes.Equal(m.magic, gzipMagic)) {
			return fail(fmt.Sprintf("not a text file: it starts with the bytes % x of %s; %s", m.magic, m.what, m.todo))
		}
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		if utf16Like(head) {
			return fail("the file looks like UTF-16 text without a byte order mark (every other byte is 0); only UTF-8 is read: save it as UTF-8")
		}
		// A NUL after a header and lines of plain text is in a value,
		// which refuses the file naming its row and column (nulProblem).
		if nl := bytes.IndexByte(head, '\n'); nl < 0 || i < nl || !plainText(head[:i]) {
			return fail(fmt.Sprintf("binary content, not text: a NUL byte at byte offset %d; upload the CSV text itself", i+offsetOf(bom)))
		}
	}
	line := head
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	if i := bytes.IndexByte(line, '\r'); i >= 0 && i+1 < len(line) && !quotedBefore(line, i) {
		if i == len(line)-2 && line[i+1] == '\r' && len(line) < len(head) {
			// The header ends CR CR LF: say so, as for a data line.
			_, err := io.Copy(io.Discard, newLineEnds(bytes.NewReader(head[:len(line)+1]), ro.comma, false))
			var le *lineEndError
			if errors.As(err, &le) {
				return &FileError{Key: ro.key, Line: 1 + ro.lineOffset, Reason: le.reason()}
			}
		}
		return fail("the line ends are a carriage return alone (CR, as old Mac programs write them): convert them to LF or CRLF")
	}
	return nil
}

func offsetOf(bom bool) int {
	if bom {
		return len(utf8BOM)
	}
	return 0
}

// plainText reports whether b is UTF-8 text without control characters
// other than tab, line feed and carriage return.
func plainText(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f {
			return false
		}
	}
	return utf8.Valid(b)
}

// utf16Like reports whether most of the first characters of b have a zero
// byte in the same half of each 2-byte unit.
func utf16Like(b []byte) bool {
	n := min(len(b), 64) &^ 1
	if n < 4 {
		return false
	}
	var even, odd int
	for i := 0; i < n; i += 2 {
		if b[i] == 0 {
			even++
		}
		if b[i+1] == 0 {
			odd++
		}
	}
	return max(even, odd) >= n/2*3/4
}

// quotedBefore reports whether position i of a line is inside a quoted
// field (an odd number of quotes before it).
func quotedBefore(line []byte, i int) bool {
	return bytes.Count(line[:i], []byte{'"'})%2 == 1
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
