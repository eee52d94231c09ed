package lake

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestManifestDeflateBlocks checks what docs/query.md says of the Avro
// files iceberg-go writes for a table (manifests and manifest lists): the
// codec is deflate, each Avro block is raw DEFLATE that compress/flate
// inflates, and it ends with an empty final stored block (BFINAL=1,
// BTYPE=00, length 0), which compress/flate writes on Close and on which
// icebird's stock deflate decoder fails. When this test fails, the
// icebird section of docs/query.md and the interop harness's hook
// (test/interop/icebird/avro-inflate-hook.mjs) are to be looked at again.
func TestManifestDeflateBlocks(t *testing.T) {
	tbl := createTestTable(t, newLocalLake(t))
	appendRows(t, tbl, "b1", day0, 50)
	appendRows(t, tbl, "b2", day0.Add(24*time.Hour), 50)
	dir := tbl.Location()
	if u, err := url.Parse(dir); err == nil && u.Scheme == "file" {
		dir = u.Path
	}
	files, err := filepath.Glob(filepath.Join(dir, "metadata", "*.avro"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Avro files in %s (%v)", dir, err)
	}
	for _, f := range files {
		codec, blocks, err := avroBlocks(f)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if codec != "deflate" || len(blocks) == 0 {
			t.Fatalf("%s: codec %q, %d blocks; want deflate blocks", filepath.Base(f), codec, len(blocks))
		}
		for i, b := range blocks {
			if _, err := io.ReadAll(flate.NewReader(bytes.NewReader(b))); err != nil {
				t.Errorf("%s block %d: compress/flate: %v", filepath.Base(f), i, err)
			}
			kinds, err := deflateBlocks(b)
			if err != nil {
				t.Fatalf("%s block %d: %v", filepath.Base(f), i, err)
			}
			if last := kinds[len(kinds)-1]; last != "stored final 0" {
				t.Errorf("%s block %d: DEFLATE blocks %v, want the last one the empty final stored block", filepath.Base(f), i, kinds)
			}
		}
	}
}

// avroBlocks returns the codec of an Avro object container file and the
// data of its blocks.
func avroBlocks(path string) (string, [][]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	r := bufio.NewReader(bytes.NewReader(raw))
	magic := make([]byte, 4)
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != "Obj\x01" {
		return "", nil, fmt.Errorf("not an Avro container (%v)", err)
	}
	readBytes := func() ([]byte, error) {
		n, err := binary.ReadVarint(r)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad length %d (%v)", n, err)
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b, err
	}
	codec := "null"
	for {
		n, err := binary.ReadVarint(r)
		if err != nil {
			return "", nil, err
		}
		if n == 0 {
			break
		}
		if n < 0 {
			n = -n
			if _, err := binary.ReadVarint(r); err != nil {
				return "", nil, err
			}
		}
		for ; n > 0; n-- {
			k, err := readBytes()
			if err != nil {
				return "", nil, err
			}
			v, err := readBytes()
			if err != nil {
				return "", nil, err
			}
			if string(k) == "avro.codec" {
				codec = string(v)
			}
		}
	}
	sync := make([]byte, 16)
	if _, err := io.ReadFull(r, sync); err != nil {
		return "", nil, err
	}
	var blocks [][]byte
	for {
		if _, err := r.Peek(1); errors.Is(err, io.EOF) {
			return codec, blocks, nil
		}
		if _, err := binary.ReadVarint(r); err != nil { // the count of objects
			return "", nil, err
		}
		b, err := readBytes()
		if err != nil {
			return "", nil, err
		}
		s := make([]byte, 16)
		if _, err := io.ReadFull(r, s); err != nil || !bytes.Equal(s, sync) {
			return "", nil, fmt.Errorf("block %d: no sync marker after it (%v)", len(blocks), err)
		}
		blocks = append(blocks, b)
	}
}

// bitReader reads a DEFLATE stream's bits, least significant first.
type bitReader struct {
	b   []byte
	pos int // in bits
}

var errShort = errors.New("DEFLATE stream ends early")

func (r *bitReader) bits(n int) (int, error) {
	v := 0
	for i := range n {
		if r.pos/8 >= len(r.b) {
			return 0, errShort
		}
		v |= int(r.b[r.pos/8]>>(r.pos%8)&1) << i
		r.pos++
	}
	return v, nil
}

// huffman maps (code length, code) to a symbol: the canonical code of
// RFC 1951 3.2.2.
type huffman map[[2]int]int

func newHuffman(lengths []int) huffman {
	var count [16]int
	for _, l := range lengths {
		count[l]++
	}
	count[0] = 0
	var next [16]int
	for code, l := 0, 1; l < 16; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	h := huffman{}
	for s, l := range lengths {
		if l > 0 {
			h[[2]int{l, next[l]}] = s
			next[l]++
		}
	}
	return h
}

func (r *bitReader) symbol(h huffman) (int, error) {
	code := 0
	for l := 1; l < 16; l++ {
		b, err := r.bits(1)
		if err != nil {
			return 0, err
		}
		code = code<<1 | b
		if s, ok := h[[2]int{l, code}]; ok {
			return s, nil
		}
	}
	return 0, errors.New("no Huffman code matches")
}

var (
	lengthExtra   = []int{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distanceExtra = []int{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	clOrder       = []int{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// deflateBlocks walks a raw DEFLATE stream (RFC 1951) and names its
// blocks: "stored final 0" (a final stored block of 0 bytes), "dynamic",
// "fixed final", ...
func deflateBlocks(raw []byte) ([]string, error) {
	r := &bitReader{b: raw}
	var out []string
	for {
		final, err := r.bits(1)
		if err != nil {
			return out, err
		}
		typ, err := r.bits(2)
		if err != nil {
			return out, err
		}
		name := [...]string{"stored", "fixed", "dynamic", "reserved"}[typ]
		if final == 1 {
			name += " final"
		}
		switch typ {
		case 0:
			o := (r.pos + 7) / 8
			if o+4 > len(raw) {
				return out, errShort
			}
			n := int(binary.LittleEndian.Uint16(raw[o:]))
			if ^uint16(n) != binary.LittleEndian.Uint16(raw[o+2:]) {
				return out, errors.New("stored block: LEN and NLEN disagree")
			}
			r.pos = (o + 4 + n) * 8
			name += fmt.Sprintf(" %d", n)
		case 1, 2:
			lit, dist, err := r.codes(typ)
			if err != nil {
				return out, err
			}
			for {
				s, err := r.symbol(lit)
				if err != nil {
					return out, err
				}
				if s == 256 {
					break
				}
				if s > 256 {
					if _, err := r.bits(lengthExtra[s-257]); err != nil {
						return out, err
					}
					d, err := r.symbol(dist)
					if err != nil {
						return out, err
					}
					if _, err := r.bits(distanceExtra[d]); err != nil {
						return out, err
					}
				}
			}
		default:
			return out, errors.New("reserved block type")
		}
		out = append(out, name)
		if final == 1 {
			if rest := len(raw) - (r.pos+7)/8; rest != 0 {
				return out, fmt.Errorf("%d bytes after the final block", rest)
			}
			return out, nil
		}
	}
}

// codes reads the Huffman codes of a fixed (1) or dynamic (2) block.
func (r *bitReader) codes(typ int) (huffman, huffman, error) {
	if typ == 1 {
		lit := make([]int, 288)
		for i := range lit {
			switch {
			case i < 144, i >= 280:
				lit[i] = 8
			case i < 256:
				lit[i] = 9
			default:
				lit[i] = 7
			}
		}
		dist := make([]int, 30)
		for i := range dist {
			dist[i] = 5
		}
		return newHuffman(lit), newHuffman(dist), nil
	}
	var hdr [3]int
	for i, n := range []int{5, 5, 4} {
		v, err := r.bits(n)
		if err != nil {
			return nil, nil, err
		}
		hdr[i] = v
	}
	hlit, hdist, hclen := hdr[0]+257, hdr[1]+1, hdr[2]+4
	cl := make([]int, 19)
	for i := range hclen {
		v, err := r.bits(3)
		if err != nil {
			return nil, nil, err
		}
		cl[clOrder[i]] = v
	}
	clh := newHuffman(cl)
	var lens []int
	for len(lens) < hlit+hdist {
		s, err := r.symbol(clh)
		if err != nil {
			return nil, nil, err
		}
		repeat, value, extra, base := 1, s, 0, 0
		switch s {
		case 16:
			if len(lens) == 0 {
				return nil, nil, errors.New("repeat with no length before it")
			}
			value, extra, base = lens[len(lens)-1], 2, 3
		case 17:
			value, extra, base = 0, 3, 3
		case 18:
			value, extra, base = 0, 7, 11
		}
		if s >= 16 {
			n, err := r.bits(extra)
			if err != nil {
				return nil, nil, err
			}
			repeat = base + n
		}
		for range repeat {
			lens = append(lens, value)
		}
	}
	return newHuffman(lens[:hlit]), newHuffman(lens[hlit:]), nil
}

// TestDeflateBlocks checks the walker on streams of known blocks.
func TestDeflateBlocks(t *testing.T) {
	data := []byte(strings.Repeat("a row of a manifest, ", 40))
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, flate.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := deflateBlocks(b.Bytes())
	if err != nil || strings.Join(got, ",") != "dynamic,stored final 0" && strings.Join(got, ",") != "fixed,stored final 0" {
		t.Errorf("compress/flate: blocks %v, %v; want a Huffman block and the empty final stored block", got, err)
	}
	b.Reset()
	w, err = flate.NewWriter(&b, flate.NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data[:100]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := deflateBlocks(b.Bytes()); err != nil || strings.Join(got, ",") != "stored 100,stored final 0" {
		t.Errorf("no compression: blocks %v, %v", got, err)
	}
}
