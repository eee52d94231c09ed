package serve

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are serve's Prometheus metrics (GET /metrics, the text exposition
// format), registered on a registry of their own with the Go runtime and
// process collectors and those of Config.Collectors. The metrics of a
// table's loading have a label "table" in a routed serve (Config.Routes),
// none in a serve of one table.
type metrics struct {
	reg    *prometheus.Registry
	labels []string // ["table"] in a routed serve, else none

	filesLoaded      *prometheus.CounterVec
	filesAlready     *prometheus.CounterVec
	filesQuarantined *prometheus.CounterVec
	filesWaiting     *prometheus.CounterVec
	filesFailed      *prometheus.CounterVec
	rowsLoaded       *prometheus.CounterVec
	rowsRejected     *prometheus.CounterVec
	sweepLoaded      *prometheus.CounterVec
	commitSeconds    *prometheus.HistogramVec
	commitErrors     *prometheus.CounterVec
	loadErrors       *prometheus.CounterVec
	eventToLoaded    *prometheus.HistogramVec
	announcedMissing *prometheus.CounterVec
	sweeps           *prometheus.CounterVec
	maintenance      *prometheus.CounterVec
	maintainSeconds  *prometheus.HistogramVec
	leaseHeld        *prometheus.GaugeVec
	lastCommit       *prometheus.GaugeVec
	events           *prometheus.CounterVec
	requests         *prometheus.CounterVec
	unrouted         prometheus.Counter

	mu    sync.Mutex
	lanes []laneGauge // the tables' queue depth and landing lag
}

// laneGauge is a table's label values and the lane whose queue depth and
// landing lag a scrape reads.
type laneGauge struct {
	values []string
	l      *lane
}

// laneMetrics are one table's metrics: those of metrics with the table's
// label value.
type laneMetrics struct {
	filesLoaded, filesAlready, filesQuarantined, filesWaiting, filesFailed prometheus.Counter
	rowsLoaded, rowsRejected, sweepLoaded, commitErrors, loadErrors        prometheus.Counter
	announcedMissing                                                       prometheus.Counter
	commitSeconds, eventToLoaded, maintainSeconds                          prometheus.Observer
	sweeps, maintenance                                                    *prometheus.CounterVec // by result
	leaseHeld, lastCommit                                                  prometheus.Gauge
}

// lane returns the metrics of the table whose label values are values (the
// table's name in a routed serve, none otherwise), creating its series so
// that they read 0 until the first file, and adds l's queue depth and
// landing lag to the scrapes.
func (m *metrics) lane(l *lane, values ...string) *laneMetrics {
	labels := prometheus.Labels{}
	for i, v := range values {
		labels[m.labels[i]] = v
	}
	c := func(v *prometheus.CounterVec) prometheus.Counter { return v.With(labels) }
	lm := &laneMetrics{filesLoaded: c(m.filesLoaded), filesAlready: c(m.filesAlready), filesQuarantined: c(m.filesQuarantined),
		filesWaiting: c(m.filesWaiting), filesFailed: c(m.filesFailed), rowsLoaded: c(m.rowsLoaded), rowsRejected: c(m.rowsRejected),
		sweepLoaded: c(m.sweepLoaded), commitErrors: c(m.commitErrors), loadErrors: c(m.loadErrors), announcedMissing: c(m.announcedMissing),
		commitSeconds: m.commitSeconds.With(labels), eventToLoaded: m.eventToLoaded.With(labels), maintainSeconds: m.maintainSeconds.With(labels),
		sweeps: m.sweeps.MustCurryWith(labels), maintenance: m.maintenance.MustCurryWith(labels),
		leaseHeld: m.leaseHeld.With(labels), lastCommit: m.lastCommit.With(labels)}
	m.mu.Lock()
	m.lanes = append(m.lanes, laneGauge{values: values, l: l})
	m.mu.Unlock()
	return lm
}

// laneGauges computes the tables' queue depth and landing lag at each
// scrape.
type laneGauges struct {
	m          *metrics
	depth, lag *prometheus.Desc
}

func (g laneGauges) Describe(ch chan<- *prometheus.Desc) { ch <- g.depth; ch <- g.lag }

func (g laneGauges) Collect(ch chan<- prometheus.Metric) {
	g.m.mu.Lock()
	lanes := append([]laneGauge(nil), g.m.lanes...)
	g.m.mu.Unlock()
	for _, lg := range lanes {
		ch <- prometheus.MustNewConstMetric(g.depth, prometheus.GaugeValue, float64(lg.l.queue.len()), lg.values...)
		ch <- prometheus.MustNewConstMetric(g.lag, prometheus.GaugeValue, lg.l.landingLag(), lg.values...)
	}
}

// latencyBuckets cover a commit or a file's wait, in seconds.
var latencyBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300}

// newMetrics registers the metrics; routed gives the per-table metrics a
// label "table".
func newMetrics(routed bool, more ...prometheus.Collector) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	if routed {
		m.labels = []string{"table"}
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, m.labels)
	}
	with := func(extra ...string) []string { return append(append([]string(nil), m.labels...), extra...) }
	m.filesLoaded = counter("timelake_files_loaded_total", "Landing files whose rows were committed (and the file deleted).")
	m.filesAlready = counter("timelake_files_already_loaded_total", "Landing files found already loaded (by key or, with content dedupe, by content) and deleted.")
	m.filesQuarantined = counter("timelake_files_quarantined_total", "Landing files that could not be loaded, moved to the quarantine prefix with a report.")
	m.filesWaiting = counter("timelake_files_waiting_total", "Landing files left for a later load (a file of a local folder not complete yet, or their content was being loaded under another key).")
	m.filesFailed = counter("timelake_files_failed_total", "Landing files that could not be fetched or quarantined; they stay in the landing bucket for a later sweep.")
	m.rowsLoaded = counter("timelake_rows_loaded_total", "Rows committed.")
	m.rowsRejected = counter("timelake_rows_rejected_total", "Rows of loaded files refused and set aside in rejects files (--on-error skip-rows).")
	m.sweepLoaded = counter("timelake_sweep_files_loaded_total", "Files loaded by a sweep rather than after an event: announced by no event, or not yet loaded when the sweep listed them.")
	m.commitSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "timelake_commit_seconds",
		Help: "Duration of each metadata write of loaded files (one or more files, one snapshot each).", Buckets: latencyBuckets}, m.labels)
	m.commitErrors = counter("timelake_commit_errors_total", "Metadata writes that failed (the files stay in the landing bucket and are loaded again).")
	m.loadErrors = counter("timelake_load_errors_total", "Loads that stopped on an error (storage, commit); their files stay in the landing bucket.")
	m.eventToLoaded = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "timelake_event_to_loaded_seconds",
		Help: "Time from a notification's arrival to its file being committed and deleted.", Buckets: latencyBuckets}, m.labels)
	m.announcedMissing = counter("timelake_announced_missing_total", "Keys announced by events that were not in the landing bucket when looked up (loaded already, deleted, never there, or a symbolic link of a local folder).")
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "timelake_events_total",
		Help: "Object notification events received, by provider shape and outcome (queued, ignored, dropped when the queue was full, unrouted when no route takes the key)."},
		[]string{"provider", "outcome"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "timelake_notify_requests_total",
		Help: "Requests to /notify by HTTP status code."}, []string{"code"})
	m.sweeps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "timelake_sweeps_total",
		Help: "Listings of the landing bucket, by result (ok, error)."}, with("result"))
	m.maintenance = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "timelake_maintenance_rounds_total",
		Help: "Rounds of table maintenance, by result (ok, error)."}, with("result"))
	m.maintainSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "timelake_maintenance_seconds",
		Help: "Duration of each round of table maintenance (within --maintenance-budget).", Buckets: latencyBuckets}, m.labels)
	m.leaseHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "timelake_lease_held",
		Help: "1 while this process holds the table's ingest lease, else 0."}, m.labels)
	m.lastCommit = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "timelake_last_commit_timestamp_seconds",
		Help: "Unix time of the last successful metadata write of loaded files."}, m.labels)
	m.unrouted = prometheus.NewCounter(prometheus.CounterOpts{Name: "timelake_unrouted_keys_total",
		Help: "Landing keys that no route takes, or two take to different tables, counted once each while they wait: left in the landing bucket (routed serve)."})
	gauges := laneGauges{m: m,
		depth: prometheus.NewDesc("timelake_queue_depth", "Keys announced by events and waiting for a load.", m.labels, nil),
		lag:   prometheus.NewDesc("timelake_landing_lag_seconds", "Age of the oldest landing file known to wait (queued or being loaded); 0 when none.", m.labels, nil)}
	m.reg.MustRegister(m.filesLoaded, m.filesAlready, m.filesQuarantined, m.filesWaiting, m.filesFailed, m.rowsLoaded, m.rowsRejected, m.sweepLoaded,
		m.commitSeconds, m.commitErrors, m.loadErrors, m.eventToLoaded, m.announcedMissing, m.events, m.requests, m.sweeps, m.maintenance,
		m.maintainSeconds, m.leaseHeld, m.lastCommit, gauges,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if routed {
		m.reg.MustRegister(m.unrouted)
	}
	m.reg.MustRegister(more...)
	return m
}
