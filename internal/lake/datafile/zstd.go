package datafile

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"

	// Data files of tables written with brotli read back when a column
	// chunk holds only nulls (compaction, deletes).
	_ "github.com/timelake/timelake/internal/decode/pagecodec"
)

// The zstd codec of the Parquet pages timelake writes. arrow-go's own
// encodes every page with pooled encoders of the default 8 MiB window,
// each keeping 16 MiB of history, for pages of at most about 1 MiB
// (write.parquet.page-size-bytes and the dictionary page limit): writing
// one data file held 16 to 32 MiB of encoder history, about a third of a
// fleet run's memory, and a compaction's rewrite more. A window of
// pageWindow bytes finds the same matches in a page no larger than that
// (a match cannot reach further back than the page's start), so pages up
// to pageWindow are encoded with encoders of that window (about 1.1 MiB of
// history each, with klauspost/compress's lower-memory mode); larger pages,
// and all decoding, go to arrow-go's codec. The frames are plain zstd: any
// reader decodes them. Registered once, for the whole process
// (compress.RegisterCodec), before any file is written.
const pageWindow = 1 << 20

// smallPage is the size below which a page's frame has no entropy coding
// (zstd's matches and raw literals: WithNoEntropyCompression). A page of
// a small data file is a few hundred bytes to a few KiB, for which
// building the Huffman and FSE tables is most of a frame's time (6.3 µs
// a 1 KB page with them, 2.5 µs without). What they save there is
// little: 1.2% of c4's data file bytes, 0.8% of c1's; text that only
// Huffman coding shrinks (free-form notes) takes up to half more (two
// fifths of it without entropy coding, the rest at the fastest level)
// (docs/performance.md, "Small data files"). Small files are compacted
// into large ones, whose pages have entropy coding.
//
// At zstd's default level (write.parquet.compression-level 3 to 5, or
// none; timelake's tables are made with 3), such pages are also encoded
// at zstd's fastest level; a table that asks for a better level (6 and
// more) gets it: the default level's match finder
// keeps a 1 MiB hash table (and a second of 128 KiB), the fastest one a
// single table of 256 KiB, and a page of a few hundred bytes touches a few
// hundred scattered entries of it. With many writers taking encoders from
// the pool, those entries are rarely in the cache: on a machine whose
// memory latency is high, the default level's lookups were 13% of c4's
// CPU (25 µs a page, against 2.5 µs in a loop on one warm encoder). The
// fastest level made c4 15 to 30% faster there for 5% more data file
// bytes (docs/performance.md, "Small pages at the fastest level").
const smallPage = 4 << 10

// zstdPageCodec is arrow-go's zstd codec encoding pages of at most
// pageWindow bytes itself. Its streams are arrow-go's (StreamingCodec):
// without them arrow-go reads every page of a zstd column whole instead of
// streaming the pages over 1 MiB.
type zstdPageCodec struct {
	compress.Codec // arrow-go's zstd codec
	compress.StreamingCodec
}

var pageEncoders sync.Map // encoderKind -> *sync.Pool of *zstd.Encoder

func init() {
	if c, err := compress.GetCodec(compress.Codecs.Zstd); err == nil {
		if sc, streams := c.(compress.StreamingCodec); streams {
			compress.RegisterCodec(compress.Codecs.Zstd, zstdPageCodec{Codec: c, StreamingCodec: sc})
		}
	}
}

func (c zstdPageCodec) Encode(dst, src []byte) []byte {
	return c.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

// EncodeLevel encodes src as one zstd frame at level (arrow-go's mapping:
// compress.DefaultCompressionLevel is zstd's default speed).
func (c zstdPageCodec) EncodeLevel(dst, src []byte, level int) []byte {
	if len(src) > pageWindow {
		return c.Codec.EncodeLevel(dst, src, level)
	}
	small := len(src) < smallPage
	lvl := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		lvl = zstd.EncoderLevelFromZstd(level)
	}
	if small && lvl == zstd.SpeedDefault {
		lvl = zstd.SpeedFastest
	}
	pool := pageEncoderPool(encoderKind{lvl, small})
	enc, _ := pool.Get().(*zstd.Encoder)
	if enc == nil { // options refused: arrow-go's encoders
		return c.Codec.EncodeLevel(dst, src, level)
	}
	defer pool.Put(enc)
	return enc.EncodeAll(src, dst[:0])
}

// encoderKind is a kind of page encoder: its level, and whether it leaves
// out entropy coding (the pages below smallPage).
type encoderKind struct {
	level     zstd.EncoderLevel
	noEntropy bool
}

// pageEncoderPool returns the pool of page encoders of kind k.
func pageEncoderPool(k encoderKind) *sync.Pool {
	if p, ok := pageEncoders.Load(k); ok {
		return p.(*sync.Pool)
	}
	p, _ := pageEncoders.LoadOrStore(k, &sync.Pool{New: func() any {
		entropy := zstd.WithAllLitEntropyCompression(true)
		if k.noEntropy {
			entropy = zstd.WithNoEntropyCompression(true)
		}
		enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(k.level),
			zstd.WithEncoderConcurrency(1), entropy,
			zstd.WithWindowSize(pageWindow), zstd.WithLowerEncoderMem(true))
		if err != nil {
			return nil
		}
		return enc
	}})
	return p.(*sync.Pool)
}
