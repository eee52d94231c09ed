// Command generate writes the sample landing files of examples/landing: IoT readings
// from four field gateways, as CSV, gzipped CSV, Parquet and JSON Lines. The output is
// reproducible (fixed PCG seeds, no wall-clock time).
//
//	go run ./examples/generate [-out examples/landing]
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

const devicesPerGateway = 5

type reading struct {
	time        time.Time
	deviceID    string
	temperature float64
	humidity    float64
	battery     float64
}

// gateway simulates the sensors behind one field gateway.
type gateway struct {
	rng     *rand.Rand
	devices []device
}

type device struct {
	id                      string
	baseTemp, temp, hum, bv float64
}

func newGateway(n int) *gateway {
	g := &gateway{rng: rand.New(rand.NewPCG(20260105, uint64(n)))}
	for d := 1; d <= devicesPerGateway; d++ {
		base := 17 + 7*g.rng.Float64()
		g.devices = append(g.devices, device{
			id:       fmt.Sprintf("dev-%02d-%02d", n, d),
			baseTemp: base,
			temp:     base,
			hum:      35 + 25*g.rng.Float64(),
			bv:       3.65 + 0.45*g.rng.Float64(),
		})
	}
	return g
}

// hour returns one reading per device per minute for the hour starting at start,
// sorted by time. msJitter adds sub-second timestamps (the Parquet gateway has them).
func (g *gateway) hour(start time.Time, msJitter bool) []reading {
	var rows []reading
	for m := range 60 {
		for i := range g.devices {
			d := &g.devices[i]
			// Mean-reverting random walks; the battery slowly drains.
			d.temp += 0.1*(d.baseTemp-d.temp) + 0.15*g.rng.NormFloat64()
			d.hum = clamp(d.hum+0.3*g.rng.NormFloat64(), 20, 95)
			d.bv = clamp(d.bv-0.0004+0.004*g.rng.NormFloat64(), 3.3, 4.2)
			offset := time.Duration(m)*time.Minute + time.Duration(i*9+g.rng.IntN(5))*time.Second
			if msJitter {
				offset += time.Duration(g.rng.IntN(1000)) * time.Millisecond
			}
			rows = append(rows, reading{
				time:        start.Add(offset),
				deviceID:    d.id,
				temperature: round(d.temp, 1),
				humidity:    round(d.hum, 1),
				battery:     round(d.bv, 2),
			})
		}
	}
	return rows
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

func round(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

func at(day, hour int) time.Time { return time.Date(2026, time.January, day, hour, 0, 0, 0, time.UTC) }

func main() {
	out := flag.String("out", "examples/landing", "folder to write the landing files into")
	flag.Parse()

	// gateway-1: plain CSV, standard column order.
	g1 := newGateway(1)
	must(writeCSV(filepath.Join(*out, "gateway-1/20260105T1000.csv"), g1.hour(at(5, 10), false), standardColumns, false, 1))
	must(writeCSV(filepath.Join(*out, "gateway-1/20260105T1100.csv"), g1.hour(at(5, 11), false), standardColumns, false, 1))

	// gateway-2: first file gzipped; in the second the firmware changed the column
	// order and sends whole-number temperatures ("21", not "21.0").
	g2 := newGateway(2)
	must(writeCSV(filepath.Join(*out, "gateway-2/20260105T1000.csv.gz"), g2.hour(at(5, 10), false), standardColumns, true, 1))
	must(writeCSV(filepath.Join(*out, "gateway-2/20260105T1100.csv"), g2.hour(at(5, 11), false), reorderedColumns, false, 0))

	// gateway-3: Parquet; its second file is from the next day (second day partition).
	g3 := newGateway(3)
	must(writeParquet(filepath.Join(*out, "gateway-3/20260105T1000.parquet"), g3.hour(at(5, 10), true)))
	must(writeParquet(filepath.Join(*out, "gateway-3/20260106T1100.parquet"), g3.hour(at(6, 11), true)))

	// gateway-4: JSON Lines, one object per reading; the measurements are JSON
	// numbers with a fraction (21.0, not 21), so their columns stay double.
	g4 := newGateway(4)
	must(writeJSONLines(filepath.Join(*out, "gateway-4/20260105T1000.jsonl"), g4.hour(at(5, 10), false)))
}

var (
	standardColumns  = []string{"time", "device_id", "temperature_c", "humidity_pct", "battery_v"}
	reorderedColumns = []string{"device_id", "humidity_pct", "time", "battery_v", "temperature_c"}
)

// writeCSV writes rows with the given column order; tempDecimals is 1, or 0 for whole numbers.
func writeCSV(path string, rows []reading, columns []string, gz bool, tempDecimals int) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(columns); err != nil {
		return err
	}
	for _, r := range rows {
		rec := make([]string, 0, len(columns))
		for _, c := range columns {
			switch c {
			case "time":
				rec = append(rec, r.time.Format(time.RFC3339))
			case "device_id":
				rec = append(rec, r.deviceID)
			case "temperature_c":
				rec = append(rec, strconv.FormatFloat(round(r.temperature, tempDecimals), 'f', tempDecimals, 64))
			case "humidity_pct":
				rec = append(rec, strconv.FormatFloat(r.humidity, 'f', 1, 64))
			case "battery_v":
				rec = append(rec, strconv.FormatFloat(r.battery, 'f', 2, 64))
			default:
				return fmt.Errorf("unknown column %q", c)
			}
		}
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	data := buf.Bytes()
	if gz {
		var zbuf bytes.Buffer
		zw := gzip.NewWriter(&zbuf) // zero ModTime and no name: reproducible bytes
		if _, err := zw.Write(data); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		data = zbuf.Bytes()
	}
	return writeFile(path, data)
}

// writeJSONLines writes one object per line, its keys in the standard column order.
func writeJSONLines(path string, rows []reading) error {
	var buf bytes.Buffer
	for _, r := range rows {
		id, err := json.Marshal(r.deviceID)
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, `{"time":"%s","device_id":%s,"temperature_c":%s,"humidity_pct":%s,"battery_v":%s}`+"\n",
			r.time.Format(time.RFC3339), id,
			strconv.FormatFloat(r.temperature, 'f', 1, 64),
			strconv.FormatFloat(r.humidity, 'f', 1, 64),
			strconv.FormatFloat(r.battery, 'f', 2, 64))
	}
	return writeFile(path, buf.Bytes())
}

func writeParquet(path string, rows []reading) error {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "device_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "temperature_c", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "humidity_pct", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "battery_v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.time.UnixMilli()))
		b.Field(1).(*array.StringBuilder).Append(r.deviceID)
		b.Field(2).(*array.Float64Builder).Append(r.temperature)
		b.Field(3).(*array.Float64Builder).Append(r.humidity)
		b.Field(4).(*array.Float64Builder).Append(r.battery)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()

	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	if err := pqarrow.WriteTable(tbl, &buf, int64(len(rows)), props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())); err != nil {
		return err
	}
	return writeFile(path, buf.Bytes())
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
