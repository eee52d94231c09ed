package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
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

// spec describes a case's files.
type spec struct {
	files, rowsPerFile, gateways int
	parquet                      bool
	json                         bool // JSON lines (.jsonl), the rows of the CSV files as objects
	gzip                         bool // CSV or JSON files gzip-compressed (.csv.gz, .jsonl.gz)
	snappyPlain                  bool // Parquet with Snappy and without dictionaries, as other writers often write it (else zstd with dictionaries)
	spanDays                     int  // rows spread uniformly over this many days (0: one reading per device per 10 s)
	// poison adds one file ingest must quarantine within the memory bound
	// (docs/ingest.md, "Limits of one file"): "gzip-bomb" (a header and
	// one line of 1 GiB without a line end, gzipped to about 1 MB) or
	// "huge-value" (a row holding one value of 256 MiB, gzipped).
	poison string
	// routed puts file i below the folder routeTables[i%3] (the case of
	// routed runs: three tables from one landing).
	routed bool
}

// cases are the benchmark cases of docs/performance.md.
var cases = map[string]spec{
	"c1":    {files: 1000, rowsPerFile: 100, gateways: 20},                  // small CSV files, ~10 KB
	"c1-5k": {files: 5000, rowsPerFile: 100, gateways: 20},                  // the same, 5x the files (RSS flatness)
	"c2":    {files: 20, rowsPerFile: 800_000, gateways: 4},                 // ~50 MB CSV files, ~1 GB in all
	"c3":    {files: 200, rowsPerFile: 40_000, gateways: 10, parquet: true}, // ~1 MB Parquet files
	"c4":    {files: 10, rowsPerFile: 10_000, gateways: 2, spanDays: 90},    // 100,000 rows over 90 days
	// One large file each, larger than the default memory budget: peak RSS
	// against the bound of docs/performance.md ("Memory per input kind").
	"c5": {files: 1, rowsPerFile: 16_000_000, gateways: 1, gzip: true},                       // one ~150 MB .csv.gz (~1 GB of CSV)
	"c6": {files: 1, rowsPerFile: 13_600_000, gateways: 1, parquet: true, snappyPlain: true}, // one ~150 MB Parquet file, one row group
	// A poison file beside a good one: peak RSS against the same bound.
	"p1": {files: 1, rowsPerFile: 100, gateways: 1, poison: "gzip-bomb"},
	"p2": {files: 1, rowsPerFile: 100, gateways: 1, poison: "huge-value"},
	// Three tables x 300 small CSV files, each table's below its folder: a
	// routed run against three single-table runs.
	"routes": {files: 900, rowsPerFile: 100, gateways: 12, routed: true},
	// c2's rows as JSON lines (~115 MB a file, 2.3 GB in all), plain and gzip.
	"c2-json":    {files: 20, rowsPerFile: 800_000, gateways: 4, json: true},
	"c2-json-gz": {files: 20, rowsPerFile: 800_000, gateways: 4, json: true, gzip: true},
}

var start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// generate writes a case's files below out, reproducibly (fixed seeds).
func generate(name, out string) error {
	sp, ok := cases[name]
	if !ok {
		return fmt.Errorf("unknown case %q", name)
	}
	for i := range sp.files {
		gw := i % sp.gateways
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		ext := ".csv"
		switch {
		case sp.parquet:
			ext = ".parquet"
		case sp.json:
			ext = ".jsonl"
		}
		if sp.gzip {
			ext += ".gz"
		}
		t0 := start.Add(time.Duration(i/sp.gateways) * time.Duration(sp.rowsPerFile/10+1) * 10 * time.Second)
		key := fmt.Sprintf("gateway-%02d/%s-%05d%s", gw, t0.Format("20060102T150405Z"), i, ext)
		if sp.routed {
			key = routeTables[i%len(routeTables)] + "/" + key
		}
		p := filepath.Join(out, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		row := func(j int) (time.Time, string, float64, float64, float64) {
			t := t0.Add(time.Duration(j/10) * 10 * time.Second)
			if sp.spanDays > 0 {
				t = start.Add(time.Duration(rng.Int64N(int64(sp.spanDays) * 24 * int64(time.Hour))))
			}
			return t, fmt.Sprintf("dev-%02d-%02d", gw, j%10),
				float64(rng.IntN(400))/10 - 5, float64(rng.IntN(1000)) / 10, 3 + float64(rng.IntN(120))/100
		}
		var err error
		if sp.parquet {
			err = writeParquet(p, sp.rowsPerFile, sp.snappyPlain, row)
		} else {
			err = writeText(p, sp.rowsPerFile, sp.gzip, sp.json, row)
		}
		if err != nil {
			return err
		}
	}
	if sp.poison != "" {
		return writePoison(filepath.Join(out, "gateway-00", "poison.csv.gz"), sp.poison)
	}
	return nil
}

// writePoison writes the poison file of a case (spec.poison).
func writePoison(p, kind string) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		f.Close()
		return err
	}
	w := bufio.NewWriterSize(zw, 1<<20)
	w.WriteString("time,device_id,site,temperature_c,humidity_pct,battery_v\n2026-01-05T00:00:00Z,")
	size, end := 1<<30, ""
	if kind == "huge-value" {
		size, end = 256<<20, ",north-field-station,1.5,50.0,3.30\n"
	}
	chunk := bytes.Repeat([]byte("7"), 1<<20)
	for range size / len(chunk) {
		w.Write(chunk)
	}
	w.WriteString(end)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type rowFunc func(j int) (time.Time, string, float64, float64, float64)

// writeText writes n rows as CSV or, with asJSON, as JSON lines.
func writeText(p string, n int, gz, asJSON bool, row rowFunc) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	var out io.Writer = f
	zw := gzip.NewWriter(f)
	if gz {
		out = zw
	}
	write := writeCSVTo
	if asJSON {
		write = writeJSONTo
	}
	if err := write(out, n, row); err != nil {
		f.Close()
		return err
	}
	if gz {
		if err := zw.Close(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// writeCSVTo writes the header and n rows in the landing files' CSV layout.
func writeCSVTo(out io.Writer, n int, row rowFunc) error {
	w := bufio.NewWriterSize(out, 1<<20)
	w.WriteString("time,device_id,site,temperature_c,humidity_pct,battery_v\n")
	buf := make([]byte, 0, 128)
	for j := range n {
		t, dev, temp, hum, bat := row(j)
		buf = t.AppendFormat(buf[:0], time.RFC3339)
		buf = append(buf, ',')
		buf = append(buf, dev...)
		buf = append(buf, ",north-field-station,"...)
		buf = strconv.AppendFloat(buf, temp, 'f', 1, 64)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, hum, 'f', 1, 64)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, bat, 'f', 2, 64)
		buf = append(buf, '\n')
		w.Write(buf)
	}
	return w.Flush()
}

// writeJSONTo writes n rows as JSON lines, one object a row, with the
// keys and values of writeCSVTo's columns: the time and the strings as
// JSON strings, the measurements as numbers of the same text.
func writeJSONTo(out io.Writer, n int, row rowFunc) error {
	w := bufio.NewWriterSize(out, 1<<20)
	buf := make([]byte, 0, 192)
	for j := range n {
		t, dev, temp, hum, bat := row(j)
		buf = append(buf[:0], `{"time":"`...)
		buf = t.AppendFormat(buf, time.RFC3339)
		buf = append(buf, `","device_id":"`...)
		buf = append(buf, dev...)
		buf = append(buf, `","site":"north-field-station","temperature_c":`...)
		buf = strconv.AppendFloat(buf, temp, 'f', 1, 64)
		buf = append(buf, `,"humidity_pct":`...)
		buf = strconv.AppendFloat(buf, hum, 'f', 1, 64)
		buf = append(buf, `,"battery_v":`...)
		buf = strconv.AppendFloat(buf, bat, 'f', 2, 64)
		buf = append(buf, "}\n"...)
		w.Write(buf)
	}
	return w.Flush()
}

// writeParquet writes n rows as one row group.
func writeParquet(p string, n int, snappyPlain bool, row rowFunc) error {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "device_id", Type: arrow.BinaryTypes.String},
		{Name: "site", Type: arrow.BinaryTypes.String},
		{Name: "temperature_c", Type: arrow.PrimitiveTypes.Float64},
		{Name: "humidity_pct", Type: arrow.PrimitiveTypes.Float64},
		{Name: "battery_v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for j := range n {
		t, dev, temp, hum, bat := row(j)
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(t.UnixMilli()))
		b.Field(1).(*array.StringBuilder).Append(dev)
		b.Field(2).(*array.StringBuilder).Append("north-field-station")
		b.Field(3).(*array.Float64Builder).Append(temp)
		b.Field(4).(*array.Float64Builder).Append(hum)
		b.Field(5).(*array.Float64Builder).Append(bat)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	if snappyPlain {
		props = parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithDictionaryDefault(false))
	}
	if err := pqarrow.WriteTable(tbl, &buf, int64(n), props, pqarrow.DefaultWriterProps()); err != nil {
		return err
	}
	return os.WriteFile(p, buf.Bytes(), 0o644)
}
