package decode

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
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
//   - Parquet: the footer is missing (the file does not end in PAR1).
//
// A file of another type is never open (the decoder refuses it). A gzip
// stream that is corrupt in another way (a wrong checksum, bytes after its
// end) is not open either: the decoder refuses it with its reason. Reading
// a gzip file decompresses it to its end. Errors: reading r.
func OpenEnd(key string, r io.ReaderAt, size int64) (string, error) {
	if size == 0 {
		return "the file is empty", nil
	}
	head := make([]byte, min(size, 4))
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	format, gz, err := DetectFormat(key, head)
	if err != nil {
		return "", nil
	}
	switch {
	case gz:
		return gzipOpenEnd(key, r, size)
	case format == FormatParquet:
		tail := make([]byte, min(size, int64(len(parquetMagic))))
		if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		if size < 2*int64(len(parquetMagic)) || !bytes.Equal(tail, parquetMagic) {
			return "the Parquet footer is missing (the file does not end in PAR1)", nil
		}
	default: // CSV, TSV
		last := make([]byte, 1)
		if _, err := r.ReadAt(last, size-1); err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		if last[0] != '\n' {
			return "its last line has no line end", nil
		}
		return openQuote(key, r, size)
	}
	return "", nil
}

// openQuote reads CSV or TSV text from its start, a buffer at a time, and
// says whether it ends inside a quoted value: a quote opened and not
// closed, however many lines the value spans so far.
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
func openQuote(key string, r io.ReaderAt, size int64) (string, error) {
	buf := make([]byte, openEndBuffer)
	quotes, last := 0, int64(-1) // quotes seen (their parity), the offset of the last one
	for off := int64(0); off < size; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if err != nil && !(errors.Is(err, io.EOF) && off+int64(n) == size) {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		if first := bytes.IndexByte(buf[:n], '"'); first >= 0 { // most buffers of most files hold none
			quotes += bytes.Count(buf[first:n], []byte{'"'}) & 1
			last = off + int64(bytes.LastIndexByte(buf[:n], '"'))
		}
		off += int64(n)
	}
	// An odd count ends inside a quoted value, opened by the last quote.
	quoted, opened := quotes&1 == 1, last
	if !quoted {
		return "", nil
	}
	line, err := lineAt(key, r, opened, buf)
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
// (io.ErrUnexpectedEOF from the decompressor) is open.
func gzipOpenEnd(key string, r io.ReaderAt, size int64) (string, error) {
	src := &readErr{r: io.NewSectionReader(r, 0, size)}
	zr, err := gzip.NewReader(src)
	if err == nil {
		_, err = io.Copy(io.Discard, zr)
	}
	switch {
	case src.err != nil && !errors.Is(src.err, io.EOF):
		return "", fmt.Errorf("%s: %w", key, src.err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the gzip stream stops before its end", nil
	}
	return "", nil // complete, or corrupt in a way the decoder names
}

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
