package lake

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"
)

// ExpireOptions selects the snapshots Table.Expire removes.
type ExpireOptions struct {
	// OlderThan: snapshots committed more than OlderThan before now may
	// be expired. 0 uses the table property
	// history.expire.max-snapshot-age-ms (Iceberg's default: 5 days).
	OlderThan time.Duration
	// RetainLast: the newest RetainLast snapshots of the main branch are
	// kept whatever their age. 0 uses history.expire.min-snapshots-to-keep
	// (Iceberg's default: 1).
	RetainLast int
	// DryRun reports what would be expired and writes nothing.
	DryRun bool

	// beforeCommit, when set, runs right before each attempt's metadata
	// write (tests: another writer commits first).
	beforeCommit func(attempt int) error
}

// ExpiredSnapshot is one snapshot Expire removed (or would remove).
type ExpiredSnapshot struct {
	SnapshotID  int64
	CommittedAt time.Time // UTC
	BatchID     string    // timelake.batch-id; "" when the snapshot has none
}

// ExpireResult is what Expire did.
type ExpireResult struct {
	Expired []ExpiredSnapshot // oldest first
	Kept    int               // snapshots left in the table
	// Version is N of the vN.metadata.json written; the loaded version when
	// nothing was expired or DryRun is set.
	Version int
}

// expireAttempts bounds the commits Expire tries when other writers (ingest)
// commit in between.
const expireAttempts = 20

// Expire removes old snapshots and then the files only they referenced:
// Iceberg's expire-snapshots maintenance as iceberg-go implements it
// (Transaction.ExpireSnapshots). A snapshot is kept when a branch or tag
// points at it, when it is among the newest RetainLast of its branch, or
// when it is younger than OlderThan; the others leave the metadata, and
// then the manifest lists, manifests and data files that no kept snapshot
// references are deleted (an append-only table keeps every data file).
//
// The batch ids of expired snapshots are forgotten (timelake-format.md,
// "Snapshots and batch ids"): a landing file re-sent under one of them
// loads again. OlderThan is therefore the dedupe window.
//
// The snapshots to expire are chosen once, on the newest version, and
// removed through the commit protocol (expireMutation): each attempt
// removes them from the newest version (a snapshot that became current or
// the head of a ref is refused); when another writer (ingest) commits
// first, the attempt is retried, expireAttempts times at most (then an
// error wrapping table.ErrCommitFailed). Other errors:
// I/O, and settings iceberg-go refuses (gc.enabled=false). When the
// snapshots were expired but deleting the unreferenced files failed, the
// result is returned with the error. On success the Table holds the new
// version.
func (t *Table) Expire(ctx context.Context, opts ExpireOptions) (ExpireResult, error) {
	var xo []table.ExpireSnapshotsOpt
	if opts.OlderThan > 0 {
		xo = append(xo, table.WithOlderThan(opts.OlderThan))
	}
	if opts.RetainLast > 0 {
		xo = append(xo, table.WithRetainLast(opts.RetainLast))
	}
	if err := t.Refresh(ctx); err != nil {
		return ExpireResult{}, err
	}
	base := t.Iceberg()
	txn := base.NewTransaction()
	if err := txn.ExpireSnapshots(xo...); err != nil {
		return ExpireResult{}, fmt.Errorf("expire snapshots of %s: %w", t.name, err)
	}
	staged, err := txn.StagedTable()
	if err != nil {
		return ExpireResult{}, fmt.Errorf("expire snapshots of %s: %w", t.name, err)
	}
	res := ExpireResult{Expired: expiredSnapshots(base.Metadata(), staged.Metadata()),
		Kept: len(staged.Metadata().Snapshots()), Version: t.Version()}
	if opts.DryRun || len(res.Expired) == 0 {
		return res, nil
	}
	m := &expireMutation{t: t, ids: make(map[int64]bool, len(res.Expired)), bases: map[int]expireBase{}}
	for _, e := range res.Expired {
		m.ids[e.SnapshotID] = true
	}
	cr, err := t.commit(ctx, m, CommitOptions{MaxAttempts: expireAttempts, BeforeCommit: opts.beforeCommit})
	if err != nil {
		return ExpireResult{}, fmt.Errorf("expire snapshots of %s: %w", t.name, err)
	}
	res.Version = cr.Version
	h, _ := t.loaded()
	res.Kept = len(h.snaps)
	if b, ok := m.bases[cr.Attempt]; ok && cr.Committed {
		if err := t.deleteExpiredFiles(ctx, b.head, b.version, m.removed(b.head)); err != nil {
			return res, fmt.Errorf("expired %d snapshots of %s, but some files they alone referenced were not deleted: %w",
				len(res.Expired), t.name, err)
		}
	}
	return res, nil
}

// expireMutation removes chosen snapshots from the newest version.
// Removing old snapshots commutes with appends on top of the current one,
// so a lost race is rebuilt on the newest version with the same choice;
// a chosen snapshot that became current or the head of a ref is refused.
type expireMutation struct {
	t     *Table
	ids   map[int64]bool
	bases map[int]expireBase // per attempt: the version it was built on
}

type expireBase struct {
	head    *head
	version int
}

// indexOnly: an attempt needs only the newest version's snapshot index, so
// it stays short against an ingest that commits back to back.
func (m *expireMutation) indexOnly() bool { return true }

// removed returns the chosen ids that base holds.
func (m *expireMutation) removed(base *head) []int64 {
	var out []int64
	for id := range m.ids {
		if base.snapshotIDTaken(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (m *expireMutation) build(_ context.Context, base *head, n int, attempt int) (*head, []byte, error) {
	ids := m.removed(base)
	if len(ids) == 0 {
		return nil, nil, errNothingToCommit // expired by another writer meanwhile
	}
	m.bases[attempt] = expireBase{base, n}
	set := make(map[int64]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return base.withoutSnapshots(set, m.t.lake.metadataLocation(m.t.name, n), time.Now().UnixMilli())
}

// finish: an expiry writes nothing but its version.
func (m *expireMutation) finish(context.Context, int, bool) {}

// deleteExpiredFiles deletes the manifest lists, manifests and data files
// that the snapshots ids of version v (pre) referenced and no snapshot of
// the loaded version does: iceberg-go's remove-snapshots post-commit step.
func (t *Table) deleteExpiredFiles(ctx context.Context, pre *head, v int, ids []int64) error {
	preMeta, err := pre.metadata()
	if err != nil {
		return err
	}
	before := table.New(t.ident(), preMeta, t.lake.metadataLocation(t.name, v), t.lake.fsF, readOnly{})
	return table.NewRemoveSnapshotsUpdate(ids, true).PostCommit(ctx, before, t.Iceberg())
}

// expiredSnapshots lists the snapshots of before that after no longer has,
// oldest first.
func expiredSnapshots(before, after table.Metadata) []ExpiredSnapshot {
	kept := map[int64]bool{}
	for _, s := range after.Snapshots() {
		kept[s.SnapshotID] = true
	}
	out := []ExpiredSnapshot{}
	for _, s := range before.Snapshots() {
		if kept[s.SnapshotID] {
			continue
		}
		e := ExpiredSnapshot{SnapshotID: s.SnapshotID, CommittedAt: time.UnixMilli(s.TimestampMs).UTC()}
		if s.Summary != nil {
			e.BatchID = s.Summary.Properties[SummaryBatchID]
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b ExpiredSnapshot) int { return a.CommittedAt.Compare(b.CommittedAt) })
	return out
}
