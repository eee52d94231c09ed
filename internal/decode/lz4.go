package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/pierrec/lz4/v4"
)

// LZ4Codec reads pages of the deprecated Parquet codec LZ4 (codec 5, not
// LZ4_RAW), which arrow-go does not read: writers stored its pages in
// three ways over the years, told apart per page. parquet-mr and Arrow
// C++ write the Hadoop framing, blocks of a 4-byte big-endian
// uncompressed size, a 4-byte big-endian compressed size and a raw LZ4
// block, whose sizes add up to the page's; older pyarrow wrote the LZ4
// frame format (magic 0x184D2204); some wrote a raw LZ4 block. A page is
// read only when it comes out at exactly the page's uncompressed size
// (the page reader's buffer); otherwise the codec is named in the
// refusal. Pages are written in the Hadoop framing, as Arrow C++ does.
// It is a codec of arrow-go's parquet/compress (decode/arrowpq registers
// it), without importing it.
type LZ4Codec struct{}

// lz4FrameMagic starts an LZ4 frame (little-endian 0x184D2204).
var lz4FrameMagic = []byte{0x04, 0x22, 0x4d, 0x18}

// DecodeWithError decodes src into dst, whose length is the page's
// uncompressed size.
func (LZ4Codec) DecodeWithError(dst, src []byte) ([]byte, error) {
	if bytes.HasPrefix(src, lz4FrameMagic) {
		r := lz4.NewReader(bytes.NewReader(src))
		if _, err := io.ReadFull(r, dst); err != nil {
			return nil, fmt.Errorf("LZ4 (codec 5) page in the LZ4 frame format: %w", err)
		}
		if n, err := r.Read(make([]byte, 1)); n > 0 || !errors.Is(err, io.EOF) {
			return nil, errors.New("LZ4 (codec 5) page in the LZ4 frame format holds more than the page's uncompressed size")
		}
		return dst, nil
	}
	if lz4Hadoop(dst, src) {
		return dst, nil
	}
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil || n != len(dst) {
		return nil, fmt.Errorf("LZ4 (codec 5) page is neither in the Hadoop framing, the LZ4 frame format nor a raw LZ4 block of the page's uncompressed size (%d bytes)", len(dst))
	}
	return dst, nil
}

// lz4Hadoop decodes src in the Hadoop framing into dst, reporting whether
// src is in that framing and fills dst exactly.
func lz4Hadoop(dst, src []byte) bool {
	out := 0
	for len(src) > 0 {
		if len(src) < 8 {
			return false
		}
		usize := int64(binary.BigEndian.Uint32(src))
		csize := int64(binary.BigEndian.Uint32(src[4:]))
		if csize > int64(len(src)-8) || usize > int64(len(dst)-out) {
			return false
		}
		n, err := lz4.UncompressBlock(src[8:8+csize], dst[out:out+int(usize)])
		if err != nil || int64(n) != usize {
			return false
		}
		out += n
		src = src[8+csize:]
	}
	return out == len(dst)
}

func (c LZ4Codec) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}

// Encode writes src as one block of the Hadoop framing.
func (c LZ4Codec) Encode(dst, src []byte) []byte {
	bound := c.CompressBound(int64(len(src)))
	if int64(cap(dst)) < bound {
		dst = make([]byte, bound)
	}
	dst = dst[:bound]
	n, err := lz4.CompressBlock(src, dst[8:], nil)
	if err != nil {
		panic(err)
	}
	if n == 0 && len(src) > 0 {
		n = lz4Literals(dst[8:], src)
	}
	binary.BigEndian.PutUint32(dst, uint32(len(src)))
	binary.BigEndian.PutUint32(dst[4:], uint32(n))
	return dst[:8+n]
}

// lz4Literals writes src as an LZ4 block of literals alone (data LZ4
// does not compress) into dst, of at least lz4.CompressBlockBound bytes,
// and returns its length.
func lz4Literals(dst, src []byte) int {
	n := 1
	if len(src) < 15 {
		dst[0] = byte(len(src)) << 4
	} else {
		dst[0] = 0xf0
		rest := len(src) - 15
		for ; rest >= 255; rest -= 255 {
			dst[n] = 255
			n++
		}
		dst[n] = byte(rest)
		n++
	}
	return n + copy(dst[n:], src)
}

func (c LZ4Codec) EncodeLevel(dst, src []byte, _ int) []byte { return c.Encode(dst, src) }

func (LZ4Codec) CompressBound(n int64) int64 { return 8 + int64(lz4.CompressBlockBound(int(n))) }
