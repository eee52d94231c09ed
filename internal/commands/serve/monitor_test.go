package serve_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	servecmd "github.com/timelake/timelake/internal/commands/serve"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/logbuf"
	"github.com/timelake/timelake/internal/testutil/monitortest"
	"github.com/timelake/timelake/internal/testutil/wait"
)

// TestServeGatewayMetricsAndAlerts, with a local landing folder and on S3:
// /metrics has the gateways' figures beside serve's own, in the text format
// the client library's parser reads; a quarantine is alerted from serve;
// the webhook's secret is never printed.
func TestServeGatewayMetricsAndAlerts(t *testing.T) {
	monitortest.Stores(t, func(t *testing.T, env map[string]string, st storage.Store) {
		env["TIMELAKE_TABLE"] = "iot.readings"
		o, hook := monitored(t, env, st, "gw-1/a.csv", "time,device_id,temperature_c\n2026-01-05T10:00:00Z,a,1.5\n",
			"gw-2/bad.csv", "time;device_id\n2026-01-05T10:00:00Z;b\n")
		body, out, errOut := serveWhile(t, o, func(body string) bool {
			return strings.Contains(strings.Join(hook.Texts(), "\n"), "warning quarantine: ") &&
				strings.Contains(body, `timelake_gateway_files_last_day{gateway="gw-1",outcome="loaded",table="iot.readings"} 1`)
		})
		mfs := monitortest.ParseMetrics(t, strings.NewReader(body))
		for _, name := range []string{"timelake_files_loaded_total", "timelake_gateway_last_landed_timestamp_seconds",
			"timelake_gateway_silent", "timelake_gateways", "timelake_gateway_expected_interval_seconds", "timelake_status_timestamp_seconds"} {
			if mfs[name] == nil {
				t.Errorf("/metrics has no %s", name)
			}
		}
		got := strings.Join(hook.Texts(), "\n")
		if !strings.Contains(got, "warning quarantine: timelake iot.readings: 1 file quarantined: gw-2/bad.csv (") {
			t.Errorf("alerts:\n%s", got)
		}
		if strings.Contains(out.String()+errOut.String(), monitortest.Secret) {
			t.Error("the webhook's secret was printed")
		}
	})
}

// TestServeRoutedMetricsAndAlerts: a routed serve with --notify-url alerts
// each table's quarantine naming that table only, and /metrics has each
// table's gateway figures, of the keys its routes take, labelled table.
func TestServeRoutedMetricsAndAlerts(t *testing.T) {
	monitortest.Stores(t, func(t *testing.T, env map[string]string, st storage.Store) {
		env["TIMELAKE_ROUTES"] = "readings/**=iot.readings, events/**=iot.events"
		o, hook := monitored(t, env, st, "readings/gw-1/a.csv", "time,device_id,temperature_c\n2026-01-05T10:00:00Z,a,1.5\n",
			"events/gw-2/e.csv", "time,device_id,temperature_c\n2026-01-05T10:00:00Z,b,1.5\n",
			"events/gw-2/bad.csv", "time;device_id\n2026-01-05T10:00:00Z;b\n")
		body, _, _ := serveWhile(t, o, func(body string) bool {
			return strings.Contains(strings.Join(hook.Texts(), "\n"), "warning quarantine: ") &&
				strings.Contains(body, `timelake_gateway_files_last_day{gateway="readings/gw-1",outcome="loaded",table="iot.readings"} 1`) &&
				strings.Contains(body, `timelake_gateway_files_last_day{gateway="events/gw-2",outcome="loaded",table="iot.events"} 1`)
		})
		for _, want := range []string{`timelake_gateways{table="iot.events"} 1`, `timelake_gateways{table="iot.readings"} 1`} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics has no %s:\n%s", want, body)
			}
		}
		if strings.Contains(body, `gateway="events/gw-2",outcome="loaded",table="iot.readings"`) {
			t.Errorf("iot.readings has the gateway of iot.events:\n%s", body)
		}
		got := strings.Join(hook.Texts(), "\n")
		if !strings.Contains(got, "warning quarantine: timelake iot.events: 1 file quarantined: events/gw-2/bad.csv (") ||
			strings.Contains(got, "timelake iot.readings: 1 file quarantined") {
			t.Errorf("alerts:\n%s", got)
		}
	})
}

// serveWhile runs o's serve on a port of its own, its figures computed
// every 50ms, until done(the body of /metrics) is true; then it stops it
// and returns that body and the command's output and stderr.
func serveWhile(t *testing.T, o *servecmd.Options, done func(body string) bool) (string, *logbuf.Buffer, fmt.Stringer) {
	t.Helper()
	o.StatusEvery = 50 * time.Millisecond
	out, errOut, addr, stop := startServe(t, o)
	var body string
	wait.For(t, "the gateway metrics and the alerts", func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return done(body)
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	return body, out, errOut
}

// monitored puts each file (key, then body) in the landing, then parses
// serve's settings of env with alerts to a new webhook and gateways
// expected every hour.
func monitored(t *testing.T, env map[string]string, st storage.Store, files ...string) (*servecmd.Options, *monitortest.Webhook) {
	t.Helper()
	hook := monitortest.NewWebhook(t)
	env["TIMELAKE_SERIES_KEY"], env["TIMELAKE_CACHE_DIR"] = "device_id", "off"
	env["TIMELAKE_NOTIFY_URL"], env["TIMELAKE_EXPECT_EVERY"] = hook.URL(), "1h"
	for i := 0; i+1 < len(files); i += 2 {
		monitortest.Put(t, env, st, files[i], files[i+1])
	}
	o, code, msg := parse(t, env)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	return o, hook
}
