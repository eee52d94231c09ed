package decode

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

// TestTextNumberRules: decimal notation and the NaN/Infinity words load;
// what Go's strconv also accepts (hexadecimal, digit separators) and every
// lossy parse (overflow, underflow to 0, whole numbers a float type cannot
// hold) is refused with a reason saying which.
func TestTextNumberRules(t *testing.T) {
	tests := []struct {
		in      string
		bits    int
		want    float64
		problem string // "" = accepted; notNumber; else a substring of the problem
	}{
		{"1.5", 64, 1.5, ""},
		{" -2.5e3 ", 64, -2500, ""},
		{"+.5", 64, 0.5, ""},
		{"5.", 64, 5, ""},
		{"0", 64, 0, ""},
		{"-0.000", 64, 0, ""},
		{"0e-400", 64, 0, ""}, // zero written as zero is no underflow
		{"NaN", 64, math.NaN(), ""},
		{"infinity", 64, math.Inf(1), ""},
		{"-Inf", 64, math.Inf(-1), ""},
		{"9007199254740992", 64, 9007199254740992, ""},
		{"-9007199254740993", 64, 0, "2^53"},
		{"9007199254740993", 64, 0, "2^53"},
		{"000000000000000009007199254740993", 64, 0, "2^53"},
		{"18446744073709551616", 64, 18446744073709551616, ""}, // 2^64 is a double
		{"9007199254740993.0", 64, 9007199254740992, ""},       // decimal notation rounds as every reader does
		{"16777216", 32, 16777216, ""},
		{"16777217", 32, 0, "2^24"},
		{"1e309", 64, 0, "out of range for double"},
		{"3.5e38", 32, 0, "out of range for float"},
		{"1e-400", 64, 0, "stored as 0"},
		{"1e-50", 32, 0, "stored as 0"},
		{"0x1.8p1", 64, 0, "hexadecimal"},
		{"-0X10", 64, 0, "hexadecimal"},
		{"1_000", 64, 0, "digit separators"},
		{"1,000.5", 64, 0, "digit separators"},
		{"1 000", 64, 0, "digit separators"},
		{"1'000", 64, 0, "digit separators"},
		{"+nan", 64, 0, notNumber},
		{"1e", 64, 0, notNumber},
		{"--1", 64, 0, notNumber},
		{"1.2.3", 64, 0, notNumber},
		{"warm", 64, 0, notNumber},
		{"", 64, 0, notNumber},
		{"1.5\u00a0", 64, 1.5, ""}, // a no-break space around is white space too
	}
	for _, tc := range tests {
		v, problem := parseFloatText(tc.in, tc.bits)
		switch {
		case tc.problem == "" && problem != "":
			t.Errorf("%q (%d bits): refused (%s), want %v", tc.in, tc.bits, problem, tc.want)
		case tc.problem == "" && !(v == tc.want || (math.IsNaN(v) && math.IsNaN(tc.want))):
			t.Errorf("%q (%d bits) = %v, want %v", tc.in, tc.bits, v, tc.want)
		case tc.problem == notNumber && problem != notNumber:
			t.Errorf("%q: problem %q, want no number at all", tc.in, problem)
		case tc.problem != "" && !strings.Contains(problem, tc.problem):
			t.Errorf("%q (%d bits): problem %q, want %q", tc.in, tc.bits, problem, tc.problem)
		}
	}
	for _, tc := range []struct {
		in      string
		problem string
	}{{"+7", ""}, {"-0", ""}, {"1_000", "digit separators"}, {"0x10", "hexadecimal"}, {"1.5", notNumber}, {"9223372036854775808", "out of range"}} {
		if _, problem := parseIntText(tc.in, 64); (tc.problem == "") != (problem == "") || !strings.Contains(problem, tc.problem) {
			t.Errorf("parseIntText(%q): problem %q, want %q", tc.in, problem, tc.problem)
		}
	}
}

// TestIntegersIntoDouble: Parquet integers go into a double column only
// when the double holds them exactly.
func TestIntegersIntoDouble(t *testing.T) {
	mem := memory.NewGoAllocator()
	for _, tc := range []struct {
		dt   arrow.DataType
		vals []uint64
		bad  string
	}{
		{arrow.PrimitiveTypes.Int64, []uint64{1 << 53, 1 << 62}, ""},
		{arrow.PrimitiveTypes.Int64, []uint64{1<<53 + 1}, "9007199254740993"},
		{arrow.PrimitiveTypes.Uint64, []uint64{1 << 63}, ""},
		{arrow.PrimitiveTypes.Uint64, []uint64{math.MaxUint64}, "18446744073709551615"},
		{arrow.PrimitiveTypes.Uint32, []uint64{math.MaxUint32}, ""},
	} {
		sc := arrow.NewSchema([]arrow.Field{{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_us}, {Name: "v", Type: tc.dt, Nullable: true}}, nil)
		b := array.NewRecordBuilder(mem, sc)
		for i, v := range tc.vals {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 1, 5, 10, 0, i, 0, time.UTC).UnixMicro()))
			switch fb := b.Field(1).(type) {
			case *array.Int64Builder:
				fb.Append(int64(v))
			case *array.Uint64Builder:
				fb.Append(v)
			case *array.Uint32Builder:
				fb.Append(uint32(v))
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		d, err := decode(t, "gw/i.parquet", writeParquet(t, rec), DecodeOptions{Target: timeOnlyTarget(t), TimeColumn: "time"})
		rec.Release()
		if tc.bad == "" {
			if err != nil {
				t.Errorf("%s %v: %v", tc.dt, tc.vals, err)
				continue
			}
			for i, got := range rows(t, d) {
				if want := strconv.FormatFloat(float64(tc.vals[i]), 'g', -1, 64); got[1] != want {
					t.Errorf("%s row %d = %s, want %s", tc.dt, i, got[1], want)
				}
			}
			continue
		}
		fe := mustFileError(t, err)
		if fe.Column != "v" || fe.Value != tc.bad || !strings.Contains(fe.Reason, "2^53") {
			t.Errorf("%s %v: got %v", tc.dt, tc.vals, err)
		}
	}
}

// TestWallClockTimes: a wall-clock time that the zone skips or repeats is
// refused, in zones with an hour, half an hour, a negative daylight saving
// time and a skipped day; times around the changes and zones without them
// load.
func TestWallClockTimes(t *testing.T) {
	load := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Skipf("no tzdata for %s: %v", name, err)
		}
		return loc
	}
	tests := []struct {
		zone  string
		wall  string
		want  string // UTC instant, or "gap" / "twice"
		fixed string // the fixed zone the reason suggests
	}{
		{"Europe/Berlin", "2026-03-29 02:00:00", "gap", "Etc/GMT-1"},
		{"Europe/Berlin", "2026-03-29 02:59:59.999999", "gap", "Etc/GMT-1"},
		{"Europe/Berlin", "2026-03-29 03:00:00", "2026-03-29T01:00:00Z", ""},
		{"Europe/Berlin", "2026-10-25 02:00:00", "twice", "Etc/GMT-1"},
		{"Europe/Berlin", "2026-10-25 02:59:59", "twice", "Etc/GMT-1"},
		{"Europe/Berlin", "2026-10-25 01:59:59", "2026-10-24T23:59:59Z", ""},
		{"Europe/Berlin", "2026-10-25 03:00:00", "2026-10-25T02:00:00Z", ""},
		{"America/New_York", "2026-11-01 01:30:00", "twice", "Etc/GMT+5"},
		{"Europe/Dublin", "2026-10-25 01:30:00", "twice", "UTC"},
		{"Australia/Lord_Howe", "2026-10-04 02:15:00", "gap", ""},
		{"Australia/Lord_Howe", "2026-04-05 01:45:00", "twice", ""},
		{"Pacific/Apia", "2011-12-30 12:00:00", "gap", ""},
		{"Asia/Kolkata", "2026-03-29 02:30:00", "2026-03-28T21:00:00Z", ""},
		{"UTC", "2026-03-29 02:30:00", "2026-03-29T02:30:00Z", ""},
	}
	for _, tc := range tests {
		loc := load(tc.zone)
		tt, ok := parseTextTime(tc.wall)
		if !ok {
			t.Fatalf("%s does not parse", tc.wall)
		}
		inst, issue := tt.instant(loc)
		switch {
		case tc.want == "gap" || tc.want == "twice":
			if issue == nil || issue.gap != (tc.want == "gap") {
				t.Errorf("%s in %s: issue %+v (instant %s), want %s", tc.wall, tc.zone, issue, inst.UTC(), tc.want)
				continue
			}
			reason := localTimeReason(tc.wall, loc, issue)
			if !strings.Contains(reason, tc.zone) || !strings.Contains(reason, "offset") || !strings.Contains(reason, tc.fixed) {
				t.Errorf("%s in %s: reason %q", tc.wall, tc.zone, reason)
			}
		case issue != nil:
			t.Errorf("%s in %s: refused %+v, want %s", tc.wall, tc.zone, issue, tc.want)
		case inst.UTC().Format(time.RFC3339Nano) != tc.want:
			t.Errorf("%s in %s = %s, want %s", tc.wall, tc.zone, inst.UTC().Format(time.RFC3339Nano), tc.want)
		}
	}
}

// TestNulInALateValue: a NUL byte after the part of a file checked at its
// start is refused in the value that holds it.
func TestNulInALateValue(t *testing.T) {
	var b strings.Builder
	b.WriteString("time,device,temp\n")
	for i := 0; b.Len() < 2*sniffBytes; i++ {
		fmt.Fprintf(&b, "2026-01-05T10:%02d:%02dZ,d%d,1.5\n", i/60%60, i%60, i%3)
	}
	b.WriteString("2026-01-05T11:00:00Z,d\x001,1.5\n")
	for _, par := range []int{1, 2} {
		_, err := decode(t, "gw/nul.csv", []byte(b.String()), DecodeOptions{Target: tableTarget(t), TimeColumn: "time", Parallelism: par, ChunkBytes: 4096})
		if fe := mustFileError(t, err); fe.Column != "device" || !strings.Contains(fe.Reason, "NUL byte at byte offset 1") || fe.Line == 0 {
			t.Fatalf("parallelism %d: %v", par, err)
		}
	}
}

// TestTimeRangeEverySource: the time column refuses years outside
// 1900-2199 whatever the source type, with the same words.
func TestTimeRangeEverySource(t *testing.T) {
	mem := memory.NewGoAllocator()
	old := time.Date(1800, 1, 1, 0, 0, 0, 0, time.UTC)
	parquetOf := func(dt arrow.DataType, v int64) []byte {
		sc := arrow.NewSchema([]arrow.Field{{Name: "time", Type: dt}, {Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
		b := array.NewRecordBuilder(mem, sc)
		defer b.Release()
		switch fb := b.Field(0).(type) {
		case *array.TimestampBuilder:
			fb.Append(arrow.Timestamp(v))
		case *array.Int64Builder:
			fb.Append(v)
		}
		b.Field(1).(*array.Float64Builder).Append(1)
		rec := b.NewRecordBatch()
		defer rec.Release()
		return writeParquet(t, rec)
	}
	for _, tc := range []struct {
		name, key string
		data      []byte
		unit      string
	}{
		{"text", "gw/t.csv", []byte("time,v\n1800-01-01T00:00:00Z,1\n"), ""},
		{"text epoch", "gw/e.csv", []byte(fmt.Sprintf("time,v\n%d,1\n", old.Unix())), "s"},
		{"parquet timestamp of the table's type", "gw/us.parquet", parquetOf(&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, old.UnixMicro()), ""},
		{"parquet milliseconds", "gw/ms.parquet", parquetOf(arrow.FixedWidthTypes.Timestamp_ms, old.UnixMilli()), ""},
		{"parquet epoch", "gw/i.parquet", parquetOf(arrow.PrimitiveTypes.Int64, old.Unix()), "s"},
	} {
		for _, target := range []*arrow.Schema{timeOnlyTarget(t), nil} {
			_, err := decode(t, tc.key, tc.data, DecodeOptions{Target: target, TimeColumn: "time", TimeUnit: tc.unit})
			if fe := mustFileError(t, err); fe.Row != 1 || fe.Column != "time" || !strings.Contains(fe.Reason, "time in year 1800 is outside the accepted years 1900-2199") {
				t.Errorf("%s (target %v): %v", tc.name, target != nil, err)
			}
		}
	}
}

// TestFilesWithoutRows: into a table, a header-only CSV and a zero-row
// Parquet file decode to 0 rows; without a table they cannot create one
// (ErrNoRows), unless the header lacks a named time column.
func TestFilesWithoutRows(t *testing.T) {
	mem := memory.NewGoAllocator()
	sc := arrow.NewSchema([]arrow.Field{{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_us}, {Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	rec := b.NewRecordBatch()
	b.Release()
	pq := writeParquet(t, rec)
	rec.Release()
	for _, f := range []struct {
		key  string
		data []byte
	}{{"gw/h.csv", []byte("time,v\n")}, {"gw/h.csv.gz", gz(t, "\ufefftime,v\r\n")}, {"gw/z.parquet", pq}} {
		d, err := decode(t, f.key, f.data, DecodeOptions{Target: timeOnlyTarget(t), TimeColumn: "time"})
		if err != nil || d.Rows != 0 || len(d.Records) != 0 {
			t.Errorf("%s into a table: %+v, %v; want 0 rows", f.key, d, err)
		}
		if _, err := decode(t, f.key, f.data, DecodeOptions{}); !errors.Is(err, ErrNoRows) {
			t.Errorf("%s creating a table: %v, want ErrNoRows", f.key, err)
		}
	}
	if _, err := decode(t, "gw/h.csv", []byte("when,v\n"), DecodeOptions{TimeColumn: "time"}); errors.Is(err, ErrNoRows) || !strings.Contains(fmt.Sprint(err), "time column is not in the file") {
		t.Errorf("a header without the named time column: %v", err)
	}
}

func TestFileErrorLines(t *testing.T) {
	for _, tc := range []struct {
		e    FileError
		want string
	}{
		{FileError{Key: "k", Row: 12, Line: 14, Column: "time", Reason: "bad"}, `k: row 12 (line 14), column "time": bad`},
		{FileError{Key: "k", Line: 1, Reason: "bad"}, `k: line 1: bad`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestFastDecimalMatchesStrconv: the fast path of parseFloatText gives
// the double strconv gives, bit for bit, on random decimals it takes.
func TestFastDecimalMatchesStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	taken := 0
	for range 200_000 {
		mant := r.Uint64N(1<<53 + 1)
		if r.IntN(2) == 0 {
			mant = r.Uint64N(100_000)
		}
		s := strconv.FormatUint(mant, 10)
		if f := r.IntN(24); f > 0 {
			s = strings.Repeat("0", max(0, f-len(s)+1)) + s
			s = s[:len(s)-f] + "." + s[len(s)-f:]
		}
		switch r.IntN(3) {
		case 0:
			s = "-" + s
		case 1:
			s = "+" + s
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		got, ok := fastDecimal(s)
		if !ok {
			continue
		}
		taken++
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("fastDecimal(%q) = %v, strconv says %v", s, got, want)
		}
	}
	if taken < 100_000 {
		t.Fatalf("the fast path took only %d values", taken)
	}
}

// TestDecimalText: text goes into a decimal column exactly, or is refused.
func TestDecimalText(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "price", Type: iceberg.DecimalTypeOf(9, 2)},
	)
	for _, tc := range []struct{ in, want, problem string }{
		{"12.34", "12.34", ""},
		{" -0.5 ", "-0.5", ""},
		{"1.2e1", "12", ""},
		{"1234567.89", "1234567.89", ""},
		{"12.345", "", `"12.345" has more than 2 digits after the point: it needs scale 3 and would be rounded; a decimal column's scale never changes, not even with --evolve widen`},
		{"0.12345", "", "it needs scale 5"},
		{"1.2e-3", "", "it needs scale 4"},
		{"1.2345e1", "", "more than 2 digits after the point"},
		{"1e-400", "", "more than 2 digits after the point"},
		{"12345678.9", "", "more than 9 digits"},
		{"0x10", "", "hexadecimal"},
		{"1_000", "", "digit separators"},
		{"NaN", "", `cannot parse "NaN"`},
		{"1e99999999999", "", "cannot parse"},
	} {
		d, err := decode(t, "gw/p.csv", []byte("time,price\n2026-01-05T10:00:00Z,"+tc.in+"\n"), DecodeOptions{Target: target, TimeColumn: "time"})
		if tc.problem != "" {
			if fe := mustFileError(t, err); fe.Column != "price" || !strings.Contains(fe.Reason, tc.problem) ||
				(strings.Contains(tc.problem, "after the point") && strings.Contains(fe.Reason, "decimal(")) {
				t.Errorf("%q: %v, want %q", tc.in, err, tc.problem)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := rows(t, d)[0][1]; got != tc.want {
			t.Errorf("%q = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestHalfFloatWidening: every IEEE 754 binary16 value widens to its own
// value. The positive values, in the order of their bits, step by 2^-24
// through the subnormals and the first normals (no gap at the boundary),
// the step doubling with each exponent after; a few are checked by value
// (IEEE 754-2019 section 3.4).
func TestHalfFloatWidening(t *testing.T) {
	for bits, want := range map[uint16]float64{
		0x0001: 5.9604644775390625e-08, // 2^-24
		0x03ff: 6.097555160522461e-05,  // 1023 * 2^-24
		0x0400: 6.103515625e-05,        // 2^-14
		0x3c00: 1,
		0xc000: -2,
		0x7bff: 65504,
		0x8001: -5.9604644775390625e-08,
	} {
		if got := halfToFloat64(bits); got != want {
			t.Errorf("%#04x = %g, want %g", bits, got, want)
		}
	}
	prev := 0.0
	for bits := uint16(1); bits < 0x7c00; bits++ {
		v := halfToFloat64(bits)
		step := math.Ldexp(1, max(int((bits-1)>>10), 1)-25) // the step of the values below
		if v-prev != step {
			t.Fatalf("%#04x = %g: %g after %#04x, want a step of %g", bits, v, v-prev, bits-1, step)
		}
		if n := halfToFloat64(bits | 0x8000); n != -v {
			t.Fatalf("%#04x = %g, want %g", bits|0x8000, n, -v)
		}
		prev = v
	}
	if !math.IsInf(halfToFloat64(0x7c00), 1) || !math.IsInf(halfToFloat64(0xfc00), -1) || !math.IsNaN(halfToFloat64(0x7e01)) || !math.Signbit(halfToFloat64(0x8000)) {
		t.Error("infinities, NaN or -0 widened wrongly")
	}
}

// TestFastDecimalTakesOnlyDecimals: on short random text of digits, signs,
// points and exponent letters, the fast path takes only what the full
// rules load, with strconv's double.
func TestFastDecimalTakesOnlyDecimals(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "0123456789012345678901234567890123456789..+-eE_x "
	taken := 0
	for range 300_000 {
		b := make([]byte, r.IntN(22))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		s := string(b)
		got, ok := fastDecimal(s)
		if !ok {
			continue
		}
		taken++
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("fastDecimal(%q) = %v, strconv says %v, %v", s, got, want, err)
		}
	}
	if taken < 1_000 {
		t.Fatalf("the fast path took only %d values", taken)
	}
}
