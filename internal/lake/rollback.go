package lake

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// RollbackTo makes snapshotID the current snapshot of the main branch again.
// snapshotID must be an ancestor of the current snapshot (iceberg-go's
// Transaction.RollbackToSnapshot rule). The newer snapshots stay in the
// metadata but leave the current ancestry, so their batch ids count as not
// loaded any more (timelake-format.md, "Snapshots and batch ids"): a file
// re-sent under such a key loads again.
//
// The commit goes through the catalog-free protocol with no batch id: the
// next vN.metadata.json is created conditionally and the branch head is
// asserted, so a concurrent append makes RollbackTo fail with an error
// wrapping table.ErrCommitFailed instead of undoing that append. It is not
// retried: refresh, look again and decide. On success the Table holds the
// new version.
func (t *Table) RollbackTo(ctx context.Context, snapshotID int64) error {
	c := &committer{lake: t.lake, name: t.name}
	txn := t.iceberg(c).NewTransaction()
	if err := txn.RollbackToSnapshot(snapshotID); err != nil {
		return fmt.Errorf("rollback %s to snapshot %d: %w", t.name, snapshotID, err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		return fmt.Errorf("rollback %s to snapshot %d: %w", t.name, snapshotID, err)
	}
	if c.committedHead == nil {
		return fmt.Errorf("rollback %s to snapshot %d: nothing was committed", t.name, snapshotID)
	}
	if err := t.set(c.committedHead, c.committedVersion); err != nil {
		return err
	}
	t.afterCommit(ctx)
	return nil
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
