package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	servecmd "github.com/timelake/timelake/internal/commands/serve"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// TestServeGatewayMetricsAndAlerts, with a local landing folder and on S3:
// /metrics has the gateways' figures beside serve's own, in the text format
// the client library's parser reads; a quarantine is alerted from serve;
// the webhook's secret is never printed.
func TestServeGatewayMetricsAndAlerts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (map[string]string, storage.Store)
	}{
		{"local", func(t *testing.T) (map[string]string, storage.Store) {
			dir := t.TempDir()
			st, err := storage.NewLocalStore(filepath.Join(dir, "landing"))
			if err != nil {
				t.Fatal(err)
			}
			return map[string]string{"LANDING_BUCKET": filepath.Join(dir, "landing"), "TIMELAKE_WAREHOUSE": filepath.Join(dir, "lake")}, st
		}},
		{"s3", func(t *testing.T) (map[string]string, storage.Store) {
			srv := s3test.FromEnv(t)
			land := srv.NewBucket(t)
			return map[string]string{"LANDING_BUCKET": "s3://" + land, "TIMELAKE_WAREHOUSE": "s3://" + srv.NewBucket(t) + "/warehouse",
					"AWS_ENDPOINT_URL_S3": srv.Endpoint, "AWS_REGION": srv.Region, "AWS_ACCESS_KEY_ID": srv.AccessKey,
					"AWS_SECRET_ACCESS_KEY": srv.SecretKey},
				storage.NewS3Store(srv.Client(t), land, "", storage.S3StoreOptions{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, st := tc.setup(t)
			var mu sync.Mutex
			var alerts []string
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var a map[string]any
				json.NewDecoder(r.Body).Decode(&a)
				mu.Lock()
				alerts = append(alerts, a["event"].(string)+": "+a["text"].(string))
				mu.Unlock()
			}))
			defer hook.Close()
			env["TIMELAKE_TABLE"], env["TIMELAKE_SERIES_KEY"], env["TIMELAKE_CACHE_DIR"] = "iot.readings", "device_id", "off"
			env["TIMELAKE_NOTIFY_URL"], env["TIMELAKE_EXPECT_EVERY"] = hook.URL+"/services/T0/B0/hookSecretXyz", "1h"
			for key, body := range map[string]string{
				"gw-1/a.csv":   "time,device_id,temperature_c\n2026-01-05T10:00:00Z,a,1.5\n",
				"gw-2/bad.csv": "time;device_id\n2026-01-05T10:00:00Z;b\n",
			} {
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
			o, code, msg := parse(t, env)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, msg)
			}
			out := &syncBuffer{}
			ios, _, errOut := iostreams.Test()
			ios.Out = out
			o.IO = ios
			o.StatusEvery = 50 * time.Millisecond
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			o.Server.Listener = ln
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- servecmd.RunServe(ctx, o) }()
			deadline := time.Now().Add(time.Minute)
			var body string
			for {
				resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					body = string(b)
				}
				mu.Lock()
				quarantined := strings.Contains(strings.Join(alerts, "\n"), "quarantine: ")
				mu.Unlock()
				if quarantined && strings.Contains(body, `timelake_gateway_files_last_day{gateway="gw-1",outcome="loaded",table="iot.readings"} 1`) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no gateway metrics or alert; /metrics:\n%s\noutput:\n%s", body, out)
				}
				time.Sleep(50 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			p := expfmt.NewTextParser(model.LegacyValidation)
			mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
			if err != nil {
				t.Fatalf("/metrics does not parse: %v", err)
			}
			for _, name := range []string{"timelake_files_loaded_total", "timelake_gateway_last_landed_timestamp_seconds",
				"timelake_gateway_silent", "timelake_gateways", "timelake_gateway_expected_interval_seconds", "timelake_status_timestamp_seconds"} {
				if mfs[name] == nil {
					t.Errorf("/metrics has no %s", name)
				}
			}
			mu.Lock()
			got := strings.Join(alerts, "\n")
			mu.Unlock()
			if !strings.HasPrefix(got, "quarantine: timelake iot.readings: 1 file quarantined: gw-2/bad.csv (") {
				t.Errorf("alerts:\n%s", got)
			}
			if strings.Contains(out.String()+errOut.String(), "hookSecretXyz") {
				t.Error("the webhook's secret was printed")
			}
		})
	}
}
