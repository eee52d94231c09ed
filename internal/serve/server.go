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
// HTTP request only queues keys and answers; it never loads. With routes
// (Config.Routes) each table has its own session, queue and loading
// goroutine (a lane), and a router sends each key to its table's.
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
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/route"
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
	// OnMaintenance receives what each round of maintenance did, and of
	// which table.
	OnMaintenance func(lake.TableName, *lake.MaintainReport)
	// OnLoad receives each load's report (nil when the queued keys could
	// not be looked up) and error, from the loading goroutine: it must not
	// block (the command's alerts queue what it needs).
	OnLoad func(*ingest.Report, error)
	// OnLane, when set, is told of each lane as it is made: the lane of a
	// serve of one table, in New; each routed table's when its lane is
	// made, while the server runs. It gets the table's loading (Table
	// set; Accept its keys, Logger naming it, when routed) and returns
	// what receives that table's loads as OnLoad does (nil: nothing). It
	// must not block: the lane is made under the router's lock.
	OnLane func(ingest.Config) func(*ingest.Report, error)
	// Collectors are more metrics for /metrics (the gateways' figures).
	Collectors []prometheus.Collector
	// Routes, when set, route each landing key to its table (--route,
	// TIMELAKE_ROUTES; docs/routing.md): Ingest has no table, and each
	// table loads in a lane of its own (its lease, queue, sweeps, loads,
	// maintenance, health and metrics). A key no route takes, or two take
	// to different tables, is reported once and left in the landing.
	Routes route.Routes
	// TableDefaults, when set, sets each routed table's settings from the
	// options of its route (docs/routing.md, "Table defaults per route"),
	// before its lane is made.
	TableDefaults func(*ingest.Config)
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
	metrics *metrics

	requests atomic.Uint64 // notifications received, numbering their keys (waiting.request)

	// single is the lane of a serve of one table; nil with routes.
	single *lane
	// router routes keys to the lanes of a routed serve; nil without.
	router *router
	// turns lets one lane load at a time (a routed serve; nil otherwise).
	turns chan struct{}
}

// New checks cfg and builds a server. Errors: CheckListen's, a user name
// without password, routes beside a table.
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
	if len(cfg.Routes) > 0 && cfg.Ingest.Table != (lake.TableName{}) {
		return nil, fmt.Errorf("the table %s and the routes (%s) both name tables: give either one table or routes", cfg.Ingest.Table, cfg.Routes)
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
	s := &Server{cfg: cfg, log: cfg.Logger, landing: loc,
		bucket: &landing.Bucket{Store: cfg.Ingest.Landing, QuarantinePrefix: cfg.Ingest.QuarantinePrefix}}
	s.metrics = newMetrics(len(cfg.Routes) > 0, cfg.Collectors...)
	if len(cfg.Routes) > 0 {
		s.turns = make(chan struct{}, 1)
		s.router = newRouter(s)
	} else {
		s.single = newLane(s, cfg.Ingest, false)
	}
	return s, nil
}

// Run serves until ctx is done, then stops gracefully: it stops accepting
// requests, lets the loads under way finish (for at most ShutdownGrace, then
// abandons them: their files stay in the landing bucket), releases the
// leases and returns nil. Errors: the address cannot be listened on; the
// table or the landing bucket cannot be opened at start for another reason
// than the lease (ingest.Open's errors; a routed table that cannot be
// opened waits alone, reported in its health); the HTTP server failed.
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
	what := "table " + s.cfg.Ingest.Table.String()
	if s.router != nil {
		what = "the tables of the routes " + s.cfg.Routes.String()
	}
	s.cfg.OnStatus(fmt.Sprintf("serving %s from %s on http://%s (sweep every %s)",
		what, s.cfg.Ingest.Landing.URI(), ln.Addr(), s.cfg.Sweep))

	// The loading outlives ctx: a stop lets the load under way finish.
	work, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	stopping := make(chan struct{})
	looped := make(chan error, 1)
	go func() {
		if s.router != nil {
			looped <- s.router.run(work, stopping)
			return
		}
		looped <- s.single.loop(work, stopping)
	}()

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

// withFix is a log line's attributes args, and the fix err carries
// (storage.Problem, the fix env check gives) as "fix" when it has one.
func withFix(err error, args ...any) []any {
	var h interface{ FixHint() string }
	if errors.As(err, &h) && h.FixHint() != "" {
		return append(args, "fix", h.FixHint())
	}
	return args
}
