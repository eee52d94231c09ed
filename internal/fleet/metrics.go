package fleet

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxMetricGateways bounds the gateway label values of the metrics (their
// cardinality): past it, the gateways after the first MaxMetricGateways-1
// by name are summed up under OtherGateway (the newest of their times, the
// sum of their counts). Status and the commands list every gateway.
const MaxMetricGateways = 1000

// OtherGateway is the gateway label of the gateways past MaxMetricGateways.
const OtherGateway = "_other"

// Collector exposes the newest Status of each table as Prometheus gauges
// (the names and labels are in docs/operations.md): one table's, or those
// of every table of a routed serve. Every series has the label table;
// those of one gateway also gateway. A Collector with no status yet
// exposes nothing. Safe for concurrent use.
type Collector struct {
	mu  sync.Mutex
	sts map[string]*Status // by table

	lastLanded, lastLoaded, newestRow, waiting, oldestWaiting, quarantined, lastDay, silent *prometheus.Desc
	gateways, silentGateways, expected, statusAt, missing, unlisted                         *prometheus.Desc
}

// NewCollector returns a Collector without a status.
func NewCollector() *Collector {
	gw := []string{"table", "gateway"}
	tbl := []string{"table"}
	d := prometheus.NewDesc
	return &Collector{
		lastLanded:     d("timelake_gateway_last_landed_timestamp_seconds", "Unix time of the newest file the gateway landed (waiting, loaded, a duplicate or rejected).", gw, nil),
		lastLoaded:     d("timelake_gateway_last_loaded_timestamp_seconds", "Unix time of the commit of the gateway's newest loaded file.", gw, nil),
		newestRow:      d("timelake_gateway_newest_row_timestamp_seconds", "Newest value of the time column among the gateway's loaded rows, as Unix time.", gw, nil),
		waiting:        d("timelake_gateway_files_waiting", "Files of the gateway in the landing bucket.", gw, nil),
		oldestWaiting:  d("timelake_gateway_oldest_waiting_timestamp_seconds", "Unix modification time of the gateway's oldest file in the landing bucket.", gw, nil),
		quarantined:    d("timelake_gateway_files_quarantined", "Files of the gateway in the quarantine.", gw, nil),
		lastDay:        d("timelake_gateway_files_last_day", "Files of the gateway settled in the last 24 hours, by outcome (loaded, duplicate, rejected).", append(gw, "outcome"), nil),
		silent:         d("timelake_gateway_silent", "1 when the gateway landed no file for twice the expected interval, else 0.", gw, nil),
		gateways:       d("timelake_gateways", "Gateways seen in the landing bucket, the quarantine and the table's history (not bounded by the gateway label's limit).", tbl, nil),
		silentGateways: d("timelake_gateways_silent", "Gateways silent for twice the expected interval.", tbl, nil),
		expected:       d("timelake_gateway_expected_interval_seconds", "How often each gateway is expected to land a file (--expect-every, timelake.expect-every); absent when not set.", tbl, nil),
		statusAt:       d("timelake_status_timestamp_seconds", "Unix time the gateway figures were computed.", tbl, nil),
		missing:        d("timelake_history_segments_missing", "History segments the table names that are missing from the store.", tbl, nil),
		unlisted:       d("timelake_landing_unlisted", "Folders and files of a local landing folder or its quarantine that could not be listed (their files are not counted).", tbl, nil),
	}
}

// Set replaces the status the collector exposes of st's table.
func (c *Collector) Set(st *Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sts == nil {
		c.sts = map[string]*Status{}
	}
	c.sts[st.Table] = st
}

// statuses are the statuses the collector exposes, by table name.
func (c *Collector) statuses() []*Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Status, 0, len(c.sts))
	for _, t := range slices.Sorted(maps.Keys(c.sts)) {
		out = append(out, c.sts[t])
	}
	return out
}

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lastLanded, c.lastLoaded, c.newestRow, c.waiting, c.oldestWaiting, c.quarantined,
		c.lastDay, c.silent, c.gateways, c.silentGateways, c.expected, c.statusAt, c.missing, c.unlisted} {
		ch <- d
	}
}

// Collect sends the gauges of the newest status of each table.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.statuses() {
		c.collect(ch, st)
	}
}

// collect sends the gauges of st.
func (c *Collector) collect(ch chan<- prometheus.Metric, st *Status) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	unix := func(t *time.Time) float64 { return float64(t.UnixMilli()) / 1000 }
	table := st.Table
	gauge(c.gateways, float64(len(st.Gateways)), table)
	gauge(c.silentGateways, float64(st.Silent), table)
	gauge(c.statusAt, unix(&st.At), table)
	gauge(c.missing, float64(len(st.MissingSegments)), table)
	gauge(c.unlisted, float64(len(st.Unlisted)), table)
	if st.ExpectEverySeconds != nil {
		gauge(c.expected, *st.ExpectEverySeconds, table)
	}
	for _, g := range metricGateways(st.Gateways) {
		l := []string{table, g.Gateway}
		for _, t := range []struct {
			d *prometheus.Desc
			v *time.Time
		}{{c.lastLanded, g.LastLanded}, {c.lastLoaded, g.LastLoaded}, {c.newestRow, g.NewestRowTime}, {c.oldestWaiting, g.OldestWaiting}} {
			if t.v != nil {
				gauge(t.d, unix(t.v), l...)
			}
		}
		gauge(c.waiting, float64(g.Waiting), l...)
		gauge(c.quarantined, float64(g.Quarantined), l...)
		gauge(c.lastDay, float64(g.LoadedLastDay), table, g.Gateway, "loaded")
		gauge(c.lastDay, float64(g.DuplicatesLastDay), table, g.Gateway, "duplicate")
		gauge(c.lastDay, float64(g.RejectedLastDay), table, g.Gateway, "rejected")
		silent := 0.0
		if g.Silent {
			silent = 1
		}
		gauge(c.silent, silent, l...)
	}
}

// metricGateways bounds gws (sorted by name) to MaxMetricGateways label
// values: the rest are summed up as OtherGateway.
func metricGateways(gws []GatewayStatus) []GatewayStatus {
	if len(gws) <= MaxMetricGateways {
		return gws
	}
	out := slices.Clone(gws[:MaxMetricGateways-1])
	other := GatewayStatus{Gateway: OtherGateway}
	newest := func(a, b *time.Time) *time.Time {
		if a == nil || (b != nil && b.After(*a)) {
			return b
		}
		return a
	}
	for _, g := range gws[MaxMetricGateways-1:] {
		other.LastLanded = newest(other.LastLanded, g.LastLanded)
		other.LastLoaded = newest(other.LastLoaded, g.LastLoaded)
		other.NewestRowTime = newest(other.NewestRowTime, g.NewestRowTime)
		if g.OldestWaiting != nil && (other.OldestWaiting == nil || g.OldestWaiting.Before(*other.OldestWaiting)) {
			other.OldestWaiting = g.OldestWaiting
		}
		other.Waiting += g.Waiting
		other.Quarantined += g.Quarantined
		other.LoadedLastDay += g.LoadedLastDay
		other.DuplicatesLastDay += g.DuplicatesLastDay
		other.RejectedLastDay += g.RejectedLastDay
		other.Silent = other.Silent || g.Silent
	}
	return append(out, other)
}
