package tables

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// ErrNotLoaded is the error behind `tables batch` exiting with
// cmdutil.ExitNotLoaded: no snapshot in the current ancestry carries the
// batch id.
var ErrNotLoaded = errors.New("batch not loaded")

// BatchesOptions are the inputs of `tables batches`.
type BatchesOptions struct {
	Output
	Lake   *lake.Lake
	Table  lake.TableName
	Prefix string // only batch ids that start with it
}

// NewCmdBatches builds `tables batches`. runF replaces RunBatches in tests;
// nil means RunBatches.
func NewCmdBatches(f *cmdutil.Factory, runF func(context.Context, *BatchesOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batches [NAME]",
		Short: "List the batch ids (landing keys) loaded into a table, newest first",
		Long: `List the batch ids in the current snapshot's ancestry, newest first, with the
snapshot that committed each, its time and its rows. The batch id is the
landing object key of the file that was loaded. Batches of snapshots that
were rolled back are not listed: they count as not loaded.`,
		Example: `  timelake tables batches iot.readings --prefix gateway-7/`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &BatchesOptions{Output: output(f), Prefix: settings.BatchPrefix.Get(r)}
			if err := r.Err(); err != nil {
				return err
			}
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunBatches)
		},
	}
	settings.Bind(cmd.Flags(), settings.TablesBatches)
	return cmd
}

// BatchRow is one loaded batch: the snapshot that committed it and what
// that snapshot added (summary added-records, added-data-files,
// added-files-size).
type BatchRow struct {
	BatchID     string  `json:"batch_id"`
	SnapshotID  int64   `json:"snapshot_id"`
	CommittedAt UTCTime `json:"committed_at"`
	Rows        int64   `json:"rows"`
	DataFiles   int64   `json:"data_files"`
	SizeBytes   int64   `json:"size_bytes"`
}

func batchRow(b lake.BatchInfo) BatchRow {
	return BatchRow{BatchID: b.BatchID, SnapshotID: b.SnapshotID, CommittedAt: UTCTime{b.CommittedAt},
		Rows: b.Rows, DataFiles: b.DataFiles, SizeBytes: b.Bytes}
}

// BuildBatchRows lists the batches of meta's current ancestry, newest
// first, whose id starts with prefix.
func BuildBatchRows(meta table.Metadata, prefix string) []BatchRow {
	rows := []BatchRow{}
	for _, b := range lake.BatchesOf(meta) {
		if strings.HasPrefix(b.BatchID, prefix) {
			rows = append(rows, batchRow(b))
		}
	}
	return rows
}

// RunBatches loads the table and prints its batches.
func RunBatches(ctx context.Context, opts *BatchesOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	return RenderBatches(opts.Output, opts.Table.String(), BuildBatchRows(t.Metadata(), opts.Prefix))
}

var batchColumns = []iostreams.Column{
	{Header: "batch id", Pipe: "batch_id"},
	{Header: "snapshot", Pipe: "snapshot_id", Right: true},
	{Header: "committed (utc)", Pipe: "committed_at"},
	{Header: "rows", Right: true},
	{Header: "files", Pipe: "data_files", Right: true},
	{Header: "size", Pipe: "size_bytes", Right: true},
}

// RenderBatches prints rows of table.
func RenderBatches(o Output, table string, rows []BatchRow) error {
	if o.JSON {
		return o.IO.PrintJSON(rows)
	}
	tty := o.tty()
	if tty && len(rows) == 0 {
		_, err := fmt.Fprintf(o.IO.Out, "no batches in %s\n", table)
		return err
	}
	t := o.IO.NewTable(batchColumns...)
	for _, r := range rows {
		t.AddRow(r.BatchID, formatInt(r.SnapshotID), formatTime(&r.CommittedAt, tty),
			formatInt(r.Rows), formatInt(r.DataFiles), formatBytes(r.SizeBytes, tty))
	}
	return t.Render()
}

// BatchOptions are the inputs of `tables batch`.
type BatchOptions struct {
	Output
	Lake    *lake.Lake
	Table   lake.TableName
	BatchID string
}

// NewCmdBatch builds `tables batch`. runF replaces RunBatch in tests; nil
// means RunBatch.
func NewCmdBatch(f *cmdutil.Factory, runF func(context.Context, *BatchOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "batch [NAME] ID",
		Short: "Say whether one batch id (landing key) is loaded: snapshot, time and rows, or exit code 4",
		Long: `Answer "did this file load?" for one batch id (the landing object key): loaded
(snapshot, commit time, rows) or not loaded. A batch counts as loaded when a
snapshot in the current snapshot's ancestry carries it; a rolled-back one
does not. With one argument it is the ID and the table comes from
TIMELAKE_TABLE.

Exit code 0 means loaded, 4 means not loaded (the printed line is the only
message), 1 means the question could not be answered.`,
		Example: `  timelake tables batch iot.readings gateway-7/20260105T1000.csv
  timelake tables batch gateway-7/20260105T1000.csv --env-file timelake.env || echo "not yet"`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := &BatchOptions{Output: output(f), BatchID: args[len(args)-1]}
			var err error
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args[:len(args)-1]); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunBatch)
		},
	}
}

// BatchStatus answers `tables batch`. When Loaded is false every other
// field but BatchID and Table is null.
type BatchStatus struct {
	Table       string   `json:"table"`
	BatchID     string   `json:"batch_id"`
	Loaded      bool     `json:"loaded"`
	SnapshotID  *int64   `json:"snapshot_id"`
	CommittedAt *UTCTime `json:"committed_at"`
	Rows        *int64   `json:"rows"`
	DataFiles   *int64   `json:"data_files"`
	SizeBytes   *int64   `json:"size_bytes"`
}

// BuildBatchStatus looks id up in meta's current ancestry.
func BuildBatchStatus(table string, meta table.Metadata, id string) BatchStatus {
	st := BatchStatus{Table: table, BatchID: id}
	b, ok := lake.FindBatchIn(meta, id)
	if !ok {
		return st
	}
	at := UTCTime{b.CommittedAt}
	st.Loaded, st.SnapshotID, st.CommittedAt = true, &b.SnapshotID, &at
	st.Rows, st.DataFiles, st.SizeBytes = &b.Rows, &b.DataFiles, &b.Bytes
	return st
}

// RunBatch loads the table and prints the status of one batch id. A batch
// that is not loaded returns a *cmdutil.SilentError with ExitNotLoaded
// (wrapping ErrNotLoaded) after printing the answer.
func RunBatch(ctx context.Context, opts *BatchOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	st := BuildBatchStatus(opts.Table.String(), t.Metadata(), opts.BatchID)
	if err := RenderBatch(opts.Output, st); err != nil {
		return err
	}
	if !st.Loaded {
		return &cmdutil.SilentError{Code: cmdutil.ExitNotLoaded,
			Err: fmt.Errorf("%s in %s: %w", opts.BatchID, opts.Table, ErrNotLoaded)}
	}
	return nil
}

var batchStatusColumns = []iostreams.Column{
	{Pipe: "batch_id"}, {Pipe: "status"}, {Pipe: "snapshot_id"}, {Pipe: "committed_at"},
	{Pipe: "rows"}, {Pipe: "data_files"}, {Pipe: "size_bytes"},
}

// RenderBatch prints st: a sentence on a terminal; in a pipe a header and
// one tab-separated row whose status is "loaded" or "not-loaded".
func RenderBatch(o Output, st BatchStatus) error {
	switch {
	case o.JSON:
		return o.IO.PrintJSON(st)
	case o.tty() && st.Loaded:
		_, err := fmt.Fprintf(o.IO.Out, "%s: loaded into %s in snapshot %d at %s UTC, %s, %s, %s\n",
			st.BatchID, st.Table, *st.SnapshotID, st.CommittedAt.terminal(), plural(*st.Rows, "row"),
			plural(*st.DataFiles, "data file"), iostreams.HumanBytes(*st.SizeBytes))
		return err
	case o.tty():
		_, err := fmt.Fprintf(o.IO.Out, "%s: not loaded into %s (no snapshot in the current ancestry has this batch id)\n",
			st.BatchID, st.Table)
		return err
	}
	status := "not-loaded"
	if st.Loaded {
		status = "loaded"
	}
	t := o.IO.NewTable(batchStatusColumns...)
	t.AddRow(st.BatchID, status, optInt(st.SnapshotID, false), formatTime(st.CommittedAt, false),
		optInt(st.Rows, false), optInt(st.DataFiles, false), optInt(st.SizeBytes, false))
	return t.Render()
}
