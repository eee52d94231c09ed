package pqarrowio_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/decode/arrowpq"
	"github.com/timelake/timelake/internal/decode/pqarrowio"
	"github.com/timelake/timelake/internal/decode/pqlite"
)

// TestBrotliColumnOfNulls: a Parquet file with brotli pages and a column
// of only nulls is read by every reader (ingest's, arrowpq's own,
// timelake-gateway's): its data page v2 has an empty values section,
// whose brotli stream arrow-go's codec refused to decode (a column with a
// dictionary has its indices' bit width there).
func TestBrotliColumnOfNulls(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "site", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "battery_v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "alarm", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}, // PLAIN: no dictionary
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(
		`[{"time": 1772366400000000, "site": "north"}, {"time": 1772366401000000, "site": null}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for _, version := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
		var buf bytes.Buffer
		tbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
		err := pqarrow.WriteTable(tbl, &buf, rec.NumRows(),
			parquet.NewWriterProperties(parquet.WithDataPageVersion(version), parquet.WithCompression(compress.Codecs.Brotli)),
			pqarrow.DefaultWriterProps())
		tbl.Release()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []decode.ParquetFormat{arrowpq.Format{Reader: pqarrowio.Reader{}}, arrowpq.Format{}, pqlite.Format{}} {
			name := fmt.Sprintf("data page v%d, %T", version+1, f)
			if r, ok := f.(arrowpq.Format); ok && r.Reader != nil {
				name += " (pqarrow)"
			}
			cols := readAll(t, f, buf.Bytes())
			if got := fmt.Sprint(cols[1:]); got != `[["north" (null)] [(null) (null)] [(null) (null)]]` {
				t.Errorf("%s: read %s", name, got)
			}
			for _, c := range cols {
				c.Release()
			}
		}
	}
}
