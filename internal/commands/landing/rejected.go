package landing

import (
	"context"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/landing"
)

// RejectedOptions are the inputs of `landing rejected`.
type RejectedOptions struct {
	Output
	Landing
}

// NewCmdRejected builds `landing rejected`. runF replaces RunRejected in
// tests; nil means RunRejected.
func NewCmdRejected(f *cmdutil.Factory, runF func(context.Context, *RejectedOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "rejected",
		Short: "List the quarantined files with their reasons, sizes and times",
		Long: `List the files ingest quarantined, in key order: the landing key each came
from, its size, when it was quarantined and why (from the JSON report beside
the kept copy). A kept copy without a report (a quarantine interrupted by a
crash) is listed too. --json prints every field of the reports.`,
		Example: `  timelake landing rejected --landing ./landing
  timelake landing rejected --env-file timelake.env --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := openLanding(cmd, f)
			if err != nil {
				return err
			}
			return run(cmd.Context(), &RejectedOptions{Output: Output{IO: f.IO, JSON: f.JSON}, Landing: l}, runF, RunRejected)
		},
	}
}

// RunRejected lists the quarantined files (landing.Bucket.Rejected) and
// prints them.
func RunRejected(ctx context.Context, opts *RejectedOptions) error {
	rows, err := opts.Bucket.Rejected(ctx)
	if err != nil {
		return opts.explain(err)
	}
	return RenderRejected(opts.Output, opts.Bucket, rows)
}

// RenderRejected prints rows: one JSON document (a list, [] when empty)
// with --json; on a terminal an aligned table (or a line saying there is
// nothing); in a pipe a header and one tab-separated line per file.
func RenderRejected(o Output, b *landing.Bucket, rows []landing.Rejected) error {
	if o.JSON {
		if rows == nil {
			rows = []landing.Rejected{}
		}
		return o.IO.PrintJSON(rows)
	}
	tty := o.IO.IsStdoutTTY()
	if tty && len(rows) == 0 {
		_, err := io.WriteString(o.IO.Out, noFiles(b))
		return err
	}
	cols := []iostreams.Column{
		{Header: "key"},
		{Header: "size", Pipe: "size_bytes", Right: true},
		{Header: "quarantined (utc)", Pipe: "quarantined_at"},
		{Header: "reason", Wrap: 80},
	}
	if !tty {
		cols = append(cols, iostreams.Column{Pipe: "quarantined_to"})
	}
	t := o.IO.NewTable(cols...)
	for _, r := range rows {
		size := strconv.FormatInt(r.Size, 10)
		if tty {
			size = iostreams.HumanBytes(r.Size)
		}
		cells := []string{r.Key, size, formatTime(r.At, tty), r.Reason}
		if !tty {
			cells = append(cells, r.QuarantinedTo)
		}
		t.AddRow(cells...)
	}
	return t.Render()
}
