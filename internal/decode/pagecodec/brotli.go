// Package pagecodec mends arrow-go's Parquet page codecs where they refuse
// pages other writers, and arrow-go's own writer, write. Importing it
// registers them with arrow-go's parquet/compress for the whole process:
// decode/arrowpq (landing files) and lake/datafile (data files, read back
// by compaction, deletes and undo) import it.
//
// Brotli: a data page v2 whose values are all null has an empty values
// section, which a writer compresses into a brotli stream of one byte.
// arrow-go's brotli codec cannot decode that stream into the page's empty
// destination ("decoded data exceeds destination size 0": its first read
// of an empty buffer reads nothing and reports no end), so a Parquet file
// with brotli pages and a column chunk of only nulls could not be read: a
// landing file was refused, and a table whose
// write.parquet.compression-codec is brotli could not compact such a data
// file. Brotli here decodes a page of no bytes itself and leaves every
// other page to arrow-go's codec.
package pagecodec

import (
	"bytes"
	"errors"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/apache/arrow-go/v18/parquet/compress"
)

func init() {
	if c, err := compress.GetCodec(compress.Codecs.Brotli); err == nil {
		ec, decodes := c.(compress.ErrorCodec)
		sc, streams := c.(compress.StreamingCodec)
		if _, mended := c.(Brotli); decodes && streams && !mended {
			compress.RegisterCodec(compress.Codecs.Brotli, Brotli{ErrorCodec: ec, StreamingCodec: sc})
		}
	}
}

// Brotli is arrow-go's brotli codec (ErrorCodec) reading pages of no bytes
// itself. Its streams are arrow-go's (StreamingCodec): without them
// arrow-go reads every page of the column whole instead of streaming the
// pages over 1 MiB; a page of no bytes is never streamed.
type Brotli struct {
	compress.ErrorCodec
	compress.StreamingCodec
}

// errEmptyPageHoldsBytes refuses a page of no bytes whose brotli stream
// holds some.
var errEmptyPageHoldsBytes = errors.New("codec: brotli: a page of 0 bytes decodes to more")

// DecodeWithError decodes src into dst, whose length is the page's
// uncompressed size: a stream that decodes to nothing when dst is empty,
// else as arrow-go's codec does.
func (c Brotli) DecodeWithError(dst, src []byte) ([]byte, error) {
	if dst == nil || len(dst) > 0 {
		return c.ErrorCodec.DecodeWithError(dst, src)
	}
	var one [1]byte
	n, err := io.ReadFull(brotli.NewReader(bytes.NewReader(src)), one[:])
	switch {
	case n > 0:
		return nil, errEmptyPageHoldsBytes
	case errors.Is(err, io.EOF):
		return dst, nil
	default:
		return nil, err
	}
}

// Decode is DecodeWithError, panicking on an error as arrow-go's codecs do
// (compress.Decode calls DecodeWithError).
func (c Brotli) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}
