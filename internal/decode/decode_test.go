package decode

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestDetectFormat(t *testing.T) {
	par := []byte("PAR1\x15\x00")
	gzh := []byte{0x1f, 0x8b, 0x08, 0x00}
	txt := []byte("time,v\n")
	tests := []struct {
		key     string
		head    []byte
		want    Format
		gzipped bool
		wantErr string
	}{
		{"gw/a.csv", txt, FormatCSV, false, ""},
		{"gw/a.CSV", txt, FormatCSV, false, ""},
		{"gw/a.tsv", txt, FormatTSV, false, ""},
		{"gw/a.csv.gz", gzh, FormatCSV, true, ""},
		{"gw/a.tsv.gz", gzh, FormatTSV, true, ""},
		{"gw/a.csv.gz", nil, FormatCSV, true, ""},  // no head: the suffix decides
		{"gw/a.csv.gz", txt, FormatCSV, false, ""}, // decompressed in transit
		{"gw/a.csv", gzh, FormatCSV, true, ""},     // magic wins over the name
		{"gw/a.parquet", par, FormatParquet, false, ""},
		{"gw/a.parquet", nil, FormatParquet, false, ""},
		{"gw/a.parquet", txt, "", false, "named .parquet but not a Parquet file"},
		{"gw/a.dat", par, FormatParquet, false, ""}, // magic, unknown extension
		{"gw/a.csv", par, FormatParquet, false, ""}, // magic wins
		{"gw/a.dat", txt, "", false, "unsupported file type (expected .csv, .tsv, .json, .jsonl, .ndjson, each optionally .gz, or .parquet)"},
		{"gw/a.dat", gzh, "", false, "unsupported file type"},
		{"gw/a.txt.gz", gzh, "", false, "unsupported file type"},
		{"gw/a.json", nil, FormatJSON, false, ""},
		{"gw/a.JSONL.gz", gzh, FormatJSON, true, ""},
		{"gw/a.ndjson", txt, FormatJSON, false, ""},
		{"gw/a.parquet", gzh, "", false, "gzip-compressed parquet"},
	}
	for _, tc := range tests {
		f, gzipped, err := DetectFormat(tc.key, tc.head)
		if tc.wantErr != "" {
			fe := mustFileError(t, err)
			if fe.Key != tc.key || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s %x: error %q, want key and %q", tc.key, tc.head, err, tc.wantErr)
			}
			continue
		}
		if err != nil || f != tc.want || gzipped != tc.gzipped {
			t.Errorf("%s %x: got %q gz=%v err=%v, want %q gz=%v", tc.key, tc.head, f, gzipped, err, tc.want, tc.gzipped)
		}
	}
}

func TestReorderedColumnsMatchCanonical(t *testing.T) {
	target := tableTarget(t)
	canonical := "time,device,temp,count,ok,level\n" +
		"2026-01-05T10:00:00Z,d1,21.5,3,true,7\n" +
		"2026-01-05T10:01:00Z,d2,,4,FALSE,\n" +
		"2026-01-05T10:02:00Z,\"d,3\",-1,,,-2\n"
	reordered := "level,ok,count,temp,device,time\n" +
		"7,true,3,21.5,d1,2026-01-05T10:00:00Z\n" +
		",FALSE,4,,d2,2026-01-05T10:01:00Z\n" +
		"-2,,,-1,\"d,3\",2026-01-05T10:02:00Z\n"
	a, err := decode(t, "gw/canonical.csv", []byte(canonical), DecodeOptions{Target: target, TimeColumn: "time"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := decode(t, "gw/reordered.csv", []byte(reordered), DecodeOptions{Target: target, TimeColumn: "time", BatchRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	if a.Schema != target || b.Schema != target {
		t.Fatal("decoded schema is not the target schema object")
	}
	if len(b.Records) != 2 {
		t.Errorf("BatchRows=2 over 3 rows gave %d batches, want 2", len(b.Records))
	}
	ra, rb := rows(t, a), rows(t, b)
	if !reflect.DeepEqual(ra, rb) {
		t.Fatalf("reordered file decodes differently:\n%v\n%v", ra, rb)
	}
	want := []string{"d,3", "-1", "NULL", "NULL", "-2"}
	if got := ra[2][1:]; !reflect.DeepEqual(got, want) {
		t.Errorf("row 3 = %v, want %v", got, want)
	}
	if got := micros(t, a, "time")[0]; got != us(time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("time[0] = %d", got)
	}
}

func TestNumericCasts(t *testing.T) {
	target := tableTarget(t)
	tests := []struct {
		name    string
		csv     string
		want    [][]string // columns temp,count,level of each row
		wantErr *FileError
	}{
		{
			name: "integers into double",
			csv:  "time,device,temp\n2026-01-05T10:00:00Z,d1,21\n2026-01-05T10:00:01Z,d1,-3\n2026-01-05T10:00:02Z,d1,1e2\n",
			want: [][]string{{"21", "NULL", "NULL"}, {"-3", "NULL", "NULL"}, {"100", "NULL", "NULL"}},
		},
		{
			name:    "fraction into long",
			csv:     "time,device,count\n2026-01-05T10:00:00Z,d1,1\n2026-01-05T10:00:01Z,d1,1.5\n",
			wantErr: &FileError{Key: "gw/n.csv", Row: 2, Column: "count", Value: "1.5"},
		},
		{
			name:    "text into double",
			csv:     "time,device,temp\n2026-01-05T10:00:00Z,d1,abc\n",
			wantErr: &FileError{Key: "gw/n.csv", Row: 1, Column: "temp", Value: "abc"},
		},
		{
			name:    "overflow into int",
			csv:     "time,device,level\n2026-01-05T10:00:00Z,d1,3000000000\n",
			wantErr: &FileError{Key: "gw/n.csv", Row: 1, Column: "level", Value: "3000000000"},
		},
		{
			name:    "bad boolean",
			csv:     "time,device,ok\n2026-01-05T10:00:00Z,d1,yes\n",
			wantErr: &FileError{Key: "gw/n.csv", Row: 1, Column: "ok", Value: "yes"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := decode(t, "gw/n.csv", []byte(tc.csv), DecodeOptions{Target: target, TimeColumn: "time"})
			if tc.wantErr != nil {
				fe := mustFileError(t, err)
				if fe.Key != tc.wantErr.Key || fe.Row != tc.wantErr.Row || fe.Column != tc.wantErr.Column || fe.Value != tc.wantErr.Value {
					t.Fatalf("got %+v, want %+v", fe, tc.wantErr)
				}
				msg := err.Error()
				for _, part := range []string{tc.wantErr.Key, "row ", `column "` + tc.wantErr.Column + `"`, `"` + tc.wantErr.Value + `"`} {
					if !strings.Contains(msg, part) {
						t.Errorf("message %q lacks %q", msg, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, r := range rows(t, d) {
				got = append(got, []string{r[2], r[3], r[5]})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFractionIntoLongMessage(t *testing.T) {
	csv := "time,device,count\n2026-01-05T10:00:00Z,d1,1.5\n"
	_, err := decode(t, "gw/n.csv", []byte(csv), DecodeOptions{Target: tableTarget(t), TimeColumn: "time"})
	want := `gw/n.csv: row 1 (line 2), column "count": cannot parse "1.5" as long`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func TestTimeParsing(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no tzdata: %v", err)
	}
	base := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	sec := base.Unix()
	tests := []struct {
		name    string
		value   string
		unit    string
		loc     *time.Location
		want    time.Time
		wantErr string
	}{
		{name: "rfc3339 Z", value: "2026-01-05T10:00:00Z", want: base},
		{name: "space separator", value: "2026-01-05 10:00:00", want: base},
		{name: "lowercase t and z", value: "2026-01-05t10:00:00z", want: base},
		{name: "nanos and offset", value: "2026-01-05T10:00:00.123456789+02:00", want: base.Add(-2*time.Hour + 123456*time.Microsecond)},
		{name: "millis", value: "2026-01-05T10:00:00.5Z", want: base.Add(500 * time.Millisecond)},
		{name: "offset without colon", value: "2026-01-05T10:00:00-0530", want: base.Add(5*time.Hour + 30*time.Minute)},
		{name: "hour offset", value: "2026-01-05T10:00:00+02", want: base.Add(-2 * time.Hour)},
		{name: "naive in Berlin winter", value: "2026-01-05T10:00:00", loc: berlin, want: base.Add(-time.Hour)},
		{name: "naive in Berlin summer", value: "2026-07-05 10:00:00", loc: berlin, want: time.Date(2026, 7, 5, 8, 0, 0, 0, time.UTC)},
		{name: "offset beats location", value: "2026-01-05T10:00:00Z", loc: berlin, want: base},
		{name: "bare date is midnight", value: "2026-01-05", want: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)},
		{name: "epoch s", value: "1767607200", unit: "s", want: time.Unix(sec, 0)},
		{name: "epoch ms", value: "1767607200123", unit: "ms", want: time.UnixMilli(sec*1000 + 123)},
		{name: "epoch us", value: "1767607200123456", unit: "us", want: time.UnixMicro(sec*1_000_000 + 123456)},
		{name: "epoch ns", value: "1767607200123456789", unit: "ns", want: time.UnixMicro(sec*1_000_000 + 123456)},
		{name: "epoch float s", value: "1767607200.25", unit: "s", want: time.UnixMilli(sec*1000 + 250)},
		{name: "unit set but text", value: "2026-01-05T10:00:00Z", unit: "ms", want: base},
		{name: "epoch without unit", value: "1767607200", wantErr: `row 2 (line 3), column "time": cannot parse "1767607200" as a timestamp (expected RFC 3339 such as 2026-01-05T10:00:00Z); numeric epoch times need a time unit`},
		{name: "garbage", value: "12/01/2026 10:00", wantErr: `gw/t.csv: row 2 (line 3), column "time": cannot parse "12/01/2026 10:00" as a timestamp (expected RFC 3339 such as 2026-01-05T10:00:00Z)`},
		{name: "no seconds", value: "2026-01-05T10:00", wantErr: `cannot parse "2026-01-05T10:00"`},
		{name: "leap second", value: "2026-01-05T10:00:60Z", wantErr: `cannot parse "2026-01-05T10:00:60Z" as a timestamp (a leap second (second 60), which timestamps cannot hold: write second 59 or the next minute's 00)`},
		{name: "bad day", value: "2026-02-30T10:00:00Z", wantErr: "cannot parse"},
		{name: "ten fraction digits", value: "2026-01-05T10:00:00.1234567891Z", wantErr: `cannot parse "2026-01-05T10:00:00.1234567891Z" as a timestamp (a fraction of 10 digits: at most 9, nanoseconds, are read)`},
		{name: "twelve fraction digits with offset", value: "2026-01-05 10:00:00.123456789012+05:30", wantErr: `(a fraction of 12 digits: at most 9, nanoseconds, are read)`},
		{name: "bad offset", value: "2026-01-05T10:00:00+2", wantErr: "cannot parse"},
		{name: "invalid unit", value: "1767607200", unit: "h", wantErr: `invalid time unit "h"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Row 1 is always valid, so errors must come from row 2.
			csv := "time,v\n2026-01-01T00:00:00Z,1\n" + tc.value + ",2\n"
			d, err := decode(t, "gw/t.csv", []byte(csv), DecodeOptions{
				Target: timeOnlyTarget(t), TimeColumn: "time", TimeUnit: tc.unit, AssumeLocation: tc.loc,
			})
			if tc.wantErr != "" {
				fe := mustFileError(t, err)
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not contain %q", err, tc.wantErr)
				}
				if tc.unit != "h" && (fe.Row != 2 || fe.Column != "time" || fe.Value != tc.value) {
					t.Fatalf("error fields %+v", fe)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := micros(t, d, "time")[1]; got != us(tc.want) {
				t.Fatalf("got %s, want %s", time.UnixMicro(got).UTC(), tc.want.UTC())
			}
		})
	}
}

func TestNumericTimeColumnNeedsUnit(t *testing.T) {
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{{Name: "time", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1767607200000, 1767607201000}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{1, 2}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := writeParquet(t, rec)

	_, err := decode(t, "gw/e.parquet", data, DecodeOptions{Target: timeOnlyTarget(t), TimeColumn: "time"})
	if fe := mustFileError(t, err); fe.Column != "time" || !strings.Contains(err.Error(), "time unit") {
		t.Fatalf("got %v", err)
	}
	d, err := decode(t, "gw/e.parquet", data, DecodeOptions{Target: timeOnlyTarget(t), TimeColumn: "time", TimeUnit: "ms"})
	if err != nil {
		t.Fatal(err)
	}
	if got := micros(t, d, "time"); !reflect.DeepEqual(got, []int64{1767607200000000, 1767607201000000}) {
		t.Fatalf("got %v", got)
	}
}

func TestFileProblems(t *testing.T) {
	target := tableTarget(t)
	tests := []struct {
		name    string
		data    string
		batch   int
		wantErr string
		wantRow int64
		wantCol string
	}{
		{name: "empty file", data: "", wantErr: "gw/x.csv: empty file"},
		{name: "blank lines only", data: "\n\n", wantErr: "gw/x.csv: empty file"},
		{name: "ragged row", data: "time,device\n2026-01-05T10:00:00Z,d1\n2026-01-05T10:00:01Z,d1,extra\n", wantErr: "row 2 (line 3): wrong number of fields: the line has 3, the header has 2", wantRow: 2},
		{name: "ragged row after a batch", batch: 2, data: "time,device\n2026-01-05T10:00:00Z,d1\n2026-01-05T10:00:01Z,d1\n2026-01-05T10:00:02Z,d1\n2026-01-05T10:00:03Z\n", wantErr: "wrong number of fields", wantRow: 4},
		{name: "bare quote", data: "time,device\n2026-01-05T10:00:00Z,d\"1\n", wantErr: "malformed csv", wantRow: 1},
		{name: "duplicate header", data: "time,device,device\n2026-01-05T10:00:00Z,d1,d2\n", wantErr: "duplicate column name", wantCol: "device"},
		{name: "empty header name", data: "time,,device\n2026-01-05T10:00:00Z,1,d1\n", wantErr: "column 2 has an empty name"},
		{name: "extra column", data: "time,device,humidity\n2026-01-05T10:00:00Z,d1,40\n", wantErr: `gw/x.csv: column "humidity": not in the table schema: ingest adds new columns only with --evolve add-columns`, wantCol: "humidity"},
		{name: "missing required column", data: "time,temp\n2026-01-05T10:00:00Z,1\n", wantErr: `column "device": required column is missing from the file`, wantCol: "device"},
		{name: "missing time column", data: "device,temp\nd1,1\n", wantErr: `column "time": time column is missing from the file`, wantCol: "time"},
		{name: "null time", data: "time,device\n2026-01-05T10:00:00Z,d1\n,d1\n", wantErr: `gw/x.csv: row 2 (line 3), column "time": null in required column`, wantRow: 2, wantCol: "time"},
		{name: "null in required string", data: "time,device\n2026-01-05T10:00:00Z,d1\n2026-01-05T10:00:01Z,\n", wantErr: "null in required column", wantRow: 2, wantCol: "device"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(t, "gw/x.csv", []byte(tc.data), DecodeOptions{Target: target, TimeColumn: "time", BatchRows: tc.batch})
			fe := mustFileError(t, err)
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
			if fe.Key != "gw/x.csv" || fe.Row != tc.wantRow || fe.Column != tc.wantCol {
				t.Fatalf("error fields key=%q row=%d column=%q, want row=%d column=%q", fe.Key, fe.Row, fe.Column, tc.wantRow, tc.wantCol)
			}
		})
	}
}

func TestMissingNullableColumnsAreNull(t *testing.T) {
	d, err := decode(t, "gw/m.csv", []byte("device,time\nd1,2026-01-05T10:00:00Z\n"), DecodeOptions{Target: tableTarget(t), TimeColumn: "time"})
	if err != nil {
		t.Fatal(err)
	}
	got := rows(t, d)
	want := []string{"d1", "NULL", "NULL", "NULL", "NULL"}
	if !reflect.DeepEqual(got[0][1:], want) {
		t.Fatalf("got %v, want %v", got[0][1:], want)
	}
}

func TestTargetRequiresTimeColumn(t *testing.T) {
	_, err := decode(t, "gw/m.csv", []byte("device,time\nd1,2026-01-05T10:00:00Z\n"), DecodeOptions{Target: tableTarget(t)})
	if fe := mustFileError(t, err); !strings.Contains(fe.Error(), "no time column given") {
		t.Fatalf("got %v", err)
	}
	_, err = decode(t, "gw/m.csv", []byte("device,time\nd1,2026-01-05T10:00:00Z\n"), DecodeOptions{Target: tableTarget(t), TimeColumn: "device"})
	if fe := mustFileError(t, err); !strings.Contains(fe.Error(), "not a timestamp") {
		t.Fatalf("got %v", err)
	}
}

func TestGzipAndTSV(t *testing.T) {
	target := tableTarget(t)
	want := [][]string{{"d1", "21.5", "3"}, {"d\t2", "NULL", "4"}, {"d,3", "-1", "NULL"}}
	csvText := "\ufefftime,device,temp,count\r\n" + // BOM and CRLF as written by spreadsheet tools
		"2026-01-05T10:00:00Z,d1,21.5,3\r\n" +
		"2026-01-05T10:00:01Z,\"d\t2\",,4\r\n" +
		"2026-01-05T10:00:02Z,\"d,3\",-1,\r\n"
	tsvText := "time\tdevice\ttemp\tcount\n" +
		"2026-01-05T10:00:00Z\td1\t21.5\t3\n" +
		"2026-01-05T10:00:01Z\t\"d\t2\"\t\t4\n" +
		"2026-01-05T10:00:02Z\td,3\t-1\t\n"
	tests := []struct {
		key  string
		data []byte
	}{
		{"gw/a.csv", []byte(csvText)},
		{"gw/a.csv.gz", gz(t, csvText)},
		{"gw/a.tsv", []byte(tsvText)},
		{"gw/a.tsv.gz", gz(t, tsvText)},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			d, err := decode(t, tc.key, tc.data, DecodeOptions{Target: target, TimeColumn: "time"})
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, r := range rows(t, d) {
				got = append(got, r[1:4])
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
	t.Run("corrupt gzip", func(t *testing.T) {
		data := gz(t, csvText)
		data[len(data)-5] ^= 0xff // break the CRC
		_, err := decode(t, "gw/a.csv.gz", data, DecodeOptions{Target: target, TimeColumn: "time"})
		if fe := mustFileError(t, err); !strings.Contains(fe.Error(), "gzip") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestParquetRoundTrip(t *testing.T) {
	mem := memory.NewGoAllocator()
	// File order differs from the table; count is int32, device is
	// dictionary-encoded, time is timestamp[ms, UTC], level is uint8.
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "count", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "device", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
		{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "temp", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "level", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 2, 3}, []bool{true, false, true})
	db := b.Field(1).(*array.BinaryDictionaryBuilder)
	for _, s := range []string{"d1", "d2", "d1"} {
		if err := db.AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	b.Field(2).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{
		arrow.Timestamp(base.UnixMilli()), arrow.Timestamp(base.UnixMilli() + 1500), arrow.Timestamp(base.UnixMilli() + 3000),
	}, nil)
	b.Field(3).(*array.Float32Builder).AppendValues([]float32{1.5, 2, -0.25}, nil)
	b.Field(4).(*array.Uint8Builder).AppendValues([]uint8{200, 0, 9}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := writeParquet(t, rec)

	target := tableTarget(t)
	d, err := decode(t, "gw/a.dat", data, DecodeOptions{Target: target, TimeColumn: "time", BatchRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := rows(t, d)
	want := [][]string{
		{"d1", "1.5", "1", "NULL", "200"},
		{"d2", "2", "NULL", "NULL", "0"},
		{"d1", "-0.25", "3", "NULL", "9"},
	}
	for i := range got {
		got[i] = got[i][1:]
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if ts := micros(t, d, "time"); !reflect.DeepEqual(ts, []int64{us(base), us(base) + 1_500_000, us(base) + 3_000_000}) {
		t.Fatalf("time = %v", ts)
	}
	if len(d.Records) < 2 {
		t.Errorf("BatchRows=2 gave %d batches", len(d.Records))
	}

	// Same file, but the table's level column is a long and a narrowing
	// cast (int64 file column into an int table column) must fail.
	t.Run("narrowing refused", func(t *testing.T) {
		sc2 := arrow.NewSchema([]arrow.Field{
			{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_us},
			{Name: "level", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "device", Type: arrow.BinaryTypes.String},
		}, nil)
		b2 := array.NewRecordBuilder(mem, sc2)
		defer b2.Release()
		b2.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(us(base)))
		b2.Field(1).(*array.Int64Builder).Append(1)
		b2.Field(2).(*array.StringBuilder).Append("d1")
		r2 := b2.NewRecordBatch()
		defer r2.Release()
		_, err := decode(t, "gw/b.parquet", writeParquet(t, r2), DecodeOptions{Target: target, TimeColumn: "time"})
		if fe := mustFileError(t, err); fe.Column != "level" || !strings.Contains(fe.Error(), "cannot convert file type int64 to table type int") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestParquetNaiveTimestamp(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no tzdata: %v", err)
	}
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "device", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	wall := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(wall.UnixMilli()))
	b.Field(1).(*array.StringBuilder).Append("d1")
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := writeParquet(t, rec)

	for _, tc := range []struct {
		loc  *time.Location
		want time.Time
	}{
		{nil, wall},
		{berlin, wall.Add(-time.Hour)},
	} {
		d, err := decode(t, "gw/n.parquet", data, DecodeOptions{Target: tableTarget(t), TimeColumn: "time", AssumeLocation: tc.loc})
		if err != nil {
			t.Fatal(err)
		}
		if got := micros(t, d, "time")[0]; got != us(tc.want) {
			t.Errorf("loc %v: got %s, want %s", tc.loc, time.UnixMicro(got).UTC(), tc.want)
		}
	}
}

func TestParquetNullInRequiredColumn(t *testing.T) {
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "device", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1, 2, 3}, nil)
	db := b.Field(1).(*array.BinaryDictionaryBuilder)
	_ = db.AppendString("d1")
	_ = db.AppendString("d1")
	db.AppendNull()
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err := decode(t, "gw/n.parquet", writeParquet(t, rec), DecodeOptions{Target: tableTarget(t), TimeColumn: "time"})
	fe := mustFileError(t, err)
	if fe.Row != 3 || fe.Column != "device" || fe.Reason != "null in required column" {
		t.Fatalf("got %+v", fe)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := decodeCtx(ctx, t, "gw/c.csv", []byte("time,device\n2026-01-05T10:00:00Z,d1\n"), DecodeOptions{Target: tableTarget(t), TimeColumn: "time"})
	mustFileError(t, err)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled inside", err)
	}
}

func TestFileErrorFormat(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		e    FileError
		want string
	}{
		{FileError{Key: "k", Row: 12, Column: "time", Reason: "bad"}, `k: row 12, column "time": bad`},
		{FileError{Key: "k", Column: "c", Reason: "bad"}, `k: column "c": bad`},
		{FileError{Key: "k", Row: 3, Reason: "bad"}, `k: row 3: bad`},
		{FileError{Key: "k", Reason: "bad", Err: cause}, `k: bad: boom`},
		{FileError{Key: "k", Err: cause}, `k: boom`},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	if !errors.Is(&FileError{Err: cause}, cause) {
		t.Error("Unwrap does not expose the cause")
	}
}
