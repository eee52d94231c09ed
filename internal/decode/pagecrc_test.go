package decode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// TestPageChecksumsStopWithTheContext: a cancelled context stops the walk.
func TestPageChecksumsStopWithTheContext(t *testing.T) {
	data := pagecrc.WithChecksums(t, readingsParquet(t, 3000, parquet.DataPageV1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := verifyPageChecksums(ctx, "gw/c.parquet", bytes.NewReader(data), int64(len(data)), pagecrc.Footer(t, data))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// BenchmarkPageChecksums verifies the page checksums of a gateway file of
// 1,000,000 rows (zstd, 3.7 MB).
func BenchmarkPageChecksums(b *testing.B) {
	data := pagecrc.WithChecksums(b, benchParquet(b, 1_000_000))
	md := pagecrc.Footer(b, data)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		if err := verifyPageChecksums(context.Background(), "gw/b.parquet", bytes.NewReader(data), int64(len(data)), md); err != nil {
			b.Fatal(err)
		}
	}
}
