package lake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/timelake/timelake/internal/lake/maintenance"
	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/settings/quantity"
)

// Retention (timelake.retention, docs/maintenance.md): a table may keep
// its rows for a period, e.g. 400d, after which maintenance drops them. It
// drops whole partitions only: a partition of the time column whose end
// (the start of the next day, hour or month) is older than the retention.
// The drop is metadata only, an Iceberg delete snapshot whose manifests
// mark every data file of those partitions DELETED, committed through the
// commit protocol like every change (Table.commit); the files themselves
// are deleted when the snapshots that still read them expire (expire.go),
// as a compaction's are. The partitions are worked out again on the
// newest version at every commit attempt, so a file a writer appended to
// such a partition meanwhile goes with it: a partition is never dropped in
// part. A row older than the retention that is loaded later (a gateway's
// late file) goes at the next round.

// SummaryRetention names the retention a delete snapshot applied (its
// summary holds it, e.g. 400d).
const SummaryRetention = "timelake.retention"

// RetentionResult is what ApplyRetention did
// (maintenance.RetentionResult).
type RetentionResult = maintenance.RetentionResult

// ApplyRetention drops the partitions of the table whose end is older than
// retention (see above), in one delete snapshot; dryRun only reports them.
// On success the Table holds the new version.
//
// Errors: reading the manifests, and those of the commit protocol.
func (t *Table) ApplyRetention(ctx context.Context, retention time.Duration, dryRun bool) (RetentionResult, error) {
	if err := t.Refresh(ctx); err != nil {
		return RetentionResult{}, err
	}
	h, v := t.loaded()
	res := RetentionResult{Cutoff: t.lake.now().Add(-retention).UTC(), Version: v.N}
	plan, err := t.retentionPlan(ctx, h, res.Cutoff)
	if err != nil {
		return res, fmt.Errorf("retention of %s: %w", t.name, err)
	}
	res.Unjudged = plan.unjudged
	if dryRun || len(plan.files) == 0 {
		res.Partitions, res.Files, res.Rows, res.Bytes = plan.partitions(), len(plan.files), plan.rows, plan.bytes
		return res, nil
	}
	m := &retentionMutation{rewriteMutation: rewriteMutation{t: t, attempts: map[int]*rewriteAttempt{}},
		cutoff: res.Cutoff, retention: retention, plans: map[int]retentionPlan{}}
	cr, err := t.commit(ctx, m, CommitOptions{})
	if err != nil {
		return res, fmt.Errorf("retention of %s: %w", t.name, err)
	}
	res.Version = cr.Version
	if p, ok := m.plans[cr.Attempt]; ok && cr.Committed {
		res.SnapshotID = m.attempts[cr.Attempt].snapshotID
		res.Partitions, res.Files, res.Rows, res.Bytes, res.Unjudged = p.partitions(), len(p.files), p.rows, p.bytes, p.unjudged
	}
	return res, nil
}

// retentionPlan is the data files of a version that retention drops.
type retentionPlan struct {
	files    map[string]bool // paths
	parts    map[string]bool
	rows     int64
	bytes    int64
	unjudged int
}

func (p retentionPlan) partitions() []string { return slices.Sorted(maps.Keys(p.parts)) }

// retentionPlan finds the live data files of h's current snapshot whose
// partition ends at or before cutoff.
func (t *Table) retentionPlan(ctx context.Context, h *tablemeta.Indexed, cutoff time.Time) (retentionPlan, error) {
	plan := retentionPlan{files: map[string]bool{}, parts: map[string]bool{}}
	files, _, err := t.liveFiles(ctx, h, nil)
	if err != nil {
		return plan, err
	}
	c, err := contractFromProps(h.Props(), h.Write().CurrentSchema())
	if err != nil {
		return plan, err
	}
	specs := map[int]iceberg.PartitionSpec{}
	for _, s := range h.Write().PartitionSpecs() {
		specs[s.ID()] = s
	}
	timeID := -1
	if f, ok := h.Write().CurrentSchema().FindFieldByName(c.TimeColumn); ok {
		timeID = f.ID
	}
	for _, f := range files {
		df := f.Entry.DataFile()
		if df.ContentType() != iceberg.EntryContentData {
			continue
		}
		end, ok := maintenance.PartitionEnd(specs[int(df.SpecID())], timeID, df.Partition())
		if !ok {
			plan.unjudged++
			continue
		}
		if end.After(cutoff) {
			continue
		}
		plan.files[df.FilePath()] = true
		plan.parts[f.Partition] = true
		plan.rows += df.Count()
		plan.bytes += df.FileSizeBytes()
	}
	return plan, nil
}

// retentionMutation commits the delete snapshot of a retention round,
// planned again on the newest version at every attempt. Its snapshot is
// written by a delete producer (snapshotProducer.rewrite), and the files
// of attempts that lost are deleted as a compaction's are
// (rewriteMutation.cleanUp).
type retentionMutation struct {
	rewriteMutation
	cutoff    time.Time
	retention time.Duration
	plans     map[int]retentionPlan
}

func (m *retentionMutation) build(ctx context.Context, base *tablemeta.Indexed, v versionRef, attempt int) (*tablemeta.Change, error) {
	t := m.t
	if m.producer == nil {
		m.producer = newDeleteProducer(t)
	}
	parent, err := base.CurrentSnapshot()
	if err != nil {
		return nil, err
	}
	if parent == nil {
		return nil, errNothingToCommit
	}
	plan, err := t.retentionPlan(ctx, base, m.cutoff)
	if err != nil {
		return nil, err
	}
	_, mfs, err := t.liveFiles(ctx, base, nil)
	if err != nil {
		return nil, err
	}
	// An earlier attempt's commit may have landed unrecognised (its
	// version deleted as an old one, its snapshot expired): the newest
	// version then has nothing left to drop, but it, or a later
	// snapshot the table keeps, names the manifests that attempt
	// wrote. They are the table's, and cleanUp keeps every file
	// (heldOwnFiles).
	if err := m.heldOwnFiles(ctx, base, nil, mfs, nil); err != nil {
		return nil, err
	}
	if len(plan.files) == 0 {
		return nil, errNothingToCommit
	}
	a := &rewriteAttempt{snapshotID: newSnapshotID(base, nil)}
	m.attempts[attempt], m.plans[attempt] = a, plan
	snap, refs, err := m.producer.rewrite(ctx, base, parent, mfs, a.snapshotID, attempt, fileChange{
		deleted: plan.files, changedParts: int64(len(plan.parts)),
		props: iceberg.Properties{SummaryRetention: quantity.FormatAge(m.retention)},
	})
	if err != nil {
		return nil, err
	}
	a.refs = append(a.refs, refs...)
	return tablemeta.AddSnapshots(nil, snap), nil
}
