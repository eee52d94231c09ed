package landing

import (
	"context"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/settings"
)

// RejectedOptions are the inputs of `landing rejected`.
type RejectedOptions struct {
	Output
	Landing
	// Filter selects the files listed (--prefix, --reason, --since).
	Filter landing.RejectedFilter
}

// NewCmdRejected builds `landing rejected`. runF replaces RunRejected in
// tests; nil means RunRejected.
func NewCmdRejected(f *cmdutil.Factory, runF func(context.Context, *RejectedOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rejected [--prefix P] [--reason TEXT] [--since WHEN]",
		Short: "List the quarantined files with their reasons, sizes and times",
		Long: `List the files ingest quarantined, in key order: the landing key each came
from, its size, when it was quarantined, why, and whether the file itself is
broken (kind file: no setting can load it), a row of it is (kind row: only
ingest --on-error skip-rows loads its other rows) or a setting refused it (kind
setting), from the JSON report beside the kept copy. A kept copy without a
report (a quarantine interrupted by a crash) is listed too.

--prefix, --reason (a text the reason holds, in any case) and --since select
which files are listed. With the table set (--warehouse and --table, or their
variables), a file whose key the table loaded is marked: "landing requeue"
skips it. --json prints every field of the reports.`,
		Example: `  timelake landing rejected --landing ./landing
  timelake landing rejected --env-file timelake.env --prefix gateway-7/ --since 24h
  timelake landing rejected --reason "wrong number of fields" --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &RejectedOptions{Output: Output{IO: f.IO, JSON: f.JSON}, Filter: resolveFilter(r)}
			if err := r.Err(); err != nil {
				return err
			}
			if opts.Landing, err = openLanding(cmd, f); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunRejected)
		},
	}
	settings.Bind(cmd.Flags(), settings.LandingRejected)
	return cmd
}

// RunRejected lists the quarantined files the filter selects
// (landing.Bucket.Rejected), marks those whose key the table loaded, and
// prints them.
func RunRejected(ctx context.Context, opts *RejectedOptions) error {
	all, err := opts.Bucket.Rejected(ctx)
	if err != nil {
		return err
	}
	rows := opts.Filter.Filter(all)
	if err := opts.markLoaded(ctx, rows, false); err != nil {
		return err
	}
	return RenderRejected(opts.Output, opts.Bucket, rows, !opts.Filter.Empty())
}

// RenderRejected prints rows: one JSON document (a list, [] when empty)
// with --json; on a terminal an aligned table (or a line saying there is
// nothing; filtered: nothing that matches); in a pipe a header and one
// tab-separated line per file: key, size_bytes, quarantined_at, reason,
// quarantined_to, kind, loaded_snapshot and loaded_at (empty when the key
// is not loaded).
func RenderRejected(o Output, b *landing.Bucket, rows []landing.Rejected, filtered bool) error {
	if o.JSON {
		if rows == nil {
			rows = []landing.Rejected{}
		}
		return o.IO.PrintJSON(rows)
	}
	tty := o.IO.IsStdoutTTY()
	if tty && len(rows) == 0 {
		_, err := io.WriteString(o.IO.Out, noFiles(b, filtered))
		return err
	}
	cols := []iostreams.Column{
		{Header: "key"},
		{Header: "size", Pipe: "size_bytes", Right: true},
		{Header: "quarantined (utc)", Pipe: "quarantined_at"},
		{Header: "reason", Wrap: 80},
	}
	if tty {
		cols = append(cols, iostreams.Column{Header: "kind"}, iostreams.Column{Header: "loaded", Wrap: 40})
	} else {
		cols = append(cols, iostreams.Column{Pipe: "quarantined_to"}, iostreams.Column{Pipe: "kind"},
			iostreams.Column{Pipe: "loaded_snapshot"}, iostreams.Column{Pipe: "loaded_at"})
	}
	t := o.IO.NewTable(cols...)
	for _, r := range rows {
		size := strconv.FormatInt(r.Size, 10)
		if tty {
			size = iostreams.HumanBytes(r.Size)
		}
		cells := []string{r.Key, size, formatTime(r.At, tty), r.Reason}
		switch {
		case tty && r.Loaded != nil:
			loaded := iostreams.Sprintf("snapshot %d at %s", r.Loaded.SnapshotID, formatTime(r.Loaded.At, tty))
			if !r.Loaded.Since {
				loaded += " (before the quarantine)"
			}
			cells = append(cells, r.Kind, loaded)
		case tty:
			cells = append(cells, r.Kind, "-")
		case r.Loaded != nil:
			cells = append(cells, r.QuarantinedTo, r.Kind, strconv.FormatInt(r.Loaded.SnapshotID, 10), formatTime(r.Loaded.At, false))
		default:
			cells = append(cells, r.QuarantinedTo, r.Kind, "", "")
		}
		t.AddRow(cells...)
	}
	return t.Render()
}
