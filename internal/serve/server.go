// Package serve is `timelake serve`: a long-lived process that loads
// landing files seconds after they land, on the object notifications that
// Tigris, MinIO and AWS send (POST /notify), with a periodic listing of the
// landing bucket (the sweep) as the safety net, since no provider
// guarantees delivery.
//
// The loading is ingest's: one ingest.Session holds the table's ingest
// lease (so a cron `ingest` on the same table exits 11 and a second serve
// waits) and keeps the table open; each load is a set of keys (those
// events announced since the last load, or a sweep's listing) through the
// same pipeline, batch ids, quarantine and report lines as `ingest`. An
// HTTP request only queues keys and answers; it never loads.
//
// Endpoints: POST /notify (HEAD answers 200 for MinIO's probe), GET
// /healthz, GET /metrics (Prometheus text format, the official client
// library). docs/serve.md is the user's guide.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/retry"
	"github.com/timelake/timelake/internal/storage"
)

// Defaults of a server.
const (
	DefaultListen = "127.0.0.1:8080"
	DefaultSweep  = 5 * time.Minute
	// DefaultMaxBody bounds a notification's body: Tigris batches several
	// events per request, the others send one record.
	DefaultMaxBody = 1 << 20
	// DefaultMaxQueue bounds the keys waiting for a load; keys announced
	// beyond it are dropped and a sweep runs as soon as the queue is empty.
	DefaultMaxQueue = 100_000
	// DefaultShutdownGrace is how long a stop waits for the files being
	// loaded before it abandons them (they stay in the landing bucket):
	// less than the 10 s a container runtime waits before SIGKILL.
	DefaultShutdownGrace = 8 * time.Second
	// DefaultLeaseRetry is how often a server that waits for the lease
	// tries to take it.
	DefaultLeaseRetry = 5 * time.Second
	// DefaultMaintenanceEvery is how often a round of maintenance starts
	// (within MaintenanceBudget), as after each minutely cron ingest.
	DefaultMaintenanceEvery = time.Minute
)

// Auth is how notifications authenticate: a bearer token, HTTP basic
// authentication, or either when both are set. The zero value accepts
// every request (loopback addresses only, CheckListen).
type Auth struct {
	Token          string
	User, Password string
}

// Enabled reports whether requests must authenticate.
func (a Auth) Enabled() bool { return a.Token != "" || a.User != "" }

// Config is a server's input.
type Config struct {
	// Ingest is the loading, as for `timelake ingest` (DryRun and MaxFiles
	// do not apply). Its OnFile and OnCommit are called too.
	Ingest ingest.Config
	// Listen is host:port; "" means DefaultListen. Listener, when set, is
	// used instead (tests listen on port 0).
	Listen   string
	Listener net.Listener
	Auth     Auth
	// Sweep is the interval of the listing sweeps; 0 means DefaultSweep.
	Sweep time.Duration
	// MaxBody, MaxQueue, ShutdownGrace, LeaseRetry, MaintenanceEvery: 0
	// means their defaults.
	MaxBody          int64
	MaxQueue         int
	ShutdownGrace    time.Duration
	LeaseRetry       time.Duration
	MaintenanceEvery time.Duration

	Logger *slog.Logger
	// OnStatus receives the server's status lines (listening, the lease
	// taken or waited for, stopping) for the command's output.
	OnStatus func(string)
	// OnMaintenance receives what each round of maintenance did.
	OnMaintenance func(*ingest.Maintenance)
	// OnLoad receives each load's report (nil when the queued keys could
	// not be looked up) and error, from the loading goroutine: it must not
	// block (the command's alerts queue what it needs).
	OnLoad func(*ingest.Report, error)
	// Collectors are more metrics for /metrics (the gateways' figures).
	Collectors []prometheus.Collector
}

// ErrNoAuth refuses a listen address that other hosts can reach when
// notifications need no authentication.
var ErrNoAuth = errors.New("refusing to accept unauthenticated notifications on an address other hosts can reach")

// CheckListen checks that listen is host:port, and that it is a loopback
// address (127.0.0.0/8, ::1, localhost) unless auth is enabled. Errors:
// a malformed address, ErrNoAuth.
func CheckListen(listen string, auth Auth) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", listen, err)
	}
	if auth.Enabled() || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("%w (%s): set TIMELAKE_WEBHOOK_TOKEN, or TIMELAKE_WEBHOOK_USER and TIMELAKE_WEBHOOK_PASSWORD, or listen on 127.0.0.1", ErrNoAuth, listen)
}

// isLoopback: "localhost" and loopback IP literals; an empty host (every
// address) and other names are not.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Server is one `timelake serve`.
type Server struct {
	cfg     Config
	log     *slog.Logger
	landing storage.Location // the landing bucket and its key prefix, to match events
	bucket  *landing.Bucket  // what the listing skips
	queue   *queue
	metrics *metrics
	health  health

	requests atomic.Uint64 // notifications received, numbering their keys (waiting.request)

	mu       sync.Mutex
	inflight map[string]waiting // the files of the load under way
	sweeping bool               // the load under way is a sweep's
}

// New checks cfg and builds a server. Errors: CheckListen's, a user name
// without password.
func New(cfg Config) (*Server, error) {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Listener == nil {
		if err := CheckListen(cfg.Listen, cfg.Auth); err != nil {
			return nil, err
		}
	}
	if (cfg.Auth.User == "") != (cfg.Auth.Password == "") {
		return nil, errors.New("basic authentication needs both TIMELAKE_WEBHOOK_USER and TIMELAKE_WEBHOOK_PASSWORD")
	}
	defaults := []struct {
		v *time.Duration
		d time.Duration
	}{{&cfg.Sweep, DefaultSweep}, {&cfg.ShutdownGrace, DefaultShutdownGrace}, {&cfg.LeaseRetry, DefaultLeaseRetry},
		{&cfg.MaintenanceEvery, DefaultMaintenanceEvery}}
	for _, d := range defaults {
		if *d.v <= 0 {
			*d.v = d.d
		}
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OnStatus == nil {
		cfg.OnStatus = func(string) {}
	}
	loc, err := storage.ParseLocation(cfg.Ingest.Landing.URI(), false)
	if err != nil {
		return nil, fmt.Errorf("landing %s: %w", cfg.Ingest.Landing.URI(), err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, landing: loc, queue: newQueue(cfg.MaxQueue),
		bucket:   &landing.Bucket{Store: cfg.Ingest.Landing, QuarantinePrefix: cfg.Ingest.QuarantinePrefix},
		inflight: map[string]waiting{}}
	s.metrics = newMetrics(func() float64 { return float64(s.queue.len()) }, s.landingLag, cfg.Collectors...)
	s.wrapIngest()
	return s, nil
}

// wrapIngest counts every file result and commit before the caller's
// callbacks see them.
func (s *Server) wrapIngest() {
	onFile, onCommit := s.cfg.Ingest.OnFile, s.cfg.Ingest.OnCommit
	s.cfg.Ingest.OnFile = func(r ingest.FileResult) {
		m := s.metrics
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
		s.mu.Lock()
		w, ok := s.inflight[r.Key]
		sweep := s.sweeping
		delete(s.inflight, r.Key)
		s.mu.Unlock()
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
	s.cfg.Ingest.OnCommit = func(keys []string, took time.Duration, err error) {
		s.metrics.commitSeconds.Observe(took.Seconds())
		if err != nil {
			s.metrics.commitErrors.Inc()
		} else {
			s.metrics.lastCommit.SetToCurrentTime()
			s.health.committed()
		}
		if onCommit != nil {
			onCommit(keys, took, err)
		}
	}
}

// landingLag is the age of the oldest file known to wait, in seconds.
func (s *Server) landingLag() float64 {
	oldest := s.queue.oldest()
	s.mu.Lock()
	for _, w := range s.inflight {
		if !w.since.IsZero() && (oldest.IsZero() || w.since.Before(oldest)) {
			oldest = w.since
		}
	}
	s.mu.Unlock()
	if oldest.IsZero() {
		return 0
	}
	return max(time.Since(oldest).Seconds(), 0)
}

// Run serves until ctx is done, then stops gracefully: it stops accepting
// requests, lets the load under way finish (for at most ShutdownGrace, then
// abandons it: its files stay in the landing bucket), releases the lease
// and returns nil. Errors: the address cannot be listened on; the table or
// the landing bucket cannot be opened at start for another reason than the
// lease (ingest.Open's errors); the HTTP server failed.
func (s *Server) Run(ctx context.Context) error {
	ln := s.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.Listen); err != nil {
			return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
		}
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	s.cfg.OnStatus(fmt.Sprintf("serving table %s from %s on http://%s (sweep every %s)",
		s.cfg.Ingest.Table, s.cfg.Ingest.Landing.URI(), ln.Addr(), s.cfg.Sweep))

	// The loading outlives ctx: a stop lets the load under way finish.
	work, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	stopping := make(chan struct{})
	looped := make(chan error, 1)
	go func() { looped <- s.loop(work, stopping) }()

	var err error
	select {
	case <-ctx.Done():
		s.cfg.OnStatus("stopping: no new requests; finishing the files being loaded")
	case err = <-served:
		err = fmt.Errorf("http server: %w", err)
	case err = <-looped:
		looped = nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	if serr := srv.Shutdown(sctx); serr != nil {
		srv.Close()
	}
	cancel()
	close(stopping)
	if looped != nil {
		grace := time.NewTimer(s.cfg.ShutdownGrace)
		defer grace.Stop()
		select {
		case lerr := <-looped:
			err = errors.Join(err, lerr)
		case <-grace.C:
			s.cfg.OnStatus(fmt.Sprintf("stopping: abandoned the files still being loaded after %s; they stay in the landing bucket", s.cfg.ShutdownGrace))
			abandon()
			if lerr := <-looped; lerr != nil && !errors.Is(lerr, context.Canceled) {
				err = errors.Join(err, lerr)
			}
		}
	}
	if err == nil {
		s.cfg.OnStatus("stopped")
	}
	return err
}

// loop is the one goroutine that loads: it takes the lease (waiting while
// another process holds it), sweeps at start and every Sweep, loads what
// events queued, and starts maintenance rounds. It returns nil once
// stopping is closed and the load under way returned, with the lease
// released; an error only when the first Open fails for another reason
// than the lease.
func (s *Server) loop(ctx context.Context, stopping <-chan struct{}) error {
	var sess *ingest.Session
	maint := &maintainer{s: s}
	defer func() {
		maint.stop()
		if sess != nil {
			sess.Close()
			s.leaseReleased("released")
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
			sess, err = ingest.Open(ctx, s.cfg.Ingest)
			if err != nil {
				if first && !errors.Is(err, ingest.ErrLeaseHeld) {
					return err
				}
				if msg := err.Error(); msg != lastLeaseMsg {
					s.cfg.OnStatus("waiting for the lease: " + msg)
					lastLeaseMsg = msg
				}
				s.health.setLease(false, err.Error())
				s.metrics.leaseHeld.Set(0)
				if !wait(s.cfg.LeaseRetry, nil) {
					return nil
				}
				continue
			}
			first, lastLeaseMsg = false, ""
			s.health.setLease(true, "")
			s.metrics.leaseHeld.Set(1)
			s.cfg.OnStatus(fmt.Sprintf("took the ingest lease of %s", s.cfg.Ingest.Table))
			nextSweep = time.Now() // after a start or a lost lease, at once
		}
		now := time.Now()
		switch {
		case sess.Err() != nil:
			lost := sess.Err().Error()
			s.cfg.OnStatus("lost the lease, taking it again when it is free: " + lost)
			sess.Close()
			sess = nil
			s.leaseReleased(lost)
		case !now.Before(nextSweep):
			if err := s.sweep(ctx, sess, stopped, nil); err != nil {
				nextSweep = now.Add(min(sweepBackoff.NextBackOff(), s.cfg.Sweep))
			} else {
				nextSweep = now.Add(s.cfg.Sweep)
				sweepBackoff.Reset()
			}
		case s.queue.due(now) > 0:
			if err := s.loadQueued(ctx, sess, stopped); err != nil {
				if !wait(sweepBackoff.NextBackOff(), nil) {
					return nil
				}
			} else {
				sweepBackoff.Reset()
			}
			if s.queue.due(time.Now()) == 0 && s.queue.takeOverflow() {
				nextSweep = time.Now() // events were dropped: the sweep finds their files
			}
		case s.cfg.Ingest.MaintenanceBudget > 0 && sess.Table() != nil && now.Sub(lastMaint) >= s.cfg.MaintenanceEvery && !maint.running():
			lastMaint = now
			maint.start(ctx)
		default:
			next := time.Until(nextSweep)
			if due := s.queue.nextDue(); !due.IsZero() {
				next = min(next, time.Until(due))
			}
			if s.cfg.Ingest.MaintenanceBudget > 0 {
				next = min(next, max(time.Until(lastMaint.Add(s.cfg.MaintenanceEvery)), time.Second))
			}
			t := time.NewTimer(max(next, 0))
			select {
			case <-stopping:
			case <-s.queue.ready:
			case <-t.C:
			case <-sess.Done():
			}
			t.Stop()
		}
	}
	return nil
}

func (s *Server) leaseReleased(why string) {
	s.health.setLease(false, why)
	s.metrics.leaseHeld.Set(0)
}

// sweep lists the landing bucket and loads what it finds, a load of up to
// loadSize files at a time. announced are keys taken from the queue that
// the listing answers (loadQueued): those listed keep their times, the
// others do not exist and are dropped; after a failed listing they go back
// to the queue.
func (s *Server) sweep(ctx context.Context, sess *ingest.Session, stopped func() bool, announced map[string]waiting) error {
	files, err := sess.List(ctx)
	if err != nil {
		s.requeue(announced, nil, nil)
		s.metrics.sweeps.WithLabelValues("error").Inc()
		s.health.sweepDone(err)
		if sess.Err() == nil {
			s.log.Error("sweep failed; retrying", withFix(err, "err", err)...)
		}
		return err
	}
	s.metrics.sweeps.WithLabelValues("ok").Inc()
	s.health.sweepDone(nil)
	if len(announced) > 0 {
		listed := make(map[string]bool, len(files))
		for _, f := range files {
			listed[f.Key] = true
		}
		n := len(announced)
		maps.DeleteFunc(announced, func(k string, _ waiting) bool { return !listed[k] })
		s.metrics.announcedMissing.Add(float64(n - len(announced)))
		s.log.Info("announced keys looked up with one listing", "keys", n, "not_in_landing", n-len(announced))
	}
	n := s.loadSize()
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
		if err := s.load(ctx, sess, batch, ws, true); err != nil {
			s.requeue(announced, nil, nil) // listed, not loaded yet
			return err
		}
	}
	return nil
}

// loadSize is how many files one load takes: two commits' worth, so that a
// stop waits for little.
func (s *Server) loadSize() int {
	n := s.cfg.Ingest.FilesPerCommit
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
func (s *Server) loadQueued(ctx context.Context, sess *ingest.Session, stopped func() bool) error {
	now := time.Now()
	if n := s.queue.due(now); n > s.loadSize() {
		return s.sweep(ctx, sess, stopped, s.queue.take(n, now))
	}
	ws := s.queue.take(s.loadSize(), now)
	files, err := s.stat(ctx, ws)
	if err != nil {
		s.requeue(ws, nil, nil)
		s.health.loadDone(err)
		s.onLoad(nil, err)
		return err
	}
	if len(files) == 0 {
		s.health.loadDone(nil) // nothing left to load is a load that succeeded
		return nil
	}
	return s.load(ctx, sess, files, ws, false)
}

// stat looks up the queued keys: a key that does not exist (loaded
// already, deleted, or never there) is dropped without a word, a key that
// names a symbolic link in a local landing folder with a warning; neither
// stops the others.
func (s *Server) stat(ctx context.Context, ws map[string]waiting) ([]storage.ObjectInfo, error) {
	var mu sync.Mutex
	var files []storage.ObjectInfo
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for k := range ws {
		g.Go(func() error {
			info, err := s.cfg.Ingest.Landing.Stat(gctx, k)
			if errors.Is(err, storage.ErrNotExist) {
				s.metrics.announcedMissing.Inc()
				s.log.Debug("announced file is not in the landing bucket", "key", k)
				return nil
			}
			if errors.Is(err, storage.ErrSymlink) {
				s.metrics.announcedMissing.Inc()
				s.log.Warn("announced file not loaded", "key", k, "err", err)
				return nil
			}
			if err != nil {
				return storage.Explain(fmt.Errorf("stat %s: %w", k, err), s.cfg.Ingest.Explain.Landing, s.cfg.Ingest.Explain.Names)
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
func (s *Server) load(ctx context.Context, sess *ingest.Session, files []storage.ObjectInfo, ws map[string]waiting, sweep bool) error {
	s.mu.Lock()
	now := time.Now()
	for _, f := range files {
		w := ws[f.Key]
		if landed := landing.LandedTime(f.LastModified, f.Changed, now); !f.LastModified.IsZero() && (w.since.IsZero() || landed.Before(w.since)) {
			w.since = landed
		}
		s.inflight[f.Key] = w
	}
	s.sweeping = sweep
	s.mu.Unlock()
	// A key an event announced came by its notification, also when a
	// sweep loads it; the others a sweep found.
	by := func(key string) string {
		if sweep && ws[key].announced.IsZero() {
			return lake.LoadedBySweep
		}
		return lake.LoadedByNotification
	}
	rep, err := sess.LoadBy(ctx, files, by)
	s.mu.Lock()
	clear(s.inflight)
	s.mu.Unlock()
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
		s.metrics.loadErrors.Inc()
		s.health.loadDone(err)
		if ctx.Err() == nil && !errors.Is(err, ingest.ErrLeaseLost) {
			s.log.Error("load failed; its files stay in the landing bucket and are tried again", withFix(err, "files", len(files), "err", err)...)
		}
	} else {
		s.health.loadDone(nil)
	}
	s.onLoad(rep, err)
	s.requeue(ws, final, readyAt)
	return err
}

func (s *Server) onLoad(rep *ingest.Report, err error) {
	if s.cfg.OnLoad != nil {
		s.cfg.OnLoad(rep, err)
	}
}

// requeue puts back the keys of ws that did not end (final[key] false),
// each to be taken not before readyAt[key].
func (s *Server) requeue(ws map[string]waiting, final map[string]bool, readyAt map[string]time.Time) {
	for k, w := range ws {
		if !final[k] {
			w.notBefore = readyAt[k]
			s.queue.add(k, w)
		}
	}
}

// withFix is a log line's attributes args, and the fix err carries
// (storage.Problem, the fix env check gives) as "fix" when it has one.
func withFix(err error, args ...any) []any {
	var h interface{ FixHint() string }
	if errors.As(err, &h) && h.FixHint() != "" {
		return append(args, "fix", h.FixHint())
	}
	return args
}
