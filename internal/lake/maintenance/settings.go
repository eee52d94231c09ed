package maintenance

import (
	"fmt"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/settings/quantity"
)

// Table properties of maintenance (with those of compaction, the load
// history's window and orphan removal). Timelake's own names where it has
// them.
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
	// (internal/lake/dedupe.go).
	PropReadDedup = "timelake.read-dedup"
	// PropRetention is how old a partition may get before maintenance
	// drops it (internal/lake/retention.go).
	PropRetention = "timelake.retention"
	// PropDedupeWindow is how long the load history remembers a loaded
	// key (internal/lake/history.go); maintenance expires its segments.
	PropDedupeWindow = "timelake.dedupe-window"
	// PropOrphanMinAge is how old an unreferenced file must be before
	// orphan file removal deletes it.
	PropOrphanMinAge = "timelake.orphan-min-age"
)

// Table properties of compaction (docs/maintenance.md).
const (
	PropTargetFileSize   = "timelake.target-file-size"
	PropCompactMinFiles  = "timelake.compact-min-files"
	PropCompactColdAfter = "timelake.compact-cold-after"
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
	// DefaultDedupeWindow is how long a loaded key is remembered when the
	// table does not set timelake.dedupe-window (Snowpipe keeps 14 days).
	DefaultDedupeWindow = 14 * 24 * time.Hour
	// DefaultOrphanMinAge keeps unreferenced files younger than an hour:
	// a commit in flight (data files written, metadata not yet) never
	// takes that long.
	DefaultOrphanMinAge = time.Hour
)

// Compaction defaults, for tables that do not set the properties.
const (
	DefaultTargetFileSize   = 8 << 20
	DefaultCompactMinFiles  = 4
	DefaultCompactColdAfter = time.Hour
)

// Properties are the timelake.* table properties of maintenance, with
// what each accepts (tables alter refuses the others).
var Properties = map[string]string{
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

// ValidateProperty checks the value of one of the Properties; known is
// false for any other key, which it leaves to the caller (lake's
// ValidateProperty checks the contract and loading properties).
func ValidateProperty(key, value string) (known bool, err error) {
	switch key {
	case PropAutoMaintain, PropReadDedup:
		if _, err := strconv.ParseBool(value); err != nil {
			return true, fmt.Errorf("%s=%q: expected true or false", key, value)
		}
	case PropSnapshotRetention, PropDedupeWindow, PropCompactColdAfter, PropOrphanMinAge:
		example := map[string]string{PropSnapshotRetention: "15m", PropDedupeWindow: "14d", PropCompactColdAfter: "1h", PropOrphanMinAge: "1h"}[key]
		if _, err := quantity.AgeAtLeast(value, quantity.Positive, example); err != nil {
			return true, fmt.Errorf("%s: %w", key, err)
		}
	case PropMinSnapshots, PropMaxSnapshots, PropCompactMinFiles:
		n, err := strconv.Atoi(value)
		if low := map[string]int{PropMinSnapshots: 1, PropMaxSnapshots: 1, PropCompactMinFiles: 2}[key]; err != nil || n < low {
			return true, fmt.Errorf("%s=%q: expected %s", key, value, Properties[key])
		}
	case PropRetention:
		if _, err := quantity.AgeAtLeast(value, time.Hour, "400d"); err != nil {
			return true, fmt.Errorf("%s: %w", key, err)
		}
	case PropTargetFileSize:
		if _, err := quantity.SizeAtLeast(value, 1<<20); err != nil {
			return true, fmt.Errorf("%s: %w", key, err)
		}
	default:
		return false, nil
	}
	return true, nil
}

// DedupeWindow is how long a table's load history remembers a loaded key:
// timelake.dedupe-window, or DefaultDedupeWindow when it is not set or
// does not parse.
func DedupeWindow(props map[string]string) time.Duration {
	if d, err := quantity.ParseAge(props[PropDedupeWindow]); err == nil && d > 0 {
		return d
	}
	return DefaultDedupeWindow
}

// Settings are a table's maintenance settings, from its properties and
// the defaults.
type Settings struct {
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
	// Properties and write.metadata.previous-versions-max):
	// SourceProperty or SourceDefault.
	Sources map[string]string `json:"-"`
}

// Where a maintenance setting's value comes from (Settings.Sources).
const (
	// SourceProperty: the table property sets it.
	SourceProperty = "property"
	// SourceDefault: the property is not set, or its value does not parse
	// (it is then ignored, as Iceberg ignores a bad property value).
	SourceDefault = "default"
)

// SettingsOf resolves a table's maintenance settings from its properties
// and the defaults; a property whose value does not parse is ignored.
// createdByTimelake says whether timelake created the table (its contract
// properties, lake's to read), which maintains it by default.
func SettingsOf(props iceberg.Properties, createdByTimelake bool) Settings {
	s := Settings{SnapshotRetention: DefaultSnapshotRetention, MinSnapshots: DefaultMinSnapshots, MaxSnapshots: DefaultMaxSnapshots,
		DedupeWindow: DedupeWindow(props), OrphanMinAge: DefaultOrphanMinAge, Sources: map[string]string{}}
	for k := range Properties {
		s.Sources[k] = SourceDefault
	}
	s.Sources[table.MetadataPreviousVersionsMaxKey] = SourceDefault
	fromProperty := func(k string) { s.Sources[k] = SourceProperty }
	switch v, err := strconv.ParseBool(props[PropAutoMaintain]); {
	case props[PropAutoMaintain] != "" && err == nil:
		s.Enabled, s.Why = v, PropAutoMaintain+"="+props[PropAutoMaintain]
		fromProperty(PropAutoMaintain)
	case createdByTimelake:
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
	if d, err := quantity.ParseAge(props[PropDedupeWindow]); err == nil && d > 0 { // as DedupeWindow reads it
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
	c := CompactSettingsOf(props, 0, 0, 0)
	s.TargetFileSize, s.CompactMinFiles, s.CompactColdAfter = c.Target, c.MinFiles, c.ColdAfter
	for _, k := range c.FromProperties {
		fromProperty(k)
	}
	s.MetadataVersions = props.GetInt(table.MetadataPreviousVersionsMaxKey, table.MetadataPreviousVersionsMaxDefault)
	if _, err := strconv.Atoi(props[table.MetadataPreviousVersionsMaxKey]); err == nil { // as GetInt reads it
		fromProperty(table.MetadataPreviousVersionsMaxKey)
	}
	return s
}

// UpgradeProperties returns the properties a table created by timelake
// before maintenance existed lacks.
func UpgradeProperties(props iceberg.Properties) map[string]string {
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
