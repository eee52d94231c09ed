package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/serve"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/wait"
)

// TestServeRoutes: a routed serve of one local landing folder loads each
// file into its route's table: a table a route names, and one named by
// the key's folder, made when a notification announces its first file. A
// key no route takes is reported once and left; a table whose file cannot
// create it fails alone (its health says so) while the others load.
func TestServeRoutes(t *testing.T) {
	// Waiting before the start: a file that cannot create its table, and a
	// key no route takes.
	dir, store, l := localPlace(t, map[string]string{
		"events/gw-1/bad.csv": "time,device_id,v\n2026-01-05T10:00:00Z,d1\n", "stray.csv": csv(9, 2)})
	routes, err := route.Parse([]string{"readings/**=iot.readings", "events/**=iot.events", "meters/*/**=meters.{2}"})
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, serve.Config{Ingest: ingest.Config{Landing: store, Lake: l, SettleTime: -1, OpenEndSettleTime: -1}, Routes: routes, Sweep: time.Hour,
		LeaseRetry: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	wait.For(t, "the failing table reported", func() bool {
		_, body := health(r)
		return strings.Contains(body, "iot.events: the last load failed")
	})

	land(t, r, dir, "readings/gw-1/a.csv", csv(1, 4))
	land(t, r, dir, "meters/m7/b.csv", csv(2, 3))
	land(t, r, dir, "stray.csv", csv(9, 2)) // announced again: reported once
	wait.For(t, "the routed files loaded", func() bool { return r.loaded("readings/gw-1/a.csv", "meters/m7/b.csv") })
	for table, want := range map[string]int64{"iot.readings": 4, "meters.m7": 3} {
		if got := rowsOf(t, l, table); got != want {
			t.Errorf("%s: %d rows, want %d", table, got, want)
		}
	}
	for _, key := range []string{"events/gw-1/bad.csv", "stray.csv"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(key))); err != nil {
			t.Errorf("%s not left in the landing: %v", key, err)
		}
	}
	if res := r.resultsOf("stray.csv"); len(res) != 0 {
		t.Errorf("stray.csv loaded: %+v", res)
	}

	code, body := health(r)
	var h serve.Health
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatalf("healthz %d %s: %v", code, body, err)
	}
	if code != 503 || h.Unrouted != 1 || !strings.Contains(h.Reason, "iot.events: the last load failed") ||
		h.Tables["iot.readings"].Status != "ok" || h.Tables["meters.m7"].Status != "ok" || h.Tables["iot.events"].Status != "unavailable" {
		t.Errorf("healthz %d %s", code, body)
	}
	for table, want := range map[string]int{"iot.readings": 200, "meters.m7": 200, "iot.events": 503, "iot.nope": 404} {
		resp, err := http.Get(r.url + "/healthz?table=" + table)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("healthz of %s: %d, want %d", table, resp.StatusCode, want)
		}
	}
	metrics := get(t, r.url+"/metrics")
	for _, want := range []string{
		"timelake_unrouted_keys_total 1", `timelake_files_loaded_total{table="iot.readings"} 1`,
		`timelake_files_loaded_total{table="meters.m7"} 1`, `timelake_rows_loaded_total{table="iot.readings"} 4`,
		`timelake_lease_held{table="iot.events"} 1`, `timelake_events_total{outcome="unrouted",provider="tigris"} 1`,
		`timelake_load_errors_total{table="iot.events"} `,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(metrics, `timelake_load_errors_total{table="iot.events"} 0`) {
		t.Errorf("no load error counted for iot.events")
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
}

// localPlace makes a local landing folder holding files (key: body) and a
// local lake.
func localPlace(t *testing.T, files map[string]string) (string, storage.Store, *lake.Lake) {
	t.Helper()
	dir := t.TempDir()
	store, err := storage.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lake.Open(context.Background(), t.TempDir(), lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for key, body := range files {
		put(t, dir, key, body)
	}
	return dir, store, l
}

// put writes key (its folders too) into the local landing folder dir.
func put(t *testing.T, dir, key, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rowsOf counts the rows of table, read back through the lake.
func rowsOf(t *testing.T, l *lake.Lake, table string) int64 {
	t.Helper()
	at := readBack(t, l, table)
	defer at.Release()
	return at.NumRows()
}

// loadTable loads table of l.
func loadTable(t *testing.T, l *lake.Lake, table string) *lake.Table {
	t.Helper()
	n, err := lake.ParseTableName(table)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := l.LoadTable(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// readBack reads table's rows through the lake; the caller releases them.
func readBack(t *testing.T, l *lake.Lake, table string) arrow.Table {
	t.Helper()
	at, err := loadTable(t, l, table).Iceberg().Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServeRoutesLeasePerTable: each routed table has its own lease: while
// another process holds one table's, the other tables load (their files
// found by the sweeps at start), and the held table loads once its lease is
// free.
func TestServeRoutesLeasePerTable(t *testing.T) {
	ctx := context.Background()
	_, store, l := localPlace(t, map[string]string{"readings/gw-1/a.csv": csv(1, 4), "events/gw-1/b.csv": csv(2, 3)})
	ic := ingest.Config{Landing: store, Lake: l, SettleTime: -1, OpenEndSettleTime: -1, Logger: slog.New(slog.DiscardHandler)}
	held := ic
	held.Table = lake.TableName{Namespace: "iot", Name: "events"}
	other, err := ingest.Open(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	release := sync.OnceFunc(other.Close)
	defer release()
	routes, err := route.Parse([]string{"readings/**=iot.readings", "events/**=iot.events"})
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, serve.Config{Ingest: ic, Routes: routes, Sweep: time.Hour, LeaseRetry: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	defer r.stop()
	wait.For(t, "iot.readings loaded", func() bool { return len(r.resultsOf("readings/gw-1/a.csv")) > 0 })
	code, body := health(r)
	if code != 503 || !strings.Contains(body, "iot.events: the lease is not held") || len(r.resultsOf("events/gw-1/b.csv")) != 0 {
		t.Fatalf("with the lease of iot.events held elsewhere: healthz %d %s; results %+v", code, body, r.resultsOf("events/gw-1/b.csv"))
	}
	release()
	wait.For(t, "iot.events loaded", func() bool { return len(r.resultsOf("events/gw-1/b.csv")) > 0 })
	wait.For(t, "healthy", func() bool { code, _ := health(r); return code == 200 })
	for table, want := range map[string]int64{"iot.readings": 4, "iot.events": 3} {
		if got := rowsOf(t, l, table); got != want {
			t.Errorf("%s: %d rows, want %d", table, got, want)
		}
	}
}

// TestServeRoutesTakeTurns: a table's backlog does not hold back another
// table's file: the tables load in turn, a batch each.
func TestServeRoutesTakeTurns(t *testing.T) {
	files := map[string]string{"events/gw-1/e.csv": csv(50, 2)}
	for i := range 20 {
		files[fmt.Sprintf("readings/gw-1/%02d.csv", i)] = csv(i, 2)
	}
	_, store, l := localPlace(t, files)
	routes, err := route.Parse([]string{"readings/**=iot.readings", "events/**=iot.events"})
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, serve.Config{Ingest: ingest.Config{Landing: store, Lake: l, SettleTime: -1, OpenEndSettleTime: -1, FilesPerCommit: 1},
		Routes: routes, Sweep: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	defer r.stop()
	wait.For(t, "every file loaded", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.results) == len(files)
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	at := slices.IndexFunc(r.results, func(f ingest.FileResult) bool { return f.Key == "events/gw-1/e.csv" })
	if at < 0 || at > 4 {
		keys := make([]string, len(r.results))
		for i, f := range r.results {
			keys[i] = f.Key
		}
		t.Fatalf("events/gw-1/e.csv loaded as file %d of %d, want within the first batches: %v", at+1, len(r.results), keys)
	}
}

// TestServeRoutesManyKeysOfANewTable: more keys of a table without a lane
// than one load takes, in one notification, are looked up with one listing
// of the landing: those there load into the table made from their folder,
// the others (not in the landing) open no table.
func TestServeRoutesManyKeysOfANewTable(t *testing.T) {
	dir, store, l := localPlace(t, nil)
	routes, err := route.Parse([]string{"meters/*/**=meters.{2}"})
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, serve.Config{Ingest: ingest.Config{Landing: store, Lake: l, SettleTime: -1, OpenEndSettleTime: -1, FilesPerCommit: 1},
		Routes: routes, Sweep: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	defer r.stop()
	wait.For(t, "the first listing", func() bool { code, _ := health(r); return code == 200 })
	var events []string
	for i := range 4 {
		key := fmt.Sprintf("meters/m1/%d.csv", i)
		put(t, dir, key, csv(i, 2))
		events = append(events, `{"eventVersion":"1","eventSource":"tigris","eventName":"OBJECT_CREATED_PUT","bucket":"any","object":{"key":"`+key+`","size":1}}`)
	}
	events = append(events, `{"eventVersion":"1","eventSource":"tigris","eventName":"OBJECT_CREATED_PUT","bucket":"any","object":{"key":"meters/ghost/x.csv","size":1}}`)
	if code := notify(t, r, "", `{"events":[`+strings.Join(events, ",")+`]}`); code != 200 {
		t.Fatalf("notify: %d", code)
	}
	wait.For(t, "the files of meters.m1 loaded", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.results) == 4
	})
	if got := rowsOf(t, l, "meters.m1"); got != 8 {
		t.Errorf("meters.m1: %d rows, want 8", got)
	}
	if _, body := health(r); strings.Contains(body, "meters.ghost") {
		t.Errorf("a table made for a key not in the landing: %s", body)
	}
}

// TestServeRouteDefaults: a routed serve gives each table's lane the
// table defaults of its route (Config.TableDefaults, with the lane's table
// set) before the lane is made: the table created from its first file
// takes them; a table without gets the run's.
func TestServeRouteDefaults(t *testing.T) {
	dir, store, l := localPlace(t, nil)
	routes, err := route.Parse([]string{"readings/**=iot.readings;partition=hour", "events/**=iot.events"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string
	r := start(t, serve.Config{Ingest: ingest.Config{Landing: store, Lake: l, SettleTime: -1, OpenEndSettleTime: -1, Partition: lake.Day},
		Routes: routes, Sweep: time.Hour, LeaseRetry: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		TableDefaults: func(c *ingest.Config) {
			mu.Lock()
			asked = append(asked, c.Table.String())
			mu.Unlock()
			if c.Table.String() == "iot.readings" {
				c.Partition, c.SeriesKey = lake.Hour, []string{"device_id"}
			}
		}})
	land(t, r, dir, "readings/gw-1/a.csv", csv(1, 4))
	land(t, r, dir, "events/gw-1/e.csv", csv(2, 3))
	wait.For(t, "the routed files loaded", func() bool { return r.loaded("readings/gw-1/a.csv", "events/gw-1/e.csv") })
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]lake.Contract{
		"iot.readings": {TimeColumn: "time", SeriesKey: []string{"device_id"}, Chunk: lake.Hour},
		"iot.events":   {TimeColumn: "time", Chunk: lake.Day},
	} {
		if got := loadTable(t, l, table).Contract(); got.TimeColumn != want.TimeColumn || !slices.Equal(got.SeriesKey, want.SeriesKey) || got.Chunk != want.Chunk {
			t.Errorf("%s: contract %+v, want %+v", table, got, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Sort(asked); !slices.Equal(asked, []string{"iot.events", "iot.readings"}) {
		t.Errorf("TableDefaults asked for %q, want each lane's table once", asked)
	}
}
