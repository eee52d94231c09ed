// Package corpus reads the decoder's regression corpus
// (internal/decode/testdata/corpus): small landing files, one per rule of
// docs/ingest.md and per case the decoder handles, each with its expected
// rows or its expected refusal in manifest.json. The decoder's tests run
// every case through decode.Decode; the interop tests run them through
// ingest and read the tables back with independent readers. It is only
// meant to be imported from _test.go files.
package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Dir is the corpus folder, found from this source file so that tests of
// any package (and module) can read it.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "decode", "testdata", "corpus")
}

// Case is one landing file of the corpus and what loading it must give.
type Case struct {
	// File is the path below the corpus folder; it is also the landing key
	// (below a prefix) when a test ingests it.
	File string `json:"file"`
	// Rule names the rule of docs/ingest.md (or the case already handled)
	// the file is about: numbers, local-times, utf8, whole-file, empty,
	// unnamed-column, time-range, null-tokens, duplicates, lines, handled.
	Rule string `json:"rule"`
	// About says what the file holds.
	About string `json:"about"`
	// Source is the public bug report of another reader the case comes
	// from, if any.
	Source string `json:"source,omitempty"`

	// Table, when set, is the table the file is loaded into, one column a
	// string "name type" or "name type required" (Iceberg primitive type
	// names: timestamptz, timestamp, string, double, float, long, int,
	// boolean, date). Without it, the file creates the table (columns and
	// time column inferred).
	Table []string `json:"table,omitempty"`
	// TimeColumn is the time column (--time-column); "" infers it, or is
	// "time" when Table is set.
	TimeColumn string `json:"time_column,omitempty"`
	// TimeUnit and AssumeTimezone are --time-unit and --assume-timezone.
	TimeUnit       string `json:"time_unit,omitempty"`
	AssumeTimezone string `json:"assume_timezone,omitempty"`
	// SeriesKey is the table's series key (--series-key).
	SeriesKey []string `json:"series_key,omitempty"`
	// CSVDelimiter, CSVDecimalComma and CSVNull are --csv-delimiter,
	// --csv-decimal-comma and --csv-null (the tokens).
	CSVDelimiter    string   `json:"csv_delimiter,omitempty"`
	CSVDecimalComma bool     `json:"csv_decimal_comma,omitempty"`
	CSVNull         []string `json:"csv_null,omitempty"`
	// ColumnTypes are --column settings, "name type" (Iceberg type names
	// as in Table): the types of columns the file creates.
	ColumnTypes []string `json:"column_types,omitempty"`
	// Evolve is --evolve: off (""), add-columns or widen.
	Evolve string `json:"evolve,omitempty"`

	// Columns are the table's columns after the load ("name type" as in
	// Table); required for an accepted case without Table.
	Columns []string `json:"columns,omitempty"`
	// Rows are the expected rows in column order, each value rendered as
	// Render renders it, null for null. An accepted file has Rows (maybe
	// empty); a refused one has Refused.
	Rows [][]*string `json:"rows,omitempty"`
	// DuplicateRows is the number of rows whose (series key, time) an
	// earlier row has.
	DuplicateRows int64 `json:"duplicate_rows,omitempty"`
	// Refused is the expected refusal.
	Refused *Refusal `json:"refused,omitempty"`
}

// Refusal is what the error of a refused file must say.
type Refusal struct {
	// Keywords must all occur in the reason (case-insensitive): they say
	// what the case is about.
	Keywords []string `json:"keywords"`
	// Row, Line, Column and Value, when set, are the error's fields.
	Row    int64  `json:"row,omitempty"`
	Line   int64  `json:"line,omitempty"`
	Column string `json:"column,omitempty"`
	Value  string `json:"value,omitempty"`
}

// Load reads manifest.json of the corpus folder and checks that every
// listed file exists and every file is listed.
func Load() ([]Case, error) {
	dir := Dir()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	var cases []Case
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cases); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	listed := map[string]bool{}
	for _, c := range cases {
		if listed[c.File] {
			return nil, fmt.Errorf("manifest.json: %s listed twice", c.File)
		}
		listed[c.File] = true
		if (c.Refused == nil) == (c.Rows == nil) {
			return nil, fmt.Errorf("manifest.json: %s needs either rows or refused", c.File)
		}
		if c.Refused != nil && len(c.Refused.Keywords) == 0 {
			return nil, fmt.Errorf("manifest.json: %s: a refusal needs keywords saying what it is about", c.File)
		}
		if c.Refused == nil && c.Table == nil && c.Columns == nil {
			return nil, fmt.Errorf("manifest.json: %s: an accepted file that creates its table needs columns", c.File)
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(c.File))); err != nil {
			return nil, fmt.Errorf("manifest.json: %w", err)
		}
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if rel != "manifest.json" && rel != "README.md" && rel != ".gitattributes" && !strings.HasSuffix(rel, ".go") && !listed[rel] {
			return fmt.Errorf("%s is not listed in manifest.json", rel)
		}
		return nil
	})
	return cases, err
}

// Path is the case's file on disk.
func (c Case) Path() string { return filepath.Join(Dir(), filepath.FromSlash(c.File)) }

// Time returns the time column: TimeColumn, or "time" for a case with a
// Table.
func (c Case) Time() string {
	if c.TimeColumn == "" && c.Table != nil {
		return "time"
	}
	return c.TimeColumn
}

// Location is AssumeTimezone loaded, nil for none.
func (c Case) Location() (*time.Location, error) {
	if c.AssumeTimezone == "" {
		return nil, nil
	}
	return time.LoadLocation(c.AssumeTimezone)
}

// Delimiter is CSVDelimiter as a rune, 0 for none.
func (c Case) Delimiter() rune {
	for _, r := range c.CSVDelimiter {
		return r
	}
	return 0
}

// Types are the Arrow types of ColumnTypes by name, as tables hold them.
func (c Case) Types() (map[string]arrow.DataType, error) {
	cols, err := ParseColumns(c.ColumnTypes)
	if err != nil || len(cols) == 0 {
		return nil, err
	}
	out := map[string]arrow.DataType{}
	for _, col := range cols {
		t, _ := icebergType(col.Type)
		dt, err := table.TypeToArrowType(t, false, false)
		if err != nil {
			return nil, err
		}
		out[col.Name] = dt
	}
	return out, nil
}

// Column is one parsed "name type [required]" entry.
type Column struct {
	Name     string
	Type     string // Iceberg primitive type name
	Required bool
}

// ParseColumns parses Table or Columns entries.
func ParseColumns(specs []string) ([]Column, error) {
	out := make([]Column, len(specs))
	for i, s := range specs {
		f := strings.Fields(s)
		if len(f) < 2 || len(f) > 3 || (len(f) == 3 && f[2] != "required") {
			return nil, fmt.Errorf("column %q: want \"name type\" or \"name type required\"", s)
		}
		if _, err := icebergType(f[1]); err != nil {
			return nil, err
		}
		out[i] = Column{Name: f[0], Type: f[1], Required: len(f) == 3}
	}
	return out, nil
}

// IcebergSchema is the Iceberg schema of Table, field ids from 1.
func (c Case) IcebergSchema() (*iceberg.Schema, error) {
	cols, err := ParseColumns(c.Table)
	if err != nil {
		return nil, err
	}
	fields := make([]iceberg.NestedField, len(cols))
	for i, col := range cols {
		t, _ := icebergType(col.Type)
		fields[i] = iceberg.NestedField{ID: i + 1, Name: col.Name, Type: t, Required: col.Required}
	}
	return iceberg.NewSchema(0, fields...), nil
}

func icebergType(name string) (iceberg.Type, error) {
	switch name {
	case "timestamptz":
		return iceberg.PrimitiveTypes.TimestampTz, nil
	case "timestamp":
		return iceberg.PrimitiveTypes.Timestamp, nil
	case "string":
		return iceberg.PrimitiveTypes.String, nil
	case "double":
		return iceberg.PrimitiveTypes.Float64, nil
	case "float":
		return iceberg.PrimitiveTypes.Float32, nil
	case "long":
		return iceberg.PrimitiveTypes.Int64, nil
	case "int":
		return iceberg.PrimitiveTypes.Int32, nil
	case "boolean":
		return iceberg.PrimitiveTypes.Bool, nil
	case "date":
		return iceberg.PrimitiveTypes.Date, nil
	}
	return nil, fmt.Errorf("unknown column type %q", name)
}

// Render renders value i of an Arrow array as the manifest writes values:
// nil for null; timestamps as RFC 3339 in UTC with as many fraction digits
// as needed (no "Z" for a timestamp without zone); floats with the fewest
// digits that read back to the same value (strconv 'g', -1; NaN, +Inf,
// -Inf); integers in decimal; booleans as true/false; dates as
// YYYY-MM-DD; strings as they are.
func Render(arr arrow.Array, i int) *string {
	if arr.IsNull(i) {
		return nil
	}
	var s string
	switch a := arr.(type) {
	case *array.Timestamp:
		dt := a.DataType().(*arrow.TimestampType)
		t := a.Value(i).ToTime(dt.Unit).UTC()
		s = t.Format("2006-01-02T15:04:05.999999999")
		if dt.TimeZone != "" {
			s += "Z"
		}
	case *array.Float64:
		s = formatFloat(a.Value(i), 64)
	case *array.Float32:
		s = formatFloat(float64(a.Value(i)), 32)
	case *array.Date32:
		s = a.Value(i).ToTime().Format("2006-01-02")
	case *array.String:
		s = a.Value(i)
	default:
		s = arr.ValueStr(i)
	}
	return &s
}

func formatFloat(v float64, bits int) string {
	return strconv.FormatFloat(v, 'g', -1, bits)
}
