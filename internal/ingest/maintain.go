package ingest

import (
	"context"
	"time"

	"github.com/timelake/timelake/internal/lake"
)

// DefaultMaintenanceBudget bounds the maintenance after an ingest run: a
// sixth of a one-minute cron interval, so the next run never waits for it.
const DefaultMaintenanceBudget = 10 * time.Second

// Maintenance is what the table maintenance after an ingest run did (the
// report's maintenance object; docs/maintenance.md).
type Maintenance struct {
	// Compaction: data files rewritten (FilesIn, BytesIn) into FilesOut
	// files.
	FilesIn  int   `json:"files_in"`
	BytesIn  int64 `json:"bytes_in"`
	FilesOut int   `json:"files_out"`
	// RowsReplaced counts the rows compaction left out under
	// timelake.read-dedup: a newer batch's row has their series key and
	// time.
	RowsReplaced int64 `json:"rows_replaced,omitempty"`
	// PartitionsDropped and RowsDropped: the partitions older than
	// timelake.retention that this round dropped, and their rows.
	PartitionsDropped []string `json:"partitions_dropped,omitempty"`
	RowsDropped       int64    `json:"rows_dropped,omitempty"`
	// SnapshotsExpired and KeysRemembered: snapshots expired, and the
	// batch ids they carried that moved into the load history.
	SnapshotsExpired int `json:"snapshots_expired"`
	KeysRemembered   int `json:"keys_remembered"`
	// FilesDeleted counts files only expired snapshots referenced, and
	// orphan files removed.
	FilesDeleted   int `json:"files_deleted"`
	OrphansRemoved int `json:"orphans_removed"`
	// Pending is set when the budget ran out with work left (the next run
	// goes on).
	Pending bool `json:"pending"`
	// Skipped says why nothing was done (the table's settings).
	Skipped string `json:"skipped,omitempty"`
	// CompactionSkipped says why compaction planned nothing (row-level
	// delete files of another engine).
	CompactionSkipped string `json:"compaction_skipped,omitempty"`
	// CompactionDeferred counts groups left for a later round: the
	// round's bound on the bytes it rewrites was spent, or their estimated
	// rewrite did not fit the budget.
	CompactionDeferred int `json:"compaction_deferred,omitempty"`
	// CompactionIdle says why compaction had nothing to do (every file
	// at the target size, too few small files).
	CompactionIdle string `json:"compaction_idle,omitempty"`
	// OrphansLastChecked and OrphansNextCheck say, when orphan files were
	// not looked for this round (they are once an hour), when they were
	// last and when a round looks again.
	OrphansLastChecked *time.Time `json:"orphans_last_checked,omitempty"`
	OrphansNextCheck   *time.Time `json:"orphans_next_check,omitempty"`
	// Error is why maintenance stopped; the run's files are loaded
	// whatever it says.
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Work reports whether maintenance changed anything.
func (m *Maintenance) Work() bool {
	return m.FilesIn > 0 || m.SnapshotsExpired > 0 || m.FilesDeleted > 0 || m.OrphansRemoved > 0 || len(m.PartitionsDropped) > 0
}

// Notable reports whether a run's output should say what maintenance did
// or left: work done, an error, work left for the next run (the time
// budget, compaction's byte bound), or compaction skipped (delete files).
// A round with nothing to do and orphans not due is not notable: it is
// most rounds of a poller run every minute.
func (m *Maintenance) Notable() bool {
	return m.Work() || m.Error != "" || m.Pending || m.CompactionSkipped != "" || m.CompactionDeferred > 0
}

// Maintain runs lake.Table.Maintain within budget and sums up what it did
// (after an ingest run, and between loads in serve). A failure does not
// fail the run, whose files are committed: it is reported (Error), and
// `timelake tables maintain` fails on it.
func Maintain(ctx context.Context, tbl *lake.Table, budget time.Duration) *Maintenance {
	rep, err := tbl.Maintain(ctx, lake.MaintainOptions{Budget: budget})
	m := &Maintenance{Pending: rep.Pending, Skipped: rep.Skipped, Seconds: rep.Took.Seconds(),
		SnapshotsExpired: len(rep.Expired.Expired), KeysRemembered: rep.Expired.Remembered,
		FilesDeleted: rep.Expired.FilesDeleted, CompactionSkipped: rep.Compacted.Skipped,
		CompactionDeferred: rep.Compacted.Deferred}
	if rep.Compacted.Version != 0 && rep.Compacted.Skipped == "" {
		m.CompactionIdle = rep.Compacted.Idle
	}
	if rep.Orphans == nil && !rep.OrphansNext.IsZero() {
		next := rep.OrphansNext.UTC()
		m.OrphansNextCheck = &next
		if !rep.OrphansCheckedAt.IsZero() {
			last := rep.OrphansCheckedAt.UTC()
			m.OrphansLastChecked = &last
		}
	}
	for _, g := range rep.Compacted.Groups {
		m.FilesIn += g.FilesIn
		m.BytesIn += g.BytesIn
		m.FilesOut += g.FilesOut
		m.RowsReplaced += g.Replaced
	}
	if r := rep.Retention; r != nil && r.SnapshotID != 0 {
		m.PartitionsDropped, m.RowsDropped = r.Partitions, r.Rows
	}
	if rep.Orphans != nil {
		m.OrphansRemoved = len(rep.Orphans.Files)
	}
	if err != nil {
		m.Error = err.Error()
	}
	return m
}
