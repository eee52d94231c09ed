package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
	"golang.org/x/sync/errgroup"
)

// commit commits the prepared items of a batch in one metadata write and
// returns the rest of the batch's work: deleting the committed landing
// objects (or settling duplicates) and recording every item's result in
// order, which may run while the next batch commits. finish returns the
// first error, a fatal item error after the others are recorded. When the
// commit itself fails, commit returns its error and finish only records the
// items that were already final.
func (r *runner) commit(ctx context.Context, items []*item) (finish func() error, err error) {
	var firstErr error
	var ps []*lake.Prepared
	var pending []*item
	for _, it := range items {
		switch {
		case it.err != nil:
			if firstErr == nil {
				firstErr = it.err
			}
		case it.prepared != nil:
			ps = append(ps, it.prepared)
			pending = append(pending, it)
		}
	}
	// Already loaded, quarantined or a dry run: final; and the committed
	// items once finished.
	recordDone := func() {
		for _, it := range items {
			if it.done {
				r.recordItem(it)
			}
		}
	}
	var results []lake.AppendResult
	if len(ps) > 0 {
		t0 := time.Now()
		results, err = r.tbl.Commit(ctx, ps, lake.CommitOptions{})
		if r.cfg.OnCommit != nil {
			keys := make([]string, len(pending))
			for i, it := range pending {
				keys[i] = it.obj.Key
			}
			r.cfg.OnCommit(keys, time.Since(t0), err)
		}
		if err != nil {
			return func() error { recordDone(); return firstErr }, r.lakeErr(err)
		}
		if pending, results, err = r.afterSchemaConflicts(ctx, pending, results); err != nil {
			return func() error { recordDone(); return firstErr }, err
		}
	}
	return func() error {
		// Each delete is one request, independent of the others.
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for i, it := range pending {
			g.Go(func() error {
				if err := r.deleteCommitted(gctx, it, results[i]); err != nil {
					return err
				}
				it.done = true
				return nil
			})
		}
		err := g.Wait()
		// Report every file that is finished, even when another failed.
		recordDone()
		if err != nil {
			return err
		}
		return firstErr
	}, nil
}

func (r *runner) recordItem(it *item) {
	if it.gone {
		return
	}
	it.res.Seconds = time.Since(it.start).Seconds()
	r.record(it.res)
}

// deleteCommitted completes a committed item: delete the landing object, or settle a
// batch that another writer committed first.
func (r *runner) deleteCommitted(ctx context.Context, it *item, ar lake.AppendResult) error {
	if ar.Duplicate {
		res, err := r.alreadyLoaded(ctx, it.res, it.src, *ar.Existing)
		if err != nil {
			return err
		}
		it.res = res
		return nil
	}
	if r.cfg.AfterCommit != nil {
		if err := r.cfg.AfterCommit(it.obj.Key); err != nil {
			return err
		}
	}
	it.res.Status, it.res.Rows, it.res.SnapshotID, it.res.DataFiles = Loaded, ar.Rows, ar.SnapshotID, ar.DataFiles
	it.res.SchemaChanges = ar.SchemaChanges
	it.res.Reason, it.res.OpenEnd = it.openEndNote, it.openEndNote != ""
	// Delete only what was loaded: an object replaced since it was read
	// (a file still being written, a key re-sent) stays, and the next run
	// quarantines it as different content under a loaded key.
	err := r.cfg.Landing.DeleteIfMatch(ctx, it.obj.Key, it.src.info.ETag)
	if errors.Is(err, storage.ErrPreconditionFailed) {
		it.res.Reason = joinNotes(it.res.Reason, "the file changed after it was read; the new content stays in the landing bucket")
		r.log.Warn("loaded file changed after it was read: not deleted", "key", it.obj.Key, "snapshot", ar.SnapshotID)
		return nil
	}
	if err != nil {
		err = fmt.Errorf("committed %s in snapshot %d but could not delete it (the next run will): %w", it.obj.Key, ar.SnapshotID, err)
		if r.stopsRun(ctx, err) {
			return r.landingErr(err)
		}
		r.log.Info("could not delete a loaded file; the next run finds it loaded and deletes it", "key", it.obj.Key, "err", err)
		it.res.Reason = joinNotes(it.res.Reason, fmt.Sprintf("not deleted (%v): the next run finds it loaded and deletes it", errors.Unwrap(err)))
	}
	return nil
}

// joinNotes joins the notes of a loaded file's line, leaving out empty ones.
func joinNotes(notes ...string) string {
	return strings.Join(slices.DeleteFunc(notes, func(n string) bool { return n == "" }), "; ")
}

// maxSchemaRetries bounds how often one file is prepared again because
// other writers changed the schema under it.
const maxSchemaRetries = 5

// afterSchemaConflicts prepares again, against the newest schema, the files
// of a commit whose batches another writer's schema change left out
// (lake.AppendResult.SchemaConflict: the field ids their data files use
// were taken), and commits each: decoded again, a file may now load as it
// is, or be quarantined if it no longer fits. It returns the items still
// to finish and their results; the others are done.
func (r *runner) afterSchemaConflicts(ctx context.Context, pending []*item, results []lake.AppendResult) ([]*item, []lake.AppendResult, error) {
	keep := 0
	for i, it := range pending {
		ar := results[i]
		for tries := 1; ar.SchemaConflict != nil; tries++ {
			if tries > maxSchemaRetries {
				return nil, nil, fmt.Errorf("%s: other writers kept changing the table's schema; the file stays for the next run: %w", it.obj.Key, ar.SchemaConflict)
			}
			r.log.Info("the table's schema changed under a file: preparing it again", "key", it.obj.Key, "reason", ar.SchemaConflict)
			fresh := r.prepare(ctx, it.obj, func(int64) error { return nil })
			fresh.start = it.start
			*it = *fresh
			if it.err != nil {
				return nil, nil, it.err
			}
			if it.done {
				break
			}
			res, err := r.tbl.Commit(ctx, []*lake.Prepared{it.prepared}, lake.CommitOptions{})
			if err != nil {
				return nil, nil, r.lakeErr(err)
			}
			ar = res[0]
		}
		if !it.done {
			pending[keep], results[keep] = it, ar
			keep++
		}
	}
	return pending[:keep], results[:keep], nil
}
