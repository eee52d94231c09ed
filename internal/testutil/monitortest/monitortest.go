// Package monitortest helps the tests of alerts and metrics: a webhook
// that records the alerts it gets, the Prometheus text format read back
// with the client library's parser (legacy metric names, as promtool
// checks them), and a command's stores on a local folder and on the test
// S3 server. It is only meant to be imported from _test.go files.
package monitortest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// Secret is the secret part of Webhook.URL: no output may hold it.
const Secret = "hookSecretXyz"

// Webhook is an alert receiver on 127.0.0.1.
type Webhook struct {
	srv     *httptest.Server
	mu      sync.Mutex
	alerts  []map[string]any
	refused map[string]bool // tables whose alerts it answers 400
	refusal int             // alerts it answered 400
}

// NewWebhook starts a webhook, closed when t ends.
func NewWebhook(t testing.TB) *Webhook {
	w := &Webhook{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var a map[string]any
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			rw.WriteHeader(http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if table, _ := a["table"].(string); w.refused[table] {
			w.refusal++
			rw.WriteHeader(http.StatusBadRequest)
			return
		}
		w.alerts = append(w.alerts, a)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

// URL is the webhook's URL, with a path that holds Secret as a Slack
// webhook's does.
func (w *Webhook) URL() string { return w.srv.URL + "/services/T0/B0/" + Secret }

// Refuse makes the webhook answer 400 (a permanent failure) to the alerts
// of table, which it does not record.
func (w *Webhook) Refuse(table string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refused == nil {
		w.refused = map[string]bool{}
	}
	w.refused[table] = true
}

// Refused is how many alerts the webhook answered 400 (Refuse).
func (w *Webhook) Refused() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refusal
}

// Texts are the alerts received, in order, as "severity event: text".
func (w *Webhook) Texts() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.alerts))
	for _, a := range w.alerts {
		sev, _ := a["severity"].(string)
		ev, _ := a["event"].(string)
		text, _ := a["text"].(string)
		out = append(out, sev+" "+ev+": "+text)
	}
	return out
}

// ParseMetrics reads the Prometheus text format, failing t when it does
// not parse.
func ParseMetrics(t testing.TB, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("the metrics do not parse: %v", err)
	}
	return mfs
}

// Gauge is the value of the gauge name whose labels include want.
func Gauge(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
next:
	for _, m := range mfs[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

// Stores runs test with the settings of a landing bucket and a warehouse
// for the command tree (LANDING_BUCKET, TIMELAKE_WAREHOUSE and, on S3,
// the AWS_* of the test server) and the landing store: local folders
// (subtest "local"), then buckets of the test S3 server (subtest "s3",
// skipped without it: s3test.FromEnv). For the tests of a command on both
// kinds of store.
func Stores(t *testing.T, test func(t *testing.T, env map[string]string, landing storage.Store)) {
	t.Run("local", func(t *testing.T) {
		dir := t.TempDir()
		st, err := storage.NewLocalStore(filepath.Join(dir, "landing"))
		if err != nil {
			t.Fatal(err)
		}
		test(t, map[string]string{"LANDING_BUCKET": filepath.Join(dir, "landing"), "TIMELAKE_WAREHOUSE": filepath.Join(dir, "lake")}, st)
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.FromEnv(t)
		land := srv.NewBucket(t)
		test(t, map[string]string{"LANDING_BUCKET": "s3://" + land, "TIMELAKE_WAREHOUSE": "s3://" + srv.NewBucket(t) + "/warehouse",
			"AWS_ENDPOINT_URL_S3": srv.Endpoint, "AWS_REGION": srv.Region, "AWS_ACCESS_KEY_ID": srv.AccessKey,
			"AWS_SECRET_ACCESS_KEY": srv.SecretKey}, storage.NewS3Store(srv.Client(t), land, "", storage.S3StoreOptions{}))
	})
}

// Put writes a landing file through st; in a folder (LANDING_BUCKET of
// env) it is dated a minute ago, so that ingest does not wait for it to
// settle.
func Put(t testing.TB, env map[string]string, st storage.Store, key, body string) {
	t.Helper()
	if _, err := st.Put(context.Background(), key, strings.NewReader(body), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, local := st.(*storage.LocalStore); local {
		old := time.Now().Add(-time.Minute)
		if err := os.Chtimes(filepath.Join(env["LANDING_BUCKET"], filepath.FromSlash(key)), old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// Warehouse opens the store of env's TIMELAKE_WAREHOUSE (a folder, or
// s3://bucket/prefix on the test S3 server), to change a table's files by
// hand.
func Warehouse(t testing.TB, env map[string]string) storage.Store {
	t.Helper()
	loc, err := storage.ParseLocation(env["TIMELAKE_WAREHOUSE"], false)
	if err != nil {
		t.Fatal(err)
	}
	if !loc.IsS3() {
		st, err := storage.NewLocalStore(loc.Dir)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	srv := s3test.FromEnv(t)
	return storage.NewS3Store(srv.Client(t), loc.Bucket, loc.Prefix, storage.S3StoreOptions{})
}

// ParseMetricsFile is ParseMetrics of the file at path.
func ParseMetricsFile(t testing.TB, path string) map[string]*dto.MetricFamily {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return ParseMetrics(t, f)
}
