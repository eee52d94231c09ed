package decode

import (
	"bufio"
	"bytes"
	"context"
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
	"github.com/apache/thrift/lib/go/thrift"

	"github.com/timelake/timelake/internal/testutil/pagecrc"
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
	return writeParquetWith(tb, rec,
		parquet.WithCompression(compress.Codecs.Uncompressed),
		parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("device_id", true),
		parquet.WithDataPageSize(1<<10),
		parquet.WithBatchSize(128),
		parquet.WithMaxRowGroupLength(2000),
		parquet.WithDataPageVersion(version))
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
			withCRC := pagecrc.WithChecksums(t, plain)
			pages := pagecrc.Pages(t, withCRC, 1, "temperature_c")
			if len(pages) < 3 || !pages[0].HasCRC {
				t.Fatalf("want 3 pages or more with a crc: %+v", pages)
			}
			got, err := decodeRows(t, "gw/crc.parquet", withCRC)
			if err != nil || !slices.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("with checksums: %v (rows equal: %v)", err, slices.EqualFunc(got, want, slices.Equal))
			}

			// A flipped bit in a file without checksums loads a changed
			// value: nothing tells it from the value written.
			changed, err := decodeRows(t, "gw/plain.parquet", pagecrc.FlipLastValueBit(plain, pagecrc.Pages(t, plain, 1, "temperature_c")[len(pages)-1]))
			if err != nil || slices.EqualFunc(changed, want, slices.Equal) {
				t.Fatalf("a bit flipped without checksums: %v, changed: %v", err, !slices.EqualFunc(changed, want, slices.Equal))
			}

			_, err = decodeRows(t, "gw/crc.parquet", pagecrc.FlipLastValueBit(withCRC, pages[len(pages)-1]))
			fe := mustFileError(t, err)
			wantReason := fmt.Sprintf("page checksum mismatch in row group 2 of 3, page %d: the page's bytes changed after it was written (CRC 0x", len(pages))
			if fe.Column != "temperature_c" || !strings.HasPrefix(fe.Reason, wantReason) || !IsUnreadable(err) ||
				!strings.HasPrefix(err.Error(), `gw/crc.parquet: column "temperature_c": page checksum mismatch`) {
				t.Errorf("a bit flipped in page %d of temperature_c: %v", len(pages), err)
			}

			dict := pagecrc.Pages(t, withCRC, 0, "device_id")[0]
			_, err = decodeRows(t, "gw/crc.parquet", pagecrc.FlipLastValueBit(withCRC, dict))
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
	data := pagecrc.WithChecksums(t, readingsParquet(t, 3000, parquet.DataPageV1))
	temperature := 2
	edit := func(fn func(*metadata.FileMetaData)) []byte { return pagecrc.EditFooter(t, data, fn) }
	pages := pagecrc.Pages(t, data, 0, "temperature_c")
	garbage := slices.Clone(data)
	copy(garbage[pages[1].Header:pages[1].Bytes], bytes.Repeat([]byte{0xff}, int(pages[1].Bytes-pages[1].Header)))
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

// compactPageHeader is a Thrift PageHeader of a data page of size bytes,
// with crc when it is not nil.
func compactPageHeader(t *testing.T, size int32, crc *uint32) []byte {
	t.Helper()
	ctx := context.Background()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTCompactProtocol(buf)
	check := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	field := func(id int16, v int32) {
		check(p.WriteFieldBegin(ctx, "", thrift.I32, id))
		check(p.WriteI32(ctx, v))
		check(p.WriteFieldEnd(ctx))
	}
	check(p.WriteStructBegin(ctx, "PageHeader"))
	field(pageHeaderType, 0)
	field(pageHeaderUncompressedSize, size)
	field(pageHeaderCompressedSize, size)
	if crc != nil {
		field(pageHeaderCRC, int32(*crc))
	}
	check(p.WriteFieldStop(ctx))
	check(p.WriteStructEnd(ctx))
	return buf.Bytes()
}

// TestPageHeadersOfAColumnChunk: pages with and without a crc are
// accepted when their bytes match; a page header that is cut, nested
// without end, claims a string longer than the column chunk or gives no
// size, and a page larger than what is left of its column chunk, are
// refused without reading or holding more than the column chunk.
func TestPageHeadersOfAColumnChunk(t *testing.T) {
	payload := []byte("0123456789abcdef")
	sum := crc32.ChecksumIEEE(payload)
	wrong := sum ^ 1
	page := func(size int32, crc *uint32) []byte {
		return append(compactPageHeader(t, size, crc), payload...)
	}
	nested := bytes.Repeat([]byte{0x1c}, 1000)               // field 1, a struct, in a struct, ...
	hugeString := []byte{0x18, 0xff, 0xff, 0xff, 0xff, 0x07} // field 1, a string of 2 GiB
	noSize := []byte{0x15, 0x00, 0x00}                       // field 1 only
	for _, tc := range []struct {
		name   string
		chunk  []byte
		reason string // "" when accepted
	}{
		{"pages with and without a crc", slices.Concat(page(16, &sum), page(16, nil)), ""},
		{"a changed page", slices.Concat(page(16, nil), page(16, &wrong)), "page checksum mismatch in row group 1 of 1, page 2: "},
		{"a page larger than its column chunk", page(1<<30, &sum), "page past the end of its column chunk in row group 1 of 1, page 1: the page has 1073741824 bytes"},
		{"a negative page size", page(-1, &sum), "page without a valid size in row group 1 of 1, page 1: its header gives -1 bytes"},
		{"no page size", noSize, "page without a valid size in row group 1 of 1, page 1"},
		{"a cut page header", page(16, &sum)[:3], "unreadable page header in row group 1 of 1, page 1"},
		{"a cut page", page(16, &sum)[:20], "page past the end of its column chunk"},
		{"a page header nested without end", nested, "unreadable page header in row group 1 of 1, page 1"},
		{"a string longer than its column chunk", hugeString, "unreadable page header in row group 1 of 1, page 1"},
	} {
		where := columnChunkPlace{key: "gw/h.parquet", column: "v", groups: 1}
		br := bufio.NewReaderSize(bytes.NewReader(tc.chunk), pageReadBuffer)
		err := verifyColumnChunk(context.Background(), where, br, int64(len(tc.chunk)))
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.reason != "" && (err == nil || !strings.HasPrefix(err.(*FileError).Reason, tc.reason) || err.(*FileError).Column != "v" || !IsUnreadable(err)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.reason)
		}
	}
}

// TestPageChecksumsStopWithTheContext: a cancelled context stops the walk,
// with a refusal of the file that says so (not that the file is broken).
func TestPageChecksumsStopWithTheContext(t *testing.T) {
	data := pagecrc.WithChecksums(t, readingsParquet(t, 3000, parquet.DataPageV1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := VerifyPageChecksums(ctx, "gw/c.parquet", bytes.NewReader(data), int64(len(data)), footerChunks(t, data))
	if fe := mustFileError(t, err); !errors.Is(err, context.Canceled) || fe.Reason != "decoding cancelled" || IsUnreadable(err) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// BenchmarkPageChecksums verifies the page checksums of a gateway file of
// 1,000,000 rows (zstd, 3.7 MB).
func BenchmarkPageChecksums(b *testing.B) {
	data := pagecrc.WithChecksums(b, benchParquet(b, 1_000_000))
	md := footerChunks(b, data)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		if err := VerifyPageChecksums(context.Background(), "gw/b.parquet", bytes.NewReader(data), int64(len(data)), md); err != nil {
			b.Fatal(err)
		}
	}
}

// footerChunks lists the column chunks of the footer of data as
// decode/arrowpq does for VerifyPageChecksums.
func footerChunks(tb testing.TB, data []byte) []ParquetColumnChunk {
	tb.Helper()
	md := pagecrc.Footer(tb, data)
	var out []ParquetColumnChunk
	for g := range md.NumRowGroups() {
		rg := md.RowGroup(g)
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				tb.Fatal(err)
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
				start = cc.DictionaryPageOffset()
			}
			out = append(out, ParquetColumnChunk{Column: cc.PathInSchema().String(), Group: g, Groups: md.NumRowGroups(),
				Start: start, Length: cc.TotalCompressedSize()})
		}
	}
	return out
}
