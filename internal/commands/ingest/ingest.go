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
	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
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
	Monitor *cmdutil.Monitor
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
	c, err := ResolveConfig(cmd, f)
	if err != nil {
		return nil, err
	}
	r, err := f.Settings(cmd)
	if err != nil {
		return nil, err
	}
	m, err := f.ResolveMonitor(r)
	if err != nil {
		return nil, err
	}
	return &Options{Config: c, IO: f.IO, JSON: f.JSON, Getenv: f.Getenv, Monitor: m}, nil
}

// ResolveConfig resolves the settings of a command that loads the landing
// bucket (ingest, serve) into an ingest.Config, with the landing store and
// the lake opened. Errors: usage errors (a missing or bad setting, a
// warehouse that overlaps the landing location), and those of opening the
// stores.
func ResolveConfig(cmd *cobra.Command, f *cmdutil.Factory) (ingest.Config, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return ingest.Config{}, err
	}
	land := settings.Landing.Require(r)
	warehouse := settings.Warehouse.Require(r)
	c := ingest.Config{
		Table:             settings.Table.Require(r),
		Prefix:            settings.LandingPrefix.Get(r),
		QuarantinePrefix:  settings.QuarantinePrefix.Get(r),
		TimeColumn:        settings.TimeColumn.Get(r),
		SeriesKey:         settings.SeriesKey.Get(r),
		Partition:         settings.Partition.Get(r),
		TimeUnit:          settings.TimeUnit.Get(r),
		AssumeLocation:    settings.AssumeTimezone.Get(r),
		CSV:               settings.CSVOf(r),
		Columns:           settings.Columns.Get(r),
		Evolve:            settings.Evolve.Get(r),
		OnError:           settings.OnError.Get(r),
		MaxBadRows:        settings.MaxBadRows.Get(r),
		SourceColumn:      settings.SourceColumn.Get(r),
		LoadTimeColumn:    settings.LoadTimeColumn.Get(r),
		NoCreate:          settings.NoCreate.Get(r),
		DryRun:            settings.DryRun.Get(r),
		MaxFiles:          settings.MaxFiles.Get(r),
		LeaseTTL:          settings.LeaseTTL.Get(r),
		Parallel:          settings.Parallel.Get(r),
		FilesPerCommit:    settings.FilesPerCommit.Get(r),
		MemoryBudget:      settings.MemoryBudget.Get(r),
		ContentDedupe:     settings.ContentDedupe.Get(r),
		BreakLease:        settings.BreakLease.Get(r),
		MaintenanceBudget: settings.MaintenanceBudget.Get(r),
		SettleTime:        noneIfZero(settings.SettleTime.Get(r)),
		OpenEndSettleTime: noneIfZero(settings.OpenEndSettleTime.Get(r)),
		Logger:            f.Logger(),
	}
	if err := r.Err(); err != nil {
		return c, err
	}
	if err := decode.CheckTimeColumnType(c.TimeColumn, c.Columns); err != nil {
		return c, &cmdutil.UsageError{Err: err}
	}
	if c.SourceColumn != "" && c.SourceColumn == c.LoadTimeColumn {
		return c, cmdutil.UsageErrorf("--source-column and --load-time-column are both %q: one column cannot hold each row's landing key and its load time; choose two names", c.SourceColumn)
	}
	wloc, err := storage.ParseLocation(warehouse, false)
	if err == nil && storage.Overlaps(land, wloc) {
		return c, cmdutil.UsageErrorf("the warehouse %s and the landing location %s overlap: ingest would load the table's own files; use separate buckets, prefixes or folders", wloc, land)
	}
	ctx := cmd.Context()
	if c.Landing, err = f.OpenStore(ctx, cmd, land); err != nil {
		return c, err
	}
	if land.IsS3() && land.Prefix != "" {
		// Leases live at the bucket's root, so that pollers given
		// s3://bucket and s3://bucket/prefix see each other's.
		if c.LeaseStore, err = f.OpenStore(ctx, cmd, storage.Location{Bucket: land.Bucket}); err != nil {
			return c, err
		}
		c.LeasePrefix = land.Prefix + "/" + c.Prefix
	}
	if c.Lake, err = f.OpenLake(ctx, cmd, warehouse); err != nil {
		return c, err
	}
	if wloc.IsS3() {
		// For the check that a missing table is not a missing lake bucket.
		if c.Warehouse, err = f.OpenStore(ctx, cmd, wloc); err != nil {
			return c, err
		}
	}
	c.Explain = ingest.Explain{
		Landing: f.Where(cmd, &settings.Landing.Spec, storeWhat(land, "landing bucket", "landing folder"), land),
		Lake:    f.Where(cmd, &settings.Warehouse.Spec, storeWhat(wloc, "lake bucket", "warehouse folder"), wloc),
		Names:   f.StorageNames(cmd),
	}
	return c, nil
}

// noneIfZero maps a settle setting of 0 (no wait) to ingest.Config's
// "none" (a negative value; 0 there is the default).
func noneIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// storeWhat names a location for messages.
func storeWhat(loc storage.Location, bucket, folder string) string {
	if loc.IsS3() {
		return bucket
	}
	return folder
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
		c.OnFile = func(r ingest.FileResult) { iostreams.Fprintln(out, FileLine(r)) }
		c.OnCreate = func(cr *ingest.Created) { io.WriteString(out, CreatedText(cr)) }
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
		if m := rep.Maintenance; m != nil && m.Notable() {
			iostreams.Fprintln(out, MaintenanceLine(m))
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

// FileLine is the one output line of a file.
func FileLine(r ingest.FileResult) string {
	switch r.Status {
	case ingest.Loaded:
		var notes []string
		switch {
		case r.ReplacedRows > 0:
			notes = append(notes, iostreams.Sprintf("%d replaced by a later row of the file with the same series key and time (timelake.read-dedup)", r.ReplacedRows))
		case r.DuplicateRows > 0:
			notes = append(notes, iostreams.Sprintf("%d repeat the series key and time of an earlier row, kept", r.DuplicateRows))
		}
		if r.RejectedRows > 0 {
			notes = append(notes, iostreams.Sprintf("%d refused, set aside -> %s", r.RejectedRows, r.RejectsTo))
		}
		rows := iostreams.Sprintf("%d rows", r.Rows)
		if len(notes) > 0 {
			rows += " (" + strings.Join(notes, "; ") + ")"
		}
		s := iostreams.Sprintf("%-15s %s  %s  snapshot %d", "loaded", r.Key, rows, r.SnapshotID)
		if r.Profile != "" {
			s += iostreams.Sprintf("; profile %s", r.Profile)
		}
		if len(r.SchemaChanges) > 0 {
			s += "; schema: " + strings.Join(r.SchemaChanges, ", ")
		}
		if r.Reason != "" {
			s += "; " + r.Reason
		}
		return s
	case ingest.AlreadyLoaded:
		if r.SnapshotID == 0 || r.SameAs != "" {
			return iostreams.Sprintf("%-15s %s  %s", "already loaded", r.Key, r.Reason)
		}
		return iostreams.Sprintf("%-15s %s  snapshot %d, deleted", "already loaded", r.Key, r.SnapshotID)
	case ingest.Waiting:
		return iostreams.Sprintf("%-15s %s  %s", "waiting", r.Key, r.Reason)
	case ingest.Failed:
		return iostreams.Sprintf("%-15s %s  %s", "failed", r.Key, r.Reason)
	case ingest.Quarantined:
		return iostreams.Sprintf("%-15s %s  -> %s: %s", "quarantined", r.Key, r.QuarantinedTo, r.Reason)
	case ingest.WouldLoad:
		s := iostreams.Sprintf("%-15s %s  %d bytes", "would load", r.Key, r.Size)
		if r.Profile != "" {
			s += iostreams.Sprintf("; profile %s", r.Profile)
		}
		if r.Reason != "" {
			s += "; would be quarantined: " + r.Reason
		}
		return s
	}
	return iostreams.Sprintf("%-15s %s", r.Status, r.Key)
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

// MaintenanceLine says what the maintenance after the loading did, and
// what it left and why: the budget ran out, compaction skipped (delete
// files), groups left by its byte bound, nothing to compact, when orphan
// files are looked for next.
func MaintenanceLine(m *ingest.Maintenance) string {
	var parts []string
	if len(m.PartitionsDropped) > 0 {
		parts = append(parts, iostreams.Sprintf("dropped %s older than timelake.retention (%s: %s)",
			iostreams.Plural(int64(len(m.PartitionsDropped)), "partition"), iostreams.Plural(m.RowsDropped, "row"), strings.Join(m.PartitionsDropped, ", ")))
	}
	if m.FilesIn > 0 {
		c := iostreams.Sprintf("compacted %s (%s) into %d", iostreams.Plural(int64(m.FilesIn), "file"), iostreams.HumanBytes(m.BytesIn), m.FilesOut)
		if m.RowsReplaced > 0 {
			c += iostreams.Sprintf(" (%d rows replaced by a newer batch's, timelake.read-dedup)", m.RowsReplaced)
		}
		parts = append(parts, c)
	}
	if m.SnapshotsExpired > 0 {
		parts = append(parts, iostreams.Sprintf("expired %s (%s into the load history, %s deleted)",
			iostreams.Plural(int64(m.SnapshotsExpired), "snapshot"), iostreams.Plural(int64(m.KeysRemembered), "key"), iostreams.Plural(int64(m.FilesDeleted), "file")))
	}
	if m.OrphansRemoved > 0 {
		parts = append(parts, "removed "+iostreams.Plural(int64(m.OrphansRemoved), "orphan file"))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing to do")
	}
	s := iostreams.Sprintf("%-15s %s in %.1fs", "maintenance", strings.Join(parts, ", "), m.Seconds)
	if m.Pending {
		s += "; more next run (the budget ran out)"
	}
	switch {
	case m.CompactionSkipped != "":
		s += "; compaction skipped: " + m.CompactionSkipped
	case m.CompactionDeferred > 0:
		s += fmt.Sprintf("; compaction left %s for the next run (its bound on the bytes one round rewrites is spent, or their rewrite would not end within the budget)", iostreams.Plural(int64(m.CompactionDeferred), "group"))
	case m.CompactionIdle != "":
		s += "; nothing to compact: " + m.CompactionIdle
	}
	if m.OrphansNextCheck != nil {
		s += "; orphan files looked for next at " + m.OrphansNextCheck.UTC().Format(time.RFC3339)
		if m.OrphansLastChecked != nil {
			s += " (last at " + m.OrphansLastChecked.UTC().Format(time.RFC3339) + ")"
		}
	}
	if m.Error != "" {
		s += "; stopped: " + m.Error + " (the loaded files are committed; see timelake tables maintain)"
	}
	return s
}

// CreatedText describes a table created by the run.
func CreatedText(c *ingest.Created) string {
	var b strings.Builder
	iostreams.Fprintf(&b, "created table %s at %s from %s\n", c.Table, c.Location, c.FromFile)
	iostreams.Fprintf(&b, "  time column %s, partition %s(%s)", c.TimeColumn, c.Partition, c.TimeColumn)
	if len(c.SeriesKey) > 0 {
		iostreams.Fprintf(&b, ", series key %s", strings.Join(c.SeriesKey, ","))
	}
	b.WriteString("\n")
	for _, col := range c.Columns {
		req := ""
		if col.Required {
			req = " not null"
		}
		iostreams.Fprintf(&b, "  %-20s %s%s\n", col.Name, col.Type, req)
	}
	return b.String()
}
