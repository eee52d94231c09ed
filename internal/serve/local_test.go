package serve_test

import (
	"compress/gzip"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/serve"
	"github.com/timelake/timelake/internal/testutil/wait"
)

// TestServeWaitsForFilesBeingWritten: on a local landing folder, a file
// announced while it is not complete (modified within the settle time) is
// reported waiting once, held back until it may be complete, and then
// loaded, without a sweep and without loading it again and again
// meanwhile.
func TestServeWaitsForFilesBeingWritten(t *testing.T) {
	const settle = 3 * time.Second // longer than a load waits (ingest.MaxSettleWait)
	dir, _, r := serveLocal(t, func(c *ingest.Config) { c.SettleTime, c.OpenEndSettleTime = settle, -1 })
	land(t, r, dir, "gw/a.csv", csv(1, 4))
	wait.For(t, "gw/a.csv loaded", func() bool { return r.loaded("gw/a.csv") })
	res := r.resultsOf("gw/a.csv")
	if len(res) != 2 || res[0].Status != ingest.Waiting || res[0].ReadyAt.IsZero() || res[1].Rows != 4 {
		t.Fatalf("results %+v, want waiting once, then loaded", res)
	}
}

// TestServeHoldsAGzipLoggerPausedMidRow: a gzip logger appends a member per
// chunk and pauses in the middle of a row for longer than the settle time:
// the file is a complete gzip stream whose text is cut. serve reports it
// waiting for its open end and loads it only once the row is whole, every
// value exact.
func TestServeHoldsAGzipLoggerPausedMidRow(t *testing.T) {
	dir, l, r := serveLocal(t, func(c *ingest.Config) { c.SettleTime, c.OpenEndSettleTime = time.Second, 10*time.Second })
	if err := os.MkdirAll(filepath.Join(dir, "gw"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gw", "a.csv.gz")
	text := csv(1, 4)
	cut := len(text) - 3 // the last value "1003.5" cut to "100"
	appendMember := func(chunk string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		zw := gzip.NewWriter(f)
		if _, err := zw.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		// The logger paused longer than the settle time, and the file is
		// held back for its open end until 8 s from now.
		old := time.Now().Add(-2 * time.Second)
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	appendMember(text[:cut])
	if code := notify(t, r, "", eventBody("tigris", "any", "gw/a.csv.gz")); code != 200 {
		t.Fatalf("notify: %d", code)
	}
	wait.For(t, "gw/a.csv.gz judged", func() bool { return len(r.resultsOf("gw/a.csv.gz")) > 0 })
	if res := r.resultsOf("gw/a.csv.gz"); res[0].Status != ingest.Waiting ||
		!strings.Contains(res[0].Reason, "its decompressed text's last line has no line end") {
		t.Fatalf("results %+v, want waiting for its open end", res)
	}
	appendMember(text[cut:]) // before the file is judged again
	wait.For(t, "gw/a.csv.gz loaded", func() bool {
		res := r.resultsOf("gw/a.csv.gz")
		return res[len(res)-1].Status == ingest.Loaded
	})
	if res := r.resultsOf("gw/a.csv.gz"); res[len(res)-1].Rows != 4 {
		t.Fatalf("results %+v, want 4 rows loaded", res)
	}
	at := readBack(t, l, tableName.String())
	defer at.Release()
	var temps []string
	col := at.Column(at.Schema().FieldIndices("temperature_c")[0])
	for _, chunk := range col.Data().Chunks() {
		for i := range chunk.Len() {
			temps = append(temps, chunk.ValueStr(i))
		}
	}
	slices.Sort(temps)
	if want := []string{"1000.5", "1001.5", "1002.5", "1003.5"}; !slices.Equal(temps, want) {
		t.Fatalf("temperatures %v, want %v", temps, want)
	}
}

// serveLocal starts a serve of a local landing folder (dir) into a local
// lake, its ingest settings as set makes them, holding its lease.
func serveLocal(t *testing.T, set func(*ingest.Config)) (string, *lake.Lake, *running) {
	t.Helper()
	dir, store, l := localPlace(t, nil)
	ic := ingest.Config{Landing: store, Lake: l, Table: tableName}
	set(&ic)
	r := start(t, serve.Config{Ingest: ic, Sweep: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	wait.For(t, "the lease", func() bool { code, _ := health(r); return code == 200 })
	return dir, l, r
}

// land writes key (its folders too) into the local landing folder dir and
// announces it to r.
func land(t *testing.T, r *running, dir, key, body string) {
	t.Helper()
	put(t, dir, key, body)
	if code := notify(t, r, "", eventBody("tigris", "any", key)); code != 200 {
		t.Fatalf("notify %s: %d", key, code)
	}
}
