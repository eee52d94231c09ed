package fleet

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Run is one ingest run, for the metrics of a cron poller's textfile.
type Run struct {
	Table   string
	At      time.Time // when it started
	Seconds float64
	// OK: the run finished (files quarantined or not); false when it
	// failed (an error stopped it).
	OK                                               bool
	Loaded, Duplicates, Quarantined, Waiting, Failed int
	Rows                                             int64
	// MaintenanceSeconds is how long the run's maintenance took; nil
	// when none ran.
	MaintenanceSeconds *float64
}

// runCollector exposes a Run, and the time of the last run that finished
// (carried over from the previous textfile when this one failed).
type runCollector struct {
	run         Run
	lastSuccess time.Time

	at, ok, seconds, files, rows, success, maintenance *prometheus.Desc
}

func newRunCollector(run Run, lastSuccess time.Time) *runCollector {
	tbl := []string{"table"}
	d := prometheus.NewDesc
	return &runCollector{run: run, lastSuccess: lastSuccess,
		at:          d("timelake_ingest_last_run_timestamp_seconds", "Unix time the last ingest run started.", tbl, nil),
		ok:          d("timelake_ingest_last_run_success", "1 when the last ingest run finished (some files may be quarantined), 0 when an error stopped it.", tbl, nil),
		seconds:     d("timelake_ingest_last_run_duration_seconds", "Duration of the last ingest run.", tbl, nil),
		files:       d("timelake_ingest_last_run_files", "Files of the last ingest run, by status (loaded, already-loaded, quarantined, waiting, failed).", []string{"table", "status"}, nil),
		rows:        d("timelake_ingest_last_run_rows", "Rows the last ingest run committed.", tbl, nil),
		success:     d("timelake_ingest_last_success_timestamp_seconds", "Unix time the last ingest run that finished started.", tbl, nil),
		maintenance: d("timelake_ingest_last_run_maintenance_seconds", "Duration of the last ingest run's table maintenance (part of its duration); absent when none ran.", tbl, nil),
	}
}

func (c *runCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.at, c.ok, c.seconds, c.files, c.rows, c.success, c.maintenance} {
		ch <- d
	}
}

func (c *runCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.run
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.at, float64(r.At.UnixMilli())/1000, r.Table)
	ok := 0.0
	if r.OK {
		ok = 1
	}
	gauge(c.ok, ok, r.Table)
	gauge(c.seconds, r.Seconds, r.Table)
	for _, f := range []struct {
		status string
		n      int
	}{{"loaded", r.Loaded}, {"already-loaded", r.Duplicates}, {"quarantined", r.Quarantined}, {"waiting", r.Waiting}, {"failed", r.Failed}} {
		gauge(c.files, float64(f.n), r.Table, f.status)
	}
	gauge(c.rows, float64(r.Rows), r.Table)
	if r.MaintenanceSeconds != nil {
		gauge(c.maintenance, *r.MaintenanceSeconds, r.Table)
	}
	if !c.lastSuccess.IsZero() {
		gauge(c.success, float64(c.lastSuccess.UnixMilli())/1000, r.Table)
	}
}

// TableMetrics are the metrics of one table in a textfile: its gateway
// figures (nil: not computed this run) and its ingest run (nil: none).
type TableMetrics struct {
	Table  string
	Status *Status
	Run    *Run
}

// WriteTextfile writes the metrics of st (nil: none) and, when run is set,
// of that ingest run to path: WriteTablesTextfile of one table.
func WriteTextfile(path string, st *Status, run *Run) error {
	tm := TableMetrics{Status: st, Run: run}
	switch {
	case run != nil:
		tm.Table = run.Table
	case st != nil:
		tm.Table = st.Table
	}
	return WriteTablesTextfile(path, []TableMetrics{tm})
}

// WriteTablesTextfile writes the metrics of tables to path in the
// Prometheus text format, for node_exporter's textfile collector (its
// name must end in .prom): through a temporary file in the same folder and
// a rename (prometheus.WriteToTextfile), so the collector never reads half
// a file. Every series has the label table. What a table's run did not
// tell stays as the file written before had it: the gateway figures of a
// table whose figures could not be computed, the time of the last run
// that finished of a table whose run failed, and every series of a table
// not among tables (a routed table that had nothing to load this run).
// Errors: writing the file.
func WriteTablesTextfile(path string, tables []TableMetrics) error {
	prev := readTextfile(path)
	var fresh prometheus.Gatherers
	written := map[string]bool{}
	keepFigures := map[string]bool{}
	for _, tm := range tables {
		written[tm.Table] = true
		reg := prometheus.NewRegistry()
		if tm.Status != nil {
			c := NewCollector()
			c.Set(tm.Status)
			if err := reg.Register(c); err != nil {
				return err
			}
		} else {
			// The figures could not be computed this run: those of the
			// file stay, with their time (timelake_status_timestamp_seconds),
			// so that their series and alerts do not vanish with every
			// failure and the staleness of the figures shows.
			keepFigures[tm.Table] = true
		}
		if run := tm.Run; run != nil {
			last := run.At
			if !run.OK {
				last = previousSuccess(prev, run.Table)
			}
			if err := reg.Register(newRunCollector(*run, last)); err != nil {
				return err
			}
		}
		fresh = append(fresh, reg)
	}
	kept := func(m *dto.Metric, family string) bool {
		table := tableOf(m)
		return !written[table] || (keepFigures[table] && !strings.HasPrefix(family, "timelake_ingest_"))
	}
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := fresh.Gather()
		if err != nil {
			return nil, err
		}
		return mergeKept(mfs, prev, kept), nil
	})
	if err := prometheus.WriteToTextfile(path, g); err != nil {
		return fmt.Errorf("write metrics file %s: %w", path, err)
	}
	return nil
}

// mergeKept adds to mfs the series of prev that keep takes, each under the
// family of its name (a family of mfs keeps its help), sorted by name.
func mergeKept(mfs []*dto.MetricFamily, prev map[string]*dto.MetricFamily, keep func(m *dto.Metric, family string) bool) []*dto.MetricFamily {
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	for _, name := range slices.Sorted(maps.Keys(prev)) {
		for _, m := range prev[name].GetMetric() {
			if !keep(m, name) {
				continue
			}
			mf := byName[name]
			if mf == nil {
				old := prev[name]
				mf = &dto.MetricFamily{Name: old.Name, Help: old.Help, Type: old.Type}
				byName[name] = mf
				mfs = append(mfs, mf)
			}
			mf.Metric = append(mf.Metric, m)
		}
	}
	slices.SortFunc(mfs, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return mfs
}

// tableOf is the value of m's label table ("" without one).
func tableOf(m *dto.Metric) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == "table" {
			return l.GetValue()
		}
	}
	return ""
}

// readTextfile reads the textfile at path; nil when there is none (no
// file, or one that does not parse).
func readTextfile(path string) map[string]*dto.MetricFamily {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		return nil
	}
	return mfs
}

// previousSuccess is timelake_ingest_last_success_timestamp_seconds of
// table in mfs, a textfile read before; zero when there is none.
func previousSuccess(mfs map[string]*dto.MetricFamily, table string) time.Time {
	for _, m := range mfs["timelake_ingest_last_success_timestamp_seconds"].GetMetric() {
		if tableOf(m) == table && m.GetGauge() != nil {
			return time.UnixMilli(int64(m.GetGauge().GetValue() * 1000)).UTC()
		}
	}
	return time.Time{}
}
