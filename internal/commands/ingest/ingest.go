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
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
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
}

// NewCmdIngest builds the command. runF replaces Run in tests of flag
// parsing; nil means Run.
func NewCmdIngest(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ingest",
		Short: "Load every file of the landing bucket into the Iceberg table, then delete it",
		Long: `Load every CSV, TSV (optionally gzipped) or Parquet file of the landing bucket
into the Iceberg table, with the object key as the batch id, and delete each
file once its rows are committed. A key that is already committed is only
deleted; a file that cannot be loaded is moved to the quarantine prefix with
an error report. Safe to run from cron every minute: a run that finds the
previous one still working says so on one line and exits with code 12 (11
when a serve or a poller of an overlapping prefix holds the table), and a
crash at any point loses and duplicates nothing.

Every setting can also come from the environment or from --env-file; the
variable is named in each flag's help.

On a terminal each file gets one line, then a summary that names the run's
start time and duration. In a pipe (cron appending to a log) every line
starts with its time, RFC 3339 in UTC; --json prints one line per run.`,
		Example: `  timelake ingest --landing ./landing --warehouse ./lake --table iot.readings
  timelake ingest --env-file timelake.env
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
	c, err := lakecmd.ResolveIngestConfig(cmd, f)
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
	return &Options{Config: c, IO: f.IO, JSON: f.JSON, Getenv: f.Getenv, Monitor: m}, nil
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
// quarantined or failed.
func Run(ctx context.Context, opts *Options) error {
	c := opts.Config
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	started := now()
	if opts.Getenv != nil {
		defer ingest.TuneRuntime(c.MemoryBudget, opts.Getenv)()
	}
	out := opts.IO.TimedOut(now)
	if !opts.JSON {
		c.OnPlan = func(rep *ingest.Report) { io.WriteString(out, PlanText(rep)) }
		c.OnFile = func(r ingest.FileResult) { iostreams.Fprintln(out, lakecmd.FileLine(r)) }
		c.OnCreate = func(cr *ingest.Created) { io.WriteString(out, lakecmd.CreatedText(cr)) }
	}
	rep, err := ingest.Run(ctx, c)
	defer opts.Monitor.Close(ctx)
	var held *landing.LeaseHeldError
	busy := errors.As(err, &held) && held.Busy()
	merr := opts.afterRun(ctx, rep, err, started, busy)
	if busy {
		// A backlog, not a failure: one line (or the report) and exit 12.
		if opts.JSON {
			info := held.Info()
			err = opts.IO.PrintJSON(Report{StartedAt: started.UTC().Truncate(time.Millisecond), StillWorking: &info, Report: rep})
		} else {
			_, err = iostreams.Fprintf(out, "%s: %s; run started %s\n", rep.Table, held, started.UTC().Format(time.RFC3339))
		}
		if err != nil {
			return err
		}
		return &cmdutil.SilentError{Code: cmdutil.ExitBusy, Err: held}
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
	if err != nil && len(rep.Files) == 0 {
		// Nothing was done: the error is the whole story (no "nothing to
		// load" summary that would read like success).
		return err
	}
	if opts.JSON {
		if jerr := opts.IO.PrintJSON(Report{StartedAt: started.UTC().Truncate(time.Millisecond), Report: rep}); jerr != nil && err == nil {
			err = jerr
		}
	} else {
		if e := rep.ExpiredDuringRun; e != nil {
			iostreams.Fprintln(out, ExpiryLine(e))
		}
		if m := rep.Maintenance; m != nil && m.Notable() {
			iostreams.Fprintln(out, lakecmd.MaintenanceLine(m))
		}
		iostreams.Fprintln(out, Summary(rep, started))
	}
	if err != nil {
		return err
	}
	if merr != nil {
		return merr
	}
	if rep.Partial() {
		return cmdutil.ErrPartial
	}
	return nil
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
		n := 0
		for _, f := range rep.Files {
			if f.Status == ingest.WouldLoad {
				n++
			}
		}
		s = iostreams.Sprintf("%s: dry run, %d files would be loaded, %d already loaded", rep.Table, n, len(rep.Files)-n)
	case len(rep.Files) == 0:
		s = iostreams.Sprintf("%s: nothing to load in %s", rep.Table, rep.Landing)
	default:
		s = iostreams.Sprintf("%s: %d loaded (%d rows), %d already loaded, %d quarantined",
			rep.Table, rep.Loaded, rep.Rows, rep.AlreadyLoaded, rep.Quarantined)
		if rep.RejectedRows > 0 {
			s += iostreams.Sprintf(", %d rows set aside (--on-error skip-rows)", rep.RejectedRows)
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
