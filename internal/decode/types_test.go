package decode

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
)

// rawColumn is one optional column of a Parquet file written at the
// physical level: its node (physical and logical type) and its values, nil
// for a null, of the Go type of the physical type (int32, int64,
// parquet.Int96, float32, float64, bool, []byte for BYTE_ARRAY and
// FIXED_LEN_BYTE_ARRAY).
type rawColumn struct {
	node   *schema.PrimitiveNode
	values []any
}

// rawNode is a node of the column "v" or panics.
func rawNode(t *testing.T, logical schema.LogicalType, physical parquet.Type, typeLen int) *schema.PrimitiveNode {
	t.Helper()
	n, err := schema.NewPrimitiveNodeLogical("v", parquet.Repetitions.Optional, logical, physical, typeLen, -1)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rawParquet writes a file of a required "time" column (INT64
// TIMESTAMP(MICROS, UTC), one second apart from 2026-01-05T10:00:00Z) and
// the column v, with the low-level writer, dictionary-encoded when dict
// is set: the bytes are those the Parquet format specification describes,
// whatever an Arrow writer would make of an Arrow type.
func rawParquet(t *testing.T, v rawColumn, dict bool) []byte {
	t.Helper()
	tn, err := schema.NewPrimitiveNodeLogical("time", parquet.Repetitions.Required,
		schema.NewTimestampLogicalType(true, schema.TimeUnitMicros), parquet.Types.Int64, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{tn, v.node}, -1)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w := file.NewParquetWriter(&b, root, file.WithWriterProps(parquet.NewWriterProperties(parquet.WithDictionaryDefault(dict))))
	rg := w.AppendRowGroup()
	cw, err := rg.NextColumn()
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC).UnixMicro()
	times := make([]int64, len(v.values))
	for i := range times {
		times[i] = base + int64(i)*1e6
	}
	if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(times, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	if cw, err = rg.NextColumn(); err != nil {
		t.Fatal(err)
	}
	def := make([]int16, len(v.values))
	for i, x := range v.values {
		if x != nil {
			def[i] = 1
		}
	}
	switch cw := cw.(type) {
	case *file.Int32ColumnChunkWriter:
		_, err = cw.WriteBatch(rawValues[int32](v.values), def, nil)
	case *file.Int64ColumnChunkWriter:
		_, err = cw.WriteBatch(rawValues[int64](v.values), def, nil)
	case *file.Int96ColumnChunkWriter:
		_, err = cw.WriteBatch(rawValues[parquet.Int96](v.values), def, nil)
	case *file.Float32ColumnChunkWriter:
		_, err = cw.WriteBatch(rawValues[float32](v.values), def, nil)
	case *file.Float64ColumnChunkWriter:
		_, err = cw.WriteBatch(rawValues[float64](v.values), def, nil)
	case *file.BooleanColumnChunkWriter:
		_, err = cw.WriteBatch(rawValues[bool](v.values), def, nil)
	case *file.ByteArrayColumnChunkWriter:
		var vals []parquet.ByteArray
		for _, x := range rawValues[[]byte](v.values) {
			vals = append(vals, x)
		}
		_, err = cw.WriteBatch(vals, def, nil)
	case *file.FixedLenByteArrayColumnChunkWriter:
		var vals []parquet.FixedLenByteArray
		for _, x := range rawValues[[]byte](v.values) {
			vals = append(vals, x)
		}
		_, err = cw.WriteBatch(vals, def, nil)
	default:
		t.Fatalf("no writer for %T", cw)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Close() error }{cw, rg, w} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// rawValues are the non-null values of vals, which must be of type T.
func rawValues[T any](vals []any) []T {
	var out []T
	for _, v := range vals {
		if v != nil {
			out = append(out, v.(T))
		}
	}
	return out
}

// valueText renders value i of a decoded column for comparison with values
// worked out by hand: "null"; integers and dates (days) in decimal; times
// of day in microseconds; timestamps in RFC 3339 UTC with every fraction
// digit the column holds; floats with the fewest digits that read back
// the same at the column's width; decimals as digits with the scale's
// point; strings Go-quoted (so that every byte shows); binaries in hex.
func valueText(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	switch c := a.(type) {
	case *array.Int32:
		return strconv.FormatInt(int64(c.Value(i)), 10)
	case *array.Int64:
		return strconv.FormatInt(c.Value(i), 10)
	case *array.Date32:
		return strconv.FormatInt(int64(c.Value(i)), 10)
	case *array.Time64:
		return strconv.FormatInt(int64(c.Value(i)), 10)
	case *array.Timestamp:
		return c.Value(i).ToTime(c.DataType().(*arrow.TimestampType).Unit).UTC().Format("2006-01-02T15:04:05.999999999")
	case *array.Float32:
		return strconv.FormatFloat(float64(c.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.FormatFloat(c.Value(i), 'g', -1, 64)
	case *array.Decimal128:
		return c.Value(i).ToString(c.DataType().(*arrow.Decimal128Type).Scale)
	case *array.String:
		return strconv.Quote(c.Value(i))
	case *array.Binary:
		return hex.EncodeToString(c.Value(i))
	case *array.FixedSizeBinary:
		return hex.EncodeToString(c.Value(i))
	case *array.Boolean:
		return strconv.FormatBool(c.Value(i))
	}
	return a.ValueStr(i)
}

// columnText renders column name of every batch of d (valueText).
func columnText(t *testing.T, d *Decoded, name string) []string {
	t.Helper()
	idx := d.Schema.FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("no column %q in %v", name, d.Schema)
	}
	var out []string
	for _, rec := range d.Records {
		col := rec.Column(idx[0])
		for i := 0; i < col.Len(); i++ {
			out = append(out, valueText(col, i))
		}
	}
	return out
}

// half is a FLOAT16 value as its two little-endian bytes (Parquet
// LogicalTypes.md, FLOAT16: "the 2-byte little-endian IEEE 754 half").
func half(bits uint16) []byte { return []byte{byte(bits), byte(bits >> 8)} }

// twosComplement is the big-endian two's complement of v in n bytes (the
// unscaled value of a Parquet DECIMAL on FIXED_LEN_BYTE_ARRAY), or in the
// fewest bytes when n is 0 (BYTE_ARRAY: "the minimum number of bytes").
func twosComplement(t *testing.T, v *big.Int, n int) []byte {
	t.Helper()
	if n == 0 {
		for n = 1; ; n++ {
			lim := new(big.Int).Lsh(big.NewInt(1), uint(8*n-1))
			if v.Cmp(lim) < 0 && v.Cmp(new(big.Int).Neg(lim)) >= 0 {
				break
			}
		}
	}
	u := new(big.Int).Set(v)
	if v.Sign() < 0 {
		u.Add(u, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	b := u.Bytes()
	if len(b) > n {
		t.Fatalf("%v does not fit %d bytes", v, n)
	}
	return append(make([]byte, n-len(b)), b...)
}

func bigInt(t *testing.T, s string) *big.Int {
	t.Helper()
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad integer %q", s)
	}
	return v
}

// int96Of is the INT96 of Impala, Hive and Spark: 8 bytes of nanoseconds
// into the day (little-endian), then 4 bytes of the Julian day number
// (2440588 is 1970-01-01).
func int96Of(julianDay uint32, nanosOfDay uint64) parquet.Int96 {
	var v parquet.Int96
	binary.LittleEndian.PutUint64(v[:8], nanosOfDay)
	binary.LittleEndian.PutUint32(v[8:], julianDay)
	return v
}

// TestParquetTypesAtTheirExtremes writes every Parquet type the decoder
// accepts at its extremes, byte for byte as the Parquet format
// specification (LogicalTypes.md, and Encodings.md for INT96) lays it
// out, plain and dictionary-encoded, and decodes it into a new table: the
// table type and every value are worked out by hand from the
// specification (and the Iceberg type the column becomes), not taken from
// the decoder. A value a table type cannot hold refuses the file, naming
// the row, the column and the value.
func TestParquetTypesAtTheirExtremes(t *testing.T) {
	i32 := func(logical schema.LogicalType) *schema.PrimitiveNode {
		return rawNode(t, logical, parquet.Types.Int32, -1)
	}
	i64 := func(logical schema.LogicalType) *schema.PrimitiveNode {
		return rawNode(t, logical, parquet.Types.Int64, -1)
	}
	const maxU32 = math.MaxUint32
	nines38 := strings.Repeat("9", 38)
	tests := []struct {
		name    string
		col     rawColumn
		typ     string   // the table type of v
		want    []string // valueText of every row
		refused []string // instead: words of the reason, then the value (row 2, column v)
	}{
		{"INT(8, signed)", rawColumn{i32(schema.NewIntLogicalType(8, true)), []any{int32(-128), int32(127), nil}},
			"int", []string{"-128", "127", "null"}, nil},
		{"INT(16, signed)", rawColumn{i32(schema.NewIntLogicalType(16, true)), []any{int32(-32768), int32(32767)}},
			"int", []string{"-32768", "32767"}, nil},
		{"INT32", rawColumn{i32(schema.NoLogicalType{}), []any{int32(math.MinInt32), int32(math.MaxInt32)}},
			"int", []string{"-2147483648", "2147483647"}, nil},
		{"INT64", rawColumn{i64(schema.NoLogicalType{}), []any{int64(math.MinInt64), int64(math.MaxInt64)}},
			"long", []string{"-9223372036854775808", "9223372036854775807"}, nil},
		// Unsigned integers are stored in the signed physical type of
		// their width, the bits read as unsigned: UINT_32 4294967295 is
		// INT32 -1.
		{"INT(8, unsigned)", rawColumn{i32(schema.NewIntLogicalType(8, false)), []any{int32(0), int32(255)}},
			"int", []string{"0", "255"}, nil},
		{"INT(16, unsigned)", rawColumn{i32(schema.NewIntLogicalType(16, false)), []any{int32(0), int32(65535)}},
			"int", []string{"0", "65535"}, nil},
		{"INT(32, unsigned)", rawColumn{i32(schema.NewIntLogicalType(32, false)), []any{int32(0), int32(-1)}},
			"long", []string{"0", strconv.Itoa(maxU32)}, nil},
		// A value beyond the annotated width is no value of the type
		// (a reader would cut it to the width).
		{"INT(8, unsigned) beyond its width", rawColumn{i32(schema.NewIntLogicalType(8, false)), []any{int32(255), int32(256)}},
			"", nil, []string{"INT(8, false)", "0 to 255", "cut to 0", "256"}},
		{"INT(8, signed) beyond its width", rawColumn{i32(schema.NewIntLogicalType(8, true)), []any{nil, int32(-129)}},
			"", nil, []string{"INT(8, true)", "-128 to 127", "cut to 127", "-129"}},
		{"INT(16, signed) beyond its width", rawColumn{i32(schema.NewIntLogicalType(16, true)), []any{int32(-32768), int32(40000)}},
			"", nil, []string{"INT(16, true)", "-32768 to 32767", "cut to -25536", "40000"}},
		{"INT(16, unsigned) beyond its width", rawColumn{i32(schema.NewIntLogicalType(16, false)), []any{int32(1), int32(-1)}},
			"", nil, []string{"INT(16, false)", "0 to 65535", "cut to 65535", "-1"}},
		{"INT(64, unsigned) up to 2^63-1", rawColumn{i64(schema.NewIntLogicalType(64, false)), []any{int64(0), int64(math.MaxInt64)}},
			"long", []string{"0", "9223372036854775807"}, nil},
		{"INT(64, unsigned) 2^64-1", rawColumn{i64(schema.NewIntLogicalType(64, false)), []any{int64(0), int64(-1)}},
			"", nil, []string{"does not fit in long", "18446744073709551615"}},

		// FLOAT16 (IEEE 754 binary16): sign, 5 exponent bits (bias 15), 10
		// fraction bits; exponent 0 is zero or a subnormal f * 2^-24.
		{"FLOAT16", rawColumn{rawNode(t, schema.Float16LogicalType{}, parquet.Types.FixedLenByteArray, 2), []any{
			half(0x0001), // the smallest subnormal, 2^-24
			half(0x8001), // its negative
			half(0x0200), // 512 * 2^-24 = 2^-15
			half(0x03ff), // the largest subnormal, 1023 * 2^-24
			half(0x0400), // the smallest normal, 2^-14
			half(0x3555), // 1.0101010101b * 2^-2, the half nearest 1/3
			half(0x3c00), // 1
			half(0x7bff), // the largest, (2 - 2^-10) * 2^15
			half(0xfbff), // the most negative
			half(0x8000), // -0
			half(0x7c00), // +Inf
			half(0xfc00), // -Inf
			half(0x7e00), // NaN
			nil,
		}}, "float", []string{"5.9604645e-08", "-5.9604645e-08", "3.0517578e-05", "6.097555e-05", "6.1035156e-05",
			"0.33325195", "1", "65504", "-65504", "-0", "+Inf", "-Inf", "NaN", "null"}, nil},
		{"FLOAT", rawColumn{rawNode(t, schema.NoLogicalType{}, parquet.Types.Float, -1), []any{
			float32(math.SmallestNonzeroFloat32), float32(-math.MaxFloat32), float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN()),
		}}, "float", []string{"1e-45", "-3.4028235e+38", "-0", "+Inf", "NaN"}, nil},
		{"DOUBLE", rawColumn{rawNode(t, schema.NoLogicalType{}, parquet.Types.Double, -1), []any{
			math.SmallestNonzeroFloat64, math.MaxFloat64, math.Inf(-1), math.NaN(),
		}}, "double", []string{"5e-324", "1.7976931348623157e+308", "-Inf", "NaN"}, nil},

		// DECIMAL(p, s): the unscaled integer; INT32 for p <= 9, INT64
		// for p <= 18, FIXED_LEN_BYTE_ARRAY and BYTE_ARRAY big-endian
		// two's complement.
		{"DECIMAL(9, 2) on INT32", rawColumn{i32(schema.NewDecimalLogicalType(9, 2)), []any{int32(999999999), int32(-999999999), int32(0), int32(-1)}},
			"decimal(9, 2)", []string{"9999999.99", "-9999999.99", "0.00", "-0.01"}, nil},
		{"DECIMAL(1, 0) on INT32", rawColumn{i32(schema.NewDecimalLogicalType(1, 0)), []any{int32(9), int32(-9)}},
			"decimal(1, 0)", []string{"9", "-9"}, nil},
		{"DECIMAL(4, 2) on INT32 beyond its precision", rawColumn{i32(schema.NewDecimalLogicalType(4, 2)), []any{int32(9999), int32(123456)}},
			"", nil, []string{"precision 4", "1234.56"}},
		{"DECIMAL(18, 3) on INT64", rawColumn{i64(schema.NewDecimalLogicalType(18, 3)), []any{int64(999999999999999999), int64(-999999999999999999)}},
			"decimal(18, 3)", []string{"999999999999999.999", "-999999999999999.999"}, nil},
		{"DECIMAL(18, 0) on INT64 beyond its precision", rawColumn{i64(schema.NewDecimalLogicalType(18, 0)), []any{int64(1), int64(math.MaxInt64)}},
			"", nil, []string{"precision 18", "9223372036854775807"}},
		{"DECIMAL(38, 0) on FIXED_LEN_BYTE_ARRAY(16)", rawColumn{rawNode(t, schema.NewDecimalLogicalType(38, 0), parquet.Types.FixedLenByteArray, 16), []any{
			twosComplement(t, bigInt(t, nines38), 16), twosComplement(t, bigInt(t, "-"+nines38), 16), twosComplement(t, big.NewInt(-1), 16),
		}}, "decimal(38, 0)", []string{nines38, "-" + nines38, "-1"}, nil},
		{"DECIMAL(38, 0) on FIXED_LEN_BYTE_ARRAY(16) beyond its precision", rawColumn{rawNode(t, schema.NewDecimalLogicalType(38, 0), parquet.Types.FixedLenByteArray, 16), []any{
			twosComplement(t, big.NewInt(1), 16), twosComplement(t, bigInt(t, "1"+strings.Repeat("0", 38)), 16),
		}}, "", nil, []string{"precision 38", "1" + strings.Repeat("0", 38)}},
		{"DECIMAL(11, 2) on FIXED_LEN_BYTE_ARRAY(5)", rawColumn{rawNode(t, schema.NewDecimalLogicalType(11, 2), parquet.Types.FixedLenByteArray, 5), []any{
			twosComplement(t, big.NewInt(99999999999), 5), twosComplement(t, big.NewInt(-99999999999), 5), twosComplement(t, big.NewInt(-128), 5),
		}}, "decimal(11, 2)", []string{"999999999.99", "-999999999.99", "-1.28"}, nil},
		{"DECIMAL(38, 10) on BYTE_ARRAY", rawColumn{rawNode(t, schema.NewDecimalLogicalType(38, 10), parquet.Types.ByteArray, -1), []any{
			twosComplement(t, bigInt(t, nines38), 0), twosComplement(t, bigInt(t, "-"+nines38), 0),
			twosComplement(t, big.NewInt(0), 0), twosComplement(t, big.NewInt(-1), 0),
			twosComplement(t, big.NewInt(127), 0), twosComplement(t, big.NewInt(128), 0), twosComplement(t, big.NewInt(-129), 0),
			twosComplement(t, big.NewInt(math.MaxInt64), 0), twosComplement(t, bigInt(t, "-9223372036854775809"), 0),
		}}, "decimal(38, 10)", []string{
			"9999999999999999999999999999.9999999999", "-9999999999999999999999999999.9999999999",
			"0.0000000000", "-0.0000000001", "0.0000000127", "0.0000000128", "-0.0000000129",
			"922337203.6854775807", "-922337203.6854775809",
		}, nil},

		// INT96 (Impala, Hive, Spark: an instant, so timestamptz): within
		// the range of a nanosecond timestamp (which is how it is read)
		// it loads, digits below the microsecond cut as in RFC 3339 text.
		{"INT96", rawColumn{rawNode(t, schema.NoLogicalType{}, parquet.Types.Int96, -1), []any{
			int96Of(2440588, 0),                  // 1970-01-01
			int96Of(2440587, 86_399_999_999_999), // the last nanosecond before it
			int96Of(2333836, 763_145_224_192),    // 1677-09-21T00:12:43.145224192, the first nanosecond timestamp
			int96Of(2547339, 85_636_854_775_807), // 2262-04-11T23:47:16.854775807, the last
			int96Of(2415021, 0),                  // 1900-01-01
		}}, "timestamptz", []string{"1970-01-01T00:00:00", "1969-12-31T23:59:59.999999", "1677-09-21T00:12:43.145224",
			"2262-04-11T23:47:16.854775", "1900-01-01T00:00:00"}, nil},
		{"INT96 before the nanosecond range", rawColumn{rawNode(t, schema.NoLogicalType{}, parquet.Types.Int96, -1), []any{
			int96Of(2440588, 0), int96Of(2159351, 59_000_000_000), // 1200-01-01T00:00:59 (proleptic Gregorian)
		}}, "", nil, []string{"INT96", "1677-09-21", "1200-01-01T00:00:59Z"}},
		{"INT96 after the nanosecond range", rawColumn{rawNode(t, schema.NoLogicalType{}, parquet.Types.Int96, -1), []any{
			int96Of(2440588, 0), int96Of(2547340, 0), // 2262-04-12
		}}, "", nil, []string{"INT96", "2262-04-11", "2262-04-12T00:00:00Z"}},
		{"INT96 time of day past midnight", rawColumn{rawNode(t, schema.NoLogicalType{}, parquet.Types.Int96, -1), []any{
			int96Of(2440588, 0), int96Of(2440588, 86_400_000_000_000),
		}}, "", nil, []string{"INT96", "time of day", "86400000000000", ""}},

		// Timestamps of every unit, with and without a zone.
		{"TIMESTAMP(NANOS, UTC)", rawColumn{i64(schema.NewTimestampLogicalType(true, schema.TimeUnitNanos)), []any{int64(math.MinInt64), int64(math.MaxInt64), int64(-1)}},
			"timestamptz", []string{"1677-09-21T00:12:43.145224", "2262-04-11T23:47:16.854775", "1969-12-31T23:59:59.999999"}, nil},
		{"TIMESTAMP(MILLIS, local)", rawColumn{i64(schema.NewTimestampLogicalType(false, schema.TimeUnitMillis)), []any{int64(-1), int64(253402300799999)}},
			"timestamp", []string{"1969-12-31T23:59:59.999", "9999-12-31T23:59:59.999"}, nil},
		// MILLIS holds instants that microseconds (Iceberg's timestamps)
		// do not: refused with the value, as the file stores it too.
		{"TIMESTAMP(MILLIS) beyond microseconds", rawColumn{i64(schema.NewTimestampLogicalType(true, schema.TimeUnitMillis)), []any{int64(0), int64(math.MaxInt64)}},
			"", nil, []string{`timestamp "` + time.UnixMilli(math.MaxInt64).UTC().Format(time.RFC3339Nano) + `" (9223372036854775807 milliseconds since 1970-01-01) is outside the range of timestamptz, -290308-12-21T19:59:05.224192Z to 294247-01-10T04:00:54.775807Z`,
				time.UnixMilli(math.MaxInt64).UTC().Format(time.RFC3339Nano)}},
		{"TIMESTAMP(MILLIS, local) before microseconds", rawColumn{i64(schema.NewTimestampLogicalType(false, schema.TimeUnitMillis)), []any{int64(0), int64(math.MinInt64 / 10)}},
			"", nil, []string{`(-922337203685477580 milliseconds since 1970-01-01) is outside the range of timestamp,`,
				time.UnixMilli(math.MinInt64 / 10).UTC().Format(time.RFC3339Nano)}},
		{"TIMESTAMP(MICROS, UTC)", rawColumn{i64(schema.NewTimestampLogicalType(true, schema.TimeUnitMicros)), []any{int64(math.MinInt64), int64(math.MaxInt64)}},
			"timestamptz", []string{"-290308-12-21T19:59:05.224192", "294247-01-10T04:00:54.775807"}, nil},

		// DATE is days since 1970-01-01 (int32), as Iceberg's date.
		{"DATE", rawColumn{i32(schema.DateLogicalType{}), []any{int32(math.MinInt32), int32(math.MaxInt32), int32(-1)}},
			"date", []string{"-2147483648", "2147483647", "-1"}, nil},
		// TIME of every unit becomes Iceberg's time in microseconds.
		{"TIME(MILLIS)", rawColumn{i32(schema.NewTimeLogicalType(true, schema.TimeUnitMillis)), []any{int32(0), int32(86_399_999)}},
			"time", []string{"0", "86399999000"}, nil},
		{"TIME(MICROS)", rawColumn{i64(schema.NewTimeLogicalType(true, schema.TimeUnitMicros)), []any{int64(0), int64(86_399_999_999)}},
			"time", []string{"0", "86399999999"}, nil},
		{"TIME(NANOS)", rawColumn{i64(schema.NewTimeLogicalType(true, schema.TimeUnitNanos)), []any{int64(999), int64(86_399_999_999_999)}},
			"time", []string{"0", "86399999999"}, nil},

		{"TIME(MILLIS) past midnight", rawColumn{i32(schema.NewTimeLogicalType(true, schema.TimeUnitMillis)), []any{int32(0), int32(86_400_000)}},
			"", nil, []string{"time of day 24h0m0s is not within a day", "86400000 ms"}},
		{"TIME(MICROS) before midnight", rawColumn{i64(schema.NewTimeLogicalType(true, schema.TimeUnitMicros)), []any{int64(0), int64(-1)}},
			"", nil, []string{"not within a day", "-1 us"}},

		{"BOOLEAN", rawColumn{rawNode(t, schema.NoLogicalType{}, parquet.Types.Boolean, -1), []any{true, false, nil}},
			"boolean", []string{"true", "false", "null"}, nil},
		// STRING is UTF-8: every valid sequence loads as written (a NUL
		// too: it is a character in Parquet), an invalid one refuses.
		{"STRING", rawColumn{rawNode(t, schema.StringLogicalType{}, parquet.Types.ByteArray, -1), []any{
			[]byte(""), []byte("\x00"), []byte("\u007f\u0080\u07ff\u0800\uffff"), []byte("\U00010000\U0010ffff"), []byte("e\u0301"), []byte(strings.Repeat("x", 300)),
		}}, "string", []string{strconv.Quote(""), strconv.Quote("\x00"), strconv.Quote("\u007f\u0080\u07ff\u0800\uffff"),
			strconv.Quote("\U00010000\U0010ffff"), strconv.Quote("e\u0301"), strconv.Quote(strings.Repeat("x", 300))}, nil},
		{"STRING not UTF-8", rawColumn{rawNode(t, schema.StringLogicalType{}, parquet.Types.ByteArray, -1), []any{[]byte("ok"), []byte("\xf4\x90\x80\x80")}},
			"", nil, []string{"U+10FFFF", "\xf4\x90\x80\x80"}},
		{"BYTE_ARRAY", rawColumn{rawNode(t, schema.NoLogicalType{}, parquet.Types.ByteArray, -1), []any{[]byte{}, allBytes(), nil}},
			"binary", []string{"", hex.EncodeToString(allBytes()), "null"}, nil},
		{"FIXED_LEN_BYTE_ARRAY(3)", rawColumn{rawNode(t, schema.NoLogicalType{}, parquet.Types.FixedLenByteArray, 3), []any{[]byte{0, 0, 0}, []byte{0xff, 0x00, 0x80}}},
			"fixed_size_binary[3]", []string{"000000", "ff0080"}, nil}, // Iceberg's fixed[3]
	}
	for _, tc := range tests {
		for _, dict := range []bool{false, true} {
			name := tc.name
			if dict {
				name += ", dictionary-encoded"
			}
			t.Run(name, func(t *testing.T) {
				data := rawParquet(t, tc.col, dict)
				d, err := decode(t, "gw/types.parquet", data, DecodeOptions{})
				if tc.refused != nil {
					fe := mustFileError(t, err)
					value := tc.refused[len(tc.refused)-1]
					for _, w := range tc.refused[:len(tc.refused)-1] {
						if !strings.Contains(fe.Error(), w) {
							t.Errorf("reason %q does not say %q", fe, w)
						}
					}
					if fe.Row != 2 || fe.Column != "v" || (value != "" && fe.Value != value) {
						t.Errorf("error row %d column %q value %q, want row 2 column v value %q (%v)", fe.Row, fe.Column, fe.Value, value, fe)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := typeName(d.Schema.Field(1).Type); got != tc.typ {
					t.Errorf("table type %s, want %s", got, tc.typ)
				}
				if got := columnText(t, d, "v"); !equalStrings(got, tc.want) {
					t.Errorf("values\n%q\nwant\n%q", got, tc.want)
				}
				// The same file into the table it created loads the same.
				again, err := decode(t, "gw/types.parquet", data, DecodeOptions{Target: d.Schema, TimeColumn: "time"})
				if err != nil {
					t.Fatal(err)
				}
				if got := columnText(t, again, "v"); !equalStrings(got, tc.want) {
					t.Errorf("into its table: values\n%q\nwant\n%q", got, tc.want)
				}
			})
		}
	}
}

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestParquetDecimalIntoWiderTable: a decimal column of a file goes into
// a table column of the same scale and a precision at least as wide (an
// Iceberg type promotion), value for value; another scale is refused.
func TestParquetDecimalIntoWiderTable(t *testing.T) {
	col := rawColumn{rawNode(t, schema.NewDecimalLogicalType(9, 2), parquet.Types.Int32, -1), []any{int32(999999999), int32(-1), nil}}
	data := rawParquet(t, col, false)
	for _, tc := range []struct {
		table   iceberg.DecimalType
		want    []string
		refused string
	}{
		{iceberg.DecimalTypeOf(18, 2), []string{"9999999.99", "-0.01", "null"}, ""},
		{iceberg.DecimalTypeOf(9, 2), []string{"9999999.99", "-0.01", "null"}, ""},
		{iceberg.DecimalTypeOf(8, 2), nil, "cannot convert file type decimal(9, 2) to table type decimal(8, 2)"},
		{iceberg.DecimalTypeOf(18, 3), nil, "cannot convert file type decimal(9, 2) to table type decimal(18, 3)"},
	} {
		target := arrowTarget(t,
			iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
			iceberg.NestedField{ID: 2, Name: "v", Type: tc.table})
		d, err := decode(t, "gw/d.parquet", data, DecodeOptions{Target: target, TimeColumn: "time"})
		if tc.refused != "" {
			if fe := mustFileError(t, err); !strings.Contains(fe.Error(), tc.refused) || fe.Column != "v" {
				t.Errorf("%s: %v, want %q", tc.table, err, tc.refused)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.table, err)
		}
		if got := columnText(t, d, "v"); !equalStrings(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.table, got, tc.want)
		}
	}
}

// TestParquetReadErrorNamesTheColumn: data arrow-go's reader cannot read
// refuses the file naming the column and the rows it failed in, not only
// the library's words.
func TestParquetReadErrorNamesTheColumn(t *testing.T) {
	// 17 bytes for a DECIMAL(38, 0): more than its 16 (arrow-go reads at
	// most 16).
	col := rawColumn{rawNode(t, schema.NewDecimalLogicalType(38, 0), parquet.Types.ByteArray, -1), []any{[]byte{1}, make([]byte, 17)}}
	_, err := decode(t, "gw/e.parquet", rawParquet(t, col, false), DecodeOptions{})
	if fe := mustFileError(t, err); fe.Column != "v" || !strings.Contains(fe.Reason, "rows 1 to 2") || fe.Err == nil {
		t.Errorf("%v (column %q), want column v and rows 1 to 2", err, fe.Column)
	}
}

// TestParquetLargeAndDictionaryStrings: Arrow writers store the Arrow type
// of a column with the file (ARROW:schema), and arrow-go reads large
// strings and binaries and dictionaries of strings and binaries back as
// such. Each becomes a string or binary column holding every value as
// written (an empty value, one of 4-byte characters, one longer than a
// page's run of short values); a value that is not UTF-8 refuses the file
// wherever it sits (in a dictionary: the row that uses it).
func TestParquetLargeAndDictionaryStrings(t *testing.T) {
	mem := memory.NewGoAllocator()
	long := strings.Repeat("ab", 300)
	values := []string{"", "😀\U0010ffff", long, "d1", ""}
	wantText := []string{strconv.Quote(""), strconv.Quote("😀\U0010ffff"), strconv.Quote(long), strconv.Quote("d1"), "null"}
	wantHex := []string{"", hex.EncodeToString([]byte("😀\U0010ffff")), hex.EncodeToString([]byte(long)), hex.EncodeToString([]byte("d1")), "null"}
	dict := func(index, value arrow.DataType) arrow.DataType {
		return &arrow.DictionaryType{IndexType: index, ValueType: value}
	}
	for _, tc := range []struct {
		dt   arrow.DataType
		typ  string
		want []string
	}{
		{arrow.BinaryTypes.LargeString, "string", wantText},
		{arrow.BinaryTypes.LargeBinary, "binary", wantHex},
		{dict(arrow.PrimitiveTypes.Int8, arrow.BinaryTypes.String), "string", wantText},
		{dict(arrow.PrimitiveTypes.Int16, arrow.BinaryTypes.LargeString), "string", wantText},
		{dict(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.Binary), "binary", wantHex},
		{dict(arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String), "string", wantText},
	} {
		for _, bad := range []bool{false, true} {
			vals := values
			if bad {
				vals = append(slices.Clone(values[:3]), "ok\xed\xa0\x80", "")
			}
			col := stringColumn(t, mem, tc.dt, vals)
			sc := arrow.NewSchema([]arrow.Field{
				{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
				{Name: "v", Type: tc.dt, Nullable: true},
			}, nil)
			tb := array.NewTimestampBuilder(mem, sc.Field(0).Type.(*arrow.TimestampType))
			for i := range vals {
				tb.Append(arrow.Timestamp(time.Date(2026, 1, 5, 10, 0, i, 0, time.UTC).UnixMicro()))
			}
			times := tb.NewArray()
			rec := array.NewRecordBatch(sc, []arrow.Array{times, col}, int64(len(vals)))
			data := writeParquet(t, rec)
			rec.Release()
			times.Release()
			col.Release()
			tb.Release()
			d, err := decode(t, "gw/s.parquet", data, DecodeOptions{})
			switch {
			case bad && tc.typ == "binary":
				if err != nil {
					t.Errorf("%s: %v (a binary holds any bytes)", tc.dt, err)
				}
			case bad:
				if fe := mustFileError(t, err); fe.Row != 4 || fe.Column != "v" || !strings.Contains(fe.Reason, "surrogate U+D800") {
					t.Errorf("%s: %v, want row 4 column v refused for the surrogate", tc.dt, err)
				}
			case err != nil:
				t.Fatalf("%s: %v", tc.dt, err)
			default:
				if got := typeName(d.Schema.Field(1).Type); got != tc.typ {
					t.Errorf("%s: table type %s, want %s", tc.dt, got, tc.typ)
				}
				if got := columnText(t, d, "v"); !equalStrings(got, tc.want) {
					t.Errorf("%s: values\n%q\nwant\n%q", tc.dt, got, tc.want)
				}
			}
		}
	}
}

// stringColumn is a column of type dt (a string, binary or dictionary of
// them) of vals, the last null (in a dictionary: its index).
func stringColumn(t *testing.T, mem memory.Allocator, dt arrow.DataType, vals []string) arrow.Array {
	t.Helper()
	d, isDict := dt.(*arrow.DictionaryType)
	valueType := dt
	if isDict {
		valueType = d.ValueType
	}
	b := array.NewBuilder(mem, valueType)
	defer b.Release()
	for i, v := range vals {
		if i == len(vals)-1 && !isDict {
			b.AppendNull()
			continue
		}
		switch b := b.(type) {
		case *array.StringBuilder:
			b.Append(v)
		case *array.LargeStringBuilder:
			b.Append(v)
		case *array.BinaryBuilder:
			b.Append([]byte(v))
		default:
			t.Fatalf("no builder for %s", valueType)
		}
	}
	values := b.NewArray()
	if !isDict {
		return values
	}
	defer values.Release()
	ib := array.NewBuilder(mem, d.IndexType)
	defer ib.Release()
	for i := range vals {
		if i == len(vals)-1 {
			ib.AppendNull()
			continue
		}
		if err := ib.AppendValueFromString(strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	idx := ib.NewArray()
	defer idx.Release()
	return array.NewDictionaryArray(dt, idx, values)
}

// TestViewStringsAndBinaries: string and binary views (which arrow-go's
// Parquet reader does not make, but its other readers do) convert into
// string and binary columns value for value, short values (kept in the
// view itself, up to 12 bytes) and long ones alike, and a view that is not
// UTF-8 is refused.
func TestViewStringsAndBinaries(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ro := &resolved{key: "gw/v.parquet", mem: mem}
	for _, tc := range []struct {
		src, dst arrow.DataType
		vals     []string
		want     []string // valueText, or the words of the refusal of row 3
	}{
		{arrow.BinaryTypes.StringView, arrow.BinaryTypes.String, []string{"twelve bytes", "thirteen bytes", "", "😀"},
			[]string{`"twelve bytes"`, `"thirteen bytes"`, `""`, `"😀"`}},
		{arrow.BinaryTypes.StringView, arrow.BinaryTypes.String, []string{"ok", "", "a long value, \xc0\x80 in it"},
			[]string{"modified UTF-8", "byte offset 14"}},
		{arrow.BinaryTypes.BinaryView, arrow.BinaryTypes.Binary, []string{"\x00\xff", "a long value of bytes \xc0\x80", ""},
			[]string{"00ff", hex.EncodeToString([]byte("a long value of bytes \xc0\x80")), ""}},
	} {
		if nt, err := normaliseType(tc.src); err != nil || !arrow.TypeEqual(nt, tc.dst) {
			t.Errorf("a new table's column of %s is %v (%v), want %s", tc.src, nt, err, tc.dst)
		}
		b := array.NewBuilder(mem, tc.src)
		for _, v := range tc.vals {
			switch b := b.(type) {
			case *array.StringViewBuilder:
				b.Append(v)
			case *array.BinaryViewBuilder:
				b.Append([]byte(v))
			}
		}
		arr := b.NewArray()
		b.Release()
		conv, err := makeConverter(ro, "v", tc.src, arrow.Field{Name: "v", Type: tc.dst, Nullable: true}, false)
		if err != nil {
			t.Fatal(err)
		}
		out, err := conv(arr, 0)
		arr.Release()
		if err != nil {
			fe := mustFileError(t, err)
			for _, w := range tc.want {
				if !strings.Contains(fe.Reason, w) || fe.Row != 3 {
					t.Errorf("%s: %v, want row 3 refused saying %q", tc.src, err, w)
				}
			}
			continue
		}
		var got []string
		for i := 0; i < out.Len(); i++ {
			got = append(got, valueText(out, i))
		}
		out.Release()
		if !equalStrings(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.src, got, tc.want)
		}
	}
}

// TestParquetProblemNamesThePageLimit: a Parquet file arrow-go refuses for
// a page over its limit is refused as unreadable, saying what to do.
func TestParquetProblemNamesThePageLimit(t *testing.T) {
	cause := errors.New("parquet: compressed page size 108005072 exceeds configured limit 67108864")
	err := parquetProblem("gw/huge.parquet", "payload", "cannot read parquet data", cause)
	if !IsUnreadable(err) || !errors.Is(err, cause) ||
		!strings.Contains(err.Error(), "write the file again with smaller pages") {
		t.Fatalf("%v: unreadable %v, want the page limit named", err, IsUnreadable(err))
	}
	if IsUnreadable(&FileError{Key: "gw/a.csv", Reason: "a value"}) {
		t.Fatal("a value's refusal is unreadable")
	}
}
