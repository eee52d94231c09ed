package decode

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
)

// schemaString renders a schema as name:type pairs.
func schemaString(sc *arrow.Schema) string {
	var parts []string
	for _, f := range sc.Fields() {
		parts = append(parts, f.Name+":"+f.Type.String())
	}
	return strings.Join(parts, " ")
}

// TestJSONInfers: NDJSON and a top-level array, plain and gzip, give the
// same table: columns in the order keys first appear, nested objects
// flattened with ".", a key missing from an object null, numbers by the
// number rules (long, double), JSON strings kept as strings (not read as
// numbers), booleans, the time column found by its name.
func TestJSONInfers(t *testing.T) {
	lines := `{"time":"2026-01-05T10:00:00Z","device":"d7","code":"0042","readings":{"temp":21.5,"ok":true},"n":3}
{"time":"2026-01-05T10:01:00Z","device":"d8","code":"0043","readings":{"temp":22,"ok":false},"n":null,"extra":"x"}
` + "\n" + `{"n":-9223372036854775808,"device":"d9","time":"2026-01-05T10:02:00Z","code":"7"}
`
	array := "[\n" + strings.Join(strings.Split(strings.TrimSpace(strings.ReplaceAll(lines, "\n\n", "\n")), "\n"), ",\n") + "\n]\n"
	want := "time:timestamp[us, tz=UTC] device:utf8 code:utf8 readings_temp:float64 readings_ok:bool n:int64 extra:utf8"
	wantRows := "[[2026-01-05T10:00:00Z d7 0042 21.5 true 3 NULL] [2026-01-05T10:01:00Z d8 0043 22 false NULL x] [2026-01-05T10:02:00Z d9 7 NULL NULL -9223372036854775808 NULL]]"
	for _, tc := range []struct {
		key  string
		data []byte
	}{
		{"gw/a.jsonl", []byte(lines)},
		{"gw/a.ndjson.gz", gz(t, lines)},
		{"gw/a.json", []byte(array)},
		{"gw/a.json.gz", gz(t, array)},
		{"gw/lines.json", []byte(lines)},
	} {
		t.Run(tc.key, func(t *testing.T) {
			d, err := decode(t, tc.key, tc.data, DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := schemaString(d.Schema); got != want {
				t.Errorf("schema %s\nwant   %s", got, want)
			}
			if d.TimeColumn != "time" {
				t.Errorf("time column %q", d.TimeColumn)
			}
			if got := fmt.Sprint(rows(t, d)); got != wantRows {
				t.Errorf("rows %s\nwant %s", got, wantRows)
			}
		})
	}
}

// TestJSONIntoTable: objects load into an existing table's columns by
// name, epoch numbers in the time column by the time unit rule.
func TestJSONIntoTable(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "value", Type: iceberg.PrimitiveTypes.Float64},
	)
	data := `{"time":1767607200,"device":"d1","value":1.25}` + "\n" + `{"time":1767607260,"value":2}` + "\n"
	d, err := decode(t, "a.jsonl", []byte(data), DecodeOptions{Target: target, TimeColumn: "time", TimeUnit: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rows(t, d)); got != "[[2026-01-05T10:00:00Z d1 1.25] [2026-01-05T10:01:00Z NULL 2]]" {
		t.Errorf("rows %s", got)
	}
	if _, err := decode(t, "a.jsonl", []byte(data), DecodeOptions{Target: target, TimeColumn: "time"}); err == nil {
		t.Error("epoch seconds loaded without a time unit")
	}
}

// TestJSONRefusals: what a JSON file is refused for, with the line.
func TestJSONRefusals(t *testing.T) {
	ok := `{"time":"2026-01-05T10:00:00Z","v":1}` + "\n"
	for _, tc := range []struct {
		name, data string
		line       int64
		column     string
		reason     string
	}{
		{"duplicate key", ok + `{"time":"2026-01-05T10:00:00Z","v":1,"v":2}` + "\n", 2, "", "a key appears twice in one object"},
		{"NaN", ok + `{"time":"2026-01-05T10:00:00Z","v":NaN}` + "\n", 2, "v", "NaN is not a JSON number"},
		{"Infinity", ok + ok + `{"time":"2026-01-05T10:00:00Z","v":Infinity}` + "\n", 3, "v", "Infinity is not a JSON number"},
		{"+Infinity", ok + `{"time":"2026-01-05T10:00:00Z","v":+Infinity}` + "\n", 2, "v", "+Infinity is not a JSON number"},
		{"plus sign", ok + `{"time":"2026-01-05T10:00:00Z","v":+1.5}` + "\n", 2, "v", "a number with a plus sign is not a JSON number"},
		{"invalid UTF-8", ok + "{\"time\":\"2026-01-05T10:00:00Z\",\"s\":\"a\xff\"}\n", 2, "", "invalid UTF-8"},
		{"array value", ok + `{"time":"2026-01-05T10:00:00Z","v":[1,2]}` + "\n", 2, "v", "arrays are not loaded"},
		{"object and value", ok + `{"time":"2026-01-05T10:00:00Z","v":{"a":1}}` + "\n", 2, "v", `the key "v" holds an object in one place and a value in another`},
		{"not an object", ok + "42\n", 2, "", "a number where an object was expected"},
		{"two keys, one column", ok + `{"time":"2026-01-05T10:00:00Z","a_b":1,"a":{"b":2}}` + "\n", 2, "a_b", `the keys "a_b" and "a.b" both make the column "a_b"`},
		{"truncated", ok + `{"time":"2026-01-05T10:00:00Z","v":`, 2, "", "ends inside a JSON value"},
		{"unclosed array", "[\n" + strings.TrimSpace(ok) + ",\n" + strings.TrimSpace(ok) + "\n", 4, "", "ends inside the top-level array"},
		{"after the array", "[" + strings.TrimSpace(ok) + "]\n[]\n", 2, "", "after the end of the top-level array"},
		{"empty", "\n\n", 0, "", "no JSON objects"},
		{"empty array", "[]", 0, "", "no JSON objects"},
		{"integer beyond a long", ok + `{"time":"2026-01-05T10:00:00Z","v":9223372036854775809}` + "\n", 2, "v", "does not fit a long"},
		{"integer beyond a double's", ok + `{"time":"2026-01-05T10:00:00Z","v":1.5}` + "\n" + `{"time":"2026-01-05T10:00:00Z","v":9007199254740993}` + "\n", 0, "v", "2^53"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(t, "gw/a.jsonl", []byte(tc.data), DecodeOptions{})
			fe := mustFileError(t, err)
			if fe.Line != tc.line && tc.line != 0 {
				t.Errorf("line %d, want %d: %v", fe.Line, tc.line, err)
			}
			if fe.Column != tc.column {
				t.Errorf("column %q, want %q: %v", fe.Column, tc.column, err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("%v\nwant it to say %q", err, tc.reason)
			}
			if !strings.HasPrefix(err.Error(), "gw/a.jsonl") {
				t.Errorf("%v does not name the file", err)
			}
		})
	}
}

// TestJSONValueErrorLine: a value the table's column cannot take is
// refused with the object's row and line (a blank line counts), and with
// skip-rows the object is set aside, written back as it was.
func TestJSONValueErrorLine(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "value", Type: iceberg.PrimitiveTypes.Float64},
	)
	bad := `{"time":"2026-01-05T10:02:00Z", "value":"warm"}`
	data := `{"time":"2026-01-05T10:00:00Z","value":1}` + "\n\n" + `{"time":"2026-01-05T10:01:00Z","value":2}` + "\n" + bad + "\n" +
		strings.Repeat(`{"time":"2026-01-05T10:03:00Z","value":3}`+"\n", 20)
	_, err := decode(t, "a.jsonl", []byte(data), DecodeOptions{Target: target, TimeColumn: "time"})
	fe := mustFileError(t, err)
	if fe.Row != 3 || fe.Line != 4 || fe.Column != "value" {
		t.Fatalf("row %d line %d column %q, want row 3 line 4 column value: %v", fe.Row, fe.Line, fe.Column, err)
	}
	d, err := decode(t, "a.jsonl", []byte(data), DecodeOptions{Target: target, TimeColumn: "time", OnError: OnErrorSkipRows})
	if err != nil {
		t.Fatal(err)
	}
	if d.Rows != 22 || len(d.Rejected) != 1 {
		t.Fatalf("%d rows, %d set aside; want 22 and 1", d.Rows, len(d.Rejected))
	}
	var out bytes.Buffer
	ext, err := d.WriteRejects(Source{Key: "a.jsonl", R: bytes.NewReader([]byte(data)), Size: int64(len(data))}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if ext != ".jsonl" || out.String() != bad+"\n" || d.Rejected[0].Line != 4 {
		t.Errorf("rejects %s %q line %d, want .jsonl %q line 4", ext, out.String(), d.Rejected[0].Line, bad+"\n")
	}
}

// TestJSONBadLine: 10,000 objects, one per line, and one line cut in the
// middle of an object: the file is refused naming the line; with
// skip-rows the line is set aside with its line, written back as it was,
// and the other 10,000 objects load.
func TestJSONBadLine(t *testing.T) {
	var b strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&b, `{"time":"2026-01-05T10:%02d:%02dZ","device":"d%d","v":%d.5}`+"\n", i/60%60, i%60, i%7, i)
		if i == 4_321 {
			b.WriteString(`{"time":"2026-01-05T10:00:00Z","device":"d1","v":` + "\n")
		}
	}
	data := []byte(b.String())
	_, err := decode(t, "gw/big.jsonl", data, DecodeOptions{})
	if fe := mustFileError(t, err); fe.Row != 4_323 || fe.Line != 4_323 || !strings.Contains(fe.Reason, "the line ends inside a JSON value") {
		t.Fatalf("row %d line %d: %v; want row 4323 line 4323, the line ends inside a JSON value", fe.Row, fe.Line, err)
	}
	for _, gzipped := range []bool{false, true} {
		key, body := "gw/big.jsonl", data
		if gzipped {
			key, body = "gw/big.jsonl.gz", gz(t, string(data))
		}
		target := arrowTarget(t,
			iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
			iceberg.NestedField{ID: 2, Name: "device", Type: iceberg.PrimitiveTypes.String},
			iceberg.NestedField{ID: 3, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
		)
		d, err := decode(t, key, body, DecodeOptions{Target: target, TimeColumn: "time", OnError: OnErrorSkipRows, BatchRows: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if d.Rows != 10_000 || len(d.Rejected) != 1 || d.Rejected[0].Row != 4_323 || d.Rejected[0].Rule != RuleJSON {
			t.Fatalf("%s: %d rows, set aside %+v; want 10000 rows and row 4323 (rule json)", key, d.Rows, d.Rejected)
		}
		var out bytes.Buffer
		if _, err := d.WriteRejects(Source{Key: key, R: bytes.NewReader(body), Size: int64(len(body))}, &out); err != nil {
			t.Fatal(err)
		}
		if want := `{"time":"2026-01-05T10:00:00Z","device":"d1","v":` + "\n"; out.String() != want || d.Rejected[0].Line != 4_323 {
			t.Errorf("%s: rejects %q line %d, want %q line 4323", key, out.String(), d.Rejected[0].Line, want)
		}
		if got := rows(t, d)[9_999]; got[2] != "9999.5" {
			t.Errorf("%s: last row %v", key, got)
		}
	}
}

// TestJSONCheck: upload --validate's check reads a JSON file whole, in
// pieces: a bad value far beyond a CSV sample is found, with its line.
func TestJSONCheck(t *testing.T) {
	var b strings.Builder
	for i := range 5_000 {
		fmt.Fprintf(&b, `{"time":"2026-01-05T10:00:00Z","v":%d}`+"\n", i)
	}
	good := b.String()
	src := func(s string) Source { return Source{Key: "gw/a.jsonl", R: strings.NewReader(s), Size: int64(len(s))} }
	if _, err := Check(context.Background(), src(good), DecodeOptions{}, CheckOptions{SampleBytes: 4096}); err != nil {
		t.Fatal(err)
	}
	bad := good + `{"time":"2026-01-05T10:00:00Z","v":1,"v":2}` + "\n"
	_, err := Check(context.Background(), src(bad), DecodeOptions{}, CheckOptions{SampleBytes: 4096})
	if fe := mustFileError(t, err); fe.Line != 5_001 || !strings.Contains(fe.Reason, "twice") {
		t.Fatalf("%v: want line 5001, a key twice", err)
	}
}

// TestFormatOfKeysWithoutExtension: a key without a known extension is
// read in DecodeOptions.Format (a source profile's format setting), gzip
// by its magic bytes; a known extension wins; without it the key is
// refused.
func TestFormatOfKeysWithoutExtension(t *testing.T) {
	lines := `{"time":"2026-01-05T10:00:00Z","v":1}` + "\n"
	for _, tc := range []struct {
		key    string
		data   []byte
		format Format
		want   string
	}{
		{"gw/reading-0001", []byte(lines), FormatJSON, "[[2026-01-05T10:00:00Z 1]]"},
		{"gw/reading-0002", gz(t, lines), FormatJSON, "[[2026-01-05T10:00:00Z 1]]"},
		{"gw/reading-0003", []byte("time,v\n2026-01-05T10:00:00Z,1\n"), FormatCSV, "[[2026-01-05T10:00:00Z 1]]"},
		{"gw/reading-0004.csv", []byte("time,v\n2026-01-05T10:00:00Z,1\n"), FormatJSON, "[[2026-01-05T10:00:00Z 1]]"},
		{"gw/reading-0005", []byte(lines), "", "unsupported file type"},
		{"gw/reading-0006", []byte(lines), FormatParquet, "not a Parquet file"},
	} {
		d, err := decode(t, tc.key, tc.data, DecodeOptions{Format: tc.format})
		var got string
		if err != nil {
			got = err.Error()
		} else {
			got = fmt.Sprint(rows(t, d))
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s as %q: %s, want %s", tc.key, tc.format, got, tc.want)
		}
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("format xml accepted")
	}
}

// TestJSONEvolve: a key the table does not have is a new column under
// --evolve add-columns (a nested one by its path, a string column of JSON
// strings), and refused without it.
func TestJSONEvolve(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
	)
	data := `{"time":"2026-01-05T10:00:00Z","v":1.5,"site":{"id":"0042"}}` + "\n" + `{"time":"2026-01-05T10:01:00Z","v":2,"rh":40}` + "\n"
	if _, err := decode(t, "a.jsonl", []byte(data), DecodeOptions{Target: target, TimeColumn: "time"}); err == nil || !IsNewColumns(err) {
		t.Fatalf("new keys without --evolve: %v, want refused as new columns", err)
	}
	d, err := decode(t, "a.jsonl", []byte(data), DecodeOptions{Target: target, TimeColumn: "time", Evolve: EvolveAddColumns})
	if err != nil {
		t.Fatal(err)
	}
	if got := schemaString(d.Schema); got != "time:timestamp[us, tz=UTC] v:float64 site_id:utf8 rh:int64" {
		t.Errorf("schema %s", got)
	}
	if got := fmt.Sprint(rows(t, d)); got != "[[2026-01-05T10:00:00Z 1.5 0042 NULL] [2026-01-05T10:01:00Z 2 NULL 40]]" {
		t.Errorf("rows %s", got)
	}
}

// TestJSONRenamedTimeColumn: a source profile's time column (Renames)
// reads a JSON key as the table's time column, as for CSV.
func TestJSONRenamedTimeColumn(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
	)
	data := `{"Zeit":"2026-01-05T10:00:00Z","v":1.5}` + "\n"
	d, err := decode(t, "a.jsonl", []byte(data), DecodeOptions{Target: target, TimeColumn: "time", Renames: map[string]string{"Zeit": "time"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rows(t, d)); got != "[[2026-01-05T10:00:00Z 1.5]]" {
		t.Errorf("rows %s", got)
	}
}

// TestJSONOnePassAsTwo: a JSON file of a table whose columns are known is
// read in one pass; whatever the file holds, the result (rows, or the
// error word for word) is that of the two passes.
func TestJSONOnePassAsTwo(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "site_id", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "n", Type: iceberg.PrimitiveTypes.Int64},
	)
	ok := `{"time":"2026-01-05T10:00:00Z","site":{"id":"0042"},"v":1.5,"n":3}` + "\n"
	for name, data := range map[string]string{
		"good":                        ok + `{"time":"2026-01-05T10:01:00Z","v":2}` + "\n" + `{"n":null,"time":"2026-01-05T10:02:00Z","site":{"id":"7"}}` + "\n",
		"a new key":                   ok + `{"time":"2026-01-05T10:01:00Z","rh":40}` + "\n",
		"two keys, one column":        ok + `{"time":"2026-01-05T10:01:00Z","site_id":"x"}` + "\n",
		"an object where a column is": ok + `{"time":"2026-01-05T10:01:00Z","v":{"a":1}}` + "\n",
		"beyond a long":               ok + `{"time":"2026-01-05T10:01:00Z","v":9223372036854775808}` + "\n",
		"no time":                     ok + `{"v":2}` + "\n",
		"a bad value":                 ok + `{"time":"2026-01-05T10:01:00Z","n":1.5}` + "\n",
		"not JSON":                    ok + `{"time":` + "\n",
		"empty":                       "\n",
		"an array":                    "[" + strings.TrimSpace(ok) + "]",
	} {
		t.Run(name, func(t *testing.T) {
			render := func(opts DecodeOptions) string {
				d, err := decode(t, "gw/a.jsonl", []byte(data), opts)
				if err != nil {
					return "error: " + err.Error()
				}
				return fmt.Sprint(rows(t, d))
			}
			one := render(DecodeOptions{Target: target, TimeColumn: "time"})
			two := render(DecodeOptions{Target: target, TimeColumn: "time", jsonTwoPasses: true})
			if one != two {
				t.Errorf("one pass: %s\ntwo passes: %s", one, two)
			}
			if name == "good" && strings.HasPrefix(one, "error") {
				t.Errorf("a good file refused: %s", one)
			}
		})
	}
}

// TestJSONHostile: what a hostile or broken file does: a NUL in a key,
// deep nesting, long paths and huge numbers are refused quickly with a
// short reason; a line that is no object and a bad value are both set
// aside; an array's objects are named by their own lines and set aside
// on one line each.
func TestJSONHostile(t *testing.T) {
	deep := `{"time":"2026-01-05T10:00:00Z","d":` + strings.Repeat(`{"k":`, 10_000) + "1" + strings.Repeat("}", 10_001) + "\n"
	long := `{"time":"2026-01-05T10:00:00Z","d":` + strings.Repeat(`{"`+strings.Repeat("k", 300)+`":`, 4) + "1" + strings.Repeat("}", 5) + "\n"
	huge := `{"time":"2026-01-05T10:00:00Z","v":` + strings.Repeat("9", 1_000_000) + "}\n"
	for _, tc := range []struct{ name, data, reason string }{
		{"NUL in a key", `{"time":"2026-01-05T10:00:00Z","a\u0000b":1,"a":{"b":2}}` + "\n", "NUL"},
		{"deep", deep, "nested more than 64 deep"},
		{"long path", long, "longer than 1024 bytes"},
		{"huge integer", huge, "does not fit a long"},
	} {
		_, err := decode(t, "gw/a.jsonl", []byte(tc.data), DecodeOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.reason) || len(err.Error()) > 1_000 {
			t.Errorf("%s: %.300v; want refused, saying %q, in under 1,000 bytes", tc.name, err, tc.reason)
		}
		if fe := mustFileError(t, err); len(fe.Value) > 1_000 {
			t.Errorf("%s: the error keeps a value of %d bytes", tc.name, len(fe.Value))
		}
	}

	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
	)
	good := strings.Repeat(`{"time":"2026-01-05T10:00:00Z","v":1}`+"\n", 20)
	d, err := decode(t, "gw/a.jsonl", []byte(good+"42\n"+`{"time":"2026-01-05T11:00:00Z","v":"x"}`+"\n"),
		DecodeOptions{Target: target, TimeColumn: "time", OnError: OnErrorSkipRows})
	if err != nil || d.Rows != 20 || len(d.Rejected) != 2 || d.Rejected[0].Row != 21 || d.Rejected[1].Row != 22 {
		t.Fatalf("a line that is no object, then a bad value: %v, %+v", err, d)
	}

	arr := "[\n" + strings.TrimSuffix(strings.ReplaceAll(good, "}\n", "},\n"), ",\n") + ",\n{\n  \"time\": \"2026-01-05T11:00:00Z\",\n  \"v\": \"x\"\n}\n]\n"
	_, err = decode(t, "gw/a.json", []byte(arr), DecodeOptions{Target: target, TimeColumn: "time"})
	if fe := mustFileError(t, err); fe.Row != 21 || fe.Line != 22 {
		t.Errorf("an array's bad object: row %d line %d, want row 21 line 22: %v", fe.Row, fe.Line, err)
	}
	d, err = decode(t, "gw/a.json", []byte(arr), DecodeOptions{Target: target, TimeColumn: "time", OnError: OnErrorSkipRows})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := d.WriteRejects(Source{Key: "gw/a.json", R: strings.NewReader(arr), Size: int64(len(arr))}, &out); err != nil {
		t.Fatal(err)
	}
	if want := `{"time":"2026-01-05T11:00:00Z","v":"x"}` + "\n"; out.String() != want || d.Rejected[0].Line != 22 {
		t.Errorf("rejects %q line %d, want %q line 22", out.String(), d.Rejected[0].Line, want)
	}
}

// TestJSONRanges: JSON Lines read in ranges on several goroutines give the
// rows of a sequential read, in order; two ranges reading one column from
// different keys, and a bad line in a late range, give the sequential
// read's error word for word.
func TestJSONRanges(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "site_id", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
	)
	var b strings.Builder
	for i := range 3_000 {
		fmt.Fprintf(&b, `{"time":"2026-01-05T10:%02d:%02dZ","site":{"id":"s%d"},"v":%d.25}`+"\n", i/60%60, i%60, i%9, i)
	}
	good := b.String()
	for name, data := range map[string]string{
		"good":                      good,
		"two keys, one column":      good + `{"time":"2026-01-05T11:00:00Z","site_id":"x","v":1}` + "\n",
		"a bad value late":          good + `{"time":"2026-01-05T11:00:00Z","v":"warm"}` + "\n",
		"a line that is not JSON":   good + `{"time":` + "\n" + good,
		"a new key in a late range": good + `{"time":"2026-01-05T11:00:00Z","rh":40}` + "\n",
		"a bad value early":         `{"time":"2026-01-05T09:00:00Z","v":"warm"}` + "\n" + good,
		"escapes and nulls":         good + `{"time":"2026-01-05T11:00:00Z","site":{"id":"s\u0041\n"},"v":null}` + "\n" + good,
	} {
		t.Run(name, func(t *testing.T) {
			render := func(par int) string {
				d, err := decode(t, "gw/a.jsonl", []byte(data), DecodeOptions{Target: target, TimeColumn: "time",
					Parallelism: par, ChunkBytes: 10_000, BatchRows: 500})
				if err != nil {
					return "error: " + err.Error()
				}
				return fmt.Sprint(rows(t, d))
			}
			seq, par := render(1), render(3)
			if seq != par {
				t.Errorf("in ranges: %.300s\nsequential: %.300s", par, seq)
			}
			if name == "good" && strings.HasPrefix(par, "error") {
				t.Errorf("a good file refused: %s", par)
			}
		})
	}
}

// TestJSONInexactSkipRows: an integer a double cannot hold exactly beside
// numbers with fractions refuses the file, naming it (the file that
// creates a table too, with skip-rows: docs/schema.md); into a table whose
// column is a double, skip-rows sets only its row aside, as for CSV.
func TestJSONInexactSkipRows(t *testing.T) {
	bad := `{"time":"2026-01-05T10:02:00Z","v":9007199254740993}`
	data := strings.Repeat(`{"time":"2026-01-05T10:00:00Z","v":1.5}`+"\n", 10) + bad + "\n" +
		strings.Repeat(`{"time":"2026-01-05T10:03:00Z","v":2.5}`+"\n", 10)
	double := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
	)
	for _, tc := range []struct {
		name   string
		target *arrow.Schema
	}{{"new table", nil}, {"double column", double}} {
		_, err := decode(t, "a.jsonl", []byte(data), DecodeOptions{Target: tc.target, TimeColumn: "time"})
		if fe := mustFileError(t, err); fe.Row != 11 || fe.Column != "v" {
			t.Fatalf("%s: %v, want row 11 column v", tc.name, err)
		}
		d, err := decode(t, "a.jsonl", []byte(data), DecodeOptions{Target: tc.target, TimeColumn: "time", OnError: OnErrorSkipRows})
		if tc.target == nil {
			if fe := mustFileError(t, err); fe.Row != 11 || fe.Column != "v" {
				t.Fatalf("%s with skip-rows: %v, want row 11 column v", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s with skip-rows: %v", tc.name, err)
		}
		if d.Rows != 20 || len(d.Rejected) != 1 || d.Rejected[0].Row != 11 || d.Rejected[0].Rule != "type double" {
			t.Fatalf("%s: %d rows, set aside %+v; want 20 and row 11 (type double)", tc.name, d.Rows, d.Rejected)
		}
	}
}

// TestJSONRefusalWording: the refusals a new user meets say what is
// wrong and what to write instead: NaN and Infinity with their column, the
// key with invalid UTF-8, a line cut short (the same with skip-rows), a
// NUL escape, a pretty-printed object in a .json file.
func TestJSONRefusalWording(t *testing.T) {
	ok := `{"time":"2026-01-05T10:00:00Z","v":"1"}` + "\n"
	for _, tc := range []struct {
		name, key, data string
		line            int64
		column          string
		reasons         []string
		not             []string
	}{
		{"NaN nested", "a.jsonl", ok + `{"time":"2026-01-05T10:00:00Z","readings":{"temp":NaN}}` + "\n", 2, "readings_temp",
			[]string{`NaN is not a JSON number (JSON has no NaN or Infinity): write null for no value, or the string "NaN" to keep it as text`}, []string{"(at /", "not valid JSON"}},
		{"-Infinity", "a.jsonl", ok + `{"time":"2026-01-05T10:00:00Z","v":-Infinity}` + "\n", 2, "v",
			[]string{`-Infinity is not a JSON number`, `the string "-Infinity"`}, []string{"(at /"}},
		{"Infinity in an array", "a.json", "[" + strings.TrimSpace(ok) + ",\n" + `{"time":"2026-01-05T10:00:00Z","readings":{"temp":Infinity}}]` + "\n", 2, "readings_temp",
			[]string{`Infinity is not a JSON number`}, []string{"(at /"}},
		{"a word that is not NaN", "a.jsonl", ok + `{"time":"2026-01-05T10:00:00Z","v":None}` + "\n", 2, "",
			[]string{"not valid JSON: invalid character 'N' at start of value (at /v)"}, nil},
		{"invalid UTF-8 in a nested key", "a.jsonl", ok + "{\"time\":\"2026-01-05T10:00:00Z\",\"readings\":{\"t\xffemp\":1}}\n", 2, "",
			[]string{`invalid UTF-8 in a key inside "readings" (at byte offset 45 of the line): write the file as UTF-8`}, nil},
		{"invalid UTF-8 in a key", "a.jsonl", ok + "{\"time\":\"2026-01-05T10:00:00Z\",\"t\xffemp\":1}\n", 2, "",
			[]string{`invalid UTF-8 in a key of the line's object (at byte offset 33 of the line): write the file as UTF-8`}, nil},
		{"invalid UTF-8 in a value", "a.jsonl", ok + "{\"time\":\"2026-01-05T10:00:00Z\",\"s\":\"a\xff\"}\n", 2, "",
			[]string{"invalid UTF-8: write the file as UTF-8 (at /s)"}, nil},
		{"a line cut in a string", "a.jsonl", ok + `{"time":"2026-01-05T10:00:00Z","v":"ab` + "\n" + ok, 2, "",
			[]string{"the line ends inside a JSON value (each object must be on one line)"}, []string{`'\n'`}},
		{"NUL escape", "a.jsonl", ok + `{"time":"2026-01-05T10:00:00Z","v":"a\u0000b"}` + "\n", 2, "v",
			[]string{`holds a NUL byte at byte offset 1: a NUL character (\u0000), which a column value cannot hold`}, []string{"binary content"}},
		{"pretty-printed .json", "a.json", "{\n" + `  "time": "2026-01-05T10:00:00Z"` + "\n}\n", 1, "",
			[]string{"the line ends inside a JSON value (each object must be on one line, or wrap the objects in [ ] as one array)"}, nil},
		{"pretty-printed .json.gz", "a.json.gz", "{\n" + `  "time": "2026-01-05T10:00:00Z"` + "\n}\n", 1, "",
			[]string{"or wrap the objects in [ ] as one array"}, nil},
		{"pretty-printed .jsonl", "a.jsonl", "{\n" + `  "time": "2026-01-05T10:00:00Z"` + "\n}\n", 1, "",
			[]string{"the line ends inside a JSON value (each object must be on one line)"}, []string{"[ ]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			if strings.HasSuffix(tc.key, ".gz") {
				data = gz(t, tc.data)
			}
			_, err := decode(t, tc.key, data, DecodeOptions{})
			fe := mustFileError(t, err)
			if fe.Line != tc.line || fe.Column != tc.column {
				t.Errorf("line %d column %q, want line %d column %q: %v", fe.Line, fe.Column, tc.line, tc.column, err)
			}
			for _, r := range tc.reasons {
				if !strings.Contains(fe.Reason, r) {
					t.Errorf("%v\nwant it to say %q", err, r)
				}
			}
			for _, r := range tc.not {
				if strings.Contains(fe.Reason, r) {
					t.Errorf("%v\nwant it not to say %q", err, r)
				}
			}
		})
	}
}

// TestJSONSkipRowsCutLine: with skip-rows a line cut short (inside a
// string, or after a key) is set aside with the reason a refused file
// gives: the line ends inside a JSON value.
func TestJSONSkipRowsCutLine(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String},
	)
	const want = "the line ends inside a JSON value (each object must be on one line)"
	for _, cut := range []string{`{"time":"2026-01-05T10:00:00Z","v":"ab`, `{"time":"2026-01-05T10:00:00Z","v":`, `{"time":"2026-01-05T10:00:00Z","v":"ab` + "\r"} {
		ok := strings.Repeat(`{"time":"2026-01-05T10:00:00Z","v":"1"}`+"\n", 10)
		data := []byte(ok + cut + "\n" + ok)
		_, err := decode(t, "a.jsonl", data, DecodeOptions{})
		if fe := mustFileError(t, err); fe.Line != 11 || !strings.Contains(fe.Reason, want) {
			t.Errorf("%q: %v; want line 11, %q", cut, err, want)
		}
		d, err := decode(t, "a.jsonl", data, DecodeOptions{Target: target, TimeColumn: "time", OnError: OnErrorSkipRows})
		if err != nil {
			t.Fatalf("%q: %v", cut, err)
		}
		if d.Rows != 20 || len(d.Rejected) != 1 {
			t.Fatalf("%q: %d rows, set aside %+v; want 20 and one", cut, d.Rows, d.Rejected)
		}
		if r := d.Rejected[0]; r.Row != 11 || r.Rule != RuleJSON || !strings.Contains(r.Reason, want) || strings.Contains(r.Reason, "invalid character") {
			t.Errorf("%q: set aside %+v; want row 11, rule json, %q", cut, r, want)
		}
	}
}

// TestJSONSkipRowsNaN: with skip-rows a line with NaN is set aside with
// its column and line, and the reason a refused file gives.
func TestJSONSkipRowsNaN(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "readings_temp", Type: iceberg.PrimitiveTypes.Float64},
	)
	ok := strings.Repeat(`{"time":"2026-01-05T10:00:00Z","readings":{"temp":1.5}}`+"\n", 10)
	bad := `{"time":"2026-01-05T10:00:00Z","readings":{"temp":NaN}}`
	data := []byte(ok + bad + "\n" + ok)
	d, err := decode(t, "a.jsonl", data, DecodeOptions{Target: target, TimeColumn: "time", OnError: OnErrorSkipRows})
	if err != nil {
		t.Fatal(err)
	}
	if d.Rows != 20 || len(d.Rejected) != 1 {
		t.Fatalf("%d rows, set aside %+v; want 20 and one", d.Rows, d.Rejected)
	}
	var out bytes.Buffer
	if _, err := d.WriteRejects(Source{Key: "a.jsonl", R: bytes.NewReader(data), Size: int64(len(data))}, &out); err != nil {
		t.Fatal(err)
	}
	r := d.Rejected[0]
	if r.Row != 11 || r.Line != 11 || r.Column != "readings_temp" || r.Rule != RuleJSON || !strings.HasPrefix(r.Reason, "NaN is not a JSON number") || out.String() != bad+"\n" {
		t.Errorf("set aside %+v, rejects %q; want row and line 11, column readings_temp, rule json, NaN is not a JSON number", r, out.String())
	}
}

// TestJSONSkipRowsNUL: with skip-rows a value with the escape \u0000 is
// set aside by the nul rule, its reason naming the NUL character.
func TestJSONSkipRowsNUL(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String},
	)
	ok := strings.Repeat(`{"time":"2026-01-05T10:00:00Z","v":"a"}`+"\n", 10)
	data := []byte(ok + `{"time":"2026-01-05T10:00:00Z","v":"a\u0000b"}` + "\n" + ok)
	d, err := decode(t, "a.jsonl", data, DecodeOptions{Target: target, TimeColumn: "time", OnError: OnErrorSkipRows})
	if err != nil {
		t.Fatal(err)
	}
	if d.Rows != 20 || len(d.Rejected) != 1 {
		t.Fatalf("%d rows, set aside %+v; want 20 and one", d.Rows, d.Rejected)
	}
	if r := d.Rejected[0]; r.Row != 11 || r.Column != "v" || r.Rule != RuleNUL || !strings.Contains(r.Reason, `a NUL character (\u0000), which a column value cannot hold`) {
		t.Errorf("set aside %+v; want row 11, column v, rule nul, a NUL character (\\u0000)", r)
	}
}
