package tables

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/settings/quantity"
)

// MaintainOptions are the inputs of `tables maintain`.
type MaintainOptions struct {
	Output
	Lake    *lake.Lake
	Table   lake.TableName
	Budget  time.Duration // the round ends within it plus lake.MaintenanceSlack; 0: no bound
	DryRun  bool
	Orphans bool // look for orphan files now, not only once an hour
}

// NewCmdMaintain builds `tables maintain`. runF replaces RunMaintain in
// tests; nil means RunMaintain.
func NewCmdMaintain(f *cmdutil.Factory, runF func(context.Context, *MaintainOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "maintain [NAME]",
		Short: "Run one round of table maintenance now: compaction, snapshot expiry, orphan files",
		Long: `Run one round of the maintenance that ingest runs after loading
(docs/maintenance.md), and print what it did:

  1. compaction: the small data files of each partition are rewritten,
     sorted, into larger ones (size tiers; a partition whose files are all
     older than timelake.compact-cold-after into files of
     timelake.target-file-size), committed as one replace snapshot;
  2. snapshot expiry: snapshots older than timelake.snapshot-retention are
     expired, keeping the newest timelake.min-snapshots; their batch ids
     move into the load history in the same commit, and the files only they
     referenced are deleted;
  3. orphan files: files in data/ and metadata/ that nothing references and
     that are older than timelake.orphan-min-age are deleted (once an hour,
     or now with --orphans).

A table created by timelake before these settings existed first gets them.
The table's settings (its timelake.* properties, or the defaults) are printed
with where each comes from; change them with timelake tables alter. A table
whose settings keep ingest from maintaining it (not created by timelake and
no timelake.auto-maintain=true) is maintained here all the same.

Run it by hand, or from cron instead of inline maintenance: ingest with
--maintenance-budget 0, and this command every few minutes. Exit code 1 when
a step failed (what was done before is printed).`,
		Example: `  timelake tables maintain iot.readings --dry-run
  timelake tables maintain --env-file timelake.env --budget 2m
  */5 * * * * cd $HOME/timelake && timelake tables maintain --env-file timelake.env >> maintain.log 2>&1`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := f.Settings(cmd)
			if err != nil {
				return err
			}
			opts := &MaintainOptions{
				Output:  output(f),
				Budget:  settings.MaintainBudget.Get(r),
				DryRun:  settings.DryRun.Get(r),
				Orphans: settings.Orphans.Get(r),
			}
			if err := r.Err(); err != nil {
				return err
			}
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunMaintain)
		},
	}
	settings.Bind(cmd.Flags(), settings.TablesMaintain)
	return cmd
}

// maintainDoc is a round of maintenance (lake.MaintainReport) as `tables
// maintain` shows it: its --json document (docs/tables.md), which the
// terminal and the pipe print from as well. maintainDocOf builds it.
type maintainDoc struct {
	Table  string `json:"table"`
	DryRun bool   `json:"dry_run"`
	// Enabled says whether the table's settings let ingest maintain it,
	// Why why (tables maintain runs either way).
	Enabled bool   `json:"enabled"`
	Why     string `json:"why"`
	// Skipped says why nothing was done (gc.enabled=false).
	Skipped string `json:"skipped,omitempty"`
	// Upgraded names the properties set on a table created by timelake
	// before maintenance existed ([] when none).
	Upgraded []string `json:"upgraded"`
	// Compaction, Expiry and Orphans are null for a step that did not run
	// this round: the round was skipped, the budget ran out or a step
	// before it failed; orphan files are also looked for only once an
	// hour (or with --orphans).
	Compaction *compactionDoc `json:"compaction"`
	Expiry     *expiryDoc     `json:"expiry"`
	Orphans    *orphanDoc     `json:"orphans"`
	// Retention is what retention dropped (timelake.retention); null
	// when the table sets none, or the round stopped before it.
	Retention *retentionDoc `json:"retention"`
	// OrphansSkipped says why orphan files were not looked for this
	// round (Orphans null), and when they were last and will next be.
	OrphansSkipped *orphansSkippedDoc `json:"orphans_skipped,omitempty"`
	// Pending is set when --budget ran out with work left.
	Pending bool `json:"pending"`
	// Settings are the maintenance settings in effect.
	Settings        []settingRow `json:"settings"`
	MetadataVersion int          `json:"metadata_version"` // N of the vN.metadata.json after the round
	Seconds         float64      `json:"seconds"`
	// Error is why a step failed (the command exits 1); the report says
	// what was done before.
	Error string `json:"error,omitempty"`
}

// compactionDoc is what compaction did.
type compactionDoc struct {
	// SnapshotID is the replace snapshot; null when nothing was committed.
	SnapshotID *int64          `json:"snapshot_id"`
	Groups     []compactionRow `json:"groups"`
	// Dropped counts groups not committed because another writer
	// replaced one of their files meanwhile (nothing is lost).
	Dropped int `json:"dropped"`
	// Skipped says why compaction planned nothing (row-level delete
	// files of another engine); empty otherwise.
	Skipped string `json:"skipped,omitempty"`
	// Deferred counts groups left for the next round: the round's bound
	// on the bytes it rewrites was spent.
	Deferred int `json:"deferred"`
	// Idle says why nothing was planned, e.g. every file is at the target
	// size; empty when groups were planned or Skipped says why not.
	Idle string `json:"idle,omitempty"`
}

// retentionDoc is what retention dropped (or would).
type retentionDoc struct {
	Retention  string   `json:"retention"` // the property's value, e.g. 400d
	Cutoff     UTCTime  `json:"cutoff"`    // partitions that end before it go
	Partitions []string `json:"partitions"`
	Files      int      `json:"files"`
	Rows       int64    `json:"rows"`
	Bytes      int64    `json:"bytes"`
	// SnapshotID is the delete snapshot; null when nothing was committed.
	SnapshotID *int64 `json:"snapshot_id"`
	// Unjudged counts data files whose partition tells no time (another
	// partition spec): kept.
	Unjudged int `json:"unjudged,omitempty"`
}

// orphansSkippedDoc is why orphan files were not looked for in a round.
type orphansSkippedDoc struct {
	Reason string `json:"reason"`
	// LastChecked is when they were last looked for (null: never, or not
	// known because the round stopped first); NextCheck when a round
	// looks again (null when the round stopped first).
	LastChecked *UTCTime `json:"last_checked"`
	NextCheck   *UTCTime `json:"next_check"`
}

// compactionRow is one group of files of a partition rewritten together.
type compactionRow struct {
	Partition string `json:"partition"` // e.g. time_day=2026-01-05
	Reason    string `json:"reason"`    // tiered or cold
	Tier      int    `json:"tier"`      // the size tier merged (tiered groups)
	FilesIn   int    `json:"files_in"`
	BytesIn   int64  `json:"bytes_in"`
	Rows      int64  `json:"rows"`
	FilesOut  int    `json:"files_out"` // 0 in a dry run
	BytesOut  int64  `json:"bytes_out"` // 0 in a dry run
	// RowsReplaced counts the rows left out under timelake.read-dedup: a
	// newer batch's row has their series key and time.
	RowsReplaced int64 `json:"rows_replaced"`
}

// expiryDoc is what snapshot expiry did.
type expiryDoc struct {
	Expired        int `json:"expired"` // snapshots expired (or that would be)
	Kept           int `json:"kept"`    // snapshots left
	KeysRemembered int `json:"keys_remembered"`
	FilesDeleted   int `json:"files_deleted"`
}

// orphanDoc is what orphan file removal found.
type orphanDoc struct {
	Removed int      `json:"removed"` // files deleted (or that would be)
	Bytes   int64    `json:"bytes"`
	Young   int      `json:"young"` // unreferenced files kept: younger than timelake.orphan-min-age
	Left    int      `json:"left"`  // orphans found and not deleted (a failed delete, the round cut short)
	Files   []string `json:"files"` // relative to the table location
}

// settingRow is one maintenance setting in effect: the table property, its
// value as the property would say it, and where it comes from
// (lake.SourceProperty or lake.SourceDefault).
type settingRow struct {
	Property string `json:"property"`
	Value    string `json:"value"`
	Source   string `json:"source"`
}

// maintenanceKeys are the settings a report lists, in order.
var maintenanceKeys = []string{
	lake.PropAutoMaintain, lake.PropSnapshotRetention, lake.PropMinSnapshots, lake.PropMaxSnapshots, lake.PropDedupeWindow,
	lake.PropTargetFileSize, lake.PropCompactMinFiles, lake.PropCompactColdAfter, lake.PropOrphanMinAge,
	lake.PropReadDedup, lake.PropRetention, table.MetadataPreviousVersionsMaxKey,
}

// settingValues renders each setting of s as its property would say it
// (15m, 14d, 32MiB), by property name.
func settingValues(s lake.MaintenanceSettings) map[string]string {
	return map[string]string{
		lake.PropAutoMaintain:                strconvBool(s.Enabled),
		lake.PropSnapshotRetention:           ageText(s.SnapshotRetention),
		lake.PropMinSnapshots:                formatInt(int64(s.MinSnapshots)),
		lake.PropMaxSnapshots:                formatInt(int64(s.MaxSnapshots)),
		lake.PropDedupeWindow:                ageText(s.DedupeWindow),
		lake.PropTargetFileSize:              quantity.FormatSize(s.TargetFileSize),
		lake.PropCompactMinFiles:             formatInt(int64(s.CompactMinFiles)),
		lake.PropCompactColdAfter:            ageText(s.CompactColdAfter),
		lake.PropOrphanMinAge:                ageText(s.OrphanMinAge),
		lake.PropReadDedup:                   strconvBool(s.ReadDedup),
		lake.PropRetention:                   retentionText(s.Retention),
		table.MetadataPreviousVersionsMaxKey: formatInt(int64(s.MetadataVersions)),
	}
}

// settingRows lists the settings of s in effect, in a fixed order.
func settingRows(s lake.MaintenanceSettings) []settingRow {
	values := settingValues(s)
	rows := make([]settingRow, 0, len(maintenanceKeys))
	for _, k := range maintenanceKeys {
		src := s.Sources[k]
		if src == "" {
			src = lake.SourceDefault
		}
		rows = append(rows, settingRow{Property: k, Value: values[k], Source: src})
	}
	return rows
}

func strconvBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// retentionText is a retention as its property says it, "none" when off.
func retentionText(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	return ageText(d)
}

// ageText renders a duration the way table properties say it
// (quantity.FormatAge: 14d, 36h, 15m).
func ageText(d time.Duration) string { return quantity.FormatAge(d) }

// maintainDocOf renders one round of maintenance, rep as Table.Maintain
// returned it, as `tables maintain` shows it.
func maintainDocOf(rep lake.MaintainReport) maintainDoc {
	r := maintainDoc{Table: rep.Table.String(), DryRun: rep.DryRun, Enabled: rep.Settings.Enabled, Why: rep.Settings.Why,
		Skipped: rep.Skipped, Upgraded: append([]string{}, rep.Upgraded...), Pending: rep.Pending,
		Settings: settingRows(rep.Settings), MetadataVersion: rep.MetadataVersion, Seconds: rep.Took.Seconds(), Error: rep.Error}
	// A step that ran reports the version it worked on (Compact and
	// Expire, dry runs included).
	if c := rep.Compacted; c.Version != 0 {
		r.Compaction = &compactionDoc{Groups: []compactionRow{}, Dropped: c.Dropped, Skipped: c.Skipped, Deferred: c.Deferred}
		if c.Skipped == "" {
			r.Compaction.Idle = c.Idle
		}
		if id := c.SnapshotID; id != 0 {
			r.Compaction.SnapshotID = &id
		}
		for _, g := range c.Groups {
			r.Compaction.Groups = append(r.Compaction.Groups, compactionRow{Partition: g.Partition, Reason: g.Reason,
				Tier: g.Tier, FilesIn: g.FilesIn, BytesIn: g.BytesIn, Rows: g.Rows, FilesOut: g.FilesOut, BytesOut: g.BytesOut,
				RowsReplaced: g.Replaced})
		}
	}
	if rt := rep.Retention; rt != nil {
		r.Retention = &retentionDoc{Retention: ageText(rep.Settings.Retention), Cutoff: UTCTime{rt.Cutoff},
			Partitions: append([]string{}, rt.Partitions...), Files: rt.Files, Rows: rt.Rows, Bytes: rt.Bytes, Unjudged: rt.Unjudged}
		if id := rt.SnapshotID; id != 0 {
			r.Retention.SnapshotID = &id
		}
	}
	if e := rep.Expired; e.Version != 0 {
		r.Expiry = &expiryDoc{Expired: len(e.Expired), Kept: e.Kept, KeysRemembered: e.Remembered, FilesDeleted: e.FilesDeleted}
	}
	if o := rep.Orphans; o != nil {
		r.Orphans = &orphanDoc{Removed: len(o.Files), Bytes: o.Bytes, Young: o.Young, Left: o.Left, Files: append([]string{}, o.Files...)}
	}
	if rep.Orphans == nil && rep.Skipped == "" {
		r.OrphansSkipped = orphansSkipped(rep)
	}
	return r
}

// orphansSkipped says why a round that ran did not look for orphan files.
func orphansSkipped(rep lake.MaintainReport) *orphansSkippedDoc {
	o := &orphansSkippedDoc{}
	switch {
	case !rep.OrphansNext.IsZero():
		o.Reason = iostreams.Sprintf("not due: orphan files are looked for at most once every %s (--orphans looks now)", ageText(lake.OrphanCheckInterval))
		o.NextCheck = &UTCTime{rep.OrphansNext.UTC()}
	case rep.Error != "":
		o.Reason = "a step before it failed"
	case rep.Pending:
		o.Reason = "the budget ran out before it"
	default:
		o.Reason = "the round stopped before it"
	}
	if !rep.OrphansCheckedAt.IsZero() {
		o.LastChecked = &UTCTime{rep.OrphansCheckedAt.UTC()}
	}
	return o
}

// RunMaintain loads the table, runs one round of maintenance (forced: also
// on a table whose settings do not enable it) and prints what it did. When
// a step failed, it prints what was done before and returns the error.
func RunMaintain(ctx context.Context, opts *MaintainOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	rep, err := t.Maintain(ctx, lake.MaintainOptions{Budget: opts.Budget, Force: true, DryRun: opts.DryRun, Orphans: opts.Orphans})
	if err != nil && rep.Settings.Sources == nil {
		return err // the table could not even be read again: nothing to report
	}
	if rerr := RenderMaintain(opts.Output, rep); rerr != nil && err == nil {
		return rerr
	}
	return err
}

// RenderMaintain prints one round of maintenance, rep as Table.Maintain
// returned it: one JSON document with --json; on a terminal a summary line
// and a section per step; in a pipe one tab-separated record per line, its
// type first (docs/tables.md).
func RenderMaintain(o Output, rep lake.MaintainReport) error {
	r := maintainDocOf(rep)
	switch {
	case o.JSON:
		return o.IO.PrintJSON(r)
	case o.tty():
		return renderMaintainTTY(o.IO.Out, r)
	}
	var b strings.Builder
	rec := func(fields ...string) {
		for i, f := range fields {
			fields[i] = iostreams.Field(f)
		}
		b.WriteString(strings.Join(fields, "\t"))
		b.WriteByte('\n')
	}
	rec("table", r.Table)
	rec("dry_run", strconvBool(r.DryRun))
	rec("enabled", strconvBool(r.Enabled), r.Why)
	if r.Skipped != "" {
		rec("skipped", r.Skipped)
	}
	for _, p := range r.Upgraded {
		rec("upgraded", p)
	}
	if rt := r.Retention; rt != nil {
		rec("retention", rt.Retention, rt.Cutoff.machine(), formatInt(int64(len(rt.Partitions))), formatInt(int64(rt.Files)), formatInt(rt.Rows), formatInt(rt.Bytes))
		for _, p := range rt.Partitions {
			rec("dropped_partition", p)
		}
	}
	if c := r.Compaction; c != nil {
		for _, g := range c.Groups {
			rec("compacted", g.Partition, g.Reason, formatInt(int64(g.Tier)), formatInt(int64(g.FilesIn)), formatInt(g.BytesIn),
				formatInt(g.Rows), formatInt(int64(g.FilesOut)), formatInt(g.BytesOut), formatInt(g.RowsReplaced))
		}
		if c.SnapshotID != nil {
			rec("compaction_snapshot_id", formatInt(*c.SnapshotID))
		}
		if c.Skipped != "" {
			rec("compaction_skipped", c.Skipped)
		}
		if c.Idle != "" {
			rec("compaction_idle", c.Idle)
		}
		if c.Deferred > 0 {
			rec("compaction_deferred", formatInt(int64(c.Deferred)))
		}
	}
	if e := r.Expiry; e != nil {
		rec("expired", formatInt(int64(e.Expired)), formatInt(int64(e.Kept)), formatInt(int64(e.KeysRemembered)), formatInt(int64(e.FilesDeleted)))
	}
	if or := r.Orphans; or != nil {
		rec("orphans", formatInt(int64(or.Removed)), formatInt(or.Bytes), formatInt(int64(or.Young)))
		for _, f := range or.Files {
			rec("orphan", f)
		}
	}
	if os := r.OrphansSkipped; os != nil {
		rec("orphans_skipped", os.Reason, formatTime(os.LastChecked, false), formatTime(os.NextCheck, false))
	}
	for _, s := range r.Settings {
		rec("setting", s.Property, s.Value, s.Source)
	}
	rec("pending", strconvBool(r.Pending))
	rec("metadata_version", formatInt(int64(r.MetadataVersion)))
	rec("seconds", iostreams.Sprintf("%.3f", r.Seconds))
	_, err := io.WriteString(o.IO.Out, b.String())
	return err
}

// maintainSummary is the first line on a terminal: what the round did.
func maintainSummary(r maintainDoc) string {
	if r.Skipped != "" {
		return iostreams.Sprintf("%s: nothing done: %s", r.Table, r.Skipped)
	}
	would := func(did, will string) string {
		if r.DryRun {
			return will
		}
		return did
	}
	var parts []string
	if rt := r.Retention; rt != nil && len(rt.Partitions) > 0 {
		parts = append(parts, iostreams.Sprintf("%s %s older than %s", would("dropped", "would drop"), plural(int64(len(rt.Partitions)), "partition"), rt.Retention))
	}
	if c := r.Compaction; c != nil {
		var in, out int
		var bytesIn, bytesOut int64
		for _, g := range c.Groups {
			in, out, bytesIn, bytesOut = in+g.FilesIn, out+g.FilesOut, bytesIn+g.BytesIn, bytesOut+g.BytesOut
		}
		switch {
		case in == 0:
			parts = append(parts, "nothing to compact")
		case r.DryRun:
			parts = append(parts, iostreams.Sprintf("would compact %s (%s) in %s",
				plural(int64(in), "file"), iostreams.HumanBytes(bytesIn), plural(int64(len(c.Groups)), "group")))
		default:
			parts = append(parts, iostreams.Sprintf("compacted %s (%s) into %d (%s)",
				plural(int64(in), "file"), iostreams.HumanBytes(bytesIn), out, iostreams.HumanBytes(bytesOut)))
		}
	}
	switch e := r.Expiry; {
	case e == nil:
	case e.Expired == 0:
		parts = append(parts, "no snapshot to expire")
	default:
		parts = append(parts, iostreams.Sprintf("%s %s", would("expired", "would expire"), plural(int64(e.Expired), "snapshot")))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing done")
	}
	switch or := r.Orphans; {
	case or != nil && or.Removed == 0:
		parts = append(parts, "no orphan files")
	case or != nil:
		parts = append(parts, iostreams.Sprintf("%s %s", would("removed", "would remove"), plural(int64(or.Removed), "orphan file")))
	}
	s := iostreams.Sprintf("%s: %s; metadata v%d, took %.1fs", r.Table, strings.Join(parts, ", "), r.MetadataVersion, r.Seconds)
	if r.Pending {
		s += "; the budget ran out with work left: run it again"
	}
	return s
}

// orphanListMax bounds the orphan files a terminal lists.
const orphanListMax = 10

func renderMaintainTTY(w io.Writer, r maintainDoc) error {
	var b strings.Builder
	section := func(title string) { b.WriteString("\n" + title + "\n") }
	b.WriteString(maintainSummary(r) + "\n")
	if !r.Enabled {
		iostreams.Fprintf(&b, "note: the settings of %s keep ingest from maintaining it (%s); timelake tables alter %s --set %s=true lets it\n",
			r.Table, r.Why, r.Table, lake.PropAutoMaintain)
	}
	if len(r.Upgraded) > 0 {
		verb := "set"
		if r.DryRun {
			verb = "would set"
		}
		iostreams.Fprintf(&b, "upgraded: a table created before maintenance existed; %s %s\n", verb, strings.Join(r.Upgraded, ", "))
	}
	notDone := "  not done this round (the round stopped before it)\n"
	if r.Pending {
		notDone = "  not done this round (the budget ran out before it)\n"
	}
	if rt := r.Retention; rt != nil && r.Skipped == "" {
		title := iostreams.Sprintf("Retention (%s: partitions that end before %s)", rt.Retention, rt.Cutoff.terminal())
		if id := rt.SnapshotID; id != nil {
			title += iostreams.Sprintf(" (delete snapshot %d)", *id)
		}
		section(title)
		switch {
		case len(rt.Partitions) == 0:
			b.WriteString("  no partition is older\n")
		default:
			verb := "dropped"
			if r.DryRun {
				verb = "would drop"
			}
			iostreams.Fprintf(&b, "  %s %s: %s (%s, %d rows, %s); their files are deleted when the snapshots before expire\n", verb,
				plural(int64(len(rt.Partitions)), "partition"), strings.Join(rt.Partitions, ", "), plural(int64(rt.Files), "file"), rt.Rows, iostreams.HumanBytes(rt.Bytes))
		}
		if rt.Unjudged > 0 {
			iostreams.Fprintf(&b, "  %s kept: their partition tells no time (another partition spec)\n", plural(int64(rt.Unjudged), "data file"))
		}
	}
	if r.Skipped == "" {
		switch c := r.Compaction; {
		case c == nil:
			section("Compaction")
			b.WriteString(notDone)
		case c.Skipped != "":
			section("Compaction")
			iostreams.Fprintf(&b, "  skipped: %s\n", c.Skipped)
		case len(c.Groups) == 0:
			section("Compaction")
			iostreams.Fprintf(&b, "  nothing to do: %s\n", c.Idle)
		case len(c.Groups) > 0:
			title := "Compaction"
			if id := c.SnapshotID; id != nil {
				title += iostreams.Sprintf(" (replace snapshot %d)", *id)
			}
			section(title)
			var tb strings.Builder
			t := iostreams.NewTablePrinter(&tb, true,
				iostreams.Column{Header: "partition"}, iostreams.Column{Header: "reason"}, iostreams.Column{Header: "tier", Right: true},
				iostreams.Column{Header: "files in", Right: true}, iostreams.Column{Header: "size in", Right: true},
				iostreams.Column{Header: "rows", Right: true}, iostreams.Column{Header: "files out", Right: true},
				iostreams.Column{Header: "size out", Right: true})
			for _, g := range c.Groups {
				filesOut, sizeOut, tier := "-", "-", "-"
				if !r.DryRun {
					filesOut, sizeOut = formatInt(int64(g.FilesOut)), iostreams.HumanBytes(g.BytesOut)
				}
				if g.Reason == "tiered" {
					tier = formatInt(int64(g.Tier))
				}
				t.AddRow(g.Partition, g.Reason, tier, formatInt(int64(g.FilesIn)), iostreams.HumanBytes(g.BytesIn),
					formatInt(g.Rows), filesOut, sizeOut)
			}
			if err := t.Render(); err != nil {
				return err
			}
			b.WriteString(indent(tb.String()))
			var replaced int64
			for _, g := range c.Groups {
				replaced += g.RowsReplaced
			}
			if replaced > 0 {
				iostreams.Fprintf(&b, "  %d rows replaced by a newer batch's row of their series key and time (timelake.read-dedup)\n", replaced)
			}
			if c.Dropped > 0 {
				iostreams.Fprintf(&b, "  %s dropped: another writer replaced their files meanwhile (nothing lost)\n",
					plural(int64(c.Dropped), "group"))
			}
			if c.Deferred > 0 {
				iostreams.Fprintf(&b, "  %s left for the next round: this round's bound on the bytes it rewrites is spent, or their rewrite would not end within its budget\n",
					plural(int64(c.Deferred), "more group"))
			}
		}
		section("Snapshot expiry")
		switch e := r.Expiry; {
		case e == nil:
			b.WriteString(notDone)
		case e.Expired == 0:
			iostreams.Fprintf(&b, "  none to expire (%d kept)\n", e.Kept)
		case r.DryRun:
			iostreams.Fprintf(&b, "  %s would expire (%d kept); their batch ids would move into the load history\n",
				plural(int64(e.Expired), "snapshot"), e.Kept)
		default:
			iostreams.Fprintf(&b, "  %s expired (%d kept); %s moved into the load history; %s deleted\n",
				plural(int64(e.Expired), "snapshot"), e.Kept, plural(int64(e.KeysRemembered), "batch id"), plural(int64(e.FilesDeleted), "file"))
		}
		section("Orphan files")
		switch or := r.Orphans; {
		case or == nil && (r.Pending || r.Error != ""):
			b.WriteString(notDone)
		case or == nil:
			last := "never looked for before"
			if os := r.OrphansSkipped; os != nil && os.LastChecked != nil {
				last = "last looked for at " + os.LastChecked.Format(time.RFC3339)
			}
			next := ""
			if os := r.OrphansSkipped; os != nil && os.NextCheck != nil {
				next = ", next at " + os.NextCheck.Format(time.RFC3339)
			}
			iostreams.Fprintf(&b, "  not looked for this round: %s%s (at most once an hour; --orphans looks now)\n", last, next)
		case or.Removed == 0:
			iostreams.Fprintf(&b, "  none (%d unreferenced but younger than %s, kept)\n", or.Young, settingValue(r, lake.PropOrphanMinAge))
		default:
			verb := "removed"
			if r.DryRun {
				verb = "would be removed"
			}
			iostreams.Fprintf(&b, "  %s %s (%s); %d younger than %s kept\n", plural(int64(or.Removed), "file"), verb,
				iostreams.HumanBytes(or.Bytes), or.Young, settingValue(r, lake.PropOrphanMinAge))
			for i, f := range or.Files {
				if i == orphanListMax {
					iostreams.Fprintf(&b, "  ... and %d more (--json lists them all)\n", len(or.Files)-orphanListMax)
					break
				}
				iostreams.Fprintf(&b, "  %s\n", f)
			}
		}
	}
	by := "on"
	if !r.Enabled {
		by = "off"
	}
	section(iostreams.Sprintf("Settings (maintenance by ingest: %s, %s)", by, r.Why))
	var tb strings.Builder
	t := iostreams.NewTablePrinter(&tb, true, iostreams.Column{Header: "property"}, iostreams.Column{Header: "value"},
		iostreams.Column{Header: "from"})
	for _, s := range r.Settings {
		t.AddRow(s.Property, s.Value, s.Source)
	}
	if err := t.Render(); err != nil {
		return err
	}
	b.WriteString(indent(tb.String()))
	_, err := io.WriteString(w, b.String())
	return err
}

// settingValue is the value in effect of one setting of r.
func settingValue(r maintainDoc, property string) string {
	for _, s := range r.Settings {
		if s.Property == property {
			return s.Value
		}
	}
	return ""
}
