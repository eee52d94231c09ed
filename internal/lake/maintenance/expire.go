package maintenance

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/tablemeta"
)

// ExpiredSnapshot is one snapshot an expiry removes (lake.Table.Expire).
type ExpiredSnapshot struct {
	SnapshotID  int64
	CommittedAt time.Time // UTC
	BatchID     string    // timelake.batch-id; "" when the snapshot has none
	// Early: younger than the retention, expired because the metadata
	// held more than lake.ExpireOptions.RetainAtMost snapshots; its files
	// wait until it is past the retention.
	Early bool
}

// ChooseExpired picks the snapshots of h to expire: committed before
// cutoff, or (atMost > 0) beyond the newest atMost of the main branch's
// ancestry (those younger than cutoff marked Early), and in both cases not
// among the newest retainLast of the main branch's ancestry, not the head
// of a ref, and not in the ancestry of another branch. Oldest first. It
// reads the snapshot index only.
func ChooseExpired(h *tablemeta.Indexed, cutoff time.Time, retainLast, atMost int) ([]ExpiredSnapshot, error) {
	var refs map[string]struct {
		SnapshotID int64  `json:"snapshot-id"`
		Type       string `json:"type"`
	}
	if err := unmarshalOptional(h.Get("refs"), &refs); err != nil {
		return nil, fmt.Errorf("refs: %w", err)
	}
	keep := map[int64]bool{}
	// ancestors walks i and its ancestors while visit says go on.
	ancestors := func(i int, visit func(n int, id int64) bool) {
		seen := map[int]bool{}
		for n := 0; i >= 0 && !seen[i]; n++ {
			seen[i] = true
			r := h.Snaps()[i]
			if !visit(n, r.ID) || !r.HasParent {
				return
			}
			next, ok := h.ByID()[r.Parent]
			if !ok {
				return
			}
			i = next
		}
	}
	ancestors(h.Current(), func(n int, id int64) bool {
		keep[id] = true
		return n+1 < retainLast
	})
	beyond := map[int64]bool{} // main's ancestors past the newest atMost
	if atMost > 0 {
		ancestors(h.Current(), func(n int, id int64) bool {
			if n >= atMost {
				beyond[id] = true
			}
			return true
		})
	}
	for name, ref := range refs {
		keep[ref.SnapshotID] = true
		if i, ok := h.ByID()[ref.SnapshotID]; ok && name != table.MainBranch && ref.Type == string(table.BranchRef) {
			ancestors(i, func(_ int, id int64) bool { keep[id] = true; return true })
		}
	}
	out := []ExpiredSnapshot{}
	for _, r := range h.Snaps() {
		at := time.UnixMilli(r.Timestamp).UTC()
		early := !at.Before(cutoff)
		if keep[r.ID] || early && !beyond[r.ID] {
			continue
		}
		out = append(out, ExpiredSnapshot{SnapshotID: r.ID, CommittedAt: at, BatchID: r.Batch, Early: early})
	}
	slices.SortStableFunc(out, func(a, b ExpiredSnapshot) int { return a.CommittedAt.Compare(b.CommittedAt) })
	return out, nil
}

// LinearTail reports whether the snapshots after the expiry form one line
// (the main branch's ancestry, no other ref) whose oldest member's ancestors
// include every expired snapshot, and returns that oldest kept snapshot's
// index in after.
func LinearTail(after, pre *tablemeta.Indexed, ids []int64) (int, bool) {
	var refs map[string]refSnapshot
	if err := unmarshalOptional(after.Get("refs"), &refs); err != nil {
		return 0, false
	}
	for name := range refs {
		if name != table.MainBranch {
			return 0, false
		}
	}
	if after.Current() < 0 {
		return 0, false
	}
	// Walk main's ancestry in after: it must hold every snapshot of after.
	seen, oldest := 0, -1
	for i := after.Current(); i >= 0; {
		seen++
		oldest = i
		r := after.Snaps()[i]
		next, ok := after.ByID()[r.Parent]
		if !r.HasParent || !ok {
			break
		}
		i = next
	}
	if seen != len(after.Snaps()) {
		return 0, false
	}
	// Every expired snapshot must be an ancestor of the oldest kept one in
	// pre.
	anc := map[int64]bool{}
	i, ok := pre.ByID()[after.Snaps()[oldest].ID]
	for ok {
		r := pre.Snaps()[i]
		if !r.HasParent {
			break
		}
		anc[r.Parent] = true
		i, ok = pre.ByID()[r.Parent]
	}
	for _, id := range ids {
		if !anc[id] {
			return 0, false
		}
	}
	return oldest, true
}

// refSnapshot is the part of a ref that the clean-up reads.
type refSnapshot struct {
	SnapshotID int64 `json:"snapshot-id"`
}

// unmarshalOptional decodes raw, a member of a version's metadata, into v;
// a member the metadata lacks (nil) leaves v as it is.
func unmarshalOptional(raw json.RawMessage, v any) error {
	if raw == nil {
		return nil
	}
	return json.Unmarshal(raw, v)
}
