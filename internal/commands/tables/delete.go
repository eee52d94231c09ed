package tables

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// DeleteOptions are the inputs of `tables delete`.
type DeleteOptions struct {
	Output
	Lake      *lake.Lake
	Table     lake.TableName
	Predicate lake.DeletePredicate
	DryRun    bool
	Yes       bool // --yes: no confirmation
	// ProgressMinBytes: a delete that reads at least this much shows a
	// progress bar on stderr when it is a terminal.
	ProgressMinBytes int64
}

// DeleteProgressMinBytes is the ProgressMinBytes of the command.
const DeleteProgressMinBytes = 64 << 20

// NewCmdDelete builds `tables delete`. runF replaces RunDelete in tests; nil
// means RunDelete.
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete NAME (--where COLUMN=VALUE | --from TIME | --to TIME | --batch-id KEY)...",
		Short: "Delete the rows a predicate matches (a gateway's bad rows), in one commit",
		Long: `Delete the rows of table NAME that match every condition given:
--where COLUMN=VALUE (repeat it: the same column again means either value,
different columns must all match) and --from / --to on the table's time
column (RFC 3339; from inclusive, to exclusive), and --batch-id KEY: the
rows the landing file of that key brought, through the table's source
column (timelake.source-column), or, without one, the data files the
batch's snapshot added while that snapshot is kept and its files are live
(uncompacted); refused when neither is exact. A delete without any
condition is refused.

Data files with matching rows are written again without them, files whose
rows all match are dropped, and files whose partition or column statistics
rule the predicate out are not read; all in one commit (an overwrite
snapshot, or a delete snapshot when only whole files go), which a
concurrent ingest or maintenance round never loses. No delete files are
written: every reader sees the rows gone. The snapshot's summary records
the predicate (timelake.delete-predicate) and the rows removed
(timelake.deleted-rows).

--dry-run shows the files and rows affected and the bytes to rewrite, and
writes nothing. Otherwise the same preview is shown and a confirmation is
asked on a terminal; --yes deletes without asking (scripts). Rows committed
after the delete read the table are kept.`,
		Example: `  timelake tables delete iot.readings --where device_id=sensor-7 --from 2026-01-05T10:00:00Z --to 2026-01-05T13:00:00Z --dry-run
  timelake tables delete iot.readings --where site=berlin --where site=hamburg --yes
  timelake tables delete iot.readings --batch-id gateway-7/20260105T1000.csv --dry-run`,
		Args: namedArgs("NAME", "the table to delete from; TIMELAKE_TABLE is not used for a delete"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			terms := settings.DeleteWhere.Get(r)
			opts := &DeleteOptions{
				Output: output(f),
				Predicate: lake.DeletePredicate{
					From:     settings.DeleteFrom.Get(r),
					To:       settings.DeleteTo.Get(r),
					BatchIDs: settings.DeleteBatchID.Get(r),
				},
				DryRun:           settings.DryRun.Get(r),
				Yes:              settings.Yes.Get(r),
				ProgressMinBytes: DeleteProgressMinBytes,
			}
			if err := r.Err(); err != nil {
				return err
			}
			if opts.Predicate.Where, err = lake.ParseWhere(terms); err != nil {
				return cmdutil.UsageErrorf("--where: %v", err)
			}
			if opts.Predicate.Empty() {
				return cmdutil.UsageErrorf("%v: without one every row would go", lake.ErrNoPredicate)
			}
			if !opts.Predicate.From.IsZero() && !opts.Predicate.To.IsZero() && !opts.Predicate.To.After(opts.Predicate.From) {
				return cmdutil.UsageErrorf("--to must be after --from")
			}
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunDelete)
		},
	}
	settings.Bind(cmd.Flags(), settings.TablesDelete)
	return cmd
}

// namedArgs accepts exactly the arguments names (space-separated, e.g.
// "NAME SNAPSHOT_ID") and refuses others saying which are expected and
// why (what).
func namedArgs(names, what string) cobra.PositionalArgs {
	want := len(strings.Fields(names))
	return func(_ *cobra.Command, args []string) error {
		if len(args) != want {
			return cmdutil.UsageErrorf("expected %s (%s), got %d argument(s)", names, what, len(args))
		}
		return nil
	}
}

// DeleteReport is the --json document of `tables delete`.
type DeleteReport struct {
	Table     string `json:"table"`
	Predicate string `json:"predicate"`
	DryRun    bool   `json:"dry_run"`
	Rows      int64  `json:"rows"`  // rows deleted (or that would be)
	Bytes     int64  `json:"bytes"` // size of the files rewritten or dropped
	Rewritten int    `json:"files_rewritten"`
	Dropped   int    `json:"files_dropped"`
	Read      int    `json:"files_read"`
	Skipped   int    `json:"files_skipped"` // excluded by partition or column statistics
	// SnapshotID is the delete's snapshot, null when nothing was
	// committed; Version the metadata version after the command.
	SnapshotID *int64 `json:"snapshot_id"`
	Version    int    `json:"version"`
	// NotLoaded are the --batch-id keys the table does not know as loaded
	// ([] when none).
	NotLoaded []string `json:"not_loaded"`
	// UndoWithin is timelake.snapshot-retention: for about that long,
	// tables rollback can undo the delete (while the snapshot before it is
	// kept); empty when nothing was committed.
	UndoWithin string `json:"undo_within,omitempty"`
}

// BuildDeleteReport describes res.
func BuildDeleteReport(table string, dryRun bool, res lake.DeleteResult) DeleteReport {
	r := DeleteReport{Table: table, Predicate: res.Predicate, DryRun: dryRun, Rows: res.Rows, Bytes: res.Bytes,
		Rewritten: res.Rewritten, Dropped: res.Dropped, Read: res.Read, Skipped: res.Skipped, Version: res.Version,
		NotLoaded: append([]string{}, res.NotLoaded...)}
	if res.SnapshotID != 0 {
		id := res.SnapshotID
		r.SnapshotID = &id
	}
	return r
}

// errNotConfirmed ends a delete the terminal's user did not confirm.
var errNotConfirmed = errors.New("not confirmed: nothing deleted")

// RunDelete loads the table and deletes the rows of the predicate: a dry
// run only reports them; otherwise, without --yes, the preview is shown
// and confirmed on a terminal first (refused when stdin is none).
func RunDelete(ctx context.Context, opts *DeleteOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	name := opts.Table.String()
	if !opts.DryRun && !opts.Yes {
		if !opts.IO.IsStdinTTY() {
			return cmdutil.UsageErrorf("deleting rows asks for a confirmation, and stdin is not a terminal: pass --yes (or --dry-run to preview)")
		}
		progress, done := deleteProgress(opts.IO, opts.ProgressMinBytes)
		preview, err := t.Delete(ctx, lake.DeleteOptions{Predicate: opts.Predicate, DryRun: true, Progress: progress})
		done()
		if err != nil {
			return refusedBatch(err)
		}
		// The preview is text; with --json it goes to stderr, so that
		// stdout holds one document.
		pio := opts.IO
		if opts.JSON {
			errOnly := *opts.IO
			errOnly.Out = opts.IO.ErrOut
			pio = &errOnly
		}
		if err := RenderDelete(Output{IO: pio}, BuildDeleteReport(name, true, preview)); err != nil {
			return err
		}
		if preview.Rows == 0 {
			return nil
		}
		ok, err := confirm(opts.IO, iostreams.Sprintf("Delete %s from %s? [y/N] ", plural(preview.Rows, "row"), name))
		if err != nil {
			return err
		}
		if !ok {
			return errNotConfirmed
		}
	}
	progress, done := deleteProgress(opts.IO, opts.ProgressMinBytes)
	res, err := t.Delete(ctx, lake.DeleteOptions{Predicate: opts.Predicate, DryRun: opts.DryRun, Progress: progress})
	done()
	if err != nil {
		return refusedBatch(err)
	}
	r := BuildDeleteReport(name, opts.DryRun, res)
	if r.SnapshotID != nil {
		r.UndoWithin = settings.FormatDuration(lake.MaintenanceSettingsOf(t.Metadata().Properties()).SnapshotRetention)
	}
	return RenderDelete(opts.Output, r)
}

// deleteProgress draws a bar of the bytes a delete reads, with the files
// read and the rows matched, on stderr when it is a terminal and the delete
// reads at least minBytes; done clears it.
func deleteProgress(io *iostreams.IOStreams, minBytes int64) (update func(lake.DeleteProgress), done func()) {
	var bar *progressbar.ProgressBar
	done = func() {
		if bar != nil {
			_ = bar.Clear()
			_ = bar.Exit()
		}
	}
	if !io.IsStderrTTY() {
		return nil, done
	}
	return func(p lake.DeleteProgress) {
		if bar == nil {
			if p.Bytes < minBytes || p.Bytes == 0 {
				return
			}
			bar = progressbar.NewOptions64(p.Bytes,
				progressbar.OptionSetWriter(io.ErrOut),
				progressbar.OptionShowBytes(true),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionClearOnFinish(),
			)
		}
		bar.Describe(iostreams.Sprintf("%d/%d files read, %s matched", p.FilesRead, p.Files, plural(p.Rows, "row")))
		_ = bar.Set64(p.BytesRead)
	}, done
}

// refusedBatch makes a delete by batch id from a table without a source
// column a usage error (exit 2), as a delete without a predicate is.
func refusedBatch(err error) error {
	if errors.Is(err, lake.ErrBatchNotApart) || errors.Is(err, lake.ErrBatchNotLoaded) {
		return cmdutil.UsageErrorf("--batch-id: %v", err)
	}
	return err
}

// confirm asks question on stderr and reads the answer from stdin: y or
// yes, in any case, confirms.
func confirm(io *iostreams.IOStreams, question string) (bool, error) {
	if _, err := io.ErrOut.Write([]byte(question)); err != nil {
		return false, err
	}
	line, err := bufio.NewReader(io.In).ReadString('\n')
	if err != nil && line == "" {
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// RenderDelete prints r: one JSON document with --json, else one line.
func RenderDelete(o Output, r DeleteReport) error {
	if o.JSON {
		return o.IO.PrintJSON(r)
	}
	rewrite, drop := "rewritten", "dropped"
	if r.DryRun {
		rewrite, drop = "to rewrite", "to drop"
	}
	read := iostreams.Sprintf("%s read, %d not read (their partition, statistics or batch rule the rows out)", plural(int64(r.Read), "file"), r.Skipped)
	files := iostreams.Sprintf("%s %s, %d %s (%s); %s", plural(int64(r.Rewritten), "file"), rewrite, r.Dropped, drop,
		iostreams.HumanBytes(r.Bytes), read)
	var err error
	switch {
	case r.Rows == 0 && len(r.NotLoaded) > 0:
		_, err = iostreams.Fprintf(o.IO.Out, "no row of %s matches %s: %s; the table does not know %s as loaded (misspelt, never loaded, or past timelake.dedupe-window), and rows loaded before the table had its source column hold no key\n",
			r.Table, r.Predicate, read, strings.Join(r.NotLoaded, ", "))
	case r.Rows == 0:
		_, err = iostreams.Fprintf(o.IO.Out, "no row of %s matches %s: %s\n", r.Table, r.Predicate, read)
	case r.DryRun:
		_, err = iostreams.Fprintf(o.IO.Out, "would delete %s of %s where %s: %s\n", plural(r.Rows, "row"), r.Table, r.Predicate, files)
	default:
		_, err = iostreams.Fprintf(o.IO.Out, "deleted %s of %s where %s: %s; version %d\n", plural(r.Rows, "row"), r.Table, r.Predicate, files, r.Version)
		if err == nil && r.SnapshotID != nil {
			_, err = iostreams.Fprintf(o.IO.Out, "undo it with: timelake tables rollback %s %d (while the snapshot before it is kept: timelake.snapshot-retention, %s)\n",
				r.Table, *r.SnapshotID, r.UndoWithin)
		}
	}
	return err
}
