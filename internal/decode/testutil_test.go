package decode

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// arrowTarget is the Arrow schema of an Iceberg schema of fields, with
// field IDs in metadata, as the loader builds it.
func arrowTarget(t testing.TB, fields ...iceberg.NestedField) *arrow.Schema {
	t.Helper()
	as, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, fields...), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// tableTarget is the Arrow schema of a realistic table, built the way the
// loader builds it (iceberg-go, field IDs in metadata).
func tableTarget(t *testing.T) *arrow.Schema {
	t.Helper()
	return arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "temp", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "count", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 5, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 6, Name: "level", Type: iceberg.PrimitiveTypes.Int32},
	)
}

// timeOnlyTarget has just a required time column and a nullable value.
func timeOnlyTarget(t *testing.T) *arrow.Schema {
	t.Helper()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
	)
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// decode runs Decode over in-memory bytes with a checked allocator; it
// fails the test if any Arrow memory is leaked (after releasing the result).
func decode(t *testing.T, key string, data []byte, opts DecodeOptions) (*Decoded, error) {
	t.Helper()
	return decodeCtx(context.Background(), t, key, data, opts)
}

func decodeCtx(ctx context.Context, t *testing.T, key string, data []byte, opts DecodeOptions) (*Decoded, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	opts.Mem = mem
	d, err := Decode(ctx, Source{Key: key, R: bytes.NewReader(data), Size: int64(len(data))}, opts)
	if d != nil {
		t.Cleanup(d.Release)
	}
	if err != nil {
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Fatalf("error is not a *FileError: %T %v", err, err)
		}
		if d != nil {
			t.Fatalf("got both a result and an error")
		}
	}
	return d, err
}

// mustFileError asserts err is a *FileError and returns it.
func mustFileError(t *testing.T, err error) *FileError {
	t.Helper()
	if err == nil {
		t.Fatal("expected an error, got nil")
	}
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("error is not a *FileError: %T %v", err, err)
	}
	return fe
}

// rows renders the decoded batches as strings, "NULL" for nulls, and checks
// every batch carries the decoded schema object.
func rows(t *testing.T, d *Decoded) [][]string {
	t.Helper()
	var out [][]string
	for _, rec := range d.Records {
		if rec.Schema() != d.Schema {
			t.Fatalf("batch schema is not the decoded schema object")
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]string, rec.NumCols())
			for c := range row {
				col := rec.Column(c)
				if !arrow.TypeEqual(col.DataType(), d.Schema.Field(c).Type) {
					t.Fatalf("column %d has type %s, schema says %s", c, col.DataType(), d.Schema.Field(c).Type)
				}
				if col.IsNull(i) {
					row[c] = "NULL"
				} else {
					row[c] = col.ValueStr(i)
				}
			}
			out = append(out, row)
		}
	}
	if int64(len(out)) != d.Rows {
		t.Fatalf("Rows = %d, batches hold %d", d.Rows, len(out))
	}
	return out
}

// micros returns the raw int64 values of a timestamp column.
func micros(t *testing.T, d *Decoded, name string) []int64 {
	t.Helper()
	idx := d.Schema.FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("no column %q", name)
	}
	var out []int64
	for _, rec := range d.Records {
		a := rec.Column(idx[0]).(*array.Timestamp)
		for i := 0; i < a.Len(); i++ {
			out = append(out, int64(a.Value(i)))
		}
	}
	return out
}

func us(tm time.Time) int64 { return tm.UnixMicro() }

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeParquet writes one record batch to Parquet bytes, storing the Arrow
// schema (so dictionary and zone information survive).
func writeParquet(t *testing.T, rec arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeParquetWith writes one record batch to Parquet bytes with the
// writer properties opts.
func writeParquetWith(tb testing.TB, rec arrow.RecordBatch, opts ...parquet.WriterProperty) []byte {
	tb.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
	if err != nil {
		tb.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
