package lakecmd

import (
	"context"
	"log/slog"
	"time"

	"github.com/timelake/timelake/internal/alert"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/fleet"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
)

// Monitor holds a command's monitoring settings (docs/operations.md): how
// gateways are named, the cadence they are expected at, when a waiting
// file is stuck, the metrics file, and the alert webhook's Notifier when
// one is set.
type Monitor struct {
	Depth       int
	ExpectEvery time.Duration // 0: the table's timelake.expect-every
	StuckAfter  time.Duration
	MetricsFile string
	// Notifier is nil without --notify-url / TIMELAKE_NOTIFY_URL.
	Notifier *alert.Notifier
	log      *slog.Logger
}

// AlertDrain bounds how long a command that ends (ingest, the landing
// commands) waits for its alerts to be sent, retries included.
const AlertDrain = 30 * time.Second

// ResolveMonitor reads the monitoring settings from r and starts the
// alert Notifier when a webhook is set. Errors: a bad value (a usage
// error).
func ResolveMonitor(f *cmdutil.Factory, r *settings.Resolver) (*Monitor, error) {
	m := &Monitor{Depth: settings.GatewayDepth.Get(r), ExpectEvery: settings.ExpectEvery.Get(r),
		StuckAfter: settings.StuckAfter.Get(r), MetricsFile: settings.MetricsFile.Get(r), log: f.Logger()}
	url := settings.NotifyURL.Get(r)
	if err := r.Err(); err != nil {
		return nil, err
	}
	if url != "" {
		n, err := alert.New(url, alert.Options{Logger: m.log})
		if err != nil {
			return nil, &cmdutil.UsageError{Err: err}
		}
		m.Notifier = n
	}
	return m, nil
}

// Alerts reports whether alerts are sent.
func (m *Monitor) Alerts() bool { return m != nil && m.Notifier != nil }

// Tracker keeps the open conditions of source for table and landing
// prefix in the landing store (fleet.AlertStateKey); nil without alerts.
func (m *Monitor) Tracker(landing storage.Store, source string, table lake.TableName, prefix string) *alert.Tracker {
	if !m.Alerts() {
		return nil
	}
	return alert.NewTracker(m.Notifier, landing, fleet.AlertStateKey(source, table, prefix), 0)
}

// Notify queues a (nothing without alerts).
func (m *Monitor) Notify(a alert.Alert) {
	if m.Alerts() {
		m.Notifier.Notify(a)
	}
}

// Update tells tr which conditions hold; a state object that cannot be
// read or written is a warning (the alerts are sent).
func (m *Monitor) Update(ctx context.Context, tr *alert.Tracker, events []string, holding []alert.Condition) {
	if tr == nil {
		return
	}
	if err := tr.Update(ctx, time.Now(), events, holding); err != nil {
		m.log.Warn("alert state not kept: a condition may be alerted again", "err", err)
	}
}

// Close waits, at most AlertDrain, for the alerts queued to be sent, and
// warns about those that were not.
func (m *Monitor) Close(ctx context.Context) {
	if !m.Alerts() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AlertDrain)
	defer cancel()
	if n := m.Notifier.Close(ctx); n > 0 {
		m.log.Warn("alerts not sent (the webhook did not take them; see the lines before)", "alerts", n)
	}
}
