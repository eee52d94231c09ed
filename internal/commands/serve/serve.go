// Package serve is the `timelake serve` command: the long-lived server that
// loads landing files on object notifications (internal/serve).
package serve

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/lakecmd"
	"github.com/timelake/timelake/internal/fleet"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/serve"
	"github.com/timelake/timelake/internal/settings"
)

// Options are the resolved inputs of one serve command.
type Options struct {
	Server serve.Config
	IO     *iostreams.IOStreams
	JSON   bool
	// Now is the clock of the timestamps that start each output line in a
	// pipe (and of the JSON lines); nil means time.Now.
	Now func() time.Time
	// Getenv reports the process environment; when set, RunServe tunes the
	// Go runtime's memory settings as ingest does (ingest.TuneRuntime).
	Getenv func(string) (string, bool)
	// Monitor is where alerts go (--notify-url) and how the gateways'
	// figures of /metrics are computed; nil: no alerts, default figures.
	Monitor *lakecmd.Monitor
	// StatusEvery is how often the gateways' figures are computed; 0
	// means DefaultStatusEvery.
	StatusEvery time.Duration
}

// NewCmdServe builds the command. runF replaces RunServe in tests of flag
// parsing; nil means RunServe.
func NewCmdServe(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Load landing files seconds after they land, on object notifications",
		Long: `Run as a long-lived process that loads each landing file seconds after it
lands: Tigris, MinIO and AWS S3 send object notifications to POST /notify,
and serve loads the announced files with ingest's code (batch id = object
key, quarantine, the same output lines). A listing of the landing bucket
every --sweep (and at start) loads what no notification announced.

serve holds the table's ingest lease while it runs: a cron "timelake ingest"
on the same table exits 11, and a second serve waits for the lease. Run
either serve or cron ingest for a table, not both.

With --route PATTERN=TABLE (repeated, or TIMELAKE_ROUTES) instead of --table,
one serve loads several tables from one landing bucket, each key into its
route's table, each table with its own lease, queue, sweeps and maintenance;
a key no route takes is reported once and left where it is (docs/routing.md).

GET /healthz answers 200 while the lease is held and the last sweep and load
succeeded, 503 with the reason otherwise; GET /metrics has Prometheus
metrics. SIGTERM or SIGINT stops it: no new requests, the files being loaded
are finished (or left in the landing bucket after a few seconds), the lease
is released, exit 0. A second signal, a second or more after the first,
stops it at once.

Notifications must authenticate with TIMELAKE_WEBHOOK_TOKEN (Bearer) or
TIMELAKE_WEBHOOK_USER and TIMELAKE_WEBHOOK_PASSWORD (Basic); without them
serve only listens on a loopback address.`,
		Example: `  timelake serve --env-file timelake.env
  TIMELAKE_WEBHOOK_TOKEN=... timelake serve --env-file timelake.env --listen :8080 --sweep 10m
  timelake serve --landing ./landing --warehouse ./lake --route 'readings/**=iot.readings' --route 'events/**=iot.events'`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{cmdutil.AnnotationTimedErrors: ""},
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := resolve(cmd, f)
			if err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunServe(cmd.Context(), opts)
		},
	}
	settings.Bind(cmd.Flags(), settings.Serve)
	return cmd
}

func resolve(cmd *cobra.Command, f *cmdutil.Factory) (*Options, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return nil, err
	}
	sc := serve.Config{
		Listen: settings.Listen.Get(r),
		Sweep:  settings.Sweep.Get(r),
		Auth: serve.Auth{Token: settings.WebhookToken.Get(r),
			User: settings.WebhookUser.Get(r), Password: settings.WebhookPassword.Get(r)},
		Logger: f.Logger(),
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if (sc.Auth.User == "") != (sc.Auth.Password == "") {
		return nil, cmdutil.UsageErrorf("basic authentication needs both TIMELAKE_WEBHOOK_USER and TIMELAKE_WEBHOOK_PASSWORD")
	}
	if err := serve.CheckListen(sc.Listen, sc.Auth); err != nil {
		return nil, &cmdutil.UsageError{Err: err}
	}
	if sc.Ingest, sc.Routes, sc.TableDefaults, err = lakecmd.ResolveRoutedIngest(cmd, f); err != nil {
		return nil, err
	}
	m, err := lakecmd.ResolveMonitor(f, r)
	if err != nil {
		return nil, err
	}
	return &Options{Server: sc, IO: f.IO, JSON: f.JSON, Getenv: f.Getenv, Monitor: m}, nil
}

// Line is one line of `serve --json`: a file's result, the table created,
// a round of maintenance, or a status message.
type Line struct {
	Time time.Time `json:"time"`
	Type string    `json:"type"` // status, file, created, maintenance
	// Table is the table of a file or of a round of maintenance, with
	// routes (--route) only.
	Table       string               `json:"table,omitempty"`
	Message     string               `json:"message,omitempty"`
	File        *ingest.FileResult   `json:"file,omitempty"`
	Created     *ingest.Created      `json:"created,omitempty"`
	Maintenance *lake.MaintainReport `json:"maintenance,omitempty"`
}

// RunServe serves until ctx is done (SIGTERM, SIGINT), printing a line per
// file as ingest does (timestamped in a pipe), or one JSON line per event
// with --json. It returns nil after a graceful stop.
func RunServe(ctx context.Context, opts *Options) error {
	c := opts.Server
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	if opts.Getenv != nil {
		defer ingest.TuneRuntime(c.Ingest.MemoryBudget, opts.Getenv)()
	}
	var mu sync.Mutex
	var printErr error
	emit := func(l Line) {
		mu.Lock()
		defer mu.Unlock()
		l.Time = now().UTC().Truncate(time.Millisecond)
		if err := iostreams.WriteJSON(opts.IO.Out, l, false); err != nil && printErr == nil {
			printErr = err
		}
	}
	out := opts.IO.TimedOut(now)
	// With routes, a file's table is its route's, and maintenance names
	// its table.
	routed := len(c.Routes) > 0
	tableOf := func(key string) string {
		if !routed {
			return ""
		}
		if t, _, err := c.Routes.Table(key); err == nil {
			return t.String()
		}
		return ""
	}
	if opts.JSON {
		c.OnStatus = func(m string) { emit(Line{Type: "status", Message: m}) }
		c.Ingest.OnFile = func(r ingest.FileResult) { emit(Line{Type: "file", Table: tableOf(r.Key), File: &r}) }
		c.Ingest.OnCreate = func(cr *ingest.Created) { emit(Line{Type: "created", Created: cr}) }
		c.OnMaintenance = func(t lake.TableName, m *lake.MaintainReport) {
			l := Line{Type: "maintenance", Maintenance: m}
			if routed {
				l.Table = t.String()
			}
			emit(l)
		}
	} else {
		c.OnStatus = func(m string) { iostreams.Fprintln(out, m) }
		c.Ingest.OnFile = func(r ingest.FileResult) { iostreams.Fprintln(out, lakecmd.FileLine(r)) }
		c.Ingest.OnCreate = func(cr *ingest.Created) { io.WriteString(out, lakecmd.CreatedText(cr)) }
		c.OnMaintenance = func(t lake.TableName, m *lake.MaintainReport) {
			if !m.Notable() {
				return
			}
			if routed {
				iostreams.Fprintln(out, t.String()+": "+lakecmd.MaintenanceLine(m))
				return
			}
			iostreams.Fprintln(out, lakecmd.MaintenanceLine(m))
		}
	}
	m := opts.Monitor
	if m == nil {
		m = &lakecmd.Monitor{}
	}
	// Each table's gateway figures and alerts: a watcher per lane (one,
	// or one per routed table as its lane is made), their figures in one
	// collector of /metrics, labelled table.
	col := fleet.NewCollector()
	c.Collectors = append(c.Collectors, col)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var watchMu sync.Mutex
	var watching sync.WaitGroup
	stopped := false
	c.OnLane = func(cfg ingest.Config) func(*ingest.Report, error) {
		watchMu.Lock()
		defer watchMu.Unlock()
		if stopped {
			return nil
		}
		w := newWatcher(m, cfg, col, opts.StatusEvery)
		watching.Add(1)
		go func() {
			defer watching.Done()
			w.run(wctx)
		}()
		return w.onLoad
	}
	srv, err := serve.New(c)
	if err != nil {
		if errors.Is(err, serve.ErrNoAuth) {
			err = &cmdutil.UsageError{Err: err}
		}
	} else {
		err = srv.Run(ctx)
	}
	stopWatch()
	watchMu.Lock()
	stopped = true
	watchMu.Unlock()
	watching.Wait()
	m.Close(ctx)
	if err != nil {
		var sce *lake.SourceColumnError
		if errors.As(err, &sce) {
			// The source columns name columns the table cannot fill.
			return &cmdutil.UsageError{Err: err}
		}
		return err
	}
	return printErr
}
