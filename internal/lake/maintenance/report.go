package maintenance

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/timelake/timelake/internal/tablename"
)

// Report is one round of maintenance (lake.Table.Maintain): what it did,
// what it left and why, and the settings it ran with. It is the one report
// of a round; every output renders it: the maintenance object of ingest
// --json and of serve's maintenance lines (MarshalJSON), the maintenance
// line of ingest and serve (lakecmd.MaintenanceLine), serve's maintenance
// metrics, and `tables maintain` on a terminal, in a pipe and with --json
// (tables.RenderMaintain).
type Report struct {
	// Table is the table maintained.
	Table tablename.Name
	// DryRun: the round said what it would do and changed nothing.
	DryRun   bool
	Settings Settings
	Upgraded []string // properties set on a table created before maintenance existed
	// DroppedSegments names load history segments that were gone from
	// the store and were dropped from the table (the keys they held are
	// no longer recognised), and entries of timelake.load-history that
	// were not a segment's file name (never read: internal/lake/paths.go).
	DroppedSegments []string
	// Retention is what retention dropped; nil when the table sets no
	// timelake.retention.
	Retention *RetentionResult
	Compacted CompactResult
	Expired   ExpireResult
	Orphans   *OrphanResult // nil when not checked this time
	// OrphansCheckedAt is when orphan files were last looked for (zero:
	// never, or the round stopped before reading it), and OrphansNext,
	// when this round did not look (not due), when the next round will.
	OrphansCheckedAt time.Time
	OrphansNext      time.Time
	// Pending is set when the budget ran out with work left.
	Pending bool
	Took    time.Duration
	Skipped string // why nothing was done
	// MetadataVersion is N of the table's vN.metadata.json after the
	// round.
	MetadataVersion int
	// Error is why a step failed (the error lake.Table.Maintain returned; also set
	// by a caller that could not start the round); the report says what
	// was done before.
	Error string
}

// Compaction sums up the groups compaction rewrote: data files in, their
// bytes, files out, and the rows left out under timelake.read-dedup.
func (r *Report) Compaction() (filesIn int, bytesIn int64, filesOut int, rowsReplaced int64) {
	for _, g := range r.Compacted.Groups {
		filesIn += g.FilesIn
		bytesIn += g.BytesIn
		filesOut += g.FilesOut
		rowsReplaced += g.Replaced
	}
	return filesIn, bytesIn, filesOut, rowsReplaced
}

// RetentionDropped returns the partitions retention dropped in a commit of
// this round, and their rows (none in a dry run).
func (r *Report) RetentionDropped() (partitions []string, rows int64) {
	if rt := r.Retention; rt != nil && rt.SnapshotID != 0 {
		return rt.Partitions, rt.Rows
	}
	return nil, 0
}

// OrphansRemoved counts the orphan files removed (or that would be).
func (r *Report) OrphansRemoved() int {
	if r.Orphans == nil {
		return 0
	}
	return len(r.Orphans.Files)
}

// CompactionIdle says why compaction had nothing to do (every file at the
// target size, too few small files); empty when it did not run, or
// skipped (CompactResult.Skipped says why).
func (r *Report) CompactionIdle() string {
	if r.Compacted.Version != 0 && r.Compacted.Skipped == "" {
		return r.Compacted.Idle
	}
	return ""
}

// OrphansNotDue returns, when orphan files were not looked for this round
// because they were not due, when a round looks next (zero otherwise), and
// when they were last looked for (zero: never, or not known).
func (r *Report) OrphansNotDue() (next, last time.Time) {
	if r.Orphans != nil || r.OrphansNext.IsZero() {
		return time.Time{}, time.Time{}
	}
	return r.OrphansNext.UTC(), r.OrphansCheckedAt
}

// Work reports whether the round changed anything.
func (r *Report) Work() bool {
	filesIn, _, _, _ := r.Compaction()
	partitions, _ := r.RetentionDropped()
	return filesIn > 0 || len(r.Expired.Expired) > 0 || r.Expired.FilesDeleted > 0 || r.OrphansRemoved() > 0 || len(partitions) > 0
}

// Notable reports whether a run's output should say what the round did or
// left: work done, an error, work left for the next round (the time
// budget, compaction's byte bound), or compaction skipped (delete files).
// A round with nothing to do and orphans not due is not notable: it is
// most rounds of a poller run every minute.
func (r *Report) Notable() bool {
	return r.Work() || r.Error != "" || r.Pending || r.Compacted.Skipped != "" || r.Compacted.Deferred > 0
}

// maintenanceJSON is the maintenance object of ingest --json and of serve's
// maintenance lines (docs/exit-codes.md, "JSON report").
type maintenanceJSON struct {
	FilesIn            int        `json:"files_in"`
	BytesIn            int64      `json:"bytes_in"`
	FilesOut           int        `json:"files_out"`
	RowsReplaced       int64      `json:"rows_replaced,omitempty"`
	PartitionsDropped  []string   `json:"partitions_dropped,omitempty"`
	RowsDropped        int64      `json:"rows_dropped,omitempty"`
	SnapshotsExpired   int        `json:"snapshots_expired"`
	KeysRemembered     int        `json:"keys_remembered"`
	FilesDeleted       int        `json:"files_deleted"`
	OrphansRemoved     int        `json:"orphans_removed"`
	Pending            bool       `json:"pending"`
	Skipped            string     `json:"skipped,omitempty"`
	CompactionSkipped  string     `json:"compaction_skipped,omitempty"`
	CompactionDeferred int        `json:"compaction_deferred,omitempty"`
	CompactionIdle     string     `json:"compaction_idle,omitempty"`
	OrphansLastChecked *time.Time `json:"orphans_last_checked,omitempty"`
	OrphansNextCheck   *time.Time `json:"orphans_next_check,omitempty"`
	Error              string     `json:"error,omitempty"`
	Seconds            float64    `json:"seconds"`
}

// MarshalJSON renders r as the maintenance object of ingest --json and of
// serve's maintenance lines (docs/exit-codes.md, "JSON report"): the
// round's sums; `tables maintain --json` renders it in full.
func (r Report) MarshalJSON() ([]byte, error) {
	m := maintenanceJSON{Pending: r.Pending, Skipped: r.Skipped, Seconds: r.Took.Seconds(),
		SnapshotsExpired: len(r.Expired.Expired), KeysRemembered: r.Expired.Remembered,
		FilesDeleted: r.Expired.FilesDeleted, CompactionSkipped: r.Compacted.Skipped,
		CompactionDeferred: r.Compacted.Deferred, CompactionIdle: r.CompactionIdle(),
		OrphansRemoved: r.OrphansRemoved(), Error: r.Error}
	m.FilesIn, m.BytesIn, m.FilesOut, m.RowsReplaced = r.Compaction()
	m.PartitionsDropped, m.RowsDropped = r.RetentionDropped()
	if next, last := r.OrphansNotDue(); !next.IsZero() {
		m.OrphansNextCheck = &next
		if !last.IsZero() {
			last = last.UTC()
			m.OrphansLastChecked = &last
		}
	}
	// Not escaped for HTML here: the encoder of the document around it
	// escapes as it does everywhere else.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// CompactResult is what a compaction did (lake.Table.Compact).
type CompactResult struct {
	Groups     []Group
	SnapshotID int64 // the replace snapshot; 0 when nothing was committed
	Version    int
	// Dropped counts groups planned but not committed because another
	// writer replaced one of their files meanwhile (their output was
	// deleted; nothing is lost).
	Dropped int
	// Skipped says why nothing was planned although files may be small:
	// the table has row-level delete files (written by another engine),
	// which this rewrite does not apply.
	Skipped string
	// Deferred counts groups planned but left for a later round: the
	// round's bound on the bytes it rewrites (lake.CompactOptions.MaxBytes)
	// was spent, or their estimated rewrite did not fit before the
	// deadline.
	// Abandoned counts those whose rewrite was cut at the deadline (their
	// files deleted). Both wait for the next round.
	Deferred, Abandoned int
	// Idle says why nothing was planned on a table without delete files,
	// e.g. "every data file is at least 8MiB (timelake.target-file-size)".
	Idle string
}

// ExpireResult is what an expiry did (lake.Table.Expire).
type ExpireResult struct {
	Expired []ExpiredSnapshot // oldest first
	Kept    int               // snapshots left in the table
	// Remembered is how many batch ids moved into the load history.
	Remembered int
	// FilesDeleted counts the manifest lists, manifests and data files
	// deleted because only expired snapshots referenced them.
	FilesDeleted int
	// Version is N of the vN.metadata.json written; the loaded version when
	// nothing was expired or DryRun is set.
	Version int
	// Left counts the snapshots due for expiry that
	// lake.ExpireOptions.Deadline left for a later round.
	Left int
}

// RetentionResult is what retention did (lake.Table.ApplyRetention).
type RetentionResult struct {
	// Cutoff is the time before which a partition's end must lie to be
	// dropped (now minus the retention).
	Cutoff     time.Time
	Partitions []string // dropped (or that would be), e.g. time_day=2025-01-01
	Files      int
	Rows       int64
	Bytes      int64
	SnapshotID int64 // the delete snapshot; 0 when nothing was committed
	Version    int
	// Unjudged counts data files whose partition tells no time (written
	// with another partition spec): they are kept.
	Unjudged int
}

// OrphanResult is what orphan removal found (lake.Table.RemoveOrphans).
type OrphanResult struct {
	Files []string // orphans, relative to the table location (data/..., metadata/...)
	Bytes int64
	// Young counts unreferenced files kept because they are younger than
	// MinAge (maybe a commit in flight).
	Young int
	// Left counts orphans found and not deleted: their deletes failed, or
	// ctx ended first. Files and Bytes do not count them.
	Left int
}
