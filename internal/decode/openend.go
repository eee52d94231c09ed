package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// OpenEnd says whether a landing file ends the way a file still being
// written ends (docs/ingest.md, "What complete means"): "" when its end is
// that of a complete file, else what is open:
//
//   - an empty file: nothing written yet;
//   - CSV and TSV text: the last line has no line end (the file does not
//     end in "\n"), or the text ends inside a quoted value (openQuote: a
//     writer paused inside a value that spans lines);
//   - gzip data (by its magic bytes, whatever the name): the stream stops
//     before its end, as a gzip writer that has not been closed leaves it;
//     or, for gzipped CSV and TSV, its decompressed text is open as above
//     (or empty): a logger that appends a gzip member per chunk leaves a
//     complete gzip stream after every chunk, whatever its text;
//   - Parquet: the footer is missing (the file does not end in PAR1).
//
// A key without an extension (whose format a source profile's format
// setting gives) is open when it is a gzip stream without its end, or
// when its last line has no line end. A file of another type is never
// open (the decoder refuses it). A gzip
// stream that is corrupt in another way (a wrong checksum, bytes after its
// end) is not open either: the decoder refuses it with its reason. Reading
// a gzip file decompresses it to its end. Errors: reading r.
func OpenEnd(key string, r io.ReaderAt, size int64) (string, error) {
	return openEnd(key, r, size, true)
}

// OpenEndAtItsEdges is OpenEnd without what reads a whole file: a CSV or
// TSV file's quoted value left open (a full scan of its text) is not
// looked for, and neither is a gzip file's end (a full decompression);
// its head and tail alone are read. For a note on a file taken anyway
// (landing.Settle past its open-end time), where the decoder refuses
// what these would find.
func OpenEndAtItsEdges(key string, r io.ReaderAt, size int64) (string, error) {
	return openEnd(key, r, size, false)
}

func openEnd(key string, r io.ReaderAt, size int64, whole bool) (string, error) {
	if size == 0 {
		return "the file is empty", nil
	}
	head := make([]byte, min(size, 4))
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	format, gz, err := DetectFormat(key, head)
	if err != nil && !strings.Contains(path.Base(key), ".") {
		// A key without an extension, whose format a source profile may
		// give: a gzip stream by its bytes, else text by its last line.
		format, gz, err = FormatJSON, bytes.HasPrefix(head, gzipMagic), nil
		if !gz {
			return lastLineOpen(key, r, size)
		}
	}
	if err != nil {
		return "", nil
	}
	switch {
	case gz && !whole:
		return "", nil
	case gz && format == FormatJSON:
		return gzipOpenEnd(key, r, size, gzipJSON)
	case gz && (format == FormatCSV || format == FormatTSV):
		return gzipOpenEnd(key, r, size, gzipText)
	case gz:
		return gzipOpenEnd(key, r, size, gzipEnd)
	case format == FormatJSON:
		return jsonOpenEnd(key, r, size)
	case format == FormatParquet:
		ends, err := endsInPAR1(r, size)
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		if size < 2*int64(len(parquetMagic)) || !ends {
			return "the Parquet footer is missing (the file does not end in PAR1)", nil
		}
	default: // CSV, TSV
		if open, err := lastLineOpen(key, r, size); open != "" || err != nil || !whole {
			return open, err
		}
		return openQuote(key, r, size)
	}
	return "", nil
}

// StartsGzip reports whether the file of size bytes read from r starts
// with the gzip magic bytes: a file OpenEnd decompresses to its end,
// whatever its name. Errors: reading r.
func StartsGzip(key string, r io.ReaderAt, size int64) (bool, error) {
	if size < int64(len(gzipMagic)) {
		return false, nil
	}
	head := make([]byte, len(gzipMagic))
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("%s: %w", key, err)
	}
	return bytes.Equal(head, gzipMagic), nil
}

// openQuote reads CSV or TSV text from its start, a buffer at a time, and
// says whether it ends inside a quoted value (textEnd.quotedLine).
func openQuote(key string, r io.ReaderAt, size int64) (string, error) {
	buf := make([]byte, openEndBuffer)
	var end textEnd
	if _, err := io.CopyBuffer(&end, io.NewSectionReader(r, 0, size), buf); err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	return end.quotedLine(func(off int64) (int64, error) { return lineAt(key, r, off, buf) })
}

// textEnd is what the end of CSV or TSV text written through it says: its
// length, its last byte, and the parity of its quotes with the offset of
// the last one.
//
// Quotes are counted as RFC 4180 (section 2) has them, the one quoting of
// every CSV and TSV dialect timelake reads: the quote is '"' whatever the
// delimiter, and "" inside a quoted value stands for one quote (it closes
// and opens again). So text that parses holds an odd number of quotes
// exactly when it ends inside a quoted value, wherever the quotes stand,
// and the delimiter (the setting, .tsv, a sep= line) does not matter. Text
// that does not parse (a quote inside an unquoted value) is refused
// whatever follows: the count only decides whether it is quarantined now
// or after the open-end settle time. The scan counts quotes a buffer at a
// time (bytes.IndexByte and bytes.Count, vectorised), GB/s from memory
// (BenchmarkOpenEnd): a local file costs about one more read from the page
// cache. The line of the open quote is counted only for a file found open.
type textEnd struct {
	size      int64
	last      byte
	quotes    int   // quotes seen (their parity)
	lastQuote int64 // the offset of the last one
}

func (t *textEnd) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if first := bytes.IndexByte(p, '"'); first >= 0 { // most buffers of most files hold none
		t.quotes += bytes.Count(p[first:], []byte{'"'}) & 1
		t.lastQuote = t.size + int64(bytes.LastIndexByte(p, '"'))
	}
	t.last = p[len(p)-1]
	t.size += int64(len(p))
	return len(p), nil
}

// quotedLine says whether the text ends inside a quoted value, opened by
// the last quote, on the line lineOf gives for its offset.
func (t *textEnd) quotedLine(lineOf func(off int64) (int64, error)) (string, error) {
	if t.quotes&1 == 0 {
		return "", nil
	}
	line, err := lineOf(t.lastQuote)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("it ends inside a quoted value (the quote opened on line %d is not closed)", line), nil
}

// openEndBuffer is how many bytes openQuote reads at a time.
const openEndBuffer = 256 << 10

// lineAt is the 1-based line of the byte at offset off of r, counting
// line feeds before it (buf is the buffer to read with).
func lineAt(key string, r io.ReaderAt, off int64, buf []byte) (int64, error) {
	line := int64(1)
	for pos := int64(0); pos < off; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), off-pos)], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("%s: %w", key, err)
		}
		if n == 0 {
			break
		}
		line += int64(bytes.Count(buf[:n], []byte{'\n'}))
		pos += int64(n)
	}
	return line, nil
}

// gzipOpenEnd reads a gzip stream to its end: a stream that stops early
// (io.ErrUnexpectedEOF from the decompressor) is open; so, when text is
// set (gzipped CSV or TSV), is a complete stream whose decompressed text is
// empty, lacks its last line end or ends inside a quoted value.
func gzipOpenEnd(key string, r io.ReaderAt, size int64, check gzipCheck) (string, error) {
	var end textEnd
	err := gunzipTo(key, r, size, &end)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the gzip stream stops before its end", nil
	case errors.Is(err, errGzipCorrupt):
		return "", nil // corrupt in a way the decoder names
	case err != nil:
		return "", err
	case check == gzipEnd:
		return "", nil
	case end.size == 0:
		return "its decompressed text is empty", nil
	case end.last != '\n' && !(check == gzipJSON && end.last == ']'):
		return "its decompressed text's last line has no line end", nil
	case check == gzipJSON:
		return "", nil
	}
	return end.quotedLine(func(off int64) (int64, error) {
		lines := &lineCounter{until: off}
		if err := gunzipTo(key, r, size, lines); err != nil && !errors.Is(err, errLineFound) {
			return 0, err
		}
		return lines.line(), nil
	})
}

// gzipCheck is what gzipOpenEnd checks of a gzip file besides its stream.
type gzipCheck int

const (
	gzipEnd  gzipCheck = iota // the stream's end only
	gzipText                  // and CSV or TSV text: its last line end, its quotes
	gzipJSON                  // and JSON: its last line end (or an array's ])
)

// errGzipCorrupt marks a gzip stream gunzipTo could not decompress for
// another reason than its early end.
var errGzipCorrupt = errors.New("corrupt gzip stream")

// gunzipTo decompresses the gzip stream of r (every member) into w. Errors:
// reading r; io.ErrUnexpectedEOF when the stream stops before its end;
// errGzipCorrupt when it does not decompress; w's.
func gunzipTo(key string, r io.ReaderAt, size int64, w io.Writer) error {
	src := &readErr{r: io.NewSectionReader(r, 0, size)}
	zr, err := NewGzipReader(src)
	if err == nil {
		_, err = io.CopyBuffer(w, zr, make([]byte, openEndBuffer))
	}
	switch {
	case src.err != nil && !errors.Is(src.err, io.EOF):
		return fmt.Errorf("%s: %w", key, src.err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF) && size > 0:
		// gzip.NewReader's io.EOF: the header itself is cut.
		return io.ErrUnexpectedEOF
	case errors.Is(err, errLineFound):
		return err
	case err != nil:
		return fmt.Errorf("%w: %w", errGzipCorrupt, err)
	}
	return nil
}

// lineCounter counts the line feeds written through it before offset
// until, then stops the copy with errLineFound.
type lineCounter struct {
	until, size, feeds int64
}

var errLineFound = errors.New("line found")

func (c *lineCounter) Write(p []byte) (int, error) {
	n := min(int64(len(p)), c.until-c.size)
	c.feeds += int64(bytes.Count(p[:n], []byte{'\n'}))
	c.size += n
	if c.size >= c.until {
		return int(n), errLineFound
	}
	return len(p), nil
}

// line is the 1-based line of the byte at offset until.
func (c *lineCounter) line() int64 { return c.feeds + 1 }

// readErr keeps the first error of the reader below the decompressor, so
// that a failed read is told from data that stops early.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// jsonOpenEnd says whether JSON text is still being written: one array of
// objects whose last byte (white space aside) is not its closing ], or
// objects one per line whose last line has no line end.
func jsonOpenEnd(key string, r io.ReaderAt, size int64) (string, error) {
	head := make([]byte, min(size, 512))
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	head = bytes.TrimPrefix(head, utf8BOM)
	tail := make([]byte, min(size, 512))
	if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	if bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("[")) {
		if t := bytes.TrimRight(tail, " \t\r\n"); len(t) == 0 || t[len(t)-1] != ']' {
			return "its top-level array is not closed (no ] at its end)", nil
		}
		return "", nil
	}
	if tail[len(tail)-1] != '\n' {
		return "its last line has no line end", nil
	}
	return "", nil
}

// lastLineOpen says whether text's last line has no line end.
func lastLineOpen(key string, r io.ReaderAt, size int64) (string, error) {
	last := make([]byte, 1)
	if _, err := r.ReadAt(last, size-1); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	if last[0] != '\n' {
		return "its last line has no line end", nil
	}
	return "", nil
}
