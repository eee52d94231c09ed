package serve

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/timelake/timelake/internal/alert"
	"github.com/timelake/timelake/internal/commands/lakecmd"
	"github.com/timelake/timelake/internal/fleet"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

// DefaultStatusEvery is how often serve computes the gateways' figures
// for /metrics and the alerts: a listing of the landing bucket and of the
// quarantine, and a read of the table's history (from the cache folder).
const DefaultStatusEvery = time.Minute

// watcher keeps serve's gateway metrics and alerts, beside the loading:
// the loading goroutine only hands it each load's outcome (onLoad, which
// never blocks); its own goroutine computes the figures every interval and
// sends what the loads and the figures call for.
type watcher struct {
	m     *lakecmd.Monitor
	cfg   ingest.Config
	col   *fleet.Collector
	every time.Duration
	now   func() time.Time

	mu          sync.Mutex
	quarantined []alert.File
	failed      []alert.File
	loadErr     error // of the last load; nil once one succeeded
	loadSeen    bool  // a load ended since the last evaluation
	wake        chan struct{}
}

// newWatcher watches the table of cfg (its keys: cfg.Accept), its figures
// set in col.
func newWatcher(m *lakecmd.Monitor, cfg ingest.Config, col *fleet.Collector, every time.Duration) *watcher {
	if every <= 0 {
		every = DefaultStatusEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &watcher{m: m, cfg: cfg, col: col, every: every, now: time.Now, wake: make(chan struct{}, 1)}
}

// onLoad notes a load's quarantined files and its outcome, and wakes the
// watcher when there is something to say.
func (w *watcher) onLoad(rep *ingest.Report, err error) {
	w.mu.Lock()
	if rep != nil {
		for _, f := range rep.Files {
			switch f.Status {
			case ingest.Quarantined:
				w.quarantined = append(w.quarantined, alert.File{Key: f.Key, Reason: f.Reason})
			case ingest.Failed:
				w.failed = append(w.failed, alert.File{Key: f.Key, Reason: f.Reason})
			}
		}
	}
	changed := (err == nil) != (w.loadErr == nil) || len(w.quarantined) > 0 || len(w.failed) > 0
	if err == nil || !errors.Is(err, context.Canceled) {
		w.loadErr, w.loadSeen = err, true
	}
	w.mu.Unlock()
	if changed {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// run computes the figures at once and every interval, and sends the
// alerts a wake-up calls for, until ctx is done; a last round then sends
// what is left.
func (w *watcher) run(ctx context.Context) {
	t := time.NewTicker(w.every)
	defer t.Stop()
	tr := w.m.Tracker(w.cfg.Landing, fleet.SourcePoller, w.cfg.Table, w.cfg.Prefix)
	w.round(ctx, tr, true)
	for {
		select {
		case <-ctx.Done():
			w.round(context.WithoutCancel(ctx), tr, false)
			return
		case <-w.wake:
			w.round(ctx, tr, false)
		case <-t.C:
			w.round(ctx, tr, true)
		}
	}
}

// round sends the quarantine alert of the loads since the last round, the
// load-failure condition and, with figures, the status conditions.
func (w *watcher) round(ctx context.Context, tr *alert.Tracker, figures bool) {
	w.mu.Lock()
	files, failed := w.quarantined, w.failed
	w.quarantined, w.failed = nil, nil
	loadErr, seen := w.loadErr, w.loadSeen
	w.loadSeen = false
	w.mu.Unlock()
	table, landingURI := w.cfg.Table.String(), w.cfg.Landing.URI()
	if len(files) > 0 {
		w.m.Notify(fleet.QuarantineAlert(table, landingURI, files))
	}
	if len(failed) > 0 {
		w.m.Notify(fleet.FailedAlert(table, landingURI, failed))
	}
	var events []string
	var holding []alert.Condition
	if seen || loadErr != nil {
		events = append(events, alert.EventRunFailed)
		if loadErr != nil {
			holding = append(holding, fleet.RunFailedCondition(table, landingURI, "serve", loadErr))
		}
	}
	if figures && ctx.Err() == nil {
		st, err := w.status(ctx)
		if err != nil {
			// A setup problem (credentials) in timelake's words, with its
			// fix, not the SDK's error chain.
			args := []any{"err", err}
			if p := storage.Diagnose(err, storage.Where{}, storage.Names{}); p != nil {
				args = []any{"err", p, "fix", p.Fix}
			}
			w.cfg.Logger.Warn("gateway figures not computed; /metrics keeps the last ones", args...)
		} else {
			w.col.Set(st)
			events = append(events, fleet.StatusEvents...)
			holding = append(holding, fleet.StatusConditions(st, w.m.StuckAfter)...)
		}
	}
	if len(events) > 0 {
		w.m.Update(ctx, tr, events, holding)
	}
}

// status computes the gateways' figures on a table handle of its own, of
// the keys the table takes.
func (w *watcher) status(ctx context.Context) (*fleet.Status, error) {
	c := w.cfg
	t, err := c.Lake.LoadTable(ctx, c.Table)
	if errors.Is(err, lake.ErrTableNotFound) {
		t, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return fleet.ComputeStatus(ctx, fleet.StatusOptions{Bucket: &landing.Bucket{Store: c.Landing, QuarantinePrefix: c.QuarantinePrefix},
		Prefix: c.Prefix, Accept: c.Accept, Table: t, TableName: c.Table.String(), Depth: w.m.Depth, ExpectEvery: w.m.ExpectEvery, Now: w.now()})
}
