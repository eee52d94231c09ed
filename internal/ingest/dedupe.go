package ingest

import (
	"context"
	"fmt"
)

// sameContent settles a file whose content (its decompressed bytes) was
// loaded under another key within the table's dedupe window, when
// ContentDedupe is on: it is reported as already loaded, naming the first
// key, and deleted. A second file of this run with the content of one being
// loaded waits in the landing bucket: the next run finds the first loaded.
// It returns true when the item is settled (or failed).
func (r *runner) sameContent(ctx context.Context, it *item, d *download) bool {
	if !r.cfg.ContentDedupe || d.content == "" {
		return false
	}
	b, ok, err := r.tbl.FindContent(ctx, d.content)
	if err != nil {
		it.err = err
		return true
	}
	if ok && b.BatchID != d.info.Key {
		if err := r.cfg.Landing.Delete(ctx, d.info.Key); err != nil {
			it.err = fmt.Errorf("delete %s, a copy of %s: %w", d.info.Key, b.BatchID, err)
			return true
		}
		it.res.Status, it.res.SnapshotID, it.res.SameAs, it.done = AlreadyLoaded, b.SnapshotID, b.BatchID, true
		it.res.Reason = fmt.Sprintf("same content as %s, loaded in snapshot %d; deleted", b.BatchID, b.SnapshotID)
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.contents == nil {
		r.contents = map[string]string{}
	}
	if first, ok := r.contents[d.content]; ok && first != d.info.Key {
		it.res.Status, it.res.SameAs, it.done = Waiting, first, true
		it.res.Reason = fmt.Sprintf("same content as %s, which this run loads; the next run settles it", first)
		return true
	}
	r.contents[d.content] = d.info.Key
	return false
}
