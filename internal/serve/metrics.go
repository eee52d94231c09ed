package serve

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are serve's Prometheus metrics (GET /metrics, the text exposition
// format), registered on a registry of their own with the Go runtime and
// process collectors and those of Config.Collectors.
type metrics struct {
	reg *prometheus.Registry

	filesLoaded      prometheus.Counter
	filesAlready     prometheus.Counter
	filesQuarantined prometheus.Counter
	filesWaiting     prometheus.Counter
	filesFailed      prometheus.Counter
	rowsLoaded       prometheus.Counter
	rowsRejected     prometheus.Counter
	sweepLoaded      prometheus.Counter
	commitSeconds    prometheus.Histogram
	commitErrors     prometheus.Counter
	loadErrors       prometheus.Counter
	eventToLoaded    prometheus.Histogram
	announcedMissing prometheus.Counter
	events           *prometheus.CounterVec
	requests         *prometheus.CounterVec
	sweeps           *prometheus.CounterVec
	maintenance      *prometheus.CounterVec
	maintainSeconds  prometheus.Histogram
	leaseHeld        prometheus.Gauge
	lastCommit       prometheus.Gauge
}

// latencyBuckets cover a commit or a file's wait, in seconds.
var latencyBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300}

func newMetrics(queueDepth, landingLag func() float64, more ...prometheus.Collector) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m.filesLoaded = counter("timelake_files_loaded_total", "Landing files whose rows were committed (and the file deleted).")
	m.filesAlready = counter("timelake_files_already_loaded_total", "Landing files found already loaded (by key or, with content dedupe, by content) and deleted.")
	m.filesQuarantined = counter("timelake_files_quarantined_total", "Landing files that could not be loaded, moved to the quarantine prefix with a report.")
	m.filesWaiting = counter("timelake_files_waiting_total", "Landing files left for a later load (a file of a local folder not complete yet, or their content was being loaded under another key).")
	m.filesFailed = counter("timelake_files_failed_total", "Landing files that could not be fetched or quarantined; they stay in the landing bucket for a later sweep.")
	m.rowsLoaded = counter("timelake_rows_loaded_total", "Rows committed.")
	m.rowsRejected = counter("timelake_rows_rejected_total", "Rows of loaded files refused and set aside in rejects files (--on-error skip-rows).")
	m.sweepLoaded = counter("timelake_sweep_files_loaded_total", "Files loaded by a sweep rather than after an event: announced by no event, or not yet loaded when the sweep listed them.")
	m.commitSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "timelake_commit_seconds",
		Help: "Duration of each metadata write of loaded files (one or more files, one snapshot each).", Buckets: latencyBuckets})
	m.commitErrors = counter("timelake_commit_errors_total", "Metadata writes that failed (the files stay in the landing bucket and are loaded again).")
	m.loadErrors = counter("timelake_load_errors_total", "Loads that stopped on an error (storage, commit); their files stay in the landing bucket.")
	m.eventToLoaded = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "timelake_event_to_loaded_seconds",
		Help: "Time from a notification's arrival to its file being committed and deleted.", Buckets: latencyBuckets})
	m.announcedMissing = counter("timelake_announced_missing_total", "Keys announced by events that were not in the landing bucket when looked up (loaded already, deleted, never there, or a symbolic link of a local folder).")
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "timelake_events_total",
		Help: "Object notification events received, by provider shape and outcome (queued, ignored, dropped when the queue was full)."},
		[]string{"provider", "outcome"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "timelake_notify_requests_total",
		Help: "Requests to /notify by HTTP status code."}, []string{"code"})
	m.sweeps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "timelake_sweeps_total",
		Help: "Listings of the landing bucket, by result (ok, error)."}, []string{"result"})
	m.maintenance = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "timelake_maintenance_rounds_total",
		Help: "Rounds of table maintenance, by result (ok, error)."}, []string{"result"})
	m.maintainSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "timelake_maintenance_seconds",
		Help: "Duration of each round of table maintenance (within --maintenance-budget).", Buckets: latencyBuckets})
	m.leaseHeld = prometheus.NewGauge(prometheus.GaugeOpts{Name: "timelake_lease_held",
		Help: "1 while this process holds the table's ingest lease, else 0."})
	m.lastCommit = prometheus.NewGauge(prometheus.GaugeOpts{Name: "timelake_last_commit_timestamp_seconds",
		Help: "Unix time of the last successful metadata write of loaded files."})
	queue := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "timelake_queue_depth",
		Help: "Keys announced by events and waiting for a load."}, queueDepth)
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "timelake_landing_lag_seconds",
		Help: "Age of the oldest landing file known to wait (queued or being loaded); 0 when none."}, landingLag)
	m.reg.MustRegister(m.filesLoaded, m.filesAlready, m.filesQuarantined, m.filesWaiting, m.filesFailed, m.rowsLoaded, m.rowsRejected, m.sweepLoaded,
		m.commitSeconds, m.commitErrors, m.loadErrors, m.eventToLoaded, m.announcedMissing, m.events, m.requests, m.sweeps, m.maintenance,
		m.maintainSeconds, m.leaseHeld, m.lastCommit, queue, lag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(more...)
	return m
}
