package decode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/pierrec/lz4/v4"
)

// lz4Writer is an LZ4 (codec 5) codec that writes pages as a writer of
// the past did; reading goes to LZ4Codec.
type lz4Writer struct {
	LZ4Codec
	encode func(src []byte) []byte
}

func (c lz4Writer) Encode(_, src []byte) []byte               { return c.encode(src) }
func (c lz4Writer) EncodeLevel(dst, src []byte, _ int) []byte { return c.encode(src) }

// lz4Block is src as a raw LZ4 block.
func lz4Block(src []byte) []byte {
	dst := make([]byte, lz4.CompressBlockBound(len(src)))
	n, err := lz4.CompressBlock(src, dst, nil)
	if err != nil {
		panic(err)
	}
	if n == 0 && len(src) > 0 {
		n = lz4Literals(dst, src)
	}
	return dst[:n]
}

// lz4Framings are the ways writers stored LZ4 (codec 5) pages.
var lz4Framings = map[string]func(src []byte) []byte{
	"hadoop": func(src []byte) []byte { return LZ4Codec{}.Encode(nil, src) },
	"hadoop, blocks of 1000 bytes": func(src []byte) []byte {
		var out []byte
		for len(src) > 0 {
			n := min(len(src), 1000)
			b := lz4Block(src[:n])
			out = binary.BigEndian.AppendUint32(out, uint32(n))
			out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
			out = append(out, b...)
			src = src[n:]
		}
		return out
	},
	"frame": func(src []byte) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			panic(err)
		}
		if err := w.Close(); err != nil {
			panic(err)
		}
		return buf.Bytes()
	},
	"raw block": lz4Block,
}

// lz4Record is a batch of tableTarget's first columns, values of many
// kinds: repeated, random and incompressible device names.
func lz4Record(t *testing.T, n int) arrow.RecordBatch {
	t.Helper()
	rec := sensorRecord(t)
	sc := rec.Schema()
	rec.Release()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	rnd := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i) * time.Second).UnixMicro()))
		device := fmt.Sprintf("gw-%d", i%7)
		if i%5 == 0 {
			device = fmt.Sprintf("%x", rnd.Uint64())
		}
		b.Field(1).(*array.StringBuilder).Append(device)
		b.Field(2).(*array.Float64Builder).Append(rnd.NormFloat64())
		b.Field(3).(*array.Int64Builder).Append(rnd.Int64())
	}
	return b.NewRecordBatch()
}

// writeLZ4 writes rec with the LZ4 codec (codec 5), pages stored by encode.
func writeLZ4(t *testing.T, rec arrow.RecordBatch, encode func([]byte) []byte, opts ...parquet.WriterProperty) []byte {
	t.Helper()
	compress.RegisterCodec(compress.Codecs.Lz4, lz4Writer{encode: encode})
	defer compress.RegisterCodec(compress.Codecs.Lz4, LZ4Codec{})
	return writeParquetWith(t, rec, append(opts, parquet.WithCompression(compress.Codecs.Lz4))...)
}

// TestParquetLZ4: pages of the deprecated LZ4 codec load, every value as
// written, in the Hadoop framing, the LZ4 frame format or a raw block,
// data pages of version 1 and 2, dictionary-encoded or not.
func TestParquetLZ4(t *testing.T) {
	rec := lz4Record(t, 20000)
	defer rec.Release()
	target := tableTarget(t)
	plain, err := decode(t, "gw/plain.parquet", writeParquetWith(t, rec), DecodeOptions{Target: target, TimeColumn: "time"})
	if err != nil {
		t.Fatal(err)
	}
	want := rows(t, plain)
	for name, encode := range lz4Framings {
		for _, v := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
			for _, dict := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s, page v%d, dictionary %v", name, v+1, dict), func(t *testing.T) {
					data := writeLZ4(t, rec, encode, parquet.WithDataPageVersion(v), parquet.WithDictionaryDefault(dict), parquet.WithDataPageSize(16<<10))
					d, err := decode(t, "gw/lz4.parquet", data, DecodeOptions{Target: target, TimeColumn: "time"})
					if err != nil {
						t.Fatal(err)
					}
					got := rows(t, d)
					if !slices.EqualFunc(got, want, slices.Equal) {
						t.Fatalf("values differ from the file written uncompressed")
					}
				})
			}
		}
	}
}

// TestParquetLZ4Mismatch: an LZ4 page that comes out at another size than
// the page's refuses the file, naming the codec.
func TestParquetLZ4Mismatch(t *testing.T) {
	rec := lz4Record(t, 100)
	defer rec.Release()
	for name, encode := range map[string]func([]byte) []byte{
		"hadoop, a byte short":    func(src []byte) []byte { return LZ4Codec{}.Encode(nil, src[:len(src)-1]) },
		"raw block, a byte short": func(src []byte) []byte { return lz4Block(src[:len(src)-1]) },
		"frame, a byte over":      lz4Framings["frame"],
	} {
		t.Run(name, func(t *testing.T) {
			if name == "frame, a byte over" {
				encode = func(src []byte) []byte { return lz4Framings["frame"](append(slices.Clone(src), 0)) }
			}
			data := writeLZ4(t, rec, encode)
			_, err := decode(t, "gw/lz4.parquet", data, DecodeOptions{TimeColumn: "time"})
			fe := mustFileError(t, err)
			if !strings.Contains(err.Error(), "LZ4 (codec 5)") {
				t.Errorf("error %q (reason %q)", err, fe.Reason)
			}
		})
	}
}
