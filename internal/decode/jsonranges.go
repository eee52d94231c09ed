package decode

import (
	"bytes"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
)

// JSON Lines of a table whose columns are known, uncompressed and larger
// than DecodeOptions.ChunkBytes, are read in ranges of whole lines on
// DecodeOptions.Parallelism goroutines (as CSV text is: chunked.go), each
// range in one pass (openJSONInto). A range that finds anything the one
// pass cannot judge, and two ranges that read one column from different
// keys, end the read with errJSONScan: the file is then read again
// sequentially with both passes, which word every error exactly, so the
// ranges need not know their rows' lines.

// planJSONRanges cuts size bytes of JSON Lines into ranges of about
// chunkBytes, each starting after a line end (found by reading a little at
// each cut, not the whole file). A cut with no line end within maxLine
// bytes ends the planning: the rest is one range.
func planJSONRanges(r io.ReaderAt, size, chunkBytes, maxLine int64) ([]int64, error) {
	starts := []int64{0}
	buf := make([]byte, 64<<10)
	for target := chunkBytes; target < size; {
		found := int64(-1)
		for off := target; off < size && off-target < maxLine && found < 0; off += int64(len(buf)) {
			n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
			if n == 0 && err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
				found = off + int64(i) + 1
			}
			if n == 0 {
				break
			}
		}
		if found < 0 || found >= size {
			break
		}
		starts = append(starts, found)
		target = found + chunkBytes
	}
	return starts, nil
}

// jsonRanges is the batch source of a file read in ranges.
type jsonRanges struct {
	ro      *resolved
	src     Source
	target  *arrow.Schema
	sc      *arrow.Schema
	starts  []int64
	results []chan jsonRange // per range, once started
	started int              // ranges started
	handing int              // the range being handed out
	cur     []arrow.RecordBatch
	owner   []string // the key each column was read from, over every range read
	bytes   int64
	ahead   int
	// conv, when set before the first next, converts each batch on the
	// range's goroutine (a range it refuses is read again, as any other).
	conv func(rec arrow.RecordBatch, rowBase int64) (arrow.RecordBatch, error)
}

// jsonRange is what one range gave.
type jsonRange struct {
	batches []arrow.RecordBatch
	owner   []string
	err     error
	size    int64 // the text's bytes, where next does not know them
}

// openJSONRanges opens src for reading in ranges; nil when it is not worth
// it (one range) or not JSON Lines (an array, whose objects may span
// lines).
func openJSONRanges(ro *resolved, src Source, target *arrow.Schema) (batchSource, error) {
	head := make([]byte, min(src.Size, 4096))
	if _, err := src.R.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, &FileError{Key: ro.key, Reason: "cannot read file", Err: err}
	}
	if t := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, nil
	}
	starts, err := planJSONRanges(src.R, src.Size, ro.chunkBytes, ro.maxRecord)
	if err != nil {
		return nil, &FileError{Key: ro.key, Reason: "cannot read file", Err: err}
	}
	if len(starts) < 2 {
		return nil, nil
	}
	fields := make([]arrow.Field, target.NumFields())
	for i, f := range target.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	j := &jsonRanges{ro: ro, src: src, target: target, sc: arrow.NewSchema(fields, nil), starts: starts,
		results: make([]chan jsonRange, len(starts)), owner: make([]string, len(fields)), ahead: 2 * ro.parallel}
	return j, nil
}

// fill starts the ranges up to ahead beyond the one being handed out.
func (j *jsonRanges) fill() {
	for j.started < len(j.starts) && j.started < j.handing+j.ahead {
		i := j.started
		j.results[i] = make(chan jsonRange, 1)
		go func() { j.results[i] <- j.read(i) }()
		j.started++
	}
}

// read decodes range i whole.
func (j *jsonRanges) read(i int) jsonRange {
	start, end := j.starts[i], j.src.Size
	if i+1 < len(j.starts) {
		end = j.starts[i+1]
	}
	rsrc := Source{Key: j.src.Key, R: io.NewSectionReader(j.src.R, start, end-start), Size: end - start}
	return readJSONRange(j.ro, rsrc, j.target, j.conv)
}

// readJSONRange decodes src, a range of whole lines of a JSON Lines file,
// whole with openJSONInto, converting each batch with conv when it is set.
func readJSONRange(ro *resolved, src Source, target *arrow.Schema,
	conv func(rec arrow.RecordBatch, rowBase int64) (arrow.RecordBatch, error)) (out jsonRange) {
	bs, err := openJSONInto(ro, src, false, target)
	if err != nil {
		return jsonRange{err: err}
	}
	defer bs.close()
	var rows int64
	for {
		rec, err := bs.next()
		if err == nil && rec != nil && conv != nil {
			n := rec.NumRows()
			c, cerr := conv(rec, rows)
			rec.Release()
			rec, err, rows = c, cerr, rows+n
		}
		if err != nil {
			ReleaseAll(out.batches)
			return jsonRange{err: err}
		}
		if rec == nil {
			break
		}
		out.batches = append(out.batches, rec)
	}
	out.owner = bs.(*jsonSource).fast.owner
	return out
}

// mergeOwners adds the keys r's columns were read from to owner, the keys
// of the ranges before it: errJSONScan when a column was read from two.
func mergeOwners(owner []string, r jsonRange) error {
	for c, key := range r.owner {
		switch {
		case key == "":
		case owner[c] == "":
			owner[c] = key
		case owner[c] != key:
			return errJSONScan // two keys of one column
		}
	}
	return nil
}

func (j *jsonRanges) schema() *arrow.Schema { return j.sc }

func (j *jsonRanges) consumed() int64 { return j.bytes }

func (j *jsonRanges) next() (arrow.RecordBatch, error) {
	if j.started == 0 {
		j.fill()
	}
	for len(j.cur) == 0 {
		if j.handing >= len(j.starts) {
			return nil, nil
		}
		r := <-j.results[j.handing]
		j.results[j.handing] = nil
		if r.err != nil {
			return nil, errJSONScan // the two passes say what it is
		}
		if err := mergeOwners(j.owner, r); err != nil {
			ReleaseAll(r.batches)
			return nil, err
		}
		end := j.src.Size
		if j.handing+1 < len(j.starts) {
			end = j.starts[j.handing+1]
		}
		j.bytes += end - j.starts[j.handing]
		j.cur = r.batches
		j.handing++
		j.fill()
	}
	rec := j.cur[0]
	j.cur = j.cur[1:]
	return rec, nil
}

// close releases what was read and not handed out, waiting for the
// ranges still being read.
func (j *jsonRanges) close() {
	ReleaseAll(j.cur)
	j.cur = nil
	for i := j.handing; i < j.started; i++ {
		if ch := j.results[i]; ch != nil {
			r := <-ch
			ReleaseAll(r.batches)
			j.results[i] = nil
		}
	}
}
