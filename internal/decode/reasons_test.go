package decode

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/zlib"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

const reasonsCSV = "time,device,temp\n2026-03-01T12:00:00Z,gw-7,21.5\n2026-03-01T12:01:00Z,gw-7,22.5\n"

// TestZlibNamedGzip: zlib data (a zlib header, not gzip's) in a file named
// .csv.gz is named as zlib, whatever its compression level, with the fix.
func TestZlibNamedGzip(t *testing.T) {
	for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, 2, zlib.DefaultCompression, zlib.BestCompression} {
		var buf bytes.Buffer
		w, err := zlib.NewWriterLevel(&buf, level)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(strings.Repeat(reasonsCSV, 20))); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = decode(t, "gw/z.csv.gz", buf.Bytes(), DecodeOptions{TimeColumn: "time"})
		fe := mustFileError(t, err)
		for _, want := range []string{"zlib data", "not gzip", "named .gz", "compress the text with gzip"} {
			if !strings.Contains(fe.Reason, want) {
				t.Errorf("level %d (% x): reason %q, want %q", level, buf.Bytes()[:2], fe.Reason, want)
			}
		}
	}
	// zlib data inside gzip data.
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	if _, err := w.Write([]byte(reasonsCSV)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := decode(t, "gw/z.csv.gz", gz(t, buf.String()), DecodeOptions{TimeColumn: "time"})
	if fe := mustFileError(t, err); !strings.Contains(fe.Reason, "the gzip data holds zlib data") || !strings.Contains(fe.Reason, "compressed twice") {
		t.Errorf("zlib inside gzip: reason %q", fe.Reason)
	}
	// Text that starts "x^" (a valid zlib header) is text.
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		text := []byte("x^")
		for range 200 {
			text = append(text, byte(0x20+rnd.IntN(0x5f)))
		}
		if isZlib(text) {
			t.Fatalf("%q read as zlib data", text)
		}
	}
	d, err := decode(t, "gw/x.csv", []byte("x^,time\n1,2026-03-01T12:00:00Z\n"), DecodeOptions{TimeColumn: "time"})
	if err != nil || d.Rows != 1 {
		t.Fatalf("text starting x^: %v", err)
	}
}

func tarOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	if err := w.WriteHeader(&tar.Header{Name: "export/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := w.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(reasonsCSV)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(reasonsCSV)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, n := range names {
		f, err := w.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(reasonsCSV)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestArchivesNamedCSV: a tar or zip archive named .csv or .csv.gz (a
// .tar.gz among them) is named as the archive it is, with its first file.
func TestArchivesNamedCSV(t *testing.T) {
	tarball := tarOf(t, "export/2026-03-01.csv", "export/2026-03-02.csv")
	var names []string
	for i := range 400 {
		names = append(names, fmt.Sprintf("export/2026-03-01-%03d.csv", i))
	}
	large := tarOf(t, names...)
	zipped := zipOf(t, "2026-03-01.csv")
	xlsx := zipOf(t, "[Content_Types].xml", "xl/workbook.xml")
	cases := []struct {
		key  string
		data []byte
		want []string
	}{
		{"gw/a.csv.gz", gz(t, string(tarball)), []string{"a tar archive compressed with gzip (a .tar.gz) of 2 files whose first file is", `"export/2026-03-01.csv"`, "upload the CSV files themselves"}},
		{"gw/a.csv", tarball, []string{"a tar archive of 2 files whose first file is", `"export/2026-03-01.csv"`, "upload the CSV files themselves"}},
		{"gw/a.csv.gz", gz(t, string(large)), []string{"a tar archive compressed with gzip (a .tar.gz) whose first file is", `"export/2026-03-01-000.csv"`}},
		{"gw/a.csv.gz", zipped, []string{"a zip archive", "named .gz", `"2026-03-01.csv"`, "extract the CSV file"}},
		{"gw/a.csv", zipped, []string{"a zip archive whose first file is", `"2026-03-01.csv"`, "extract the CSV file"}},
		{"gw/a.csv.gz", gz(t, string(zipped)), []string{"a zip archive", "inside the gzip data", "extract the CSV file"}},
		{"gw/a.csv", xlsx, []string{"an Excel .xlsx workbook", "export the sheet as CSV UTF-8"}},
	}
	for _, c := range cases {
		_, err := decode(t, c.key, c.data, DecodeOptions{TimeColumn: "time"})
		fe := mustFileError(t, err)
		for _, want := range c.want {
			if !strings.Contains(fe.Reason, want) {
				t.Errorf("%s: reason %q, want %q", c.key, fe.Reason, want)
			}
		}
		if strings.Contains(fe.Reason, "UTF-16") || strings.Contains(fe.Reason, "NUL") {
			t.Errorf("%s: reason %q", c.key, fe.Reason)
		}
	}
}

// TestEncryptedParquet: a Parquet file with an encrypted footer (PARE at
// its start and end) is named as such.
func TestEncryptedParquet(t *testing.T) {
	rec := sensorRecord(t)
	defer rec.Release()
	data := writeParquet(t, rec)
	copy(data, "PARE")
	copy(data[len(data)-4:], "PARE")
	_, err := decode(t, "gw/e.parquet", data, DecodeOptions{TimeColumn: "time"})
	fe := mustFileError(t, err)
	if !strings.Contains(fe.Reason, "an encrypted Parquet file (Parquet modular encryption") || !strings.Contains(fe.Reason, "without encryption") || !IsUnreadable(err) {
		t.Errorf("reason %q", fe.Reason)
	}
}

// TestParquetTrailingBytes: bytes after a Parquet file's footer are named
// with their number and where the footer ends; a truncated file keeps its
// own reason.
func TestParquetTrailingBytes(t *testing.T) {
	rec := sensorRecord(t)
	defer rec.Release()
	data := writeParquet(t, rec)
	for _, extra := range [][]byte{{'\n'}, make([]byte, 512), []byte("2026-03-01T12:03:00Z,gw-7,24.5\n"), append([]byte("PAR1"), 1, 2, 3)} {
		padded := append(bytes.Clone(data), extra...)
		_, err := decode(t, "gw/p.parquet", padded, DecodeOptions{TimeColumn: "time"})
		fe := mustFileError(t, err)
		want := strings.Join([]string{strconv.Itoa(len(extra)), " bytes after the end of the Parquet file (its footer ends at byte ", strconv.Itoa(len(data)), ")"}, "")
		if !strings.Contains(fe.Reason, want) || !strings.Contains(fe.Reason, "upload the file as the writer wrote it") {
			t.Errorf("reason %q, want %q", fe.Reason, want)
		}
	}
	_, err := decode(t, "gw/p.parquet", data[:len(data)-7], DecodeOptions{TimeColumn: "time"})
	fe := mustFileError(t, err)
	if strings.Contains(fe.Reason, "after the end") {
		t.Errorf("truncated file: reason %q", fe.Reason)
	}
}

// uuidEnumParquet is a Parquet file of a time column, a UUID column
// (FIXED_LEN_BYTE_ARRAY(16) annotated UUID) and two ENUM columns
// (BYTE_ARRAY annotated ENUM as a logical type, and as a converted type
// alone), written without an Arrow schema, as parquet-mr writes them.
func uuidEnumParquet(t *testing.T) []byte {
	t.Helper()
	root := schema.MustGroup(schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{
		schema.MustPrimitive(schema.NewPrimitiveNodeLogical("time", parquet.Repetitions.Required, schema.NewTimestampLogicalType(true, schema.TimeUnitMicros), parquet.Types.Int64, 0, -1)),
		schema.MustPrimitive(schema.NewPrimitiveNodeLogical("id", parquet.Repetitions.Optional, schema.UUIDLogicalType{}, parquet.Types.FixedLenByteArray, 16, -1)),
		schema.MustPrimitive(schema.NewPrimitiveNodeLogical("state", parquet.Repetitions.Optional, schema.EnumLogicalType{}, parquet.Types.ByteArray, 0, -1)),
		schema.MustPrimitive(schema.NewPrimitiveNodeConverted("mode", parquet.Repetitions.Optional, parquet.Types.ByteArray, schema.ConvertedTypes.Enum, 0, 0, 0, -1)),
	}, -1))
	var buf bytes.Buffer
	w := file.NewParquetWriter(&buf, root)
	rg := w.AppendRowGroup()
	write := func(f func(file.ColumnChunkWriter) error) {
		cw, err := rg.NextColumn()
		if err != nil {
			t.Fatal(err)
		}
		if err := f(cw); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMicro()
	write(func(cw file.ColumnChunkWriter) error {
		_, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch([]int64{base, base + 60e6, base + 120e6}, nil, nil)
		return err
	})
	write(func(cw file.ColumnChunkWriter) error {
		_, err := cw.(*file.FixedLenByteArrayColumnChunkWriter).WriteBatch([]parquet.FixedLenByteArray{
			{0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00},
			{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		}, []int16{1, 0, 1}, nil)
		return err
	})
	write(func(cw file.ColumnChunkWriter) error {
		_, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch([]parquet.ByteArray{[]byte("RUNNING"), []byte("STOPPED"), []byte("GESTÖRT")}, []int16{1, 1, 1}, nil)
		return err
	})
	write(func(cw file.ColumnChunkWriter) error {
		_, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch([]parquet.ByteArray{[]byte("AUTO"), []byte("MANUAL")}, []int16{1, 0, 1}, nil)
		return err
	})
	if err := rg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestParquetEnumAndUUID: ENUM columns load as strings; a UUID column
// creates a uuid column with every value as written, and loads into an
// existing string column as its canonical text.
func TestParquetEnumAndUUID(t *testing.T) {
	data := uuidEnumParquet(t)
	wantRows := [][]string{
		{"2026-03-01T12:00:00Z", "123e4567-e89b-12d3-a456-426614174000", "RUNNING", "AUTO"},
		{"2026-03-01T12:01:00Z", "NULL", "STOPPED", "NULL"},
		{"2026-03-01T12:02:00Z", "ffffffff-ffff-ffff-ffff-ffffffffffff", "GESTÖRT", "MANUAL"},
	}
	check := func(t *testing.T, d *Decoded) {
		t.Helper()
		got := rows(t, d)
		if len(got) != len(wantRows) {
			t.Fatalf("rows = %v", got)
		}
		for i := range wantRows {
			if strings.Join(got[i], "|") != strings.Join(wantRows[i], "|") {
				t.Errorf("row %d = %v, want %v", i+1, got[i], wantRows[i])
			}
		}
	}
	t.Run("new table", func(t *testing.T) {
		d, err := decode(t, "gw/u.parquet", data, DecodeOptions{TimeColumn: "time"})
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{"id": "uuid", "state": "string", "mode": "string"} {
			if got := TypeName(d.Schema.Field(d.Schema.FieldIndices(name)[0]).Type); got != want {
				t.Errorf("column %s is %s, want %s", name, got, want)
			}
		}
		isc, err := table.ArrowSchemaToIcebergWithFreshIDs(d.Schema, true)
		if err != nil {
			t.Fatal(err)
		}
		if f, _ := isc.FindFieldByName("id"); !f.Type.Equals(iceberg.PrimitiveTypes.UUID) {
			t.Errorf("Iceberg type of id = %s", f.Type)
		}
		check(t, d)
		a := d.Records[0].Column(d.Schema.FieldIndices("id")[0]).(array.ExtensionArray).Storage().(*array.FixedSizeBinary)
		if !bytes.Equal(a.Value(0), []byte{0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00}) {
			t.Errorf("uuid bytes = % x", a.Value(0))
		}
	})
	for name, idType := range map[string]iceberg.Type{"string column": iceberg.PrimitiveTypes.String, "uuid column": iceberg.PrimitiveTypes.UUID} {
		t.Run(name, func(t *testing.T) {
			target := arrowTarget(t,
				iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
				iceberg.NestedField{ID: 2, Name: "id", Type: idType},
				iceberg.NestedField{ID: 3, Name: "state", Type: iceberg.PrimitiveTypes.String},
				iceberg.NestedField{ID: 4, Name: "mode", Type: iceberg.PrimitiveTypes.String},
			)
			d, err := decode(t, "gw/u.parquet", data, DecodeOptions{Target: target, TimeColumn: "time"})
			if err != nil {
				t.Fatal(err)
			}
			check(t, d)
		})
	}
}

// TestParquetEnumNotUTF8: an ENUM value that is not UTF-8 is refused as a
// string value that is not.
func TestParquetEnumNotUTF8(t *testing.T) {
	data := uuidEnumParquet(t)
	if bytes.Count(data, []byte("GESTÖRT")) == 0 {
		t.Fatal("value not found")
	}
	data = bytes.ReplaceAll(data, []byte("GESTÖRT"), []byte("GEST\xd6RRT")) // Latin-1 Ö
	_, err := decode(t, "gw/u.parquet", data, DecodeOptions{TimeColumn: "time"})
	fe := mustFileError(t, err)
	if fe.Column != "state" || fe.Row != 3 || !strings.Contains(fe.Reason, "UTF-8") {
		t.Errorf("error %v", err)
	}
}
