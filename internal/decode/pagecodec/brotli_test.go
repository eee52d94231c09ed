package pagecodec

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestBrotliEmptyPage: a brotli stream of no bytes decodes into a page of
// no bytes (arrow-go's codec refuses it); a stream of some bytes into an
// empty page is refused; other pages decode as with arrow-go's codec.
func TestBrotliEmptyPage(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Brotli)
	if err != nil {
		t.Fatal(err)
	}
	ours, ok := c.(Brotli)
	if !ok {
		t.Fatalf("registered brotli codec is %T, want Brotli", c)
	}
	// arrow-go streams the pages over 1 MiB of a codec that streams.
	if _, ok := c.(compress.StreamingCodec); !ok {
		t.Error("the registered brotli codec does not stream")
	}
	empty := c.Encode(nil, nil)
	if _, err := ours.ErrorCodec.DecodeWithError(make([]byte, 0), empty); err == nil {
		t.Log("arrow-go's brotli codec decodes an empty page now: Brotli may go")
	}
	got, err := compress.Decode(c, make([]byte, 0), empty)
	if err != nil || len(got) != 0 {
		t.Fatalf("empty page: %d bytes, %v", len(got), err)
	}
	some := c.Encode(nil, []byte("values"))
	if _, err := compress.Decode(c, make([]byte, 0), some); err == nil {
		t.Error("a stream of 6 bytes decoded into a page of 0 bytes")
	}
	if _, err := compress.Decode(c, make([]byte, 0), []byte{0xff, 0xff, 0xff}); err == nil {
		t.Error("a damaged stream decoded into a page of 0 bytes")
	}
	page := bytes.Repeat([]byte("a page of values "), 100)
	got, err = compress.Decode(c, make([]byte, len(page)), c.Encode(nil, page))
	if err != nil || !bytes.Equal(got, page) {
		t.Fatalf("page of %d bytes: got %d bytes, %v", len(page), len(got), err)
	}
	if _, err := compress.Decode(c, make([]byte, 10), c.Encode(nil, page)); err == nil {
		t.Error("a page of 1,700 bytes decoded into 10")
	}
}
