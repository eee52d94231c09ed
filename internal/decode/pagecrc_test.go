package decode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/thrift/lib/go/thrift"
)

// readingsParquet is a file of rows readings (time, device_id with a
// dictionary page, temperature_c plain), uncompressed, in row groups of
// 2,000 rows and pages of about 1 KiB, with data pages of version.
func readingsParquet(tb testing.TB, rows int, version parquet.DataPageVersion) []byte {
	tb.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "device_id", Type: arrow.BinaryTypes.String},
		{Name: "temperature_c", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for j := range rows {
		rb.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(j) * time.Second).UnixMicro()))
		rb.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("dev-%02d", j%10))
		rb.Field(2).(*array.Float64Builder).Append(float64(j%400)/10 - 5)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Uncompressed),
		parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("device_id", true),
		parquet.WithDataPageSize(1<<10),
		parquet.WithBatchSize(128),
		parquet.WithMaxRowGroupLength(2000),
		parquet.WithDataPageVersion(version))
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.DefaultWriterProps())
	if err == nil {
		err = w.Write(rec)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// testPage is a page of a Parquet file: where its header and its bytes
// start in the file, and the header's fields.
type testPage struct {
	at, payload int64
	header      pageHeader
}

// parquetFooter reads the footer of a Parquet file.
func parquetFooter(tb testing.TB, data []byte) *metadata.FileMetaData {
	tb.Helper()
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	md, err := metadata.NewFileMetaData(data[len(data)-8-n:len(data)-8], nil)
	if err != nil {
		tb.Fatal(err)
	}
	return md
}

// withFooter is data with its footer replaced by md.
func withFooter(tb testing.TB, data []byte, md *metadata.FileMetaData) []byte {
	tb.Helper()
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	out := bytes.NewBuffer(slices.Clone(data[:len(data)-8-n]))
	footer := out.Len()
	if _, err := md.WriteTo(out, nil); err != nil {
		tb.Fatal(err)
	}
	out.Write(binary.LittleEndian.AppendUint32(nil, uint32(out.Len()-footer)))
	out.WriteString("PAR1")
	return out.Bytes()
}

// columnChunkStart is where the first page of a column chunk starts.
func columnChunkStart(cc *metadata.ColumnChunkMetaData) int64 {
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < cc.DataPageOffset() {
		return cc.DictionaryPageOffset()
	}
	return cc.DataPageOffset()
}

// columnPages lists the pages of the column chunk of column in row group
// g.
func columnPages(tb testing.TB, data []byte, g int, column string) []testPage {
	tb.Helper()
	md := parquetFooter(tb, data)
	rg := md.RowGroup(g)
	for c := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(c)
		if err != nil {
			tb.Fatal(err)
		}
		if cc.PathInSchema().String() == column {
			return pagesAt(tb, data, columnChunkStart(cc), cc.TotalCompressedSize())
		}
	}
	tb.Fatalf("no column %q", column)
	return nil
}

// pagesAt lists the pages of the length bytes of a column chunk at start.
func pagesAt(tb testing.TB, data []byte, start, length int64) []testPage {
	tb.Helper()
	chunk := &chunkTransport{r: bufio.NewReader(bytes.NewReader(data[start : start+length]))}
	proto := thrift.NewTCompactProtocol(chunk)
	var pages []testPage
	for chunk.read < length {
		at := chunk.read
		h, err := readPageHeader(context.Background(), proto)
		if err != nil {
			tb.Fatal(err)
		}
		payload := chunk.read
		if _, err := chunk.checksum(int64(h.compressedSize)); err != nil {
			tb.Fatal(err)
		}
		pages = append(pages, testPage{at: start + at, payload: start + payload, header: h})
	}
	return pages
}

// withPageChecksums rewrites a Parquet file of arrow-go's writer, which
// writes no page checksums, with the crc of every page in its header.
func withPageChecksums(tb testing.TB, data []byte) []byte {
	tb.Helper()
	md := parquetFooter(tb, data)
	out := []byte("PAR1")
	moved := map[int64]int64{} // page offsets, old to new
	for _, rg := range md.RowGroups {
		rgStart := int64(len(out))
		for _, cc := range rg.Columns {
			cm := cc.MetaData
			start := cm.DataPageOffset
			if cm.DictionaryPageOffset != nil && *cm.DictionaryPageOffset < start {
				start = *cm.DictionaryPageOffset
			}
			newStart := int64(len(out))
			for _, p := range pagesAt(tb, data, start, cm.TotalCompressedSize) {
				moved[p.at] = int64(len(out))
				end := p.payload + int64(p.header.compressedSize)
				out = append(out, headerWithCRC(tb, data[p.at:p.payload], crc32.ChecksumIEEE(data[p.payload:end]))...)
				out = append(out, data[p.payload:end]...)
			}
			grown := int64(len(out)) - newStart - cm.TotalCompressedSize
			cm.TotalCompressedSize += grown
			cm.TotalUncompressedSize += grown
			cm.DataPageOffset = moved[cm.DataPageOffset]
			if cm.DictionaryPageOffset != nil {
				d := moved[*cm.DictionaryPageOffset]
				cm.DictionaryPageOffset = &d
			}
			if cc.FileOffset != 0 {
				cc.FileOffset += newStart - start
			}
			if cc.ColumnIndexOffset != nil || cc.OffsetIndexOffset != nil || cm.BloomFilterOffset != nil {
				tb.Fatal("a page index or bloom filter is not moved")
			}
		}
		if rg.FileOffset != nil {
			rg.FileOffset = &rgStart
		}
		if rg.TotalCompressedSize != nil {
			size := int64(len(out)) - rgStart
			rg.TotalCompressedSize = &size
		}
	}
	out = append(out, make([]byte, 8)...) // the footer withFooter replaces
	return withFooter(tb, out, md)
}

// headerWithCRC adds crc to a page header of arrow-go's writer, which
// starts with fields 1 to 3 (i32, field id deltas of 1) and goes on with a
// field after 4.
func headerWithCRC(tb testing.TB, header []byte, crc uint32) []byte {
	tb.Helper()
	i := 0
	for range 3 {
		if header[i] != 0x15 {
			tb.Fatalf("page header % x does not start with fields 1 to 3", header)
		}
		for i++; header[i]&0x80 != 0; i++ {
		}
		i++
	}
	next := header[i]
	if next>>4 < 2 {
		tb.Fatalf("page header % x goes on with field %d", header, 3+next>>4)
	}
	n := int32(crc)
	out := append(slices.Clone(header[:i]), 0x15)
	out = binary.AppendUvarint(out, uint64(uint32(n<<1^n>>31)))
	out = append(out, (next>>4-1)<<4|next&0x0f)
	return append(out, header[i+1:]...)
}

// decodeRows decodes a Parquet file into a new table and renders its rows.
func decodeRows(t *testing.T, key string, data []byte) ([][]string, error) {
	t.Helper()
	d, err := decode(t, key, data, DecodeOptions{TimeColumn: "time"})
	if err != nil {
		return nil, err
	}
	return rows(t, d), nil
}

// flipLastValueBit flips a bit of the last value of page.
func flipLastValueBit(data []byte, page testPage) []byte {
	out := slices.Clone(data)
	out[page.payload+int64(page.header.compressedSize)-2] ^= 0x10
	return out
}

// TestPageChecksums: a file whose pages carry their crc loads as the same
// file without them; a bit flipped in a page refuses it, naming the
// column, the row group and the page.
func TestPageChecksums(t *testing.T) {
	for _, version := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
		t.Run(fmt.Sprintf("data page v%d", version+1), func(t *testing.T) {
			plain := readingsParquet(t, 5000, version)
			want, err := decodeRows(t, "gw/plain.parquet", plain)
			if err != nil || len(want) != 5000 {
				t.Fatalf("without checksums: %d rows, %v", len(want), err)
			}
			withCRC := withPageChecksums(t, plain)
			pages := columnPages(t, withCRC, 1, "temperature_c")
			if len(pages) < 3 || !pages[0].header.hasCRC {
				t.Fatalf("want 3 pages or more with a crc: %+v", pages)
			}
			got, err := decodeRows(t, "gw/crc.parquet", withCRC)
			if err != nil || !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("with checksums: %v (rows equal: %v)", err, slices.EqualFunc(got, want, slices.Equal))
			}

			// A flipped bit in a file without checksums loads a changed
			// value: nothing tells it from the value written.
			changed, err := decodeRows(t, "gw/plain.parquet", flipLastValueBit(plain, columnPages(t, plain, 1, "temperature_c")[len(pages)-1]))
			if err != nil || slices.EqualFunc(changed, want, slices.Equal) {
				t.Fatalf("a bit flipped without checksums: %v, changed: %v", err, !slices.EqualFunc(changed, want, slices.Equal))
			}

			_, err = decodeRows(t, "gw/crc.parquet", flipLastValueBit(withCRC, pages[len(pages)-1]))
			fe := mustFileError(t, err)
			wantReason := fmt.Sprintf("page checksum mismatch in row group 2 of 3, page %d: the page's bytes changed after it was written (CRC 0x", len(pages))
			if fe.Column != "temperature_c" || !strings.HasPrefix(fe.Reason, wantReason) || !IsUnreadable(err) ||
				!strings.HasPrefix(err.Error(), `gw/crc.parquet: column "temperature_c": page checksum mismatch`) {
				t.Errorf("a bit flipped in page %d of temperature_c: %v", len(pages), err)
			}

			dict := columnPages(t, withCRC, 0, "device_id")[0]
			_, err = decodeRows(t, "gw/crc.parquet", flipLastValueBit(withCRC, dict))
			if fe := mustFileError(t, err); fe.Column != "device_id" || !strings.HasPrefix(fe.Reason, "page checksum mismatch in row group 1 of 3, page 1:") {
				t.Errorf("a bit flipped in the dictionary page of device_id: %v", err)
			}
		})
	}
}

// TestPageChecksumsHostileMetadata: a column chunk outside the file, a
// page running past the end of its column chunk and a page header that is
// not one refuse the file with a reason, without a panic.
func TestPageChecksumsHostileMetadata(t *testing.T) {
	data := withPageChecksums(t, readingsParquet(t, 3000, parquet.DataPageV1))
	temperature := 2
	edit := func(fn func(cm *metadata.FileMetaData)) []byte {
		md := parquetFooter(t, data)
		fn(md)
		return withFooter(t, data, md)
	}
	pages := columnPages(t, data, 0, "temperature_c")
	garbage := slices.Clone(data)
	copy(garbage[pages[1].at:pages[1].payload], bytes.Repeat([]byte{0xff}, int(pages[1].payload-pages[1].at)))
	for _, tc := range []struct {
		name, reason string
		data         []byte
	}{
		{"column chunk past the end of the file", "column chunk outside the file in row group 1 of 2: ", edit(func(md *metadata.FileMetaData) {
			md.RowGroups[0].Columns[temperature].MetaData.TotalCompressedSize = int64(len(data))
		})},
		{"column chunk at a negative offset", "column chunk outside the file in row group 2 of 2: ", edit(func(md *metadata.FileMetaData) {
			md.RowGroups[1].Columns[temperature].MetaData.DataPageOffset = -4
		})},
		{"page past the end of its column chunk", "page past the end of its column chunk in row group 1 of 2, page " + fmt.Sprint(len(pages)) + ": ", edit(func(md *metadata.FileMetaData) {
			md.RowGroups[0].Columns[temperature].MetaData.TotalCompressedSize -= 8
		})},
		{"garbage page header", "unreadable page header in row group 1 of 2, page 2", garbage},
	} {
		_, err := decodeRows(t, "gw/hostile.parquet", tc.data)
		fe := mustFileError(t, err)
		if IsPanic(err) || !IsUnreadable(err) || fe.Column != "temperature_c" || !strings.HasPrefix(fe.Reason, tc.reason) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestPageChecksumsStopWithTheContext: a cancelled context stops the walk.
func TestPageChecksumsStopWithTheContext(t *testing.T) {
	data := withPageChecksums(t, readingsParquet(t, 3000, parquet.DataPageV1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := verifyPageChecksums(ctx, "gw/c.parquet", bytes.NewReader(data), int64(len(data)), parquetFooter(t, data))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// BenchmarkPageChecksums verifies the page checksums of a gateway file of
// 1,000,000 rows (zstd, 3.7 MB).
func BenchmarkPageChecksums(b *testing.B) {
	data := withPageChecksums(b, benchParquet(b, 1_000_000))
	md := parquetFooter(b, data)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		if err := verifyPageChecksums(context.Background(), "gw/b.parquet", bytes.NewReader(data), int64(len(data)), md); err != nil {
			b.Fatal(err)
		}
	}
}
