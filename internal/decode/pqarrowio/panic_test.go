package pqarrowio_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/decode/arrowpq"
	"github.com/timelake/timelake/internal/decode/pqarrowio"
)

// trusting is pqarrow as a Reader that gives the footer's ARROW:schema no
// say in the types it reports, so that arrowpq keeps whatever the footer
// stores, as pqarrow alone would.
type trusting struct{ pqarrowio.Reader }

func (r trusting) Fields(sc *schema.Schema, _ metadata.KeyValueMetadata) ([]arrow.Field, error) {
	return r.Reader.Fields(sc, nil)
}

// TestParquetPanicNamesColumn: when reading a Parquet file's rows panics,
// the refusal names the column whose reading alone panics and the row
// group the read was in: here pqarrow is told, by an ARROW:schema not set
// aside, to read as a large string a column that holds timestamps.
func TestParquetPanicNamesColumn(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "device", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i) * time.Minute).UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append("gw-7")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	stored := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.BinaryTypes.LargeString},
		{Name: "device", Type: arrow.BinaryTypes.String},
	}, nil)
	var ipcBuf bytes.Buffer
	if err := ipc.NewWriter(&ipcBuf, ipc.WithSchema(stored)).Close(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendKeyValueMetadata("ARROW:schema", base64.StdEncoding.EncodeToString(ipcBuf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()

	prev := decode.SetParquetFormat(arrowpq.Format{Reader: trusting{}})
	defer decode.SetParquetFormat(prev)
	_, err = decode.Check(context.Background(), decode.Source{Key: "k.parquet", R: bytes.NewReader(data), Size: int64(len(data))},
		decode.DecodeOptions{TimeColumn: "time"}, decode.CheckOptions{})
	var fe *decode.FileError
	if !errors.As(err, &fe) || !decode.IsPanic(err) || fe.Column != "time" || !strings.Contains(err.Error(), "row group 1 of 1, reading from row 1") {
		t.Fatalf("error = %v", err)
	}
}
