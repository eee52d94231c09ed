package decode

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

// TestSeparatorHint: an Excel "sep=X" first line sets the file's separator
// whatever --csv-delimiter says, is not a row, and shifts the line numbers
// errors name; a hint without a usable separator is refused.
func TestSeparatorHint(t *testing.T) {
	target := timeOnlyTarget(t)
	for _, tc := range []struct {
		name, data string
		delim      rune
		want       [][]string
		err        string // the error's text, when refused
		line       int64
	}{
		{name: "semicolon", data: "sep=;\ntime;v\n2026-01-05T10:00:00Z;1.5\n", want: [][]string{{"2026-01-05T10:00:00Z", "1.5"}}},
		{name: "hint wins over the setting", data: "sep=|\ntime|v\n2026-01-05T10:00:00Z|2\n", delim: ';', want: [][]string{{"2026-01-05T10:00:00Z", "2"}}},
		{name: "tab", data: "sep=\t\ntime\tv\n2026-01-05T10:00:00Z\t3\n", want: [][]string{{"2026-01-05T10:00:00Z", "3"}}},
		{name: "upper case, CRLF", data: "SEP=;\r\ntime;v\r\n2026-01-05T10:00:00Z;4\r\n", want: [][]string{{"2026-01-05T10:00:00Z", "4"}}},
		{name: "line numbers count the hint", data: "sep=;\ntime;v\n2026-01-05T10:00:00Z;1\n2026-01-05T10:00:01Z;x\n",
			err: `k.csv: row 2 (line 4), column "v": cannot parse "x" as double`, line: 4},
		{name: "field count line", data: "sep=;\ntime;v\n2026-01-05T10:00:00Z;1;2\n",
			err: "k.csv: row 1 (line 3): wrong number of fields: the line has 3, the header has 2", line: 3},
		{name: "no separator", data: "sep=\ntime,v\n", err: `k.csv: line 1: the first line "sep=" is an Excel separator hint without a separator`},
		{name: "two characters", data: "sep=;;\ntime,v\n", err: `not an Excel separator hint of one character`},
		{name: "a quote", data: "sep=\"\ntime,v\n", err: `cannot separate CSV fields`},
		{name: "only the hint", data: "sep=;\n", err: "empty file (only an Excel separator hint, no header line)"},
		{name: "a hint the file does not follow", data: "sep=;\ntime,v\n2026-01-05T10:00:00Z,1\n",
			err: `k.csv: line 2: the header is one column, "time,v": the first line (an Excel separator hint) says fields are separated by ';', but the header is separated by ','`, line: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DecodeOptions{Target: target, TimeColumn: "time", CSV: CSV{Delimiter: tc.delim}}
			d, err := decode(t, "k.csv", []byte(tc.data), opts)
			if tc.err != "" {
				fe := mustFileError(t, err)
				if !strings.Contains(err.Error(), tc.err) || (tc.line != 0 && fe.Line != tc.line) {
					t.Fatalf("error %q (line %d), want %q (line %d)", err, fe.Line, tc.err, tc.line)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := rows(t, d)
			for i := range got {
				got[i][0] = got[i][0][:len("2026-01-05T10:00:00")] + "Z"
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSeparatorHintInCheck: upload --validate reads a file with a hint as
// ingest does, also when it decodes only a sample (large or gzipped files).
func TestSeparatorHintInCheck(t *testing.T) {
	var b strings.Builder
	b.WriteString("\xef\xbb\xbfsep=;\ntime;device;v\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "2026-01-05T10:%02d:%02dZ;d1;%d,5\n", i/60%60, i%60, i)
	}
	data := b.String()
	opts := DecodeOptions{CSV: CSV{DecimalComma: true}}
	for name, body := range map[string][]byte{"plain.csv": []byte(data), "gzipped.csv.gz": gz(t, data)} {
		if _, err := Check(context.Background(), Source{Key: name, R: bytes.NewReader(body), Size: int64(len(body))}, opts, CheckOptions{SampleRows: 10}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := strings.Replace(data, "2026-01-05T10:00:05Z;", "yesterday;", 1)
	_, err := Check(context.Background(), Source{Key: "bad.csv", R: strings.NewReader(bad), Size: int64(len(bad))}, opts, CheckOptions{SampleRows: 10})
	if fe := mustFileError(t, err); fe.Row != 6 || fe.Line != 8 || fe.Value != "yesterday" {
		t.Errorf("error %v (row %d, line %d), want row 6 on line 8", err, fe.Row, fe.Line)
	}
}

// TestDecimalCommaAndNullTokensInParallel: large files with the dialect
// settings decode in parallel ranges exactly as sequentially.
func TestDecimalCommaAndNullTokensInParallel(t *testing.T) {
	var b strings.Builder
	b.WriteString("time;v;n\n")
	var want []string
	for i := range 2000 {
		v, n := fmt.Sprintf("%d,25", i), fmt.Sprint(i)
		wv, wn := fmt.Sprintf("%d.25", i), n
		if i%7 == 0 {
			v, wv = "-", "NULL"
		}
		if i%11 == 0 {
			n, wn = "-", "NULL"
		}
		fmt.Fprintf(&b, "2026-01-05T10:%02d:%02dZ;%s;%s\n", i/60%60, i%60, v, n)
		want = append(want, wv+"|"+wn)
	}
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int64},
	)
	for _, par := range []int{1, 4} {
		opts := DecodeOptions{Target: target, TimeColumn: "time", Parallelism: par, ChunkBytes: 4096,
			CSV: CSV{Delimiter: ';', DecimalComma: true, Null: []string{"-"}}}
		d, err := decode(t, "k.csv", []byte(b.String()), opts)
		if err != nil {
			t.Fatalf("parallelism %d: %v", par, err)
		}
		var got []string
		for _, r := range rows(t, d) {
			got = append(got, r[1]+"|"+r[2])
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parallelism %d: rows differ", par)
		}
	}
}

// TestWrongSeparator: a header read as one column holding another likely
// separator is refused with the separator used, where it came from and the
// fix, by Decode and by Check alike.
func TestWrongSeparator(t *testing.T) {
	target := timeOnlyTarget(t)
	for _, tc := range []struct {
		name, key, data string
		delim           rune
		err             string
	}{
		{name: "semicolons, default comma", key: "k.csv", data: "time;device_id;v\n2026-01-05T10:00:00Z;a;1\n",
			err: `k.csv: line 1: the header is one column, "time;device_id;v": fields are read as separated by ',' (the default), but the header is separated by ';': give --csv-delimiter ';', or make the file's first line sep=;`},
		{name: "commas in a .tsv", key: "k.tsv", data: "time,device_id,v\n2026-01-05T10:00:00Z,a,1\n",
			err: `k.tsv: line 1: the header is one column, "time,device_id,v": fields are read as separated by '\t' (the file is named .tsv), but the header is separated by ',': name the file .csv, or make the file's first line sep=,`},
		{name: "pipes in a .tsv", key: "k.tsv", data: "time|v\n",
			err: `but the header is separated by '|': name the file .csv and give --csv-delimiter '|', or make the file's first line sep=|`},
		{name: "commas, --csv-delimiter ;", key: "k.csv", delim: ';', data: "time,v\n2026-01-05T10:00:00Z,1\n",
			err: `fields are read as separated by ';' (--csv-delimiter), but the header is separated by ',': give --csv-delimiter ',', or make the file's first line sep=,`},
		{name: "tabs in a .csv", key: "k.csv", data: "time\tv\n",
			err: `but the header is separated by '\t': give --csv-delimiter $'\t', or make the file's first line sep= followed by a tab`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, opts := range []DecodeOptions{{Target: target, TimeColumn: "time", CSV: CSV{Delimiter: tc.delim}}, {CSV: CSV{Delimiter: tc.delim}}} {
				_, err := decode(t, tc.key, []byte(tc.data), opts)
				if fe := mustFileError(t, err); !strings.Contains(err.Error(), tc.err) || fe.Line != 1 {
					t.Errorf("Decode (table %t): %v\nwant %s", opts.Target != nil, err, tc.err)
				}
				_, err = Check(context.Background(), Source{Key: tc.key, R: strings.NewReader(tc.data), Size: int64(len(tc.data))}, opts, CheckOptions{})
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("Check (table %t): %v\nwant %s", opts.Target != nil, err, tc.err)
				}
			}
		})
	}
	// One column without another separator is a header like any other.
	if _, err := decode(t, "k.csv", []byte("time\n2026-01-05T10:00:00Z\n"), DecodeOptions{Target: target, TimeColumn: "time"}); err != nil {
		t.Errorf("one column: %v", err)
	}
}

// TestNullTokenSettings: configured tokens are null in every column, the
// time column included (a null there is refused); the tokens not
// configured stay text, and the reason of one in a number column names the
// setting.
func TestNullTokenSettings(t *testing.T) {
	target := timeOnlyTarget(t)
	_, err := decode(t, "k.csv", []byte("time,v\nNULL,1\n"), DecodeOptions{Target: target, TimeColumn: "time", CSV: CSV{Null: []string{"NULL"}}})
	if fe := mustFileError(t, err); fe.Row != 1 || fe.Value != "NULL" ||
		err.Error() != `k.csv: row 1 (line 2), column "time": "NULL" is a null token (--csv-null) but the column is required` {
		t.Errorf("null token in the time column: %v", err)
	}
	// An empty cell keeps the plain reason; so does upload --validate's
	// Check for the token.
	_, err = decode(t, "k.csv", []byte("time,v\n,1\n"), DecodeOptions{Target: target, TimeColumn: "time", CSV: CSV{Null: []string{"NULL"}}})
	if err == nil || !strings.HasSuffix(err.Error(), `column "time": null in required column`) {
		t.Errorf("empty time cell: %v", err)
	}
	_, err = Check(context.Background(), Source{Key: "k.csv", R: strings.NewReader("time,v\nNA,1\n"), Size: 13}, DecodeOptions{CSV: CSV{Null: []string{"NA"}}}, CheckOptions{})
	if err == nil || !strings.Contains(err.Error(), `"NA" is a null token (--csv-null) but the column is required`) {
		t.Errorf("Check of a null token in the time column: %v", err)
	}
	_, err = decode(t, "k.csv", []byte("time,v\n2026-01-05T10:00:00Z,n/a\n"), DecodeOptions{Target: target, TimeColumn: "time", CSV: CSV{Null: []string{"NA"}}})
	if !strings.Contains(fmt.Sprint(err), "unless --csv-null names them") {
		t.Errorf("unconfigured token: %v", err)
	}
	// NaN or an infinity in a column of whole numbers: a float value the
	// column cannot hold (no setting but a null token loads it).
	longTarget := arrow.NewSchema([]arrow.Field{target.Field(0), {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	for _, word := range []string{"NaN", "-Inf", "infinity"} {
		_, err = decode(t, "k.csv", []byte("time,v\n2026-01-05T10:00:00Z,"+word+"\n"), DecodeOptions{Target: longTarget, TimeColumn: "time"})
		if !strings.Contains(fmt.Sprint(err), "cannot parse \""+word+"\" as long (NaN and infinities are floating-point values, which a column of whole numbers cannot hold") {
			t.Errorf("%s in a long column: %v", word, err)
		}
	}
	_, err = decode(t, "k.csv", []byte("time,v\n2026-01-05T10:00:00Z,NaN\n"), DecodeOptions{Target: target, TimeColumn: "time"})
	if err != nil {
		t.Errorf("NaN in a double column: %v", err)
	}
}

// TestInferenceLooksPastNullTokens: numbers with NA, NULL or - among them
// are inferred as numbers (the tokens then refuse the file, or are null
// with --csv-null); a column of tokens only, or with other text, is a
// string.
func TestInferenceLooksPastNullTokens(t *testing.T) {
	data := "time,a,b,c,d,e\n" +
		"2026-01-05T10:00:00Z,1,1.5,NA,x,true\n" +
		"2026-01-05T10:00:01Z,NA,-,NULL,NA,NA\n" +
		"2026-01-05T10:00:02Z,2,NaN,,,false\n"
	opts := DecodeOptions{CSV: CSV{Null: []string{"NA", "NULL", "-"}}}
	d, err := decode(t, "k.csv", []byte(data), opts)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, f := range d.Schema.Fields()[1:] {
		types = append(types, typeName(f.Type))
	}
	if got := strings.Join(types, " "); got != "long double string string boolean" {
		t.Errorf("types %s", got)
	}
	// Without the setting the tokens are text: the same inference, and
	// the first token is refused with the setting named.
	_, err = decode(t, "k.csv", []byte(data), DecodeOptions{})
	if fe := mustFileError(t, err); fe.Column != "a" || fe.Value != "NA" || !strings.Contains(err.Error(), "--csv-null") {
		t.Errorf("error %v", err)
	}
}

// TestColumnTypes: explicit types at creation, and for the time column only
// timestamptz.
func TestColumnTypes(t *testing.T) {
	data := "time,temperature,id\n2026-01-05T10:00:00Z,22,7\n2026-01-05T10:00:01Z,23,8\n"
	d, err := decode(t, "k.csv", []byte(data), DecodeOptions{Columns: map[string]arrow.DataType{
		"temperature": arrow.PrimitiveTypes.Float64, "id": arrow.BinaryTypes.String, "absent": arrow.PrimitiveTypes.Int32}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(typeName(d.Schema.Field(1).Type), " ", typeName(d.Schema.Field(2).Type)); got != "double string" {
		t.Errorf("types %s", got)
	}
	_, err = decode(t, "k.csv", []byte(data), DecodeOptions{Columns: map[string]arrow.DataType{"time": arrow.BinaryTypes.String}})
	if !strings.Contains(fmt.Sprint(err), `--column time:string: "time" is the time column, which is always timestamptz`) || !IsColumnsSetting(err) {
		t.Errorf("time column typed string: %v (a --column setting error: %t)", err, IsColumnsSetting(err))
	}
	_, err = decode(t, "k.csv", []byte(data), DecodeOptions{Columns: map[string]arrow.DataType{"temperature": arrow.PrimitiveTypes.Int32, "id": &arrow.Decimal128Type{Precision: 1, Scale: 0}}})
	if err != nil {
		t.Errorf("int and decimal(1, 0): %v", err)
	}
}

// TestEvolveParquet: Parquet columns the table lacks are added with their
// Parquet type; widen turns an int column into long for an int64 Parquet
// column and a decimal into a wider one for text that needs it.
func TestEvolveParquet(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
	)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "rssi", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "empty", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.TimestampBuilder).Append(1767607200000000)
	b.Field(1).(*array.Int64Builder).Append(5_000_000_000)
	b.Field(2).(*array.Int16Builder).Append(-70)
	b.Field(3).AppendNull()
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	data := writeParquet(t, rec)

	for _, tc := range []struct {
		evolve Evolution
		want   string // schema, or the error
	}{
		{EvolveOff, `column "rssi": not in the table schema (nor is "empty")`},
		{EvolveAddColumns, `column "n": cannot convert file type int64 to table type int`},
		{EvolveWiden, "time:timestamptz n:long rssi:int"},
	} {
		d, err := decode(t, "k.parquet", data, DecodeOptions{Target: target, TimeColumn: "time", Evolve: tc.evolve})
		if err != nil {
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want %q", tc.evolve, err, tc.want)
			}
			continue
		}
		var got []string
		for _, f := range d.Schema.Fields() {
			got = append(got, f.Name+":"+typeName(f.Type))
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("%s: schema %s, want %s", tc.evolve, s, tc.want)
		}
		if id, ok := d.Schema.Field(1).Metadata.GetValue("PARQUET:field_id"); !ok || id != "2" {
			t.Errorf("the widened column lost its field id: %v", d.Schema.Field(1).Metadata)
		}
		if r := rows(t, d); r[0][1] != "5000000000" || r[0][2] != "-70" {
			t.Errorf("rows %v", r)
		}
	}

	dec := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "price", Type: iceberg.DecimalTypeOf(5, 2)},
	)
	d, err := decode(t, "k.csv", []byte("time,price\n2026-01-05T10:00:00Z,123.45\n2026-01-05T10:00:01Z,12345678.9\n"),
		DecodeOptions{Target: dec, TimeColumn: "time", Evolve: EvolveWiden})
	if err != nil {
		t.Fatal(err)
	}
	if got := typeName(d.Schema.Field(1).Type); got != "decimal(10, 2)" {
		t.Errorf("price widened to %s, want decimal(10, 2)", got)
	}
	// A scale change is no widening: the value is refused.
	_, err = decode(t, "k.csv", []byte("time,price\n2026-01-05T10:00:00Z,1.234\n"), DecodeOptions{Target: dec, TimeColumn: "time", Evolve: EvolveWiden})
	if !strings.Contains(fmt.Sprint(err), "more than 2 digits after the point") {
		t.Errorf("scale: %v", err)
	}
}

// TestNearIdenticalNewColumns: a new column whose name differs from a
// table column (or another new one) only by case or surrounding whitespace,
// or that begins or ends with whitespace, refuses the file whatever
// --evolve says, quoting both names.
func TestNearIdenticalNewColumns(t *testing.T) {
	target := timeOnlyTarget(t)
	for _, tc := range []struct{ header, want string }{
		{"time,v,V", `column "V": column "V" would be a new column differing from "v" only by case; rename it in the file`},
		{"time,V", `column "V" would be a new column differing from "v" only by case`},
		{"time,v,v ", `column "v " would be a new column differing from "v" only by surrounding whitespace`},
		{"time,v, V", `column " V" would be a new column differing from "v" only by case and surrounding whitespace`},
		{"time,v,Time", `column "Time" would be a new column differing from "time" only by case`},
		{"time,v,battery,Battery", `column "Battery" would be a new column differing from "battery" only by case`},
		{"time,v, battery", `column " battery" would be a new column whose name begins or ends with whitespace; rename it in the file`},
	} {
		data := tc.header + "\n2026-01-05T10:00:00Z" + strings.Repeat(",1", strings.Count(tc.header, ",")) + "\n"
		for _, ev := range []Evolution{EvolveOff, EvolveAddColumns, EvolveWiden} {
			_, err := decode(t, "k.csv", []byte(data), DecodeOptions{Target: target, TimeColumn: "time", Evolve: ev})
			if err == nil || !strings.Contains(err.Error(), tc.want) || IsNewColumns(err) {
				t.Errorf("%q, --evolve %s: %v, want %q", tc.header, ev, err, tc.want)
			}
		}
	}
	d, err := decode(t, "k.csv", []byte("time,v,battery\n2026-01-05T10:00:00Z,1,2\n"), DecodeOptions{Target: target, TimeColumn: "time", Evolve: EvolveAddColumns})
	if err != nil || d.Schema.NumFields() != 3 {
		t.Errorf("a new column of its own name: %v", err)
	}
}

// TestBooleanSpellings pins the spellings docs/schema.md lists: a boolean
// column reads true/false in any case and 1/0, spaces around ignored;
// inference makes a column boolean only from true/false.
func TestBooleanSpellings(t *testing.T) {
	cols := map[string]arrow.DataType{"b": arrow.FixedWidthTypes.Boolean}
	for in, ok := range map[string]bool{"true": true, "TRUE": true, "tRuE": true, " false ": true, "1": true, "0": true,
		"t": false, "f": false, "yes": false, "no": false, "on": false, "y": false, "2": false} {
		_, err := decode(t, "k.csv", []byte("time,b\n2026-01-05T10:00:00Z,"+in+"\n"), DecodeOptions{Columns: cols})
		if (err == nil) != ok {
			t.Errorf("%q: %v, want accepted %t", in, err, ok)
		}
	}
	for data, want := range map[string]string{"TRUE\nFalse": "boolean", " true \nfalse": "boolean", "1\n0": "long", "true\n1": "string", "t\nf": "string"} {
		rows := strings.Split(data, "\n")
		d, err := decode(t, "k.csv", []byte("time,b\n2026-01-05T10:00:00Z,"+rows[0]+"\n2026-01-05T10:00:01Z,"+rows[1]+"\n"), DecodeOptions{})
		if err != nil || typeName(d.Schema.Field(1).Type) != want {
			t.Errorf("%q: %v, want %s", data, err, want)
		}
	}
}
