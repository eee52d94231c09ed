package landing

import (
	"context"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/settings"
)

// RequeueOptions are the inputs of `landing requeue`.
type RequeueOptions struct {
	Output
	Landing
	// All requeues every quarantined file; else Keys names them (original
	// landing keys, or the keys of the quarantined copies).
	All  bool
	Keys []string
	// TempDir holds a file while it is copied back; "" is os.TempDir().
	TempDir string
}

// NewCmdRequeue builds `landing requeue`. runF replaces RunRequeue in
// tests; nil means RunRequeue.
func NewCmdRequeue(f *cmdutil.Factory, runF func(context.Context, *RequeueOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "requeue [--all | KEY...]",
		Short: "Put quarantined files back under their original keys, for the next ingest run to load",
		Long: `Move quarantined files back to the landing keys they came from, once what
refused them is fixed, so that the next ingest run loads them. KEY is the
original landing key (as "landing rejected" lists it) or the key of the
quarantined copy; --all takes every quarantined file.

A file is written back with a conditional create: a file under the same key
in the landing bucket (a gateway sent it again) is never overwritten; that
file is reported as not requeued and its quarantined copy stays. Only after
the file is back are the copy and its report deleted. Exit code 3 when some
files were not requeued.`,
		Example: `  timelake landing requeue --all
  timelake landing requeue gateway-7/20260105T1000.csv gateway-7/20260105T1001.csv
  timelake landing requeue --all --json --env-file timelake.env`,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &RequeueOptions{Output: Output{IO: f.IO, JSON: f.JSON}, All: settings.RequeueAll.Get(r), Keys: args}
			if err := r.Err(); err != nil {
				return err
			}
			switch {
			case opts.All && len(args) > 0:
				return cmdutil.UsageErrorf("give either the files to requeue (KEY...) or --all, not both")
			case !opts.All && len(args) == 0:
				return cmdutil.UsageErrorf("name the files to requeue (KEY...), or give --all to requeue every quarantined file")
			}
			if opts.Landing, err = openLanding(cmd, f); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunRequeue)
		},
	}
	settings.Bind(cmd.Flags(), settings.LandingRequeue)
	return cmd
}

// RequeueReport is the --json document of `landing requeue`.
type RequeueReport struct {
	Files       []landing.RequeueResult `json:"files"`
	Requeued    int                     `json:"requeued"`
	NotRequeued int                     `json:"not_requeued"`
}

// RunRequeue requeues the quarantined files opts names (landing.Bucket.Requeue)
// and prints what happened to each. A KEY that names no quarantined file is
// a usage error, before anything moves. It returns an error with exit code
// 3 when some files were not requeued (the report is printed first).
func RunRequeue(ctx context.Context, opts *RequeueOptions) error {
	all, err := opts.Bucket.Rejected(ctx)
	if err != nil {
		return opts.explain(err)
	}
	picked := all
	if !opts.All {
		picked = nil
		for _, k := range opts.Keys {
			n := len(picked)
			for _, r := range all {
				if (r.Key == k || r.QuarantinedTo == k) && !slices.Contains(picked, r) {
					picked = append(picked, r)
				}
			}
			if len(picked) == n {
				return cmdutil.UsageErrorf("%s is not a quarantined file (timelake landing rejected lists them)", k)
			}
		}
	}
	rep := RequeueReport{Files: []landing.RequeueResult{}}
	var runErr error
	for _, r := range picked {
		res, err := opts.Bucket.Requeue(ctx, r, opts.TempDir)
		if res.Status != "" {
			rep.Files = append(rep.Files, res)
			if res.Status == landing.Requeued {
				rep.Requeued++
			} else {
				rep.NotRequeued++
			}
		}
		if err != nil {
			runErr = opts.explain(err)
			break
		}
	}
	if err := RenderRequeue(opts.Output, opts.Bucket, rep); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if rep.NotRequeued > 0 {
		return &cmdutil.SilentError{Code: cmdutil.ExitPartial, Err: errSomeNotRequeued}
	}
	return nil
}

// RenderRequeue prints r: one JSON document with --json; else one row per
// file (key, status, reason, quarantined_to: which copy, as one key may
// have several) and, on a terminal, a summary line.
func RenderRequeue(o Output, b *landing.Bucket, r RequeueReport) error {
	if o.JSON {
		return o.IO.PrintJSON(r)
	}
	tty := o.IO.IsStdoutTTY()
	if tty && len(r.Files) == 0 {
		_, err := io.WriteString(o.IO.Out, noFiles(b))
		return err
	}
	t := o.IO.NewTable(iostreams.Column{Header: "key"}, iostreams.Column{Header: "status"}, iostreams.Column{Header: "reason", Wrap: 80},
		iostreams.Column{Header: "quarantined_to"})
	for _, f := range r.Files {
		t.AddRow(f.Key, f.Status, f.Reason, f.QuarantinedTo)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if tty {
		_, err := iostreams.Fprintf(o.IO.Out, "%d requeued, %d not requeued; the next ingest run loads the requeued files\n", r.Requeued, r.NotRequeued)
		return err
	}
	return nil
}
