package decode

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DefaultChunkBytes is the size of the byte ranges a large uncompressed
// text file is split into for parallel decoding when DecodeOptions.ChunkBytes
// is 0.
const DefaultChunkBytes = 4 << 20

// textChunk is the byte range [off, end) of an uncompressed text file; it
// starts at the beginning of a line, and lines lines (the header included)
// come before it.
type textChunk struct {
	off, end int64
	lines    int64
	text     []byte // the chunk's text, when it is not read from the file
}

// planTextChunks splits the data lines of an uncompressed text file of size
// bytes into ranges of about chunkBytes bytes, each starting right after a
// '\n'. It also returns the header line as written (without a byte order
// mark, with its line end).
//
// Splitting is safe only when every '\n' ends a record, so it returns no
// chunks (decode sequentially) when the file holds a quote character (a
// quoted field may span lines), when its first line is empty or longer than
// the scan block (the CSV reader would skip or read it differently), and
// when fewer than two chunks result. Errors are read errors of r.
//
// The file is read once by up to workers goroutines, each over its share of
// the file, to look for quote characters and count the line ends of every
// countPiece bytes; the chunk boundaries (the first '\n' at or after each
// target) and the lines before them then take a few small reads. One
// goroutine reading the whole file kept a core alone for a tenth of a
// second per 100 MB before the decode could start.
func planTextChunks(r io.ReaderAt, size, chunkBytes int64, workers int) ([]byte, []textChunk, error) {
	if size <= 0 {
		return nil, nil, nil
	}
	first := make([]byte, min(planBlock, size))
	if err := readFull(r, first, 0); err != nil {
		return nil, nil, err
	}
	if bytes.IndexByte(first, '"') >= 0 {
		return nil, nil, nil
	}
	header, pos := textHeader(first)
	if header == nil {
		return nil, nil, nil
	}
	if pos+chunkBytes >= size {
		return nil, nil, nil // one chunk at most
	}
	counts, quoted, err := countLineEnds(r, size, workers)
	if err != nil || quoted {
		return nil, nil, err
	}
	// before[k] is the number of '\n' in [0, k*countPiece).
	before := make([]int64, len(counts)+1)
	for k, n := range counts {
		before[k+1] = before[k] + n
	}
	window := make([]byte, countPiece) // the reads of the boundaries and of the lines before them
	linesBefore := func(at int64) (int64, error) {
		k := at / countPiece
		if k*countPiece == at {
			return before[k], nil
		}
		buf := window[:at-k*countPiece] // less than a count piece
		if err := readFull(r, buf, k*countPiece); err != nil {
			return 0, err
		}
		return before[k] + int64(bytes.Count(buf, []byte{'\n'})), nil
	}
	chunks := []textChunk{{off: pos, lines: 1}}
	for target := pos + chunkBytes; target < size; {
		// The first '\n' at or after target.
		bnd := int64(-1)
		for at := target; at < size && bnd < 0; at += int64(len(window)) {
			w := window[:min(int64(len(window)), size-at)]
			if err := readFull(r, w, at); err != nil {
				return nil, nil, err
			}
			if j := bytes.IndexByte(w, '\n'); j >= 0 {
				bnd = at + int64(j) + 1
			}
		}
		if bnd < 0 || bnd >= size {
			break
		}
		lines, err := linesBefore(bnd)
		if err != nil {
			return nil, nil, err
		}
		chunks[len(chunks)-1].end = bnd
		chunks = append(chunks, textChunk{off: bnd, lines: lines})
		target = bnd + chunkBytes
	}
	if len(chunks) < 2 {
		return nil, nil, nil
	}
	chunks[len(chunks)-1].end = size
	return header, chunks, nil
}

// wholeTextChunk is planTextChunks for a file of at most chunkBytes bytes:
// its data lines as one chunk, with the text read (textChunk.text), when
// the file would be safe to split; no chunk otherwise (a quote, an empty or
// overlong first line, no data line).
func wholeTextChunk(r io.ReaderAt, size, chunkBytes int64, _ int) ([]byte, []textChunk, error) {
	if size <= 0 || size > chunkBytes {
		return nil, nil, nil
	}
	text := make([]byte, size)
	if err := readFull(r, text, 0); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, nil, nil // fewer bytes than size: read as they come
		}
		return nil, nil, err
	}
	header, pos := textHeader(text[:min(int64(len(text)), planBlock)])
	if header == nil || pos >= size || bytes.IndexByte(text, '"') >= 0 {
		return nil, nil, nil
	}
	return header, []textChunk{{off: pos, end: size, lines: 1, text: text[pos:]}}, nil
}

// textHeader is the header line at the start of first (without a byte
// order mark, with its line end) and the offset after it; nil when the
// first line is empty or not ended within first.
func textHeader(first []byte) ([]byte, int64) {
	start := 0
	if bytes.HasPrefix(first, utf8BOM) {
		start = len(utf8BOM)
	}
	i := bytes.IndexByte(first, '\n')
	if i < 0 || i == start || (i == start+1 && first[start] == '\r') {
		return nil, 0
	}
	return bytes.Clone(first[start : i+1]), int64(i + 1)
}

// planBlock is the part of a text file its header line must end within
// for the file to be split (the scan block of the CSV reader).
const planBlock = 1 << 20

// countPiece is the span of a text file whose line ends planTextChunks
// counts as one.
const countPiece = 64 << 10

// countLineEnds reads the size bytes of r with up to workers goroutines and
// returns the number of '\n' in every countPiece bytes (the last piece may
// be shorter), or quoted when a '"' is in the file (the count then stops).
func countLineEnds(r io.ReaderAt, size int64, workers int) ([]int64, bool, error) {
	const block = planBlock // a multiple of countPiece
	counts := make([]int64, (size+countPiece-1)/countPiece)
	blocks := (size + block - 1) / block
	workers = int(max(1, min(int64(workers), blocks)))
	var (
		quoted atomic.Bool
		wg     sync.WaitGroup
		errs   = make([]error, workers)
	)
	for w := range workers {
		// Worker w reads the blocks [lo, hi) of the file.
		lo, hi := blocks*int64(w)/int64(workers), blocks*int64(w+1)/int64(workers)
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, block)
			for b := lo; b < hi && !quoted.Load(); b++ {
				off := b * block
				p := buf[:min(block, size-off)]
				if err := readFull(r, p, off); err != nil {
					errs[w] = err
					return
				}
				if bytes.IndexByte(p, '"') >= 0 {
					quoted.Store(true)
					return
				}
				for k := int64(0); k < int64(len(p)); k += countPiece {
					counts[(off+k)/countPiece] = int64(bytes.Count(p[k:min(k+countPiece, int64(len(p)))], []byte{'\n'}))
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs { // the first in the file
		if err != nil {
			return nil, false, err
		}
	}
	return counts, quoted.Load(), nil
}

// readFull reads len(p) bytes of r at off: a shorter read is
// io.ErrUnexpectedEOF.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n < len(p) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}

// chunkedText is the batchSource of a text file split by planTextChunks:
// workers goroutines parse the chunks (by hand in the common shape,
// csvfast.go, else with arrow-go's CSV reader) and convert them when conv
// is set, while next returns their batches in file order. Rows and values
// are those of the sequential textSource, and so are the row and line
// numbers of an error; but which of several bad rows is reported first depends on
// the batches, so Decode decodes a file with a row error again
// sequentially to report exactly the sequential error.
type chunkedText struct {
	ctx     context.Context
	ro      *resolved
	src     Source
	cols    textColumns // the columns the CSV reader reads (numbersAsTarget may type some), and those a batch keeps
	comma   rune
	header  []byte // the header line, fed to each chunk's reader first
	chunks  []textChunk
	workers int

	// conv, when set before the first next, converts each batch on the
	// worker; rowBase is then the chunk-local number of rows before it,
	// and a *FileError's Row is shifted to the file's numbering by next.
	conv    func(rec arrow.RecordBatch, rowBase int64) (arrow.RecordBatch, error)
	once    sync.Once
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	claim   atomic.Int64 // next chunk index to parse
	stop    atomic.Int64 // lowest failed chunk; later chunks are not started
	results []chunkResult
	scanMu  sync.Mutex
	scans   []*csvScan      // the fast chunk scans not in use (csvfast.go)
	slow    bool            // read every chunk with the reader (tests compare the two)
	done    []chan struct{} // closed when results[i] is final
	// ahead[i] is closed once chunk i may be parsed: at most
	// chunksAhead(workers) chunks beyond the one being delivered, so that
	// a file is not parsed faster than its batches are taken.
	ahead []chan struct{}

	cur     int                 // next chunk to deliver
	pending []arrow.RecordBatch // undelivered batches of chunk cur-1
	rows    int64               // rows of the chunks before cur
	// pendBytes and pendRows are the text size and rows of chunk cur-1;
	// bytes counts the text of the batches delivered (consumed), each
	// batch its share of its chunk.
	pendBytes, pendRows, bytes int64
}

// chunksAhead is how many chunks past the one being delivered the workers
// may parse: two per worker.
func chunksAhead(workers int) int { return 2 * workers }

// chunkResult is what a worker made of one chunk.
type chunkResult struct {
	recs   []arrow.RecordBatch
	rows   int64
	err    error // a read error, or a *FileError with a chunk-local Row
	read   bool  // err is a read error
	errRow int64 // chunk-local data row of a read error
}

func (c *chunkedText) schema() *arrow.Schema { return c.cols.out }

func (c *chunkedText) start() {
	c.once.Do(func() {
		c.ctx, c.cancel = context.WithCancel(c.ctx)
		c.results = make([]chunkResult, len(c.chunks))
		c.done = make([]chan struct{}, len(c.chunks))
		for i := range c.done {
			c.done[i] = make(chan struct{})
		}
		c.ahead = make([]chan struct{}, len(c.chunks))
		for i := range c.ahead {
			c.ahead[i] = make(chan struct{})
			if i < chunksAhead(c.workers) {
				close(c.ahead[i])
			}
		}
		c.stop.Store(int64(len(c.chunks)))
		for range min(c.workers, len(c.chunks)) {
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				for {
					i := int(c.claim.Add(1) - 1)
					if i >= len(c.chunks) {
						return
					}
					select {
					case <-c.ahead[i]:
					case <-c.ctx.Done():
					}
					if int64(i) > c.stop.Load() || c.ctx.Err() != nil {
						c.results[i].err = context.Canceled
						close(c.done[i])
						continue
					}
					c.parse(i)
					close(c.done[i])
				}
			}()
		}
	})
}

// fail records that chunk i failed, so that later chunks are not started.
func (c *chunkedText) fail(i int) {
	for {
		s := c.stop.Load()
		if int64(i) >= s || c.stop.CompareAndSwap(s, int64(i)) {
			return
		}
	}
}

// parse reads chunk i into results[i] with the CSV reader and the text
// schema, which report every problem as the sequential path does.
//
// A panic of the reader is the chunk's error (Recovered): on a worker
// goroutine it would stop the process.
func (c *chunkedText) parse(i int) {
	ch, res := c.chunks[i], &c.results[i]
	defer func() {
		if v := recover(); v != nil {
			ReleaseAll(res.recs)
			res.recs, res.read = nil, false
			res.err = Recovered(c.ro.key, "the reader", "decoding the file", fmt.Sprintf("the lines from line %d on", ch.lines+1), v)
			c.fail(i)
		}
	}()
	if c.ctx.Err() == nil && c.read(ch, res) != nil {
		c.fail(i)
	}
	if err := c.ctx.Err(); err != nil && res.err == nil {
		res.err = err
	}
}

// read parses ch with the columns of c.cols into res, converting each batch
// with c.conv when it is set, and returns res.err.
func (c *chunkedText) read(ch textChunk, res *chunkResult) error {
	if ok, err := c.readFast(ch, res); ok {
		return err
	}
	sc := c.cols.read
	size := ch.end - ch.off
	var body io.Reader = io.NewSectionReader(c.src.R, ch.off, size)
	if ch.text != nil {
		body = bytes.NewReader(ch.text)
	}
	ends := newLineEnds(io.MultiReader(bytes.NewReader(c.header), newLineLimit(body, c.ro.maxRecord)), c.comma, true)
	cr := arrowcsv.NewReader(ends, sc,
		arrowcsv.WithHeader(true),
		arrowcsv.WithComma(c.comma),
		arrowcsv.WithNullReader(true, c.ro.nulls...),
		arrowcsv.WithChunk(int(min(int64(c.ro.batchRows), max(size/16, 256)))),
		arrowcsv.WithAllocator(c.ro.mem),
	)
	defer cr.Release()
	for {
		if err := c.ctx.Err(); err != nil {
			res.err = err
			return err
		}
		ok := cr.Next()
		if err := cr.Err(); err != nil {
			var done int64
			if rec := cr.RecordBatch(); rec != nil {
				done = rec.NumRows()
				// A value refused on a row before the broken one is
				// the chunk's first problem.
				if verr := c.checkRows(rec, res.rows); verr != nil {
					res.err = verr
					return verr
				}
			}
			// The reader counts the header it was fed as line 1.
			res.err, res.read, res.errRow = shiftLines(ends.explain(err), ch.lines-1), true, res.rows+done+1
			return res.err
		}
		if !ok || cr.RecordBatch().NumRows() == 0 {
			return nil
		}
		rec := cr.RecordBatch()
		rec.Retain()
		n := rec.NumRows()
		rec, err := c.convert(rec, res.rows)
		if err != nil {
			res.err = err
			return err
		}
		rec, err = compact(rec, c.ro.mem)
		if err != nil {
			res.err = &FileError{Key: c.ro.key, Reason: "cannot copy decoded data", Err: err}
			return res.err
		}
		res.recs = append(res.recs, rec)
		res.rows += n
	}
}

// convert trims rec (released) to the file's columns and converts it
// with c.conv when set; rows is the number of data rows of the chunk
// before it.
func (c *chunkedText) convert(rec arrow.RecordBatch, rows int64) (arrow.RecordBatch, error) {
	rec, err := c.cols.trim(c.ro, rec, rows)
	if err != nil || c.conv == nil {
		return rec, err
	}
	out, err := c.conv(rec, rows)
	rec.Release()
	return out, err
}

// checkRows converts the rows of rec (the reader's, not released; rows
// data rows of the chunk before it) as read does, and returns the error
// that refuses one of them, if any: the rows read before a broken one.
func (c *chunkedText) checkRows(rec arrow.RecordBatch, rows int64) error {
	if rec.NumRows() == 0 {
		return nil
	}
	rec.Retain()
	out, err := c.convert(rec, rows)
	if err != nil {
		return err
	}
	out.Release()
	return nil
}

// compact returns rec, or when some of its columns hold much more buffer
// capacity than data (the CSV reader's builders grow by doubling, so a
// column may take up to twice its size), a batch where those columns are
// copied into exactly sized buffers; rec is then released. Decoded files
// stay in memory until written, so the copy pays.
func compact(rec arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	wasteful := func(c arrow.Array) bool {
		var used, held int
		for _, b := range c.Data().Buffers() {
			if b != nil {
				// A trimmed builder buffer keeps its whole allocation
				// behind a shorter slice: count the slice's capacity.
				used, held = used+b.Len(), held+cap(b.Buf())
			}
		}
		return held-used > used/8+4096 // padding of small buffers is no waste
	}
	cols := rec.Columns()
	var copied []arrow.Array
	defer func() {
		for _, c := range copied {
			c.Release()
		}
	}()
	for i, c := range cols {
		if !wasteful(c) {
			continue
		}
		if copied == nil {
			cols = slices.Clone(cols)
		}
		cp, err := array.Concatenate([]arrow.Array{c}, mem)
		if err != nil {
			rec.Release()
			return nil, err
		}
		copied = append(copied, cp)
		cols[i] = cp
	}
	if copied == nil {
		return rec, nil
	}
	out := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
	rec.Release()
	return out, nil
}

// shiftLines adds d to the line numbers of a CSV parse error or a line end
// refused.
func shiftLines(err error, d int64) error {
	var tl *recordTooLongError
	if errors.As(err, &tl) {
		shifted := *tl
		shifted.line += d + 1 // lineLimit counted the chunk's lines without the header
		return &shifted
	}
	var le *lineEndError
	if errors.As(err, &le) {
		shifted := *le
		shifted.line += d
		return &shifted
	}
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return err
	}
	return &csv.ParseError{StartLine: pe.StartLine + int(d), Line: pe.Line + int(d), Column: pe.Column, Err: pe.Err}
}

func (c *chunkedText) next() (arrow.RecordBatch, error) {
	c.start()
	for len(c.pending) == 0 {
		if c.cur == len(c.chunks) {
			return nil, nil
		}
		<-c.done[c.cur]
		res := &c.results[c.cur]
		switch {
		case res.err != nil && res.read:
			return nil, textReadError(c.ro, c.rows+res.errRow, c.cols.read.NumFields(), res.err)
		case res.err != nil:
			var fe *FileError
			if errors.As(res.err, &fe) {
				shifted := *fe
				if shifted.Row > 0 {
					shifted.Row += c.rows
				}
				return nil, &shifted
			}
			return nil, &FileError{Key: c.ro.key, Reason: "decoding cancelled", Err: res.err}
		}
		c.pending, res.recs = res.recs, nil
		c.pendBytes, c.pendRows = c.chunks[c.cur].end-c.chunks[c.cur].off, res.rows
		c.rows += res.rows
		c.cur++
		if j := c.cur + chunksAhead(c.workers) - 1; j < len(c.chunks) {
			close(c.ahead[j])
		}
	}
	rec := c.pending[0]
	c.pending[0] = nil
	c.pending = c.pending[1:]
	c.bytes += c.pendBytes * rec.NumRows() / max(c.pendRows, 1)
	return rec, nil
}

func (c *chunkedText) consumed() int64 { return c.bytes }

func (c *chunkedText) close() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	c.wg.Wait()
	for _, r := range c.pending {
		r.Release()
	}
	c.pending = nil
	for i := range c.results {
		for _, r := range c.results[i].recs {
			r.Release()
		}
		c.results[i].recs = nil
	}
}
