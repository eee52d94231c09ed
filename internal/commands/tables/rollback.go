package tables

import (
	"context"
	"errors"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// RollbackOptions are the inputs of `tables rollback`.
type RollbackOptions struct {
	Output
	Lake       *lake.Lake
	Table      lake.TableName
	SnapshotID int64 // the delete's snapshot
	DryRun     bool
}

// NewCmdRollback builds `tables rollback`. runF replaces RunRollback in
// tests; nil means RunRollback.
func NewCmdRollback(f *cmdutil.Factory, runF func(context.Context, *RollbackOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollback NAME SNAPSHOT_ID",
		Short: "Undo a delete of rows: bring back what the delete of a snapshot removed",
		Long: `Undo the delete of rows that snapshot SNAPSHOT_ID of table NAME committed
(tables delete; tables history --status deleted lists them with their
snapshot ids). The rows the delete removed are read again from the files it
replaced and appended in a new snapshot: everything committed since the
delete (loaded files, compactions, other deletes) stays. It works while the
snapshot before the delete is kept (timelake.snapshot-retention), since its
expiry deletes the files the delete replaced.

Refused, saying why: a snapshot that is not a delete of rows of the
current ancestry, a delete undone already, and a delete whose rows a later
delete matches too (undo the later one first). --dry-run shows the rows
that would come back and writes nothing.`,
		Example: `  timelake tables history iot.readings --status deleted
  timelake tables rollback iot.readings 4716311806930630460 --dry-run
  timelake tables rollback iot.readings 4716311806930630460`,
		Args: namedArgs("NAME SNAPSHOT_ID", "the table and the delete's snapshot id from tables history --status deleted; TIMELAKE_TABLE is not used for a rollback"),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &RollbackOptions{Output: output(f), DryRun: settings.DryRun.Get(r)}
			if err := r.Err(); err != nil {
				return err
			}
			if opts.SnapshotID, err = strconv.ParseInt(args[1], 10, 64); err != nil {
				return cmdutil.UsageErrorf("SNAPSHOT_ID: expected a snapshot id such as 4716311806930630460 (tables history --status deleted), got %q", args[1])
			}
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args[:1]); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunRollback)
		},
	}
	settings.Bind(cmd.Flags(), settings.TablesRollback)
	return cmd
}

// RollbackReport is the --json document of `tables rollback`.
type RollbackReport struct {
	Table     string `json:"table"`
	DryRun    bool   `json:"dry_run"`
	Delete    int64  `json:"delete_snapshot_id"` // the delete undone
	Predicate string `json:"predicate"`          // the delete's
	Rows      int64  `json:"rows"`               // rows restored (or that would be)
	Read      int    `json:"files_read"`         // files the delete replaced, read again
	Written   int    `json:"files_written"`
	// SnapshotID is the snapshot that restored the rows, null when
	// nothing was committed; Version the metadata version after the
	// command.
	SnapshotID *int64 `json:"snapshot_id"`
	Version    int    `json:"version"`
}

// BuildRollbackReport describes res.
func BuildRollbackReport(table string, dryRun bool, res lake.UndoDeleteResult) RollbackReport {
	r := RollbackReport{Table: table, DryRun: dryRun, Delete: res.Delete.SnapshotID, Predicate: res.Delete.Predicate,
		Rows: res.Rows, Read: res.Read, Written: res.Written, Version: res.Version}
	if res.SnapshotID != 0 {
		id := res.SnapshotID
		r.SnapshotID = &id
	}
	return r
}

// RunRollback loads the table and undoes the delete of opts.SnapshotID.
func RunRollback(ctx context.Context, opts *RollbackOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	res, err := t.UndoDelete(ctx, opts.SnapshotID, lake.UndoDeleteOptions{DryRun: opts.DryRun})
	if errors.Is(err, lake.ErrNotUndoable) {
		return cmdutil.UsageErrorf("%v", err)
	}
	if err != nil {
		return err
	}
	return RenderRollback(opts.Output, BuildRollbackReport(opts.Table.String(), opts.DryRun, res))
}

// RenderRollback prints r: one JSON document with --json, else one line.
func RenderRollback(o Output, r RollbackReport) error {
	if o.JSON {
		return o.IO.PrintJSON(r)
	}
	var err error
	switch {
	case r.DryRun:
		_, err = iostreams.Fprintf(o.IO.Out, "would restore %s of %s that snapshot %d deleted where %s: %s read\n",
			plural(r.Rows, "row"), r.Table, r.Delete, r.Predicate, plural(int64(r.Read), "file"))
	case r.SnapshotID == nil:
		_, err = iostreams.Fprintf(o.IO.Out, "nothing to restore: snapshot %d of %s deleted no row\n", r.Delete, r.Table)
	default:
		_, err = iostreams.Fprintf(o.IO.Out, "restored %s of %s that snapshot %d deleted where %s: %s read, %d written; snapshot %d, version %d\n",
			plural(r.Rows, "row"), r.Table, r.Delete, r.Predicate, plural(int64(r.Read), "file"), r.Written, *r.SnapshotID, r.Version)
	}
	return err
}
