package pqarrowio_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/decode/arrowpq"
	"github.com/timelake/timelake/internal/decode/pqarrowio"
	"github.com/timelake/timelake/internal/decode/pqlite"
	"github.com/timelake/timelake/internal/testutil/corpus"
)

// parquetCase is a Parquet file and the options ingest reads it with.
type parquetCase struct {
	name string
	data []byte
	opts decode.DecodeOptions
}

// TestColumnReaderAgrees checks that decode's own Parquet readers, the
// ones timelake-gateway's upload --validate reads with (decode/pqlite;
// decode/arrowpq's own reader of flat columns before it), refuse every
// file pqarrow (ingest) refuses: the Parquet files of the corpus
// (internal/decode/testdata/corpus), a file per Arrow type (written with
// and without the ARROW:schema, nested types included), and damaged
// copies of each (cut short, a byte changed in the pages, the footer and
// its length), and pqarrow (ingest) refuses every file they refuse. On
// the whole files the reasons are the same word for word but for a
// nested column's, which names its kind (list, struct, map) where
// pqarrow's names its Arrow type. On damaged files the reason may differ
// in its wording of the damage. (A row group whose metadata gives a
// negative row count made pqarrow read no row of it without an error, so
// ingest loaded none of the file's rows: decode refuses a footer whose
// counts do not add up, for every reader.)
func TestColumnReaderAgrees(t *testing.T) {
	cases := corpusCases(t)
	cases = append(cases, typeCases(t)...)
	cases = append(cases, storedSchemaCases(t)...)
	cases = append(cases, wideDecimalCases(t)...)
	whole := len(cases)
	for _, c := range cases[:whole] {
		if c.name == "types/null.parquet" || c.name == "types/null-arrow-schema.parquet" {
			// Known difference: pqarrow reads a column of nulls by its
			// own rules, and refuses some damaged definition levels that
			// the column chunk reader reads as nulls.
			continue
		}
		cases = append(cases, damage(c)...)
	}
	refused, stricter := 0, map[string]int{}
	for i, c := range cases {
		withPqarrow := check(c, arrowpq.Format{Reader: pqarrowio.Reader{}})
		for _, own := range []struct {
			name string
			f    decode.ParquetFormat
		}{{"arrowpq's own reader", arrowpq.Format{}}, {"pqlite", pqlite.Format{}}} {
			err := check(c, own.f)
			switch {
			case withPqarrow == nil && err == nil:
			case withPqarrow != nil && err == nil:
				t.Errorf("%s: pqarrow refuses it, %s does not: %v", c.name, own.name, withPqarrow)
			case withPqarrow == nil:
				t.Errorf("%s: %s refuses it, pqarrow does not: %v", c.name, own.name, err)
				stricter[own.name]++
			case i < whole && err.Error() != withPqarrow.Error() && !sameNestedRefusal(withPqarrow, err):
				t.Errorf("%s: pqarrow and %s give different reasons:\npqarrow: %v\n%s: %v", c.name, own.name, withPqarrow, own.name, err)
			}
		}
		if withPqarrow != nil {
			refused++
		}
	}
	t.Logf("%d files (%d whole), %d refused by pqarrow; refused where pqarrow reads them: %v", len(cases), whole, refused, stricter)
	if refused < len(cases)/4 || refused == len(cases) {
		t.Errorf("%d of %d files refused: the cases do not test both outcomes", refused, len(cases))
	}
}

// sameNestedRefusal reports whether a and b both refuse the same nested
// column as an unsupported type.
func sameNestedRefusal(a, b error) bool {
	var fa, fb *decode.FileError
	return errors.As(a, &fa) && errors.As(b, &fb) && fa.Column == fb.Column && fa.Column != "" &&
		strings.Contains(fa.Reason, "unsupported column type") && strings.Contains(fb.Reason, "unsupported column type")
}

// check runs decode.Check (upload --validate) on c with format f.
func check(c parquetCase, f decode.ParquetFormat) error {
	prev := decode.SetParquetFormat(f)
	defer decode.SetParquetFormat(prev)
	_, err := decode.Check(context.Background(), decode.Source{Key: c.name, R: bytes.NewReader(c.data), Size: int64(len(c.data))},
		c.opts, decode.CheckOptions{})
	var fe *decode.FileError
	if err != nil && !errors.As(err, &fe) {
		return fmt.Errorf("not a *decode.FileError: %w", err)
	}
	return err
}

// corpusCases are the Parquet files of the corpus, with their table.
func corpusCases(t *testing.T) []parquetCase {
	t.Helper()
	all, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	var out []parquetCase
	for _, c := range all {
		if !strings.HasSuffix(c.File, ".parquet") {
			continue
		}
		data, err := os.ReadFile(c.Path())
		if err != nil {
			t.Fatal(err)
		}
		loc, err := c.Location()
		if err != nil {
			t.Fatal(err)
		}
		types, err := c.Types()
		if err != nil {
			t.Fatal(err)
		}
		opts := decode.DecodeOptions{TimeColumn: c.Time(), TimeUnit: c.TimeUnit, AssumeLocation: loc, Columns: types, Evolve: decode.Evolution(c.Evolve)}
		if c.Table != nil {
			sc, err := c.IcebergSchema()
			if err != nil {
				t.Fatal(err)
			}
			if opts.Target, err = table.SchemaToArrowSchema(sc, nil, true, false); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, parquetCase{name: c.File, data: data, opts: opts})
		if c.Table != nil {
			// And as the file that creates its table.
			opts.Target = nil
			out = append(out, parquetCase{name: "new-table/" + c.File, data: data, opts: opts})
		}
	}
	if len(out) < 10 {
		t.Fatalf("%d Parquet files in the corpus", len(out))
	}
	return out
}

// typeCases are files of a time column and a column of each Arrow type
// pqarrow writes, each value JSON (a null among them), with and without
// the stored Arrow schema.
func typeCases(t *testing.T) []parquetCase {
	t.Helper()
	cols := []struct {
		name string
		dt   arrow.DataType
		json string
	}{
		{"bool", arrow.FixedWidthTypes.Boolean, `[true, null, false]`},
		{"int8", arrow.PrimitiveTypes.Int8, `[-128, null, 127]`},
		{"uint8", arrow.PrimitiveTypes.Uint8, `[0, null, 255]`},
		{"int16", arrow.PrimitiveTypes.Int16, `[-1, null, 300]`},
		{"uint16", arrow.PrimitiveTypes.Uint16, `[0, null, 65535]`},
		{"int32", arrow.PrimitiveTypes.Int32, `[-2147483648, null, 2147483647]`},
		{"uint32", arrow.PrimitiveTypes.Uint32, `[0, null, 4294967295]`},
		{"int64", arrow.PrimitiveTypes.Int64, `[-9223372036854775808, null, 9223372036854775807]`},
		{"uint64", arrow.PrimitiveTypes.Uint64, `[0, null, 18446744073709551615]`},
		{"float16", arrow.FixedWidthTypes.Float16, `[1.5, null, -0.25]`},
		{"float32", arrow.PrimitiveTypes.Float32, `[1.5, null, -0.25]`},
		{"float64", arrow.PrimitiveTypes.Float64, `[1e300, null, -0.25]`},
		{"string", arrow.BinaryTypes.String, `["a", null, "é"]`},
		{"large_string", arrow.BinaryTypes.LargeString, `["a", null, "b"]`},
		{"binary", arrow.BinaryTypes.Binary, `["AAE=", null, ""]`},
		{"large_binary", arrow.BinaryTypes.LargeBinary, `["AAE=", null, ""]`},
		{"fixed_size_binary", &arrow.FixedSizeBinaryType{ByteWidth: 2}, `["AAE=", null, "AQI="]`},
		{"date32", arrow.FixedWidthTypes.Date32, `[20513, null, 0]`},
		{"time32ms", arrow.FixedWidthTypes.Time32ms, `[43200001, null, 0]`},
		{"time64us", arrow.FixedWidthTypes.Time64us, `[43200000001, null, 86399000000]`},
		{"time64ns", arrow.FixedWidthTypes.Time64ns, `[43200000000001, null, 86399000000000]`},
		{"timestamp_s", arrow.FixedWidthTypes.Timestamp_s, `[1772366400, null, 0]`},
		{"timestamp_ms_berlin", &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Europe/Berlin"}, `[1772366400000, null, 0]`},
		{"timestamp_ns_utc", &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, `[1772366400000000000, null, 0]`},
		{"decimal_9_2", &arrow.Decimal128Type{Precision: 9, Scale: 2}, `["1.25", null, "-9999999.99"]`},
		{"decimal_38_0", &arrow.Decimal128Type{Precision: 38, Scale: 0}, `["99999999999999999999999999999999999999", null, "-1"]`},
		{"decimal256", &arrow.Decimal256Type{Precision: 40, Scale: 2}, `["1.25", null, "-1"]`},
		{"dictionary", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, `["a", null, "a"]`},
		{"uuid", extensions.NewUUIDType(), `["00000000-0000-0000-0000-000000000001", null, "ffffffff-ffff-ffff-ffff-ffffffffffff"]`},
		{"list", arrow.ListOf(arrow.PrimitiveTypes.Int32), `[[1, 2], null, []]`},
		{"struct", arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), `[{"a": 1}, null, {"a": null}]`},
		{"map", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), `[[{"key": "a", "value": 1}], null, []]`},
		{"null", arrow.Null, `[null, null, null]`},
	}
	var out []parquetCase
	for _, col := range cols {
		sc := arrow.NewSchema([]arrow.Field{
			{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
			{Name: col.name, Type: col.dt, Nullable: true},
		}, nil)
		timeCol, _, err := array.FromJSON(memory.DefaultAllocator, sc.Field(0).Type, strings.NewReader(`[1772366400000000, 1772366401000000, 1772366402000000]`))
		if err != nil {
			t.Fatal(err)
		}
		valueCol, _, err := array.FromJSON(memory.DefaultAllocator, col.dt, strings.NewReader(col.json))
		if err != nil {
			t.Fatalf("%s: %v", col.name, err)
		}
		rec := array.NewRecordBatch(sc, []arrow.Array{timeCol, valueCol}, 3)
		timeCol.Release()
		valueCol.Release()
		for _, stored := range []bool{false, true} {
			props := pqarrow.DefaultWriterProps()
			name := "types/" + col.name + ".parquet"
			if stored {
				props = pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())
				name = "types/" + col.name + "-arrow-schema.parquet"
			}
			var buf bytes.Buffer
			w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), props)
			if err != nil {
				t.Fatalf("%s: %v", col.name, err)
			}
			if err := w.Write(rec); err != nil {
				t.Fatalf("%s: %v", col.name, err)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("%s: %v", col.name, err)
			}
			out = append(out, parquetCase{name: name, data: buf.Bytes()})
		}
		rec.Release()
	}
	return out
}

// damage gives copies of c cut short and with bytes changed: in its
// pages, in its footer and in the footer's length.
func damage(c parquetCase) []parquetCase {
	n := len(c.data)
	var out []parquetCase
	for _, cut := range []int{n - 1, n - 8, n / 2, 12} {
		if cut > 0 && cut < n {
			out = append(out, parquetCase{name: fmt.Sprintf("%s cut at %d", c.name, cut), data: c.data[:cut], opts: c.opts})
		}
	}
	for i := 1; i <= 24; i++ {
		at := 4 + (n-12)*i/25
		for _, x := range []byte{0xff, 0x01} {
			d := bytes.Clone(c.data)
			d[at] ^= x
			out = append(out, parquetCase{name: fmt.Sprintf("%s with byte %d ^ %#x", c.name, at, x), data: d, opts: c.opts})
		}
	}
	return out
}

// storedSchemaCases are a file of a time, a long and a string column whose
// footer's ARROW:schema refines its types (a zone, a duration, a large
// string), disagrees with them in one column, names other columns or does
// not parse.
func storedSchemaCases(t *testing.T) []parquetCase {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "d", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(
		`[{"time": 1772366400000000, "v": 1, "d": "a"}, {"time": 1772366401000000, "v": null, "d": null}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	storedNamed := func(names [3]string, time, v, d arrow.DataType) string {
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(arrow.NewSchema([]arrow.Field{
			{Name: names[0], Type: time}, {Name: names[1], Type: v, Nullable: true}, {Name: names[2], Type: d, Nullable: true},
		}, nil)))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(buf.Bytes())
	}
	stored := func(time, v, d arrow.DataType) string { return storedNamed([3]string{"time", "v", "d"}, time, v, d) }
	berlin := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Berlin"}
	naive := &arrow.TimestampType{Unit: arrow.Microsecond}
	long, text := arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String
	values := map[string]string{
		"zone":                  stored(berlin, long, text),
		"naive":                 stored(naive, long, text),
		"duration":              stored(sc.Field(0).Type, &arrow.DurationType{Unit: arrow.Second}, text),
		"large-string":          stored(berlin, long, arrow.BinaryTypes.LargeString),
		"dictionary":            stored(berlin, long, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: text}),
		"zone-and-disagreeing":  stored(berlin, arrow.BinaryTypes.LargeString, text),
		"other-names":           storedNamed([3]string{"a", "b", "c"}, berlin, long, text),
		"not-base64":            "not base64!",
		"disagreeing-time-unit": stored(&arrow.TimestampType{Unit: arrow.Second}, long, text),
	}
	var out []parquetCase
	for name, value := range values {
		var buf bytes.Buffer
		w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
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
		out = append(out, parquetCase{name: "arrow-schema/" + name + ".parquet", data: buf.Bytes()})
	}
	return out
}

// wideDecimalCases are files written with the low-level writer: a time
// column and a DECIMAL(10, 2) column stored as FIXED_LEN_BYTE_ARRAY of
// 16 bytes, which pqarrow reads, and of 17, which it refuses.
func wideDecimalCases(t *testing.T) []parquetCase {
	t.Helper()
	var out []parquetCase
	for _, width := range []int{16, 17} {
		tm, err := schema.NewPrimitiveNodeLogical("time", parquet.Repetitions.Required,
			schema.NewTimestampLogicalType(true, schema.TimeUnitMicros), parquet.Types.Int64, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := schema.NewPrimitiveNodeLogical("amount", parquet.Repetitions.Optional,
			schema.NewDecimalLogicalType(10, 2), parquet.Types.FixedLenByteArray, width, -1)
		if err != nil {
			t.Fatal(err)
		}
		root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{tm, dec}, -1)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w := file.NewParquetWriter(&buf, root)
		rg := w.AppendRowGroup()
		cw, err := rg.NextColumn()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch([]int64{1772366400000000, 1772366401000000}, nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := cw.Close(); err != nil {
			t.Fatal(err)
		}
		if cw, err = rg.NextColumn(); err != nil {
			t.Fatal(err)
		}
		v := make([]byte, width)
		v[width-1] = 125 // 1.25
		if _, err := cw.(*file.FixedLenByteArrayColumnChunkWriter).WriteBatch([]parquet.FixedLenByteArray{v}, []int16{1, 0}, nil); err != nil {
			t.Fatal(err)
		}
		if err := cw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := rg.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		out = append(out, parquetCase{name: fmt.Sprintf("wide-decimal/%d-bytes.parquet", width), data: buf.Bytes()})
	}
	return out
}
