package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/timelake/timelake/internal/iostreams"
)

// Bounded work per file: a landing file is decoded in pieces of a memory
// budget (DecodeOptions.PieceBytes), but two inputs cannot be cut into
// pieces and are refused before their memory is spent:
//
//   - a row of CSV or TSV text longer than DecodeOptions.MaxRecordBytes (a
//     huge value, or text without line ends): encoding/csv, inside arrow-go's
//     reader, holds a whole record, and copies of it are made on the way.
//     lineLimit stops the decompressed text at the first line longer than
//     the limit, whatever reads it (the header pass, the data pass, a
//     range of a file decoded in parallel, the check of a gateway's
//     upload);
//   - gzip data that expands more than maxGzipExpansion-fold past
//     gzipGuardFloor decompressed bytes (expansionGuard): a gzip bomb, whose
//     text would be read (hashed, checked for its open end, decoded) for
//     as long as it expands.

// MaxParquetFooterBytes is the largest footer a Parquet file may declare:
// the file's metadata (its schema and, for every row group, each column
// chunk's offsets and statistics), which every reader parses whole, into
// several times its size in memory, before it reads a value. Real files'
// footers take kilobytes to a few megabytes (about 85 bytes a column chunk:
// 10,000 columns in 20 row groups take about 17 MB); one of 300,000 row
// groups of a row each, 3 columns, takes 73 MiB, parsed into about 700 MiB. A file beyond it is refused before
// its footer is read (footerTooLarge).
const MaxParquetFooterBytes = 32 << 20

// parquetFooterBytes is the footer length a Parquet file's last 8 bytes
// declare; ok is false when it does not end in PAR1, cannot be read, or
// declares more than the file holds (it is damaged: Decode says so).
func parquetFooterBytes(src Source) (n int64, ok bool) {
	if src.Size < 12 {
		return 0, false
	}
	var tail [8]byte
	if _, err := src.R.ReadAt(tail[:], src.Size-8); err != nil && !errors.Is(err, io.EOF) {
		return 0, false
	}
	if !bytes.Equal(tail[4:], parquetMagic) {
		return 0, false
	}
	n = int64(binary.LittleEndian.Uint32(tail[:4]))
	return n, n <= src.Size-12
}

// footerTooLarge is the reason a Parquet file whose footer passes
// MaxParquetFooterBytes is refused; "" when it does not.
func footerTooLarge(src Source) string {
	n, ok := parquetFooterBytes(src)
	if !ok || n <= MaxParquetFooterBytes {
		return ""
	}
	return fmt.Sprintf("its footer (the file's metadata) takes %s, more than the %s a Parquet file may have "+
		"(each reader parses it whole into several times that memory): written with row groups of a few rows, "+
		"or with very many columns; write it again with row groups of at least thousands of rows", byteSize(n), byteSize(MaxParquetFooterBytes))
}

// DefaultMaxRecordBytes is DecodeOptions.MaxRecordBytes when it is 0: a
// quarter of ingest's default memory budget.
const DefaultMaxRecordBytes = 16 << 20

// maxGzipExpansion and gzipGuardFloor: deflate expands at most about
// 1,032-fold; gateways' text compresses 5- to 50-fold, highly repetitive
// text rarely beyond 200-fold.
const (
	maxGzipExpansion = 500
	gzipGuardFloor   = 64 << 20
)

// recordTooLongError is a line or a record of text longer than the limit.
type recordTooLongError struct {
	line  int64 // 1-based line where the record starts
	limit int64
}

func (e *recordTooLongError) Error() string {
	return fmt.Sprintf("a row longer than %s, the most one row may take (a quarter of --memory-budget): "+
		"not rows of a table (a value of that size, or text without line ends)", byteSize(e.limit))
}

// lineLimit passes text on, stopping with a *recordTooLongError once a line
// (the bytes between two line feeds) is longer than max. The reader behind
// it holds at most one read more.
type lineLimit struct {
	r     io.Reader
	max   int64
	run   int64 // bytes of the current line so far
	feeds int64 // line feeds passed
	err   error
}

func newLineLimit(r io.Reader, max int64) io.Reader {
	if max <= 0 {
		return r
	}
	return &lineLimit{r: r, max: max}
}

func (l *lineLimit) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if int64(len(p)) > l.max {
		p = p[:l.max] // a line inside one read cannot pass the limit
	}
	n, err := l.r.Read(p)
	b := p[:n]
	first := bytes.IndexByte(b, '\n')
	switch {
	case first < 0:
		l.run += int64(n)
	case l.run+int64(first) > l.max:
		l.run += int64(first)
	default:
		l.feeds += int64(bytes.Count(b, []byte{'\n'}))
		l.run = int64(n - bytes.LastIndexByte(b, '\n') - 1)
	}
	if l.run > l.max {
		l.err = &recordTooLongError{line: l.feeds + 1, limit: l.max}
		return n, l.err
	}
	return n, err
}

// expansionGuard watches gzip data as it is decompressed: in counts the
// compressed bytes read, out the decompressed bytes given out.
type expansionGuard struct {
	in  func() int64
	out int64
}

// add counts n more decompressed bytes: an error once past gzipGuardFloor
// they are more than maxGzipExpansion times the compressed bytes read.
func (g *expansionGuard) add(n int) error {
	g.out += int64(n)
	if g.out > gzipGuardFloor {
		if in := g.in(); g.out > maxGzipExpansion*max(in, 1) {
			return &streamError{reason: fmt.Sprintf("the gzip data expands more than %d-fold (%s into %s before it was stopped): "+
				"a gzip bomb, not a gateway's data; decompress it and check it before sending it again",
				maxGzipExpansion, byteSize(in), byteSize(g.out))}
		}
	}
	return nil
}

// NewGzipReader decompresses gzip data (every member) from r, refusing
// data that expands like a gzip bomb (see expansionGuard) with an error
// naming it.
func NewGzipReader(r io.Reader) (io.ReadCloser, error) {
	in := &countingReader{r: r}
	zr, err := gzip.NewReader(in)
	if err != nil {
		return nil, err
	}
	return &guardedGzip{zr: zr, guard: expansionGuard{in: func() int64 { return in.n }}}, nil
}

type guardedGzip struct {
	zr    *gzip.Reader
	guard expansionGuard
}

func (g *guardedGzip) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if gerr := g.guard.add(n); gerr != nil {
		return n, gerr
	}
	return n, err
}

func (g *guardedGzip) Close() error { return g.zr.Close() }

// byteSize words a size for a reason: iostreams.HumanBytes without a
// ".0" (16 MiB, 1.5 GiB, 300 B).
func byteSize(n int64) string {
	return strings.Replace(iostreams.HumanBytes(n), ".0 ", " ", 1)
}
