// Package landing is the `timelake landing` command group: the quarantined
// files of the landing bucket, putting them back once what refused them is
// fixed, and discarding those that will never load (docs/schema.md, "A
// gateway changed its format"); the audit of the landing bucket against the
// table and each gateway's freshness (internal/fleet, docs/operations.md).
//
// Each subcommand has an Options struct, a NewCmdX(f, runF) constructor and
// a plain RunX(ctx, opts) function; output goes through internal/iostreams
// (a table, or one JSON document with --json). What is done to a file is
// internal/landing's (Bucket.Requeue, Bucket.Discard, RequeueSkip).
package landing

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/lakecmd"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/settings"
)

// NewCmdLanding builds the `landing` group. runF, when not nil, replaces
// the run function of every subcommand and receives its *XOptions (tests
// of flag parsing); nil means the real run functions.
func NewCmdLanding(f *cmdutil.Factory, runF func(context.Context, any) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "landing",
		Short: "The landing bucket: its quarantined files (rejected, requeue, discard), an audit against the table, and each gateway's freshness",
		Long: `Files that ingest cannot load are moved to the quarantine prefix of the
landing bucket (--quarantine-prefix, _rejected/ by default) with a JSON report
beside each. "landing rejected" lists them with their reasons; once the cause
is fixed (a setting such as --csv-delimiter or --evolve, a type given with
--column), "landing requeue" puts them back under their original keys, and
the next ingest run loads them. "landing discard" takes those that will never
load out of the quarantine: archived below _timelake/discarded/, or deleted.

With --warehouse and --table (or TIMELAKE_WAREHOUSE and TIMELAKE_TABLE, as
in the poller's env file), a file whose key the table loaded since (a
corrected file sent under the same key) is marked, and requeue skips it.

"landing audit" compares the landing bucket and the quarantine with the
table's history (files stuck, changed after their load, left behind,
quarantined by reason, loaded by serve's sweep); "landing status" shows each
gateway's freshness against its expected cadence. Both need the warehouse
and the table, or routes (--route, TIMELAKE_ROUTES) instead of the table to
report each routed table on its keys (docs/routing.md), and exit 1 when
something needs attention.`,
		Example: `  timelake landing rejected --env-file timelake.env
  timelake landing requeue --all --dry-run
  timelake landing requeue gateway-7/20260105T1000.csv --json
  timelake landing discard --reason "different content" --since 7d
  timelake landing audit --env-file timelake.env
  timelake landing status --env-file timelake.env --expect-every 1m`,
		Args: cobra.NoArgs,
	}
	settings.Bind(cmd.PersistentFlags(), settings.LandingGroup)
	cmd.AddCommand(
		NewCmdRejected(f, cmdutil.Adapt[RejectedOptions](runF)),
		NewCmdRequeue(f, cmdutil.Adapt[RequeueOptions](runF)),
		NewCmdDiscard(f, cmdutil.Adapt[DiscardOptions](runF)),
		NewCmdAudit(f, cmdutil.Adapt[AuditOptions](runF)),
		NewCmdStatus(f, cmdutil.Adapt[StatusOptions](runF)),
	)
	cmdutil.ExplainErrors(cmd, f.ExplainLanding)
	return cmd
}

// Output is where and how a subcommand prints.
type Output struct {
	IO   *iostreams.IOStreams
	JSON bool // --json
}

// Landing is the landing bucket a subcommand works on. Its setup errors
// are explained by the group (cmdutil.ExplainErrors).
type Landing struct {
	Bucket *landing.Bucket
	// FindLoaded tells whether the table loaded a key, to mark the
	// copies whose key was loaded since (landing.MarkLoaded); nil when
	// the warehouse or the table is not set.
	FindLoaded landing.FindLoaded
	// Logger gets the note that loaded keys cannot be marked; nil: none.
	Logger *slog.Logger
}

// markLoaded marks the rows whose key the table loaded, or notes that it
// cannot: a warning where it matters (requeue would put such files back),
// else an info line.
func (l Landing) markLoaded(ctx context.Context, rows []landing.Rejected, warn bool) error {
	if l.FindLoaded == nil {
		if l.Logger != nil && len(rows) > 0 {
			level := slog.LevelInfo
			if warn {
				level = slog.LevelWarn
			}
			l.Logger.Log(ctx, level, "the warehouse or the table is not set (--warehouse, --table, or TIMELAKE_WAREHOUSE and TIMELAKE_TABLE): quarantined files whose key was loaded since are not marked, and requeue does not skip them")
		}
		return nil
	}
	return landing.MarkLoaded(ctx, rows, l.FindLoaded)
}

// openLanding resolves --landing, --quarantine-prefix, --warehouse and
// --table, and opens the store (no request is sent; the table is loaded
// when a key is first looked up).
func openLanding(cmd *cobra.Command, f *cmdutil.Factory) (Landing, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return Landing{}, err
	}
	loc := settings.Landing.Require(r)
	prefix := settings.QuarantinePrefix.Get(r)
	warehouse := settings.Warehouse.Get(r)
	name, from, terr := settings.Table.Resolve(r)
	if err := errors.Join(r.Err(), terr); err != nil {
		return Landing{}, err
	}
	st, err := f.OpenStore(cmd.Context(), cmd, loc)
	if err != nil {
		return Landing{}, err
	}
	l := Landing{Bucket: &landing.Bucket{Store: st, QuarantinePrefix: prefix}, Logger: f.Logger()}
	if warehouse != "" && from.Source != "" {
		l.FindLoaded = tableLookup(cmd, f, warehouse, name)
	}
	return l, nil
}

// tableLookup answers landing.FindLoaded from the table (opened at the first
// look-up); a table that does not exist loaded nothing.
func tableLookup(cmd *cobra.Command, f *cmdutil.Factory, warehouse string, name lake.TableName) landing.FindLoaded {
	var t *lake.Table
	missing := false
	return func(ctx context.Context, key string) (int64, time.Time, bool, error) {
		if t == nil && !missing {
			l, err := lakecmd.OpenLake(ctx, f, cmd, warehouse)
			if err == nil {
				t, err = l.LoadTable(ctx, name)
			}
			switch {
			case errors.Is(err, lake.ErrTableNotFound):
				missing = true
			case err != nil:
				return 0, time.Time{}, false, f.ExplainLake(cmd, err)
			}
		}
		if missing {
			return 0, time.Time{}, false, nil
		}
		b, ok, err := t.FindLoaded(ctx, key)
		if err != nil {
			return 0, time.Time{}, false, f.ExplainLake(cmd, err)
		}
		return b.SnapshotID, b.CommittedAt, ok, nil
	}
}

// Selection is which quarantined files requeue and discard take: the
// files named (Keys: original landing keys, or keys of the quarantined
// copies), or every one (All) that Filter selects.
type Selection struct {
	Keys   []string
	All    bool
	Filter landing.RejectedFilter
}

// Bulk reports whether the files were picked by --all or a filter rather
// than named.
func (s Selection) Bulk() bool { return len(s.Keys) == 0 }

// resolveFilter reads --prefix, --reason and --since.
func resolveFilter(r *settings.Resolver) landing.RejectedFilter {
	return landing.RejectedFilter{Prefix: settings.RejectedPrefix.Get(r), Reason: settings.RejectedReason.Get(r),
		Since: settings.RejectedSince.Get(r)}
}

// resolveSelection reads KEY..., --all and the filters of a command that
// acts on quarantined files (verb: "requeue", "discard"). Errors: usage
// errors for nothing selected, or files named beside --all or a filter.
func resolveSelection(r *settings.Resolver, args []string, verb string) (Selection, error) {
	s := Selection{Keys: args, All: settings.AllQuarantined.Get(r), Filter: resolveFilter(r)}
	if err := r.Err(); err != nil {
		return s, err
	}
	switch {
	case len(args) > 0 && (s.All || !s.Filter.Empty()):
		return s, cmdutil.UsageErrorf("give either the files to %s (KEY...) or --all and the filters (--prefix, --reason, --since), not both", verb)
	case len(args) == 0 && !s.All && s.Filter.Empty():
		return s, cmdutil.UsageErrorf("name the files to %s (KEY...), or give --all to %s every quarantined file, or select them with --prefix, --reason or --since", verb, verb)
	}
	return s, nil
}

// pick returns the quarantined files sel takes from all. A KEY that names
// no quarantined file is a usage error, before anything moves.
func pick(all []landing.Rejected, sel Selection) ([]landing.Rejected, error) {
	if sel.Bulk() {
		return sel.Filter.Filter(all), nil
	}
	var picked []landing.Rejected
	for _, k := range sel.Keys {
		n := len(picked)
		for _, r := range all {
			if (r.Key == k || r.QuarantinedTo == k) && !slices.ContainsFunc(picked, func(p landing.Rejected) bool { return p.QuarantinedTo == r.QuarantinedTo }) {
				picked = append(picked, r)
			}
		}
		if len(picked) == n {
			return nil, cmdutil.UsageErrorf("%s is not a quarantined file (timelake landing rejected lists them)", k)
		}
	}
	return picked, nil
}

// selected lists the quarantined files sel takes (pick) and, when mark,
// marks those whose key the table loaded.
func (l Landing) selected(ctx context.Context, sel Selection, mark bool) ([]landing.Rejected, error) {
	all, err := l.Bucket.Rejected(ctx)
	if err != nil {
		return nil, err
	}
	picked, err := pick(all, sel)
	if err == nil && mark {
		err = l.markLoaded(ctx, picked, true)
	}
	return picked, err
}

// renderActions prints what a command did to each file, one row of cells
// under headers per file: on a terminal the rows and then summary (or
// that there was nothing, filtered: nothing that matches), in a pipe a
// header line and the rows.
func renderActions(o Output, b *landing.Bucket, filtered bool, headers []string, rows [][]string, summary string) error {
	tty := o.IO.IsStdoutTTY()
	if tty && len(rows) == 0 {
		_, err := io.WriteString(o.IO.Out, noFiles(b, filtered))
		return err
	}
	cols := make([]iostreams.Column, len(headers))
	for i, h := range headers {
		cols[i] = iostreams.Column{Header: h}
		if h == "reason" {
			cols[i].Wrap = 80
		}
	}
	t := o.IO.NewTable(cols...)
	for _, r := range rows {
		t.AddRow(r...)
	}
	if err := t.Render(); err != nil || !tty {
		return err
	}
	_, err := iostreams.Fprintln(o.IO.Out, summary)
	return err
}

// run calls runF when set, else run.
func run[T any](ctx context.Context, opts *T, runF func(context.Context, *T) error, run func(context.Context, *T) error) error {
	if runF != nil {
		return runF(ctx, opts)
	}
	return run(ctx, opts)
}

// Times: RFC 3339 in UTC with milliseconds in pipes and JSON, seconds on a
// terminal (the header says UTC).
const (
	machineTime  = "2006-01-02T15:04:05.000Z07:00"
	terminalTime = "2006-01-02 15:04:05"
)

func formatTime(t time.Time, tty bool) string {
	if tty {
		return t.UTC().Format(terminalTime)
	}
	return t.UTC().Format(machineTime)
}

// errSomeNotRequeued is the error of a requeue that left files in
// quarantine (exit 3, after the report was printed).
var errSomeNotRequeued = errors.New("some files were not requeued")

// noFiles says that the quarantine holds nothing (that the filters select).
func noFiles(b *landing.Bucket, filtered bool) string {
	p := b.QuarantinePrefix
	if p == "" {
		p = landing.DefaultQuarantinePrefix
	}
	what := "no quarantined files"
	if filtered {
		what = "no quarantined files match"
	}
	return iostreams.Sprintf("%s in %s/%s\n", what, strings.TrimSuffix(b.Store.URI(), "/"), p)
}
