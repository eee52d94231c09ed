package tables

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
)

// FilesOptions are the inputs of `tables files`.
type FilesOptions struct {
	Output
	Lake  *lake.Lake
	Table lake.TableName
}

// NewCmdFiles builds `tables files`. runF replaces RunFiles in tests; nil
// means RunFiles.
func NewCmdFiles(f *cmdutil.Factory, runF func(context.Context, *FilesOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "files [NAME]",
		Short: "List the data files of the current snapshot with partition, rows and size",
		Long: `List the live data files of the table's current snapshot, sorted by partition
and path, with their rows, size and the snapshot that added them. On a
terminal a last line sums them up per file and per partition, so a build-up
of small files is easy to see.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := &FilesOptions{Output: output(f)}
			var err error
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunFiles)
		},
	}
}

// DataFileEntry is a live data file and the snapshot that added it, as read
// from the current snapshot's manifests.
type DataFileEntry struct {
	SnapshotID int64
	File       iceberg.DataFile
}

// FileRow is one data file.
type FileRow struct {
	Path       string `json:"path"`      // full URI
	Partition  string `json:"partition"` // "time_day=2026-01-05"; "" when unpartitioned
	Rows       int64  `json:"rows"`
	SizeBytes  int64  `json:"size_bytes"`
	SnapshotID int64  `json:"snapshot_id"` // snapshot that added the file
	SpecID     int32  `json:"spec_id"`     // partition spec of the file
}

// BuildFileRows describes entries, sorted by partition, then by the order
// in which their snapshots were committed, then by path. The
// partition value is rendered with the spec's transforms (day -> date).
func BuildFileRows(meta table.Metadata, entries []DataFileEntry) []FileRow {
	rows := make([]FileRow, 0, len(entries))
	for _, e := range entries {
		f := e.File
		rows = append(rows, FileRow{Path: f.FilePath(), Partition: partitionLabel(meta, f), Rows: f.Count(),
			SizeBytes: f.FileSizeBytes(), SnapshotID: e.SnapshotID, SpecID: f.SpecID()})
	}
	seq := func(id int64) int64 {
		if s := meta.SnapshotByID(id); s != nil {
			return s.SequenceNumber
		}
		return 0
	}
	slices.SortFunc(rows, func(a, b FileRow) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(seq(a.SnapshotID), seq(b.SnapshotID)),
			cmp.Compare(a.Path, b.Path))
	})
	return rows
}

// partitionLabel renders a file's partition as name=value pairs joined by
// "/", like the data folder names.
func partitionLabel(meta table.Metadata, f iceberg.DataFile) string {
	spec := meta.PartitionSpecByID(int(f.SpecID()))
	if spec == nil {
		return ""
	}
	var parts []string
	for _, pf := range spec.Fields() {
		v, ok := f.Partition()[pf.FieldID]
		s := "null"
		if ok && v != nil {
			s = pf.Transform.ToHumanStr(v)
		}
		parts = append(parts, pf.Name+"="+s)
	}
	return strings.Join(parts, "/")
}

// ReadDataFiles reads the current snapshot's manifests and returns its live
// data files (delete files are left out); none for a table without
// snapshots.
func ReadDataFiles(ctx context.Context, t *lake.Table) ([]DataFileEntry, error) {
	s := t.Metadata().CurrentSnapshot()
	if s == nil {
		return nil, nil
	}
	fs, err := t.Iceberg().FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("files of %s: %w", t.Name(), err)
	}
	mfs, err := s.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("files of %s: read manifest list: %w", t.Name(), err)
	}
	var out []DataFileEntry
	for _, m := range mfs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("files of %s: read manifest %s: %w", t.Name(), m.FilePath(), err)
			}
			if e.DataFile().ContentType() == iceberg.EntryContentData {
				out = append(out, DataFileEntry{SnapshotID: e.SnapshotID(), File: e.DataFile()})
			}
		}
	}
	return out, nil
}

// RunFiles loads the table and prints its data files.
func RunFiles(ctx context.Context, opts *FilesOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	entries, err := ReadDataFiles(ctx, t)
	if err != nil {
		return err
	}
	return RenderFiles(opts.Output, opts.Table.String(), t.Location(), BuildFileRows(t.Metadata(), entries))
}

var fileColumns = []iostreams.Column{
	{Header: "partition"},
	{Header: "rows", Right: true},
	{Header: "size", Pipe: "size_bytes", Right: true},
	{Header: "snapshot", Pipe: "snapshot_id", Right: true},
	{Header: "path"},
}

// RenderFiles prints rows of table. On a terminal paths are shown relative
// to location (the table root) and a summary line follows.
func RenderFiles(o Output, table, location string, rows []FileRow) error {
	if o.JSON {
		return o.IO.PrintJSON(rows)
	}
	tty := o.tty()
	if tty && len(rows) == 0 {
		_, err := iostreams.Fprintf(o.IO.Out, "no data files in %s\n", table)
		return err
	}
	t := o.IO.NewTable(fileColumns...)
	var totalRows, totalBytes int64
	partitions := map[string]bool{}
	for _, r := range rows {
		path := r.Path
		if tty {
			path = strings.TrimPrefix(path, strings.TrimSuffix(location, "/")+"/")
		}
		t.AddRow(optString(r.Partition, tty), formatInt(r.Rows), formatBytes(r.SizeBytes, tty), formatInt(r.SnapshotID), path)
		totalRows += r.Rows
		totalBytes += r.SizeBytes
		partitions[r.Partition] = true
	}
	if err := t.Render(); err != nil {
		return err
	}
	if !tty {
		return nil
	}
	n := int64(len(rows))
	_, err := iostreams.Fprintf(o.IO.Out, "%s in %s, %s, %s; %.1f files per partition, %s per file on average\n",
		plural(n, "data file"), plural(int64(len(partitions)), "partition"), plural(totalRows, "row"), iostreams.HumanBytes(totalBytes),
		float64(n)/float64(len(partitions)), iostreams.HumanBytes(totalBytes/n))
	return err
}
