package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestPlanTextChunksAgrees: the plan read by several goroutines gives the
// header, chunk boundaries and line numbers of one reader of the whole file
// (sequentialPlan), on files of short and long lines, blank lines, CRLF,
// a byte order mark, lines longer than a chunk or a count piece, and a
// quote anywhere (no chunks), for chunk sizes from one byte up.
func TestPlanTextChunksAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 44))
	line := func() string {
		switch rng.IntN(20) {
		case 0:
			return "" // a blank line
		case 1:
			return strings.Repeat("x", rng.IntN(3*countPiece)) // longer than a count piece
		}
		return fmt.Sprintf("2026-01-05T10:00:%02dZ,dev-%d,%d.%d", rng.IntN(60), rng.IntN(9), rng.IntN(40), rng.IntN(10))
	}
	for n := range 60 {
		var b strings.Builder
		if n%7 == 0 {
			b.WriteString("\ufeff")
		}
		b.WriteString("time,device,value")
		end := "\n"
		if n%3 == 0 {
			end = "\r\n"
		}
		b.WriteString(end)
		for range rng.IntN(3000) {
			b.WriteString(line())
			b.WriteString(end)
		}
		if n%5 == 0 {
			b.WriteString(line()) // no line end at the end
		}
		data := []byte(b.String())
		if n%11 == 0 && len(data) > 10 {
			data[rng.IntN(len(data)-10)+10] = '"'
		}
		for _, chunk := range []int64{1, 97, 4096, countPiece - 1, countPiece, 1 << 20} {
			wantHeader, wantChunks, wantErr := sequentialPlan(bytes.NewReader(data), int64(len(data)), chunk)
			for _, workers := range []int{1, 2, 5} {
				header, chunks, err := planTextChunks(bytes.NewReader(data), int64(len(data)), chunk, workers)
				if err != nil || wantErr != nil {
					t.Fatalf("file %d, chunk %d: errors %v and %v", n, chunk, err, wantErr)
				}
				if !bytes.Equal(header, wantHeader) || !reflect.DeepEqual(chunks, wantChunks) {
					t.Fatalf("file %d (%d bytes), chunk %d, %d workers: header %q and %d chunks, want %q and %d chunks (first difference %s)",
						n, len(data), chunk, workers, header, len(chunks), wantHeader, len(wantChunks), firstChunkDifference(chunks, wantChunks))
				}
			}
		}
	}
}

// TestPlanTextChunksReadError: a file shorter than its size says is a read
// error of the plan, wherever the missing bytes are.
func TestPlanTextChunksReadError(t *testing.T) {
	data := []byte("a,b\n" + strings.Repeat("1,2\n", 1<<19)) // 2 MiB
	for _, claimed := range []int64{int64(len(data)) + 1, int64(len(data)) + 3<<20} {
		if _, _, err := planTextChunks(bytes.NewReader(data), claimed, 4096, 2); err == nil {
			t.Errorf("size %d for %d bytes: no error", claimed, len(data))
		}
	}
}

func firstChunkDifference(got, want []textChunk) string {
	for i := range min(len(got), len(want)) {
		if !reflect.DeepEqual(got[i], want[i]) {
			return fmt.Sprintf("chunk %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(got), len(want))
}

// sequentialPlan is planTextChunks as one reader of the whole file does it
// (the plan before the file was read by several): the reference
// TestPlanTextChunksAgrees holds the plan to. It splits the data lines of an uncompressed text file of size
// bytes into ranges of about chunkBytes bytes, each starting right after a
// '\n'. It also returns the header line as written (without a byte order
// mark, with its line end).
//
// Splitting is safe only when every '\n' ends a record, so it returns no
// chunks (decode sequentially) when the file holds a quote character (a
// quoted field may span lines), when its first line is empty or longer than
// the scan block (the CSV reader would skip or read it differently), and
// when fewer than two chunks result. Errors are read errors of r.
func sequentialPlan(r io.ReaderAt, size, chunkBytes int64) ([]byte, []textChunk, error) {
	const block = 1 << 20
	buf := make([]byte, block)
	var (
		header []byte
		chunks []textChunk
		lines  int64 // '\n' seen before pos in the current block
		target int64 // the next boundary is the first '\n' at or after it
	)
	for off := int64(0); off < size; off += block {
		want := min(block, size-off)
		n, err := r.ReadAt(buf[:want], off)
		if int64(n) < want {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, nil, err
		}
		b := buf[:n]
		if bytes.IndexByte(b, '"') >= 0 {
			return nil, nil, nil
		}
		pos := 0
		if header == nil {
			start := 0
			if bytes.HasPrefix(b, utf8BOM) {
				start = len(utf8BOM)
			}
			i := bytes.IndexByte(b, '\n')
			if i < 0 || i == start || (i == start+1 && b[start] == '\r') {
				return nil, nil, nil
			}
			header = bytes.Clone(b[start : i+1])
			pos, lines = i+1, 1
			chunks = append(chunks, textChunk{off: int64(pos), lines: 1})
			target = int64(pos) + chunkBytes
		}
		for target < off+int64(n) {
			t := int(target - off)
			i := bytes.IndexByte(b[t:], '\n')
			if i < 0 {
				target = off + int64(n)
				break
			}
			bnd := t + i + 1
			lines += int64(bytes.Count(b[pos:bnd], []byte{'\n'}))
			pos = bnd
			if off+int64(bnd) >= size {
				break
			}
			chunks[len(chunks)-1].end = off + int64(bnd)
			chunks = append(chunks, textChunk{off: off + int64(bnd), lines: lines})
			target = off + int64(bnd) + chunkBytes
		}
		lines += int64(bytes.Count(b[pos:], []byte{'\n'}))
	}
	if len(chunks) < 2 {
		return nil, nil, nil
	}
	chunks[len(chunks)-1].end = size
	return header, chunks, nil
}

// TestWholeTextChunk: a small file that would be safe to split is one
// chunk of its data lines, with its text; one that would not is none,
// and so is one shorter than its size says (the reader then reads it as it
// comes); a read error is the plan's.
func TestWholeTextChunk(t *testing.T) {
	data := "\ufefftime,v\r\n2026-01-05T10:00:00Z,1\r\n2026-01-05T10:01:00Z,2"
	header, chunks, err := wholeTextChunk(strings.NewReader(data), int64(len(data)), 1<<20, 2)
	if err != nil || string(header) != "time,v\r\n" || len(chunks) != 1 {
		t.Fatalf("header %q, %d chunks, err %v", header, len(chunks), err)
	}
	c := chunks[0]
	if off := int64(len("\ufefftime,v\r\n")); c.off != off || c.end != int64(len(data)) || c.lines != 1 || string(c.text) != data[off:] {
		t.Errorf("chunk %+v (text %q)", c, c.text)
	}
	for name, d := range map[string]string{
		"quote":            "time,v\n2026-01-05T10:00:00Z,\"1\"\n",
		"empty first line": "\ntime,v\n2026-01-05T10:00:00Z,1\n",
		"header only":      "time,v\n",
		"no line end":      "time,v",
	} {
		if h, ch, err := wholeTextChunk(strings.NewReader(d), int64(len(d)), 1<<20, 2); h != nil || ch != nil || err != nil {
			t.Errorf("%s: header %q, %d chunks, err %v; want none", name, h, len(ch), err)
		}
	}
	if _, ch, err := wholeTextChunk(strings.NewReader(data), int64(len(data)), 8, 2); ch != nil || err != nil {
		t.Errorf("larger than a chunk: %d chunks, err %v; want none", len(ch), err)
	}
	if _, ch, err := wholeTextChunk(strings.NewReader(data), int64(len(data))+5, 1<<20, 2); ch != nil || err != nil {
		t.Errorf("shorter than its size: %d chunks, err %v; want none, no error", len(ch), err)
	}
	failed := errors.New("disk gone")
	if _, _, err := wholeTextChunk(errReaderAt{failed}, 100, 1<<20, 2); !errors.Is(err, failed) {
		t.Errorf("read error: %v, want %v", err, failed)
	}
}

type errReaderAt struct{ err error }

func (r errReaderAt) ReadAt([]byte, int64) (int, error) { return 0, r.err }
