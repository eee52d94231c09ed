package lake

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/tablemeta"
)

// RollbackTo makes snapshotID the current snapshot of the main branch again.
// snapshotID must be an ancestor of the current snapshot (Iceberg's
// rollback rule). Only the metadata changes: the main branch's ref, the
// current snapshot and the snapshot-log (tablemeta.RollBack); no snapshot
// is added. The newer snapshots stay in the
// metadata but leave the current ancestry, so their batch ids count as not
// loaded any more (docs/table-format.md, "Snapshots and batch ids"): a file
// re-sent under such a key loads again.
//
// The commit goes through the commit protocol (rollbackMutation): a lost
// race is retried on the newest version as long as the main branch still
// points where it pointed when RollbackTo was called; when a concurrent
// append moved it, RollbackTo fails with ErrBranchMoved instead of undoing
// that append (refresh, look again and decide). On success the Table holds
// the new version.
func (t *Table) RollbackTo(ctx context.Context, snapshotID int64) error {
	m := &rollbackMutation{t: t, target: snapshotID}
	if id, ok := t.CurrentSnapshotID(); ok {
		m.expected = &id
	}
	if _, err := t.commit(ctx, m, CommitOptions{}); err != nil {
		return fmt.Errorf("rollback %s to snapshot %d: %w", t.name, snapshotID, err)
	}
	return nil
}

// ErrBranchMoved is returned by RollbackTo when another writer moved the
// main branch after the rollback was asked for.
var ErrBranchMoved = errors.New("the main branch moved since the table was loaded")

// rollbackMutation points main at target, on the condition that main still
// points at expected (Iceberg's assert-ref-snapshot-id requirement).
type rollbackMutation struct {
	t        *Table
	target   int64
	expected *int64
}

func (m *rollbackMutation) build(_ context.Context, base *tablemeta.Indexed, _ versionRef, _ int) (*tablemeta.Change, error) {
	var cur *int64
	if base.Current() >= 0 {
		id := base.Snaps()[base.Current()].ID
		cur = &id
	}
	switch {
	case cur != nil && *cur == m.target:
		return nil, errNothingToCommit
	case (cur == nil) != (m.expected == nil) || (cur != nil && *cur != *m.expected):
		return nil, fmt.Errorf("%w (now at snapshot %s)", ErrBranchMoved, formatOptionalID(cur))
	}
	// The snapshot-log entry and last-updated-ms, as Iceberg's
	// set-snapshot-ref update on main sets them.
	ms := max(m.t.lake.now().UnixMilli(), base.LastUpdated())
	if err := base.CanRollBack(m.target); err != nil {
		return nil, err
	}
	return tablemeta.RollBack(m.target, ms), nil
}

// cleanUp: a rollback writes nothing but its version.
func (m *rollbackMutation) cleanUp(context.Context, int, bool) {}

func formatOptionalID(id *int64) string {
	if id == nil {
		return "none"
	}
	return strconv.FormatInt(*id, 10)
}

// BatchesOf returns every batch in the current snapshot's ancestry of meta,
// newest first: the pure form of Table.Batches, for callers that hold
// metadata (fixtures, other readers).
func BatchesOf(meta table.Metadata) []BatchInfo {
	var out []BatchInfo
	for _, s := range ancestry(meta) {
		if s.Summary != nil {
			if id, ok := s.Summary.Properties[SummaryBatchID]; ok {
				out = append(out, batchInfo(id, &s))
			}
		}
	}
	return out
}

// FindBatchIn is the pure form of Table.FindBatch: the newest snapshot in
// the current ancestry of meta whose summary has timelake.batch-id = id.
func FindBatchIn(meta table.Metadata, id string) (BatchInfo, bool) {
	s := batchIndex(meta)[id]
	if s == nil {
		return BatchInfo{}, false
	}
	return batchInfo(id, s), true
}

// InCurrentAncestry returns the ids of the current snapshot and all its
// ancestors: the snapshots whose batch ids count as loaded. Other snapshots
// of meta were abandoned (rollback) or belong to other branches.
func InCurrentAncestry(meta table.Metadata) map[int64]bool {
	out := map[int64]bool{}
	for _, s := range ancestry(meta) {
		out[s.SnapshotID] = true
	}
	return out
}
