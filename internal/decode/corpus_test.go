package decode

import (
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/testutil/corpus"
)

// TestCorpus decodes every file of the regression corpus
// (testdata/corpus, manifest.json) as ingest would: into the case's table,
// or creating one. An accepted file must give exactly the expected rows and
// column types (no value changed, no invalid UTF-8 stored) sequentially and
// in parallel ranges; a refused file must give a *FileError with the
// expected row, line, column and value whose reason names what the case is
// about, and no rows. Check (upload --validate) must agree where it can
// know: on files that create their table.
func TestCorpus(t *testing.T) {
	cases, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, c := range cases {
		seen[c.Rule]++
		t.Run(c.File, func(t *testing.T) {
			data, err := os.ReadFile(c.Path())
			if err != nil {
				t.Fatal(err)
			}
			opts := corpusOptions(t, c)
			for _, par := range []struct {
				name  string
				par   int
				chunk int64
			}{{"sequential", 1, 0}, {"parallel ranges", 3, 64}} {
				o := opts
				o.Parallelism, o.ChunkBytes, o.BatchRows = par.par, par.chunk, 3
				d, err := decode(t, c.File, data, o)
				if c.Refused != nil {
					checkRefusal(t, c, err)
					continue
				}
				if errors.Is(err, ErrNoRows) && len(c.Rows) == 0 {
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", par.name, err)
				}
				checkRows(t, c, d)
			}
			if c.Table == nil {
				// upload --validate decodes as ingest creates a table.
				derr := func() error { _, err := decode(t, c.File, data, opts); return err }()
				_, cerr := Check(context.Background(), Source{Key: c.File, R: bytes.NewReader(data), Size: int64(len(data))}, opts, CheckOptions{})
				if errors.Is(derr, ErrNoRows) {
					derr = nil
				}
				if (derr == nil) != (cerr == nil) || (derr != nil && derr.Error() != cerr.Error()) {
					t.Fatalf("Check and Decode disagree:\nDecode: %v\nCheck:  %v", derr, cerr)
				}
			}
		})
	}
	// One file per rule at least (docs/ingest.md).
	for _, rule := range []string{"numbers", "local-times", "utf8", "whole-file", "empty", "unnamed-column", "time-range",
		"null-tokens", "duplicates", "lines", "handled", "dialects", "evolution", "parquet-types", "parquet-pages", "line-ends"} {
		if seen[rule] == 0 {
			t.Errorf("no corpus case for rule %q", rule)
		}
	}
}

// corpusOptions are the DecodeOptions ingest would use for case c.
func corpusOptions(t *testing.T, c corpus.Case) DecodeOptions {
	t.Helper()
	loc, err := c.Location()
	if err != nil {
		t.Fatal(err)
	}
	types, err := c.Types()
	if err != nil {
		t.Fatal(err)
	}
	opts := DecodeOptions{TimeColumn: c.Time(), TimeUnit: c.TimeUnit, AssumeLocation: loc, Columns: types, Evolve: Evolution(c.Evolve),
		CSV: CSV{Delimiter: c.Delimiter(), DecimalComma: c.CSVDecimalComma, Null: c.CSVNull}}
	if c.Table != nil {
		sc, err := c.IcebergSchema()
		if err != nil {
			t.Fatal(err)
		}
		if opts.Target, err = table.SchemaToArrowSchema(sc, nil, true, false); err != nil {
			t.Fatal(err)
		}
	}
	return opts
}

func checkRefusal(t *testing.T, c corpus.Case, err error) {
	t.Helper()
	fe := mustFileError(t, err)
	if fe.Key != c.File {
		t.Errorf("error key %q, want %q", fe.Key, c.File)
	}
	msg := strings.ToLower(err.Error())
	for _, k := range c.Refused.Keywords {
		if !strings.Contains(msg, strings.ToLower(k)) {
			t.Errorf("reason %q does not say %q (what the case is about: %s)", err, k, c.About)
		}
	}
	r := c.Refused
	if (r.Row != 0 && fe.Row != r.Row) || (r.Line != 0 && fe.Line != r.Line) ||
		(r.Column != "" && fe.Column != r.Column) || (r.Value != "" && fe.Value != r.Value) {
		t.Errorf("error row %d line %d column %q value %q, want row %d line %d column %q value %q (%v)",
			fe.Row, fe.Line, fe.Column, fe.Value, r.Row, r.Line, r.Column, r.Value, err)
	}
}

func checkRows(t *testing.T, c corpus.Case, d *Decoded) {
	t.Helper()
	wantCols := c.Columns
	if wantCols == nil {
		wantCols = c.Table
	}
	cols, err := corpus.ParseColumns(wantCols)
	if err != nil {
		t.Fatal(err)
	}
	if d.Schema.NumFields() != len(cols) {
		t.Fatalf("schema %v, want columns %v", d.Schema, wantCols)
	}
	for i, col := range cols {
		f := d.Schema.Field(i)
		if f.Name != col.Name || typeName(f.Type) != col.Type || f.Nullable == col.Required {
			t.Errorf("column %d is %s %s (nullable %v), want %s", i, f.Name, typeName(f.Type), f.Nullable, wantCols[i])
		}
	}
	var got [][]*string
	for _, rec := range d.Records {
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]*string, rec.NumCols())
			for j, col := range rec.Columns() {
				row[j] = corpus.Render(col, i)
				if s, ok := col.(*array.String); ok && col.IsValid(i) && !utf8.ValidString(s.Value(i)) {
					t.Errorf("row %d column %s holds invalid UTF-8 %q", i+1, d.Schema.Field(j).Name, s.Value(i))
				}
			}
			got = append(got, row)
		}
	}
	if len(got) != len(c.Rows) || (len(got) > 0 && !reflect.DeepEqual(got, c.Rows)) {
		t.Fatalf("rows\n%s\nwant\n%s", showRows(got), showRows(c.Rows))
	}
}

func showRows(rows [][]*string) string {
	var b strings.Builder
	for _, r := range rows {
		for i, v := range r {
			if i > 0 {
				b.WriteString(" | ")
			}
			if v == nil {
				b.WriteString("NULL")
			} else {
				b.WriteString(quoteValue(*v))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
