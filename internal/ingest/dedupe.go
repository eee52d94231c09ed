package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/timelake/timelake/internal/storage"
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
		// Only the copy that was read: a file replaced meanwhile stays.
		if err := r.cfg.Landing.DeleteIfMatch(ctx, d.info.Key, d.info.ETag); err != nil && !errors.Is(err, storage.ErrPreconditionFailed) {
			it.err = r.landingErr(fmt.Errorf("delete %s, a copy of %s: %w", d.info.Key, b.BatchID, err))
			return true
		}
		it.res.Status, it.res.SnapshotID, it.res.SameAs, it.done = AlreadyLoaded, b.SnapshotID, b.BatchID, true
		it.res.Reason = fmt.Sprintf("same content as %s, loaded in snapshot %d; deleted", b.BatchID, b.SnapshotID)
		if source, _ := r.sourceColumnNames(); source != "" {
			// Its rows would have differed in the source column alone:
			// if the key is what tells two senders apart, both are data.
			it.res.Reason += fmt.Sprintf(" (its rows would differ from those loaded only in %s; if two senders may send the same bytes, load with --content-dedupe=false)", source)
		}
		return true
	}
	if first, taken := r.claimContent(d.info.Key, d.content); taken {
		it.res.Status, it.res.SameAs, it.done = Waiting, first, true
		it.res.Reason = fmt.Sprintf("same content as %s, which this run loads; the next run settles it", first)
		return true
	}
	return false
}

// claimContent notes that this run loads content (a content hash) under
// key, unless another key of the run claimed it first: then it returns
// that key and true.
func (r *runner) claimContent(key, content string) (first string, taken bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.contents == nil {
		r.contents = map[string]string{}
	}
	if first, ok := r.contents[content]; ok && first != key {
		return first, true
	}
	r.contents[content] = key
	return "", false
}
