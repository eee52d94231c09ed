package lake

import (
	"bytes"
	"context"
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
	"github.com/timelake/timelake/internal/lake/maintenance"
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
// is its MaintainReport (maintenance.Report), the one report of a round that
// every output renders.

// The settings of maintenance, its state and what a round decides are
// package maintenance's (internal/lake/maintenance); here are the names
// lake's API gives them.

// Table properties of maintenance (maintenance.Prop*).
const (
	PropAutoMaintain      = maintenance.PropAutoMaintain
	PropSnapshotRetention = maintenance.PropSnapshotRetention
	PropMinSnapshots      = maintenance.PropMinSnapshots
	PropMaxSnapshots      = maintenance.PropMaxSnapshots
	PropReadDedup         = maintenance.PropReadDedup
	PropRetention         = maintenance.PropRetention
	PropTargetFileSize    = maintenance.PropTargetFileSize
	PropCompactMinFiles   = maintenance.PropCompactMinFiles
	PropCompactColdAfter  = maintenance.PropCompactColdAfter
	PropOrphanMinAge      = maintenance.PropOrphanMinAge
)

// Maintenance defaults (maintenance.Default*; docs/maintenance.md explains
// each).
const (
	DefaultSnapshotRetention  = maintenance.DefaultSnapshotRetention
	DefaultMinSnapshots       = maintenance.DefaultMinSnapshots
	DefaultMaxSnapshots       = maintenance.DefaultMaxSnapshots
	DefaultMetadataVersions   = maintenance.DefaultMetadataVersions
	DefaultManifestMergeCount = maintenance.DefaultManifestMergeCount
	OrphanCheckInterval       = maintenance.OrphanCheckInterval
	DefaultTargetFileSize     = maintenance.DefaultTargetFileSize
	DefaultCompactMinFiles    = maintenance.DefaultCompactMinFiles
	DefaultCompactColdAfter   = maintenance.DefaultCompactColdAfter
	DefaultOrphanMinAge       = maintenance.DefaultOrphanMinAge
)

// MaintenanceProperties are the timelake.* table properties of
// maintenance, with what each accepts (maintenance.Properties).
var MaintenanceProperties = maintenance.Properties

// Table properties of loading (docs/schema.md), read by every writer.
const (
	PropOnError        = "timelake.on-error"
	PropMaxBadRows     = "timelake.max-bad-rows"
	PropSourceColumn   = "timelake.source-column"
	PropLoadTimeColumn = "timelake.load-time-column"
	// PropMaxFilePartitions is the most partitions (days of the default
	// spec) the rows of one file may fall in, over all its pieces
	// (DefaultMaxFilePartitions); a file over it is refused
	// (ErrTooManyPartitions).
	PropMaxFilePartitions = "timelake.max-file-partitions"
)

// DefaultMaxFilePartitions is PropMaxFilePartitions when the table does
// not set it: 27 years of days (417 days of hours), far beyond a gateway's
// backfill of a day table, while
// a file whose clock is far off (rows on 80,000 days) is refused before
// it writes a data file a day, which memory and the manifests pay for.
const DefaultMaxFilePartitions = 10_000

// LoadProperties are the timelake.* table properties of loading that tables
// alter may set, with what each accepts.
var LoadProperties = map[string]string{
	PropEvolve:            "off, add-columns or widen",
	PropExpectEvery:       "a duration such as 1m or 15m",
	PropOnError:           "file or skip-rows: what a row that cannot be loaded does to its file",
	PropMaxBadRows:        "rows (100), a fraction (0.05) or a percentage (5%): the most rows skip-rows sets aside in a file",
	PropSourceColumn:      "a column name: the column that holds each row's landing key",
	PropLoadTimeColumn:    "a column name: the column that holds the time each row was loaded",
	PropMaxFilePartitions: "a whole number of at least 1: the most partitions (days) the rows of one file may fall in",
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
	if known, err := maintenance.ValidateProperty(key, value); known {
		return err
	}
	switch key {
	case PropTimeColumn, PropSeriesKey, PropChunk, PropFormatVersion, PropLoadHistory, PropLoadOutcomes:
		return fmt.Errorf("%s is set by timelake and cannot be changed", key)
	case PropExpectEvery:
		if _, err := quantity.AgeAtLeast(value, quantity.Positive, "1m"); err != nil {
			return fmt.Errorf("%s: %w", key, err)
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
	case PropMaxFilePartitions:
		if _, err := parseMaxFilePartitions(value); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	case PropSourceColumn, PropLoadTimeColumn:
		if strings.TrimSpace(value) != value || value == "" {
			return fmt.Errorf("%s=%q: expected a column name without surrounding spaces", key, value)
		}
	default:
		known := slices.Concat(slices.Collect(maps.Keys(MaintenanceProperties)), slices.Collect(maps.Keys(LoadProperties)))
		slices.Sort(known)
		return fmt.Errorf("unknown property %s (timelake.* properties that can be set: %s)", key, strings.Join(known, ", "))
	}
	return nil
}

// MaintenanceSettings are a table's maintenance settings, from its
// properties and the defaults (maintenance.Settings).
type MaintenanceSettings = maintenance.Settings

// Where a maintenance setting's value comes from (MaintenanceSettings.Sources).
const (
	SourceProperty = maintenance.SourceProperty
	SourceDefault  = maintenance.SourceDefault
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
// does not parse is ignored (maintenance.SettingsOf).
func MaintenanceSettingsOf(props iceberg.Properties) MaintenanceSettings {
	return maintenance.SettingsOf(props, createdByTimelake(props))
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

// The maintenance state is the small advisory object next to the table's
// metadata, in the folder of timelake's own files (Lake.ownKey): its
// format is maintenance.State's.
type maintenanceState = maintenance.State

const maintenanceStateName = maintenance.StateName

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
// rewrites whose estimate (maintenance.RewriteEstimate, at the rate the
// table's rewrites measured) fits before the last tenth of the budget,
// which is left to expiry, and abandons one still running then; orphan
// removal starts only when its last check took less than the time left,
// or first, before the other steps, once it was postponed
// maintenance.OrphansTurn rounds in a row; and commits and deletes are cut at the slack's end. What did
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
	if up := maintenance.UpgradeProperties(props); len(up) > 0 && createdByTimelake(props) {
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
	due := st.OrphansDue(t.lake.now(), opts.Orphans)
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
	if due && st.OrphansPostponed >= maintenance.OrphansTurn {
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
	if noted := st.NoteSequence(h.LastSeq(), maintenance.NewestCommit(h, t.lake.now()), t.lake.now(), s.CompactColdAfter); !opts.DryRun && (noted || st.RewriteRate != rate) {
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

// loadMaintenanceState reads the maintenance state object
// (maintenance.StateName); a missing or unreadable object is an empty
// state (it is advisory).
func (t *Table) loadMaintenanceState(ctx context.Context) (maintenanceState, error) {
	b, _, err := storage.ReadAll(ctx, t.lake.store, t.lake.ownKey(t.name, maintenanceStateName))
	if errors.Is(err, storage.ErrNotExist) {
		return maintenanceState{}, nil
	}
	if err != nil {
		return maintenanceState{}, err
	}
	return maintenance.DecodeState(b), nil
}

func (t *Table) saveMaintenanceState(ctx context.Context, st maintenanceState) error {
	b, err := st.Encode()
	if err != nil {
		return err
	}
	_, err = t.lake.store.Put(ctx, t.lake.ownKey(t.name, maintenanceStateName), bytes.NewReader(b),
		storage.PutOptions{ContentType: "application/json"})
	return err
}

// parseMaxFilePartitions reads PropMaxFilePartitions: a whole number of at
// least 1.
func parseMaxFilePartitions(value string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q: expected a whole number of at least 1", value)
	}
	return n, nil
}

// maxFilePartitions is the table's PropMaxFilePartitions, or the default
// when it is unset or cannot be read (tables alter refuses such values).
func maxFilePartitions(props iceberg.Properties) int {
	if v, ok := props[PropMaxFilePartitions]; ok {
		if n, err := parseMaxFilePartitions(v); err == nil {
			return n
		}
	}
	return DefaultMaxFilePartitions
}

// ErrTooManyPartitions refuses a file whose rows fall in more partitions
// than the table's PropMaxFilePartitions (PartitionsError says how many).
var ErrTooManyPartitions = errors.New("its rows fall in too many partitions")

// PartitionsError is ErrTooManyPartitions with the counts: the
// partitions of the file's rows, or with SoFar, of those read so far (a
// file decoded in pieces).
type PartitionsError struct {
	Partitions, Max int
	SoFar           bool
}

func (e *PartitionsError) Error() string {
	sofar := ""
	if e.SoFar {
		sofar = " in its rows read so far"
	}
	return fmt.Sprintf("%v: %d%s, more than the table's %s (%d); a gateway's clock far off?",
		ErrTooManyPartitions, e.Partitions, sofar, PropMaxFilePartitions, e.Max)
}

func (e *PartitionsError) Unwrap() error { return ErrTooManyPartitions }
