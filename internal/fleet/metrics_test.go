package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/timelake/timelake/internal/testutil/monitortest"
)

// value is the gauge name whose labels include want; its family must be a
// gauge with a help text.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	if mf := mfs[name]; mf != nil && (mf.GetType() != dto.MetricType_GAUGE || mf.GetHelp() == "") {
		t.Errorf("%s: type %s, help %q", name, mf.GetType(), mf.GetHelp())
	}
	return monitortest.Gauge(mfs, name, want)
}

func sampleStatus(gateways int) *Status {
	at := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	landed, loaded := at.Add(-time.Minute), at.Add(-50*time.Second)
	secs := 60.0
	st := &Status{Table: "iot.readings", At: at, ExpectEverySeconds: &secs}
	for i := range gateways {
		g := GatewayStatus{Gateway: fmt.Sprintf("gw-%04d", i), LastLanded: &landed, LastLoaded: &loaded, Waiting: 1,
			LoadedLastDay: 1440, RejectedLastDay: i % 2}
		if i == 0 {
			g.Silent, g.LastLoaded = true, nil
			st.Silent++
		}
		st.Gateways = append(st.Gateways, g)
	}
	return st
}

// TestTextfile: the file node_exporter reads parses with the client
// library's parser, names every gateway figure with its table and gateway
// labels (a figure not known is left out), and the run's; it is written
// through a rename (nothing else is left in the folder); the last success
// of a failed run is the one of the file before.
func TestTextfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "timelake.prom")
	started := time.Date(2026, 1, 5, 11, 59, 0, 0, time.UTC)
	maintained := 0.25
	run := &Run{Table: "iot.readings", At: started, Seconds: 1.5, OK: true, Loaded: 20, Quarantined: 1, Rows: 2000, MaintenanceSeconds: &maintained}
	if err := WriteTextfile(path, sampleStatus(3), run); err != nil {
		t.Fatal(err)
	}
	mfs := monitortest.ParseMetricsFile(t, path)
	gw := func(name string) map[string]string {
		return map[string]string{"table": "iot.readings", "gateway": name}
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"timelake_gateway_last_landed_timestamp_seconds", gw("gw-0001"), float64(time.Date(2026, 1, 5, 11, 59, 0, 0, time.UTC).Unix())},
		{"timelake_gateway_files_waiting", gw("gw-0002"), 1},
		{"timelake_gateway_silent", gw("gw-0000"), 1},
		{"timelake_gateway_silent", gw("gw-0001"), 0},
		{"timelake_gateway_files_last_day", map[string]string{"gateway": "gw-0001", "outcome": "rejected"}, 1},
		{"timelake_gateway_files_last_day", map[string]string{"gateway": "gw-0001", "outcome": "loaded"}, 1440},
		{"timelake_gateways", map[string]string{"table": "iot.readings"}, 3},
		{"timelake_gateways_silent", nil, 1},
		{"timelake_gateway_expected_interval_seconds", nil, 60},
		{"timelake_ingest_last_run_files", map[string]string{"status": "loaded"}, 20},
		{"timelake_ingest_last_run_success", nil, 1},
		{"timelake_ingest_last_success_timestamp_seconds", nil, float64(started.Unix())},
		{"timelake_ingest_last_run_maintenance_seconds", nil, 0.25},
	} {
		if got, ok := value(t, mfs, tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	if _, ok := value(t, mfs, "timelake_gateway_last_loaded_timestamp_seconds", gw("gw-0000")); ok {
		t.Error("a gateway never loaded has a last-loaded time")
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("folder holds %v (%v), want only the metrics file", entries, err)
	}

	// A failed run: the last success stays the one before, and so do the
	// gateway figures it could not compute, with their time.
	statusAt, _ := value(t, mfs, "timelake_status_timestamp_seconds", nil)
	failed := &Run{Table: "iot.readings", At: started.Add(time.Minute), OK: false}
	if err := WriteTextfile(path, nil, failed); err != nil {
		t.Fatal(err)
	}
	mfs = monitortest.ParseMetricsFile(t, path)
	if got, ok := value(t, mfs, "timelake_ingest_last_success_timestamp_seconds", nil); !ok || got != float64(started.Unix()) {
		t.Errorf("last success after a failed run: %v (%v), want %d", got, ok, started.Unix())
	}
	if got, _ := value(t, mfs, "timelake_ingest_last_run_success", nil); got != 0 {
		t.Errorf("last run success %v, want 0", got)
	}
	if got, ok := value(t, mfs, "timelake_gateways", map[string]string{"table": "iot.readings"}); !ok || got != 3 {
		t.Errorf("the gateway figures of the run before: timelake_gateways %v (%v), want 3", got, ok)
	}
	if got, ok := value(t, mfs, "timelake_gateway_silent", gw("gw-0000")); !ok || got != 1 {
		t.Errorf("the gateway figures of the run before: timelake_gateway_silent %v (%v), want 1", got, ok)
	}
	if got, ok := value(t, mfs, "timelake_status_timestamp_seconds", nil); !ok || got != statusAt || statusAt == 0 {
		t.Errorf("figures' time %v (%v), want that of the run before, %v", got, ok, statusAt)
	}
	if _, ok := mfs["timelake_ingest_last_run_maintenance_seconds"]; ok {
		t.Error("a maintenance duration for a run without maintenance")
	}
}

// TestMetricsCardinality: past MaxMetricGateways gateways, the others are
// summed up under one label value.
func TestMetricsCardinality(t *testing.T) {
	path := filepath.Join(t.TempDir(), "timelake.prom")
	n := MaxMetricGateways + 500
	if err := WriteTextfile(path, sampleStatus(n), nil); err != nil {
		t.Fatal(err)
	}
	mfs := monitortest.ParseMetricsFile(t, path)
	if got := len(mfs["timelake_gateway_files_waiting"].GetMetric()); got != MaxMetricGateways {
		t.Errorf("%d gateway label values, want %d", got, MaxMetricGateways)
	}
	if got, ok := value(t, mfs, "timelake_gateway_files_waiting", map[string]string{"gateway": OtherGateway}); !ok || got != 501 {
		t.Errorf("%s waiting %v (%v), want 501", OtherGateway, got, ok)
	}
	if got, _ := value(t, mfs, "timelake_gateways", nil); got != float64(n) {
		t.Errorf("timelake_gateways %v, want %d", got, n)
	}
	if body, _ := os.ReadFile(path); strings.Contains(string(body), `gateway="gw-1499"`) {
		t.Error("a gateway past the limit has its own label value")
	}
}

// TestTablesTextfile: one file holds the series of several tables, each
// under its label table. A later write keeps what it does not tell: every
// series of a table it does not write, the gateway figures of a table
// whose figures were not computed and its last success when its run
// failed. A family whose help changed since the file before is written
// with the new help.
func TestTablesTextfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "timelake.prom")
	started := time.Date(2026, 1, 5, 11, 59, 0, 0, time.UTC)
	events := sampleStatus(2)
	events.Table = "iot.events"
	type series struct {
		name   string
		labels map[string]string
		v      float64
	}
	check := func(when string, want []series) {
		t.Helper()
		mfs := monitortest.ParseMetricsFile(t, path)
		for _, w := range want {
			if got, ok := value(t, mfs, w.name, w.labels); !ok || got != w.v {
				t.Errorf("%s: %s%v = %v (found %v), want %v", when, w.name, w.labels, got, ok, w.v)
			}
		}
	}
	files := func(table, status string) map[string]string {
		return map[string]string{"table": table, "status": status}
	}
	tbl := func(name string) map[string]string { return map[string]string{"table": name} }
	if err := WriteTablesTextfile(path, []TableMetrics{
		{Table: "iot.readings", Status: sampleStatus(3), Run: &Run{Table: "iot.readings", At: started, OK: true, Loaded: 20, Rows: 2000}},
		{Table: "iot.events", Status: events, Run: &Run{Table: "iot.events", At: started, OK: true, Loaded: 4, Quarantined: 1, Rows: 40}},
	}); err != nil {
		t.Fatal(err)
	}
	check("both tables", []series{
		{"timelake_ingest_last_run_files", files("iot.readings", "loaded"), 20},
		{"timelake_ingest_last_run_files", files("iot.events", "loaded"), 4},
		{"timelake_ingest_last_run_files", files("iot.events", "quarantined"), 1},
		{"timelake_gateways", tbl("iot.readings"), 3},
		{"timelake_gateways", tbl("iot.events"), 2},
	})

	if err := WriteTablesTextfile(path, []TableMetrics{
		{Table: "iot.readings", Run: &Run{Table: "iot.readings", At: started.Add(time.Minute), OK: false}},
	}); err != nil {
		t.Fatal(err)
	}
	check("iot.readings failed, iot.events not run", []series{
		{"timelake_ingest_last_run_success", tbl("iot.readings"), 0},
		{"timelake_ingest_last_run_files", files("iot.readings", "loaded"), 0},
		{"timelake_ingest_last_success_timestamp_seconds", tbl("iot.readings"), float64(started.Unix())},
		{"timelake_gateways", tbl("iot.readings"), 3},
		{"timelake_ingest_last_run_files", files("iot.events", "quarantined"), 1},
		{"timelake_ingest_last_run_timestamp_seconds", tbl("iot.events"), float64(started.Unix())},
		{"timelake_gateways", tbl("iot.events"), 2},
	})

	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := "# HELP timelake_gateways Gateways seen"
	if !strings.Contains(string(body), old) {
		t.Fatalf("no %q in\n%s", old, body)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(body), old, "# HELP timelake_gateways Older help. Gateways seen", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteTablesTextfile(path, []TableMetrics{{Table: "iot.readings", Status: sampleStatus(1)}}); err != nil {
		t.Fatal(err)
	}
	check("a help changed", []series{{"timelake_gateways", tbl("iot.readings"), 1}, {"timelake_gateways", tbl("iot.events"), 2}})
	if body, _ := os.ReadFile(path); strings.Contains(string(body), "Older help") {
		t.Error("a family kept the help of the file before")
	}
}
