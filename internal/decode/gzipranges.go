package decode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// A gzipped JSON Lines file of a table whose columns are known is
// decompressed on one goroutine and parsed on DecodeOptions.Parallelism
// others. Deflate data cannot be cut into ranges without decompressing it,
// so the decompressing goroutine (feed) cuts the text into blocks of whole
// lines of about DecodeOptions.ChunkBytes, and the parsers read each block
// as a range of an uncompressed file is read (readJSONRange), while next
// hands out the blocks' batches in file order. It runs a pipeline of its
// own (one feeder, a fixed set of parsers, the results queued in file
// order) rather than the ranges' goroutine per range, because a block
// exists only once the stream before it is decompressed: the blocks come
// one at a time from one reader, and each is parsed while the next are
// cut.
//
// Memory stays bounded: the feeder waits once ahead blocks are cut beyond
// the one being handed out, so that a few blocks of text and their
// batches are held, not the file, and under DecodeOptions.PieceBytes the
// blocks are small enough that all of them take a batch's part of a piece
// (pieceText). A block is the text of whole lines, a line at most
// DecodeOptions.MaxRecordBytes (lineLimit stops the text there), and the
// expansion guard of the gzip stream holds as in a sequential read.
//
// As for the ranges, anything a block or the stream refuses (a line the
// one pass cannot judge, a bad value, a truncated or hostile gzip stream,
// a line too long) ends the read with errJSONScan: the file is read again
// sequentially with both passes, which word every error exactly (its line
// too), so the blocks need not know their lines.
//
// A gzipped CSV or TSV file of a table is read in blocks the same way,
// each parsed as a range of an uncompressed file is (chunkedText.read,
// the header fed first), when its first block holds no quote character
// and it has no separator hint. Whether a later block holds a quote (a
// quoted field may span lines) is known only once it is decompressed: such
// a block, as any error, ends the read with errJSONScan, and decodeFile
// reads the file again sequentially, which gives its rows, or words its
// error, exactly.

// gzipRanges is the batch source of a gzipped JSON Lines, CSV or TSV
// file read in blocks.
type gzipRanges struct {
	ro     *resolved
	src    Source
	target *arrow.Schema
	sc     *arrow.Schema
	zr     *gzipStream
	text   io.Reader // zr's text, lines bounded by ro.maxRecord
	eof    bool      // text is read to its end
	first  []byte    // block 0, cut by openGzipJSONRanges
	carry  []byte    // the start of the line after the last cut
	ahead  int
	block  int64 // the bytes of a block, its last line aside
	// conv, when set before the first next, converts each batch on the
	// parsing goroutine.
	conv func(rec arrow.RecordBatch, rowBase int64) (arrow.RecordBatch, error)
	// csv, for CSV or TSV text, parses the blocks (its header fed to
	// each) in place of JSON.
	csv *chunkedText

	order   chan chan jsonRange // each block's result, in file order
	jobs    chan gzipBlock
	free    chan []byte // parsed blocks' buffers, for the next cuts
	stop    chan struct{}
	wg      sync.WaitGroup
	started bool
	closed  bool

	cur   []arrow.RecordBatch
	owner []string // the key each column was read from, over every block read
	bytes int64
}

// gzipBlock is a block of whole lines for a parser; first is the file's
// first block (which may start with a byte order mark).
type gzipBlock struct {
	text  []byte
	first bool
	res   chan jsonRange
}

// openGzipJSONRanges opens the gzipped src for reading in blocks; nil when
// its text is not JSON Lines (an array, whose objects may span lines), or
// when its start cannot be read (the sequential read words why).
func openGzipJSONRanges(ro *resolved, src Source, target *arrow.Schema) (batchSource, error) {
	g, first := newGzipBlocks(ro, src)
	if g == nil {
		return nil, nil
	}
	if t := bytes.TrimLeft(bytes.TrimPrefix(first, utf8BOM), " \t\r\n"); len(t) == 0 || t[0] != '{' {
		g.close()
		return nil, nil
	}
	fields := make([]arrow.Field, target.NumFields())
	for i, f := range target.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	g.target, g.sc, g.owner, g.first = target, arrow.NewSchema(fields, nil), make([]string, len(fields)), first
	return g, nil
}

// openGzipTextRanges opens the gzipped CSV or TSV src, whose header gave
// cols, for reading in blocks; nil when its first block holds a quote
// character (a quoted field may span lines; one in a later block reads the
// file again sequentially), when its first line is empty (the CSV reader
// would skip it), or when its start cannot be read.
func openGzipTextRanges(ctx context.Context, ro *resolved, src Source, cols textColumns, comma rune) *gzipRanges {
	g, first := newGzipBlocks(ro, src)
	if g == nil {
		return nil
	}
	start := 0
	if bytes.HasPrefix(first, utf8BOM) {
		start = len(utf8BOM)
	}
	i := bytes.IndexByte(first, '\n')
	if bytes.IndexByte(first, '"') >= 0 || i < 0 || i == start || (i == start+1 && first[start] == '\r') {
		g.close()
		return nil
	}
	g.csv = &chunkedText{ctx: ctx, ro: ro, src: src, cols: cols, comma: comma, header: bytes.Clone(first[start : i+1])}
	g.first = first[i+1:]
	return g
}

// newGzipBlocks opens the gzipped src and cuts its first block; nil when
// either fails.
func newGzipBlocks(ro *resolved, src Source) (*gzipRanges, []byte) {
	zr, err := newGzipStream(io.NewSectionReader(src.R, 0, src.Size), src.Size)
	if err != nil {
		return nil, nil
	}
	ahead := 2 * ro.parallel
	block := ro.chunkBytes
	if cut := pieceText(ro); cut > 0 {
		// The blocks in flight, as text and as batches, take at most a
		// batch's part of a piece.
		block = min(block, max(cut/int64(2*ahead+3), 64<<10))
	}
	g := &gzipRanges{ro: ro, src: src, zr: zr, text: newLineLimit(zr, ro.maxRecord), ahead: ahead, block: block,
		free: make(chan []byte, ahead+2)}
	first, err := g.cut()
	if err != nil || first == nil {
		g.close()
		return nil, nil
	}
	return g, first
}

// gzipBlocks holds the buffers of blocks of files read before, for the
// next file's blocks.
var gzipBlocks sync.Pool

// cut returns the next block of whole lines (the last without a line end
// when the text has none), nil after the last.
func (g *gzipRanges) cut() ([]byte, error) {
	if g.eof && len(g.carry) == 0 {
		return nil, nil
	}
	var buf []byte
	select {
	case buf = <-g.free:
	default:
		size := g.block + 64<<10
		if g.src.Size < g.block/4 {
			size = min(size, 256<<10) // grown as the text asks: a small file takes little
		}
		if p, _ := gzipBlocks.Get().(*[]byte); p != nil && int64(cap(*p)) >= size {
			buf = *p
		} else {
			buf = make([]byte, 0, size)
		}
	}
	buf = append(buf[:0], g.carry...)
	scanned := 0 // buf[:scanned] holds no line end
	for !g.eof {
		if int64(len(buf)) >= g.block {
			if bytes.IndexByte(buf[scanned:], '\n') >= 0 {
				break
			}
			// A line longer than the rest of the block: read on (lineLimit
			// ends it at ro.maxRecord).
			scanned = len(buf)
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(len(buf), 64<<10))
		}
		n, err := g.text.Read(buf[len(buf):min(cap(buf), len(buf)+64<<10)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			g.eof = true
		case err != nil:
			return nil, err
		}
	}
	end := len(buf)
	if !g.eof {
		end = bytes.LastIndexByte(buf, '\n') + 1
	}
	g.carry = append(g.carry[:0], buf[end:]...)
	if end == 0 {
		return nil, nil
	}
	return buf[:end], nil
}

// safeCut is cut on the feeder's goroutine, where a panic of the gzip
// reader would stop the process: it is an error of the stream instead.
func (g *gzipRanges) safeCut() (block []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			block, err = nil, fmt.Errorf("decompressing the file: %v", v)
		}
	}()
	return g.cut()
}

// start starts the feeder and the parsers.
func (g *gzipRanges) start() {
	if g.started {
		return
	}
	g.started = true
	g.order = make(chan chan jsonRange, g.ahead)
	g.jobs = make(chan gzipBlock)
	g.stop = make(chan struct{})
	g.wg.Add(1 + g.ro.parallel)
	go g.feed()
	for range g.ro.parallel {
		go g.parse()
	}
}

// feed cuts the blocks and gives each to a parser, its result's channel
// to next first; a stream error is the last result.
func (g *gzipRanges) feed() {
	defer g.wg.Done()
	defer close(g.jobs)
	defer close(g.order)
	block := g.first
	g.first = nil
	for i := 0; ; i++ {
		var err error
		if i > 0 {
			block, err = g.safeCut()
		}
		if block == nil && err == nil {
			return
		}
		res := make(chan jsonRange, 1)
		if err != nil {
			res <- jsonRange{err: err}
		}
		select {
		case g.order <- res:
		case <-g.stop:
			return
		}
		if err != nil {
			return
		}
		select {
		case g.jobs <- gzipBlock{text: block, first: i == 0, res: res}:
		case <-g.stop:
			return
		}
	}
}

// parse reads the blocks it is given until there are no more.
func (g *gzipRanges) parse() {
	defer g.wg.Done()
	for {
		select {
		case b, ok := <-g.jobs:
			if !ok {
				return
			}
			b.res <- g.read(b)
			select {
			case g.free <- b.text[:0]:
			default:
			}
		case <-g.stop:
			return
		}
	}
}

// read decodes block b whole. A block after the first must start with an
// object: openJSONStream would read one starting with '[' as an array
// and skip a byte order mark, where the sequential read refuses both.
func (g *gzipRanges) read(b gzipBlock) (out jsonRange) {
	defer func() {
		if v := recover(); v != nil {
			ReleaseAll(out.batches)
			out = jsonRange{err: fmt.Errorf("a block of the file: %v", v)}
		}
	}()
	if g.csv != nil {
		if bytes.IndexByte(b.text, '"') >= 0 {
			return jsonRange{err: errJSONScan} // a quoted field may span lines
		}
		var res chunkResult
		if g.csv.read(textChunk{end: int64(len(b.text)), text: b.text}, &res) != nil {
			ReleaseAll(res.recs)
			return jsonRange{err: res.err}
		}
		return jsonRange{batches: res.recs, size: int64(len(b.text))}
	}
	if t := bytes.TrimLeft(b.text, " \t\r\n"); !b.first && (len(t) == 0 || t[0] != '{') {
		return jsonRange{err: errJSONScan}
	}
	src := Source{Key: g.src.Key, R: bytes.NewReader(b.text), Size: int64(len(b.text))}
	out = readJSONRange(g.ro, src, g.target, g.conv)
	out.size = int64(len(b.text))
	return out
}

func (g *gzipRanges) schema() *arrow.Schema {
	if g.csv != nil {
		return g.csv.cols.out
	}
	return g.sc
}

func (g *gzipRanges) consumed() int64 { return g.bytes }

func (g *gzipRanges) next() (arrow.RecordBatch, error) {
	g.start()
	for len(g.cur) == 0 {
		res, ok := <-g.order
		if !ok {
			return nil, nil
		}
		r := <-res
		if r.err != nil {
			return nil, errJSONScan // the two passes say what it is
		}
		if err := mergeOwners(g.owner, r); err != nil {
			ReleaseAll(r.batches)
			return nil, err
		}
		g.bytes += r.size
		g.cur = r.batches
	}
	rec := g.cur[0]
	g.cur = g.cur[1:]
	return rec, nil
}

// close stops the feeder and the parsers and releases what was read and
// not handed out.
func (g *gzipRanges) close() {
	if g.closed {
		return
	}
	g.closed = true
	if g.started {
		close(g.stop)
		g.wg.Wait()
		for res := range g.order {
			select {
			case r := <-res:
				ReleaseAll(r.batches)
			default:
			}
		}
	}
	ReleaseAll(g.cur)
	g.cur = nil
	_ = g.zr.Close()
	if g.free != nil {
		for len(g.free) > 0 {
			b := <-g.free
			if int64(cap(b)) <= 2*(g.block+64<<10) {
				gzipBlocks.Put(&b)
			}
		}
	}
}
