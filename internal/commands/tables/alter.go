package tables

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/profile"
	"github.com/timelake/timelake/internal/settings"
)

// AlterOptions are the inputs of `tables alter`.
type AlterOptions struct {
	Output
	Lake   *lake.Lake
	Table  lake.TableName
	Set    map[string]string // properties to set
	Unset  []string          // properties to remove, sorted
	DryRun bool
}

// NewCmdAlter builds `tables alter`. runF replaces RunAlter in tests; nil
// means RunAlter.
func NewCmdAlter(f *cmdutil.Factory, runF func(context.Context, *AlterOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alter [NAME] --set KEY=VALUE ... [--unset KEY ...]",
		Short: "Set or remove table properties: maintenance settings (timelake.*) and Iceberg's",
		Long: `Set and remove table properties in one commit, made through the same
conditional commit as appends: it applies to the newest version and never
undoes another writer's commit. It prints each property before and after.

timelake.* properties are the maintenance settings (docs/maintenance.md)
and the loading ones, such as timelake.evolve, the schema changes landing
files may bring (docs/schema.md):
` + knownProperties("  ") + `
Source profiles (docs/schema.md) are timelake.profile.<name>.<setting>,
with these settings:
` + profileSettings("  ") + `
--unset timelake.profile.<name> removes a whole profile; the profiles after
the change are checked as a set (each has a match, no two prefixes
overlap). Values are checked; an unknown timelake.* key, or one of the table
contract (timelake.time-column, timelake.series-key, timelake.chunk, ...), is
refused with exit code 2, as are Iceberg's reserved keys (format-version,
uuid, ...). Other keys (write.*, history.*, commit.*, ...) are Iceberg
properties and are passed through as they are.`,
		Example: `  timelake tables alter iot.readings --set timelake.snapshot-retention=1h --set timelake.dedupe-window=30d
  timelake tables alter --unset timelake.snapshot-retention --dry-run
  timelake tables alter other.table --set timelake.auto-maintain=true`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &AlterOptions{Output: output(f), DryRun: settings.DryRun.Get(r)}
			set, unset := settings.SetProperty.Get(r), settings.UnsetProperty.Get(r)
			if err := r.Err(); err != nil {
				return err
			}
			if opts.Set, opts.Unset, err = ParseAlter(set, unset); err != nil {
				return err
			}
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunAlter)
		},
	}
	settings.Bind(cmd.Flags(), settings.TablesAlter)
	return cmd
}

// settable are the timelake.* properties tables alter may set, with what
// each accepts: maintenance settings and loading ones.
func settable() map[string]string {
	out := maps.Clone(lake.MaintenanceProperties)
	maps.Copy(out, lake.LoadProperties)
	return out
}

// profileSettings lists the settings of a source profile, with what each
// accepts, one a line behind indent.
func profileSettings(indent string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(profile.Settings)) {
		iostreams.Fprintf(&b, "%s%-28s %s\n", indent, k, profile.Settings[k])
	}
	return b.String()
}

// knownProperties lists the timelake.* properties that can be set, with what
// each accepts, one a line behind indent.
func knownProperties(indent string) string {
	var b strings.Builder
	props := settable()
	for _, k := range slices.Sorted(maps.Keys(props)) {
		iostreams.Fprintf(&b, "%s%-28s %s\n", indent, k, props[k])
	}
	return b.String()
}

// ParseAlter reads --set KEY=VALUE and --unset KEY and checks them before
// anything is loaded. Errors are usage errors (exit 2) naming the key: a
// malformed pair, a key given twice or both set and unset, an empty value,
// an Iceberg reserved property, a timelake.* key that is unknown or part of
// the table contract (the message lists those that can be set), a bad
// value (lake.ValidateProperty), or nothing to change.
func ParseAlter(set, unset []string) (map[string]string, []string, error) {
	out := map[string]string{}
	for _, kv := range set {
		k, v, _ := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, dup := out[k]; dup {
			return nil, nil, cmdutil.UsageErrorf("--set %s is given twice", k)
		}
		if v == "" {
			return nil, nil, cmdutil.UsageErrorf("--set %s=: empty value (--unset %s removes the property)", k, k)
		}
		if profile.IsProperty(k) {
			if err := profile.ValidateProperty(k, v); err != nil {
				return nil, nil, cmdutil.UsageErrorf("--set %s", err)
			}
			out[k] = v
			continue
		}
		if err := checkKey("--set", k); err != nil {
			return nil, nil, err
		}
		if err := lake.ValidateProperty(k, v); err != nil {
			return nil, nil, cmdutil.UsageErrorf("--set %s", err)
		}
		if k == table.ParquetCompressionKey {
			v = lake.CanonicalParquetCodec(v) // ZSTD: zstd, as iceberg-go's writer reads it too
		}
		out[k] = v
	}
	var keys []string
	for _, k := range unset {
		k = strings.TrimSpace(k)
		if _, both := out[k]; both {
			return nil, nil, cmdutil.UsageErrorf("%s is given to both --set and --unset", k)
		}
		if slices.Contains(keys, k) {
			return nil, nil, cmdutil.UsageErrorf("--unset %s is given twice", k)
		}
		if profile.IsProperty(k) {
			// A setting of a profile, or a whole profile (expanded to its
			// properties when the table is loaded).
			if err := profile.CheckKey(k); err != nil && !profile.IsProfileName(k) {
				return nil, nil, cmdutil.UsageErrorf("--unset %s", err)
			}
			keys = append(keys, k)
			continue
		}
		if err := checkKey("--unset", k); err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
	}
	if len(out) == 0 && len(keys) == 0 {
		return nil, nil, cmdutil.UsageErrorf("nothing to change: give --set KEY=VALUE or --unset KEY")
	}
	slices.Sort(keys)
	return out, keys, nil
}

// checkKey refuses the keys no command may change: Iceberg's reserved
// properties (they describe the metadata, table.ReservedProperties) and
// timelake.* keys that are not maintenance settings.
func checkKey(flag, k string) error {
	if k == "" {
		return cmdutil.UsageErrorf("%s: empty property name", flag)
	}
	if slices.Contains(table.ReservedProperties[:], k) {
		return cmdutil.UsageErrorf("%s %s: reserved by Iceberg (it describes the table metadata), not a property", flag, k)
	}
	if _, ok := settable()[k]; ok {
		return nil
	}
	if !strings.HasPrefix(k, "timelake.") {
		// A timelake setting without its prefix would be an Iceberg
		// property that nothing reads.
		if meant := nearestProperty("timelake." + k); meant != "" {
			return cmdutil.UsageErrorf("%s %s: not a property timelake reads: timelake's settings start with timelake.; did you mean %s?", flag, k, meant)
		}
		return nil
	}
	why := "unknown property"
	if meant := nearestProperty(k); meant != "" {
		why += "; did you mean " + meant + "?"
	}
	switch err := lake.ValidateProperty(k, "x"); {
	case k == lake.PropLoadHistory:
		why = "the load history's segment list, kept by timelake"
	case k == lake.PropLoadOutcomes:
		why = "the outcome log's segment list, kept by timelake"
	case err != nil && strings.Contains(err.Error(), "cannot be changed"):
		why = "part of the table contract, set by timelake when the table is created"
	}
	return cmdutil.UsageErrorf("%s %s: %s (the timelake.* properties that can be set: %s)", flag, k, why,
		strings.Join(slices.Sorted(maps.Keys(settable())), ", "))
}

// nearestProperty is the timelake.* property that can be set nearest to k
// (within a few edits, Levenshtein distance: one for a short name, up to
// three for a long one), or "".
func nearestProperty(k string) string {
	name := strings.TrimPrefix(k, "timelake.")
	best, bestDist := "", min(3, len(name)/5)+1
	for _, p := range slices.Sorted(maps.Keys(settable())) {
		if d := levenshtein.ComputeDistance(name, strings.TrimPrefix(p, "timelake.")); d < bestDist {
			best, bestDist = p, d
		}
	}
	return best
}

// PropertyChange is one property named by tables alter: its value before
// and after (null when not set).
type PropertyChange struct {
	Property string  `json:"property"`
	Before   *string `json:"before"`
	After    *string `json:"after"`
	Changed  bool    `json:"changed"`
	// DefaultBefore and DefaultAfter are the values a maintenance
	// setting takes when its property is not set (the terminal shows them).
	DefaultBefore string `json:"-"`
	DefaultAfter  string `json:"-"`
}

// AlterReport is the --json document of `tables alter`.
type AlterReport struct {
	Table      string           `json:"table"`
	DryRun     bool             `json:"dry_run"`
	Version    int              `json:"version"` // the metadata version after the command
	Changed    int              `json:"changed"` // properties changed (or that would be)
	Properties []PropertyChange `json:"properties"`
}

// BuildAlterReport compares the properties named by set and unset in
// before and after (after: what the commit left, or, in a dry run, before
// with the change applied).
func BuildAlterReport(table string, dryRun bool, version int, before, after iceberg.Properties, set map[string]string, unset []string) AlterReport {
	r := AlterReport{Table: table, DryRun: dryRun, Version: version, Properties: []PropertyChange{}}
	defaultsBefore := settingValues(lake.MaintenanceSettingsOf(before))
	defaultsAfter := settingValues(lake.MaintenanceSettingsOf(after))
	for _, k := range slices.Sorted(slices.Values(append(slices.Collect(maps.Keys(set)), unset...))) {
		c := PropertyChange{Property: k, Before: lookup(before, k), After: lookup(after, k)}
		c.Changed = (c.Before == nil) != (c.After == nil) || (c.Before != nil && *c.Before != *c.After)
		if slices.Contains(maintenanceKeys, k) {
			c.DefaultBefore, c.DefaultAfter = defaultsBefore[k], defaultsAfter[k]
		}
		if c.Changed {
			r.Changed++
		}
		r.Properties = append(r.Properties, c)
	}
	return r
}

func lookup(p iceberg.Properties, k string) *string {
	if v, ok := p[k]; ok {
		return &v
	}
	return nil
}

// applied is props with set and unset applied.
func applied(props iceberg.Properties, set map[string]string, unset []string) iceberg.Properties {
	out := maps.Clone(props)
	if out == nil {
		out = iceberg.Properties{}
	}
	for _, k := range unset {
		delete(out, k)
	}
	maps.Copy(out, set)
	return out
}

// RunAlter loads the table, commits the property change (unless DryRun or
// nothing changes) and prints each property before and after.
func RunAlter(ctx context.Context, opts *AlterOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	before := t.Properties()
	opts.Unset = expandProfiles(before, opts.Unset)
	after := applied(before, opts.Set, opts.Unset)
	if err := checkAltered(t, after); err != nil {
		return err
	}
	if !opts.DryRun {
		if err := t.SetProperties(ctx, opts.Set, opts.Unset); err != nil {
			return err
		}
		after = t.Properties()
	}
	return RenderAlter(opts.Output, BuildAlterReport(opts.Table.String(), opts.DryRun, t.Version(), before, after, opts.Set, opts.Unset))
}

// expandProfiles replaces each timelake.profile.<name> of unset by the
// properties of that profile in props.
func expandProfiles(props iceberg.Properties, unset []string) []string {
	var out []string
	for _, k := range unset {
		if profile.IsProfileName(k) {
			out = append(out, profile.Keys(props, strings.TrimPrefix(k, profile.PropertyPrefix))...)
			continue
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkAltered refuses properties that are each fine but not together:
// source profiles that do not read as a set (one without a match, two
// whose prefixes overlap), source columns the table cannot fill (one name
// for both, the time column, a series key column, a column of another
// type: lake.Table.CheckSourceColumns), timelake.read-dedup on a
// table without a series key (every row of one time would be one
// reading), and a timelake.max-snapshots below timelake.min-snapshots
// (the newest min-snapshots are always kept), a Parquet codec or level no
// data file can be written with (an unknown codec, a gzip level of 10).
// Usage errors.
func checkAltered(t *lake.Table, after iceberg.Properties) error {
	if _, err := profile.FromProperties(after); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if err := lake.CheckParquetCompression(after); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if err := t.CheckSourceColumns(after[lake.PropSourceColumn], after[lake.PropLoadTimeColumn]); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if v, _ := strconv.ParseBool(after[lake.PropReadDedup]); v && len(t.Contract().SeriesKey) == 0 {
		return cmdutil.UsageErrorf("%s=true needs a series key: %s has none, so every row of one time would be one reading", lake.PropReadDedup, t.Name())
	}
	if s := lake.MaintenanceSettingsOf(after); s.MaxSnapshots < s.MinSnapshots {
		// The newest min-snapshots are always kept: a lower maximum
		// would bound nothing.
		return cmdutil.UsageErrorf("%s=%d is below %s=%d: expiry always keeps the newest %d snapshots, so the maximum would not hold; "+
			"set %s to at least %d, or lower %s", lake.PropMaxSnapshots, s.MaxSnapshots, lake.PropMinSnapshots, s.MinSnapshots, s.MinSnapshots,
			lake.PropMaxSnapshots, s.MinSnapshots, lake.PropMinSnapshots)
	}
	return nil
}

// RenderAlter prints r: one JSON document with --json; on a terminal a
// summary line and the properties before and after; in a pipe a header and
// one row per property (property, before, after, changed; empty when not
// set).
func RenderAlter(o Output, r AlterReport) error {
	if o.JSON {
		return o.IO.PrintJSON(r)
	}
	tty := o.tty()
	if tty {
		n := iostreams.Sprintf("%d properties", r.Changed)
		if r.Changed == 1 {
			n = "1 property"
		}
		var head string
		switch {
		case r.DryRun:
			head = iostreams.Sprintf("%s: %s would change (dry run; metadata v%d)", r.Table, n, r.Version)
		case r.Changed == 0:
			head = iostreams.Sprintf("%s: nothing to change (metadata v%d)", r.Table, r.Version)
		default:
			head = iostreams.Sprintf("%s: %s changed (metadata v%d)", r.Table, n, r.Version)
		}
		if _, err := iostreams.Fprintln(o.IO.Out, head); err != nil {
			return err
		}
	}
	t := o.IO.NewTable(iostreams.Column{Header: "property"}, iostreams.Column{Header: "before"},
		iostreams.Column{Header: "after"}, iostreams.Column{Header: "changed"})
	for _, c := range r.Properties {
		before, after := optPtr(c.Before), optPtr(c.After)
		if tty {
			before, after = propertyText(c.Before, c.DefaultBefore), propertyText(c.After, c.DefaultAfter)
		}
		changed := strconvBool(c.Changed)
		switch {
		case tty && c.Changed:
			changed = "yes"
		case tty:
			changed = "no"
		}
		t.AddRow(c.Property, before, after, changed)
	}
	return t.Render()
}

// propertyText is a property value for a terminal: the value, or "not set"
// with the default that then applies.
func propertyText(v *string, def string) string {
	switch {
	case v != nil:
		return *v
	case def != "":
		return "not set (default " + def + ")"
	}
	return "not set"
}
