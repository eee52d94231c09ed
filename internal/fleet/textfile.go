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

// WriteTextfile writes the metrics of st (nil: none) and, when run is set,
// of that ingest run to path in the Prometheus text format, for
// node_exporter's textfile collector (its name must end in .prom): through
// a temporary file in the same folder and a rename
// (prometheus.WriteToTextfile), so the collector never reads half a file.
// The time of the last run that finished is carried over from the file
// written before when this run failed. Errors: writing the file.
func WriteTextfile(path string, st *Status, run *Run) error {
	reg := prometheus.NewRegistry()
	var g prometheus.Gatherer = reg
	if st != nil {
		c := NewCollector()
		c.Set(st)
		if err := reg.Register(c); err != nil {
			return err
		}
	} else if prev := previousFigures(path); len(prev) > 0 {
		// The figures could not be computed this run: those of the file
		// stay, with their time (timelake_status_timestamp_seconds), so
		// that their series and alerts do not vanish with every failure
		// and the staleness of the figures shows.
		g = prometheus.Gatherers{reg, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return prev, nil })}
	}
	if run != nil {
		last := run.At
		if !run.OK {
			last = previousSuccess(path, run.Table)
		}
		if err := reg.Register(newRunCollector(*run, last)); err != nil {
			return err
		}
	}
	if err := prometheus.WriteToTextfile(path, g); err != nil {
		return fmt.Errorf("write metrics file %s: %w", path, err)
	}
	return nil
}

// previousFigures reads the gateway figures of the textfile at path (every
// family but the run's, timelake_ingest_*); nil when there is none (no
// file, or one that does not parse).
func previousFigures(path string) []*dto.MetricFamily {
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
	var out []*dto.MetricFamily
	for _, name := range slices.Sorted(maps.Keys(mfs)) {
		if !strings.HasPrefix(name, "timelake_ingest_") {
			out = append(out, mfs[name])
		}
	}
	return out
}

// previousSuccess reads timelake_ingest_last_success_timestamp_seconds of
// table from the textfile at path; zero when there is none (no file, or
// one that does not parse).
func previousSuccess(path, table string) time.Time {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(f)
	if err != nil {
		return time.Time{}
	}
	mf := mfs["timelake_ingest_last_success_timestamp_seconds"]
	if mf == nil {
		return time.Time{}
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "table" && l.GetValue() == table && m.GetGauge() != nil {
				return time.UnixMilli(int64(m.GetGauge().GetValue() * 1000)).UTC()
			}
		}
	}
	return time.Time{}
}
