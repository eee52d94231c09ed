package tables

import (
	"context"
	"slices"

	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
)

// ListOptions are the inputs of `tables list`.
type ListOptions struct {
	Output
	Lake *lake.Lake
}

// NewCmdList builds `tables list`. runF replaces RunList in tests; nil
// means RunList.
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the warehouse's tables with rows, data files, size and last commit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := openLake(cmd, f)
			if err != nil {
				return err
			}
			return run(cmd.Context(), &ListOptions{Output: output(f), Lake: l}, runF, RunList)
		},
	}
}

// TableRow is one line of `tables list`. The totals come from the current
// snapshot's summary (total-records, total-data-files, total-files-size);
// a table without snapshots has zeros and a nil SnapshotID/LastCommitAt.
type TableRow struct {
	Table           string   `json:"table"`            // namespace.table
	MetadataVersion int      `json:"metadata_version"` // N of vN.metadata.json
	SnapshotID      *int64   `json:"snapshot_id"`      // current snapshot
	Rows            int64    `json:"rows"`
	DataFiles       int64    `json:"data_files"`
	SizeBytes       int64    `json:"size_bytes"`     // bytes of live data files
	LastCommitAt    *UTCTime `json:"last_commit_at"` // current snapshot's commit time
	// Error says why the table could not be read (other fields are then
	// zero); empty when it was read.
	Error string `json:"error,omitempty"`
}

// BuildTableRow summarises one table from its metadata and version N.
func BuildTableRow(name lake.TableName, version int, meta table.Metadata) TableRow {
	r := TableRow{Table: name.String(), MetadataVersion: version}
	if s := meta.CurrentSnapshot(); s != nil {
		id, at := s.SnapshotID, At(s.TimestampMs)
		r.SnapshotID, r.LastCommitAt = &id, &at
		if s.Summary != nil {
			r.Rows = summaryInt(s.Summary.Properties, "total-records")
			r.DataFiles = summaryInt(s.Summary.Properties, "total-data-files")
			r.SizeBytes = summaryInt(s.Summary.Properties, "total-files-size")
		}
	}
	return r
}

// RunList loads every table of the warehouse and prints one row each. A
// table that cannot be read gets a row with its error; the command still
// succeeds.
func RunList(ctx context.Context, opts *ListOptions) error {
	names, err := opts.Lake.ListTables(ctx)
	if err != nil {
		return err
	}
	rows := make([]TableRow, 0, len(names))
	for _, n := range names {
		t, err := opts.Lake.LoadTable(ctx, n)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rows = append(rows, TableRow{Table: n.String(), Error: err.Error()})
			continue
		}
		rows = append(rows, BuildTableRow(n, t.Version(), t.Metadata()))
	}
	return RenderList(opts.Output, opts.Lake.URI(), rows)
}

var listColumns = []iostreams.Column{
	{Header: "table"},
	{Header: "rows", Right: true},
	{Header: "files", Pipe: "data_files", Right: true},
	{Header: "size", Pipe: "size_bytes", Right: true},
	{Header: "last commit (utc)", Pipe: "last_commit_at"},
	{Header: "snapshot", Pipe: "snapshot_id", Right: true},
	{Header: "version", Pipe: "metadata_version", Right: true},
}

// RenderList prints rows; warehouse names the warehouse when it is empty
// (terminal only). On a terminal, tables that could not be read are listed
// with their errors under the table; in a pipe the last column, error, holds
// them.
func RenderList(o Output, warehouse string, rows []TableRow) error {
	if o.JSON {
		return o.IO.PrintJSON(rows)
	}
	tty := o.tty()
	if tty && len(rows) == 0 {
		_, err := iostreams.Fprintf(o.IO.Out, "no tables in %s\n", warehouse)
		return err
	}
	cols := listColumns
	if !tty {
		cols = append(slices.Clip(cols), iostreams.Column{Pipe: "error"})
	}
	t := o.IO.NewTable(cols...)
	var errs []string
	for _, r := range rows {
		if r.Error != "" && tty {
			errs = append(errs, r.Table+": "+r.Error)
			t.AddRow(r.Table, "-", "-", "-", "-", "-", "-")
			continue
		}
		var c []string
		if r.Error != "" { // pipe only
			c = []string{r.Table, "", "", "", "", "", "", r.Error}
		} else {
			c = []string{r.Table, formatInt(r.Rows), formatInt(r.DataFiles), formatBytes(r.SizeBytes, tty),
				formatTime(r.LastCommitAt, tty), optInt(r.SnapshotID, tty), formatInt(int64(r.MetadataVersion))}
			if !tty {
				c = append(c, "")
			}
		}
		t.AddRow(c...)
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, e := range errs {
		if _, err := iostreams.Fprintf(o.IO.Out, "error: %s\n", e); err != nil {
			return err
		}
	}
	return nil
}
