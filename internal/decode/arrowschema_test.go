package decode

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
)

// sensorRecord is a batch of the table of tableTarget's first columns:
// time (timestamptz), device, temp and count.
func sensorRecord(t *testing.T) arrow.RecordBatch {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "device", Type: arrow.BinaryTypes.String},
		{Name: "temp", Type: arrow.PrimitiveTypes.Float64},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i) * time.Minute).UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append("gw-7")
		b.Field(2).(*array.Float64Builder).Append(21.5 + float64(i))
		b.Field(3).(*array.Int64Builder).Append(int64(1000 + i))
	}
	return b.NewRecordBatch()
}

// parquetWithArrowSchema writes rec to Parquet bytes whose footer's
// ARROW:schema key holds value instead of the serialized schema of rec.
func parquetWithArrowSchema(t *testing.T, rec arrow.RecordBatch, value string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendKeyValueMetadata("ARROW:schema", value); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serializedSchema is sc as writers store it under ARROW:schema: an
// Arrow IPC stream of the schema, base64.
func serializedSchema(t *testing.T, sc *arrow.Schema) string {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sc))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func mustBase64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// otherColumns is an Arrow schema of as many columns as sensorRecord but
// other names and types: large strings, which pqarrow applies to any
// Parquet column without checking it, and panics reading.
func otherColumns() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.BinaryTypes.LargeString},
		{Name: "b", Type: arrow.BinaryTypes.LargeString},
		{Name: "c", Type: arrow.BinaryTypes.LargeString},
		{Name: "d", Type: arrow.BinaryTypes.LargeString},
	}, nil)
}

// TestArrowSchemaDisagreeing: a Parquet file whose ARROW:schema names
// other columns and types, or is cut short, loads by its Parquet schema,
// every value exactly.
func TestArrowSchemaDisagreeing(t *testing.T) {
	rec := sensorRecord(t)
	defer rec.Release()
	mismatch := serializedSchema(t, otherColumns())
	// The same columns, but the time column said to be a large string.
	sameNames := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.BinaryTypes.LargeString},
		{Name: "device", Type: arrow.BinaryTypes.String},
		{Name: "temp", Type: arrow.PrimitiveTypes.Float64},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	cases := map[string]string{
		"other columns":       mismatch,
		"other type":          serializedSchema(t, sameNames),
		"truncated base64":    mismatch[:len(mismatch)/2],
		"not base64":          "%%% not an Arrow schema %%%",
		"truncated unpadded":  strings.TrimRight(mismatch, "=")[:41],
		"truncated IPC bytes": base64.StdEncoding.EncodeToString(mustBase64(t, mismatch)[:60]),
	}
	want := [][]string{
		{"2026-03-01T12:00:00Z", "gw-7", "21.5", "1000", "NULL", "NULL"},
		{"2026-03-01T12:01:00Z", "gw-7", "22.5", "1001", "NULL", "NULL"},
		{"2026-03-01T12:02:00Z", "gw-7", "23.5", "1002", "NULL", "NULL"},
	}
	for name, value := range cases {
		t.Run(name, func(t *testing.T) {
			data := parquetWithArrowSchema(t, rec, value)
			d, err := decode(t, "site-berlin/gw-7/poison.parquet", data, DecodeOptions{Target: tableTarget(t), TimeColumn: "time"})
			if err != nil {
				t.Fatalf("not loaded by its Parquet schema: %v", err)
			}
			got := rows(t, d)
			if len(got) != len(want) {
				t.Fatalf("rows = %v, want %v", got, want)
			}
			for i := range want {
				if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
					t.Errorf("row %d = %v, want %v", i+1, got[i], want[i])
				}
			}
			if m := micros(t, d, "time"); m[0] != time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMicro() {
				t.Errorf("time = %d", m[0])
			}
			// A new table's columns come from the Parquet schema too.
			inf, err := decode(t, "site-berlin/gw-7/poison.parquet", data, DecodeOptions{TimeColumn: "time"})
			if err != nil {
				t.Fatalf("inferring a table: %v", err)
			}
			if got := inf.Schema.Field(inf.Schema.FieldIndices("count")[0]).Type; got.ID() != arrow.INT64 {
				t.Errorf("count inferred as %s", got)
			}
			if _, err := Check(context.Background(), Source{Key: "k.parquet", R: bytes.NewReader(data), Size: int64(len(data))},
				DecodeOptions{TimeColumn: "time"}, CheckOptions{}); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

// TestArrowSchemaAgreeingKept: an ARROW:schema that agrees with the
// Parquet schema is still read for what it adds, a timestamp's zone: a
// zoned timestamp loads into a timestamptz column as the instant it is.
func TestArrowSchemaAgreeingKept(t *testing.T) {
	berlin := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Berlin"}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: berlin},
		{Name: "device", Type: arrow.BinaryTypes.LargeString},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixMicro()))
	b.Field(1).(*array.LargeStringBuilder).Append("gw-7")
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := writeParquet(t, rec)

	// The registered format (pqarrow, pqarrow_test.go) keeps the
	// agreeing ARROW:schema and reads the file with it.
	pa, err := parquetFormat.Open(context.Background(), Source{Key: "k.parquet", R: bytes.NewReader(data), Size: int64(len(data))},
		ParquetOpenOptions{Key: "k.parquet", Mem: memory.DefaultAllocator, BatchRows: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer pa.Close()
	got := pa.Schema()
	if !arrow.TypeEqual(got.Field(0).Type, berlin) || got.Field(1).Type.ID() != arrow.LARGE_STRING {
		t.Fatalf("schema read = %s, want the stored zone and large string", got)
	}

	d, err := decode(t, "k.parquet", data, DecodeOptions{Target: timeDeviceTarget(t), TimeColumn: "time"})
	if err != nil {
		t.Fatal(err)
	}
	if m := micros(t, d, "time"); len(m) != 1 || m[0] != at.UnixMicro() {
		t.Fatalf("time = %v, want %d", m, at.UnixMicro())
	}
}

// TestRefines pins which stored Arrow types refine a Parquet column's.
func TestRefines(t *testing.T) {
	utc := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	for _, c := range []struct {
		plain, stored arrow.DataType
		want          bool
	}{
		{utc, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Berlin"}, true},
		{utc, &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, false},
		{arrow.PrimitiveTypes.Int64, arrow.FixedWidthTypes.Duration_ms, true},
		{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, true},
		{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.LargeString, false},
		{arrow.BinaryTypes.Binary, arrow.BinaryTypes.LargeBinary, true},
		{&arrow.Decimal128Type{Precision: 10, Scale: 2}, &arrow.Decimal256Type{Precision: 10, Scale: 2}, true},
		{&arrow.Decimal128Type{Precision: 10, Scale: 2}, &arrow.Decimal256Type{Precision: 10, Scale: 3}, false},
		{arrow.BinaryTypes.String, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, true},
		{arrow.ListOf(arrow.BinaryTypes.String), arrow.LargeListOf(arrow.BinaryTypes.LargeString), true},
		{arrow.ListOf(arrow.PrimitiveTypes.Int64), arrow.ListOf(arrow.BinaryTypes.LargeString), false},
		{arrow.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Int64, false},
	} {
		if got := Refines(c.plain, c.stored); got != c.want {
			t.Errorf("refines(%s, %s) = %v, want %v", c.plain, c.stored, got, c.want)
		}
	}
}

// timeDeviceTarget is a table of a time and a device column.
func timeDeviceTarget(t *testing.T) *arrow.Schema {
	t.Helper()
	return arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device", Type: iceberg.PrimitiveTypes.String},
	)
}

// TestDecoderPanicRefusesFile: a panic of the reader while it decodes a
// file is the file's refusal, unreadable, naming the file and where it
// was, with the stack kept out of the reason; the next file decodes.
func TestDecoderPanicRefusesFile(t *testing.T) {
	const poison = "site-berlin/gw-7/2026-03-01T12.csv"
	decodeHook = func(key string) {
		if key == poison {
			var m map[string]int
			m["boom"]++ // a nil map: the kind of bug a reader has
		}
	}
	t.Cleanup(func() { decodeHook = nil })
	csv := "time,device,temp,count,ok,level\n2026-03-01T12:00:00Z,gw-7,21.5,1,true,3\n"
	_, err := decode(t, poison, []byte(csv), DecodeOptions{Target: tableTarget(t), TimeColumn: "time"})
	fe := mustFileError(t, err)
	if !IsPanic(err) || !IsUnreadable(err) {
		t.Fatalf("IsPanic = %v, IsUnreadable = %v: %v", IsPanic(err), IsUnreadable(err), err)
	}
	if fe.Key != poison || !strings.Contains(err.Error(), "the reader crashed while decoding the file") ||
		!strings.Contains(err.Error(), "assignment to entry in nil map") {
		t.Fatalf("error = %v", err)
	}
	if strings.Contains(err.Error(), "goroutine") || !strings.Contains(string(PanicStack(err)), "TestDecoderPanicRefusesFile") {
		t.Fatalf("the stack is in the reason, or not kept: %v", err)
	}
	if _, err := decode(t, "site-berlin/gw-7/2026-03-01T13.csv", []byte(csv), DecodeOptions{Target: tableTarget(t), TimeColumn: "time"}); err != nil {
		t.Fatalf("the next file: %v", err)
	}

	// Check, upload --validate's decode, says the same.
	_, err = Check(context.Background(), Source{Key: poison, R: strings.NewReader(csv), Size: int64(len(csv))},
		DecodeOptions{TimeColumn: "time"}, CheckOptions{})
	if !IsPanic(err) {
		t.Fatalf("Check: %v", err)
	}
}

// TestParquetPanicNamesRowGroup: a panic while the rows of a Parquet file
// are read names the row group being read.
func TestParquetPanicNamesRowGroup(t *testing.T) {
	rec := sensorRecord(t)
	defer rec.Release()
	data := writeParquet(t, rec)
	ro := &resolved{key: "k.parquet", mem: memory.DefaultAllocator, batchRows: 2}
	bs, err := openParquet(context.Background(), ro, Source{Key: ro.key, R: bytes.NewReader(data), Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	defer bs.close()
	ps := bs.(*parquetSource)
	first, err := ps.next()
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	// The record reader is gone: the next read panics.
	rr := ps.rr
	ps.rr = nil
	defer func() { ps.rr = rr }()
	_, err = ps.next()
	if !IsPanic(err) || !strings.Contains(err.Error(), "(row group 1 of 1, reading from row 3)") {
		t.Fatalf("error = %v", err)
	}
}

// TestParquetPanicNamesColumn: when reading a Parquet file's rows panics,
// the refusal names the column whose reading alone panics, and the row
// group the format places the read in. The file stands in for one that
// pqarrow is told, by an ARROW:schema not set aside, to read as a large
// string although it holds timestamps (decode/pqarrowio's test of the same
// name reads such a file).
func TestParquetPanicNamesColumn(t *testing.T) {
	sameNames := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.BinaryTypes.LargeString},
		{Name: "device", Type: arrow.BinaryTypes.String},
		{Name: "temp", Type: arrow.PrimitiveTypes.Float64},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	pa := &panickingFile{sc: sameNames, column: 0}
	ro := &resolved{key: "k.parquet", mem: memory.DefaultAllocator, batchRows: 2}
	rr, err := pa.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ps := &parquetSource{ctx: context.Background(), ro: ro, pa: pa, rr: rr, sc: sameNames}
	defer ps.close()
	_, err = ps.next()
	fe := mustFileError(t, err)
	if !IsPanic(err) || fe.Column != "time" || !strings.Contains(err.Error(), "row group 1 of 1, reading from row 1") {
		t.Fatalf("error = %v (column %q)", err, fe.Column)
	}
}

// panickingFile is a ParquetFile of one row group whose reading of all
// columns panics, and of column column alone too.
type panickingFile struct {
	sc     *arrow.Schema
	column int
}

func (f *panickingFile) Schema() *arrow.Schema                              { return f.sc }
func (f *panickingFile) NumRows() int64                                     { return 2 }
func (f *panickingFile) Verify(context.Context) error                       { return nil }
func (f *panickingFile) Close() error                                       { return nil }
func (f *panickingFile) LocateReadError(_ context.Context, err error) error { return err }

func (f *panickingFile) Records(context.Context) (array.RecordReader, error) {
	return panickingRecords{f.sc}, nil
}

func (f *panickingFile) ReadColumn(_ context.Context, i int, _ int64) (int64, error) {
	if i == f.column {
		panic("reading a timestamp column as a large string")
	}
	return 2, nil
}

func (f *panickingFile) RowGroupAt(rows int64) string {
	if rows < 2 {
		return fmt.Sprintf("row group 1 of 1, reading from row %d", rows+1)
	}
	return ""
}

// panickingRecords panics on reading its first batch.
type panickingRecords struct{ sc *arrow.Schema }

func (panickingRecords) Retain()                        {}
func (panickingRecords) Release()                       {}
func (r panickingRecords) Schema() *arrow.Schema        { return r.sc }
func (panickingRecords) RecordBatch() arrow.RecordBatch { return nil }
func (panickingRecords) Record() arrow.RecordBatch      { return nil }
func (panickingRecords) Err() error                     { return nil }
func (panickingRecords) Next() bool                     { panic("reading a timestamp column as a large string") }
