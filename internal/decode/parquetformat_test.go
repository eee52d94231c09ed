package decode

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestParquetWithoutFormat: a binary that registers no Parquet format
// refuses a Parquet file saying so, in Decode and Check alike, and writes
// no Parquet rejects file.
func TestParquetWithoutFormat(t *testing.T) {
	rec := sensorRecord(t)
	defer rec.Release()
	data := writeParquet(t, rec)
	prev := SetParquetFormat(nil)
	defer SetParquetFormat(prev)

	src := Source{Key: "k.parquet", R: bytes.NewReader(data), Size: int64(len(data))}
	_, err := Check(context.Background(), src, DecodeOptions{TimeColumn: "time"}, CheckOptions{})
	if fe := mustFileError(t, err); fe.Reason != noParquetFormat || !IsUnreadable(err) {
		t.Errorf("Check: %v", err)
	}
	_, err = decode(t, "k.parquet", data, DecodeOptions{Target: timeDeviceTarget(t), TimeColumn: "time"})
	if fe := mustFileError(t, err); fe.Reason != noParquetFormat {
		t.Errorf("Decode: %v", err)
	}
	if n, ok := ParquetValueBytes(src); ok || n != 0 {
		t.Errorf("ParquetValueBytes = %d, %v; want none", n, ok)
	}
	if err := writeParquetRejects([]arrow.RecordBatch{rec}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "reads no Parquet files") {
		t.Errorf("writeParquetRejects: %v", err)
	}
}
