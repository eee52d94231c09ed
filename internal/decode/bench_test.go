package decode

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
)

// benchCSV is a gateway file like the benchmark's c2 files: rows in time
// order, 10 devices, three one-decimal readings (about 63 bytes a row).
func benchCSV(rows int) []byte {
	var b bytes.Buffer
	b.WriteString("time,device_id,site,temperature_c,humidity_pct,battery_v\n")
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for i := range rows {
		ts := t0.Add(time.Duration(i/10) * 10 * time.Second)
		fmt.Fprintf(&b, "%s,dev-01-%02d,north-field-station,%.1f,%.1f,%.2f\n",
			ts.Format(time.RFC3339), i%10, float64(i%400)/10, float64(i%1000)/10, 3+float64(i%100)/100)
	}
	return b.Bytes()
}

// BenchmarkDecodeCSV decodes a 200,000-row (~13 MB) CSV file into a table
// schema, sequentially and on GOMAXPROCS goroutines.
func BenchmarkDecodeCSV(b *testing.B) {
	data := benchCSV(200_000)
	target := arrowTarget(b,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "device_id", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "site", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "temperature_c", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 5, Name: "humidity_pct", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "battery_v", Type: iceberg.PrimitiveTypes.Float64},
	)
	for _, par := range []int{1, 0} {
		b.Run(fmt.Sprintf("parallelism=%d", par), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for range b.N {
				d, err := Decode(context.Background(), Source{Key: "gw/b.csv", R: bytes.NewReader(data), Size: int64(len(data))},
					DecodeOptions{Target: target, TimeColumn: "time", Parallelism: par})
				if err != nil {
					b.Fatal(err)
				}
				d.Release()
			}
		})
	}
}
