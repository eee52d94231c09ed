package tables

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// HistoryOptions are the inputs of `tables history`.
type HistoryOptions struct {
	Output
	Lake   *lake.Lake
	Table  lake.TableName
	Filter HistoryFilter
	// Logger gets the warning about missing history segments.
	Logger *slog.Logger
}

// HistoryFilter selects the files `tables history` lists.
type HistoryFilter struct {
	Prefix string    // only keys that start with it
	Since  time.Time // only files settled at or after it (zero: all)
	Status string    // "" or a lake.Outcome* (lake.OutcomeDeleted: the deletes)
	Limit  int       // at most this many, newest first (0: all)
}

// Match reports whether f selects r.
func (f HistoryFilter) Match(r lake.LoadRecord) bool {
	return strings.HasPrefix(r.Key, f.Prefix) && !r.LoadedAt.Before(f.Since) && (f.Status == "" || r.Outcome() == f.Status)
}

// MatchDeletion reports whether f selects d: a delete has no key, so a
// prefix leaves it out.
func (f HistoryFilter) MatchDeletion(d lake.Deletion) bool {
	return f.Prefix == "" && !d.At.Before(f.Since) && (f.Status == "" || f.Status == lake.OutcomeDeleted)
}

// MatchRestore reports whether f selects r, as MatchDeletion does a delete.
func (f HistoryFilter) MatchRestore(r lake.Restore) bool {
	return f.Prefix == "" && !r.At.Before(f.Since) && (f.Status == "" || f.Status == lake.OutcomeRestored)
}

// NewCmdHistory builds `tables history`. runF replaces RunHistory in
// tests; nil means RunHistory.
func NewCmdHistory(f *cmdutil.Factory, runF func(context.Context, *HistoryOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history [NAME] [--since WHEN] [--prefix P] [--status loaded|duplicate|rejected|deleted|restored]",
		Short: "What happened to every landing file of the dedupe window: loaded, a duplicate, or rejected with its reason; and the deletes of rows",
		Long: `List every landing file the table remembers, newest first, one line each:
loaded (its snapshot, rows, when it landed, its newest row time and, for
serve, whether a notification or a sweep brought it), a duplicate (its key, or
its content under another key, was loaded already: it was deleted), or
rejected (quarantined, with the reason). Loaded files come from the snapshots
and the load history, duplicates and rejections from the table's outcome log;
all are kept for the dedupe window (timelake.dedupe-window, 14 days by
default; docs/maintenance.md). The deletes of rows (tables delete) of the
current snapshot's ancestry are listed among them as deleted: the predicate
and the rows removed; a delete undone by tables rollback is not, and the
undo is listed as restored: the rows brought back and the delete it undid.`,
		Example: `  timelake tables history iot.readings --since 24h
  timelake tables history --prefix gateway-7/ --status rejected
  timelake tables history --status duplicate --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &HistoryOptions{Output: output(f), Logger: f.Logger(), Filter: HistoryFilter{Prefix: settings.BatchPrefix.Get(r),
				Since: settings.SinceTime.Get(r), Status: settings.HistoryStatus.Get(r), Limit: settings.Limit.Get(r)}}
			if err := r.Err(); err != nil {
				return err
			}
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunHistory)
		},
	}
	settings.Bind(cmd.Flags(), settings.TablesHistory)
	return cmd
}

// HistoryRow is one file of `tables history`.
type HistoryRow struct {
	// At is when it was loaded (the snapshot's commit) or settled.
	At     UTCTime `json:"at"`
	Status string  `json:"status"` // loaded, duplicate, rejected, deleted or restored
	Key    string  `json:"key"`    // "" for a delete
	Rows   int64   `json:"rows"`   // of a delete: the rows removed
	// SnapshotID loaded it (of a duplicate: the first copy; of a delete:
	// its snapshot); null for a rejected file.
	SnapshotID *int64   `json:"snapshot_id"`
	Size       int64    `json:"size"`
	SHA256     *string  `json:"sha256"`
	LandedAt   *UTCTime `json:"landed_at"`
	MaxRowTime *UTCTime `json:"max_row_time"`
	LoadedBy   *string  `json:"loaded_by"`
	// SameAs is the key a duplicate repeats the content of; QuarantinedTo
	// the kept copy of a rejected file; Reason why it was rejected or
	// what it duplicates.
	SameAs        *string `json:"same_as"`
	QuarantinedTo *string `json:"quarantined_to"`
	Reason        *string `json:"reason"`
	// Predicate is a delete's (lake.SummaryDeletePredicate); null for a
	// landing file.
	Predicate *string `json:"predicate"`
}

func historyRow(r lake.LoadRecord) HistoryRow {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	optTime := func(t time.Time) *UTCTime {
		if t.IsZero() {
			return nil
		}
		return &UTCTime{t.UTC()}
	}
	row := HistoryRow{At: UTCTime{r.LoadedAt.UTC()}, Status: r.Outcome(), Key: r.Key, Rows: r.Rows, Size: r.Size,
		SHA256: opt(r.SHA256), LandedAt: optTime(r.LandedAt), MaxRowTime: optTime(r.MaxRowTime), LoadedBy: opt(r.LoadedBy),
		SameAs: opt(r.SameAs), QuarantinedTo: opt(r.QuarantinedTo), Reason: opt(r.Reason)}
	if r.SnapshotID != 0 {
		id := r.SnapshotID
		row.SnapshotID = &id
	}
	return row
}

func deletionRow(d lake.Deletion) HistoryRow {
	id, p := d.SnapshotID, d.Predicate
	return HistoryRow{At: UTCTime{d.At}, Status: lake.OutcomeDeleted, Rows: d.Rows, SnapshotID: &id, Predicate: &p}
}

// restoreRow is the history row of r: the delete it undid in Reason, the
// delete's predicate (null once that snapshot expired).
func restoreRow(r lake.Restore) HistoryRow {
	id, reason := r.SnapshotID, iostreams.Sprintf("undid the delete of snapshot %d", r.Delete)
	row := HistoryRow{At: UTCTime{r.At}, Status: lake.OutcomeRestored, Rows: r.Rows, SnapshotID: &id, Reason: &reason}
	if r.Predicate != "" {
		p := r.Predicate
		row.Predicate = &p
	}
	return row
}

// RunHistory scans the table's history (lake.Table.ScanHistory) and its
// deletes (lake.Table.Deletions), keeps those the filter selects and prints
// them newest first. Missing history segments are a warning: what they
// held is not listed.
func RunHistory(ctx context.Context, opts *HistoryOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	var rows []HistoryRow
	missing, err := t.ScanHistory(ctx, func(r lake.LoadRecord) error {
		if opts.Filter.Match(r) {
			rows = append(rows, historyRow(r))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(missing) > 0 && opts.Logger != nil {
		opts.Logger.Warn("load history segments are missing: the files they held are not listed (timelake tables maintain drops them from the table)",
			"table", opts.Table.String(), "segments", strings.Join(missing, ","))
	}
	for _, d := range t.Deletions() {
		if opts.Filter.MatchDeletion(d) {
			rows = append(rows, deletionRow(d))
		}
	}
	for _, r := range t.Restores() {
		if opts.Filter.MatchRestore(r) {
			rows = append(rows, restoreRow(r))
		}
	}
	slices.SortFunc(rows, func(a, b HistoryRow) int {
		if c := b.At.Compare(a.At.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if n := opts.Filter.Limit; n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	if rows == nil {
		rows = []HistoryRow{}
	}
	return RenderHistory(opts.Output, opts.Table.String(), rows)
}

var historyColumns = []iostreams.Column{
	{Header: "at (utc)", Pipe: "at"},
	{Header: "status"},
	{Header: "key"},
	{Header: "rows", Right: true},
	{Header: "snapshot", Pipe: "snapshot_id", Right: true},
	{Header: "by", Pipe: "loaded_by"},
	{Header: "detail", Wrap: 80},
}

// historyPipeColumns are the pipe's: every field of HistoryRow.
var historyPipeColumns = []iostreams.Column{
	{Pipe: "at"}, {Pipe: "status"}, {Pipe: "key"}, {Pipe: "rows"}, {Pipe: "snapshot_id"}, {Pipe: "size_bytes"},
	{Pipe: "sha256"}, {Pipe: "landed_at"}, {Pipe: "max_row_time"}, {Pipe: "loaded_by"}, {Pipe: "same_as"},
	{Pipe: "quarantined_to"}, {Pipe: "reason"}, {Pipe: "predicate"},
}

// RenderHistory prints rows of table: a JSON list with --json; on a
// terminal one aligned line per file (the detail: where a rejected file
// is and why, what a duplicate repeats, what a delete matched); in a pipe
// every field.
func RenderHistory(o Output, table string, rows []HistoryRow) error {
	if o.JSON {
		return o.IO.PrintJSON(rows)
	}
	tty := o.tty()
	if tty && len(rows) == 0 {
		_, err := iostreams.Fprintf(o.IO.Out, "no files in the history of %s that match\n", table)
		return err
	}
	if tty {
		t := o.IO.NewTable(historyColumns...)
		for _, r := range rows {
			var detail string
			switch {
			case r.Status == lake.OutcomeRestored:
				detail = optPtr(r.Reason)
				if r.Predicate != nil {
					detail += " where " + *r.Predicate
				}
			case r.Predicate != nil:
				detail = "where " + *r.Predicate
			case r.Status == lake.OutcomeRejected:
				detail = optPtr(r.Reason)
				if r.QuarantinedTo != nil {
					detail = "-> " + *r.QuarantinedTo + ": " + detail
				}
			case r.SameAs != nil:
				detail = "same content as " + *r.SameAs
			case r.Status == lake.OutcomeDuplicate:
				detail = "loaded before under this key"
			case r.MaxRowTime != nil:
				detail = "rows up to " + r.MaxRowTime.terminal()
			}
			t.AddRow(r.At.terminal(), r.Status, r.Key, formatInt(r.Rows), optInt(r.SnapshotID, tty), optString(optPtr(r.LoadedBy), tty), detail)
		}
		return t.Render()
	}
	t := o.IO.NewTable(historyPipeColumns...)
	for _, r := range rows {
		size := formatInt(r.Size)
		if r.Key == "" {
			size = "" // a delete or an undo: no landing file
		}
		t.AddRow(r.At.machine(), r.Status, r.Key, formatInt(r.Rows), optInt(r.SnapshotID, false), size,
			optPtr(r.SHA256), formatTime(r.LandedAt, false), formatTime(r.MaxRowTime, false), optPtr(r.LoadedBy),
			optPtr(r.SameAs), optPtr(r.QuarantinedTo), optPtr(r.Reason), optPtr(r.Predicate))
	}
	return t.Render()
}
