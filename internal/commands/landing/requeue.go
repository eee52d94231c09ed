package landing

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
)

// RequeueOptions are the inputs of `landing requeue`.
type RequeueOptions struct {
	Output
	Landing
	Selection
	// DryRun says what would be done, changing nothing.
	DryRun bool
	// TempDir holds a file while it is copied back; "" is os.TempDir().
	TempDir string
}

// NewCmdRequeue builds `landing requeue`. runF replaces RunRequeue in
// tests; nil means RunRequeue.
func NewCmdRequeue(f *cmdutil.Factory, runF func(context.Context, *RequeueOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "requeue [KEY... | --all | --prefix P --reason TEXT --since WHEN] [--dry-run]",
		Short: "Put quarantined files back under their original keys, for the next ingest run to load",
		Long: `Move quarantined files back to the landing keys they came from, once what
refused them is fixed, so that the next ingest run loads them. KEY is the
original landing key (as "landing rejected" lists it) or the key of the
quarantined copy; --all takes every quarantined file, and --prefix, --reason
and --since those they select.

Skipped, with the reason on the file's line:
  - a file whose key the table loaded (with the table set: --warehouse and
    --table, or their variables): requeued, it would be refused again as
    loaded, or deleted; send corrections under a new key;
  - with --all or a filter, a file whose report says the file itself is
    broken (kind file: unreadable, empty, not UTF-8, a null in a required
    column, its key loaded with other content): no setting can load it;
    or that a row's structure is broken (kind row: the wrong number of
    fields, a stray quote): only ingest --on-error skip-rows loads it.
    Name its KEY to requeue it anyway.

A file is written back with a conditional create: a file under the same key
in the landing bucket (a gateway sent it again) is never overwritten; that
file is reported as not requeued and its quarantined copy stays. Only after
the file is back are the copy and its report deleted. --dry-run says what
would happen to each file. A copy that cannot be put back fails alone, on its
line. Exit code 3 when some files stay quarantined or failed.`,
		Example: `  timelake landing requeue --all --dry-run
  timelake landing requeue --reason delimiter --since 24h
  timelake landing requeue gateway-7/20260105T1000.csv gateway-7/20260105T1001.csv
  timelake landing requeue --all --json --env-file timelake.env`,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &RequeueOptions{Output: Output{IO: f.IO, JSON: f.JSON}, DryRun: settings.DryRun.Get(r)}
			if opts.Selection, err = resolveSelection(r, args, "requeue"); err != nil {
				return err
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
	DryRun      bool                    `json:"dry_run"`
	Files       []landing.RequeueResult `json:"files"`
	Requeued    int                     `json:"requeued"` // or, in a dry run, would be
	NotRequeued int                     `json:"not_requeued"`
	Skipped     int                     `json:"skipped"`
	Failed      int                     `json:"failed"`
}

// RunRequeue requeues the quarantined files opts selects
// (landing.Bucket.Requeue), skipping those landing.RequeueSkip names, and
// prints what happened to each (a dry run: what would). A KEY that names
// no quarantined file is a usage error, before anything moves. A file it
// cannot act on fails alone (RequeueFailed, with the reason), and the others
// go on; a setup problem of the landing bucket (storage.Diagnose), which
// every file would meet, stops it. It returns an error with exit code 3 when
// some files failed or, not in a dry run, stay quarantined (the report is
// printed first).
func RunRequeue(ctx context.Context, opts *RequeueOptions) error {
	picked, err := opts.selected(ctx, opts.Selection, true)
	if err != nil {
		return err
	}
	rep := RequeueReport{DryRun: opts.DryRun, Files: []landing.RequeueResult{}}
	var runErr error
	stays := false                 // a requeued file whose quarantined copy could not be deleted
	wouldTake := map[string]bool{} // keys a dry run found free and would fill
	for _, r := range picked {
		var res landing.RequeueResult
		switch why := landing.RequeueSkip(r, opts.Bulk()); {
		case why != "":
			res = landing.RequeueResult{Key: r.Key, QuarantinedTo: r.QuarantinedTo, Status: landing.Skipped, Reason: why}
		case opts.DryRun && wouldTake[r.Key]:
			// An earlier copy of the key would be put back under it first.
			res = landing.RequeueResult{Key: r.Key, QuarantinedTo: r.QuarantinedTo, Status: landing.NotRequeued,
				Reason: "another quarantined copy of this key would be put back under it first: it would not be overwritten"}
		case opts.DryRun:
			res, err = opts.Bucket.CheckRequeue(ctx, r)
			if err == nil && res.Status == landing.WouldRequeue {
				wouldTake[r.Key] = true
			}
		default:
			res, err = opts.Bucket.Requeue(ctx, r, opts.TempDir)
		}
		if err != nil && stopsAll(ctx, err) {
			runErr = err
			break
		}
		if err != nil && res.Status != landing.Requeued {
			res = landing.RequeueResult{Key: r.Key, QuarantinedTo: r.QuarantinedTo, Status: landing.RequeueFailed, Reason: err.Error()}
		} else if err != nil {
			res.Reason, stays = err.Error(), true // back under its key; the copy stays quarantined
		}
		err = nil
		switch res.Status {
		case landing.Requeued, landing.WouldRequeue:
			rep.Requeued++
		case landing.NotRequeued:
			rep.NotRequeued++
		case landing.Skipped:
			rep.Skipped++
		case landing.RequeueFailed:
			rep.Failed++
		}
		rep.Files = append(rep.Files, res)
	}
	if err := RenderRequeue(opts.Output, opts.Bucket, rep, opts.Bulk() && !opts.Filter.Empty()); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if rep.Failed > 0 || stays || !opts.DryRun && rep.NotRequeued+rep.Skipped > 0 {
		return &cmdutil.SilentError{Code: cmdutil.ExitPartial, Err: errSomeNotRequeued}
	}
	return nil
}

// stopsAll reports whether err, met on one quarantined file, would meet
// every file: ctx is done, or the landing bucket refuses for a setup reason
// (credentials, permissions, a missing bucket: storage.Diagnose).
func stopsAll(ctx context.Context, err error) bool {
	return ctx.Err() != nil || storage.Diagnose(err, storage.Where{}, storage.Names{}) != nil
}

// RenderRequeue prints r: one JSON document with --json; else one row per
// file (key, status, reason, quarantined_to: which copy, as one key may
// have several) and, on a terminal, a summary line.
func RenderRequeue(o Output, b *landing.Bucket, r RequeueReport, filtered bool) error {
	if o.JSON {
		return o.IO.PrintJSON(r)
	}
	rows := make([][]string, len(r.Files))
	for i, f := range r.Files {
		rows[i] = []string{f.Key, f.Status, f.Reason, f.QuarantinedTo}
	}
	summary := fmt.Sprintf("%d requeued, %d not requeued, %d skipped; the next ingest run loads the requeued files", r.Requeued, r.NotRequeued, r.Skipped)
	if r.DryRun {
		summary = fmt.Sprintf("dry run: %d would be requeued, %d not (a file is under the key), %d skipped; nothing changed",
			r.Requeued, r.NotRequeued, r.Skipped)
	}
	if r.Failed > 0 {
		summary += fmt.Sprintf("; %d failed (see the reason on each line)", r.Failed)
	}
	return renderActions(o, b, filtered, []string{"key", "status", "reason", "quarantined_to"}, rows, summary)
}
