package serve

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/storage"
)

// newTestServer builds a server (not running) for the landing location
// s3://landing/in, whose store is never called by the handler.
func newTestServer(t *testing.T, auth Auth) *Server {
	t.Helper()
	s, err := New(Config{Auth: auth, MaxBody: 4096, Logger: slog.New(slog.DiscardHandler), Ingest: ingest.Config{
		Landing: storage.NewS3Store(nil, "landing", "in", storage.S3StoreOptions{}), Prefix: "gw"}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func post(t *testing.T, h http.Handler, body string, header ...string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/notify", strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func tigris(key string) string {
	return `{"events":[{"eventVersion":"1","eventSource":"tigris","eventName":"OBJECT_CREATED_PUT","bucket":"landing","object":{"key":"` + key + `"}}]}`
}

func TestNotifyAuth(t *testing.T) {
	s := newTestServer(t, Auth{Token: "s3cret-token", User: "tigris", Password: "pa55"})
	h := s.Handler()
	for _, tc := range []struct {
		name   string
		header []string
		code   int
	}{
		{"no authorization", nil, 401},
		{"wrong token", []string{"Authorization", "Bearer s3cret-tokeN"}, 401},
		{"token prefix", []string{"Authorization", "Bearer s3cret"}, 401},
		{"wrong password", []string{"Authorization", "Basic dGlncmlzOnBhNTU1"}, 401}, // tigris:pa555
		{"token as basic", []string{"Authorization", "Basic czNjcmV0LXRva2Vu"}, 401},
		{"token", []string{"Authorization", "Bearer s3cret-token"}, 200},
		{"token, scheme in lower case", []string{"Authorization", "bearer s3cret-token"}, 200},
		{"token without scheme", []string{"Authorization", "s3cret-token"}, 200},
		{"another scheme", []string{"Authorization", "Token s3cret-token"}, 401},
		{"basic", []string{"Authorization", "Basic dGlncmlzOnBhNTU="}, 200}, // tigris:pa55
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.single.queue.len()
			code, body := post(t, h, tigris("in/gw/"+tc.name+".csv"), tc.header...)
			if code != tc.code {
				t.Fatalf("status %d, want %d: %s", code, tc.code, body)
			}
			queued := s.single.queue.len() - before
			if (code == 200) != (queued == 1) {
				t.Fatalf("status %d and %d keys queued", code, queued)
			}
		})
	}
	// MinIO's probe needs no authentication; other methods are refused.
	for method, want := range map[string]int{http.MethodHead: 200, http.MethodGet: 405, http.MethodPut: 405} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/notify", nil))
		if rec.Code != want {
			t.Errorf("%s /notify: %d, want %d", method, rec.Code, want)
		}
	}
}

func TestNotifyEvents(t *testing.T) {
	s := newTestServer(t, Auth{})
	h := s.Handler()
	for _, tc := range []struct {
		name            string
		body            string
		code            int
		queued, ignored int
	}{
		{"tigris", tigris("in/gw/a.csv"), 200, 1, 0},
		{"the same again", tigris("in/gw/a.csv"), 200, 1, 0},
		{"minio", `{"EventName":"s3:ObjectCreated:Put","Key":"landing/in/gw/b c.csv","Records":[{"eventSource":"minio:s3","eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"landing"},"object":{"key":"in%2Fgw%2Fb+c.csv"}}}]}`, 200, 1, 0},
		{"aws", `{"Records":[{"eventSource":"aws:s3","eventName":"ObjectCreated:CompleteMultipartUpload","s3":{"bucket":{"name":"landing"},"object":{"key":"in/gw/d.parquet"}}}]}`, 200, 1, 0},
		{"ignored: a delete", `{"events":[{"eventName":"OBJECT_DELETED","bucket":"landing","object":{"key":"in/gw/e.csv"}}]}`, 200, 0, 1},
		{"ignored: another bucket", `{"events":[{"eventName":"OBJECT_CREATED_PUT","bucket":"other","object":{"key":"in/gw/e.csv"}}]}`, 200, 0, 1},
		{"ignored: outside the landing prefix", tigris("out/gw/e.csv"), 200, 0, 1},
		{"ignored: outside --prefix", tigris("in/other/e.csv"), 200, 0, 1},
		{"ignored: the quarantine", tigris("in/_rejected/gw/e.csv"), 200, 0, 1},
		{"ignored: the lease", tigris("in/_timelake/lease/iot.readings.json"), 200, 0, 1},
		{"ignored: a partial file", tigris("in/gw/e.csv.tmp"), 200, 0, 1},
		{"ignored: a hidden file", tigris("in/gw/.e.csv"), 200, 0, 1},
		{"ignored: not a key", tigris("in/gw/../e.csv"), 200, 0, 1},
		{"aws test event", `{"Service":"Amazon S3","Event":"s3:TestEvent","Bucket":"landing"}`, 200, 0, 0},
		{"malformed", `{"events":[`, 400, 0, 0},
		{"unknown shape", `{"hello":1}`, 400, 0, 0},
		{"too large", `{"events":[],"pad":"` + strings.Repeat("x", 5000) + `"}`, 413, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, h, tc.body)
			if code != tc.code {
				t.Fatalf("status %d, want %d: %s", code, tc.code, body)
			}
			if code != 200 {
				return
			}
			var res NotifyResult
			if err := json.Unmarshal([]byte(body), &res); err != nil {
				t.Fatal(err)
			}
			if res.Queued != tc.queued || res.Ignored != tc.ignored {
				t.Fatalf("%+v, want %d queued and %d ignored", res, tc.queued, tc.ignored)
			}
		})
	}
	got := s.single.queue.take(100, time.Now())
	want := []string{"gw/a.csv", "gw/b c.csv", "gw/d.parquet"}
	if len(got) != len(want) {
		t.Fatalf("queue %v, want %v (a key announced twice is queued once)", got, want)
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("%s not queued: %v", k, got)
		}
	}
}

func TestHealthAndMetrics(t *testing.T) {
	s := newTestServer(t, Auth{})
	h := s.Handler()
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, string(b)
	}
	if code, body := get("/healthz"); code != 503 || !strings.Contains(body, "starting") {
		t.Errorf("healthz before the lease: %d %s", code, body)
	}
	s.single.health.setLease(true, "")
	if code, body := get("/healthz"); code != 200 || !strings.Contains(body, `"status":"ok"`) {
		t.Errorf("healthz with the lease: %d %s", code, body)
	}
	s.single.health.sweepDone(errors.New("list landing: connection refused"))
	if code, body := get("/healthz"); code != 503 || !strings.Contains(body, "the last sweep failed: list landing: connection refused") {
		t.Errorf("healthz after a failed sweep: %d %s", code, body)
	}
	s.single.health.sweepDone(nil)
	s.single.health.loadDone(errors.New("commit: boom"))
	if code, body := get("/healthz"); code != 503 || !strings.Contains(body, "the last load failed") {
		t.Errorf("healthz after a failed load: %d %s", code, body)
	}
	s.single.health.loadDone(nil)
	s.single.health.setLease(false, "another ingest run holds the lease")
	if code, body := get("/healthz"); code != 503 || !strings.Contains(body, "the lease is not held: another ingest run") {
		t.Errorf("healthz without the lease: %d %s", code, body)
	}

	post(t, h, tigris("in/gw/a.csv"))
	post(t, h, `{"nope":1}`)
	code, body := get("/metrics")
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	for _, want := range []string{
		"timelake_files_loaded_total 0", "timelake_files_quarantined_total 0", "timelake_rows_loaded_total 0",
		"timelake_commit_seconds_count 0", "timelake_queue_depth 1", "timelake_landing_lag_seconds ",
		`timelake_events_total{outcome="queued",provider="tigris"} 1`, `timelake_notify_requests_total{code="400"} 1`,
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestCheckListen(t *testing.T) {
	for listen, ok := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true, "127.0.0.2:1": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "192.168.1.10:8080": false, "poller.example.net:8080": false,
	} {
		err := CheckListen(listen, Auth{})
		if (err == nil) != ok || (err != nil && !errors.Is(err, ErrNoAuth)) {
			t.Errorf("%s without auth: %v", listen, err)
		}
		if err := CheckListen(listen, Auth{Token: "t"}); err != nil {
			t.Errorf("%s with a token: %v", listen, err)
		}
	}
	if err := CheckListen("8080", Auth{}); err == nil || errors.Is(err, ErrNoAuth) {
		t.Errorf("no host:port: %v", err)
	}
}
