package pqarrowio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/decode/arrowpq"
	"github.com/timelake/timelake/internal/decode/pqarrowio"
	"github.com/timelake/timelake/internal/decode/pqlite"
)

// FuzzPqlite: on any bytes, decode/pqlite refuses a file exactly when
// pqarrow (ingest) refuses it, does not panic, neither takes a minute,
// and the values of a file both read are the same.
func FuzzPqlite(f *testing.F) {
	files, err := filepath.Glob("../testdata/corpus/*/*.parquet")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, data := range encodedSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		// An input that takes this long loops: the panic ends the worker,
		// and the fuzzer keeps the input.
		watchdog := time.AfterFunc(time.Minute, func() { panic("FuzzPqlite: an input took more than a minute") })
		defer watchdog.Stop()
		c := parquetCase{name: "fuzz.parquet", data: data}
		withPqarrow := check(c, arrowpq.Format{Reader: pqarrowio.Reader{}})
		withPqlite := check(c, pqlite.Format{})
		// pqarrow's panics are ingest's (decode refuses the file with
		// them: a negative num_children in the footer makes arrow-go's
		// schema panic); pqlite's would be its own.
		if withPqlite != nil && decode.IsPanic(withPqlite) {
			t.Fatalf("pqlite crashed: %v", withPqlite)
		}
		if (withPqarrow == nil) != (withPqlite == nil) {
			t.Fatalf("pqarrow: %v\npqlite: %v", withPqarrow, withPqlite)
		}
		if withPqarrow != nil {
			return
		}
		want, err := readBatches(data, arrowpq.Format{Reader: pqarrowio.Reader{}})
		got, err2 := readBatches(data, pqlite.Format{})
		if (err == nil) != (err2 == nil) {
			t.Fatalf("reading the values: pqarrow: %v\npqlite: %v", err, err2)
		}
		if len(want) != len(got) {
			t.Fatalf("pqarrow reads %d batches, pqlite %d", len(want), len(got))
		}
		for i := range want {
			if !sameValues(want[i], got[i]) {
				t.Fatalf("batch %d:\npqarrow: %v\npqlite: %v", i, want[i], got[i])
			}
		}
	})
}

// encodedSeeds are small files of the encodings the corpus lacks: DELTA
// and BYTE_STREAM_SPLIT, RLE booleans, in data pages v1 and v2, nulls
// among the values.
func encodedSeeds(f *testing.F) [][]byte {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "fixed", Type: &arrow.FixedSizeBinaryType{ByteWidth: 2}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range 40 {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1772366400000000 + int64(i)*1000000))
		b.Field(3).(*array.Int64Builder).Append(int64(i) * -1234567)
		if i%5 == 2 {
			for _, c := range []int{1, 2, 4, 5, 6} {
				b.Field(c).AppendNull()
			}
			continue
		}
		b.Field(1).(*array.BooleanBuilder).Append(i%3 == 0)
		b.Field(2).(*array.Int32Builder).Append(int32(i * 7919))
		b.Field(4).(*array.Float64Builder).Append(float64(i) / 3)
		b.Field(5).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i%6))
		b.Field(6).(*array.FixedSizeBinaryBuilder).Append([]byte{byte(i), 7})
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var out [][]byte
	for _, version := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
		for _, strings := range []parquet.Encoding{parquet.Encodings.DeltaByteArray, parquet.Encodings.DeltaLengthByteArray} {
			props := parquet.NewWriterProperties(parquet.WithDataPageVersion(version), parquet.WithDictionaryDefault(false),
				parquet.WithEncodingFor("time", parquet.Encodings.DeltaBinaryPacked),
				parquet.WithEncodingFor("i32", parquet.Encodings.DeltaBinaryPacked),
				parquet.WithEncodingFor("i64", parquet.Encodings.ByteStreamSplit),
				parquet.WithEncodingFor("f64", parquet.Encodings.ByteStreamSplit),
				parquet.WithEncodingFor("s", strings),
				parquet.WithEncodingFor("fixed", parquet.Encodings.ByteStreamSplit),
				parquet.WithEncodingFor("b", parquet.Encodings.RLE))
			var buf bytes.Buffer
			w, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.DefaultWriterProps())
			if err != nil {
				f.Fatal(err)
			}
			if err := w.Write(rec); err != nil {
				f.Fatal(err)
			}
			if err := w.Close(); err != nil {
				f.Fatal(err)
			}
			out = append(out, buf.Bytes())
		}
	}
	return out
}

// sameValues reports whether a and b hold the same values, a dictionary
// column the same as its values (pqarrow keeps a stored dictionary type)
// and bytes the same as text (pqlite reads ENUM as text).
func sameValues(a, b arrow.RecordBatch) bool {
	if a.NumCols() != b.NumCols() || a.NumRows() != b.NumRows() {
		return false
	}
	for c := range int(a.NumCols()) {
		x, y := a.Column(c), b.Column(c)
		for j := range x.Len() {
			if x.IsNull(j) != y.IsNull(j) || valueStr(x, j) != valueStr(y, j) {
				return false
			}
		}
	}
	return true
}

// valueStr is value j of arr, of a dictionary array its value's.
func valueStr(arr arrow.Array, j int) string {
	switch a := arr.(type) {
	case *array.Dictionary:
		return valueStr(a.Dictionary(), a.GetValueIndex(j))
	case *array.Binary:
		return string(a.Value(j))
	case *array.LargeBinary:
		return string(a.Value(j))
	case *array.String:
		return a.Value(j)
	case *array.LargeString:
		return a.Value(j)
	}
	return arr.ValueStr(j)
}

// readBatches reads every batch of data with format f.
func readBatches(data []byte, f decode.ParquetFormat) (_ []arrow.RecordBatch, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = errors.New("panic")
		}
	}()
	ctx := context.Background()
	pf, err := f.Open(ctx, decode.Source{Key: "fuzz.parquet", R: bytes.NewReader(data), Size: int64(len(data))},
		decode.ParquetOpenOptions{Key: "fuzz.parquet", Mem: memory.DefaultAllocator, BatchRows: 1 << 20})
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	rr, err := pf.Records(ctx)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var out []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	return out, rr.Err()
}
