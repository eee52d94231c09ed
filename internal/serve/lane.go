package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/retry"
	"github.com/timelake/timelake/internal/storage"
)

// lane loads one table: its queue of announced keys, its ingest session
// (the table's lease), its sweeps, loads and maintenance, its health and
// metrics. A serve of one table has one lane; a routed serve has one per
// table, each with a goroutine of its own, so that a table's failure or
// backlog never holds back another's.
type lane struct {
	s      *Server
	cfg    ingest.Config // the table's: Table set, Accept its keys when routed
	routed bool
	log    *slog.Logger
	queue  *queue
	m      *laneMetrics
	health health
	// tableLoad receives the lane's loads (Config.OnLane's); nil: none.
	tableLoad func(*ingest.Report, error)

	// stopping is the loop's: closed when the server stops.
	stopping <-chan struct{}

	mu       sync.Mutex
	inflight map[string]waiting // the files of the load under way
	sweeping bool               // the load under way is a sweep's
}

// errStopping ends a load that waited for its turn when the server stops:
// its files stay in the landing bucket.
var errStopping = errors.New("stopping")

func newLane(s *Server, cfg ingest.Config, routed bool) *lane {
	l := &lane{s: s, cfg: cfg, routed: routed, log: s.log, queue: newQueue(s.cfg.MaxQueue), inflight: map[string]waiting{}}
	if routed {
		l.log = s.log.With("table", cfg.Table.String())
		if cfg.Logger != nil {
			l.cfg.Logger = cfg.Logger.With("table", cfg.Table.String())
		}
		l.m = s.metrics.lane(l, cfg.Table.String())
	} else {
		l.m = s.metrics.lane(l)
	}
	l.wrapIngest()
	if s.cfg.OnLane != nil {
		l.tableLoad = s.cfg.OnLane(l.cfg)
	}
	return l
}

// status hands a status line to Config.OnStatus, naming the table in a
// routed serve.
func (l *lane) status(msg string) {
	if l.routed {
		msg = l.cfg.Table.String() + ": " + msg
	}
	l.s.cfg.OnStatus(msg)
}

// wrapIngest counts every file result and commit before the caller's
// callbacks see them.
func (l *lane) wrapIngest() {
	onFile, onCommit := l.cfg.OnFile, l.cfg.OnCommit
	l.cfg.OnFile = func(r ingest.FileResult) {
		m := l.m
		switch r.Status {
		case ingest.Loaded:
			m.filesLoaded.Inc()
			m.rowsLoaded.Add(float64(r.Rows))
			m.rowsRejected.Add(float64(r.RejectedRows))
		case ingest.AlreadyLoaded:
			m.filesAlready.Inc()
		case ingest.Quarantined:
			m.filesQuarantined.Inc()
		case ingest.Waiting:
			m.filesWaiting.Inc()
		case ingest.Failed:
			m.filesFailed.Inc()
		}
		l.mu.Lock()
		w, ok := l.inflight[r.Key]
		sweep := l.sweeping
		delete(l.inflight, r.Key)
		l.mu.Unlock()
		if ok && r.Status == ingest.Loaded {
			if !w.announced.IsZero() {
				m.eventToLoaded.Observe(time.Since(w.announced).Seconds())
			} else if sweep {
				m.sweepLoaded.Inc()
			}
		}
		if onFile != nil {
			onFile(r)
		}
	}
	l.cfg.OnCommit = func(keys []string, took time.Duration, err error) {
		l.m.commitSeconds.Observe(took.Seconds())
		if err != nil {
			l.m.commitErrors.Inc()
		} else {
			l.m.lastCommit.SetToCurrentTime()
			l.health.committed()
		}
		if onCommit != nil {
			onCommit(keys, took, err)
		}
	}
}

// landingLag is the age of the oldest file known to wait, in seconds.
func (l *lane) landingLag() float64 {
	oldest := l.queue.oldest()
	l.mu.Lock()
	for _, w := range l.inflight {
		if !w.since.IsZero() && (oldest.IsZero() || w.since.Before(oldest)) {
			oldest = w.since
		}
	}
	l.mu.Unlock()
	if oldest.IsZero() {
		return 0
	}
	return max(time.Since(oldest).Seconds(), 0)
}

// loop is the one goroutine that loads the lane's table: it takes the
// lease (waiting while another process holds it), sweeps at start and
// every Sweep, loads what events queued, and starts maintenance rounds. It
// returns nil once stopping is closed and the load under way returned,
// with the lease released; an error only when the first Open of a serve of
// one table fails for another reason than the lease (a routed table waits
// and tries again).
func (l *lane) loop(ctx context.Context, stopping <-chan struct{}) error {
	l.stopping = stopping
	var sess *ingest.Session
	maint := &maintainer{l: l}
	defer func() {
		maint.stop()
		if sess != nil {
			sess.Close()
			l.leaseReleased("released")
		}
	}()
	first := true
	var nextSweep, lastMaint time.Time
	sweepBackoff := retry.Exponential(time.Second, time.Minute, 0) // after a failed sweep
	stopped := func() bool {
		select {
		case <-stopping:
			return true
		default:
			return false
		}
	}
	// wait sleeps until d passed, or returns false when stopping.
	wait := func(d time.Duration, wake <-chan struct{}) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-stopping:
			return false
		case <-t.C:
		case <-wake:
		}
		return true
	}
	var lastLeaseMsg string
	for !stopped() {
		if sess == nil {
			var err error
			sess, err = ingest.Open(ctx, l.cfg)
			if err != nil {
				held := errors.Is(err, ingest.ErrLeaseHeld)
				if first && !held && !l.routed {
					return err
				}
				if msg := err.Error(); msg != lastLeaseMsg {
					if held {
						l.status("waiting for the lease: " + msg)
					} else {
						// A routed table that cannot be opened waits alone.
						l.status(fmt.Sprintf("cannot load the table, trying again every %s: %s", l.s.cfg.LeaseRetry, msg))
						l.log.Error("table not opened; its files stay in the landing bucket", withFix(err, "err", err)...)
					}
					lastLeaseMsg = msg
				}
				l.health.setLease(false, err.Error())
				l.m.leaseHeld.Set(0)
				if !wait(l.s.cfg.LeaseRetry, nil) {
					return nil
				}
				continue
			}
			first, lastLeaseMsg = false, ""
			l.health.setLease(true, "")
			l.m.leaseHeld.Set(1)
			l.status(fmt.Sprintf("took the ingest lease of %s", l.cfg.Table))
			nextSweep = time.Now() // after a start or a lost lease, at once
		}
		now := time.Now()
		switch {
		case sess.Err() != nil:
			lost := sess.Err().Error()
			l.status("lost the lease, taking it again when it is free: " + lost)
			sess.Close()
			sess = nil
			l.leaseReleased(lost)
		case !now.Before(nextSweep):
			if err := l.sweep(ctx, sess, stopped, nil); err != nil {
				nextSweep = now.Add(min(sweepBackoff.NextBackOff(), l.s.cfg.Sweep))
			} else {
				nextSweep = now.Add(l.s.cfg.Sweep)
				sweepBackoff.Reset()
			}
		case l.queue.due(now) > 0:
			if err := l.loadQueued(ctx, sess, stopped); err != nil {
				if !wait(sweepBackoff.NextBackOff(), nil) {
					return nil
				}
			} else {
				sweepBackoff.Reset()
			}
			if l.queue.due(time.Now()) == 0 && l.queue.takeOverflow() {
				nextSweep = time.Now() // events were dropped: the sweep finds their files
			}
		case l.cfg.MaintenanceBudget > 0 && sess.Table() != nil && now.Sub(lastMaint) >= l.s.cfg.MaintenanceEvery && !maint.running():
			lastMaint = now
			maint.start(ctx)
		default:
			next := time.Until(nextSweep)
			if due := l.queue.nextDue(); !due.IsZero() {
				next = min(next, time.Until(due))
			}
			if l.cfg.MaintenanceBudget > 0 {
				next = min(next, max(time.Until(lastMaint.Add(l.s.cfg.MaintenanceEvery)), time.Second))
			}
			t := time.NewTimer(max(next, 0))
			select {
			case <-stopping:
			case <-l.queue.ready:
			case <-t.C:
			case <-sess.Done():
			}
			t.Stop()
		}
	}
	return nil
}

func (l *lane) leaseReleased(why string) {
	l.health.setLease(false, why)
	l.m.leaseHeld.Set(0)
}

// sweep lists the landing bucket and loads what it finds, a load of up to
// loadSize files at a time. announced are keys taken from the queue that
// the listing answers (loadQueued): those listed keep their times, the
// others do not exist and are dropped; after a failed listing they go back
// to the queue.
func (l *lane) sweep(ctx context.Context, sess *ingest.Session, stopped func() bool, announced map[string]waiting) error {
	files, err := sess.List(ctx)
	if err != nil {
		l.requeue(announced, nil, nil)
		l.m.sweeps.WithLabelValues("error").Inc()
		l.health.sweepDone(err)
		if sess.Err() == nil {
			l.log.Error("sweep failed; retrying", withFix(err, "err", err)...)
		}
		return err
	}
	l.m.sweeps.WithLabelValues("ok").Inc()
	l.health.sweepDone(nil)
	if len(announced) > 0 {
		listed := make(map[string]bool, len(files))
		for _, f := range files {
			listed[f.Key] = true
		}
		n := len(announced)
		maps.DeleteFunc(announced, func(k string, _ waiting) bool { return !listed[k] })
		l.m.announcedMissing.Add(float64(n - len(announced)))
		l.log.Info("announced keys looked up with one listing", "keys", n, "not_in_landing", n-len(announced))
	}
	n := l.loadSize()
	for len(files) > 0 && !stopped() {
		batch := files[:min(n, len(files))]
		files = files[len(batch):]
		ws := make(map[string]waiting, len(batch))
		now := time.Now()
		for _, f := range batch {
			// A file its writer dated ahead landed when this host saw it
			// (it counts in the landing lag from then).
			ws[f.Key] = waiting{since: landing.LandedTime(f.LastModified, f.Changed, now)}.older(announced[f.Key])
			delete(announced, f.Key)
		}
		if err := l.load(ctx, sess, batch, ws, true); err != nil {
			l.requeue(announced, nil, nil) // listed, not loaded yet
			return err
		}
	}
	return nil
}

// loadSize is how many files one load takes: two commits' worth, so that a
// stop waits for little.
func (l *lane) loadSize() int { return loadSize(l.cfg) }

func loadSize(c ingest.Config) int {
	n := c.FilesPerCommit
	if n <= 0 {
		n = ingest.DefaultFilesPerCommit
	}
	return 2 * n
}

// loadQueued loads the keys events queued that are due (those that still
// exist). Up to one load's worth of keys (loadSize) are looked up one by
// one (a HEAD each on S3); more are looked up with one listing of the
// landing bucket (a sweep), which costs one request per 1,000 files in the
// landing bucket however many keys were announced, so that keys that do
// not exist cost bounded work and never hold back the files that do.
func (l *lane) loadQueued(ctx context.Context, sess *ingest.Session, stopped func() bool) error {
	now := time.Now()
	if n := l.queue.due(now); n > l.loadSize() {
		return l.sweep(ctx, sess, stopped, l.queue.take(n, now))
	}
	ws := l.queue.take(l.loadSize(), now)
	files, err := l.stat(ctx, ws)
	if err != nil {
		l.requeue(ws, nil, nil)
		l.health.loadDone(err)
		l.onLoad(nil, err)
		return err
	}
	if len(files) == 0 {
		l.health.loadDone(nil) // nothing left to load is a load that succeeded
		return nil
	}
	return l.load(ctx, sess, files, ws, false)
}

// stat looks up the queued keys: a key that does not exist (loaded
// already, deleted, or never there) is dropped without a word, a key that
// names a symbolic link in a local landing folder with a warning; neither
// stops the others.
func (l *lane) stat(ctx context.Context, ws map[string]waiting) ([]storage.ObjectInfo, error) {
	var mu sync.Mutex
	var files []storage.ObjectInfo
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for k := range ws {
		g.Go(func() error {
			info, err := l.cfg.Landing.Stat(gctx, k)
			if errors.Is(err, storage.ErrNotExist) {
				l.m.announcedMissing.Inc()
				l.log.Debug("announced file is not in the landing bucket", "key", k)
				return nil
			}
			if errors.Is(err, storage.ErrSymlink) {
				l.m.announcedMissing.Inc()
				l.log.Warn("announced file not loaded", "key", k, "err", err)
				return nil
			}
			if err != nil {
				return storage.Explain(fmt.Errorf("stat %s: %w", k, err), l.cfg.Explain.Landing, l.cfg.Explain.Names)
			}
			mu.Lock()
			files = append(files, info)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Key < files[j].Key })
	return files, nil
}

// load runs one Session.Load. Keys that end neither loaded, already loaded,
// quarantined nor failed (an error stopped the load, or they wait for
// another key's content, or to be complete: then not before their ReadyAt)
// go back to the queue. A failed key waits for a sweep.
func (l *lane) load(ctx context.Context, sess *ingest.Session, files []storage.ObjectInfo, ws map[string]waiting, sweep bool) error {
	if l.s.turns != nil {
		// One table loads at a time, the tables in turn (a channel's
		// waiting senders are served in order), within the one memory
		// budget and --parallel of a serve.
		select {
		case l.s.turns <- struct{}{}:
			defer func() { <-l.s.turns }()
		case <-l.stopping:
			return errStopping
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	now := time.Now()
	for _, f := range files {
		w := ws[f.Key]
		if landed := landing.LandedTime(f.LastModified, f.Changed, now); !f.LastModified.IsZero() && (w.since.IsZero() || landed.Before(w.since)) {
			w.since = landed
		}
		l.inflight[f.Key] = w
	}
	l.sweeping = sweep
	l.mu.Unlock()
	// A key an event announced came by its notification, also when a
	// sweep loads it; the others a sweep found.
	by := func(key string) string {
		if sweep && ws[key].announced.IsZero() {
			return lake.LoadedBySweep
		}
		return lake.LoadedByNotification
	}
	rep, err := sess.LoadBy(ctx, files, by)
	l.mu.Lock()
	clear(l.inflight)
	l.mu.Unlock()
	final := map[string]bool{}
	readyAt := map[string]time.Time{}
	if rep != nil {
		for _, f := range rep.Files {
			final[f.Key] = f.Status != ingest.Waiting
			if f.Status == ingest.Waiting && !f.ReadyAt.IsZero() {
				readyAt[f.Key] = f.ReadyAt
			}
		}
	}
	if err != nil {
		l.m.loadErrors.Inc()
		l.health.loadDone(err)
		if ctx.Err() == nil && !errors.Is(err, ingest.ErrLeaseLost) {
			l.log.Error("load failed; its files stay in the landing bucket and are tried again", withFix(err, "files", len(files), "err", err)...)
		}
	} else {
		l.health.loadDone(nil)
	}
	l.onLoad(rep, err)
	l.requeue(ws, final, readyAt)
	return err
}

func (l *lane) onLoad(rep *ingest.Report, err error) {
	if l.tableLoad != nil {
		l.tableLoad(rep, err)
	}
	if l.s.cfg.OnLoad != nil {
		l.s.cfg.OnLoad(rep, err)
	}
}

// requeue puts back the keys of ws that did not end (final[key] false),
// each to be taken not before readyAt[key].
func (l *lane) requeue(ws map[string]waiting, final map[string]bool, readyAt map[string]time.Time) {
	for k, w := range ws {
		if !final[k] {
			w.notBefore = readyAt[k]
			l.queue.add(k, w)
		}
	}
}
