package ingest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/monitortest"
)

// TestIngestAlertsAndMetrics, from a local landing folder and from S3:
// a run that quarantines a file alerts it and writes a metrics file the
// client library's parser reads (the run's figures and the gateways'); a
// run that fails (the warehouse cannot be reached) alerts once and keeps
// the last success in the file; the next good run resolves the alert. The
// webhook's secret is never printed.
func TestIngestAlertsAndMetrics(t *testing.T) {
	monitortest.Stores(t, func(t *testing.T, env map[string]string, st storage.Store) {
		// A warehouse that cannot be reached: below a file, or in a
		// bucket that does not exist.
		broken := env["LANDING_BUCKET"] + "-missing/warehouse"
		if _, local := st.(*storage.LocalStore); local {
			file := filepath.Join(t.TempDir(), "a-file")
			if err := os.WriteFile(file, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			broken = filepath.Join(file, "lake")
		}
		hook := monitortest.NewWebhook(t)
		prom := filepath.Join(t.TempDir(), "timelake.prom")
		for k, v := range map[string]string{"TIMELAKE_TABLE": "iot.readings", "TIMELAKE_SERIES_KEY": "device_id", "TIMELAKE_CACHE_DIR": "off",
			"TIMELAKE_NOTIFY_URL": hook.URL(), "TIMELAKE_METRICS_FILE": prom} {
			env[k] = v
		}
		put := func(key, body string) { monitortest.Put(t, env, st, key, body) }
		ingest := func(env map[string]string) (cmdutil.ExitCode, string) {
			t.Helper()
			ios, out, errOut := iostreams.Test()
			code := commands.Execute(context.Background(), []string{"ingest"}, ios, getenv(env))
			all := out.String() + errOut.String()
			if strings.Contains(all, monitortest.Secret) {
				t.Errorf("the webhook's secret was printed:\n%s", all)
			}
			return code, all
		}
		sent := hook.Texts
		put("gw-1/a.csv", "time,device_id,temperature_c\n2026-01-05T10:00:00Z,a,1.5\n")
		put("gw-2/bad.csv", "time;device_id\n2026-01-05T10:00:00Z;b\n")
		if code, out := ingest(env); code != cmdutil.ExitPartial {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if got := sent(); len(got) != 1 || !strings.HasPrefix(got[0], "warning quarantine: timelake iot.readings: 1 file quarantined: gw-2/bad.csv (line 1: ") {
			t.Errorf("alerts after the quarantine: %q", got)
		}
		mfs := monitortest.ParseMetricsFile(t, prom)
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
		mfs = monitortest.ParseMetricsFile(t, prom)
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

func metric(mfs map[string]*dto.MetricFamily, name, label, value string) (float64, bool) {
	return monitortest.Gauge(mfs, name, map[string]string{label: value})
}
