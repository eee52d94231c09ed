package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/pagecrc"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

var tableName = lake.TableName{Namespace: "iot", Name: "readings"}

// env is one landing store and one warehouse.
type env struct {
	landing storage.Store
	lake    *lake.Lake
}

func localEnv(t *testing.T) env {
	t.Helper()
	st, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, err := lake.Open(context.Background(), t.TempDir(), lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return env{landing: st, lake: l}
}

func s3Env(t *testing.T) env {
	t.Helper()
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	landingBucket, lakeBucket := srv.NewBucket(t), srv.NewBucket(t)
	l, err := lake.Open(context.Background(), "s3://"+lakeBucket+"/warehouse", lake.Options{S3: client})
	if err != nil {
		t.Fatal(err)
	}
	return env{landing: storage.NewS3Store(client, landingBucket, "", storage.S3StoreOptions{}), lake: l}
}

// config is the run's configuration. Files are loaded as soon as they are
// written (no settle times): TestFilesStillBeingWritten and the tests of
// complete.go cover the waits.
func (e env) config() ingest.Config {
	return ingest.Config{Landing: e.landing, Lake: e.lake, Table: tableName, SeriesKey: []string{"device_id"},
		SettleTime: -1, OpenEndSettleTime: -1}
}

func (e env) put(t *testing.T, key string, body []byte) {
	t.Helper()
	if _, err := e.landing.Put(context.Background(), key, bytes.NewReader(body), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e env) keys(t *testing.T, prefix string) []string {
	t.Helper()
	var keys []string
	if err := e.landing.List(context.Background(), prefix, func(o storage.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// reading is one row of the generated gateway files.
type reading struct {
	device string
	t      time.Time
	temp   float64
}

func (r reading) String() string {
	return fmt.Sprintf("%s|%d|%g", r.device, r.t.UTC().UnixMicro(), r.temp)
}

// readings makes n rows for one file: file index i gives distinct times.
func readings(gw, i, n int) []reading {
	base := time.Date(2026, 1, 5, 22, 0, 0, 0, time.UTC).Add(time.Duration(i) * 17 * time.Minute)
	out := make([]reading, n)
	for j := range out {
		out[j] = reading{
			device: fmt.Sprintf("dev-%d-%d", gw, j%4),
			t:      base.Add(time.Duration(j) * 41 * time.Second),
			temp:   float64(gw*100+i) + float64(j%7) + 0.5*float64(j%2),
		}
	}
	return out
}

// csvFile renders rows as CSV; zoned writes times with a +02:00 offset and
// reordered puts the columns in another order.
func csvFile(rows []reading, zoned, reordered bool) []byte {
	var b strings.Builder
	if reordered {
		b.WriteString("temperature_c,device_id,time\n")
	} else {
		b.WriteString("time,device_id,temperature_c\n")
	}
	for _, r := range rows {
		ts := r.t.UTC().Format("2006-01-02T15:04:05Z")
		if zoned {
			ts = r.t.In(time.FixedZone("", 2*3600)).Format("2006-01-02 15:04:05-07:00")
		}
		if reordered {
			fmt.Fprintf(&b, "%g,%s,%s\n", r.temp, r.device, ts)
		} else {
			fmt.Fprintf(&b, "%s,%s,%g\n", ts, r.device, r.temp)
		}
	}
	return []byte(b.String())
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// parquetFile writes rows with a timestamp[ms, UTC] time column and the
// columns in yet another order.
func parquetFile(t *testing.T, rows []reading) []byte {
	t.Helper()
	return parquetRowGroups(t, rows, 1024, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)))
}

// parquetRowGroups writes rows as parquetFile does, in row groups of
// groupRows rows, with props.
func parquetRowGroups(t *testing.T, rows []reading, groupRows int, props *parquet.WriterProperties) []byte {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "device_id", Type: arrow.BinaryTypes.String},
		{Name: "temperature_c", Type: arrow.PrimitiveTypes.Float64},
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.device)
		b.Field(1).(*array.Float64Builder).Append(r.temp)
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(r.t.UnixMilli()))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer tbl.Release()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, int64(groupRows), props, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// dropGatewayFiles puts 20 files from 3 gateways (CSV in UTC, gzipped CSV
// with +02:00 offsets and reordered columns, Parquet) and returns the rows.
func dropGatewayFiles(t *testing.T, e env) []string {
	var want []string
	for i := range 20 {
		gw := i%3 + 1
		rows := readings(gw, i, 40)
		for _, r := range rows {
			want = append(want, r.String())
		}
		switch gw {
		case 1:
			e.put(t, fmt.Sprintf("gateway-1/2026010%dT%02d00.csv", 5, i), csvFile(rows, false, false))
		case 2:
			e.put(t, fmt.Sprintf("gateway-2/20260105T%02d00.csv.gz", i), gzipped(t, csvFile(rows, true, true)))
		case 3:
			e.put(t, fmt.Sprintf("gateway-3/20260105T%02d00.parquet", i), parquetFile(t, rows))
		}
	}
	sort.Strings(want)
	return want
}

// eachRecord scans the table and calls fn with each record batch.
func eachRecord(t *testing.T, e env, fn func(rec arrow.RecordBatch)) {
	t.Helper()
	tbl, err := e.lake.LoadTable(context.Background(), tableName)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Iceberg().Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, -1)
	defer tr.Release()
	for tr.Next() {
		fn(tr.RecordBatch())
	}
}

// tableRows scans the table and renders its rows like reading.String.
func tableRows(t *testing.T, e env) []string {
	t.Helper()
	var out []string
	eachRecord(t, e, func(rec arrow.RecordBatch) {
		col := func(name string) arrow.Array { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
		dev := col("device_id").(*array.String)
		ts := col("time").(*array.Timestamp)
		if tz := ts.DataType().(*arrow.TimestampType).TimeZone; tz != "UTC" && tz != "+00:00" {
			t.Fatalf("time column zone %q, want UTC", tz)
		}
		temp := col("temperature_c").(*array.Float64)
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, fmt.Sprintf("%s|%d|%g", dev.Value(i), ts.Value(i), temp.Value(i)))
		}
	})
	sort.Strings(out)
	return out
}

func snapshotCount(t *testing.T, e env) int {
	t.Helper()
	tbl, err := e.lake.LoadTable(context.Background(), tableName)
	if err != nil {
		t.Fatal(err)
	}
	return len(tbl.Metadata().Snapshots())
}

func TestIngestGatewayFiles(t *testing.T) {
	for name, open := range map[string]func(*testing.T) env{"local": localEnv, "s3": s3Env} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := open(t)
			want := dropGatewayFiles(t, e)
			rep, err := ingest.Run(ctx, e.config())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Loaded != 20 || rep.Quarantined != 0 || rep.Rows != int64(len(want)) || rep.Created == nil {
				t.Fatalf("report: loaded %d quarantined %d rows %d created %v", rep.Loaded, rep.Quarantined, rep.Rows, rep.Created)
			}
			if left := e.keys(t, ""); len(left) != 0 {
				t.Fatalf("landing not empty: %v", left)
			}
			if got := tableRows(t, e); !slices.Equal(got, want) {
				t.Fatalf("table rows differ from the files: %d rows, want %d", len(got), len(want))
			}

			// A second run on the empty landing bucket is a no-op.
			before := snapshotCount(t, e)
			rep, err = ingest.Run(ctx, e.config())
			if err != nil || len(rep.Files) != 0 {
				t.Fatalf("second run: %+v, %v", rep, err)
			}
			if after := snapshotCount(t, e); after != before {
				t.Fatalf("snapshots %d -> %d on an empty landing bucket", before, after)
			}
		})
	}
}

func TestCrashBetweenCommitAndDelete(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gateway-1/a.csv", csvFile(readings(1, 0, 10), false, false))
	if _, err := ingest.Run(ctx, e.config()); err != nil {
		t.Fatal(err)
	}
	e.put(t, "gateway-1/b.csv", csvFile(readings(1, 1, 10), false, false))
	crash := errors.New("simulated crash")
	cfg := e.config()
	cfg.AfterCommit = func(key string) error {
		if key == "gateway-1/b.csv" {
			return crash
		}
		return nil
	}
	if _, err := ingest.Run(ctx, cfg); !errors.Is(err, crash) {
		t.Fatalf("err = %v, want the simulated crash", err)
	}
	if left := e.keys(t, "gateway-1/"); !slices.Equal(left, []string{"gateway-1/b.csv"}) {
		t.Fatalf("landing after crash: %v", left)
	}
	rowsBefore, snapsBefore := len(tableRows(t, e)), snapshotCount(t, e)

	rep, err := ingest.Run(ctx, e.config())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 1 || rep.Files[0].Status != ingest.AlreadyLoaded {
		t.Fatalf("files: %+v", rep.Files)
	}
	if len(e.keys(t, "")) != 0 {
		t.Fatal("file not deleted after restart")
	}
	if rows, snaps := len(tableRows(t, e)), snapshotCount(t, e); rows != rowsBefore || snaps != snapsBefore || rows != 20 {
		t.Fatalf("rows %d->%d snapshots %d->%d", rowsBefore, rows, snapsBefore, snaps)
	}
}

func TestResentKey(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	orig := csvFile(readings(1, 0, 10), false, false)
	e.put(t, "gateway-1/a.csv", orig)
	if _, err := ingest.Run(ctx, e.config()); err != nil {
		t.Fatal(err)
	}

	// Same content again: skipped and deleted.
	e.put(t, "gateway-1/a.csv", orig)
	rep, err := ingest.Run(ctx, e.config())
	if err != nil || rep.AlreadyLoaded != 1 || rep.Quarantined != 0 {
		t.Fatalf("same content: %+v, %v", rep, err)
	}
	if len(e.keys(t, "")) != 0 {
		t.Fatal("re-sent identical file not deleted")
	}

	// Different content under the loaded key: quarantined with a reason.
	e.put(t, "gateway-1/a.csv", csvFile(readings(1, 5, 12), false, false))
	rep, err = ingest.Run(ctx, e.config())
	if err != nil || rep.Quarantined != 1 {
		t.Fatalf("different content: %+v, %v", rep, err)
	}
	if r := rep.Files[0].Reason; !strings.Contains(r, "already loaded") || !strings.Contains(r, "different content") {
		t.Fatalf("reason %q", r)
	}
	if got := e.keys(t, ""); !slices.Equal(got, []string{"_rejected/gateway-1/a.csv", "_rejected/gateway-1/a.csv.error.json"}) {
		t.Fatalf("landing: %v", got)
	}
	if raw, _, err := storage.ReadAll(ctx, e.landing, "_rejected/gateway-1/a.csv.error.json"); err != nil || !strings.Contains(string(raw), `"kind": "file"`) {
		t.Errorf("the report of a key loaded with other content: %s, %v (want kind file)", raw, err)
	}
	if n := len(tableRows(t, e)); n != 10 {
		t.Fatalf("rows %d, want 10", n)
	}
}

func TestBadFilesAreQuarantined(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	good := csvFile(readings(1, 0, 10), false, false)
	e.put(t, "gateway-1/00-good.csv", good)
	// Loading the good file first creates the table (time, device_id, temperature_c).
	if _, err := ingest.Run(ctx, e.config()); err != nil {
		t.Fatal(err)
	}
	// kind: what the report says refused the file (requeue --all skips
	// landing.KindFile and landing.KindRow).
	bad := map[string]struct {
		body   string
		reason string // part of the reason
		row    int64
		column string
		kind   string
	}{
		"gateway-1/ragged.csv":     {"time,device_id,temperature_c\n2026-01-05T10:00:00Z,d,1\n2026-01-05T10:01:00Z,d\n", "wrong number of fields", 2, "", landing.KindRow},
		"gateway-1/bare-quote.csv": {"time,device_id,temperature_c\n2026-01-05T10:00:00Z,d,1\n2026-01-05T10:01:00Z,d\"x,2\n", "bare \"", 2, "", landing.KindRow},
		"gateway-1/semicolons.csv": {"time;device_id;temperature_c\n2026-01-05T10:00:00Z;d;1\n", "", 0, "", landing.KindSetting},
		"gateway-1/bad-time.csv":   {"time,device_id,temperature_c\n2026-01-05T10:00:00Z,d,1\n05/01/2026 10:01,d,2\n", "05/01/2026 10:01", 2, "time", landing.KindSetting},
		"gateway-1/empty.csv":      {"", "", 0, "", landing.KindFile},
		"gateway-1/extra-col.csv":  {"time,device_id,temperature_c,humidity\n2026-01-05T10:00:00Z,d,1,50\n", "humidity", 0, "humidity", landing.KindSetting},
		"gateway-1/null-time.csv":  {"time,device_id,temperature_c\n2026-01-05T10:00:00Z,d,1\n,d,2\n", "", 2, "time", landing.KindFile},
		"gateway-1/not-number.csv": {"time,device_id,temperature_c\n2026-01-05T10:00:00Z,d,warm\n", "warm", 1, "temperature_c", landing.KindSetting},
		"gateway-1/readme.txt":     {"not data", "unsupported file type", 0, "", landing.KindFile},
		"gateway-1/cut.csv.gz":     {string(gzipped(t, good)[:40]), "", 0, "", landing.KindFile},
		"gateway-1/junk.parquet":   {"PAR1 but nothing of a Parquet file", "", 0, "", landing.KindFile},
		"gateway-1/latin1.csv":     {"time,device_id,temperature_c\n2026-01-05T10:00:00Z,caf\xe9,1\n", "not valid UTF-8", 1, "device_id", landing.KindFile},
		// JSON: a broken line is a broken row, a broken encoding or array
		// a broken file.
		"gateway-1/twice.jsonl":  {`{"time":"2026-01-05T10:00:00Z","device_id":"d","temperature_c":1,"temperature_c":2}` + "\n", "a key appears twice", 1, "", landing.KindRow},
		"gateway-1/nan.jsonl":    {`{"time":"2026-01-05T10:00:00Z","device_id":"d","temperature_c":NaN}` + "\n", "NaN is not a JSON number", 1, "temperature_c", landing.KindRow},
		"gateway-1/latin1.jsonl": {"{\"time\":\"2026-01-05T10:00:00Z\",\"device_id\":\"caf\xe9\",\"temperature_c\":1}\n", "invalid UTF-8", 1, "", landing.KindFile},
		"gateway-1/number.json":  {`[{"time":"2026-01-05T10:00:00Z","device_id":"d","temperature_c":1},42]`, "where an object was expected", 0, "", landing.KindFile},
	}
	// A page whose bytes no longer match the crc in its header.
	withCRC := pagecrc.WithChecksums(t, parquetFile(t, readings(1, 2, 10)))
	changed := pagecrc.FlipLastValueBit(withCRC, pagecrc.Pages(t, withCRC, 0, "temperature_c")[0])
	bad["gateway-1/changed-page.parquet"] = struct {
		body   string
		reason string
		row    int64
		column string
		kind   string
	}{string(changed), "page checksum mismatch in row group 1 of 1, page 1", 0, "temperature_c", landing.KindFile}
	for k, b := range bad {
		e.put(t, k, []byte(b.body))
	}
	e.put(t, "gateway-1/zz-good.csv", csvFile(readings(1, 1, 10), false, false))

	rep, err := ingest.Run(ctx, e.config())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loaded != 1 || rep.Quarantined != len(bad) || !rep.Partial() {
		t.Fatalf("loaded %d quarantined %d: %+v", rep.Loaded, rep.Quarantined, rep.Files)
	}
	for _, f := range rep.Files {
		want, isBad := bad[f.Key]
		if !isBad {
			continue
		}
		if f.Status != ingest.Quarantined || !strings.Contains(f.Reason, f.Key) || !strings.Contains(f.Reason, want.reason) {
			t.Errorf("%s: %s %q", f.Key, f.Status, f.Reason)
		}
		// The file is kept with a report beside it.
		raw, _, err := storage.ReadAll(ctx, e.landing, f.QuarantinedTo+".error.json")
		if err != nil {
			t.Fatalf("%s: no report: %v", f.Key, err)
		}
		var r landing.Report
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if r.Key != f.Key || r.Reason == "" || r.Hint == "" || r.Row != want.row || r.Column != want.column || r.Kind != want.kind {
			t.Errorf("%s: report %+v, want row %d, column %q, kind %s", f.Key, r, want.row, want.column, want.kind)
		}
		if body, _, err := storage.ReadAll(ctx, e.landing, f.QuarantinedTo); err != nil || string(body) != want.body {
			t.Errorf("%s: quarantined copy %q, %v", f.Key, body, err)
		}
	}
	// Null times were rejected, never written as zero.
	for _, row := range tableRows(t, e) {
		if strings.Contains(row, "|0|") {
			t.Fatalf("zero time written: %s", row)
		}
	}
	if n := len(tableRows(t, e)); n != 20 {
		t.Fatalf("rows %d, want 20", n)
	}
	// A run over what is left loads nothing: quarantined files are not listed again.
	rep, err = ingest.Run(ctx, e.config())
	if err != nil || len(rep.Files) != 0 {
		t.Fatalf("rerun: %+v, %v", rep.Files, err)
	}
}

func TestOverlappingRuns(t *testing.T) {
	for name, open := range map[string]func(*testing.T) env{"local": localEnv, "s3": s3Env} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := open(t)
			want := dropGatewayFiles(t, e)
			var wg sync.WaitGroup
			results := make([]error, 2)
			reports := make([]*ingest.Report, 2)
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cfg := e.config()
					cfg.Holder = landing.Holder{Token: fmt.Sprintf("run-%d", i)}
					reports[i], results[i] = ingest.Run(ctx, cfg)
				}()
			}
			wg.Wait()
			loaded := 0
			for i, err := range results {
				switch {
				case err == nil:
					loaded += reports[i].Loaded
				case errors.Is(err, ingest.ErrLeaseHeld):
					var held *landing.LeaseHeldError
					if !errors.As(err, &held) || held.Holder == "" {
						t.Fatalf("lease error without holder: %v", err)
					}
				default:
					t.Fatalf("run %d: %v", i, err)
				}
			}
			if loaded != 20 {
				t.Fatalf("%d files loaded in all, want 20", loaded)
			}
			tbl, err := e.lake.LoadTable(ctx, tableName)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, b := range tbl.Batches() {
				if seen[b.BatchID] {
					t.Fatalf("batch %s committed twice", b.BatchID)
				}
				seen[b.BatchID] = true
			}
			if got := tableRows(t, e); !slices.Equal(got, want) {
				t.Fatalf("rows %d, want %d", len(got), len(want))
			}
		})
	}
}

func TestLeaseExpiresAndIsTakenOver(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	now := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	key := landing.LeaseKey("iot.readings", "")
	lease := func(holder string) landing.LeaseOptions {
		return landing.LeaseOptions{Table: "iot.readings", Holder: landing.Holder{Token: holder}, TTL: time.Minute, Now: clock}
	}
	first, err := landing.AcquireLease(ctx, e.landing, lease("crashed-run"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := landing.AcquireLease(ctx, e.landing, lease("second")); !errors.Is(err, landing.ErrLeaseHeld) {
		t.Fatalf("unexpired lease: %v", err)
	}
	now = now.Add(2 * time.Minute) // the first run died without releasing
	second, err := landing.AcquireLease(ctx, e.landing, lease("second"))
	if err != nil {
		t.Fatalf("expired lease not taken over: %v", err)
	}
	if err := first.Renew(ctx); !errors.Is(err, landing.ErrLeaseTaken) {
		t.Fatalf("renew of a taken-over lease: %v", err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.landing.Stat(ctx, key); err != nil {
		t.Fatalf("the old holder released the new holder's lease: %v", err)
	}
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.landing.Stat(ctx, key); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("lease not released: %v", err)
	}
}

func TestDryRunAndMaxFiles(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	for i := range 3 {
		e.put(t, fmt.Sprintf("gw/%d.csv", i), csvFile(readings(1, i, 5), false, false))
	}
	cfg := e.config()
	cfg.DryRun = true
	rep, err := ingest.Run(ctx, cfg)
	if err != nil || len(rep.Files) != 3 || rep.Files[0].Status != ingest.WouldLoad {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	if len(e.keys(t, "")) != 3 {
		t.Fatal("dry run changed the landing bucket")
	}
	if _, err := e.lake.LoadTable(ctx, tableName); !errors.Is(err, lake.ErrTableNotFound) {
		t.Fatalf("dry run created the table: %v", err)
	}
	cfg = e.config()
	cfg.MaxFiles = 2
	rep, err = ingest.Run(ctx, cfg)
	if err != nil || rep.Loaded != 2 || !rep.Remaining {
		t.Fatalf("max files: %+v, %v", rep, err)
	}
	if left := e.keys(t, ""); !slices.Equal(left, []string{"gw/2.csv"}) {
		t.Fatalf("left %v", left)
	}
	// A key loaded before and sent again: a dry run says a real run
	// deletes it (the same size) or quarantines it (another size), and
	// deletes nothing.
	e.put(t, "gw/0.csv", csvFile(readings(1, 0, 5), false, false))
	e.put(t, "gw/1.csv", csvFile(readings(1, 0, 7), false, false))
	cfg = e.config()
	cfg.DryRun = true
	rep, err = ingest.Run(ctx, cfg)
	if err != nil || len(rep.Files) != 3 || rep.Files[0].Status != ingest.AlreadyLoaded || rep.Files[1].Status != ingest.AlreadyLoaded ||
		!strings.HasSuffix(rep.Files[0].Reason, "; a run without --dry-run deletes it if it holds the content loaded (it quarantines it otherwise)") ||
		!strings.HasSuffix(rep.Files[1].Reason, ": a run without --dry-run quarantines it as other content under a loaded key") {
		t.Fatalf("dry run of loaded keys: %+v, %v", rep, err)
	}
	if left := e.keys(t, ""); !slices.Equal(left, []string{"gw/0.csv", "gw/1.csv", "gw/2.csv"}) {
		t.Fatalf("the dry run changed the landing bucket: %v", left)
	}
}

func TestNoCreate(t *testing.T) {
	e := localEnv(t)
	e.put(t, "gw/a.csv", csvFile(readings(1, 0, 5), false, false))
	cfg := e.config()
	cfg.NoCreate = true
	if _, err := ingest.Run(context.Background(), cfg); !errors.Is(err, ingest.ErrNoTable) {
		t.Fatalf("err = %v, want ErrNoTable", err)
	}
	if len(e.keys(t, "gw/")) != 1 {
		t.Fatal("file touched")
	}
}

func TestHiddenAndPartialFilesAreLeftAlone(t *testing.T) {
	e := localEnv(t)
	body := csvFile(readings(1, 0, 5), false, false)
	for _, k := range []string{"gw/a.csv", "gw/.hidden.csv", "gw/b.csv.tmp", "gw/c.csv.part", ".cache/x.csv", "gw/d.csv~"} {
		e.put(t, k, body)
	}
	rep, err := ingest.Run(context.Background(), e.config())
	if err != nil || rep.Loaded != 1 || len(rep.Files) != 1 || rep.Files[0].Key != "gw/a.csv" {
		t.Fatalf("report %+v, %v", rep, err)
	}
	if got := e.keys(t, ""); len(got) != 5 {
		t.Fatalf("landing after the run: %v", got)
	}
}

func TestTableCreationProblemsQuarantineNothing(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	for i := range 3 {
		e.put(t, fmt.Sprintf("gw/%d.csv", i), csvFile(readings(1, i, 5), false, false))
	}
	cfg := e.config()
	cfg.SeriesKey = []string{"nope"} // an operator's typo
	_, err := ingest.Run(ctx, cfg)
	if !errors.Is(err, ingest.ErrCannotCreate) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("err = %v, want ErrCannotCreate naming the column", err)
	}
	if got := e.keys(t, ""); len(got) != 3 {
		t.Fatalf("files moved: %v", got)
	}
	// With the setting fixed, a bad first file does not block the others:
	// it is tried again once a good file created the table.
	e.put(t, "gw/0.csv", []byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,d\n"))
	rep, err := ingest.Run(ctx, e.config())
	if err != nil || rep.Loaded != 2 || rep.Quarantined != 1 || rep.Files[0].Status != ingest.Quarantined {
		t.Fatalf("report %+v, %v", rep.Files, err)
	}
}

func TestMissingLandingFolderIsAnError(t *testing.T) {
	e := localEnv(t)
	missing, err := storage.NewLocalStore(t.TempDir() + "/typo")
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.config()
	cfg.Landing = missing
	if _, err := ingest.Run(context.Background(), cfg); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
	if _, err := missing.Stat(context.Background(), landing.LeaseKey("iot.readings", "")); !errors.Is(err, storage.ErrNotExist) {
		t.Fatal("the run created a lease in the missing folder")
	}
}

// TestLeaseRenewedDuringALongFile: the lease is renewed in the background,
// so a file that takes longer than the TTL keeps it.
func TestLeaseRenewedDuringALongFile(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gw/a.csv", csvFile(readings(1, 0, 5), false, false))
	cfg := e.config()
	// A TTL long enough that a busy machine renews it in time (every
	// third of it), short enough that the file outlasts it three times.
	cfg.LeaseTTL = time.Second
	var other error
	cfg.AfterCommit = func(string) error {
		time.Sleep(3500 * time.Millisecond) // a long file: more than three TTLs
		_, other = landing.AcquireLease(ctx, e.landing, landing.LeaseOptions{Table: "iot.readings", Holder: landing.Holder{Token: "other"}, TTL: time.Minute})
		return nil
	}
	if _, err := ingest.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(other, landing.ErrLeaseHeld) {
		t.Fatalf("another run got the lease during a long file: %v", other)
	}
}

// TestLeaseLostStopsTheRun: when another run takes the lease over, the run
// stops with ErrLeaseLost, which is not ErrLeaseHeld (exit 1, not 11:
// this run did something), and the files it did not load stay.
func TestLeaseLostStopsTheRun(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gw/a.csv", csvFile(readings(1, 0, 5), false, false))
	e.put(t, "gw/b.csv", csvFile(readings(2, 0, 5), false, false))
	cfg := e.config()
	cfg.Parallel, cfg.FilesPerCommit = 1, 1
	cfg.LeaseTTL = 300 * time.Millisecond
	cfg.AfterCommit = func(key string) error {
		if key == "gw/a.csv" { // another run takes the lease over
			if _, err := e.landing.Put(ctx, landing.LeaseKey("iot.readings", ""), strings.NewReader(`{"holder":"other"}`), storage.PutOptions{}); err != nil {
				return err
			}
			time.Sleep(time.Second) // more than a renewal period
		}
		return nil
	}
	_, err := ingest.Run(ctx, cfg)
	if !errors.Is(err, ingest.ErrLeaseLost) || errors.Is(err, landing.ErrLeaseHeld) {
		t.Fatalf("error %v, want ErrLeaseLost and not ErrLeaseHeld", err)
	}
	if left := e.keys(t, "gw/"); !slices.Contains(left, "gw/b.csv") {
		t.Errorf("landing after the lost lease: %v, want gw/b.csv kept", left)
	}
}

// TestCommitsAreFilled checks how files are grouped into metadata writes:
// a commit waits for up to FilesPerCommit prepared files (one snapshot
// each), and the deletes of one batch overlapping the next commit still
// report every file once.
func TestCommitsAreFilled(t *testing.T) {
	for _, tc := range []struct {
		perCommit    int
		wantVersions int // after the 20 files: v1 create, then the files, the one that created the table among them
	}{
		{perCommit: 1, wantVersions: 21},
		{perCommit: 7, wantVersions: 1 + 3}, // 7 + 7 + 6
		{perCommit: 100, wantVersions: 2},
	} {
		t.Run(fmt.Sprintf("per-commit-%d", tc.perCommit), func(t *testing.T) {
			ctx := context.Background()
			e := localEnv(t)
			want := dropGatewayFiles(t, e)
			cfg := e.config()
			cfg.FilesPerCommit = tc.perCommit
			cfg.CommitWait = time.Minute // batches fill unless the run is done
			seen := map[string]int{}
			cfg.OnFile = func(r ingest.FileResult) { seen[r.Key]++ }
			rep, err := ingest.Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Loaded != 20 || len(seen) != 20 {
				t.Fatalf("loaded %d, reported %d files", rep.Loaded, len(seen))
			}
			for k, n := range seen {
				if n != 1 {
					t.Errorf("%s reported %d times", k, n)
				}
			}
			if left := e.keys(t, ""); len(left) != 0 {
				t.Fatalf("landing not empty: %v", left)
			}
			tbl, err := e.lake.LoadTable(ctx, tableName)
			if err != nil {
				t.Fatal(err)
			}
			if tbl.Version() != tc.wantVersions || snapshotCount(t, e) != 20 {
				t.Errorf("version %d with %d snapshots, want version %d with 20", tbl.Version(), snapshotCount(t, e), tc.wantVersions)
			}
			if got := tableRows(t, e); !slices.Equal(got, want) {
				t.Fatalf("table rows differ from the files: %d rows, want %d", len(got), len(want))
			}
		})
	}
}

// TestFilesWithoutRowsAreLoaded: a header-only CSV and a zero-row Parquet
// file are loaded as 0 rows (their keys recorded as loaded, the files
// deleted, exit status not partial); sent again they are already loaded.
// A 0-byte file is quarantined as empty.
func TestFilesWithoutRowsAreLoaded(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gateway-1/00-good.csv", csvFile(readings(1, 0, 10), false, false))
	if _, err := ingest.Run(ctx, e.config()); err != nil {
		t.Fatal(err)
	}
	empty := map[string][]byte{
		"gateway-1/header-only.csv":    []byte("time,device_id,temperature_c\n"),
		"gateway-1/header-only.csv.gz": gzipped(t, []byte("time,device_id,temperature_c\r\n")),
		"gateway-1/zero-rows.parquet":  parquetFile(t, nil),
	}
	for k, b := range empty {
		e.put(t, k, b)
	}
	e.put(t, "gateway-1/zero-bytes.csv", nil)
	rep, err := ingest.Run(ctx, e.config())
	if err != nil || rep.Loaded != len(empty) || rep.Rows != 0 || rep.Quarantined != 1 {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	for _, f := range rep.Files {
		if f.Key == "gateway-1/zero-bytes.csv" {
			if f.Status != ingest.Quarantined || !strings.Contains(f.Reason, "empty file (0 bytes)") {
				t.Errorf("0-byte file: %+v", f)
			}
			continue
		}
		if f.Status != ingest.Loaded || f.Rows != 0 || f.SnapshotID == 0 {
			t.Errorf("%s: %+v", f.Key, f)
		}
	}
	if left := e.keys(t, "gateway-1/"); len(left) != 0 {
		t.Fatalf("landing files left: %v", left)
	}
	if n := len(tableRows(t, e)); n != 10 {
		t.Fatalf("rows %d, want 10", n)
	}
	for k, b := range empty {
		e.put(t, k, b)
	}
	rep, err = ingest.Run(ctx, e.config())
	if err != nil || rep.AlreadyLoaded != len(empty) {
		t.Fatalf("sent again: %+v, %v", rep, err)
	}
}

// TestDuplicateRowsAreKeptAndCounted: rows repeating the series key and
// time of an earlier row of the file are loaded, and the report counts them,
// in time order or not, across days.
func TestDuplicateRowsAreKeptAndCounted(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	body := "time,device_id,temperature_c\n" +
		"2026-01-05T10:00:00Z,d1,1.5\n2026-01-05T10:00:00Z,d2,2.5\n2026-01-05T10:00:00Z,d1,3.5\n2026-01-05T10:00:00Z,d1,3.5\n" +
		"2026-01-06T10:00:00Z,d2,1\n2026-01-05T09:00:00Z,d2,1\n2026-01-06T10:00:00Z,d2,2\n2026-01-06T10:00:00Z,d1,2\n"
	e.put(t, "gateway-1/dup.csv", []byte(body))
	rep, err := ingest.Run(ctx, e.config())
	if err != nil || rep.Loaded != 1 || rep.Rows != 8 || rep.Files[0].DuplicateRows != 3 {
		t.Fatalf("run: %+v, %v; want 8 rows loaded, 3 of them repeats", rep, err)
	}
	b, err := json.Marshal(rep.Files[0])
	if err != nil || !strings.Contains(string(b), `"duplicate_rows":3`) {
		t.Fatalf("JSON %s, %v", b, err)
	}
	if n := len(tableRows(t, e)); n != 8 {
		t.Fatalf("rows %d, want 8", n)
	}
}

// TestUnreadableFirstFileIsQuarantined: before the table exists, a file
// no setting can make readable (a broken Parquet file) is quarantined at
// once rather than failing every run; the next file creates the table.
func TestUnreadableFirstFileIsQuarantined(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gw/a-broken.parquet", []byte("PAR1 not really a parquet file PAR1"))
	rep, err := ingest.Run(ctx, e.config())
	if err != nil || rep.Quarantined != 1 || rep.Loaded != 0 || !strings.Contains(rep.Files[0].Reason, "not a readable parquet file") {
		t.Fatalf("run with only the broken file: %+v, %v", rep, err)
	}
	if got := e.keys(t, "gw/"); len(got) != 0 {
		t.Fatalf("landing after the run: %v, want the broken file quarantined", got)
	}
	e.put(t, "gw/b.csv", csvFile(readings(1, 0, 5), false, false))
	if rep, err := ingest.Run(ctx, e.config()); err != nil || rep.Loaded != 1 {
		t.Fatalf("the next run: %+v, %v", rep, err)
	}
}
