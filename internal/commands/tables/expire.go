package tables

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// ExpireOptions are the inputs of `tables expire`.
type ExpireOptions struct {
	Output
	Lake       *lake.Lake
	Table      lake.TableName
	OlderThan  time.Duration // 0: the table's history.expire.max-snapshot-age-ms (5 days)
	RetainLast int           // 0: the table's history.expire.min-snapshots-to-keep (1)
	DryRun     bool
}

// NewCmdExpire builds `tables expire`. runF replaces RunExpire in tests; nil
// means RunExpire.
func NewCmdExpire(f *cmdutil.Factory, runF func(context.Context, *ExpireOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "expire [NAME]",
		Short: "Expire snapshots older than an age by hand (their batch ids move into the load history)",
		Long: `Remove the snapshots older than --older-than, except the newest --retain-last
of the main branch (and any a branch or tag points at), then delete the
manifest lists, manifests and files that no remaining snapshot references
(data files a compaction replaced among them). Every row stays.

The batch ids of expired snapshots move into the table's load history in
the same commit, not forgotten: a landing file re-sent under one of them
within the dedupe window (timelake.dedupe-window, 14 days by default) is
still reported as already loaded.

There is no need to run this from cron: the maintenance after each ingest
(or timelake tables maintain) expires the snapshots older than the table's
timelake.snapshot-retention (` + settings.FormatDuration(lake.DefaultSnapshotRetention) + ` by default) by itself
(docs/maintenance.md). This command is for other ages by hand, on tables
whose maintenance is off or before a change. Its defaults come from the
table properties history.expire.max-snapshot-age-ms (Iceberg's default: 5
days) and history.expire.min-snapshots-to-keep (1).`,
		Example: `  timelake tables expire iot.readings --older-than 7d --dry-run
  timelake tables expire --older-than 48h --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &ExpireOptions{
				Output:     output(f),
				OlderThan:  settings.ExpireOlderThan.Get(r),
				RetainLast: settings.ExpireRetainLast.Get(r),
				DryRun:     settings.DryRun.Get(r),
			}
			if err := r.Err(); err != nil {
				return err
			}
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunExpire)
		},
	}
	settings.Bind(cmd.Flags(), settings.TablesExpire)
	return cmd
}

// ExpiredRow is one expired snapshot in the --json report.
type ExpiredRow struct {
	SnapshotID  int64   `json:"snapshot_id"`
	CommittedAt UTCTime `json:"committed_at"`
	BatchID     *string `json:"batch_id"` // null when the snapshot has none
}

// ExpireReport is the --json document of `tables expire`.
type ExpireReport struct {
	Table     string       `json:"table"`
	DryRun    bool         `json:"dry_run"`
	Version   int          `json:"version"` // the metadata version after the command
	Kept      int          `json:"kept"`    // snapshots left
	Expired   int          `json:"expired"` // snapshots removed (or that would be)
	Snapshots []ExpiredRow `json:"snapshots"`
	// KeysRemembered counts the batch ids that moved into the load history
	// (0 in a dry run), FilesDeleted the files only expired snapshots
	// referenced.
	KeysRemembered int `json:"keys_remembered"`
	FilesDeleted   int `json:"files_deleted"`
}

// BuildExpireReport describes res.
func BuildExpireReport(table string, dryRun bool, res lake.ExpireResult) ExpireReport {
	r := ExpireReport{Table: table, DryRun: dryRun, Version: res.Version, Kept: res.Kept,
		Expired: len(res.Expired), Snapshots: []ExpiredRow{}, KeysRemembered: res.Remembered, FilesDeleted: res.FilesDeleted}
	for _, e := range res.Expired {
		row := ExpiredRow{SnapshotID: e.SnapshotID, CommittedAt: UTCTime{e.CommittedAt}}
		if e.BatchID != "" {
			id := e.BatchID
			row.BatchID = &id
		}
		r.Snapshots = append(r.Snapshots, row)
	}
	return r
}

// RunExpire loads the table, expires its old snapshots and prints what it
// did. When the snapshots were expired but some files could not be
// deleted, it prints the report and returns the error.
func RunExpire(ctx context.Context, opts *ExpireOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	res, err := t.Expire(ctx, lake.ExpireOptions{OlderThan: opts.OlderThan, RetainLast: opts.RetainLast, DryRun: opts.DryRun})
	if err != nil && res.Version == 0 {
		return err
	}
	if rerr := RenderExpire(opts.Output, BuildExpireReport(opts.Table.String(), opts.DryRun, res)); rerr != nil {
		return rerr
	}
	return err
}

// RenderExpire prints r: one JSON document with --json, else one line.
func RenderExpire(o Output, r ExpireReport) error {
	if o.JSON {
		return o.IO.PrintJSON(r)
	}
	tty := o.tty()
	var err error
	switch {
	case r.Expired == 0:
		_, err = iostreams.Fprintf(o.IO.Out, "nothing to expire in %s (%s kept)\n", r.Table, plural(int64(r.Kept), "snapshot"))
	case r.DryRun:
		_, err = iostreams.Fprintf(o.IO.Out, "would expire %s of %s, committed %s to %s (%d kept); their batch ids would move into the load history\n",
			plural(int64(r.Expired), "snapshot"), r.Table, formatTime(&r.Snapshots[0].CommittedAt, tty),
			formatTime(&r.Snapshots[len(r.Snapshots)-1].CommittedAt, tty), r.Kept)
	default:
		_, err = iostreams.Fprintf(o.IO.Out, "expired %s of %s, committed %s to %s (%d kept, version %d); %s moved into the load history, %s deleted\n",
			plural(int64(r.Expired), "snapshot"), r.Table, formatTime(&r.Snapshots[0].CommittedAt, tty),
			formatTime(&r.Snapshots[len(r.Snapshots)-1].CommittedAt, tty), r.Kept, r.Version,
			plural(int64(r.KeysRemembered), "batch id"), plural(int64(r.FilesDeleted), "file"))
	}
	return err
}
