package decode

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// schemaShape renders a schema as "name:type:nullable" strings.
func schemaShape(sc *arrow.Schema) []string {
	out := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		null := "null"
		if !f.Nullable {
			null = "required"
		}
		out[i] = f.Name + ":" + f.Type.String() + ":" + null
	}
	return out
}

func TestInferCSV(t *testing.T) {
	tests := []struct {
		name     string
		csv      string
		timeCol  string
		unit     string
		wantTime string
		want     []string
		wantErr  string
	}{
		{
			name: "types from all rows",
			csv: "site,ts,n,x,flag,note,empty,big\n" +
				"a,2026-01-05T10:00:00Z,1,1,true,x,,1\n" +
				"b,2026-01-05T10:00:01Z,-2,2.5,FALSE,1,,99999999999999999999\n" +
				"c,2026-01-05 10:00:02,,NaN,,2,,3\n",
			wantTime: "ts",
			want: []string{
				"site:utf8:null", "ts:timestamp[us, tz=UTC]:required", "n:int64:null", "x:float64:null",
				"flag:bool:null", "note:utf8:null", "empty:utf8:null", "big:utf8:null", // 99999999999999999999 is no double
			},
		},
		{
			// Identifiers whose zeros a number would drop are strings;
			// a lone 0 (and 0.5, -0) is a number's.
			name: "leading zeros",
			csv: "time,zip,id,neg,half,zero,point\n" +
				"2026-01-05T10:00:00Z,10115,007,-01,00.5,0,0.5\n" +
				"2026-01-05T10:00:01Z,01067,12,3,1.5,-0,0e3\n",
			wantTime: "time",
			want: []string{"time:timestamp[us, tz=UTC]:required", "zip:utf8:null", "id:utf8:null", "neg:utf8:null",
				"half:utf8:null", "zero:int64:null", "point:float64:null"},
		},
		{
			name:     "time preferred over ts",
			csv:      "ts,Time,v\n2026-01-05T10:00:00Z,2026-01-05T11:00:00Z,1\n",
			wantTime: "Time",
			want:     []string{"ts:utf8:null", "Time:timestamp[us, tz=UTC]:required", "v:int64:null"},
		},
		{
			name:     "candidate that does not parse is skipped",
			csv:      "time,event_time,v\nmorning,2026-01-05T10:00:00Z,1\n",
			wantTime: "event_time",
		},
		{
			name:     "explicit time column",
			csv:      "when,v\n2026-01-05T10:00:00Z,1\n",
			timeCol:  "when",
			wantTime: "when",
			want:     []string{"when:timestamp[us, tz=UTC]:required", "v:int64:null"},
		},
		{
			name:     "numeric ts with unit",
			csv:      "ts,v\n1767607200,1\n",
			unit:     "s",
			wantTime: "ts",
		},
		{
			name:    "numeric ts without unit",
			csv:     "ts,v\n1767607200,1\n",
			wantErr: `gw/new.csv: row 1 (line 2), column "ts": cannot parse "1767607200" as a timestamp (expected RFC 3339 such as 2026-01-05T10:00:00Z); numeric epoch times need a time unit (--time-unit s, ms, us or ns)`,
		},
		{
			name:    "explicit time column missing",
			csv:     "time,v\n2026-01-05T10:00:00Z,1\n",
			timeCol: "when",
			wantErr: `column "when": time column is not in the file (columns: "time", "v")`,
		},
		{
			name:    "explicit time column with a bad value",
			csv:     "when,v\n2026-01-05T10:00:00Z,1\nlater,2\n",
			timeCol: "when",
			wantErr: `row 2 (line 3), column "when": cannot parse "later" as a timestamp`,
		},
		{
			name:    "no time column",
			csv:     "a,b\n1,2\n",
			wantErr: "pass --time-column",
		},
		{
			name:    "header only",
			csv:     "time,v\n",
			wantErr: "no data rows",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := decode(t, "gw/new.csv", []byte(tc.csv), DecodeOptions{TimeColumn: tc.timeCol, TimeUnit: tc.unit})
			if tc.wantErr != "" {
				mustFileError(t, err)
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.TimeColumn != tc.wantTime {
				t.Fatalf("time column %q, want %q", d.TimeColumn, tc.wantTime)
			}
			if got := schemaShape(d.Schema); tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("schema %v, want %v", got, tc.want)
			}
			rows(t, d) // batches conform to the inferred schema
		})
	}
}

func TestInferCSVValues(t *testing.T) {
	csv := "ts,n,x,flag\n2026-01-05T10:00:00+01:00,7,2,True\n2026-01-05T10:00:01Z,,2.5,false\n"
	d, err := decode(t, "gw/new.csv", []byte(csv), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := rows(t, d)
	want := [][]string{{"7", "2", "true"}, {"NULL", "2.5", "false"}}
	for i := range got {
		got[i] = got[i][1:]
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	ts := micros(t, d, "ts")
	if ts[0] != us(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("ts[0] = %s", time.UnixMicro(ts[0]).UTC())
	}
}

// TestLeadingZerosKeptAsText: a column inferred as a string keeps 007 as
// written; a column given as a long (--column) reads it as the number 7,
// since the user said it is one.
func TestLeadingZerosKeptAsText(t *testing.T) {
	const csv = "time,id\n2026-01-05T10:00:00Z,007\n2026-01-05T10:00:01Z,12\n"
	d, err := decode(t, "gw/new.csv", []byte(csv), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := columnText(t, d, "id"); !equalStrings(got, []string{`"007"`, `"12"`}) {
		t.Fatalf("inferred: %q", got)
	}
	d, err = decode(t, "gw/new.csv", []byte(csv), DecodeOptions{Columns: map[string]arrow.DataType{"id": arrow.PrimitiveTypes.Int64}})
	if err != nil {
		t.Fatal(err)
	}
	if got := columnText(t, d, "id"); !equalStrings(got, []string{"7", "12"}) {
		t.Fatalf("given as long: %q", got)
	}
}

func TestInferParquet(t *testing.T) {
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "dev", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.Int8Builder).AppendValues([]int8{-1, 2}, nil)
	b.Field(1).(*array.Uint32Builder).AppendValues([]uint32{4000000000, 1}, nil)
	db := b.Field(2).(*array.BinaryDictionaryBuilder)
	_ = db.AppendString("d1")
	_ = db.AppendString("d2")
	base := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	b.Field(3).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{arrow.Timestamp(base.UnixMilli()), arrow.Timestamp(base.UnixMilli() + 1)}, nil)
	b.Field(4).(*array.Float32Builder).AppendValues([]float32{1, 2}, nil)
	b.Field(5).(*array.StringBuilder).AppendValues([]string{"1", "2"}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()

	d, err := decode(t, "gw/new.parquet", writeParquet(t, rec), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"i8:int32:null", "u32:int64:null", "dev:utf8:null", "at:timestamp[us, tz=UTC]:required",
		"f:float32:null", "s:utf8:null",
	}
	if got := schemaShape(d.Schema); !reflect.DeepEqual(got, want) {
		t.Fatalf("schema %v, want %v", got, want)
	}
	if d.TimeColumn != "at" {
		t.Fatalf("time column %q", d.TimeColumn)
	}
	got := rows(t, d)
	if got[0][1] != "4000000000" || got[1][2] != "d2" {
		t.Fatalf("rows %v", got)
	}
	if ts := micros(t, d, "at"); ts[1] != us(base)+1000 {
		t.Fatalf("at = %v", ts)
	}
}

func TestInferParquetUnsupportedType(t *testing.T) {
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.TimestampBuilder).Append(1)
	lb := b.Field(1).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.StringBuilder).Append("x")
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err := decode(t, "gw/l.parquet", writeParquet(t, rec), DecodeOptions{})
	if fe := mustFileError(t, err); fe.Column != "tags" || !strings.Contains(err.Error(), "unsupported column type") {
		t.Fatalf("got %v", err)
	}
}
