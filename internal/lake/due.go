package lake

import (
	"time"

	"github.com/timelake/timelake/internal/lake/maintenance"
)

// SnapshotsDue counts the snapshots of the loaded version that an expiry
// with these settings (Expire's OlderThan, RetainLast and RetainAtMost) would
// expire now: committed longer than olderThan ago by the lake's clock (or
// beyond the newest retainAtMost of the main branch), not among the
// newest retainLast of the main branch, not the head of a ref nor in the
// ancestry of another branch. It reads the loaded snapshot index only (no
// request), so a run may ask it after every commit. Errors: the version's
// refs do not parse.
func (t *Table) SnapshotsDue(olderThan time.Duration, retainLast, retainAtMost int) (int, error) {
	h, _ := t.loaded()
	due, err := maintenance.ChooseExpired(h, t.lake.now().Add(-olderThan), max(1, retainLast), retainAtMost)
	if err != nil {
		return 0, err
	}
	return len(due), nil
}
