package tables

import (
	"context"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/profile"
)

// ShowOptions are the inputs of `tables show`.
type ShowOptions struct {
	Output
	Lake  *lake.Lake
	Table lake.TableName
}

// NewCmdShow builds `tables show`. runF replaces RunShow in tests; nil
// means RunShow.
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "show [NAME]",
		Short: "Show a table: location, schema, partition spec, sort order, contract, current snapshot, totals",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := &ShowOptions{Output: output(f)}
			var err error
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunShow)
		},
	}
}

// TableDetail is what `tables show` prints.
type TableDetail struct {
	Table            string `json:"table"`             // namespace.table
	Location         string `json:"location"`          // table root URI
	MetadataLocation string `json:"metadata_location"` // URI of the current metadata file, vN.metadata.json
	MetadataVersion  int    `json:"metadata_version"`  // N
	// Catalog is where the table's versions are kept: "metadata files",
	// or the REST catalog (Lake.Catalog).
	Catalog       string  `json:"catalog,omitempty"`
	FormatVersion int     `json:"format_version"` // Iceberg format version (2)
	TableUUID     string  `json:"table_uuid"`
	LastUpdatedAt UTCTime `json:"last_updated_at"` // last-updated-ms of the metadata
	Schema        Schema  `json:"schema"`
	PartitionSpec Spec    `json:"partition_spec"`
	SortOrder     Order   `json:"sort_order"`
	// Contract holds the timelake.* properties of the table contract
	// (docs/table-format.md, "Contract properties"), Maintenance the other
	// timelake.* ones (docs/maintenance.md; the load history as its
	// segment count), Properties all others.
	Contract        map[string]string `json:"contract"`
	Maintenance     map[string]string `json:"maintenance"`
	Properties      map[string]string `json:"properties"`
	CurrentSnapshot *SnapshotRow      `json:"current_snapshot"` // null without snapshots
	Totals          Totals            `json:"totals"`
	// Profiles are the source profiles (timelake.profile.*, docs/schema.md),
	// by name; ProfilesError says why they do not read (ingest refuses
	// every file while it is so).
	Profiles      []ProfileRow `json:"profiles"`
	ProfilesError string       `json:"profiles_error,omitempty"`
	// Duplicates says, under timelake.read-dedup, how many rows of a
	// series key and time another batch's row replaces and compaction has
	// not resolved yet (docs/maintenance.md); null when not looked at.
	Duplicates *lake.Duplicates `json:"duplicates"`
}

// ProfileRow is one source profile: its name, the keys it applies to and
// its settings (without match), as its properties write them.
type ProfileRow struct {
	Name     string            `json:"name"`
	Match    []string          `json:"match"`
	Settings map[string]string `json:"settings"`
}

// Schema is the current schema.
type Schema struct {
	SchemaID int      `json:"schema_id"`
	Columns  []Column `json:"columns"`
}

// Column is one top-level field of the schema; Type is the Iceberg type
// name (timestamptz, string, double, ...).
type Column struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
	Doc      string `json:"doc,omitempty"`
}

// Spec is the default partition spec.
type Spec struct {
	SpecID int         `json:"spec_id"`
	Fields []SpecField `json:"fields"` // empty: unpartitioned
}

// SpecField is one partition field; Expr is "day(time)", or the column
// name for identity.
type SpecField struct {
	FieldID   int    `json:"field_id"`
	Name      string `json:"name"`
	SourceID  int    `json:"source_id"`
	Source    string `json:"source"`
	Transform string `json:"transform"`
	Expr      string `json:"expr"`
}

// Order is the default sort order.
type Order struct {
	OrderID int          `json:"order_id"`
	Fields  []OrderField `json:"fields"` // empty: unsorted
}

// OrderField is one sort key; Expr is "device_id asc nulls-first".
type OrderField struct {
	SourceID  int    `json:"source_id"`
	Source    string `json:"source"`
	Transform string `json:"transform"`
	Direction string `json:"direction"`  // asc or desc
	NullOrder string `json:"null_order"` // nulls-first or nulls-last
	Expr      string `json:"expr"`
}

// Totals are the current snapshot's summary totals (0 without snapshots).
type Totals struct {
	Snapshots   int   `json:"snapshots"` // snapshots in the metadata, abandoned ones included
	Rows        int64 `json:"rows"`      // total-records
	DataFiles   int64 `json:"data_files"`
	DeleteFiles int64 `json:"delete_files"`
	SizeBytes   int64 `json:"size_bytes"` // total-files-size
}

// BuildTableDetail describes a table from its metadata, its version N and
// the URI of vN.metadata.json.
func BuildTableDetail(name lake.TableName, version int, metadataLocation string, meta table.Metadata) TableDetail {
	sc := meta.CurrentSchema()
	colName := func(id int) string {
		if f, ok := sc.FindFieldByID(id); ok {
			return f.Name
		}
		return iostreams.Sprintf("#%d", id)
	}
	d := TableDetail{
		Table: name.String(), Location: meta.Location(), MetadataLocation: metadataLocation,
		MetadataVersion: version, FormatVersion: meta.Version(), TableUUID: meta.TableUUID().String(),
		LastUpdatedAt: At(meta.LastUpdatedMillis()),
		Schema:        Schema{SchemaID: sc.ID, Columns: []Column{}},
		Contract:      map[string]string{}, Maintenance: map[string]string{}, Properties: map[string]string{},
	}
	for _, f := range sc.Fields() {
		d.Schema.Columns = append(d.Schema.Columns, Column{ID: f.ID, Name: f.Name, Type: f.Type.String(), Required: f.Required, Doc: f.Doc})
	}
	spec := meta.PartitionSpec()
	d.PartitionSpec = Spec{SpecID: spec.ID(), Fields: []SpecField{}}
	for _, pf := range spec.Fields() {
		src := colName(pf.SourceID())
		expr := pf.Transform.String() + "(" + src + ")"
		if _, ok := pf.Transform.(iceberg.IdentityTransform); ok {
			expr = src
		}
		d.PartitionSpec.Fields = append(d.PartitionSpec.Fields, SpecField{FieldID: pf.FieldID, Name: pf.Name,
			SourceID: pf.SourceID(), Source: src, Transform: pf.Transform.String(), Expr: expr})
	}
	so := meta.SortOrder()
	d.SortOrder = Order{OrderID: so.OrderID(), Fields: []OrderField{}}
	for _, sf := range so.Fields() {
		src := colName(sf.SourceID())
		term := src
		if _, ok := sf.Transform.(iceberg.IdentityTransform); !ok {
			term = sf.Transform.String() + "(" + src + ")"
		}
		d.SortOrder.Fields = append(d.SortOrder.Fields, OrderField{SourceID: sf.SourceID(), Source: src,
			Transform: sf.Transform.String(), Direction: string(sf.Direction), NullOrder: string(sf.NullOrder),
			Expr: term + " " + string(sf.Direction) + " " + string(sf.NullOrder)})
	}
	d.Profiles = []ProfileRow{}
	if set, err := profile.FromProperties(meta.Properties()); err != nil {
		d.ProfilesError = err.Error()
	} else {
		for _, p := range set {
			settings := maps.Clone(p.Values)
			delete(settings, profile.SettingMatch)
			d.Profiles = append(d.Profiles, ProfileRow{Name: p.Name, Match: p.Match, Settings: settings})
		}
	}
	for k, v := range meta.Properties() {
		switch {
		case profile.IsProperty(k):
			// listed with their profile
		case k == lake.PropTimeColumn || k == lake.PropSeriesKey || k == lake.PropChunk || k == lake.PropFormatVersion:
			d.Contract[k] = v
		case k == lake.PropLoadHistory || k == lake.PropLoadOutcomes:
			d.Maintenance[k] = plural(int64(len(strings.Split(v, ","))), "segment")
		case strings.HasPrefix(k, "timelake."):
			d.Maintenance[k] = v
		default:
			d.Properties[k] = v
		}
	}
	d.Totals.Snapshots = len(meta.Snapshots())
	if s := meta.CurrentSnapshot(); s != nil {
		r := snapshotRow(*s, s.SnapshotID, lake.InCurrentAncestry(meta))
		d.CurrentSnapshot = &r
		if s.Summary != nil {
			p := s.Summary.Properties
			d.Totals.Rows = summaryInt(p, "total-records")
			d.Totals.DataFiles = summaryInt(p, "total-data-files")
			d.Totals.DeleteFiles = summaryInt(p, "total-delete-files")
			d.Totals.SizeBytes = summaryInt(p, "total-files-size")
		}
	}
	return d
}

// RunShow loads the table and prints its description.
func RunShow(ctx context.Context, opts *ShowOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	d := BuildTableDetail(opts.Table, t.Version(), t.MetadataLocation(), t.Metadata())
	d.Catalog = opts.Lake.Catalog()
	dups, err := t.UnresolvedDuplicates(ctx)
	if err != nil {
		return err
	}
	d.Duplicates = &dups
	return RenderShow(opts.Output, d)
}

// RenderShow prints d. On a terminal: labelled sections (property values
// longer than 60 characters are shortened). In a pipe: one
// record per line, the record type first, then tab-separated values
// (docs/tables.md lists the record types).
func RenderShow(o Output, d TableDetail) error {
	if o.JSON {
		return o.IO.PrintJSON(d)
	}
	if o.tty() {
		return renderShowTTY(o.IO.Out, d)
	}
	var b strings.Builder
	rec := func(fields ...string) {
		for i, f := range fields {
			fields[i] = iostreams.Field(f)
		}
		b.WriteString(strings.Join(fields, "\t"))
		b.WriteByte('\n')
	}
	rec("table", d.Table)
	rec("location", d.Location)
	rec("metadata_location", d.MetadataLocation)
	rec("metadata_version", formatInt(int64(d.MetadataVersion)))
	if d.Catalog != "" {
		rec("catalog", d.Catalog)
	}
	rec("format_version", formatInt(int64(d.FormatVersion)))
	rec("table_uuid", d.TableUUID)
	rec("last_updated_at", d.LastUpdatedAt.machine())
	rec("schema_id", formatInt(int64(d.Schema.SchemaID)))
	for _, c := range d.Schema.Columns {
		rec("column", formatInt(int64(c.ID)), c.Name, c.Type, requiredWord(c.Required))
	}
	rec("partition_spec_id", formatInt(int64(d.PartitionSpec.SpecID)))
	for _, f := range d.PartitionSpec.Fields {
		rec("partition_field", f.Name, f.Expr)
	}
	rec("sort_order_id", formatInt(int64(d.SortOrder.OrderID)))
	for _, f := range d.SortOrder.Fields {
		rec("sort_field", f.Source, f.Transform, f.Direction, f.NullOrder)
	}
	for _, k := range slices.Sorted(maps.Keys(d.Contract)) {
		rec("contract", k, d.Contract[k])
	}
	for _, k := range slices.Sorted(maps.Keys(d.Maintenance)) {
		rec("maintenance", k, d.Maintenance[k])
	}
	for _, k := range slices.Sorted(maps.Keys(d.Properties)) {
		rec("property", k, d.Properties[k])
	}
	for _, p := range d.Profiles {
		rec("profile", p.Name, profile.SettingMatch, strings.Join(p.Match, ","))
		for _, k := range slices.Sorted(maps.Keys(p.Settings)) {
			rec("profile", p.Name, k, p.Settings[k])
		}
	}
	if d.ProfilesError != "" {
		rec("profiles_error", d.ProfilesError)
	}
	if dd := d.Duplicates; dd != nil && dd.ReadDedup {
		rec("duplicates", formatInt(dd.Rows), strings.Join(dd.Partitions, ","))
	}
	if s := d.CurrentSnapshot; s != nil {
		batch := ""
		if s.BatchID != nil {
			batch = *s.BatchID
		}
		rec("current_snapshot", formatInt(s.SnapshotID), s.CommittedAt.machine(), s.Operation, batch)
	}
	rec("snapshots", formatInt(int64(d.Totals.Snapshots)))
	rec("rows", formatInt(d.Totals.Rows))
	rec("data_files", formatInt(d.Totals.DataFiles))
	rec("delete_files", formatInt(d.Totals.DeleteFiles))
	rec("size_bytes", formatInt(d.Totals.SizeBytes))
	_, err := io.WriteString(o.IO.Out, b.String())
	return err
}

func requiredWord(req bool) string {
	if req {
		return "required"
	}
	return "optional"
}

func renderShowTTY(w io.Writer, d TableDetail) error {
	var b strings.Builder
	kv := func(rows [][2]string) {
		width := 0
		for _, r := range rows {
			width = max(width, len(r[0]))
		}
		for _, r := range rows {
			iostreams.Fprintf(&b, "%-*s  %s\n", width+1, r[0]+":", r[1])
		}
	}
	section := func(title string) { b.WriteString("\n" + title + "\n") }

	head := [][2]string{
		{"Table", d.Table},
		{"Location", d.Location},
		{"Metadata file", d.MetadataLocation},
		{"Metadata version", iostreams.Sprintf("v%d", d.MetadataVersion)},
	}
	if d.Catalog != "" {
		head = append(head, [2]string{"Catalog", d.Catalog})
	}
	kv(append(head, [][2]string{
		{"Format version", formatInt(int64(d.FormatVersion))},
		{"UUID", d.TableUUID},
		{"Last updated", d.LastUpdatedAt.terminal() + " UTC"},
	}...))

	section(iostreams.Sprintf("Schema (id %d)", d.Schema.SchemaID))
	var tb strings.Builder
	cols := iostreams.NewTablePrinter(&tb, true,
		iostreams.Column{Header: "id", Right: true}, iostreams.Column{Header: "name"},
		iostreams.Column{Header: "type"}, iostreams.Column{Header: "required"})
	for _, c := range d.Schema.Columns {
		req := ""
		if c.Required {
			req = "yes"
		}
		cols.AddRow(formatInt(int64(c.ID)), c.Name, c.Type, req)
	}
	if err := cols.Render(); err != nil {
		return err
	}
	b.WriteString(indent(tb.String()))

	section(iostreams.Sprintf("Partition spec (id %d)", d.PartitionSpec.SpecID))
	if len(d.PartitionSpec.Fields) == 0 {
		b.WriteString("  unpartitioned\n")
	}
	for _, f := range d.PartitionSpec.Fields {
		iostreams.Fprintf(&b, "  %s  (%s)\n", f.Expr, f.Name)
	}

	section(iostreams.Sprintf("Sort order (id %d)", d.SortOrder.OrderID))
	if len(d.SortOrder.Fields) == 0 {
		b.WriteString("  unsorted\n")
	}
	exprs := make([]string, len(d.SortOrder.Fields))
	for i, f := range d.SortOrder.Fields {
		exprs[i] = f.Expr
	}
	if len(exprs) > 0 {
		iostreams.Fprintf(&b, "  %s\n", strings.Join(exprs, ", "))
	}

	props := func(title string, m map[string]string) {
		section(title)
		if len(m) == 0 {
			b.WriteString("  none\n")
			return
		}
		rows := make([][]string, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			rows = append(rows, []string{k, ellipsis(m[k], 60)})
		}
		width := 0
		for _, r := range rows {
			width = max(width, len(r[0]))
		}
		for _, r := range rows {
			iostreams.Fprintf(&b, "  %-*s  %s\n", width, r[0], r[1])
		}
	}
	props("Timelake contract", d.Contract)
	if len(d.Maintenance) > 0 {
		props("Maintenance", d.Maintenance)
	}
	props("Properties", d.Properties)

	if len(d.Profiles) > 0 || d.ProfilesError != "" {
		section("Source profiles")
		if d.ProfilesError != "" {
			iostreams.Fprintf(&b, "  do not read: %s (ingest refuses every file until they are fixed)\n", d.ProfilesError)
		}
		for _, p := range d.Profiles {
			parts := []string{"match " + strings.Join(p.Match, ",")}
			for _, k := range slices.Sorted(maps.Keys(p.Settings)) {
				parts = append(parts, k+" "+p.Settings[k])
			}
			iostreams.Fprintf(&b, "  %s: %s\n", p.Name, strings.Join(parts, "; "))
		}
	}
	if dd := d.Duplicates; dd != nil {
		section("Corrections (timelake.read-dedup)")
		switch {
		case !dd.ReadDedup:
			b.WriteString("  off: rows of one series key and time are all kept\n")
		case dd.Rows == 0:
			b.WriteString("  on: no series key and time has rows of two batches left\n")
		default:
			iostreams.Fprintf(&b, "  on: %d rows are replaced by a newer batch's row of their series key and time but not resolved yet, in %s; compaction resolves them (readers that do not dedupe see both until then)\n",
				dd.Rows, strings.Join(dd.Partitions, ", "))
		}
	}

	section("Current snapshot")
	if s := d.CurrentSnapshot; s == nil {
		b.WriteString("  none (no data yet)\n")
	} else {
		batch := "-"
		if s.BatchID != nil {
			batch = *s.BatchID
		}
		iostreams.Fprintf(&b, "  %d  %s UTC  %s  batch %s\n", s.SnapshotID, s.CommittedAt.terminal(), s.Operation, batch)
	}

	section("Totals")
	iostreams.Fprintf(&b, "  %d rows in %d data files, %s; %d snapshots", d.Totals.Rows, d.Totals.DataFiles,
		iostreams.HumanBytes(d.Totals.SizeBytes), d.Totals.Snapshots)
	if d.Totals.DeleteFiles > 0 {
		iostreams.Fprintf(&b, "; %d delete files", d.Totals.DeleteFiles)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return b.String()
}
