package datafile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// pageLike is n bytes that compress as Parquet pages do: repeated values
// with noise.
func pageLike(n int) []byte {
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "dev-%02d,%d.%d;", rng.IntN(20), rng.IntN(40), rng.IntN(10))
	}
	return b.Bytes()[:n]
}

func TestZstdPageCodec(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	ours, ok := c.(zstdPageCodec)
	if !ok {
		t.Fatalf("registered zstd codec is %T, want zstdPageCodec", c)
	}
	// arrow-go streams the pages over 1 MiB of a codec that streams.
	if _, ok := c.(compress.StreamingCodec); !ok {
		t.Error("the registered zstd codec does not stream")
	}
	for _, n := range []int{100, 1000, smallPage - 1, smallPage, 64 << 10, pageWindow, pageWindow + 1, 3 << 20} {
		src := pageLike(n)
		for _, level := range []int{compress.DefaultCompressionLevel, 1, 3, 9} {
			enc := ours.EncodeLevel(nil, src, level)
			if got := ours.Decode(nil, enc); !bytes.Equal(got, src) {
				t.Fatalf("%d bytes at level %d: decoded %d bytes, not the input", n, level, len(got))
			}
			// The same compression as arrow-go's encoders; below
			// smallPage without entropy coding (and at the default
			// level, at the fastest one), which costs text like this
			// (literals only Huffman coding shrinks) up to half more.
			theirs := ours.Codec.EncodeLevel(nil, src, level)
			bound := 1.01
			if n < smallPage {
				bound = 1.55
			}
			if float64(len(enc)) > bound*float64(len(theirs)) {
				t.Errorf("%d bytes at level %d: %d bytes encoded, arrow-go's codec %d", n, level, len(enc), len(theirs))
			}
		}
	}
	// A new encoder costs about its window, not arrow-go's 16 MiB of history.
	alloc := func(f func()) uint64 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	src := pageLike(256 << 10)
	if n := alloc(func() { ours.EncodeLevel(nil, src, 5) }); n > 4<<20 {
		t.Errorf("a page encoded with a new encoder allocated %d MiB", n>>20)
	}
}

// TestSmallPagesAtFastestLevel: a page below smallPage is encoded at zstd's
// fastest level without entropy coding when the table's level is zstd's
// default (none, or 3 as timelake's tables set it), and at the level a
// table sets above that.
func TestSmallPagesAtFastestLevel(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	fastest, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1), zstd.WithNoEntropyCompression(true), zstd.WithWindowSize(pageWindow))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{100, 1000, smallPage - 1} {
		src := pageLike(n)
		want := fastest.EncodeAll(src, nil)
		for _, level := range []int{compress.DefaultCompressionLevel, 3} {
			if got := c.EncodeLevel(nil, src, level); !bytes.Equal(got, want) {
				t.Errorf("%d bytes at level %d: %d bytes encoded, not the fastest level's %d", n, level, len(got), len(want))
			}
		}
		// A level the table sets is kept (zstd level 9: better).
		if got := c.EncodeLevel(nil, src, 9); bytes.Equal(got, want) {
			t.Errorf("%d bytes at level 9: encoded as at the fastest level", n)
		}
	}
}
