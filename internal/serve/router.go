package serve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/retry"
	"github.com/timelake/timelake/internal/storage"
)

// router is what a routed serve (Config.Routes) adds to the lanes: it
// routes each announced key to its table's lane, reports the keys no route
// takes (once each, left in the landing), and lists the landing at start
// and every Sweep to find the tables of the waiting keys. A table gets its
// lane when a route names it whatever the key (at start), or when a key of
// it is found in the landing: a key announced for a table without a lane
// is looked up first, so that a notification of a key that is not there
// opens no table and takes no lease.
type router struct {
	s       *Server
	pending *queue // announced keys of tables that have no lane yet

	mu        sync.Mutex
	lanes     map[lake.TableName]*lane
	unrouted  map[string]string // key: why no route takes it, each reported once
	listErr   string            // of the last listing, "" once one succeeded
	lastSweep time.Time
	start     func(*lane) // starts a lane's loop while the router runs; nil otherwise
}

func newRouter(s *Server) *router {
	r := &router{s: s, pending: newQueue(s.cfg.MaxQueue), lanes: map[lake.TableName]*lane{}, unrouted: map[string]string{}}
	for _, rt := range s.cfg.Routes {
		if t, ok := rt.Fixed(); ok {
			r.laneOf(t, true)
		}
	}
	return r
}

// laneOf returns t's lane; when it has none, create makes one (started at
// once while the router runs), else it returns nil.
func (r *router) laneOf(t lake.TableName, create bool) *lane {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.lanes[t]; l != nil || !create {
		return l
	}
	cfg := r.s.cfg.Ingest
	cfg.Table = t
	cfg.Accept = r.s.cfg.Routes.Accepts(t)
	if r.s.cfg.TableDefaults != nil {
		r.s.cfg.TableDefaults(&cfg)
	}
	l := newLane(r.s, cfg, true)
	r.lanes[t] = l
	if r.start != nil {
		r.start(l)
	}
	return l
}

// route returns the table of key, or reports it unrouted (logged and
// counted once while it waits) and returns false.
func (r *router) route(key string) (lake.TableName, bool) {
	t, _, err := r.s.cfg.Routes.Table(key)
	if err != nil {
		r.reportUnrouted(key, err.Error())
		return t, false
	}
	return t, true
}

func (r *router) reportUnrouted(key, reason string) {
	r.mu.Lock()
	_, seen := r.unrouted[key]
	if !seen && len(r.unrouted) < r.s.cfg.MaxQueue {
		r.unrouted[key] = reason
	}
	r.mu.Unlock()
	if !seen {
		r.logUnrouted(key, reason)
	}
}

// logUnrouted counts and logs a key no route takes, once while it waits.
func (r *router) logUnrouted(key, reason string) {
	r.s.metrics.unrouted.Inc()
	r.s.log.Warn("landing key not routed: it stays in the landing bucket", "key", key, "reason", reason)
}

// enqueue queues the keys of one notification in their tables' lanes (or
// pending, for a table without a lane yet) and returns how many were
// dropped because a queue was full, and how many no route takes.
func (r *router) enqueue(ws map[string]waiting) (dropped, unrouted int) {
	byLane := map[*lane]map[string]waiting{}
	pending := map[string]waiting{}
	for k, w := range ws {
		t, ok := r.route(k)
		if !ok {
			unrouted++
			continue
		}
		l := r.laneOf(t, false)
		if l == nil {
			pending[k] = w
			continue
		}
		if byLane[l] == nil {
			byLane[l] = map[string]waiting{}
		}
		byLane[l][k] = w
	}
	for l, lws := range byLane {
		dropped += l.queue.addAll(lws)
	}
	if len(pending) > 0 {
		dropped += r.pending.addAll(pending)
	}
	return dropped, unrouted
}

// run starts the lanes (and those made later), lists the landing at once
// and every Sweep, and admits the keys pending, until stopping is closed;
// it then waits for the lanes to stop. Each lane waits alone for its lease
// or its table: run returns nil.
func (r *router) run(ctx context.Context, stopping <-chan struct{}) error {
	var wg sync.WaitGroup
	r.mu.Lock()
	r.start = func(l *lane) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.loop(ctx, stopping) // a routed lane returns nil
		}()
	}
	for _, l := range r.lanes {
		r.start(l)
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.start = nil
		r.mu.Unlock()
		wg.Wait()
	}()
	nextSweep := time.Now()
	backoff := retry.Exponential(time.Second, time.Minute, 0)
	for {
		select {
		case <-stopping:
			return nil
		default:
		}
		now := time.Now()
		switch {
		case !now.Before(nextSweep):
			if err := r.sweep(ctx); err != nil {
				nextSweep = now.Add(min(backoff.NextBackOff(), r.s.cfg.Sweep))
			} else {
				nextSweep = now.Add(r.s.cfg.Sweep)
				backoff.Reset()
			}
		case r.pending.len() > 0:
			if !r.admit(ctx) {
				nextSweep = time.Now() // the listing failed: the sweep retries it, with its backoff
			}
			if r.pending.takeOverflow() {
				nextSweep = time.Now() // keys were dropped: the listing finds their tables
			}
		default:
			t := time.NewTimer(time.Until(nextSweep))
			select {
			case <-stopping:
			case <-r.pending.ready:
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// sweep lists the landing below --prefix, routes every key, makes the
// lanes of the tables found (each lane's own sweep loads its files) and
// reports the keys no route takes that were not reported yet.
func (r *router) sweep(ctx context.Context) error {
	found := map[string]string{}
	tables := map[lake.TableName]bool{}
	err := r.s.bucket.List(ctx, r.s.cfg.Ingest.Prefix, func(o storage.ObjectInfo) error {
		t, _, err := r.s.cfg.Routes.Table(o.Key)
		if err != nil {
			if len(found) < r.s.cfg.MaxQueue {
				found[o.Key] = err.Error()
			}
			return nil
		}
		tables[t] = true
		return nil
	})
	var gaps *storage.UnlistedError
	if err != nil && !errors.As(err, &gaps) { // a folder not listed is reported by the lanes' sweeps
		err = storage.Explain(fmt.Errorf("list landing %s: %w", r.s.cfg.Ingest.Landing.URI(), err), r.s.cfg.Ingest.Explain.Landing, r.s.cfg.Ingest.Explain.Names)
		r.mu.Lock()
		r.listErr = err.Error()
		r.mu.Unlock()
		if ctx.Err() == nil {
			r.s.log.Error("listing of the landing failed; retrying", withFix(err, "err", err)...)
		}
		return err
	}
	r.mu.Lock()
	old := r.unrouted
	r.unrouted, r.listErr, r.lastSweep = found, "", time.Now().UTC()
	r.mu.Unlock()
	keys := make([]string, 0, len(found))
	for k := range found {
		if _, seen := old[k]; !seen {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		r.logUnrouted(k, found[k])
	}
	for t := range tables {
		r.laneOf(t, true)
	}
	return nil
}

// admit looks up the keys pending: those in the landing go to their
// tables' lanes, made now; the others are dropped, as a lane drops them.
// Up to one load's worth of keys are looked up one by one; more with one
// listing of the landing (a sweep: it makes the lanes of the tables of the
// keys found), so that keys that do not exist cost bounded work. It
// returns false when that listing failed: the keys are dropped, and the
// sweeps find their files.
func (r *router) admit(ctx context.Context) bool {
	ws := r.pending.take(r.s.cfg.MaxQueue, time.Now())
	listed := len(ws) > loadSize(r.s.cfg.Ingest)
	if listed {
		if err := r.sweep(ctx); err != nil {
			return false
		}
	} else {
		ws = r.lookUp(ctx, ws)
	}
	byTable := map[lake.TableName]map[string]waiting{}
	for k, w := range ws {
		t, _, err := r.s.cfg.Routes.Table(k)
		if err != nil || (listed && r.laneOf(t, false) == nil) {
			continue // after a listing: no file of its table is in the landing
		}
		if byTable[t] == nil {
			byTable[t] = map[string]waiting{}
		}
		byTable[t][k] = w
	}
	for t, tws := range byTable {
		r.laneOf(t, true).queue.addAll(tws)
	}
	return true
}

// lookUp returns the keys of ws that are in the landing, or could not be
// looked up (their lane looks them up again).
func (r *router) lookUp(ctx context.Context, ws map[string]waiting) map[string]waiting {
	var mu sync.Mutex
	keep := map[string]waiting{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for k, w := range ws {
		g.Go(func() error {
			_, err := r.s.cfg.Ingest.Landing.Stat(gctx, k)
			if errors.Is(err, storage.ErrNotExist) || errors.Is(err, storage.ErrSymlink) {
				r.s.log.Debug("announced file is not in the landing bucket", "key", k)
				return nil
			}
			mu.Lock()
			keep[k] = w
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	return keep
}

// laneNamed returns the lane of the table named name, nil when it has none.
func (r *router) laneNamed(name string) *lane {
	t, err := lake.ParseTableName(name)
	if err != nil {
		return nil
	}
	return r.laneOf(t, false)
}

// lanesSorted returns the lanes in table name order.
func (r *router) lanesSorted() []*lane {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*lane, 0, len(r.lanes))
	for _, l := range r.lanes {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *lane) int { return strings.Compare(a.cfg.Table.String(), b.cfg.Table.String()) })
	return out
}

// report builds the /healthz document of a routed serve: each table's, and
// the whole: unavailable while the landing's last listing failed, before
// the first, or while a table is unavailable (the reason names the
// tables).
func (r *router) report() (Health, bool) {
	lanes := r.lanesSorted()
	h := Health{Status: "ok", LeaseHeld: len(lanes) > 0, Queue: r.pending.len(), Tables: map[string]Health{}}
	var reasons []string
	for _, l := range lanes {
		th, ok := l.health.report(l.queue.len())
		h.Tables[l.cfg.Table.String()] = th
		h.Queue += th.Queue
		h.LeaseHeld = h.LeaseHeld && th.LeaseHeld
		if th.LastCommit != nil && (h.LastCommit == nil || th.LastCommit.After(*h.LastCommit)) {
			h.LastCommit = th.LastCommit
		}
		if !ok {
			reasons = append(reasons, l.cfg.Table.String()+": "+th.Reason)
		}
	}
	r.mu.Lock()
	h.Unrouted = len(r.unrouted)
	if !r.lastSweep.IsZero() {
		t := r.lastSweep
		h.LastSweep = &t
	}
	switch {
	case r.listErr != "":
		reasons = append([]string{"the last listing of the landing failed: " + r.listErr}, reasons...)
	case r.lastSweep.IsZero():
		reasons = append([]string{"starting: the landing is not listed yet"}, reasons...)
	}
	r.mu.Unlock()
	if len(reasons) > 0 {
		h.Status, h.Reason = "unavailable", strings.Join(reasons, "; ")
	}
	return h, len(reasons) == 0
}
