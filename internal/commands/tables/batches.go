package tables

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// ErrNotLoaded is the error behind `tables batch` exiting with
// cmdutil.ExitNotLoaded: neither a snapshot in the current ancestry nor the
// load history (within the dedupe window) has the batch id.
var ErrNotLoaded = errors.New("batch not loaded")

// Where a loaded batch is known from (the "source" field).
const (
	// FromSnapshot: a snapshot in the current ancestry carries the batch id.
	FromSnapshot = "snapshot"
	// FromLoadHistory: the snapshot expired; the table's load history
	// remembers the batch for its dedupe window.
	FromLoadHistory = "load-history"
)

// BatchesOptions are the inputs of `tables batches`.
type BatchesOptions struct {
	Output
	Lake   *lake.Lake
	Table  lake.TableName
	Filter BatchFilter
}

// BatchFilter selects the batches `tables batches` lists.
type BatchFilter struct {
	Prefix string    // only batch ids that start with it
	Since  time.Time // only batches committed at or after it (zero: all)
	Limit  int       // at most this many, newest first (0: all)
}

// NewCmdBatches builds `tables batches`. runF replaces RunBatches in tests;
// nil means RunBatches.
func NewCmdBatches(f *cmdutil.Factory, runF func(context.Context, *BatchesOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batches [NAME]",
		Short: "List the batch ids (landing keys) loaded into a table, newest first, from the snapshots and the load history",
		Long: `List the loaded batch ids, newest first, with the snapshot that committed each,
its time and its rows. The batch id is the landing object key of the file that
was loaded. Batches whose snapshot is still in the current snapshot's ancestry
come from the snapshots; those whose snapshot has expired come from the
table's load history, which keeps them for the dedupe window
(timelake.dedupe-window, 14 days by default; docs/maintenance.md). Batches of
snapshots that were rolled back are not listed: they count as not loaded.`,
		Example: `  timelake tables batches iot.readings --prefix gateway-7/
  timelake tables batches --since 24h --limit 100 --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &BatchesOptions{Output: output(f), Filter: BatchFilter{
				Prefix: settings.BatchPrefix.Get(r), Since: settings.SinceTime.Get(r), Limit: settings.Limit.Get(r)}}
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
// added-files-size), and the landing file it came from.
type BatchRow struct {
	BatchID     string  `json:"batch_id"`
	SnapshotID  int64   `json:"snapshot_id"`
	CommittedAt UTCTime `json:"committed_at"`
	Rows        int64   `json:"rows"`
	DataFiles   *int64  `json:"data_files"` // null from the load history
	SizeBytes   *int64  `json:"size_bytes"` // null from the load history
	// Source is FromSnapshot or FromLoadHistory.
	Source string `json:"source"`
	// SourceSize and SourceSHA256 describe the landing file
	// (timelake.source-size, timelake.source-sha256); null when the
	// snapshot does not say (other writers).
	SourceSize   *int64  `json:"source_size"`
	SourceSHA256 *string `json:"source_sha256"`
}

func batchRow(b lake.BatchInfo) BatchRow {
	r := BatchRow{BatchID: b.BatchID, SnapshotID: b.SnapshotID, CommittedAt: UTCTime{b.CommittedAt},
		Rows: b.Rows, Source: FromSnapshot}
	if b.FromHistory {
		r.Source = FromLoadHistory
	} else {
		r.DataFiles, r.SizeBytes = &b.DataFiles, &b.Bytes
	}
	r.SourceSize, r.SourceSHA256 = sourceFacts(b.Summary)
	return r
}

// sourceFacts reads the landing file's size and SHA-256 from a snapshot
// summary; nil for those it does not hold.
func sourceFacts(summary map[string]string) (*int64, *string) {
	var size *int64
	var sum *string
	if v, err := strconv.ParseInt(summary[lake.SummarySourceSize], 10, 64); err == nil {
		size = &v
	}
	if v := summary[lake.SummarySourceSHA256]; v != "" {
		sum = &v
	}
	return size, sum
}

// BuildBatchRows lists the loaded batches, newest first, that f selects:
// those of meta's current ancestry, then, merged by commit time, those of
// the load history (history: LoadHistory.Records, newest first) whose id no
// snapshot of the ancestry carries.
func BuildBatchRows(meta table.Metadata, history []lake.LoadRecord, f BatchFilter) []BatchRow {
	snaps := lake.BatchesOf(meta)
	inSnapshots := make(map[string]bool, len(snaps))
	for _, b := range snaps {
		inSnapshots[b.BatchID] = true
	}
	keep := func(b lake.BatchInfo) bool {
		return strings.HasPrefix(b.BatchID, f.Prefix) && !b.CommittedAt.Before(f.Since)
	}
	rows := []BatchRow{}
	add := func(b lake.BatchInfo) bool {
		if keep(b) {
			rows = append(rows, batchRow(b))
		}
		return f.Limit == 0 || len(rows) < f.Limit
	}
	i, j := 0, 0
	for i < len(snaps) || j < len(history) {
		if j < len(history) && inSnapshots[history[j].Key] {
			j++
			continue
		}
		var b lake.BatchInfo
		if j == len(history) || (i < len(snaps) && !snaps[i].CommittedAt.Before(history[j].LoadedAt)) {
			b, i = snaps[i], i+1
		} else {
			b, j = lake.BatchInfoOf(history[j]), j+1
		}
		if !add(b) {
			break
		}
	}
	return rows
}

// RunBatches loads the table and its load history and prints its batches.
func RunBatches(ctx context.Context, opts *BatchesOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	hist, err := t.LoadHistory(ctx)
	if err != nil {
		return err
	}
	recs, err := hist.Records(ctx)
	if err != nil {
		return err
	}
	return RenderBatches(opts.Output, opts.Table.String(), BuildBatchRows(t.Metadata(), recs, opts.Filter))
}

var batchColumns = []iostreams.Column{
	{Header: "batch id", Pipe: "batch_id"},
	{Header: "snapshot", Pipe: "snapshot_id", Right: true},
	{Header: "committed (utc)", Pipe: "committed_at"},
	{Header: "rows", Right: true},
	{Header: "files", Pipe: "data_files", Right: true},
	{Header: "size", Pipe: "size_bytes", Right: true},
	{Header: "from", Pipe: "source"},
}

// batchPipeColumns are the pipe's columns: the terminal's, then the landing
// file's size and SHA-256.
var batchPipeColumns = append(slices.Clone(batchColumns), iostreams.Column{Pipe: "source_size"}, iostreams.Column{Pipe: "source_sha256"})

// sourceWord is how a terminal names a row's source.
func sourceWord(source string) string {
	if source == FromLoadHistory {
		return "load history"
	}
	return source
}

// RenderBatches prints rows of table.
func RenderBatches(o Output, table string, rows []BatchRow) error {
	if o.JSON {
		return o.IO.PrintJSON(rows)
	}
	tty := o.tty()
	if tty && len(rows) == 0 {
		_, err := iostreams.Fprintf(o.IO.Out, "no batches in %s\n", table)
		return err
	}
	if tty {
		t := o.IO.NewTable(batchColumns...)
		for _, r := range rows {
			size := "-"
			if r.SizeBytes != nil {
				size = iostreams.HumanBytes(*r.SizeBytes)
			}
			t.AddRow(r.BatchID, formatInt(r.SnapshotID), formatTime(&r.CommittedAt, tty),
				formatInt(r.Rows), optInt(r.DataFiles, tty), size, sourceWord(r.Source))
		}
		return t.Render()
	}
	t := o.IO.NewTable(batchPipeColumns...)
	for _, r := range rows {
		t.AddRow(r.BatchID, formatInt(r.SnapshotID), formatTime(&r.CommittedAt, tty), formatInt(r.Rows),
			optInt(r.DataFiles, tty), optInt(r.SizeBytes, tty), r.Source, optInt(r.SourceSize, tty), optPtr(r.SourceSHA256))
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
snapshot in the current snapshot's ancestry carries it, or, once that snapshot
has expired, when the table's load history remembers it (for the dedupe
window, timelake.dedupe-window, 14 days by default): exactly the batches
ingest reports as already loaded. A rolled-back one does not count. With one
argument it is the ID and the table comes from TIMELAKE_TABLE.

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
	DataFiles   *int64   `json:"data_files"` // null from the load history too
	SizeBytes   *int64   `json:"size_bytes"` // null from the load history too
	// Source, SourceSize and SourceSHA256 are those of BatchRow.
	Source       *string `json:"source"`
	SourceSize   *int64  `json:"source_size"`
	SourceSHA256 *string `json:"source_sha256"`
}

// BuildBatchStatus describes batch id of table: b when loaded
// (Table.FindLoaded), else not loaded.
func BuildBatchStatus(table, id string, b lake.BatchInfo, loaded bool) BatchStatus {
	st := BatchStatus{Table: table, BatchID: id}
	if !loaded {
		return st
	}
	r := batchRow(b)
	st.Loaded, st.SnapshotID, st.CommittedAt, st.Rows = true, &r.SnapshotID, &r.CommittedAt, &r.Rows
	st.DataFiles, st.SizeBytes, st.Source = r.DataFiles, r.SizeBytes, &r.Source
	st.SourceSize, st.SourceSHA256 = r.SourceSize, r.SourceSHA256
	return st
}

// RunBatch loads the table and prints the status of one batch id (from
// the snapshots, else the load history). A batch that is not loaded
// returns a *cmdutil.SilentError with ExitNotLoaded (wrapping ErrNotLoaded)
// after printing the answer.
func RunBatch(ctx context.Context, opts *BatchOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	b, loaded, err := t.FindLoaded(ctx, opts.BatchID)
	if err != nil {
		return err
	}
	st := BuildBatchStatus(opts.Table.String(), opts.BatchID, b, loaded)
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
	{Pipe: "source"}, {Pipe: "source_size"}, {Pipe: "source_sha256"},
}

// RenderBatch prints st: a sentence on a terminal; in a pipe a header and
// one tab-separated row whose status is "loaded" or "not-loaded".
func RenderBatch(o Output, st BatchStatus) error {
	switch {
	case o.JSON:
		return o.IO.PrintJSON(st)
	case o.tty() && st.Loaded && *st.Source == FromLoadHistory:
		var from []string
		if st.SourceSize != nil {
			from = append(from, "source "+iostreams.HumanBytes(*st.SourceSize))
		}
		if st.SourceSHA256 != nil {
			from = append(from, "sha256 "+*st.SourceSHA256)
		}
		_, err := iostreams.Fprintf(o.IO.Out, "%s: loaded into %s in snapshot %d at %s UTC, %s; from the load history (the snapshot has expired)%s\n",
			st.BatchID, st.Table, *st.SnapshotID, st.CommittedAt.terminal(), plural(*st.Rows, "row"), prefixed(", ", strings.Join(from, ", ")))
		return err
	case o.tty() && st.Loaded:
		_, err := iostreams.Fprintf(o.IO.Out, "%s: loaded into %s in snapshot %d at %s UTC, %s, %s, %s\n",
			st.BatchID, st.Table, *st.SnapshotID, st.CommittedAt.terminal(), plural(*st.Rows, "row"),
			plural(*st.DataFiles, "data file"), iostreams.HumanBytes(*st.SizeBytes))
		return err
	case o.tty():
		_, err := iostreams.Fprintf(o.IO.Out, "%s: not loaded into %s (neither a snapshot in the current ancestry nor the load history has this batch id)\n",
			st.BatchID, st.Table)
		return err
	}
	status := "not-loaded"
	if st.Loaded {
		status = "loaded"
	}
	t := o.IO.NewTable(batchStatusColumns...)
	t.AddRow(st.BatchID, status, optInt(st.SnapshotID, false), formatTime(st.CommittedAt, false),
		optInt(st.Rows, false), optInt(st.DataFiles, false), optInt(st.SizeBytes, false),
		optPtr(st.Source), optInt(st.SourceSize, false), optPtr(st.SourceSHA256))
	return t.Render()
}

// optPtr renders an optional text in a pipe: empty when nil.
func optPtr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// prefixed is p+s, or "" when s is empty.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
