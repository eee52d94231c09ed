package ingest_test

import (
	"context"
	"encoding/json"
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

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// TestIngestAlertsAndMetrics, from a local landing folder and from S3:
// a run that quarantines a file alerts it and writes a metrics file the
// client library's parser reads (the run's figures and the gateways'); a
// run that fails (the warehouse cannot be reached) alerts once and keeps
// the last success in the file; the next good run resolves the alert. The
// webhook's secret is never printed.
func TestIngestAlertsAndMetrics(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (env map[string]string, st storage.Store, broken string)
	}{
		{"local", func(t *testing.T) (map[string]string, storage.Store, string) {
			dir := t.TempDir()
			st, err := storage.NewLocalStore(filepath.Join(dir, "landing"))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "a-file")
			if err := os.WriteFile(file, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return map[string]string{"LANDING_BUCKET": filepath.Join(dir, "landing"), "TIMELAKE_WAREHOUSE": filepath.Join(dir, "lake")},
				st, filepath.Join(file, "lake")
		}},
		{"s3", func(t *testing.T) (map[string]string, storage.Store, string) {
			srv := s3test.FromEnv(t)
			land := srv.NewBucket(t)
			return map[string]string{"LANDING_BUCKET": "s3://" + land, "TIMELAKE_WAREHOUSE": "s3://" + srv.NewBucket(t) + "/warehouse",
					"AWS_ENDPOINT_URL_S3": srv.Endpoint, "AWS_REGION": srv.Region, "AWS_ACCESS_KEY_ID": srv.AccessKey,
					"AWS_SECRET_ACCESS_KEY": srv.SecretKey},
				storage.NewS3Store(srv.Client(t), land, "", storage.S3StoreOptions{}), "s3://" + land + "-missing/warehouse"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, st, broken := tc.setup(t)
			var mu sync.Mutex
			var alerts []string
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var a map[string]any
				json.NewDecoder(r.Body).Decode(&a)
				mu.Lock()
				alerts = append(alerts, a["severity"].(string)+" "+a["event"].(string)+": "+a["text"].(string))
				mu.Unlock()
			}))
			defer hook.Close()
			prom := filepath.Join(t.TempDir(), "timelake.prom")
			for k, v := range map[string]string{"TIMELAKE_TABLE": "iot.readings", "TIMELAKE_SERIES_KEY": "device_id", "TIMELAKE_CACHE_DIR": "off",
				"TIMELAKE_NOTIFY_URL": hook.URL + "/services/T0/B0/hookSecretXyz", "TIMELAKE_METRICS_FILE": prom} {
				env[k] = v
			}
			put := func(key, body string) {
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
			ingest := func(env map[string]string) (cmdutil.ExitCode, string) {
				t.Helper()
				ios, out, errOut := iostreams.Test()
				code := commands.Execute(context.Background(), []string{"ingest"}, ios, getenv(env))
				all := out.String() + errOut.String()
				if strings.Contains(all, "hookSecretXyz") {
					t.Errorf("the webhook's secret was printed:\n%s", all)
				}
				return code, all
			}
			sent := func() []string {
				mu.Lock()
				defer mu.Unlock()
				return append([]string(nil), alerts...)
			}
			put("gw-1/a.csv", "time,device_id,temperature_c\n2026-01-05T10:00:00Z,a,1.5\n")
			put("gw-2/bad.csv", "time;device_id\n2026-01-05T10:00:00Z;b\n")
			if code, out := ingest(env); code != cmdutil.ExitPartial {
				t.Fatalf("exit %d\n%s", code, out)
			}
			if got := sent(); len(got) != 1 || !strings.HasPrefix(got[0], "warning quarantine: timelake iot.readings: 1 file quarantined: gw-2/bad.csv (line 1: ") {
				t.Errorf("alerts after the quarantine: %q", got)
			}
			mfs := parseMetrics(t, prom)
			for _, c := range []struct {
				name, label, value string
				want               float64
			}{
				{"timelake_ingest_last_run_files", "status", "loaded", 1},
				{"timelake_ingest_last_run_files", "status", "quarantined", 1},
				{"timelake_ingest_last_run_success", "table", "iot.readings", 1},
				{"timelake_gateway_files_quarantined", "gateway", "gw-2", 1},
				{"timelake_gateways", "table", "iot.readings", 2},
			} {
				if got, ok := metric(mfs, c.name, c.label, c.value); !ok || got != c.want {
					t.Errorf("%s{%s=%q} = %v (%v), want %v", c.name, c.label, c.value, got, ok, c.want)
				}
			}
			success, _ := metric(mfs, "timelake_ingest_last_success_timestamp_seconds", "table", "iot.readings")

			// A failing run: alerted once, the last success kept.
			failing := map[string]string{}
			for k, v := range env {
				failing[k] = v
			}
			failing["TIMELAKE_WAREHOUSE"] = broken
			put("gw-1/b.csv", "time,device_id,temperature_c\n2026-01-05T10:01:00Z,a,1.5\n")
			for range 2 {
				if code, out := ingest(failing); code != cmdutil.ExitFailed {
					t.Fatalf("with the warehouse %s: exit %d\n%s", broken, code, out)
				}
			}
			got := sent()[1:]
			if len(got) != 1 || !strings.HasPrefix(got[0], "error run-failed: timelake iot.readings: ingest failed: ") {
				t.Errorf("alerts of two failed runs: %q, want one", got)
			}
			mfs = parseMetrics(t, prom)
			if v, _ := metric(mfs, "timelake_ingest_last_run_success", "table", "iot.readings"); v != 0 {
				t.Errorf("last run success %v after a failure", v)
			}
			if v, ok := metric(mfs, "timelake_ingest_last_success_timestamp_seconds", "table", "iot.readings"); !ok || v != success {
				t.Errorf("last success %v (%v), want %v kept", v, ok, success)
			}
			// It works again: resolved.
			if code, out := ingest(env); code != cmdutil.ExitOK {
				t.Fatalf("exit %d\n%s", code, out)
			}
			if got := sent()[2:]; len(got) != 1 || got[0] != "resolved run-failed: timelake iot.readings: ingest loads again" {
				t.Errorf("alerts after the good run: %q", got)
			}
		})
	}
}

func parseMetrics(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
	return mfs
}

func metric(mfs map[string]*dto.MetricFamily, name, label, value string) (float64, bool) {
	for _, m := range mfs[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}
