package ingest

import (
	"context"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake"
)

// DefaultExpireDue is how many snapshots due for expiry (older than the
// table's timelake.snapshot-retention or beyond its timelake.max-snapshots,
// and beyond its timelake.min-snapshots)
// a run lets pile up before it expires them between two of its commits:
// about 240 KB of metadata that every commit would otherwise rewrite
// (docs/ingest.md, "A long run"). Twice as many are expired whatever the
// share of the run's time it takes, so the newest metadata holds at most
// the snapshots of the retention and about 480 KB more.
const DefaultExpireDue = 250

// runExpiryShare is the share of a run's time that expiry between its
// commits may take: a tenth.
const runExpiryShare = 10

// RunExpiry is what snapshot expiry between the commits of a run (or of a
// serve load) did: the report's expired_during_run object.
type RunExpiry struct {
	// Rounds counts the expiries run between commits.
	Rounds int `json:"rounds"`
	// SnapshotsExpired and KeysRemembered: snapshots expired, and the
	// batch ids they carried that moved into the load history.
	SnapshotsExpired int `json:"snapshots_expired"`
	KeysRemembered   int `json:"keys_remembered"`
	// FilesDeleted counts the manifest lists and manifests only expired
	// snapshots referenced.
	FilesDeleted int     `json:"files_deleted"`
	Seconds      float64 `json:"seconds"`
	// Error is why expiry stopped for the rest of the run; the run's
	// files are loaded whatever it says, and the maintenance after the
	// run tries again.
	Error string `json:"error,omitempty"`
}

// expireHardFactor: past this many times the run's bound of snapshots due
// (ExpireDue), expiry runs between commits whatever share of the run's time
// it took so far.
const expireHardFactor = 2

// runExpirer keeps the time expiry took during one pipeline, so that it
// stays within runExpiryShare of it.
type runExpirer struct {
	start time.Time
	spent time.Duration
	off   bool // stopped: an expiry failed, or the table is not maintained
}

// expireDue is the run's bound on the snapshots due for expiry.
func (r *runner) expireDue() int {
	if r.cfg.ExpireDue != 0 {
		return r.cfg.ExpireDue
	}
	return DefaultExpireDue
}

// expireBetween runs snapshot expiry between two commits of a run, when
// more than expireDue snapshots of the table are due for expiry under its
// maintenance settings and the expiries of the run so far took less than a
// tenth of its time; the expiry is given the rest of that tenth (at most
// MaintenanceBudget) as its deadline. Past expireHardFactor times the bound
// it runs whatever its share so far, for up to MaintenanceBudget: the
// metadata every commit rewrites stays bounded. Like the maintenance after
// the run it keeps every promise of the table's settings: only snapshots
// older than timelake.snapshot-retention are expired, or beyond the newest
// timelake.max-snapshots (their files deleted once past the retention, by
// the first expiry after, deferred.go in lake), the newest
// timelake.min-snapshots are kept, and the batch ids of those expired move
// into the load history in the same commit, where the run's own
// already-loaded checks (FindLoaded, and the commit's) find them. Nothing is
// expired in a dry run, with MaintenanceBudget 0 (no maintenance from the
// run at all), with ExpireDue < 0, or on a table whose settings do not
// enable maintenance or whose gc.enabled is false. An expiry that fails is
// reported (RunExpiry.Error) and not tried again in this run: the files
// are committed, and the maintenance after the run goes on.
func (r *runner) expireBetween(ctx context.Context, ex *runExpirer) {
	if ex.off || r.tbl == nil || r.cfg.DryRun || r.cfg.MaintenanceBudget <= 0 || r.expireDue() < 0 || ctx.Err() != nil {
		return
	}
	props := r.tbl.Properties()
	s := lake.MaintenanceSettingsOf(props)
	if !s.Enabled || !props.GetBool(table.GCEnabledKey, table.GCEnabledDefault) {
		ex.off = true
		return
	}
	due, err := r.tbl.SnapshotsDue(s.SnapshotRetention, s.MinSnapshots, s.MaxSnapshots)
	if err != nil {
		r.noteRunExpiry(lake.ExpireResult{}, 0, err)
		ex.off = true
		return
	}
	if due <= r.expireDue() {
		return
	}
	// A tenth of the run's time so far, less what expiry took of it; past
	// expireHardFactor times the bound (the expiry of a snapshot costs
	// more than a tenth of its file's load), the time it takes, so the
	// metadata stays bounded whatever the run loads.
	share := time.Since(ex.start)/runExpiryShare - ex.spent
	if due > expireHardFactor*r.expireDue() {
		share = max(share, r.cfg.MaintenanceBudget)
	}
	if share <= 0 {
		return
	}
	t0 := time.Now()
	res, err := r.tbl.Expire(ctx, lake.ExpireOptions{OlderThan: s.SnapshotRetention, RetainLast: s.MinSnapshots, RetainAtMost: s.MaxSnapshots,
		Deadline: t0.Add(min(share, r.cfg.MaintenanceBudget))})
	took := time.Since(t0)
	ex.spent += took
	if err != nil && ctx.Err() != nil {
		err = nil // the run stops: its own error says why
	}
	if err != nil {
		ex.off = true
	}
	r.noteRunExpiry(res, took, err)
}

// noteRunExpiry adds an expiry between commits to the report.
func (r *runner) noteRunExpiry(res lake.ExpireResult, took time.Duration, err error) {
	e := r.rep.ExpiredDuringRun
	if e == nil {
		e = &RunExpiry{}
		r.rep.ExpiredDuringRun = e
	}
	e.Rounds++
	e.SnapshotsExpired += len(res.Expired)
	e.KeysRemembered += res.Remembered
	e.FilesDeleted += res.FilesDeleted
	e.Seconds += took.Seconds()
	if err != nil {
		e.Error = err.Error()
		r.log.Warn("snapshot expiry between commits stopped for this run (the maintenance after it tries again)",
			"table", r.cfg.Table.String(), "err", err)
	}
}
