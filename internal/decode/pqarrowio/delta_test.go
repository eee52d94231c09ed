package pqarrowio_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/timelake/timelake/internal/decode/arrowpq"
	"github.com/timelake/timelake/internal/decode/pqarrowio"
	"github.com/timelake/timelake/internal/decode/pqlite"
)

// TestPqliteRefusesDeltaWidths: a DELTA_BINARY_PACKED page of INT32 values
// whose mini-block claims a bit width past 32, which parquet-go's decoder
// reads and arrow-go's refuses, is refused by pqlite as by pqarrow.
func TestPqliteRefusesDeltaWidths(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "v", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(
		`[{"time": 1772366400000000, "v": 0}, {"time": 1772366401000000, "v": 1}, {"time": 1772366402000000, "v": 0}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(
		parquet.WithDictionaryFor("v", false), parquet.WithEncodingFor("v", parquet.Encodings.DeltaBinaryPacked)),
		pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The page: a block of 128 values in 4 mini-blocks, 3 values, the
	// first 0, a minimum delta of -1, then the first mini-block's width.
	header := []byte{0x80, 0x01, 0x04, 0x03, 0x00, 0x01}
	at := bytes.Index(buf.Bytes(), header)
	if at < 0 || bytes.Count(buf.Bytes(), header) != 1 {
		t.Fatalf("the DELTA page's header is not in the file once")
	}
	for _, width := range []byte{2, 33, 40, 64, 200} {
		data := bytes.Clone(buf.Bytes())
		data[at+len(header)] = width
		c := parquetCase{name: "delta.parquet", data: data}
		withPqarrow := check(c, arrowpq.Format{Reader: pqarrowio.Reader{}})
		withPqlite := check(c, pqlite.Format{})
		if (withPqarrow == nil) != (withPqlite == nil) {
			t.Errorf("width %d: pqarrow: %v\npqlite: %v", width, withPqarrow, withPqlite)
		}
		if width == 2 && withPqlite != nil {
			t.Errorf("the file as written: %v", withPqlite)
		}
	}
}
