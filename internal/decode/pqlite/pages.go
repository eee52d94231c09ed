package pqlite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/andybalholm/brotli"
	"github.com/apache/thrift/lib/go/thrift"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/encoding/bytestreamsplit"
	"github.com/parquet-go/parquet-go/encoding/delta"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"

	"github.com/timelake/timelake/internal/decode"
)

// readBuffer is the buffer a column chunk is read through.
const readBuffer = 256 << 10

// maxPage is the largest page size read (a larger one is damage).
const maxPage = 1 << 30

// values are the decoded values of a page (or a dictionary), of one
// physical type.
type values struct {
	n     int
	i32   []int32
	i64   []int64
	f32   []float32
	f64   []float64
	bools []byte         // one a byte
	rle   *hybridDecoder // RLE booleans, read as they are asked for
	i96   [][12]byte     // INT96
	data  []byte         // BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY values
	offs  []uint32       // BYTE_ARRAY: n+1 offsets into data
	width int            // FIXED_LEN_BYTE_ARRAY
}

// bytesAt is byte array value j.
func (v *values) bytesAt(j int) []byte {
	if v.width > 0 {
		return v.data[j*v.width : (j+1)*v.width]
	}
	return v.data[v.offs[j]:v.offs[j+1]]
}

// page is a data page being read: its levels and dictionary indexes are
// decoded as the rows are read.
type page struct {
	defs levels // nil: no definition levels (a required column)
	n    int    // levels (rows) in the page
	pos  int    // the next level
	vals *values
	idx  *hybridDecoder // dictionary indexes; nil: vals holds the values
	next int            // the next value
}

// chunkReader reads the pages of one column chunk.
type chunkReader struct {
	ctx    context.Context
	leaf   *node
	codec  format.CompressionCodec
	br     *bufio.Reader
	src    *countingReader // under br
	length int64           // the chunk's bytes
	left   int64           // values the chunk holds that have not been paged in
	dict   *values
	cur    *page
	done   bool
	lz4    decode.LZ4Codec
	zstd   *zstd.Decoder
	header *reader
}

// openChunk opens the column chunk of leaf l in row group g.
func (f *footer) openChunk(ctx context.Context, r io.ReaderAt, g int, l *node) (*chunkReader, error) {
	cc, err := f.chunk(g, l.leaf)
	if err != nil {
		return nil, err
	}
	if cc.CryptoMetadata.Value != nil || len(cc.EncryptedColumnMetadata) > 0 {
		return nil, errors.New("column in rowgroup is encrypted, but no file decryptor")
	}
	cm := &cc.MetaData
	if cm.NumValues <= 0 {
		// No values: no page is read, wherever the chunk says it is.
		return &chunkReader{ctx: ctx, leaf: l, done: true}, nil
	}
	start := cm.DataPageOffset
	if cm.DictionaryPageOffset > 0 && start > cm.DictionaryPageOffset {
		start = cm.DictionaryPageOffset
	}
	length := cm.TotalCompressedSize
	if f.before816() {
		if start < 0 || length < 0 {
			return nil, fmt.Errorf("invalid column chunk metadata, offset (%d) and length (%d) should both be positive", start, length)
		}
		if start > f.size || length > f.size {
			return nil, fmt.Errorf("invalid column chunk metadata, offset (%d) and length (%d) must both be less than total source size (%d)", start, length, f.size)
		}
		length += min(100, f.size-(start+length))
	}
	if start < 0 || length < 0 || start > f.size || length > f.size-start {
		return nil, fmt.Errorf("parquet: column chunk at offset %d of %d bytes is outside the file of %d bytes", start, length, f.size)
	}
	c := &chunkReader{ctx: ctx, leaf: l, codec: cm.Codec, left: cm.NumValues, length: length,
		src: &countingReader{r: io.NewSectionReader(r, start, length)}}
	c.br = bufio.NewReaderSize(c.src, readBuffer)
	c.header = &reader{ctx: ctx, p: thrift.NewTCompactProtocolConf(headerTransport{c.br}, &thrift.TConfiguration{})}
	return c, nil
}

// close releases the chunk's decoders.
func (c *chunkReader) close() {
	if c.zstd != nil {
		c.zstd.Close()
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// body reads the n bytes of a page's body (no more than the chunk holds:
// a damaged size is refused before its buffer is allocated).
func (c *chunkReader) body(n int) ([]byte, error) {
	if left := c.length - (c.src.n - int64(c.br.Buffered())); int64(n) > left {
		return nil, fmt.Errorf("parquet: expected to read %d compressed bytes, got %d", n, left)
	}
	b := make([]byte, n)
	if got, err := io.ReadFull(c.br, b); err != nil {
		return nil, fmt.Errorf("parquet: expected to read %d compressed bytes, got %d", n, got)
	}
	return b, nil
}

// decompress decompresses src, whose uncompressed size is n. A size
// beyond what the codec can make of src's bytes is refused before its
// buffer is allocated.
func (c *chunkReader) decompress(src []byte, n int) ([]byte, error) {
	var (
		out []byte
		err error
	)
	tooLarge := func(ratio int) error {
		if int64(n) > int64(ratio)*int64(len(src))+64 {
			return fmt.Errorf("parquet: metadata said %d bytes uncompressed data page, more than %d compressed bytes can hold", n, len(src))
		}
		return nil
	}
	switch c.codec {
	case format.Uncompressed:
		out = src
	case format.Snappy:
		var m int
		if m, err = s2.DecodedLen(src); err == nil {
			if err := tooLarge(64); err != nil {
				return nil, err
			}
			if m != n {
				return nil, fmt.Errorf("parquet: metadata said %d bytes uncompressed data page, got %d bytes", n, m)
			}
			out, err = s2.Decode(make([]byte, n), src)
		}
	case format.Gzip:
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(src)); err == nil {
			out, err = io.ReadAll(io.LimitReader(zr, int64(n)+1))
		}
	case format.Brotli:
		out, err = io.ReadAll(io.LimitReader(brotli.NewReader(bytes.NewReader(src)), int64(n)+1))
	case format.Zstd:
		if c.zstd == nil {
			if c.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxPage)); err != nil {
				return nil, err
			}
		}
		out, err = c.zstd.DecodeAll(src, make([]byte, 0, min(int64(n), 16*int64(len(src))+4096)))
	case format.Lz4:
		if err := tooLarge(256); err != nil {
			return nil, err
		}
		out, err = c.lz4.DecodeWithError(make([]byte, n), src)
	case format.Lz4Raw:
		if err := tooLarge(256); err != nil {
			return nil, err
		}
		var m int
		out = make([]byte, n)
		m, err = lz4.UncompressBlock(src, out)
		out = out[:max(m, 0)]
	default:
		return nil, fmt.Errorf("parquet: unsupported compression codec %d", c.codec)
	}
	if err != nil {
		return nil, fmt.Errorf("parquet: could not decompress page: %w", err)
	}
	if len(out) != n {
		return nil, fmt.Errorf("parquet: metadata said %d bytes uncompressed data page, got %d bytes", n, len(out))
	}
	return out, nil
}

// nextPage reads pages up to the next data page; false at the chunk's end.
func (c *chunkReader) nextPage() (bool, error) {
	for c.left > 0 {
		if err := c.ctx.Err(); err != nil {
			return false, err
		}
		if _, err := c.br.Peek(1); errors.Is(err, io.EOF) {
			return false, nil
		}
		var h format.PageHeader
		if err := c.header.pageHeader(&h); err != nil {
			return false, errors.New("parquet: deserializing page header failed")
		}
		if h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 {
			return false, errors.New("parquet: invalid page header (negative page size)")
		}
		if h.CompressedPageSize > maxPage || h.UncompressedPageSize > maxPage {
			return false, fmt.Errorf("parquet: page size %d exceeds the limit %d", max(h.CompressedPageSize, h.UncompressedPageSize), maxPage)
		}
		compressed, uncompressed := int(h.CompressedPageSize), int(h.UncompressedPageSize)
		switch h.Type {
		case format.DictionaryPage:
			dh, ok := h.DictionaryPageHeader.Get()
			if !ok {
				return false, errors.New("parquet: invalid dictionary page header")
			}
			if dh.NumValues < 0 {
				return false, errors.New("parquet: invalid page header (negative number of values)")
			}
			src, err := c.body(compressed)
			if err != nil {
				return false, err
			}
			data, err := c.decompress(src, uncompressed)
			if err != nil {
				return false, err
			}
			if c.dict != nil {
				return false, errors.New("parquet: column chunk cannot have more than one dictionary")
			}
			if dh.Encoding != format.Plain && dh.Encoding != format.PlainDictionary {
				return false, errors.New("parquet: dictionary index must be plain encoding")
			}
			if c.dict, err = c.decodeValues(format.Plain, data, int(dh.NumValues)); err != nil {
				return false, err
			}
			if c.dict.n < int(dh.NumValues) {
				return false, fmt.Errorf("parquet: dictionary page of %d values holds %d", dh.NumValues, c.dict.n)
			}
		case format.DataPage:
			dh, ok := h.DataPageHeader.Get()
			if !ok {
				return false, errors.New("parquet: invalid data page header")
			}
			if dh.NumValues < 0 {
				return false, errors.New("parquet: invalid page header (negative number of values)")
			}
			c.left -= int64(dh.NumValues)
			src, err := c.body(compressed)
			if err != nil {
				return false, err
			}
			data, err := c.decompress(src, uncompressed)
			if err != nil {
				return false, err
			}
			p := &page{n: int(dh.NumValues)}
			if c.leaf.maxRep > 0 {
				return false, errors.New("parquet: repeated column")
			}
			if c.leaf.maxDef > 0 {
				var used int
				if p.defs, used, err = levelsV1(dh.DefinitionLevelEncoding, data, p.n, c.leaf.maxDef); err != nil {
					return false, err
				}
				data = data[used:]
			}
			if err := c.setValues(p, dh.Encoding, data); err != nil {
				return false, err
			}
			c.cur = p
			return true, nil
		case format.DataPageV2:
			dh, ok := h.DataPageHeaderV2.Get()
			if !ok {
				return false, errors.New("parquet: invalid data page header")
			}
			if dh.NumValues < 0 {
				return false, errors.New("parquet: invalid page header (negative number of values)")
			}
			if dh.DefinitionLevelsByteLength < 0 || dh.RepetitionLevelsByteLength < 0 {
				return false, errors.New("parquet: invalid page header (negative levels byte length)")
			}
			levels := int(dh.DefinitionLevelsByteLength) + int(dh.RepetitionLevelsByteLength)
			if levels > compressed {
				return false, fmt.Errorf("parquet: V2 level region %d exceeds page body %d (corrupt page?)", levels, compressed)
			}
			c.left -= int64(dh.NumRows)
			src, err := c.body(compressed)
			if err != nil {
				return false, err
			}
			data := src[levels:]
			isCompressed := true
			if v, ok := dh.IsCompressed.Get(); ok {
				isCompressed = v
			}
			if isCompressed && c.codec != format.Uncompressed {
				if uncompressed < levels {
					return false, fmt.Errorf("parquet: metadata said %d bytes uncompressed data page, got %d bytes", uncompressed, levels)
				}
				if data, err = c.decompress(data, uncompressed-levels); err != nil {
					return false, err
				}
			} else if len(src) != uncompressed {
				return false, fmt.Errorf("parquet: metadata said %d bytes uncompressed data page, got %d bytes", uncompressed, len(src))
			}
			p := &page{n: int(dh.NumValues)}
			if c.leaf.maxRep > 0 {
				return false, errors.New("parquet: repeated column")
			}
			if c.leaf.maxDef > 0 {
				defs := src[dh.RepetitionLevelsByteLength:levels]
				p.defs = newHybrid(defs, bitWidth(c.leaf.maxDef))
			}
			if err := c.setValues(p, dh.Encoding, data); err != nil {
				return false, err
			}
			c.cur = p
			return true, nil
		default:
			if _, err := c.br.Discard(compressed); err != nil {
				return false, fmt.Errorf("parquet: expected to read %d compressed bytes: %w", compressed, err)
			}
		}
	}
	return false, nil
}

// bitWidth is the bits of a level up to max.
func bitWidth(max int16) int {
	w := 0
	for v := max; v > 0; v >>= 1 {
		w++
	}
	return w
}

// levelsV1 are the n definition levels at the start of a v1 page's data
// and the bytes they take.
func levelsV1(enc format.Encoding, data []byte, n int, maxDef int16) (levels, int, error) {
	switch enc {
	case format.RLE:
		if len(data) < 4 {
			return nil, 0, errors.New("parquet: data page too small for levels (corrupt header?)")
		}
		m := int64(binary.LittleEndian.Uint32(data))
		if m > int64(len(data)-4) {
			return nil, 0, fmt.Errorf("parquet: invalid V1 level region length %d", m)
		}
		return newHybrid(data[4:4+m], bitWidth(maxDef)), 4 + int(m), nil
	case format.BitPacked:
		w := bitWidth(maxDef)
		m := (n*w + 7) / 8
		if m > len(data) {
			return nil, 0, errors.New("parquet: data page too small for levels (corrupt header?)")
		}
		defs := make([]byte, n)
		for i := range n {
			var v int
			for b := range w {
				bit := i*w + b
				v = v<<1 | int(data[bit/8]>>(7-bit%8)&1)
			}
			defs[i] = byte(v)
		}
		return &packedLevels{l: defs}, m, nil
	}
	return nil, 0, fmt.Errorf("parquet: unsupported level encoding %d", enc)
}

// setValues sets the values of page p, encoded enc in data: decoded when
// they are plain (their bytes bound them), read as the rows are read when
// they are dictionary indexes.
func (c *chunkReader) setValues(p *page, enc format.Encoding, data []byte) error {
	if enc == format.PlainDictionary || enc == format.RLEDictionary {
		if c.dict == nil {
			return errors.New("parquet: dictionary page must be before data page")
		}
		p.vals = c.dict
		if len(data) < 1 {
			p.idx = &hybridDecoder{err: errors.New("parquet: dictionary indexes: no bit width")}
			return nil
		}
		p.idx = newHybrid(data[1:], int(data[0]))
		return nil
	}
	v, err := c.decodeValues(enc, data, p.n)
	if err != nil {
		return err
	}
	p.vals = v
	return nil
}

// decodeValues decodes at most want values of the leaf's type, encoded enc.
func (c *chunkReader) decodeValues(enc format.Encoding, data []byte, want int) (*values, error) {
	v := &values{}
	var err error
	bad := func() error {
		return fmt.Errorf("parquet: encoding %d is not one of a %s column", enc, c.leaf.physical)
	}
	switch c.leaf.physical {
	case format.Boolean:
		switch enc {
		case format.Plain:
			v.bools = make([]byte, min(want, 8*len(data)))
			for i := range v.bools {
				v.bools[i] = data[i/8] >> (i % 8) & 1
			}
		case format.RLE:
			if len(data) < 4 || int64(binary.LittleEndian.Uint32(data)) > int64(len(data)-4) {
				return nil, errors.New("parquet: boolean RLE data cut short")
			}
			v.rle = newHybrid(data[4:4+binary.LittleEndian.Uint32(data)], 1)
			v.n = want
		default:
			return nil, bad()
		}
		if v.rle == nil {
			v.n = len(v.bools)
		}
	case format.Int32:
		switch enc {
		case format.Plain:
			v.i32 = make([]int32, min(want, len(data)/4))
			for i := range v.i32 {
				v.i32[i] = int32(binary.LittleEndian.Uint32(data[4*i:]))
			}
		case format.DeltaBinaryPacked:
			if err = checkDelta(data, want, 1, 32); err == nil {
				v.i32, err = (&delta.BinaryPackedEncoding{}).DecodeInt32(nil, data)
			}
		case format.ByteStreamSplit:
			if err = checkSplit(data, 4, want); err == nil {
				v.i32, err = (&bytestreamsplit.Encoding{}).DecodeInt32(nil, data)
			}
		default:
			return nil, bad()
		}
		v.n = len(v.i32)
	case format.Int64:
		switch enc {
		case format.Plain:
			v.i64 = make([]int64, min(want, len(data)/8))
			for i := range v.i64 {
				v.i64[i] = int64(binary.LittleEndian.Uint64(data[8*i:]))
			}
		case format.DeltaBinaryPacked:
			if err = checkDelta(data, want, 1, 64); err == nil {
				v.i64, err = (&delta.BinaryPackedEncoding{}).DecodeInt64(nil, data)
			}
		case format.ByteStreamSplit:
			if err = checkSplit(data, 8, want); err == nil {
				v.i64, err = (&bytestreamsplit.Encoding{}).DecodeInt64(nil, data)
			}
		default:
			return nil, bad()
		}
		v.n = len(v.i64)
	case format.Int96:
		if enc != format.Plain {
			return nil, bad()
		}
		v.i96 = make([][12]byte, min(want, len(data)/12))
		for i := range v.i96 {
			copy(v.i96[i][:], data[12*i:])
		}
		v.n = len(v.i96)
	case format.Float:
		switch enc {
		case format.Plain:
			v.f32 = make([]float32, min(want, len(data)/4))
			for i := range v.f32 {
				v.f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
			}
		case format.ByteStreamSplit:
			if err = checkSplit(data, 4, want); err == nil {
				v.f32, err = (&bytestreamsplit.Encoding{}).DecodeFloat(nil, data)
			}
		default:
			return nil, bad()
		}
		v.n = len(v.f32)
	case format.Double:
		switch enc {
		case format.Plain:
			v.f64 = make([]float64, min(want, len(data)/8))
			for i := range v.f64 {
				v.f64[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:]))
			}
		case format.ByteStreamSplit:
			if err = checkSplit(data, 8, want); err == nil {
				v.f64, err = (&bytestreamsplit.Encoding{}).DecodeDouble(nil, data)
			}
		default:
			return nil, bad()
		}
		v.n = len(v.f64)
	case format.ByteArray:
		switch enc {
		case format.Plain:
			v.offs = []uint32{0}
			for len(v.offs) <= want {
				if len(data) < 4 {
					break
				}
				m := binary.LittleEndian.Uint32(data)
				if int64(m) > int64(len(data)-4) {
					return nil, errors.New("parquet: byte array value cut short")
				}
				v.data = append(v.data, data[4:4+m]...)
				v.offs = append(v.offs, uint32(len(v.data)))
				data = data[4+m:]
			}
		case format.DeltaLengthByteArray:
			if err = checkDelta(data, want, 1, 32); err == nil {
				v.data, v.offs, err = (&delta.LengthByteArrayEncoding{}).DecodeByteArray(nil, data, nil)
			}
		case format.DeltaByteArray:
			if err = checkDelta(data, want, 2, 32); err == nil {
				v.data, v.offs, err = (&delta.ByteArrayEncoding{}).DecodeByteArray(nil, data, nil)
			}
		default:
			return nil, bad()
		}
		v.n = max(len(v.offs)-1, 0)
	case format.FixedLenByteArray:
		w, _ := c.leaf.el.TypeLength.Get()
		v.width = int(w)
		switch enc {
		case format.Plain:
			v.data = data[:min(want, len(data)/v.width)*v.width]
		case format.ByteStreamSplit:
			if err = checkSplit(data, v.width, want); err == nil {
				v.data, err = (&bytestreamsplit.Encoding{}).DecodeFixedLenByteArray(nil, data, v.width)
			}
		case format.DeltaByteArray:
			var offs []uint32
			if err = checkDelta(data, want, 2, 32); err == nil {
				v.data, offs, err = (&delta.ByteArrayEncoding{}).DecodeByteArray(nil, data, nil)
			}
			for i := 1; err == nil && i < len(offs); i++ {
				if int(offs[i]-offs[i-1]) != v.width {
					err = errors.New("a value of another length than the column's")
				}
			}
		default:
			return nil, bad()
		}
		v.n = len(v.data) / v.width
	}
	if err != nil {
		return nil, fmt.Errorf("parquet: decoding %s values: %w", c.leaf.physical, err)
	}
	return v, nil
}

// checkSplit refuses BYTE_STREAM_SPLIT data of values of width bytes
// that holds more than the page's want values, as arrow-go does
// (validateByteStreamSplitPageData); parquet-go's decoder reads them all.
func checkSplit(data []byte, width, want int) error {
	if len(data)/width > want || len(data)/width == want && len(data)%width != 0 {
		return fmt.Errorf("data size (%d) is too small for the number of values in in BYTE_STREAM_SPLIT (%d)", len(data), want)
	}
	return nil
}

// read calls add for at most n rows of the chunk: value j of vals, or
// j < 0 for a null. It returns the rows read: fewer at the chunk's end.
func (c *chunkReader) read(n int64, add func(vals *values, j int) error) (int64, error) {
	var got int64
	for got < n {
		if c.cur == nil || c.cur.pos >= c.cur.n {
			if c.done {
				break
			}
			ok, err := c.nextPage()
			if err != nil {
				return got, err
			}
			if !ok {
				c.done = true
				c.cur = nil
				break
			}
			continue
		}
		p := c.cur
		for ; got < n && p.pos < p.n; p.pos++ {
			if p.defs != nil {
				d, err := p.defs.next()
				if err != nil {
					return got, fmt.Errorf("parquet: definition levels: %w", err)
				}
				// A level other than the most is a null (arrow-go counts
				// only the levels at the most as values).
				if d != uint32(c.leaf.maxDef) {
					if err := add(nil, -1); err != nil {
						return got, err
					}
					got++
					continue
				}
			}
			j := p.next
			if p.idx != nil {
				i, err := p.idx.next()
				if err != nil {
					return got, fmt.Errorf("parquet: dictionary indexes: %w", err)
				}
				if int64(i) >= int64(p.vals.n) {
					return got, fmt.Errorf("parquet: dictionary index %d out of range (%d values)", i, p.vals.n)
				}
				j = int(i)
			} else if j >= p.vals.n {
				return got, fmt.Errorf("parquet: page of %d values holds %d", p.n, p.vals.n)
			}
			p.next++
			if err := add(p.vals, j); err != nil {
				return got, err
			}
			got++
		}
	}
	return got, nil
}
