package serve_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	servecmd "github.com/timelake/timelake/internal/commands/serve"
	"github.com/timelake/timelake/internal/iostreams"
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
		hook := monitortest.NewWebhook(t)
		env["TIMELAKE_TABLE"], env["TIMELAKE_SERIES_KEY"], env["TIMELAKE_CACHE_DIR"] = "iot.readings", "device_id", "off"
		env["TIMELAKE_NOTIFY_URL"], env["TIMELAKE_EXPECT_EVERY"] = hook.URL(), "1h"
		monitortest.Put(t, env, st, "gw-1/a.csv", "time,device_id,temperature_c\n2026-01-05T10:00:00Z,a,1.5\n")
		monitortest.Put(t, env, st, "gw-2/bad.csv", "time;device_id\n2026-01-05T10:00:00Z;b\n")
		o, code, msg := parse(t, env)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, msg)
		}
		out := &logbuf.Buffer{}
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
		var body string
		wait.For(t, "the gateway metrics and the quarantine alert", func() bool {
			resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
			if err != nil {
				return false
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			return strings.Contains(strings.Join(hook.Texts(), "\n"), "warning quarantine: ") &&
				strings.Contains(body, `timelake_gateway_files_last_day{gateway="gw-1",outcome="loaded",table="iot.readings"} 1`)
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
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
