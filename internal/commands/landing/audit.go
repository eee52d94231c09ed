package landing

import (
	"context"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/fleet"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/settings"
)

// AuditOptions are the inputs of `landing audit`.
type AuditOptions struct {
	Output
	Fleet
	// Since: files loaded by serve's sweep since then are reported.
	Since time.Time
	// Limit is how many files each finding lists (0: all).
	Limit int
	// Now is the time of the audit; nil means time.Now.
	Now func() time.Time
}

// errAttention is the error of an audit that found something (exit 1,
// after the report was printed).
var errAttention = errors.New("the audit found files that need attention")

// NewCmdAudit builds `landing audit`. runF replaces RunAudit in tests;
// nil means RunAudit.
func NewCmdAudit(f *cmdutil.Factory, runF func(context.Context, *AuditOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit [--stuck-after D] [--since WHEN] [--limit N]",
		Short: "Compare the landing bucket and the quarantine with the table's history: what is missing, stuck, changed or left",
		Long: `Answer "is anything missing?": list the landing bucket and the quarantine and
compare them with what the table remembers (its snapshots, load history and
outcome log), streaming both, so a bucket of millions of keys takes as
little memory as a small one. It reports:

  stuck                    files not loaded, waiting longer than --stuck-after
                           (a poller that stopped, a load that keeps failing)
  changed-after-load       keys loaded before whose file now has other content
  loaded-not-deleted       files loaded with this content, still in the landing
                           bucket past --stuck-after (a poller stopped between
                           its commit and the delete)
  quarantined              quarantined files, counted by reason
  loaded-by-sweep          files serve loaded by its sweep since --since, not
                           by their notification: notifications that were lost
  history-segment-missing  load history segments the table names that are gone
                           (deleted by hand): their keys are no longer known

Each finding lists its first --limit files by key and counts all. Exit code
1 when anything needs attention, 0 when nothing does: cron or a monitor can
run it. --notify-url alerts each finding once, every 4 hours while it lasts,
and when it ends.`,
		Example: `  timelake landing audit --env-file timelake.env
  timelake landing audit --stuck-after 1h --json
  timelake landing audit --since 7d --limit 100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &AuditOptions{Output: Output{IO: f.IO, JSON: f.JSON}, Since: settings.AuditSince.Get(r), Limit: settings.AuditLimit.Get(r)}
			if err := r.Err(); err != nil {
				return err
			}
			if opts.Fleet, err = openFleet(cmd, f); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunAudit)
		},
	}
	settings.Bind(cmd.Flags(), settings.LandingAudit)
	return cmd
}

// RunAudit audits the landing bucket against the table (fleet.Audit),
// prints the report and sends the alerts. It returns a
// *cmdutil.SilentError with exit 1 when a finding needs attention.
func RunAudit(ctx context.Context, opts *AuditOptions) error {
	m := opts.Monitor
	defer m.Close(ctx)
	t, now, err := opts.begin(ctx, opts.Now)
	if err != nil {
		return err
	}
	limit := opts.Limit
	if limit == 0 {
		limit = math.MaxInt
	}
	rep, err := fleet.Audit(ctx, fleet.AuditOptions{Bucket: opts.Bucket, Prefix: opts.Prefix, Table: t, TableName: opts.Table.String(),
		StuckAfter: m.StuckAfter, Since: opts.Since, Limit: limit, Depth: m.Depth, Now: now})
	if err != nil {
		return err
	}
	m.Update(ctx, m.Tracker(opts.Bucket.Store, fleet.SourceAudit, opts.Table, opts.Prefix), fleet.AuditEvents, fleet.AuditConditions(rep))
	if err := RenderAudit(opts.Output, rep); err != nil {
		return err
	}
	if rep.Attention {
		return &cmdutil.SilentError{Code: cmdutil.ExitFailed, Err: errAttention}
	}
	return nil
}

var auditColumns = []iostreams.Column{
	{Header: "key"},
	{Header: "size", Pipe: "size_bytes", Right: true},
	{Header: "modified (utc)", Pipe: "modified"},
	{Header: "detail", Wrap: 80},
}

// auditPipeColumns: a pipe has one line per file of every finding.
var auditPipeColumns = []iostreams.Column{
	{Pipe: "finding"}, {Pipe: "key"}, {Pipe: "gateway"}, {Pipe: "size_bytes"}, {Pipe: "modified"},
	{Pipe: "snapshot_id"}, {Pipe: "loaded_at"}, {Pipe: "quarantined_to"}, {Pipe: "detail"},
}

// RenderAudit prints rep: one JSON document with --json; on a terminal each
// finding with its count, meaning and files (the quarantine also by
// reason), then what was checked; in a pipe a header and one line per file
// listed.
func RenderAudit(o Output, rep *fleet.AuditReport) error {
	if o.JSON {
		return o.IO.PrintJSON(rep)
	}
	tty := o.IO.IsStdoutTTY()
	opt := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return formatTime(*t, tty)
	}
	if !tty {
		t := o.IO.NewTable(auditPipeColumns...)
		for _, f := range rep.Findings {
			for _, x := range f.Files {
				snap := ""
				if x.SnapshotID != 0 {
					snap = strconv.FormatInt(x.SnapshotID, 10)
				}
				t.AddRow(f.Kind, x.Key, x.Gateway, strconv.FormatInt(x.Size, 10), opt(x.Modified), snap, opt(x.LoadedAt),
					x.QuarantinedTo, x.Detail)
			}
		}
		return t.Render()
	}
	var b strings.Builder
	for _, f := range rep.Findings {
		if f.Count == 0 {
			continue
		}
		iostreams.Fprintf(&b, "%s: %d %s: %s\n", f.Kind, f.Count, plural(f.Count), f.Meaning)
		if len(f.Reasons) > 0 {
			rt := iostreams.NewTablePrinter(&b, true, iostreams.Column{Header: "files", Right: true},
				iostreams.Column{Header: "kind"}, iostreams.Column{Header: "reason", Wrap: 80}, iostreams.Column{Header: "first"})
			for _, r := range f.Reasons {
				kind := r.Kind
				if kind == "" {
					kind = "-"
				}
				rt.AddRow(strconv.Itoa(r.Count), kind, r.Reason, r.Example)
			}
			if err := rt.Render(); err != nil {
				return err
			}
		} else {
			ft := iostreams.NewTablePrinter(&b, true, auditColumns...)
			for _, x := range f.Files {
				mod := opt(x.Modified)
				if mod == "" {
					mod = "-"
				}
				ft.AddRow(x.Key, iostreams.HumanBytes(x.Size), mod, x.Detail)
			}
			if err := ft.Render(); err != nil {
				return err
			}
		}
		if len(f.Files) < f.Count && len(f.Reasons) == 0 {
			iostreams.Fprintf(&b, "  ... and %d more (--limit)\n", f.Count-len(f.Files))
		}
		b.WriteString("\n")
	}
	c := rep.Checked
	verdict := "nothing needs attention"
	if rep.Attention {
		verdict = "needs attention"
	}
	iostreams.Fprintf(&b, "%s: %s: %d landing files (%d waiting, not stuck), %d quarantined, %d history records checked at %s UTC\n",
		rep.Table, verdict, c.LandingFiles, c.Waiting, c.Quarantined, c.HistoryRecords, formatTime(rep.At, true))
	_, err := io.WriteString(o.IO.Out, b.String()) // escaped piece by piece
	return err
}

func plural(n int) string {
	if n == 1 {
		return "file"
	}
	return "files"
}
