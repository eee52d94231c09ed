package upload

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/decode/arrowpq"
	"github.com/timelake/timelake/internal/storage"
)

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func parquetBytes(t *testing.T) []byte {
	return parquetOf(t, []arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64},
	}, func(b *array.RecordBuilder) {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1767607200000000))
		b.Field(1).(*array.Float64Builder).Append(1.5)
	})
}

// parquetOf writes the rows fill appends to a record of fields as a
// Parquet file.
func parquetOf(t *testing.T, fields []arrow.Field, fill func(*array.RecordBuilder)) []byte {
	t.Helper()
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	fill(b)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
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

// csvRows returns a valid CSV with n data rows.
func csvRows(n int) string {
	var b strings.Builder
	b.WriteString("time,sensor,value\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "2026-01-05T10:%02d:%02dZ,s%d,%d.5\n", i/60%60, i%60, i%7, i)
	}
	return b.String()
}

func TestValidate(t *testing.T) {
	good := csvRows(3)
	pq := parquetBytes(t)
	// A list column: the gateway reads Parquet without pqarrow
	// (decode's own reader) and refuses it as ingest does.
	nested := parquetOf(t, []arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, func(b *array.RecordBuilder) {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1767607200000000))
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append("a")
	})
	tests := []validateTest{
		{name: "csv", file: "r.csv", data: []byte(good)},
		{name: "tsv", file: "r.tsv", data: []byte("time\tvalue\n2026-01-05T10:00:00Z\t1\n")},
		{name: "gzipped csv", file: "r.csv.gz", data: gzipBytes(t, []byte(good))},
		{name: "bom", file: "r.csv", data: append([]byte{0xef, 0xbb, 0xbf}, good...)},
		{name: "quoted newline", file: "r.csv", data: []byte("time,note\n2026-01-05T10:00:00Z,\"a\nb\"\n")},
		{name: "parquet", file: "r.parquet", data: pq},
		{name: "ragged row", file: "r.csv", data: []byte(good + "2026-01-05T11:00:00Z,s1\n"),
			wantErr: "r.csv: row 4 (line 5): wrong number of fields: the line has 2, the header has 3", wantRow: 4},
		{name: "ragged row after the sample", file: "r.csv", data: []byte(csvRows(1500) + "x\n"),
			wantErr: "row 1501 (line 1502): wrong number of fields: the line has 1, the header has 3", wantRow: 1501},
		{name: "bad quote", file: "r.csv", data: []byte("time,v\n2026-01-05T10:00:00Z,\"x\"y\n"),
			wantErr: "r.csv: row 1 (line 2): malformed csv", wantRow: 1},
		{name: "bad time in sample", file: "r.csv", data: []byte("time,v\n2026-01-05T10:00:00Z,1\nyesterday,2\n"),
			opts: ValidateOptions{TimeColumn: "time"}, wantErr: "r.csv: row 2 (line 3), column \"time\"", wantRow: 2},
		{name: "no time column", file: "r.csv", data: []byte("a,b\n1,2\n"), wantErr: "no time column found"},
		{name: "named time column missing", file: "r.csv", data: []byte(good), opts: ValidateOptions{TimeColumn: "ts"},
			wantErr: "time column is not in the file"},
		{name: "empty", file: "r.csv", data: nil, wantErr: "r.csv: empty file"},
		{name: "header only", file: "r.csv", data: []byte("time,v\n")}, // loads as 0 rows
		{name: "unsupported type", file: "r.xml", data: []byte("<r/>"), wantErr: "unsupported file type"},
		{name: "truncated gzip", file: "r.csv.gz", data: gzipBytes(t, []byte(csvRows(200)))[:300], wantErr: "the gzip data is truncated"},
		{name: "truncated parquet", file: "r.parquet", data: pq[:len(pq)-10], wantErr: "r.parquet"},
		{name: "parquet list column", file: "r.parquet", data: nested,
			wantErr: `r.parquet: column "tags": unsupported column type list`},
		// Files larger than their sample: rows after it are only scanned.
		{name: "bad time after the sample", file: "r.csv", data: []byte(csvRows(2) + "yesterday,s1,1\n"),
			opts: ValidateOptions{TimeColumn: "time", SampleRows: 2}},
		{name: "bad time in a sample of 2", file: "r.csv", data: []byte("time,v\n2026-01-05T10:00:00Z,1\nyesterday,2\n2026-01-05T10:00:00Z,3\n"),
			opts: ValidateOptions{TimeColumn: "time", SampleRows: 2}, wantErr: "r.csv: row 2 (line 3), column \"time\"", wantRow: 2},
		{name: "ragged row after a sample of 2", file: "r.csv", data: []byte(csvRows(3) + "x\n"), opts: ValidateOptions{SampleRows: 2},
			wantErr: "row 4 (line 5): wrong number of fields: the line has 1, the header has 3", wantRow: 4},
		{name: "ragged row without a final newline", file: "r.csv", data: []byte(csvRows(2) + "x"),
			wantErr: "row 3 (line 4): wrong number of fields: the line has 1, the header has 3", wantRow: 3},
		{name: "blank lines at the end", file: "r.csv", data: []byte(csvRows(2) + "\n\n\n")},
		{name: "quoted newlines", file: "r.csv", data: []byte("time,note\n2026-01-05T10:00:00Z,\"a\nb\nc\"\n2026-01-05T10:00:01Z,d\n"),
			opts: ValidateOptions{SampleRows: 2}},
		{name: "unterminated quote", file: "r.csv", data: []byte("time,note\n2026-01-05T10:00:00Z,\"a\n"),
			wantErr: "r.csv: row 1 (line 2): malformed csv", wantRow: 1},
	}
	// Parquet is read with the reader the binary registers: pqarrow in
	// timelake (and in this test, which links ingest), decode's own in
	// timelake-gateway, which does not link pqarrow.
	for _, reader := range []string{"registered reader", "gateway reader"} {
		if reader == "gateway reader" {
			prev := decode.SetParquetFormat(arrowpq.Format{})
			defer decode.SetParquetFormat(prev)
		}
		for _, tt := range tests {
			t.Run(reader+"/"+tt.name, func(t *testing.T) { tt.run(t) })
		}
	}
}

// validateTest is a case of TestValidate.
type validateTest struct {
	name    string
	file    string
	data    []byte
	opts    ValidateOptions
	wantErr string // substring; "" means valid
	wantRow int64
}

// run validates tt.data as a file named tt.file, from the file and from
// memory.
func (tt validateTest) run(t *testing.T) {
	t.Helper()
	path := filepath.Join(t.TempDir(), tt.file)
	if err := os.WriteFile(path, tt.data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Validate reads the file; upload validates small files from
	// memory (validate with data), which must find the same.
	var msgs []string
	for _, mem := range []bool{false, true} {
		var err error
		if mem {
			_, err = validate(t.Context(), path, bytes.NewReader(tt.data), int64(len(tt.data)), tt.opts)
		} else {
			_, err = Validate(t.Context(), path, tt.opts)
		}
		if tt.wantErr == "" {
			if err != nil {
				t.Fatalf("in memory %v: %v", mem, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Fatalf("in memory %v: err = %v, want %q", mem, err, tt.wantErr)
		}
		if msgs = append(msgs, err.Error()); len(msgs) == 2 && msgs[0] != msgs[1] {
			t.Fatalf("from the file: %s; from memory: %s", msgs[0], msgs[1])
		}
		var fe *decode.FileError
		if !errors.As(err, &fe) || fe.Key != path || fe.Row != tt.wantRow {
			t.Fatalf("in memory %v: err = %#v, want a FileError for %s at row %d", mem, err, path, tt.wantRow)
		}
	}
}

// TestRulesFor: Config.RulesFor gives each key its own options; a
// *decode.FileError refuses the file (named by its path when the error
// has no key) and the run goes on, any other error stops the run.
func TestRulesFor(t *testing.T) {
	dir := t.TempDir()
	s, err := storage.NewLocalStore(filepath.Join(dir, "landing"))
	if err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, filepath.Join(dir, "r.csv"), "ts,v\n2026-01-05T10:00:00Z,1\n", t0)
	var asked []string
	rulesFor := func(_ context.Context, key string) (*Rules, ValidateOptions, error) {
		asked = append(asked, key)
		switch {
		case strings.HasPrefix(key, "a/"):
			return nil, ValidateOptions{TimeColumn: "ts"}, nil
		case strings.HasPrefix(key, "b/"):
			return nil, ValidateOptions{TimeColumn: "at"}, nil
		case strings.HasPrefix(key, "c/"):
			return nil, ValidateOptions{}, &decode.FileError{Reason: "no rules for " + key}
		}
		return nil, ValidateOptions{}, errors.New("the table cannot be read")
	}
	run := func(key string) error {
		_, err := Run(t.Context(), Config{Store: s, Files: []string{file}, Key: key, Validate: true, RulesFor: rulesFor,
			ValidateOptions: ValidateOptions{TimeColumn: "v"}})
		return err
	}
	if err := run("a/f.csv"); err != nil {
		t.Errorf("a/: %v", err)
	}
	if err := run("b/f.csv"); err == nil || !IsFileError(err) || !strings.Contains(err.Error(), `column "at"`) {
		t.Errorf("b/: err = %v, want a file error naming the column at", err)
	}
	if err := run("c/f.csv"); err == nil || !IsFileError(err) || err.Error() != file+": no rules for c/f.csv" {
		t.Errorf("c/: err = %v, want the file error %q", err, file+": no rules for c/f.csv")
	}
	if err := run("d/f.csv"); err == nil || IsFileError(err) || !strings.Contains(err.Error(), "the table cannot be read") {
		t.Errorf("d/: err = %v, want the error that stops the run", err)
	}
	if got := keys(t, s); len(got) != 1 || got[0] != "a/f.csv" {
		t.Errorf("landing holds %v, want a/f.csv only", got)
	}
	if want := []string{"a/f.csv", "b/f.csv", "c/f.csv", "d/f.csv"}; !slices.Equal(asked, want) {
		t.Errorf("RulesFor asked for %v, want %v", asked, want)
	}
}
