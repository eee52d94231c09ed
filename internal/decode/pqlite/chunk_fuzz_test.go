package pqlite

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// FuzzChunkReader reads any bytes as a column chunk of each physical type
// and codec, seeded with the column chunks of the corpus: the reader
// ends (a refusal or the chunk's end), does not panic, and allocates in
// some proportion to the bytes (a page header's sizes and counts do not
// make it allocate what they declare).
func FuzzChunkReader(f *testing.F) {
	// Brotli is left out: a legitimate page of it holds 600,000 bytes a
	// byte (64 MB of zeros in 106), so it is bounded by maxPage alone.
	codecs := []format.CompressionCodec{format.Uncompressed, format.Snappy, format.Gzip, format.Zstd, format.Lz4, format.Lz4Raw}
	files, err := filepath.Glob("../testdata/corpus/*/*.parquet")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		ft, err := readFooter(context.Background(), bytes.NewReader(data), int64(len(data)))
		if err != nil {
			continue
		}
		for g := range ft.meta.RowGroups {
			for c, cc := range ft.meta.RowGroups[g].Columns {
				cm := cc.MetaData
				start := cm.DataPageOffset
				if cm.DictionaryPageOffset > 0 && cm.DictionaryPageOffset < start {
					start = cm.DictionaryPageOffset
				}
				if c >= len(ft.leaves) || start < 0 || cm.TotalCompressedSize < 0 || start+cm.TotalCompressedSize > int64(len(data)) {
					continue
				}
				codec := 0
				for i, cd := range codecs {
					if cd == cm.Codec {
						codec = i
					}
				}
				f.Add(data[start:start+cm.TotalCompressedSize], uint8(cm.Type), uint8(codec), uint8(ft.leaves[c].maxDef))
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, typ, codec, maxDef uint8) {
		leaf := &node{el: &format.SchemaElement{Name: "v"}, physical: format.Type(typ % 8), maxDef: int16(maxDef % 2)}
		leaf.el.TypeLength.Set(3)
		cd := codecs[int(codec)%len(codecs)]
		ctx := context.Background()
		c := &chunkReader{ctx: ctx, leaf: leaf, codec: cd, left: 1 << 40, length: int64(len(data)),
			src: &countingReader{r: bytes.NewReader(data)}}
		c.br = bufio.NewReaderSize(c.src, readBuffer)
		c.header = &reader{ctx: ctx, p: thrift.NewTCompactProtocolConf(headerTransport{c.br}, &thrift.TConfiguration{})}
		defer c.close()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var rows int64
		for rows < 1<<22 {
			n, err := c.read(1<<16, func(*values, int) error { return nil })
			rows += n
			if err != nil || n == 0 {
				break
			}
		}
		runtime.ReadMemStats(&after)
		// A zstd page holds up to some 32,000 bytes a byte; the values read
		// (4M rows at most) take their own.
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20+32<<10*uint64(len(data)) {
			t.Fatalf("%d bytes of a %s chunk (%s): %d bytes allocated for %d rows", len(data), leaf.physical, cd, n, rows)
		}
	})
}
