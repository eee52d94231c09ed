package decode

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

func skipOpts(t *testing.T, max string) DecodeOptions {
	t.Helper()
	m, err := ParseMaxBadRows(max)
	if err != nil {
		t.Fatal(err)
	}
	return DecodeOptions{Target: tableTarget(t), TimeColumn: "time", OnError: OnErrorSkipRows, MaxBadRows: m}
}

// rejectsText writes d's rejects file and returns it with its extension.
func rejectsText(t *testing.T, d *Decoded, data []byte) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	ext, err := d.WriteRejects(Source{Key: "k", R: bytes.NewReader(data), Size: int64(len(data))}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf.String(), ext
}

func TestSkipRowsSetsAsideRefusedRows(t *testing.T) {
	data := "time,device,temp,count\n" +
		"2026-01-05T10:00:00Z,d1,21.5,1\n" +
		"2026-01-05T10:01:00Z,d1,22,5,2\n" + // five fields: a decimal comma
		"2026-01-05T10:02:00Z,d1,abc,3\n" + // not a double
		"\n" + // a blank line is no row
		"2026-01-05T10:03:00Z,\"d2\nsecond line\",23.5,4\n" + // a quoted line break is fine
		"not a time,d2,1,5\n" +
		"2026-01-05T10:05:00Z,d2,24,x6\n" +
		"2026-01-05T10:06:00Z,d\"2,24,7\n" + // a bare quote
		"2026-01-05T10:07:00Z,d2,25,8" // no line end at the end
	d, err := decode(t, "gw/a.csv", []byte(data), skipOpts(t, "100"))
	if err != nil {
		t.Fatal(err)
	}
	got := rows(t, d)
	if len(got) != 3 || got[0][2] != "21.5" || got[1][1] != "d2\nsecond line" || got[2][3] != "8" {
		t.Fatalf("loaded rows = %q", got)
	}
	type short struct {
		Row    int64
		Column string
		Value  string
		Rule   string
	}
	var rej []short
	for _, r := range d.Rejected {
		rej = append(rej, short{r.Row, r.Column, r.Value, r.Rule})
	}
	want := []short{
		{2, "", "", RuleFields},
		{3, "temp", "abc", "type double"},
		{5, "time", "not a time", "type timestamptz"},
		{6, "count", "x6", "type long"},
		{7, "", "", RuleQuoting},
	}
	if !reflect.DeepEqual(rej, want) {
		t.Fatalf("rejected = %+v\nwant %+v", rej, want)
	}
	if !strings.Contains(d.Rejected[0].Reason, "wrong number of fields: the line has 5, the header has 4") {
		t.Errorf("reason of row 2 = %q", d.Rejected[0].Reason)
	}
	text, ext := rejectsText(t, d, []byte(data))
	wantText := "time,device,temp,count\n" +
		"2026-01-05T10:01:00Z,d1,22,5,2\n" +
		"2026-01-05T10:02:00Z,d1,abc,3\n" +
		"not a time,d2,1,5\n" +
		"2026-01-05T10:05:00Z,d2,24,x6\n" +
		"2026-01-05T10:06:00Z,d\"2,24,7\n"
	if ext != ".csv" || text != wantText {
		t.Fatalf("rejects file (%s) =\n%s\nwant\n%s", ext, text, wantText)
	}
	var lines []int64
	for _, r := range d.Rejected {
		lines = append(lines, r.Line)
	}
	if !reflect.DeepEqual(lines, []int64{3, 4, 8, 9, 10}) {
		t.Errorf("lines = %v", lines)
	}
}

func TestSkipRowsLineEndsAndUnnamedColumns(t *testing.T) {
	data := "sep=;\r\ntime;device;temp;\r\n" +
		"2026-01-05T10:00:00Z;d1;1;\r\n" +
		"2026-01-05T10:01:00Z;d1;2;x\r\n" + // a value in the unnamed column
		"2026-01-05T10:02:00Z;d1;3\r;\r\n" + // a carriage return outside quotes
		"2026-01-05T10:03:00Z;d1;4;\r\n"
	d, err := decode(t, "gw/a.csv", []byte(data), skipOpts(t, "50%"))
	if err != nil {
		t.Fatal(err)
	}
	if got := rows(t, d); len(got) != 2 || got[0][2] != "1" || got[1][2] != "4" {
		t.Fatalf("loaded rows = %q", got)
	}
	if len(d.Rejected) != 2 || d.Rejected[0].Rule != RuleUnnamedColumn || d.Rejected[0].Value != "x" || d.Rejected[1].Rule != RuleLineEnd {
		t.Fatalf("rejected = %+v", d.Rejected)
	}
	text, _ := rejectsText(t, d, []byte(data))
	want := "sep=;\r\ntime;device;temp;\r\n2026-01-05T10:01:00Z;d1;2;x\r\n2026-01-05T10:02:00Z;d1;3\r;\r\n"
	if text != want {
		t.Fatalf("rejects file = %q, want %q", text, want)
	}
	if d.Rejected[0].Line != 4 || d.Rejected[1].Line != 5 {
		t.Errorf("lines = %d, %d (the separator hint is line 1)", d.Rejected[0].Line, d.Rejected[1].Line)
	}
}

func TestSkipRowsMaxBadRows(t *testing.T) {
	var b strings.Builder
	b.WriteString("time,device,temp\n")
	for i := range 10 {
		v := "1.5"
		if i < 3 {
			v = "bad"
		}
		b.WriteString("2026-01-05T10:00:00Z,d1," + v + "\n")
	}
	data := []byte(b.String())
	for _, tc := range []struct {
		max  string
		ok   bool
		says string
	}{
		{"3", true, ""},
		{"2", false, "at least 3 rows refused, more than --max-bad-rows 2 allows"},
		{"30%", true, ""},
		{"0.2", false, "3 rows of 10 refused, more than --max-bad-rows 20% allows"},
		{"0", false, "more than --max-bad-rows 0"},
	} {
		t.Run(tc.max, func(t *testing.T) {
			d, err := decode(t, "gw/a.csv", data, skipOpts(t, tc.max))
			if tc.ok {
				if err != nil || d.Rows != 7 || len(d.Rejected) != 3 {
					t.Fatalf("err %v, rows %v", err, d)
				}
				return
			}
			fe := mustFileError(t, err)
			if fe.Row != 1 || fe.Line != 2 || fe.Column != "temp" || !strings.Contains(fe.Error(), tc.says) {
				t.Fatalf("got %v (row %d line %d)", err, fe.Row, fe.Line)
			}
		})
	}
}

func TestSkipRowsLeavesFileErrorsAlone(t *testing.T) {
	// A column the table lacks, and a file that is not text, refuse the
	// whole file with skip-rows too.
	for _, data := range []string{
		"time,device,battery\n2026-01-05T10:00:00Z,d1,1\n",
		"\xff\xfet\x00i\x00",
	} {
		_, err := decode(t, "gw/a.csv", []byte(data), skipOpts(t, "100%"))
		if fe := mustFileError(t, err); fe.Row != 0 {
			t.Fatalf("got %v", err)
		}
	}
	// Without skip-rows, the first bad row refuses the file.
	opts := skipOpts(t, "100%")
	opts.OnError = OnErrorFile
	_, err := decode(t, "gw/a.csv", []byte("time,device,temp\n2026-01-05T10:00:00Z,d1,x\n"), opts)
	if fe := mustFileError(t, err); fe.Row != 1 {
		t.Fatalf("got %v", err)
	}
}

func TestSkipRowsRequiredNullToken(t *testing.T) {
	opts := skipOpts(t, "100%")
	opts.CSV.Null = []string{"NA"}
	data := "time,device,temp\n2026-01-05T10:00:00Z,NA,1\n2026-01-05T10:01:00Z,d1,2\n"
	d, err := decode(t, "gw/a.csv", []byte(data), opts)
	if err != nil {
		t.Fatal(err)
	}
	rejectsText(t, d, []byte(data))
	if len(d.Rejected) != 1 || d.Rejected[0].Rule != RuleRequired || !strings.Contains(d.Rejected[0].Reason, `"NA" is a null token`) {
		t.Fatalf("rejected = %+v", d.Rejected)
	}
}

func TestSkipRowsParquet(t *testing.T) {
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "device", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "temp", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for i, v := range []string{"1.5", "x", "2.5", "", "y"} {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1767607200000000 + int64(i)))
		if i == 3 {
			b.Field(1).(*array.StringBuilder).AppendNull() // device is required
		} else {
			b.Field(1).(*array.StringBuilder).Append("d1")
		}
		b.Field(2).(*array.StringBuilder).Append(v)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := writeParquet(t, rec)
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "temp", Type: iceberg.PrimitiveTypes.Float64},
	)
	d, err := decode(t, "gw/a.parquet", data, DecodeOptions{Target: target, TimeColumn: "time", OnError: OnErrorSkipRows, MaxBadRows: MaxBadRows{Rows: 5, set: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rows(t, d); len(got) != 2 || got[1][2] != "2.5" {
		t.Fatalf("rows = %q", got)
	}
	var rules []string
	for _, r := range d.Rejected {
		rules = append(rules, r.Rule)
	}
	if !reflect.DeepEqual(rules, []string{"type double", RuleRequired, "type double"}) {
		t.Fatalf("rules = %v (%+v)", rules, d.Rejected)
	}
	var buf bytes.Buffer
	ext, err := d.WriteRejects(Source{}, &buf)
	if err != nil || ext != ".parquet" {
		t.Fatal(ext, err)
	}
	back, err := decode(t, "rejects.parquet", buf.Bytes(), DecodeOptions{Target: target, TimeColumn: "time", OnError: OnErrorSkipRows, MaxBadRows: MaxBadRows{Rows: 5, set: true}})
	if err != nil || back.Rows != 0 || len(back.Rejected) != 3 {
		t.Fatalf("the rejects file read back: %v %+v", err, back)
	}
}

func TestParseMaxBadRows(t *testing.T) {
	for in, want := range map[string]MaxBadRows{
		"0": {Rows: 0, set: true}, "100": {Rows: 100, set: true}, "0.05": {Fraction: 0.05, set: true},
		"5%": {Fraction: 0.05, set: true}, "100%": {Fraction: 1, set: true}, "1.0": {Fraction: 1, set: true},
	} {
		got, err := ParseMaxBadRows(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v %v", in, got, err)
		}
	}
	for _, in := range []string{"", "-1", "1.5", "0%", "101%", "x", "NaN"} {
		if _, err := ParseMaxBadRows(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	if s := (MaxBadRows{}).String(); s != "10%" {
		t.Errorf("default = %s", s)
	}
}
