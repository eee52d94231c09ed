package decode

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/iceberg-go"
)

// benchCSV is a gateway file like the benchmark's c2 files: rows in time
// order, 10 devices, three one-decimal readings (about 63 bytes a row).
func benchCSV(rows int) []byte {
	var b bytes.Buffer
	b.WriteString("time,device_id,site,temperature_c,humidity_pct,battery_v\n")
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		ts := t0.Add(time.Duration(i/10) * 10 * time.Second)
		fmt.Fprintf(&b, "%s,dev-01-%02d,north-field-station,%.1f,%.1f,%.2f\n",
			ts.Format(time.RFC3339), i%10, float64(i%400)/10, float64(i%1000)/10, 3+float64(i%100)/100)
	}
	return b.Bytes()
}

// gatewayTarget is the table of the benchmark's gateway files.
func gatewayTarget(b *testing.B) *arrow.Schema {
	return arrowTarget(b,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device_id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "site", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "temperature_c", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 5, Name: "humidity_pct", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "battery_v", Type: iceberg.PrimitiveTypes.Float64},
	)
}

// benchParquet is a gateway file like the benchmark's c3 files, as
// bench/tlbench gen writes them: millisecond UTC times in order, 10
// devices, three readings, zstd, one row group.
func benchParquet(b *testing.B, rows int) []byte {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "device_id", Type: arrow.BinaryTypes.String},
		{Name: "site", Type: arrow.BinaryTypes.String},
		{Name: "temperature_c", Type: arrow.PrimitiveTypes.Float64},
		{Name: "humidity_pct", Type: arrow.PrimitiveTypes.Float64},
		{Name: "battery_v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	rng := rand.New(rand.NewPCG(1, 42))
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for j := range rows {
		rb.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(j/10) * 10 * time.Second).UnixMilli()))
		rb.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("dev-01-%02d", j%10))
		rb.Field(2).(*array.StringBuilder).Append("north-field-station")
		rb.Field(3).(*array.Float64Builder).Append(float64(rng.IntN(400))/10 - 5)
		rb.Field(4).(*array.Float64Builder).Append(float64(rng.IntN(1000)) / 10)
		rb.Field(5).(*array.Float64Builder).Append(3 + float64(rng.IntN(120))/100)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	return writeParquetWith(b, rec, parquet.WithCompression(compress.Codecs.Zstd))
}

// BenchmarkDecodeParquet decodes a 40,000-row gateway Parquet file (one
// file of the benchmark's c3 case, about 1 MB) into a table schema.
func BenchmarkDecodeParquet(b *testing.B) {
	data := benchParquet(b, 40_000)
	target := gatewayTarget(b)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		d, err := Decode(context.Background(), Source{Key: "gw/b.parquet", R: bytes.NewReader(data), Size: int64(len(data))},
			DecodeOptions{Target: target, TimeColumn: "time"})
		if err != nil {
			b.Fatal(err)
		}
		d.Release()
	}
}

// BenchmarkDecodeCSV decodes a 200,000-row (~13 MB) CSV file into a table
// schema, sequentially and on GOMAXPROCS goroutines.
func BenchmarkDecodeCSV(b *testing.B) { benchDecode(b, "gw/b.csv", benchCSV(200_000)) }

// benchDecode decodes data under key into gatewayTarget's schema, its
// 200,000 rows, sequentially (parallelism=1) and on GOMAXPROCS goroutines
// (parallelism=0).
func benchDecode(b *testing.B, key string, data []byte) {
	target := gatewayTarget(b)
	for _, par := range []int{1, 0} {
		b.Run(fmt.Sprintf("parallelism=%d", par), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for range b.N {
				d, err := Decode(context.Background(), Source{Key: key, R: bytes.NewReader(data), Size: int64(len(data))},
					DecodeOptions{Target: target, TimeColumn: "time", Parallelism: par})
				if err != nil {
					b.Fatal(err)
				}
				if d.Rows != 200_000 {
					b.Fatalf("%d rows", d.Rows)
				}
				d.Release()
			}
		})
	}
}

// gzipBench returns data gzipped.
func gzipBench(b *testing.B, data []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(data); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkDecodeCSVChunks decodes BenchmarkDecodeCSV's file in chunks
// (chunkedText, Parallelism 2); run with -cpu 1 it measures the chunk
// parser's time per row on one core.
func BenchmarkDecodeCSVChunks(b *testing.B) {
	data := benchCSV(200_000)
	target := gatewayTarget(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for range b.N {
		d, err := Decode(context.Background(), Source{Key: "gw/b.csv", R: bytes.NewReader(data), Size: int64(len(data))},
			DecodeOptions{Target: target, TimeColumn: "time", Parallelism: 2})
		if err != nil {
			b.Fatal(err)
		}
		if d.Rows != 200_000 {
			b.Fatalf("%d rows", d.Rows)
		}
		d.Release()
	}
}

// benchJSON is benchCSV's rows as JSON Lines, the readings nested.
func benchJSON(rows int) []byte {
	var b bytes.Buffer
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		ts := t0.Add(time.Duration(i/10) * 10 * time.Second)
		fmt.Fprintf(&b, `{"time":"%s","device_id":"dev-01-%02d","site":"north-field-station","temperature_c":%.1f,"humidity_pct":%.1f,"battery_v":%.2f}`+"\n",
			ts.Format(time.RFC3339), i%10, float64(i%400)/10, float64(i%1000)/10, 3+float64(i%100)/100)
	}
	return b.Bytes()
}

// BenchmarkDecodeJSON decodes benchCSV's 200,000 rows as JSON Lines into
// the same table schema (BenchmarkDecodeCSV's), sequentially and in
// ranges on GOMAXPROCS goroutines.
func BenchmarkDecodeJSON(b *testing.B) { benchDecode(b, "gw/b.jsonl", benchJSON(200_000)) }

// BenchmarkDecodeCSVGzip decodes BenchmarkDecodeCSV's file gzipped (the
// benchmark's c2 files are), sequentially and on GOMAXPROCS goroutines.
func BenchmarkDecodeCSVGzip(b *testing.B) {
	benchDecode(b, "gw/b.csv.gz", gzipBench(b, benchCSV(200_000)))
}

// BenchmarkDecodeJSONGzip decodes BenchmarkDecodeJSON's file gzipped (the
// benchmark's c2-json-gz case), sequentially and on GOMAXPROCS goroutines.
func BenchmarkDecodeJSONGzip(b *testing.B) {
	benchDecode(b, "gw/b.jsonl.gz", gzipBench(b, benchJSON(200_000)))
}
