package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// wideCSV is a file of one row with the time, the series key and n more
// columns whose names are nameLen bytes long (at least their number).
func wideCSV(n, nameLen int) []byte {
	var b strings.Builder
	b.WriteString("time,device_id")
	for i := range n {
		name := "c" + strconv.Itoa(i)
		b.WriteString("," + name + strings.Repeat("x", max(0, nameLen-len(name))))
	}
	b.WriteString("\n2026-01-05T10:00:00Z,d9")
	for range n {
		b.WriteString(",1")
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// wideParquet is a Parquet file of one row with the time, the series key
// and n more columns.
func wideParquet(t *testing.T, n int) []byte {
	t.Helper()
	fields := []arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "device_id", Type: arrow.BinaryTypes.String},
	}
	for i := range n {
		fields = append(fields, arrow.Field{Name: "c" + strconv.Itoa(i), Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	}
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1_767_607_200_000))
	b.Field(1).(*array.StringBuilder).Append("d9")
	for i := range n {
		b.Field(2 + i).(*array.Float64Builder).Append(1)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const goodColumns = "time timestamptz, device_id string, temperature_c double"

func goodFile(i int) []byte {
	return []byte("time,device_id,temperature_c\n2026-01-05T10:0" + strconv.Itoa(i) + ":00Z,d" + strconv.Itoa(i) + ",21.5\n")
}

// TestTooWideFilesAreRefused: a file whose columns would make the table's
// schema more than its manifests can carry (too many columns, or names too
// long) is quarantined naming the limit, as a file's refusal, before it
// creates the table (the good file beside it does) or evolves one with
// --evolve add-columns; without --evolve, too many new columns are refused
// for the limit too (names too long, as new columns). The table keeps the
// good file's schema, and later files load.
func TestTooWideFilesAreRefused(t *testing.T) {
	for _, c := range []struct {
		name           string
		columns, bytes int
		parquet        bool
		mode           string // create: the first file; evolve: --evolve add-columns on a table; off: a table, no --evolve
		want, kind     string
	}{
		{"columns/create", 30_000, 0, false, "create", "more than the 10000 columns a table may have", landing.KindSetting},
		{"columns/evolve", 30_000, 0, false, "evolve", "more than the 10000 columns a table may have", landing.KindSetting},
		{"columns/off", 30_000, 0, false, "off", "more than the 10000 columns a table may have", landing.KindSetting},
		{"parquet/create", 20_000, 0, true, "create", "more than the 10000 columns a table may have", landing.KindSetting},
		{"names/create", 1_100, 1_000, false, "create", "bytes a table's schema may have", landing.KindFile},
		{"names/evolve", 1_100, 1_000, false, "evolve", "bytes a table's schema may have", landing.KindFile},
		{"names/off", 1_100, 1_000, false, "off", "and 1089 more): ingest adds new columns only with --evolve add-columns", landing.KindSetting},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachEnv(t, func(t *testing.T, e env) {
				ctx := context.Background()
				cfg := e.config()
				if c.mode != "create" {
					e.put(t, "gw/0.csv", goodFile(0))
					if rep, err := ingest.Run(ctx, cfg); err != nil || rep.Loaded != 1 {
						t.Fatalf("report %+v, %v", rep, err)
					}
				}
				if c.mode == "evolve" {
					cfg.Evolve = decode.EvolveAddColumns
				}
				// In key order the wide file comes first.
				wideKey, body := "gw/1-wide.csv", wideCSV(c.columns, c.bytes)
				if c.parquet {
					wideKey, body = "gw/1-wide.parquet", wideParquet(t, c.columns)
				}
				e.put(t, wideKey, body)
				e.put(t, "gw/2.csv", goodFile(2))
				rep, err := ingest.Run(ctx, cfg)
				if err != nil || rep.Loaded != 1 || rep.Quarantined != 1 {
					t.Fatalf("report %+v, %v; want the good file loaded, the wide one quarantined", rep, err)
				}
				if (c.mode == "create") != (rep.Created != nil) {
					t.Errorf("created %+v", rep.Created)
				}
				var reason string
				for _, f := range rep.Files {
					if f.Key == wideKey {
						reason = f.Reason
						if f.Status != ingest.Quarantined {
							t.Errorf("wide file %s", f.Status)
						}
					}
				}
				if !strings.Contains(reason, c.want) || !strings.HasPrefix(reason, wideKey+": ") || (c.kind == landing.KindFile && len(reason) > 1000) {
					t.Errorf("reason %.300q... (%d bytes) does not say %q", reason, len(reason), c.want)
				}
				rejected, err := (&landing.Bucket{Store: e.landing}).Rejected(ctx)
				if err != nil || len(rejected) != 1 || rejected[0].Kind != c.kind {
					t.Fatalf("rejected %+v, %v", rejected, err)
				}
				if c.kind == landing.KindFile && !strings.Contains(rejected[0].Hint, "split it") {
					t.Errorf("hint %q", rejected[0].Hint)
				}
				if got := columnsOf(t, e); got != goodColumns {
					t.Errorf("columns %s, want %s", got, goodColumns)
				}
				e.put(t, "gw/3.csv", goodFile(3))
				rep, err = ingest.Run(ctx, cfg)
				if err != nil || rep.Loaded != 1 || rep.Quarantined != 0 || rep.Partial() {
					t.Fatalf("next run: report %+v, %v", rep, err)
				}
				want := 3
				if c.mode == "create" {
					want = 2
				}
				if got := tableRows(t, e); len(got) != want {
					t.Errorf("rows %v, want %d", got, want)
				}
			})
		})
	}
}

// TestWidthLimitsLeaveWideTablesAlone: a file as wide as the limits
// allow creates its table, and one that adds no column loads into it.
func TestWidthLimitsLeaveWideTablesAlone(t *testing.T) {
	e := localEnv(t)
	ctx := context.Background()
	e.put(t, "gw/1.csv", wideCSV(lake.MaxColumns-2, 0))
	e.put(t, "gw/2.csv", []byte("time,device_id,c0\n2026-01-05T11:00:00Z,d1,2\n"))
	rep, err := ingest.Run(ctx, e.config())
	if err != nil || rep.Loaded != 2 || rep.Quarantined != 0 {
		t.Fatalf("report %+v, %v", rep, err)
	}
}

// BenchmarkRefuseWideFile: a file of a million columns (9.6 MB of header)
// refused: as the first file of a table (create), as new columns of a
// table without --evolve (off) and with --evolve add-columns (evolve). The
// refusal's work is linear in the columns.
func BenchmarkRefuseWideFile(b *testing.B) {
	body := wideCSV(1_000_000, 0)
	ctx := context.Background()
	for _, mode := range []string{"create", "off", "evolve"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				st, err := storage.NewLocalStore(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				l, err := lake.Open(ctx, b.TempDir(), lake.Options{})
				if err != nil {
					b.Fatal(err)
				}
				e := env{landing: st, lake: l}
				put := func(key string, body []byte) {
					if _, err := st.Put(ctx, key, bytes.NewReader(body), storage.PutOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				cfg := e.config()
				if mode != "create" {
					put("gw/0.csv", goodFile(0))
					if _, err := ingest.Run(ctx, cfg); err != nil {
						b.Fatal(err)
					}
				}
				if mode == "evolve" {
					cfg.Evolve = decode.EvolveAddColumns
				}
				put("gw/1.csv", body)
				b.StartTimer()
				rep, err := ingest.Run(ctx, cfg)
				if err != nil || rep.Quarantined != 1 {
					b.Fatalf("report %+v, %v", rep, err)
				}
			}
		})
	}
}

// TestMaxColumnsSetting: --max-columns bounds the columns a file may give a
// table: a file of 12 columns is refused under a limit of 10, with the
// limit and the setting named (kind setting), and loads under 20.
func TestMaxColumnsSetting(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	var header, row strings.Builder
	header.WriteString("time,device_id")
	row.WriteString("2026-01-05T10:00:00Z,d1")
	for i := range 10 {
		fmt.Fprintf(&header, ",c%d", i)
		row.WriteString(",1")
	}
	e.put(t, "gw/wide.csv", []byte(header.String()+"\n"+row.String()+"\n"))
	cfg := e.config()
	cfg.MaxColumns = 10
	rep, err := ingest.Run(ctx, cfg)
	if err != nil || rep.Quarantined != 1 || !strings.Contains(rep.Files[0].Reason, "the file has 12 columns, more than the 10 columns a table may have (--max-columns") {
		t.Fatalf("limit 10: %+v, %v", rep.Files, err)
	}
	b := &landing.Bucket{Store: e.landing}
	rows, err := b.Rejected(ctx)
	if err != nil || len(rows) != 1 || rows[0].Kind != landing.KindSetting || !strings.Contains(rows[0].Hint, "--max-columns") {
		t.Fatalf("quarantined %+v, %v", rows, err)
	}
	if _, err := b.Requeue(ctx, rows[0], t.TempDir()); err != nil {
		t.Fatal(err)
	}
	cfg.MaxColumns = 20
	if rep, err := ingest.Run(ctx, cfg); err != nil || rep.Loaded != 1 {
		t.Fatalf("limit 20: %+v, %v", rep.Files, err)
	}
}
