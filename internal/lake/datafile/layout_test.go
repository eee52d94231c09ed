package datafile

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/iceberg-go"
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
