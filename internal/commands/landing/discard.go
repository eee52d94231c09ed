package landing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/settings"
)

// DiscardOptions are the inputs of `landing discard`.
type DiscardOptions struct {
	Output
	Landing
	Selection
	// Delete deletes the files instead of archiving them.
	Delete bool
	DryRun bool
	// Now stamps a second archive of the same path; nil means time.Now.
	Now func() time.Time
}

// NewCmdDiscard builds `landing discard`. runF replaces RunDiscard in
// tests; nil means RunDiscard.
func NewCmdDiscard(f *cmdutil.Factory, runF func(context.Context, *DiscardOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "discard [KEY... | --all | --prefix P --reason TEXT --since WHEN] [--delete] [--dry-run]",
		Short: "Take quarantined files that will never load out of the quarantine: archive or delete them",
		Long: `Take quarantined files out of the quarantine, with their reports, once they
will never be loaded: a file whose key was loaded since (a corrected file was
sent under the same key), a file broken beyond repair, a test upload. KEY is
the original landing key or the key of the quarantined copy; --all takes
every quarantined file, and --prefix, --reason and --since those they select.

By default each file and its report are archived: moved below
_timelake/discarded/ in the landing bucket (the path they had below the
quarantine prefix; a second file of the same path gets a time suffix), which
ingest never loads and "landing rejected" no longer lists; delete that prefix
by hand or with a lifecycle rule of the bucket. --delete deletes them
instead. --dry-run says what would happen to each file. A copy that cannot be
discarded fails alone, on its line; exit code 3 when some did.`,
		Example: `  timelake landing discard gateway-7/20260105T1000.csv
  timelake landing discard --reason "different content" --dry-run
  timelake landing discard --prefix test-gateway/ --delete`,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &DiscardOptions{Output: Output{IO: f.IO, JSON: f.JSON}, Delete: settings.DiscardDelete.Get(r),
				DryRun: settings.DryRun.Get(r)}
			if opts.Selection, err = resolveSelection(r, args, "discard"); err != nil {
				return err
			}
			if opts.Landing, err = openLanding(cmd, f); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunDiscard)
		},
	}
	settings.Bind(cmd.Flags(), settings.LandingDiscard)
	return cmd
}

// DiscardReport is the --json document of `landing discard`.
type DiscardReport struct {
	DryRun   bool                    `json:"dry_run"`
	Files    []landing.DiscardResult `json:"files"`
	Archived int                     `json:"archived"` // or, in a dry run, would be
	Deleted  int                     `json:"deleted"`
	Failed   int                     `json:"failed"`
}

// RunDiscard archives or deletes the quarantined files opts selects
// (landing.Bucket.Discard) and prints what happened to each. A KEY that
// names no quarantined file is a usage error, before anything moves. A copy
// it cannot act on fails alone (DiscardFailed, with the reason) and the
// others go on; a setup problem of the landing bucket stops it (stopsAll).
// It returns an error with exit code 3 when some copies failed.
func RunDiscard(ctx context.Context, opts *DiscardOptions) error {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	picked, err := opts.selected(ctx, opts.Selection, false)
	if err != nil {
		return err
	}
	rep := DiscardReport{DryRun: opts.DryRun, Files: []landing.DiscardResult{}}
	var runErr error
	for _, r := range picked {
		res, err := opts.Bucket.Discard(ctx, r, opts.Delete, opts.DryRun, now())
		switch {
		case err != nil && stopsAll(ctx, err):
			runErr = err
		case err != nil:
			res.Status, res.ArchivedTo, res.Reason = landing.DiscardFailed, "", err.Error()
			rep.Failed++
		case opts.Delete:
			rep.Deleted++
		default:
			rep.Archived++
		}
		if runErr != nil {
			break
		}
		rep.Files = append(rep.Files, res)
	}
	if err := RenderDiscard(opts.Output, opts.Bucket, rep, opts.Bulk() && !opts.Filter.Empty()); err != nil {
		return err
	}
	if runErr == nil && rep.Failed > 0 {
		runErr = &cmdutil.SilentError{Code: cmdutil.ExitPartial, Err: errSomeNotDiscarded}
	}
	return runErr
}

// errSomeNotDiscarded is the exit error of a discard that failed on some
// copies (each line says why).
var errSomeNotDiscarded = errors.New("some quarantined files were not discarded")

// RenderDiscard prints r: one JSON document with --json; else one row per
// file (key, status, archived_to, quarantined_to) and, on a terminal, a
// summary line.
func RenderDiscard(o Output, b *landing.Bucket, r DiscardReport, filtered bool) error {
	if o.JSON {
		return o.IO.PrintJSON(r)
	}
	rows := make([][]string, len(r.Files))
	for i, f := range r.Files {
		rows[i] = []string{f.Key, f.Status, f.ArchivedTo, f.QuarantinedTo, f.Reason}
	}
	summary := fmt.Sprintf("%d archived below %s, %d deleted", r.Archived, landing.ArchivePrefix, r.Deleted)
	if r.DryRun {
		summary = fmt.Sprintf("dry run: %d would be archived below %s, %d deleted; nothing changed", r.Archived, landing.ArchivePrefix, r.Deleted)
	}
	if r.Failed > 0 {
		summary += fmt.Sprintf("; %d failed (see the reason on each line)", r.Failed)
	}
	return renderActions(o, b, filtered, []string{"key", "status", "archived_to", "quarantined_to", "reason"}, rows, summary)
}
