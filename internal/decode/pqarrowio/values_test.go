package pqarrowio_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/decode/arrowpq"
	"github.com/timelake/timelake/internal/decode/pqarrowio"
	"github.com/timelake/timelake/internal/decode/pqlite"
)

// TestPqliteReadsValues: decode/pqlite reads the values pqarrow reads, of
// files of every physical type (nulls among them, INT96 timestamps, a
// fixed-size binary) in many pages and row groups, in every codec, in
// data pages v1 and v2, with and without dictionaries, and in the DELTA
// and BYTE_STREAM_SPLIT encodings.
func TestPqliteReadsValues(t *testing.T) {
	mem := memory.DefaultAllocator
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "fixed", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
		{Name: "ts96", Type: arrow.FixedWidthTypes.Timestamp_ns, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	const rows = 5000
	for i := range rows {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1772366400000000 + int64(i)*1000))
		if i%7 == 3 {
			for c := 1; c < sc.NumFields(); c++ {
				b.Field(c).AppendNull()
			}
			continue
		}
		b.Field(1).(*array.BooleanBuilder).Append(i%3 == 0)
		b.Field(2).(*array.Int32Builder).Append(int32(i*7919) - 1<<20)
		b.Field(3).(*array.Int64Builder).Append(int64(i) * -1234567891)
		b.Field(4).(*array.Float32Builder).Append(float32(i) / 3)
		b.Field(5).(*array.Float64Builder).Append(float64(i) * 1.5e10)
		b.Field(6).(*array.StringBuilder).Append(fmt.Sprintf("value %d", i%50))
		b.Field(7).(*array.FixedSizeBinaryBuilder).Append([]byte{byte(i), byte(i >> 8), 7})
		b.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(1772366400000000000 + int64(i)*1_000_000_007))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	type variant struct {
		name  string
		props []parquet.WriterProperty
		uses  []parquet.Encoding // encodings the file must hold
	}
	var variants []variant
	for _, codec := range []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Snappy, compress.Codecs.Gzip,
		compress.Codecs.Brotli, compress.Codecs.Zstd, compress.Codecs.Lz4, compress.Codecs.Lz4Raw} {
		for _, v2 := range []bool{false, true} {
			for _, dict := range []bool{false, true} {
				version := parquet.DataPageV1
				if v2 {
					version = parquet.DataPageV2
				}
				variants = append(variants, variant{fmt.Sprintf("%s v2=%v dictionary=%v", codec, v2, dict), []parquet.WriterProperty{
					parquet.WithCompression(codec), parquet.WithDataPageVersion(version), parquet.WithDictionaryDefault(dict)}, nil})
			}
		}
	}
	for _, v2 := range []bool{false, true} {
		version := parquet.DataPageV1
		if v2 {
			version = parquet.DataPageV2
		}
		variants = append(variants, variant{fmt.Sprintf("delta and byte stream split v2=%v", v2), []parquet.WriterProperty{
			parquet.WithDataPageVersion(version), parquet.WithDictionaryDefault(false),
			parquet.WithEncodingFor("time", parquet.Encodings.DeltaBinaryPacked),
			parquet.WithEncodingFor("i32", parquet.Encodings.DeltaBinaryPacked),
			parquet.WithEncodingFor("i64", parquet.Encodings.ByteStreamSplit),
			parquet.WithEncodingFor("f32", parquet.Encodings.ByteStreamSplit),
			parquet.WithEncodingFor("f64", parquet.Encodings.ByteStreamSplit),
			parquet.WithEncodingFor("s", parquet.Encodings.DeltaByteArray),
			parquet.WithEncodingFor("fixed", parquet.Encodings.ByteStreamSplit),
			parquet.WithEncodingFor("b", parquet.Encodings.RLE),
		}, []parquet.Encoding{parquet.Encodings.DeltaBinaryPacked, parquet.Encodings.DeltaByteArray, parquet.Encodings.ByteStreamSplit}})
		variants = append(variants, variant{fmt.Sprintf("delta length byte array v2=%v", v2), []parquet.WriterProperty{
			parquet.WithDataPageVersion(version), parquet.WithDictionaryDefault(false),
			parquet.WithEncodingFor("s", parquet.Encodings.DeltaLengthByteArray),
		}, []parquet.Encoding{parquet.Encodings.DeltaLengthByteArray}})
	}
	for _, v := range variants {
		props := append([]parquet.WriterProperty{parquet.WithDataPageSize(1 << 10), parquet.WithMaxRowGroupLength(1800)}, v.props...)
		var buf bytes.Buffer
		w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(props...),
			pqarrow.NewArrowWriterProperties(pqarrow.WithDeprecatedInt96Timestamps(true)))
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if err := w.Write(rec); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		encodings := map[parquet.Encoding]bool{}
		for c := range sc.NumFields() {
			cc, err := pf.MetaData().RowGroup(0).ColumnChunk(c)
			if err != nil {
				t.Fatalf("%s: %v", v.name, err)
			}
			for _, e := range cc.Encodings() {
				encodings[e] = true
			}
		}
		if pf.NumRowGroups() < 3 {
			t.Errorf("%s: %d row groups", v.name, pf.NumRowGroups())
		}
		_ = pf.Close()
		for _, e := range v.uses {
			if !encodings[e] {
				t.Errorf("%s: no column chunk in %s", v.name, e)
			}
		}
		want := readAll(t, arrowpq.Format{Reader: pqarrowio.Reader{}}, buf.Bytes())
		got := readAll(t, pqlite.Format{}, buf.Bytes())
		for i := range want {
			if !array.Equal(want[i], got[i]) {
				t.Errorf("%s: column %s differs:\npqarrow: %v\npqlite:  %v", v.name, sc.Field(i).Name, want[i], got[i])
			}
			want[i].Release()
			got[i].Release()
		}
	}
}

// readAll reads every column of data with format f, in batches of 1,000
// rows.
func readAll(t *testing.T, f decode.ParquetFormat, data []byte) []arrow.Array {
	t.Helper()
	ctx := context.Background()
	pf, err := f.Open(ctx, decode.Source{Key: "v.parquet", R: bytes.NewReader(data), Size: int64(len(data))},
		decode.ParquetOpenOptions{Key: "v.parquet", Mem: memory.DefaultAllocator, BatchRows: 1000})
	if err != nil {
		t.Fatalf("%T: open: %v", f, err)
	}
	defer pf.Close()
	if err := pf.Verify(ctx); err != nil {
		t.Fatalf("%T: verify: %v", f, err)
	}
	rr, err := pf.Records(ctx)
	if err != nil {
		t.Fatalf("%T: records: %v", f, err)
	}
	defer rr.Release()
	cols := make([][]arrow.Array, pf.Schema().NumFields())
	var n int64
	for rr.Next() {
		rec := rr.RecordBatch()
		n += rec.NumRows()
		for i := range cols {
			c := rec.Column(i)
			c.Retain()
			cols[i] = append(cols[i], c)
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatalf("%T: read: %v", f, err)
	}
	if n != pf.NumRows() {
		t.Fatalf("%T: %d rows read of %d", f, n, pf.NumRows())
	}
	out := make([]arrow.Array, len(cols))
	for i, parts := range cols {
		if out[i], err = array.Concatenate(parts, memory.DefaultAllocator); err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			p.Release()
		}
	}
	return out
}
