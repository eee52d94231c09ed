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
//     end in "\n");
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
	}
	return "", nil
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
