// Package ingest is the `timelake ingest` command: the poller cron runs
// every minute.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/lakecmd"
	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/fleet"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/settings"
)

// Options are the resolved inputs of one ingest command.
type Options struct {
	Config ingest.Config
	IO     *iostreams.IOStreams
	JSON   bool
	// Now is the clock of the run's start and of the timestamps that start
	// each output line in a pipe; nil means time.Now.
	Now func() time.Time
	// Getenv reports the process environment; when set, Run tunes the Go
	// runtime's memory settings for the run (ingest.TuneRuntime).
	Getenv func(string) (string, bool)
	// Monitor is where the run's alerts and metrics go (--notify-url,
	// --metrics-file); nil or without either: nowhere.
	Monitor *lakecmd.Monitor
	// Routes, when set, name the tables of the landing keys
	// (--route, TIMELAKE_ROUTES): Config has no table, and every routed
	// table is loaded in turn (docs/routing.md).
	Routes route.Routes
	// TableDefaults, when set, sets each routed table's settings from the
	// options of its route (docs/routing.md, "Table defaults per route").
	TableDefaults lakecmd.TableDefaults
}

// NewCmdIngest builds the command. runF replaces Run in tests of flag
// parsing; nil means Run.
func NewCmdIngest(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ingest",
		Short: "Load every file of the landing bucket into the Iceberg table, then delete it",
		Long: `Load every CSV, TSV, JSON (optionally gzipped) or Parquet file of the landing bucket
into the Iceberg table, with the object key as the batch id, and delete each
file once its rows are committed. A key that is already committed is only
deleted; a file that cannot be loaded is moved to the quarantine prefix with
an error report. Safe to run from cron every minute: a run that finds the
previous one still working says so on one line and exits with code 12 (11
when a serve or a poller of an overlapping prefix holds the table), and a
crash at any point loses and duplicates nothing.

With --route PATTERN=TABLE (repeated, or TIMELAKE_ROUTES) one run loads several
tables from one landing bucket, each file's table chosen from its key, one
table after the other with its own lease, commits, quarantine and summary;
a key no route takes stays where it is (docs/routing.md).

Every setting can also come from the environment or from --env-file; the
variable is named in each flag's help.

On a terminal each file gets one line, then a summary that names the run's
start time and duration. In a pipe (cron appending to a log) every line
starts with its time, RFC 3339 in UTC; --json prints one line per run.`,
		Example: `  timelake ingest --landing ./landing --warehouse ./lake --table iot.readings
  timelake ingest --env-file timelake.env
  timelake ingest --landing ./landing --warehouse ./lake --route 'readings/**=iot.readings' --route 'events/**=iot.events'
  set -a; . ./timelake.env; set +a; timelake ingest --json`,
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
			return Run(cmd.Context(), opts)
		},
	}
	settings.Bind(cmd.Flags(), settings.Ingest)
	return cmd
}

func resolve(cmd *cobra.Command, f *cmdutil.Factory) (*Options, error) {
	c, routes, defaults, err := lakecmd.ResolveRoutedIngest(cmd, f)
	if err != nil {
		return nil, err
	}
	r, err := f.Settings(cmd)
	if err != nil {
		return nil, err
	}
	m, err := lakecmd.ResolveMonitor(f, r)
	if err != nil {
		return nil, err
	}
	return &Options{Config: c, IO: f.IO, JSON: f.JSON, Getenv: f.Getenv, Monitor: m, Routes: routes, TableDefaults: defaults}, nil
}

// Report is the --json document: ingest's report and the time the run
// started (UTC), so a log of one JSON line per run says when each ran.
type Report struct {
	StartedAt time.Time `json:"started_at"`
	// StillWorking is the lease of the previous run of this poller, when
	// it is still working and this run did nothing (exit 12).
	StillWorking *landing.LeaseInfo `json:"still_working,omitempty"`
	*ingest.Report
}

// Run runs one ingest and prints one line per file and a summary, or the
// --json report. It returns cmdutil.ErrPartial (exit 3) when files were
// quarantined or failed. With Routes it loads every routed table
// (runRouted).
func Run(ctx context.Context, opts *Options) error {
	now := opts.clock()
	started := now()
	if opts.Getenv != nil {
		defer ingest.TuneRuntime(opts.Config.MemoryBudget, opts.Getenv)()
	}
	defer opts.Monitor.Close(ctx)
	if len(opts.Routes) > 0 {
		return opts.runRouted(ctx, started)
	}
	res := opts.runTable(ctx, opts.Config, started)
	if res.metrics != nil {
		if merr := opts.writeMetrics([]fleet.TableMetrics{*res.metrics}); merr != nil && res.runErr == nil {
			res.err = merr
		}
	}
	if res.quiet {
		return res.err
	}
	if opts.JSON {
		if jerr := opts.IO.PrintJSON(res.document(started)); jerr != nil && res.runErr == nil {
			return jerr
		}
	}
	return res.err
}

// clock is opts.Now, else time.Now.
func (o *Options) clock() func() time.Time {
	if o.Now == nil {
		return time.Now
	}
	return o.Now
}

// tableResult is the outcome of one table's run.
type tableResult struct {
	rep *ingest.Report
	// held is the lease of the previous run of this poller, still
	// working: this run did nothing (exit 12).
	held *landing.LeaseHeldError
	// runErr is the run's own error, as the command reports it (a usage
	// error, an interruption, a failure); nil when the run finished.
	runErr error
	// quiet: nothing was done and runErr is the whole story (no summary,
	// no report that would read like success).
	quiet bool
	// err is what the table's run ends with: runErr, exit 12,
	// cmdutil.ErrPartial, or nil.
	err error
	// metrics are the table's metrics for the metrics file; nil without
	// one, or when the run tells none (a dry run, exit 12).
	metrics *fleet.TableMetrics
}

// document is the --json report of a table's run.
func (res tableResult) document(started time.Time) Report {
	doc := Report{StartedAt: started.UTC().Truncate(time.Millisecond), Report: res.rep}
	if res.held != nil {
		info := res.held.Info()
		doc.StillWorking = &info
	}
	return doc
}

// runTable runs ingest of c's table and, without --json, prints its lines
// and summary (or the one line of exit 12).
func (o *Options) runTable(ctx context.Context, c ingest.Config, started time.Time) tableResult {
	out := o.IO.TimedOut(o.clock())
	if !o.JSON {
		c.OnPlan = func(rep *ingest.Report) { io.WriteString(out, PlanText(rep)) }
		c.OnFile = func(r ingest.FileResult) { iostreams.Fprintln(out, lakecmd.FileLine(r)) }
		c.OnCreate = func(cr *ingest.Created) { io.WriteString(out, lakecmd.CreatedText(cr)) }
	}
	rep, err := ingest.Run(ctx, c)
	var held *landing.LeaseHeldError
	busy := errors.As(err, &held) && held.Busy()
	res := tableResult{rep: rep, metrics: o.afterRun(ctx, c, rep, err, started, busy)}
	if busy {
		// A backlog, not a failure: one line (or the report) and exit 12.
		res.held = held
		res.err = &cmdutil.SilentError{Code: cmdutil.ExitBusy, Err: held}
		if !o.JSON {
			if _, werr := iostreams.Fprintf(out, "%s: %s; run started %s\n", rep.Table, held, started.UTC().Format(time.RFC3339)); werr != nil {
				res.err = werr
			}
		}
		return res
	}
	var sce *lake.SourceColumnError
	if decode.IsColumnsSetting(err) || errors.As(err, &sce) {
		// No file could create the table because of --column, or the
		// source columns name columns the table cannot fill.
		err = &cmdutil.UsageError{Err: err}
	}
	if err != nil && ctx.Err() != nil {
		err = &cmdutil.InterruptedError{Left: interruptedLeft(rep), Err: err}
	}
	res.runErr, res.err = err, err
	if err != nil && len(rep.Files) == 0 {
		res.quiet = true
		return res
	}
	if !o.JSON {
		if e := rep.ExpiredDuringRun; e != nil {
			iostreams.Fprintln(out, ExpiryLine(e))
		}
		if m := rep.Maintenance; m != nil && m.Notable() {
			iostreams.Fprintln(out, lakecmd.MaintenanceLine(m))
		}
		iostreams.Fprintln(out, Summary(rep, started))
	}
	if err == nil && rep.Partial() {
		res.err = cmdutil.ErrPartial
	}
	return res
}

// ExpiryLine is the line of the snapshot expiry between a run's commits
// (docs/ingest.md, "A long run").
func ExpiryLine(e *ingest.RunExpiry) string {
	line := iostreams.Sprintf("%-15s expired %s during the run (%s into the load history, %s deleted) in %.1fs",
		"expiry", iostreams.Plural(int64(e.SnapshotsExpired), "snapshot"), iostreams.Plural(int64(e.KeysRemembered), "key"),
		iostreams.Plural(int64(e.FilesDeleted), "file"), e.Seconds)
	if e.Error != "" {
		line += "; stopped: " + e.Error + " (the loaded files are committed; the maintenance after the run goes on)"
	}
	return line
}

// interruptedLeft is what a run stopped by a signal left, for its one
// "interrupted" line: a file is either committed and deleted from the
// landing bucket, or still there for the next run.
func interruptedLeft(rep *ingest.Report) string {
	loaded := iostreams.Plural(int64(rep.Loaded), "file") + " loaded"
	if rep.Maintenance != nil {
		return loaded + " and committed; maintenance was stopped midway and goes on in the next run (or timelake tables maintain)"
	}
	return loaded + " before the stop; the files not loaded yet stay in the landing bucket, nothing is lost: run ingest again to load them"
}

// PlanText is what a run says before its first file: the leases it broke
// (who held them and since when) and, in a dry run, the table it would
// create.
func PlanText(rep *ingest.Report) string {
	var b strings.Builder
	for _, l := range rep.BrokenLeases {
		since, until := l.Acquired.UTC().Format(time.RFC3339), l.Expires.UTC().Format(time.RFC3339)
		iostreams.Fprintf(&b, "broke lease %s of %s (landing prefix %q): held since %s, ", l.Key, l.Holder, l.Prefix, since)
		switch l.State {
		case "dead":
			b.WriteString("by a process that no longer runs on this host\n")
		case "expired":
			iostreams.Fprintf(&b, "expired at %s\n", until)
		default:
			iostreams.Fprintf(&b, "valid until %s\n", until)
		}
	}
	if rep.WouldCreate != "" {
		iostreams.Fprintf(&b, "table %s does not exist in %s: this run would create it from the first file that decodes\n",
			rep.WouldCreate, rep.Warehouse)
	}
	return b.String()
}

// Summary is the last output line of a run: what it did, then when it
// started (RFC 3339, UTC) and how long it took.
func Summary(rep *ingest.Report, started time.Time) string {
	var s string
	switch {
	case rep.DryRun:
		count := map[ingest.Status]int{}
		for _, f := range rep.Files {
			count[f.Status]++
		}
		s = iostreams.Sprintf("%s: dry run, %s would be loaded, %d already loaded",
			rep.Table, iostreams.Plural(int64(count[ingest.WouldLoad]), "file"), count[ingest.AlreadyLoaded])
		if other := len(rep.Files) - count[ingest.WouldLoad] - count[ingest.AlreadyLoaded] - count[ingest.Waiting]; other > 0 {
			s += iostreams.Sprintf(", %d would be quarantined", other)
		}
		if count[ingest.Waiting] > 0 {
			s += iostreams.Sprintf(", %d waiting for the next run", count[ingest.Waiting])
		}
	case len(rep.Files) == 0:
		s = iostreams.Sprintf("%s: nothing to load in %s", rep.Table, rep.Landing)
	default:
		s = iostreams.Sprintf("%s: %d loaded (%s), %d already loaded, %d quarantined",
			rep.Table, rep.Loaded, iostreams.Plural(rep.Rows, "row"), rep.AlreadyLoaded, rep.Quarantined)
		if rep.RejectedRows > 0 {
			s += iostreams.Sprintf(", %s set aside (--on-error skip-rows)", iostreams.Plural(rep.RejectedRows, "row"))
		}
		if rep.Failed > 0 {
			s += fmt.Sprintf(", %d failed (left for the next run)", rep.Failed)
		}
		if rep.SnapshotID != 0 {
			s += iostreams.Sprintf("; current snapshot %d (metadata v%d)", rep.SnapshotID, rep.MetadataVersion)
		}
		if rep.Waiting > 0 {
			s += iostreams.Sprintf(", %d waiting for the next run", rep.Waiting)
		}
		if rep.Remaining {
			s += "; more files wait (--max-files)"
		}
	}
	return s + iostreams.Sprintf("; run started %s, took %.1fs", started.UTC().Format(time.RFC3339), rep.Seconds)
}
