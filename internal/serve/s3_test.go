package serve_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/serve"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
	"github.com/timelake/timelake/internal/testutil/wait"
)

var tableName = lake.TableName{Namespace: "iot", Name: "readings"}

// running is a server started by start.
type running struct {
	url  string
	stop func() error // cancels its context and returns what Run returned

	mu      sync.Mutex
	results []ingest.FileResult
}

func (r *running) resultsOf(key string) []ingest.FileResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ingest.FileResult
	for _, f := range r.results {
		if f.Key == key {
			out = append(out, f)
		}
	}
	return out
}

// loaded reports whether the last result of each key is loaded.
func (r *running) loaded(keys ...string) bool {
	for _, key := range keys {
		res := r.resultsOf(key)
		if len(res) == 0 || res[len(res)-1].Status != ingest.Loaded {
			return false
		}
	}
	return true
}

func start(t *testing.T, cfg serve.Config) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &running{url: "http://" + ln.Addr().String()}
	cfg.Listener = ln
	cfg.Ingest.OnFile = func(f ingest.FileResult) {
		r.mu.Lock()
		r.results = append(r.results, f)
		r.mu.Unlock()
	}
	s, err := serve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	var runErr error
	r.stop = func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}
	t.Cleanup(func() { _ = r.stop() })
	return r
}

func health(r *running) (int, string) {
	resp, err := http.Get(r.url + "/healthz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(b)
}

func notify(t *testing.T, r *running, token, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.url+"/notify", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// csv is a landing file of n rows whose values depend on seed.
func csv(seed, n int) string {
	var b strings.Builder
	b.WriteString("time,device_id,temperature_c\n")
	base := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC).Add(time.Duration(seed) * time.Hour)
	for i := range n {
		fmt.Fprintf(&b, "%s,dev-%d,%d.5\n", base.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i%3, seed*1000+i)
	}
	return b.String()
}

func eventBody(shape, bucket, key string) string {
	switch shape {
	case "tigris":
		return `{"events":[{"eventVersion":"1","eventSource":"tigris","eventName":"OBJECT_CREATED_PUT","eventTime":"2026-01-05T10:00:00Z","bucket":"` + bucket + `","object":{"key":"` + key + `","size":1}}]}`
	case "minio":
		return `{"EventName":"s3:ObjectCreated:Put","Key":"` + bucket + "/" + key + `","Records":[{"eventVersion":"2.0","eventSource":"minio:s3","eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"` + bucket + `"},"object":{"key":"` + strings.ReplaceAll(key, "/", "%2F") + `"}}}]}`
	case "aws":
		return `{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"` + bucket + `"},"object":{"key":"` + strings.ReplaceAll(key, " ", "+") + `"}}}]}`
	case "eventbridge":
		return `{"version":"0","detail-type":"Object Created","source":"aws.s3","detail":{"bucket":{"name":"` + bucket + `"},"object":{"key":"` + key + `"}}}`
	}
	panic(shape)
}

// TestServeS3 runs servers against the S3 server as a user would: events
// of every shape load their files, repeated and stale events change
// nothing, a run of ingest and a second server wait while one serves, a
// stop releases the lease, and sweeps load files no event announced.
func TestServeS3(t *testing.T) {
	ctx := context.Background()
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	landingBucket, lakeBucket := srv.NewBucket(t), srv.NewBucket(t)
	l, err := lake.Open(ctx, "s3://"+lakeBucket+"/warehouse", lake.Options{S3: client})
	if err != nil {
		t.Fatal(err)
	}
	store := storage.NewS3Store(client, landingBucket, "", storage.S3StoreOptions{})
	put := func(key, body string) {
		t.Helper()
		if _, err := store.Put(ctx, key, strings.NewReader(body), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const token = "a-long-webhook-token"
	cfg := serve.Config{
		Ingest: ingest.Config{Landing: store, Lake: l, Table: tableName, SeriesKey: []string{"device_id"}, ContentDedupe: true,
			LeaseTTL: 5 * time.Second},
		Auth: serve.Auth{Token: token}, Sweep: time.Hour, LeaseRetry: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler),
	}
	rows := map[string]int64{} // key -> rows expected in the table
	loaded := func(r *running, key string) func() bool {
		return func() bool { return r.loaded(key) }
	}

	a := start(t, cfg)
	wait.For(t, "the first server to take the lease", func() bool { code, _ := health(a); return code == 200 })

	// Events of each shape; 401 without or with a wrong token.
	for i, shape := range []string{"tigris", "minio", "aws", "eventbridge"} {
		key := "gw-" + shape + "/20260105 10" + fmt.Sprint(i) + ".csv"
		put(key, csv(i, 10+i))
		rows[key] = int64(10 + i)
		if code := notify(t, a, "", eventBody(shape, landingBucket, key)); code != 401 {
			t.Fatalf("%s without a token: %d", shape, code)
		}
		if code := notify(t, a, "wrong", eventBody(shape, landingBucket, key)); code != 401 {
			t.Fatalf("%s with a wrong token: %d", shape, code)
		}
		if code := notify(t, a, token, eventBody(shape, landingBucket, key)); code != 200 {
			t.Fatalf("%s: %d", shape, code)
		}
		wait.For(t, key+" loaded after its "+shape+" event", loaded(a, key))
		if got := a.resultsOf(key)[0].Rows; got != rows[key] {
			t.Fatalf("%s: %d rows, want %d", key, got, rows[key])
		}
	}

	// A file that cannot be loaded is quarantined, as by ingest.
	put("gw/bad.csv", "time,device_id,temperature_c\n2026-01-05T10:00:00Z,dev-1,warm\n")
	notify(t, a, token, eventBody("tigris", landingBucket, "gw/bad.csv"))
	wait.For(t, "gw/bad.csv quarantined", func() bool { return len(a.resultsOf("gw/bad.csv")) > 0 })
	if r := a.resultsOf("gw/bad.csv")[0]; r.Status != ingest.Quarantined || r.QuarantinedTo != "_rejected/gw/bad.csv" {
		t.Fatalf("bad file: %+v", r)
	}

	// The same event three times loads once; an event for a key that does
	// not exist is answered and changes nothing. A file announced after
	// them shows they were taken.
	put("gw/thrice.csv", csv(7, 5))
	rows["gw/thrice.csv"] = 5
	for range 3 {
		if code := notify(t, a, token, eventBody("aws", landingBucket, "gw/thrice.csv")); code != 200 {
			t.Fatal(code)
		}
	}
	if code := notify(t, a, token, eventBody("tigris", landingBucket, "gw/missing.csv")); code != 200 {
		t.Fatalf("missing key: %d", code)
	}
	wait.For(t, "gw/thrice.csv", loaded(a, "gw/thrice.csv"))
	put("gw/zz-after.csv", csv(8, 4))
	rows["gw/zz-after.csv"] = 4
	notify(t, a, token, eventBody("minio", landingBucket, "gw/zz-after.csv"))
	wait.For(t, "gw/zz-after.csv", loaded(a, "gw/zz-after.csv"))
	if res := a.resultsOf("gw/thrice.csv"); len(res) != 1 {
		t.Fatalf("gw/thrice.csv reported %d times: %+v", len(res), res)
	}
	if res := a.resultsOf("gw/missing.csv"); len(res) != 0 {
		t.Fatalf("a missing key was reported: %+v", res)
	}
	if code, body := health(a); code != 200 {
		t.Fatalf("health after a missing key: %d %s", code, body)
	}

	// While it serves, a cron ingest exits on the lease and a second
	// server waits for it, taking its queue with it when it gets it.
	if _, err := ingest.Run(ctx, cfg.Ingest); !errors.Is(err, ingest.ErrLeaseHeld) {
		t.Fatalf("ingest while serving: %v", err)
	}
	b := start(t, cfg)
	wait.For(t, "the second server to report the lease held", func() bool {
		code, body := health(b)
		return code == 503 && strings.Contains(body, "holds the lease")
	})
	put("gw/during-b.csv", csv(9, 3))
	rows["gw/during-b.csv"] = 3
	if code := notify(t, b, token, eventBody("tigris", landingBucket, "gw/during-b.csv")); code != 200 {
		t.Fatalf("event to the waiting server: %d", code)
	}
	if err := a.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	wait.For(t, "the second server to load what it was told while it waited", loaded(b, "gw/during-b.csv"))
	if err := b.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := store.Stat(ctx, landing.LeaseKey(tableName.String(), "")); !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("lease after the stop: %v", err)
	}

	// Files no event announced: the first sweep at start loads them, and
	// later sweeps those that come after.
	put("gw/quiet-1.csv", csv(10, 6))
	rows["gw/quiet-1.csv"] = 6
	cfg.Sweep = 200 * time.Millisecond
	c := start(t, cfg)
	wait.For(t, "the first sweep", loaded(c, "gw/quiet-1.csv"))
	put("gw/quiet-2.csv", csv(11, 7))
	rows["gw/quiet-2.csv"] = 7
	wait.For(t, "a later sweep", loaded(c, "gw/quiet-2.csv"))
	if err := c.stop(); err != nil {
		t.Fatal(err)
	}

	// The table holds every file once, with its rows; the landing bucket
	// holds only the quarantined file and its report.
	tbl, err := l.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, bi := range tbl.Batches() {
		if _, dup := got[bi.BatchID]; dup {
			t.Fatalf("batch %s loaded twice", bi.BatchID)
		}
		got[bi.BatchID] = bi.Rows
	}
	if fmt.Sprint(got) != fmt.Sprint(rows) {
		t.Fatalf("batches %v\nwant     %v", got, rows)
	}
	var left []string
	if err := store.List(ctx, "", func(o storage.ObjectInfo) error { left = append(left, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(left) != "[_rejected/gw/bad.csv _rejected/gw/bad.csv.error.json]" {
		t.Fatalf("landing bucket: %v", left)
	}
}
