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
	"github.com/timelake/timelake/internal/route"
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
and when it ends.

With --route PATTERN=TABLE (repeated, or TIMELAKE_ROUTES) instead of --table,
each routed table is audited on the landing keys its routes take, against
its own history, and the keys no route takes are listed as unrouted, which
need attention too (docs/routing.md).`,
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
// prints the report and sends the alerts. With routes, it audits each
// routed table on the keys its routes take, and reports the landing keys
// no route takes. It returns a *cmdutil.SilentError with exit 1 when a
// finding needs attention, or a key is unrouted.
func RunAudit(ctx context.Context, opts *AuditOptions) error {
	m := opts.Monitor
	defer m.Close(ctx)
	tables, unrouted, now, err := opts.begin(ctx, opts.Now)
	if err != nil {
		return err
	}
	limit := opts.Limit
	if limit == 0 {
		limit = math.MaxInt
	}
	doc := RoutedAudit{Routes: opts.Routes.Rules(), Tables: []*fleet.AuditReport{}, Unrouted: unrouted, Attention: len(unrouted) > 0}
	for _, ft := range tables {
		rep, err := fleet.Audit(ctx, fleet.AuditOptions{Bucket: opts.Bucket, Prefix: opts.Prefix, Accept: ft.accept, Table: ft.table,
			TableName: ft.name.String(), StuckAfter: m.StuckAfter, Since: opts.Since, Limit: limit, Depth: m.Depth, Now: now})
		if err != nil {
			return opts.tableErr(ft.name, err)
		}
		m.Update(ctx, m.Tracker(opts.Bucket.Store, fleet.SourceAudit, ft.name, opts.Prefix), fleet.AuditEvents, fleet.AuditConditions(rep))
		doc.Tables = append(doc.Tables, rep)
		doc.Attention = doc.Attention || rep.Attention
	}
	if len(opts.Routes) == 0 {
		err = RenderAudit(opts.Output, doc.Tables[0])
	} else {
		if doc.Unrouted == nil {
			doc.Unrouted = []route.Unrouted{}
		}
		err = RenderRoutedAudit(opts.Output, &doc, m.Depth, limit)
	}
	if err != nil {
		return err
	}
	if doc.Attention {
		return &cmdutil.SilentError{Code: cmdutil.ExitFailed, Err: errAttention}
	}
	return nil
}

// RoutedAudit is the audit of a landing bucket with routes: the report of
// each routed table, in name order, on the keys its routes take, and the
// landing keys no route takes (or two take to different tables), which
// need attention too.
type RoutedAudit struct {
	Routes    []string             `json:"routes"`
	Tables    []*fleet.AuditReport `json:"tables"`
	Unrouted  []route.Unrouted     `json:"unrouted"`
	Attention bool                 `json:"attention"`
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
	if !tty {
		t := o.IO.NewTable(auditPipeColumns...)
		for _, row := range auditRows(rep, tty) {
			t.AddRow(row...)
		}
		return t.Render()
	}
	var b strings.Builder
	if err := auditText(&b, rep); err != nil {
		return err
	}
	_, err := io.WriteString(o.IO.Out, b.String()) // escaped piece by piece
	return err
}

// RenderRoutedAudit prints doc: one JSON document with --json; on a
// terminal each table's report (RenderAudit's) and then the keys no route
// takes, the first limit of them; in a pipe a header and one line per file
// listed, its first column the table, and one line per unrouted key
// (finding unrouted, no table).
func RenderRoutedAudit(o Output, doc *RoutedAudit, depth, limit int) error {
	if o.JSON {
		return o.IO.PrintJSON(doc)
	}
	tty := o.IO.IsStdoutTTY()
	if !tty {
		t := o.IO.NewTable(append([]iostreams.Column{{Pipe: "table"}}, auditPipeColumns...)...)
		for _, rep := range doc.Tables {
			for _, row := range auditRows(rep, tty) {
				t.AddRow(append([]string{rep.Table}, row...)...)
			}
		}
		for _, u := range doc.Unrouted {
			t.AddRow("", findingUnrouted, u.Key, fleet.GatewayOf(u.Key, depth), "", "", "", "", "", u.Reason)
		}
		return t.Render()
	}
	var b strings.Builder
	for i, rep := range doc.Tables {
		if i > 0 {
			b.WriteString("\n")
		}
		if err := auditText(&b, rep); err != nil {
			return err
		}
	}
	if n := len(doc.Unrouted); n > 0 {
		iostreams.Fprintf(&b, "\n%s: %s: no route takes them, or two take them to different tables; they stay in the landing: change the routes or move the files (docs/routing.md)\n",
			findingUnrouted, iostreams.Plural(int64(n), "key"))
		for _, u := range doc.Unrouted[:min(n, limit)] {
			iostreams.Fprintln(&b, u.Line())
		}
		if n > limit {
			iostreams.Fprintf(&b, "  ... and %d more (--limit)\n", n-limit)
		}
	}
	_, err := io.WriteString(o.IO.Out, b.String()) // escaped piece by piece
	return err
}

// findingUnrouted is the finding of a routed audit's landing keys no route
// takes.
const findingUnrouted = "unrouted"

// auditRows are the pipe's lines of rep: one per file of every finding.
func auditRows(rep *fleet.AuditReport, tty bool) [][]string {
	var rows [][]string
	for _, f := range rep.Findings {
		for _, x := range f.Files {
			snap := ""
			if x.SnapshotID != 0 {
				snap = strconv.FormatInt(x.SnapshotID, 10)
			}
			rows = append(rows, []string{f.Kind, x.Key, x.Gateway, strconv.FormatInt(x.Size, 10), optTime(x.Modified, tty), snap,
				optTime(x.LoadedAt, tty), x.QuarantinedTo, x.Detail})
		}
	}
	return rows
}

// optTime formats t, "" when nil.
func optTime(t *time.Time, tty bool) string {
	if t == nil {
		return ""
	}
	return formatTime(*t, tty)
}

// auditText writes the terminal's report of rep to b: each finding with
// its count, meaning and files (the quarantine also by reason), then what
// was checked.
func auditText(b *strings.Builder, rep *fleet.AuditReport) error {
	for _, f := range rep.Findings {
		if f.Count == 0 {
			continue
		}
		iostreams.Fprintf(b, "%s: %d %s: %s\n", f.Kind, f.Count, plural(f.Count), f.Meaning)
		if len(f.Reasons) > 0 {
			rt := iostreams.NewTablePrinter(b, true, iostreams.Column{Header: "files", Right: true},
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
			ft := iostreams.NewTablePrinter(b, true, auditColumns...)
			for _, x := range f.Files {
				mod := optTime(x.Modified, true)
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
			iostreams.Fprintf(b, "  ... and %d more (--limit)\n", f.Count-len(f.Files))
		}
		b.WriteString("\n")
	}
	c := rep.Checked
	verdict := "nothing needs attention"
	if rep.Attention {
		verdict = "needs attention"
	}
	iostreams.Fprintf(b, "%s: %s: %d landing files (%d waiting, not stuck), %d quarantined, %d history records checked at %s UTC\n",
		rep.Table, verdict, c.LandingFiles, c.Waiting, c.Quarantined, c.HistoryRecords, formatTime(rep.At, true))
	return nil
}

func plural(n int) string {
	if n == 1 {
		return "file"
	}
	return "files"
}
