package serve

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/timelake/timelake/internal/fleet"
)

// The Grafana dashboard and the Prometheus rules of examples/monitoring.
var (
	dashboardFile = filepath.Join("..", "..", "examples", "monitoring", "grafana-dashboard.json")
	rulesFile     = filepath.Join("..", "..", "examples", "monitoring", "prometheus-rules.yml")
)

// TestMonitoringExamplesNameExportedMetrics: every timelake_ metric the
// dashboard's queries and the alert rules' expressions name is one timelake
// exports: serve's registry (with the gateway figures of fleet's Collector)
// or the textfile ingest writes, gathered from the collectors themselves.
func TestMonitoringExamplesNameExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	for file, exprs := range map[string][]string{
		dashboardFile: dashboardExprs(t, dashboardFile),
		rulesFile:     ruleExprs(t, rulesFile),
	} {
		if len(exprs) == 0 {
			t.Fatalf("%s: no expressions found", file)
		}
		for _, e := range exprs {
			names := metricNames(e)
			if len(names) == 0 && !strings.Contains(e, "$") {
				t.Errorf("%s: %q names no timelake metric", file, e)
			}
			for _, n := range names {
				if !exported[n] {
					t.Errorf("%s: %q names %s, which timelake does not export", file, e, n)
				}
			}
		}
	}
}

// TestMonitoringDashboardCoverage: the dashboard shows what it says it
// does: freshness per gateway, files loaded and quarantined, commit and
// maintenance time, for serve and the cron poller alike.
func TestMonitoringDashboardCoverage(t *testing.T) {
	used := map[string]bool{}
	for _, e := range dashboardExprs(t, dashboardFile) {
		for _, n := range metricNames(e) {
			used[n] = true
		}
	}
	for _, n := range []string{
		"timelake_gateway_last_landed_timestamp_seconds", "timelake_gateway_last_loaded_timestamp_seconds",
		"timelake_files_loaded_total", "timelake_files_quarantined_total", "timelake_gateway_files_quarantined",
		"timelake_commit_seconds_bucket", "timelake_maintenance_seconds_bucket",
		"timelake_ingest_last_run_files", "timelake_ingest_last_run_maintenance_seconds",
	} {
		if !used[n] {
			t.Errorf("the dashboard does not show %s", n)
		}
	}
}

// TestMetricNames: the names read out of expressions, strings and label
// matchers left out; a name that does not exist is caught.
func TestMetricNames(t *testing.T) {
	got := metricNames(`histogram_quantile(0.95, sum by (le) (rate(timelake_commit_seconds_bucket{job="timelake_x"}[5m]))) / timelake_queue_depth` +
		` + on(table) my_timelake_thing + timelake_gateways_silent{table=~"$table"}`)
	want := []string{"timelake_commit_seconds_bucket", "timelake_gateways_silent", "timelake_queue_depth"}
	if !slices.Equal(got, want) {
		t.Errorf("metricNames = %v, want %v", got, want)
	}
	exported := exportedMetrics(t)
	for _, n := range []string{"timelake_files_loaded", "timelake_commit_seconds", "timelake_gateway_silent_total"} {
		if exported[n] {
			t.Errorf("%s counts as exported", n)
		}
	}
	for _, n := range []string{"timelake_files_loaded_total", "timelake_commit_seconds_count", "timelake_gateway_silent",
		"timelake_ingest_last_run_rows", "timelake_events_total", "timelake_maintenance_seconds_sum"} {
		if !exported[n] {
			t.Errorf("%s does not count as exported", n)
		}
	}
}

var (
	// A PromQL string literal: its text is a label value or a regexp,
	// never a metric name.
	promString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	// A timelake metric name: an identifier starting timelake_, not the
	// tail of a longer identifier.
	promMetric = regexp.MustCompile(`(?:^|[^A-Za-z0-9_:])(timelake_[A-Za-z0-9_:]*)`)
)

// metricNames returns the timelake_ metric names expr names, sorted, once each.
func metricNames(expr string) []string {
	expr = promString.ReplaceAllString(expr, `""`)
	var names []string
	for _, m := range promMetric.FindAllStringSubmatch(expr, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return names
}

// exportedMetrics gathers the names of the series timelake exports: serve's
// registry with a fleet.Collector holding a status where every figure is
// known, and the textfile of an ingest run. A histogram's series are its
// _bucket, _sum and _count.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	at := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	every := 60.0
	st := &fleet.Status{Table: "iot.readings", At: at, ExpectEverySeconds: &every, Silent: 1,
		Gateways: []fleet.GatewayStatus{{Gateway: "gateway-1", LastLanded: &at, LastLoaded: &at, NewestRowTime: &at,
			Waiting: 1, OldestWaiting: &at, Quarantined: 1, LoadedLastDay: 1, DuplicatesLastDay: 1, RejectedLastDay: 1, Silent: true}}}
	c := fleet.NewCollector()
	c.Set(st)
	m := newMetrics(true, c) // a routed serve's: every metric
	// A table's series exist once it has a lane; a vector's once a label
	// value was used.
	m.lane(&lane{queue: newQueue(1)}, "iot.readings")
	m.events.WithLabelValues("tigris", "queued").Inc()
	m.requests.WithLabelValues("200").Inc()
	m.sweeps.WithLabelValues("iot.readings", "ok").Inc()
	m.maintenance.WithLabelValues("iot.readings", "ok").Inc()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "timelake.prom")
	took := 0.5
	if err := fleet.WriteTextfile(path, st, &fleet.Run{Table: "iot.readings", At: at, Seconds: 1, OK: true,
		Loaded: 1, Rows: 300, MaintenanceSeconds: &took}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	text, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range text {
		mfs = append(mfs, mf)
	}

	names := map[string]bool{}
	for _, mf := range mfs {
		n := mf.GetName()
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[n+"_bucket"], names[n+"_sum"], names[n+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[n], names[n+"_sum"], names[n+"_count"] = true, true, true
		default:
			names[n] = true
		}
	}
	for _, n := range []string{"timelake_files_loaded_total", "timelake_gateway_silent", "timelake_ingest_last_run_success"} {
		if !names[n] {
			t.Fatalf("%s not gathered: the registry or the textfile is not what the test expects", n)
		}
	}
	return names
}

// dashboardExprs returns the PromQL of a Grafana dashboard: every panel's
// targets (rows' panels included) and the template variables' queries.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var exprs []string
	var walk func([]json.RawMessage)
	walk = func(raws []json.RawMessage) {
		for _, raw := range raws {
			var p panel
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatalf("%s: panel: %v", path, err)
			}
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", path, p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("%s: panel %q has a target without expr", path, p.Title)
					continue
				}
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string // a string, or {"query": "..."} in newer dashboards
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var o struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &o); err != nil {
				t.Fatalf("%s: template variable query: %v", path, err)
			}
			q = o.Query
		}
		exprs = append(exprs, q)
	}
	return exprs
}

// ruleExprs returns the expr of every rule of a Prometheus rules file, which
// keeps each on one line (a plain or quoted YAML scalar); it also checks
// that every rule (a "- alert:" or "- record:" item) has one.
func ruleExprs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var exprs []string
	rules := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "- alert:") || strings.HasPrefix(line, "- record:") {
			rules++
		}
		v, ok := strings.CutPrefix(line, "expr:")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch {
		case v == "" || strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">"):
			t.Fatalf("%s:%d: keep each expr on one line", path, n)
		case strings.HasPrefix(v, `"`):
			var s string
			if err := json.Unmarshal([]byte(v), &s); err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
			v = s
		case strings.HasPrefix(v, "'"):
			v = strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'"), "''", "'")
		}
		exprs = append(exprs, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if rules != len(exprs) {
		t.Errorf("%s: %d rules but %d expr lines", path, rules, len(exprs))
	}
	return exprs
}
