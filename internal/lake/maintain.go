package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/settings/quantity"
	"github.com/timelake/timelake/internal/storage"
)

// Maintenance keeps a table as small and fast to read on day 300 as on day
// 1 (docs/maintenance.md): it compacts small data files (compact.go),
// expires snapshots past their retention while the load history keeps their
// keys (expire.go, history.go), keeps only a few metadata versions
// (write.metadata.previous-versions-max) and removes orphan files
// (orphans.go). ingest runs it after its commits, within a time budget;
// `timelake tables maintain` runs it by hand or from cron. What a round did
// is its MaintainReport (maintainreport.go), the one report of a round that
// every output renders.

// Table properties of maintenance (with those of compaction, the load
// history and orphan removal). Timelake's own names where it has them.
const (
	PropAutoMaintain      = "timelake.auto-maintain"
	PropSnapshotRetention = "timelake.snapshot-retention"
	PropMinSnapshots      = "timelake.min-snapshots"
	// PropMaxSnapshots bounds the snapshots the metadata holds however
	// many the retention would keep (a backlog loaded at 100 files a
	// second): the oldest beyond it are expired before their retention,
	// their files deleted once past it (lake.ExpireOptions.RetainAtMost).
	PropMaxSnapshots = "timelake.max-snapshots"
	// PropReadDedup is Timelake's read-dedup: a series key and time name
	// one reading, and the row of the newest batch is the one that counts
	// (dedupe.go).
	PropReadDedup = "timelake.read-dedup"
	// PropRetention is how old a partition may get before maintenance
	// drops it (retention.go).
	PropRetention = "timelake.retention"
)

// Table properties of loading (docs/schema.md), read by every writer.
const (
	PropOnError        = "timelake.on-error"
	PropMaxBadRows     = "timelake.max-bad-rows"
	PropSourceColumn   = "timelake.source-column"
	PropLoadTimeColumn = "timelake.load-time-column"
)

// Maintenance defaults: what a table gets without tuning, chosen for a
// fleet of 20 gateways dropping a file a minute each (about 29,000 files a
// day) to live with for a year (docs/maintenance.md explains each).
const (
	DefaultSnapshotRetention = 5 * time.Minute
	DefaultMinSnapshots      = 20
	// DefaultMaxSnapshots keeps the metadata file every commit rewrites
	// at about 1 MB (about 0.95 KB a snapshot) during a backlog; a fleet's
	// retention keeps far fewer (20 gateways, 5 minutes: 100).
	DefaultMaxSnapshots = 1000
	// DefaultMetadataVersions is write.metadata.previous-versions-max on
	// the tables timelake creates (Iceberg's default keeps 100, each a
	// copy of the snapshot list).
	DefaultMetadataVersions = 3
	// DefaultManifestMergeCount is commit.manifest.min-count-to-merge on
	// the tables timelake creates (Iceberg's default is 100): a commit
	// merges the current snapshot's small manifests once there are this
	// many, so maintenance reads a handful per round.
	DefaultManifestMergeCount = 4
	// OrphanCheckInterval is how often maintenance lists the table's
	// folders for orphan files (reading every snapshot's manifest list).
	OrphanCheckInterval = time.Hour
)

// MaintenanceProperties are the timelake.* table properties of
// maintenance, with what each accepts (tables alter refuses the others).
var MaintenanceProperties = map[string]string{
	PropAutoMaintain:      "true or false",
	PropSnapshotRetention: "a duration such as 15m, 2h or 1d",
	PropMinSnapshots:      "a whole number >= 1",
	PropMaxSnapshots:      "a whole number >= 1",
	PropDedupeWindow:      "a duration such as 14d",
	PropTargetFileSize:    "a size such as 32MiB",
	PropCompactMinFiles:   "a whole number >= 2",
	PropCompactColdAfter:  "a duration such as 1h",
	PropOrphanMinAge:      "a duration such as 1h",
	PropReadDedup:         "true or false: compaction keeps one row per series key and time, the newest batch's (the table needs a series key)",
	PropRetention:         "a duration such as 400d: maintenance drops whole partitions older than it; not set: none",
}

// LoadProperties are the timelake.* table properties of loading that tables
// alter may set, with what each accepts.
var LoadProperties = map[string]string{
	PropEvolve:         "off, add-columns or widen",
	PropExpectEvery:    "a duration such as 1m or 15m",
	PropOnError:        "file or skip-rows: what a row that cannot be loaded does to its file",
	PropMaxBadRows:     "rows (100), a fraction (0.05) or a percentage (5%): the most rows skip-rows sets aside in a file",
	PropSourceColumn:   "a column name: the column that holds each row's landing key",
	PropLoadTimeColumn: "a column name: the column that holds the time each row was loaded",
}

// PropExpectEvery is how often each gateway of the table is expected to
// land a file: landing status, its metrics and the alerts call a gateway
// silent when none landed for twice as long (docs/operations.md).
const PropExpectEvery = "timelake.expect-every"

// ValidateProperty checks a timelake.* property value for SetProperties
// callers (tables alter): contract properties are fixed at creation,
// maintenance and loading ones must parse, unknown timelake.* keys are
// refused. Other keys (Iceberg's write.*, history.*, ...) are not checked
// here.
func ValidateProperty(key, value string) error {
	if !strings.HasPrefix(key, "timelake.") {
		return nil
	}
	switch key {
	case PropTimeColumn, PropSeriesKey, PropChunk, PropFormatVersion, PropLoadHistory, PropLoadOutcomes:
		return fmt.Errorf("%s is set by timelake and cannot be changed", key)
	case PropAutoMaintain, PropReadDedup:
		if _, err := strconv.ParseBool(value); err != nil {
			return fmt.Errorf("%s=%q: expected true or false", key, value)
		}
	case PropSnapshotRetention, PropDedupeWindow, PropCompactColdAfter, PropOrphanMinAge, PropExpectEvery:
		example := map[string]string{PropSnapshotRetention: "15m", PropDedupeWindow: "14d", PropCompactColdAfter: "1h", PropOrphanMinAge: "1h",
			PropExpectEvery: "1m"}[key]
		if _, err := quantity.AgeAtLeast(value, quantity.Positive, example); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	case PropMinSnapshots, PropMaxSnapshots, PropCompactMinFiles:
		n, err := strconv.Atoi(value)
		if low := map[string]int{PropMinSnapshots: 1, PropMaxSnapshots: 1, PropCompactMinFiles: 2}[key]; err != nil || n < low {
			return fmt.Errorf("%s=%q: expected %s", key, value, MaintenanceProperties[key])
		}
	case PropEvolve:
		if value != "off" && value != "add-columns" && value != "widen" {
			return fmt.Errorf("%s=%q: expected %s", key, value, LoadProperties[key])
		}
	case PropOnError:
		if _, err := decode.ParseOnError(value); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	case PropMaxBadRows:
		if _, err := decode.ParseMaxBadRows(value); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	case PropSourceColumn, PropLoadTimeColumn:
		if strings.TrimSpace(value) != value || value == "" {
			return fmt.Errorf("%s=%q: expected a column name without surrounding spaces", key, value)
		}
	case PropRetention:
		if _, err := quantity.AgeAtLeast(value, time.Hour, "400d"); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	case PropTargetFileSize:
		if _, err := quantity.SizeAtLeast(value, 1<<20); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	default:
		known := slices.Concat(slices.Collect(maps.Keys(MaintenanceProperties)), slices.Collect(maps.Keys(LoadProperties)))
		slices.Sort(known)
		return fmt.Errorf("unknown property %s (timelake.* properties that can be set: %s)", key, strings.Join(known, ", "))
	}
	return nil
}

// MaintenanceSettings are a table's maintenance settings, from its
// properties and the defaults.
type MaintenanceSettings struct {
	Enabled bool   `json:"enabled"`
	Why     string `json:"why"` // why enabled or not
	// SnapshotRetention and MinSnapshots: snapshots older than the
	// retention are expired, keeping the newest MinSnapshots; past
	// MaxSnapshots the oldest are expired whatever their age.
	SnapshotRetention time.Duration `json:"-"`
	MinSnapshots      int           `json:"min_snapshots"`
	MaxSnapshots      int           `json:"max_snapshots"`
	DedupeWindow      time.Duration `json:"-"`
	TargetFileSize    int64         `json:"target_file_size"`
	CompactMinFiles   int           `json:"compact_min_files"`
	CompactColdAfter  time.Duration `json:"-"`
	OrphanMinAge      time.Duration `json:"-"`
	MetadataVersions  int           `json:"metadata_versions"`
	// ReadDedup: compaction keeps one row per series key and time, the
	// newest batch's (timelake.read-dedup).
	ReadDedup bool `json:"read_dedup"`
	// Retention is how old a partition may get before maintenance drops
	// it; 0: never (timelake.retention not set).
	Retention time.Duration `json:"-"`
	// Sources says where each value comes from, by property name (the
	// MaintenanceProperties and write.metadata.previous-versions-max):
	// SourceProperty or SourceDefault.
	Sources map[string]string `json:"-"`
}

// Where a maintenance setting's value comes from (MaintenanceSettings.Sources).
const (
	// SourceProperty: the table property sets it.
	SourceProperty = "property"
	// SourceDefault: the property is not set, or its value does not parse
	// (it is then ignored, as Iceberg ignores a bad property value).
	SourceDefault = "default"
)

// createdByTimelake recognises the tables this writer creates, which are
// maintained by default even when they predate timelake.auto-maintain:
// the contract properties and the Parquet and metrics settings CreateTable
// has always set.
func createdByTimelake(props iceberg.Properties) bool {
	return props[PropTimeColumn] != "" && props[PropChunk] != "" &&
		props[table.ParquetCompressionKey] == "zstd" && props[table.DefaultWriteMetricsModeKey] == "truncate(16)"
}

// MaintenanceSettingsOf resolves a table's maintenance settings from its
// properties (Table.Properties) and the defaults; a property whose value
// does not parse is ignored.
func MaintenanceSettingsOf(props iceberg.Properties) MaintenanceSettings {
	s := MaintenanceSettings{SnapshotRetention: DefaultSnapshotRetention, MinSnapshots: DefaultMinSnapshots, MaxSnapshots: DefaultMaxSnapshots,
		DedupeWindow: dedupeWindow(props), OrphanMinAge: DefaultOrphanMinAge, Sources: map[string]string{}}
	for k := range MaintenanceProperties {
		s.Sources[k] = SourceDefault
	}
	s.Sources[table.MetadataPreviousVersionsMaxKey] = SourceDefault
	fromProperty := func(k string) { s.Sources[k] = SourceProperty }
	switch v, err := strconv.ParseBool(props[PropAutoMaintain]); {
	case props[PropAutoMaintain] != "" && err == nil:
		s.Enabled, s.Why = v, PropAutoMaintain+"="+props[PropAutoMaintain]
		fromProperty(PropAutoMaintain)
	case createdByTimelake(props):
		s.Enabled, s.Why = true, "created by timelake"
	default:
		s.Why = "not created by timelake and " + PropAutoMaintain + " is not set"
	}
	if d, err := quantity.ParseAge(props[PropSnapshotRetention]); err == nil && d > 0 {
		s.SnapshotRetention = d
		fromProperty(PropSnapshotRetention)
	}
	if n, err := strconv.Atoi(props[PropMinSnapshots]); err == nil && n >= 1 {
		s.MinSnapshots = n
		fromProperty(PropMinSnapshots)
	}
	if n, err := strconv.Atoi(props[PropMaxSnapshots]); err == nil && n >= 1 {
		s.MaxSnapshots = n
		fromProperty(PropMaxSnapshots)
	}
	if d, err := quantity.ParseAge(props[PropDedupeWindow]); err == nil && d > 0 { // as dedupeWindow reads it
		fromProperty(PropDedupeWindow)
	}
	if d, err := quantity.ParseAge(props[PropOrphanMinAge]); err == nil && d > 0 {
		s.OrphanMinAge = d
		fromProperty(PropOrphanMinAge)
	}
	if v, err := strconv.ParseBool(props[PropReadDedup]); err == nil {
		s.ReadDedup = v
		fromProperty(PropReadDedup)
	}
	if d, err := quantity.ParseAge(props[PropRetention]); err == nil && d >= time.Hour {
		s.Retention = d
		fromProperty(PropRetention)
	}
	c := compactSettingsOf(props, CompactOptions{})
	s.TargetFileSize, s.CompactMinFiles, s.CompactColdAfter = c.target, c.minFiles, c.coldAfter
	for _, k := range c.fromProperties {
		fromProperty(k)
	}
	s.MetadataVersions = props.GetInt(table.MetadataPreviousVersionsMaxKey, table.MetadataPreviousVersionsMaxDefault)
	if _, err := strconv.Atoi(props[table.MetadataPreviousVersionsMaxKey]); err == nil { // as GetInt reads it
		fromProperty(table.MetadataPreviousVersionsMaxKey)
	}
	return s
}

// MaintainOptions tune Maintain.
type MaintainOptions struct {
	// Budget bounds the time a round takes: it ends by Budget plus
	// MaintenanceSlack (see Maintain); 0 means no bound.
	Budget time.Duration
	// Clock reads the time the budget is measured with; nil is time.Now.
	Clock func() time.Time
	// Force maintains a table whose settings do not enable it (tables
	// maintain by hand).
	Force bool
	// DryRun reports what would be done and changes nothing.
	DryRun bool
	// Orphans forces orphan file removal now (else it runs when an hour
	// passed since the last check).
	Orphans bool
}

// maintenanceStateName is a small object next to the table's metadata (in
// the folder of timelake's own files, Lake.ownKey) that remembers when orphan files were last looked for, and when the table
// reached which sequence number (Sequences). It is advisory: when lost
// or overwritten by a concurrent round, orphans are looked for early and a
// partition goes cold a little late; nothing else depends on it.
const maintenanceStateName = "_timelake-maintenance.json"

type maintenanceState struct {
	OrphansCheckedAt time.Time `json:"orphans_checked_at"`
	// Sequences are the table's last-sequence-number as seen at a time,
	// oldest first: a data file whose data sequence number is at most Seq
	// was committed before At. They tell how old a file is once the
	// snapshot that added it has expired (Iceberg spec, "Sequence
	// Numbers": a file's data sequence number is its snapshot's), which
	// compaction needs to see a partition go cold when snapshots are kept
	// for less than timelake.compact-cold-after.
	Sequences []sequenceTime `json:"sequences,omitempty"`
	// RewriteRate is the rows per second the table's rewrites have taken
	// (noteRewriteRate), for the estimate of the next ones; 0 until one
	// was measured.
	RewriteRate float64 `json:"rewrite_rows_per_second,omitempty"`
	// OrphansSeconds is how long the last orphan file check took, so that
	// a round with less time left does not start one.
	OrphansSeconds float64 `json:"orphans_seconds,omitempty"`
	// OrphansPostponed counts the rounds in a row in which orphan removal
	// was due and the budget ran out before it: from orphansTurn on, a
	// round removes orphans before anything else.
	OrphansPostponed int `json:"orphans_postponed,omitempty"`
}

// orphansTurn is how many rounds orphan removal may be postponed by the
// other steps of a backlog before it goes first: the files a cut round
// left behind are deleted within a few rounds, however long the backlog.
const orphansTurn = 2

// noteRewriteRate adds a measured rewrite rate (rows per second) to the
// estimate: the mean of it and the estimate before, so that one slow
// round on a busy machine moves it half way.
func (st *maintenanceState) noteRewriteRate(rate float64) {
	if st.RewriteRate <= 0 {
		st.RewriteRate = rate
		return
	}
	st.RewriteRate = (st.RewriteRate + rate) / 2
}

// sequenceTime is one entry of maintenanceState.Sequences.
type sequenceTime struct {
	Seq int64     `json:"seq"`
	At  time.Time `json:"at"`
}

// noteSequence records that the table had reached sequence number seq by
// at (the commit time of the snapshot that took it there), when seq
// advanced and the newest entry is older than a 120th of coldAfter (30 s
// for the default hour: every run of a poller started each minute notes
// its commits, so a file's commit time is known to the run), and drops
// entries no longer needed: those older than twice coldAfter but the newest
// of them. It reports whether the state changed.
func (st *maintenanceState) noteSequence(seq int64, at, now time.Time, coldAfter time.Duration) bool {
	if seq <= 0 || coldAfter <= 0 {
		return false
	}
	if n := len(st.Sequences); n > 0 && (st.Sequences[n-1].Seq >= seq || at.Sub(st.Sequences[n-1].At) < coldAfter/120) {
		return false
	}
	st.Sequences = append(st.Sequences, sequenceTime{Seq: seq, At: at.UTC()})
	cut := 0
	for cut+1 < len(st.Sequences) && st.Sequences[cut+1].At.Before(now.Add(-2*coldAfter)) {
		cut++
	}
	st.Sequences = slices.Clone(st.Sequences[cut:])
	return true
}

// newestCommit is the commit time of h's newest snapshot (the one that
// took the table to its last sequence number), or now without snapshots.
func newestCommit(h *tablemeta.Indexed, now time.Time) time.Time {
	var ms int64
	for _, r := range h.Snaps() {
		ms = max(ms, r.Timestamp)
	}
	if ms == 0 {
		return now
	}
	return time.UnixMilli(ms)
}

// committedBy returns the time by which a data file with data sequence
// number seq was committed, from the recorded sequences; ok is false when
// none tells (seq unknown, or newer than every entry).
func committedBy(seqs []sequenceTime, seq int64) (at time.Time, ok bool) {
	if seq <= 0 {
		return time.Time{}, false
	}
	for _, s := range seqs {
		if s.Seq >= seq {
			return s.At, true
		}
	}
	return time.Time{}, false
}

// MaintenanceSlack is how long past its budget a round of maintenance may
// run: the commits of the work done in time (a compaction's rewrites,
// snapshot expiry) and the deletes they lead to. At the budget plus the
// slack whatever still runs is cancelled; a change not committed then is
// made by a later round, and files it wrote or meant to delete are left to
// orphan removal: nothing is lost.
const MaintenanceSlack = 2 * time.Second

// Maintain runs one round of maintenance: retention (when the table sets
// timelake.retention), compaction, snapshot expiry (with the load history)
// and, once an hour, orphan file removal. A table
// created by timelake before these settings existed first gets them (one
// property commit: timelake.auto-maintain and a short metadata-log).
// Tables whose settings do not enable maintenance are skipped unless Force
// is set.
//
// With a Budget, the round ends by the budget plus MaintenanceSlack: a
// step starts only while the budget lasts; compaction starts only the
// rewrites whose estimate (rewriteEstimate, at the rate the table's
// rewrites measured) fits before the last tenth of the budget, which is
// left to expiry, and abandons one still running then; orphan removal
// starts only when its last check took less than the time left, or
// first, before the other steps, once it was postponed orphansTurn rounds
// in a row; and commits and deletes are cut at the slack's end. What did
// not fit is Pending, for the next round.
//
// Errors: those of the steps; the report says what was done before, and
// its Error the error returned.
func (t *Table) Maintain(ctx context.Context, opts MaintainOptions) (rep MaintainReport, err error) {
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	start := clock()
	rep.Table, rep.DryRun = t.name, opts.DryRun
	// Last (deferred first): the round's end as the report tells it, the
	// budget's cut below already made.
	defer func() {
		rep.MetadataVersion = t.Version()
		if err != nil {
			rep.Error = err.Error()
		}
	}()
	deadline := time.Time{}
	if opts.Budget > 0 {
		deadline = start.Add(opts.Budget)
		parent := ctx
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Budget+MaintenanceSlack)
		defer cancel()
		defer func() {
			// Cut at the end of the slack: nothing lost, the rest is
			// the next round's.
			if err != nil && ctx.Err() != nil && parent.Err() == nil {
				rep.Pending, err = true, nil
			}
		}()
	}
	left := func() bool { return deadline.IsZero() || clock().Before(deadline) }
	defer func() { rep.Took = clock().Sub(start) }() // the returned report (named result)
	if err := t.Refresh(ctx); err != nil {
		return rep, err
	}
	props := t.Properties()
	rep.Settings = MaintenanceSettingsOf(props)
	if !rep.Settings.Enabled && !opts.Force {
		rep.Skipped = rep.Settings.Why
		return rep, nil
	}
	if !props.GetBool(table.GCEnabledKey, table.GCEnabledDefault) {
		rep.Skipped = "gc.enabled is false: files of this table may be shared with others"
		return rep, nil
	}
	// Tables created before maintenance existed keep 100 metadata
	// versions, each a copy of the snapshot list.
	if up := upgradeProperties(props); len(up) > 0 && createdByTimelake(props) {
		rep.Upgraded = slices.Sorted(maps.Keys(up))
		if !opts.DryRun {
			if err := t.SetProperties(ctx, up, nil); err != nil {
				return rep, err
			}
			rep.Settings = MaintenanceSettingsOf(t.Properties())
		}
	}
	s := rep.Settings
	if !opts.DryRun {
		if err := t.repairHint(ctx); err != nil {
			return rep, err
		}
	}
	_, herr := t.LoadHistory(ctx)
	refused := len(refusedSegments(t.Properties()))+len(t.lake.linkedSegments(t.name, t.Properties())) > 0
	if (refused || errors.Is(herr, ErrLoadHistoryMissing)) && !opts.DryRun {
		if rep.DroppedSegments, err = t.dropMissingSegments(ctx); err != nil {
			return rep, err
		}
	} else if herr != nil && !errors.Is(herr, ErrLoadHistoryMissing) {
		return rep, herr
	}

	st, err := t.loadMaintenanceState(ctx)
	if err != nil {
		return rep, err
	}
	rep.OrphansCheckedAt = st.OrphansCheckedAt
	due := t.orphansDue(st, opts.Orphans)
	if !due {
		rep.OrphansNext = st.OrphansCheckedAt.Add(OrphanCheckInterval)
	}
	// removeOrphans runs orphan removal within what is left of the budget
	// (stop: the round ends, pending, with err).
	removeOrphans := func() (stop bool, err error) {
		t0 := clock()
		octx := ctx
		if !deadline.IsZero() {
			// Ended early enough to note how long it ran, so that later
			// rounds with less time than that leave it to a longer one.
			var cancel context.CancelFunc
			octx, cancel = context.WithTimeout(ctx, deadline.Add(MaintenanceSlack/2).Sub(clock()))
			defer cancel()
		}
		res, err := t.RemoveOrphans(octx, OrphanOptions{MinAge: s.OrphanMinAge, DryRun: opts.DryRun})
		rep.Orphans = &res
		if err != nil && octx.Err() != nil && ctx.Err() == nil && !opts.DryRun {
			st.OrphansSeconds = max(st.OrphansSeconds, clock().Sub(t0).Seconds())
			rep.Pending = true
			return true, t.saveMaintenanceState(ctx, st)
		}
		if err != nil {
			return true, err
		}
		if !opts.DryRun {
			st.OrphansCheckedAt = t.lake.now().UTC()
			st.OrphansSeconds = clock().Sub(t0).Seconds()
			st.OrphansPostponed = 0
			rep.OrphansCheckedAt = st.OrphansCheckedAt
			if err := t.saveMaintenanceState(ctx, st); err != nil {
				return true, err
			}
		}
		return false, nil
	}
	// postpone notes that orphan removal was due and did not run.
	postpone := func() error {
		rep.Pending = true
		if !due || opts.DryRun {
			return nil
		}
		st.OrphansPostponed++
		return t.saveMaintenanceState(ctx, st)
	}
	if due && st.OrphansPostponed >= orphansTurn {
		// Its turn: postponed by a backlog round after round.
		if stop, err := removeOrphans(); stop || err != nil {
			return rep, err
		}
		due = false
	}

	// Retention first: nothing is compacted that it drops.
	if s.Retention > 0 {
		if !left() {
			return rep, postpone()
		}
		res, err := t.ApplyRetention(ctx, s.Retention, opts.DryRun)
		rep.Retention = &res
		if err != nil {
			return rep, err
		}
	}
	// Compaction next: the replace snapshot it commits can then expire
	// with the others, and the files it replaced with it.
	if !left() {
		return rep, postpone()
	}
	copts := CompactOptions{TargetFileSize: s.TargetFileSize, MinFiles: s.CompactMinFiles,
		ColdAfter: s.CompactColdAfter, DryRun: opts.DryRun, MaxBytes: compactBytesPerRound, Clock: clock, state: &st}
	if !deadline.IsZero() {
		copts.Deadline = deadline.Add(-opts.Budget / 10)
	}
	rate := st.RewriteRate
	rep.Compacted, err = t.Compact(ctx, copts)
	if err != nil {
		return rep, err
	}
	rep.Pending = rep.Compacted.Deferred > 0 || rep.Compacted.Abandoned > 0
	// Noted after the compaction, so that the files it wrote are dated
	// by its own commit.
	h, _ := t.loaded()
	if noted := st.noteSequence(h.LastSeq(), newestCommit(h, t.lake.now()), t.lake.now(), s.CompactColdAfter); !opts.DryRun && (noted || st.RewriteRate != rate) {
		if err := t.saveMaintenanceState(ctx, st); err != nil {
			return rep, err
		}
	}
	if !left() {
		return rep, postpone()
	}
	rep.Expired, err = t.Expire(ctx, ExpireOptions{OlderThan: s.SnapshotRetention, RetainLast: s.MinSnapshots, RetainAtMost: s.MaxSnapshots, DryRun: opts.DryRun,
		Deadline: deadline, Clock: clock})
	rep.Pending = rep.Pending || rep.Expired.Left > 0
	if err != nil {
		return rep, err
	}
	fits := deadline.IsZero() || clock().Add(time.Duration(st.OrphansSeconds*float64(time.Second))).Before(deadline)
	if due && (!left() || !fits) {
		return rep, postpone()
	}
	if due {
		if _, err := removeOrphans(); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// repairHint redoes the best-effort chores after a commit (afterCommit:
// the version hint, old metadata versions) when the version hint does not
// name the current version: a writer killed or cut off between its commit
// and those chores leaves readers that trust the hint (DuckDB, Spark's
// Hadoop tables) a version behind until the next commit, which on a quiet
// table may never come.
func (t *Table) repairHint(ctx context.Context) error {
	if !t.lake.cat.Hinted() {
		return nil
	}
	b, _, err := storage.ReadAll(ctx, t.lake.store, catalog.MetadataPrefix(t.name)+versionHintName)
	if err != nil && !errors.Is(err, storage.ErrNotExist) {
		return err
	}
	if strings.TrimSpace(string(b)) != strconv.Itoa(t.Version()) {
		t.afterCommit(ctx)
	}
	return nil
}

// compactBytesPerRound bounds the input one round of maintenance rewrites
// (the budget bounds its time as well).
const compactBytesPerRound = 256 << 20

// upgradeProperties returns the properties a table created by timelake
// before maintenance existed lacks.
func upgradeProperties(props iceberg.Properties) map[string]string {
	up := map[string]string{}
	if props[PropAutoMaintain] == "" {
		up[PropAutoMaintain] = "true"
	}
	if props[table.MetadataPreviousVersionsMaxKey] == "" {
		up[table.MetadataPreviousVersionsMaxKey] = strconv.Itoa(DefaultMetadataVersions)
	}
	if props[table.MetadataDeleteAfterCommitEnabledKey] == "" {
		up[table.MetadataDeleteAfterCommitEnabledKey] = "true"
	}
	if props[table.ManifestMinMergeCountKey] == "" {
		up[table.ManifestMinMergeCountKey] = strconv.Itoa(DefaultManifestMergeCount)
	}
	return up
}

// orphansDue reports whether orphan files were last looked for more than
// OrphanCheckInterval ago (or never), according to st.
func (t *Table) orphansDue(st maintenanceState, force bool) bool {
	return force || !t.lake.now().Before(st.OrphansCheckedAt.Add(OrphanCheckInterval))
}

// loadMaintenanceState reads maintenanceStateKey; a missing or unreadable
// object is an empty state (it is advisory).
func (t *Table) loadMaintenanceState(ctx context.Context) (maintenanceState, error) {
	var st maintenanceState
	b, _, err := storage.ReadAll(ctx, t.lake.store, t.lake.ownKey(t.name, maintenanceStateName))
	if errors.Is(err, storage.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if json.Unmarshal(b, &st) != nil {
		return maintenanceState{}, nil
	}
	return st, nil
}

func (t *Table) saveMaintenanceState(ctx context.Context, st maintenanceState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	_, err = t.lake.store.Put(ctx, t.lake.ownKey(t.name, maintenanceStateName), bytes.NewReader(b),
		storage.PutOptions{ContentType: "application/json"})
	return err
}
