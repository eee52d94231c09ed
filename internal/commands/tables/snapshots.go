package tables

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// SnapshotsOptions are the inputs of `tables snapshots`.
type SnapshotsOptions struct {
	Output
	Lake  *lake.Lake
	Table lake.TableName
	Limit int       // at most this many rows, newest first; 0 = all
	Since time.Time // only snapshots committed at or after it; zero = all
}

// NewCmdSnapshots builds `tables snapshots`. runF replaces RunSnapshots in
// tests; nil means RunSnapshots.
func NewCmdSnapshots(f *cmdutil.Factory, runF func(context.Context, *SnapshotsOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshots [NAME]",
		Short: "List a table's snapshots, newest first, with added rows, files, bytes and batch id",
		Long: `List the snapshots of a table, newest first: id, parent, commit time (UTC),
operation, added rows, files and bytes, and the batch id (the landing key).
STATE says whether a snapshot is the current one, an ancestor of it, or
abandoned (not in the current ancestry, e.g. after a rollback: its batch id
counts as not loaded).`,
		Example: `  timelake tables snapshots iot.readings --limit 10
  timelake tables snapshots --since 24h
  timelake tables snapshots --since 2026-01-05T00:00:00Z --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &SnapshotsOptions{Output: output(f), Limit: settings.Limit.Get(r), Since: settings.SinceTime.Get(r)}
			if err := r.Err(); err != nil {
				return err
			}
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunSnapshots)
		},
	}
	settings.Bind(cmd.Flags(), settings.TablesSnapshots)
	return cmd
}

// Snapshot states relative to the current snapshot.
const (
	StateCurrent   = "current"   // the table's current snapshot
	StateAncestor  = "ancestor"  // an ancestor of the current snapshot
	StateAbandoned = "abandoned" // not in the current ancestry (rolled back, or another branch)
)

// SnapshotRow is one line of `tables snapshots`. The added-* counters come
// from the snapshot summary (added-records, added-data-files,
// added-files-size), 0 when absent.
type SnapshotRow struct {
	SnapshotID  int64   `json:"snapshot_id"`
	ParentID    *int64  `json:"parent_id"` // null for the first snapshot
	CommittedAt UTCTime `json:"committed_at"`
	Operation   string  `json:"operation"` // append, overwrite, delete, replace
	AddedRows   int64   `json:"added_rows"`
	AddedFiles  int64   `json:"added_files"`
	AddedBytes  int64   `json:"added_bytes"`
	BatchID     *string `json:"batch_id"` // timelake.batch-id; null when the snapshot has none
	State       string  `json:"state"`    // current, ancestor or abandoned
}

// BuildSnapshotRows lists meta's snapshots newest first (by commit time,
// then sequence number), keeping those committed at or after since (zero:
// all), at most limit of them (0: all).
func BuildSnapshotRows(meta table.Metadata, since time.Time, limit int) []SnapshotRow {
	snaps := slices.Clone(meta.Snapshots())
	slices.SortStableFunc(snaps, func(a, b table.Snapshot) int {
		return cmp.Or(cmp.Compare(b.TimestampMs, a.TimestampMs), cmp.Compare(b.SequenceNumber, a.SequenceNumber))
	})
	live := lake.InCurrentAncestry(meta)
	var cur int64
	if s := meta.CurrentSnapshot(); s != nil {
		cur = s.SnapshotID
	}
	rows := []SnapshotRow{}
	for _, s := range snaps {
		if limit > 0 && len(rows) == limit {
			break
		}
		if !since.IsZero() && time.UnixMilli(s.TimestampMs).Before(since) {
			continue
		}
		rows = append(rows, snapshotRow(s, cur, live))
	}
	return rows
}

// snapshotRow describes s; cur is the current snapshot id and live the
// current ancestry.
func snapshotRow(s table.Snapshot, cur int64, live map[int64]bool) SnapshotRow {
	r := SnapshotRow{SnapshotID: s.SnapshotID, ParentID: s.ParentSnapshotID, CommittedAt: At(s.TimestampMs), State: StateAbandoned}
	switch {
	case s.SnapshotID == cur:
		r.State = StateCurrent
	case live[s.SnapshotID]:
		r.State = StateAncestor
	}
	if s.Summary != nil {
		p := s.Summary.Properties
		r.Operation = string(s.Summary.Operation)
		r.AddedRows = summaryInt(p, "added-records")
		r.AddedFiles = summaryInt(p, "added-data-files")
		r.AddedBytes = summaryInt(p, "added-files-size")
		if id, ok := p[lake.SummaryBatchID]; ok {
			r.BatchID = &id
		}
	}
	return r
}

// RunSnapshots loads the table and prints its snapshots.
func RunSnapshots(ctx context.Context, opts *SnapshotsOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	return RenderSnapshots(opts.Output, opts.Table.String(), BuildSnapshotRows(t.Metadata(), opts.Since, opts.Limit))
}

var snapshotColumns = []iostreams.Column{
	{Header: "snapshot", Pipe: "snapshot_id", Right: true},
	{Header: "parent", Pipe: "parent_id", Right: true},
	{Header: "committed (utc)", Pipe: "committed_at"},
	{Header: "operation"},
	{Header: "+rows", Pipe: "added_rows", Right: true},
	{Header: "+files", Pipe: "added_files", Right: true},
	{Header: "+size", Pipe: "added_bytes", Right: true},
	{Header: "state"},
	{Header: "batch id", Pipe: "batch_id"},
}

// RenderSnapshots prints rows of table.
func RenderSnapshots(o Output, table string, rows []SnapshotRow) error {
	if o.JSON {
		return o.IO.PrintJSON(rows)
	}
	tty := o.tty()
	if tty && len(rows) == 0 {
		_, err := iostreams.Fprintf(o.IO.Out, "no snapshots in %s\n", table)
		return err
	}
	t := o.IO.NewTable(snapshotColumns...)
	for _, r := range rows {
		batch := ""
		if r.BatchID != nil {
			batch = *r.BatchID
		}
		t.AddRow(formatInt(r.SnapshotID), optInt(r.ParentID, tty), formatTime(&r.CommittedAt, tty),
			r.Operation, formatInt(r.AddedRows), formatInt(r.AddedFiles), formatBytes(r.AddedBytes, tty),
			r.State, optString(batch, tty))
	}
	return t.Render()
}

func summaryInt(p map[string]string, k string) int64 {
	v, _ := strconv.ParseInt(p[k], 10, 64)
	return v
}
