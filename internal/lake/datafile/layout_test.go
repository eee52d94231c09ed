package datafile

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// layoutSchema is a table's Arrow schema: a time, a series key, a value.
var layoutSchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "device", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// TestTimeColumnDictionary: the time column has a dictionary only in the
// writer properties of a file whose times repeat, unless the table's
// write.parquet.dict-encoding-enabled.column.<name> says otherwise; other
// columns keep their dictionaries.
func TestTimeColumnDictionary(t *testing.T) {
	for _, c := range []struct {
		props      iceberg.Properties
		repeated   bool
		time, dict bool
	}{
		{nil, false, false, true},
		{nil, true, true, true},
		{iceberg.Properties{propDictColumnPrefix + "time": "true"}, false, true, true},
		{iceberg.Properties{propDictColumnPrefix + "time": "false"}, true, false, true},
		{iceberg.Properties{propDictEnabled: "false"}, true, false, false},
	} {
		wp := parquet.NewWriterProperties(parquetWriterProperties(c.props, layoutSchema, 10, "time", c.repeated)...)
		if got, dev := wp.DictionaryEnabledFor("time"), wp.DictionaryEnabledFor("device"); got != c.time || dev != c.dict {
			t.Errorf("%v, repeated times %v: dictionary on time %v, on device %v; want %v and %v", c.props, c.repeated, got, dev, c.time, c.dict)
		}
	}
}

// TestTimeDictionaryPays: the time column has a dictionary when the times
// of a file's first row group's worth repeat enough (timeDictionaryPays);
// internal/lake's TestTimeDictionaryForShortSeries checks a table's file.
func TestTimeDictionaryPays(t *testing.T) {
	for _, c := range []struct {
		times    []int64
		rowGroup int64
		want     bool
	}{
		{[]int64{1, 1, 1, 1, 2, 2, 2, 2}, 100, true},
		{[]int64{1, 1, 1, 2, 2, 2}, 100, false},
		{[]int64{1, 1, 1, 1, 2, 3, 4, 5}, 4, true}, // the first row group's worth
		{nil, 100, false},
	} {
		tb := array.NewTimestampBuilder(memory.DefaultAllocator, &arrow.TimestampType{Unit: arrow.Microsecond})
		for _, v := range c.times {
			tb.Append(arrow.Timestamp(v))
		}
		arr := tb.NewTimestampArray()
		if got := timeDictionaryPays(arr, c.rowGroup); got != c.want {
			t.Errorf("times %v, row groups of %d: dictionary %v, want %v", c.times, c.rowGroup, got, c.want)
		}
		arr.Release()
		tb.Release()
	}
}

// TestParquetCompression: codec names in any case, levels within the
// codec's range; what no data file can be written with is refused, naming
// the property (a gzip level of 10 made every write panic, an unknown codec
// wrote uncompressed pages).
func TestParquetCompression(t *testing.T) {
	for _, tc := range []struct {
		codec, level string // "" unset
		want         compress.Compression
		wantLevel    int
		refused      string
	}{
		{"", "", compress.Codecs.Zstd, table.ParquetCompressionLevelDefault, ""},
		{"zstd", "3", compress.Codecs.Zstd, 3, ""},
		{"ZSTD", "", compress.Codecs.Zstd, table.ParquetCompressionLevelDefault, ""},
		{"Brotli", "11", compress.Codecs.Brotli, 11, ""},
		{"gzip", "-1", compress.Codecs.Gzip, -1, ""},
		{"gzip", "9", compress.Codecs.Gzip, 9, ""},
		{"gzip", "-3", compress.Codecs.Gzip, -3, ""},
		{"brotli", "-1", compress.Codecs.Brotli, -1, ""},
		{"LZ4_RAW", "", compress.Codecs.Lz4Raw, table.ParquetCompressionLevelDefault, ""},
		{"lz4", "", compress.Codecs.Lz4Raw, table.ParquetCompressionLevelDefault, ""},
		{"snappy", "7", compress.Codecs.Snappy, 7, ""},
		{"uncompressed", "", compress.Codecs.Uncompressed, table.ParquetCompressionLevelDefault, ""},
		{"gzip", "10", 0, 0, `write.parquet.compression-level="10": expected a gzip level from 1 to 9`},
		{"gzip", "-5", 0, 0, `write.parquet.compression-level="-5": expected a gzip level`},
		{"brotli", "12", 0, 0, `write.parquet.compression-level="12": expected a brotli level from 0 to 11`},
		{"zstd", "23", 0, 0, `write.parquet.compression-level="23": expected a zstd level of at most 22`},
		{"zstd", "abc", 0, 0, `write.parquet.compression-level="abc"`},
		{"snappy", "fast", 0, 0, `write.parquet.compression-level="fast": expected a whole number`},
		{"brotly", "", 0, 0, `write.parquet.compression-codec="brotly": expected zstd, snappy, gzip, brotli, lz4 or uncompressed`},
		{"lzo", "", 0, 0, `write.parquet.compression-codec="lzo": expected`},
	} {
		props := iceberg.Properties{}
		if tc.codec != "" {
			props[table.ParquetCompressionKey] = tc.codec
		}
		if tc.level != "" {
			props[table.ParquetCompressionLevelKey] = tc.level
		}
		codec, level, err := ParquetCompression(props)
		switch {
		case tc.refused != "":
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Errorf("%q level %q: %v, want %q", tc.codec, tc.level, err, tc.refused)
			}
			// Nor does a layout take it: a writer refuses it before it writes.
			meta, merr := table.NewMetadata(iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true}),
				iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file:///warehouse/ns/t", iceberg.Properties(props))
			if merr != nil {
				t.Fatal(merr)
			}
			if _, lerr := NewLayout(meta, nil, Order{TimeColumn: "time"}, iceberg.DayTransform{}); lerr == nil {
				t.Errorf("%q level %q: NewLayout took it", tc.codec, tc.level)
			}
		case err != nil || codec != tc.want || level != tc.wantLevel:
			t.Errorf("%q level %q: %v %d %v, want %v %d", tc.codec, tc.level, codec, level, err, tc.want, tc.wantLevel)
		}
	}
}

// TestCanonicalCodec: what tables alter stores, which iceberg-go's writer
// (lower case only) reads too.
func TestCanonicalCodec(t *testing.T) {
	for in, want := range map[string]string{"ZSTD": "zstd", "Brotli": "brotli", "LZ4_RAW": "lz4", "lz4raw": "lz4", "gzip": "gzip", "Uncompressed": "uncompressed", "lzo": "lzo"} {
		if got := CanonicalCodec(in); got != want {
			t.Errorf("CanonicalCodec(%q) = %q, want %q", in, got, want)
		}
	}
}
