package lake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/lake/loadhistory"
	"github.com/timelake/timelake/internal/lake/maintenance"
	"github.com/timelake/timelake/internal/lake/tablemeta"
	"github.com/timelake/timelake/internal/storage"
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
	// RetainAtMost, when above 0, bounds the snapshots of the main
	// branch's ancestry the metadata keeps: the older ones are expired
	// even when younger than OlderThan (timelake.max-snapshots; a backlog
	// loaded faster than the retention keeps the metadata small). The
	// files only such early-expired snapshots referenced are not deleted
	// by the expiry: a query may still read them. A record of them is kept (deferred.go),
	// and the first Expire, in any process, once they are past OlderThan
	// deletes them.
	RetainAtMost int
	// DryRun reports what would be expired and writes nothing.
	DryRun bool
	// Deadline, when set, bounds the expiry: the snapshots are expired
	// oldest first in chunks, each sized by the time the chunks before it
	// took per snapshot, and none starts once Deadline is past; those left
	// are counted in ExpireResult.Left for a later round. Clock reads the
	// time (nil: time.Now).
	Deadline time.Time
	Clock    func() time.Time

	// beforeCommit, when set, runs right before each attempt's metadata
	// write (tests: another writer commits first).
	beforeCommit func(attempt int) error
	// beforeDelete, when set, runs after the commit, before the files of
	// the expired snapshots are deleted (tests: another round deletes
	// them first).
	beforeDelete func(expired []int64)
	// firstChunk, when set, replaces expireFirstChunk (tests).
	firstChunk int
}

// ExpiredSnapshot is one snapshot Expire removed (or would remove)
// (maintenance.ExpiredSnapshot).
type ExpiredSnapshot = maintenance.ExpiredSnapshot

// ExpireResult is what Expire did (maintenance.ExpireResult).
type ExpireResult = maintenance.ExpireResult

// expireFirstChunk is how many snapshots an expiry within a deadline
// expires in its first commit, before it knows what one costs: small
// enough to end within a second on S3 (a manifest list read per snapshot).
const expireFirstChunk = 50

// expireAttempts bounds the commits Expire tries when other writers (ingest)
// commit in between.
const expireAttempts = 20

// ErrGCDisabled is returned by Expire for a table with gc.enabled=false:
// its files may be shared with other tables, so none may be deleted
// (Iceberg's rule).
var ErrGCDisabled = errors.New("gc.enabled is false: files of this table may be shared, snapshots are not expired")

// Expire removes old snapshots and then the files only they referenced
// (Iceberg's expire-snapshots maintenance). A snapshot is kept when a branch
// or tag points at it, when it is among the newest RetainLast of the main
// branch, when it is in the ancestry of a branch other than main, or when
// it is younger than OlderThan by the lake's clock; the others leave the
// metadata, and then the manifest lists, manifests and data files that no
// kept snapshot references are deleted.
//
// The batch ids of the expired snapshots of the current ancestry move into
// the load history (history.go) in the same commit: they stay "already
// loaded" for the table's dedupe window (timelake.dedupe-window), however
// short the snapshots are kept.
//
// The snapshots to expire are chosen once, on the newest version, and
// removed through the commit protocol (expireMutation): each attempt
// removes them from the newest version (a snapshot that became current or
// the head of a ref is refused); when another writer (ingest) commits
// first, the attempt is retried, expireAttempts times at most (then an
// error wrapping table.ErrCommitFailed). Other errors: I/O, and
// ErrGCDisabled. When the snapshots were expired but deleting the
// unreferenced files failed, the result is returned with the error (orphan
// file removal deletes them later). On success the Table holds the new
// version.
func (t *Table) Expire(ctx context.Context, opts ExpireOptions) (ExpireResult, error) {
	if err := t.Refresh(ctx); err != nil {
		return ExpireResult{}, err
	}
	h, v := t.loaded()
	props := h.Props()
	if !props.GetBool(table.GCEnabledKey, table.GCEnabledDefault) {
		return ExpireResult{}, fmt.Errorf("expire snapshots of %s: %w", t.name, ErrGCDisabled)
	}
	olderThan, retainLast := opts.OlderThan, opts.RetainLast
	if olderThan <= 0 {
		olderThan = time.Duration(props.GetInt64(table.MaxSnapshotAgeMsKey, table.MaxSnapshotAgeMsDefault)) * time.Millisecond
	}
	if retainLast <= 0 {
		retainLast = max(1, props.GetInt(table.MinSnapshotsToKeepKey, table.MinSnapshotsToKeepDefault))
	}
	cutoff := t.lake.now().Add(-olderThan)
	expired, err := maintenance.ChooseExpired(h, cutoff, retainLast, opts.RetainAtMost)
	if err != nil {
		return ExpireResult{}, fmt.Errorf("expire snapshots of %s: %w", t.name, err)
	}
	res := ExpireResult{Expired: expired, Kept: len(h.Snaps()) - len(expired), Version: v.N}
	if opts.DryRun {
		return res, nil
	}
	deferred, err := t.deleteDeferred(ctx, cutoff)
	if err != nil {
		return res, fmt.Errorf("expire snapshots of %s: files of snapshots expired before: %w", t.name, err)
	}
	if len(expired) == 0 {
		res.FilesDeleted = deferred
		return res, nil
	}
	if opts.Deadline.IsZero() {
		r, err := t.expireChosen(ctx, expired, opts)
		r.FilesDeleted += deferred
		return r, err
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	done := ExpireResult{Expired: []ExpiredSnapshot{}, Kept: len(h.Snaps()), Version: v.N, FilesDeleted: deferred}
	for chunk := cmp.Or(opts.firstChunk, expireFirstChunk); len(expired) > 0 && clock().Before(opts.Deadline); {
		n := min(chunk, len(expired))
		t0 := clock()
		r, err := t.expireChosen(ctx, expired[:n], opts)
		done.Expired = append(done.Expired, r.Expired...)
		done.Remembered += r.Remembered
		done.FilesDeleted += r.FilesDeleted
		if r.Version > 0 { // committed
			done.Version, done.Kept = max(done.Version, r.Version), r.Kept
		}
		if err != nil {
			done.Left = len(expired) - n
			return done, err
		}
		expired = expired[n:]
		per := max(clock().Sub(t0)/time.Duration(n), time.Millisecond)
		// Half the time left, so that the last chunk ends before the
		// deadline though a commit takes longer than the ones before.
		chunk = max(1, int(opts.Deadline.Sub(clock())/per/2))
	}
	done.Left = len(expired)
	return done, nil
}

// expireChosen expires the snapshots chosen (Expire's commit and the
// deletes of the files they alone referenced; its errors).
func (t *Table) expireChosen(ctx context.Context, expired []ExpiredSnapshot, opts ExpireOptions) (ExpireResult, error) {
	h, v := t.loaded()
	res := ExpireResult{Expired: expired, Kept: len(h.Snaps()) - len(expired), Version: v.N}
	m := &expireMutation{t: t, ids: make(map[int64]bool, len(expired)), bases: map[int]expireAttempt{}}
	for _, e := range expired {
		m.ids[e.SnapshotID] = true
	}
	cr, err := t.commit(ctx, m, CommitOptions{MaxAttempts: expireAttempts, BeforeCommit: opts.beforeCommit})
	if err != nil {
		return ExpireResult{}, fmt.Errorf("expire snapshots of %s: %w", t.name, err)
	}
	if err := t.reconcileHistory(ctx, cr.rebased); err != nil {
		return ExpireResult{}, fmt.Errorf("expire snapshots of %s: %w", t.name, err)
	}
	res.Version = cr.Version
	h, _ = t.loaded()
	res.Kept = len(h.Snaps())
	if a, ok := m.bases[cr.Attempt]; ok && cr.Committed {
		res.Remembered = a.remembered
		if opts.beforeDelete != nil {
			opts.beforeDelete(m.removed(a.meta))
		}
		early := map[int64]bool{}
		for _, e := range expired {
			if e.Early {
				early[e.SnapshotID] = true
			}
		}
		n, err := t.deleteExpiredFiles(ctx, a.meta, a.version, m.removed(a.meta), early)
		res.FilesDeleted = n
		if err != nil {
			return res, fmt.Errorf("expired %d snapshots of %s, but some files they alone referenced were not deleted: %w",
				len(res.Expired), t.name, err)
		}
	}
	return res, nil
}

// expireMutation removes chosen snapshots from the newest version and moves
// the batch ids they carried into the load history, in one version.
// Removing old snapshots commutes with appends on top of the current one,
// so a lost race is rebuilt on the newest version with the same choice; a
// chosen snapshot that became current or the head of a ref is refused.
type expireMutation struct {
	t     *Table
	ids   map[int64]bool
	bases map[int]expireAttempt // per attempt: the version it was built on

	written []string // load history segments written, by every attempt
}

type expireAttempt struct {
	meta    *tablemeta.Indexed
	version versionRef
	segment string // the load history segment it wrote, or ""
	// replaced are the segments its history no longer names (merged into
	// segment, or past the dedupe window).
	replaced   []string
	remembered int
}

// indexOnly: an attempt needs only the newest version's snapshot index, so
// it stays short against an ingest that commits back to back.
func (m *expireMutation) indexOnly() bool { return true }

// removed returns the chosen ids that base holds.
func (m *expireMutation) removed(base *tablemeta.Indexed) []int64 {
	var out []int64
	for id := range m.ids {
		if base.SnapshotIDTaken(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (m *expireMutation) build(ctx context.Context, base *tablemeta.Indexed, v versionRef, attempt int) (*tablemeta.Change, error) {
	t := m.t
	ids := m.removed(base)
	if len(ids) == 0 {
		return nil, errNothingToCommit // expired by another writer meanwhile
	}
	// The batch ids of the current ancestry that leave with them.
	var added []LoadRecord
	for _, id := range ids {
		i := base.ByID()[id]
		r := base.Snaps()[i]
		if r.Batch == "" || base.Batches()[r.Batch] != i {
			continue // no batch id, or not loaded (abandoned by a rollback)
		}
		s, err := base.Snapshot(i)
		if err != nil {
			return nil, err
		}
		var summary map[string]string
		if s.Summary != nil {
			summary = s.Summary.Properties
		}
		added = append(added, loadRecordOf(r.Batch, s.SnapshotID, s.TimestampMs, summary))
	}
	props := base.Props()
	now := t.lake.now()
	window := dedupeWindow(props)
	plan := loadhistory.PlanSegments(historySegments(props), added, now, window)
	a := expireAttempt{meta: base, version: v, remembered: len(added)}
	if err := base.CanRemove(ids); err != nil {
		return nil, err
	}
	ch := tablemeta.RemoveSnapshots(ids, now.UnixMilli())
	if len(plan.Added) > 0 || len(plan.Merge) > 0 || len(plan.Dropped) > 0 {
		segs, name, err := t.lake.writeHistory(ctx, t.name, plan, now, window)
		if err != nil {
			return nil, err
		}
		if name != "" {
			a.segment = name
			m.written = append(m.written, name)
		}
		for _, s := range slices.Concat(plan.Merge, plan.Dropped) {
			if !t.lake.linkedSegment(t.name, s.Name) { // a link is never deleted
				a.replaced = append(a.replaced, s.Name)
			}
		}
		loadHistoryLog.name(ch, props, segs)
	}
	m.bases[attempt] = a
	return ch, nil
}

// cleanUp deletes the load history segments written by attempts that did
// not win, and those the winner replaced: its merged segment holds their
// keys, and a reader of an older version that misses one reads the newest
// version's history instead (Table.fromHistory). Whatever is not deleted
// here (a kill, an error) is left to orphan file removal.
func (m *expireMutation) cleanUp(ctx context.Context, won int, unknown bool) {
	if unknown {
		return
	}
	keep := m.bases[won].segment
	var paths []string
	for _, name := range m.written {
		if name != keep {
			paths = append(paths, m.t.lake.ownLocation(m.t.name, name))
		}
	}
	if won > 0 {
		for _, name := range m.bases[won].replaced {
			paths = append(paths, m.t.lake.ownLocation(m.t.name, name))
			m.t.lake.uncache(m.t.name, name)
		}
	}
	m.t.removeFiles(ctx, paths)
}

// deleteExpiredFiles deletes the manifest lists, manifests and data files
// that the snapshots ids of version v (pre) referenced and no snapshot of
// the loaded version does, and returns how many it deleted.
//
// When the kept snapshots are one line of history (main is the only ref
// and every kept snapshot is in its ancestry, after every expired one), a
// file is referenced by a kept snapshot only if the oldest kept one
// references it: Iceberg's incremental file cleanup, which reads the
// manifest lists of the expired snapshots and the oldest kept one only.
// Otherwise it falls back to iceberg-go's remove-snapshots clean-up, which
// reads every kept snapshot's manifest list (and does not count).
func (t *Table) deleteExpiredFiles(ctx context.Context, pre *tablemeta.Indexed, v versionRef, ids []int64, early map[int64]bool) (int, error) {
	after, _ := t.loaded()
	oldest, linear := maintenance.LinearTail(after, pre, ids)
	var newestEarly int64 // commit time of the newest early one, ms
	for _, id := range ids {
		if early[id] {
			newestEarly = max(newestEarly, pre.Snaps()[pre.ByID()[id]].Timestamp)
		}
	}
	if linear {
		kept, err := after.Snapshot(oldest)
		if err != nil {
			return 0, err
		}
		if newestEarly > 0 {
			return t.deleteBeforeEarly(ctx, pre, pre.ByID()[kept.SnapshotID], ids, early, time.UnixMilli(newestEarly))
		}
		paths, err := t.expiredFilesIncremental(ctx, pre, kept, ids)
		if err != nil {
			return 0, err
		}
		return t.deleteFiles(ctx, paths)
	}
	if newestEarly > 0 {
		return 0, nil // left to orphan removal
	}
	preMeta, err := pre.Metadata()
	if err != nil {
		return 0, err
	}
	before := table.New(t.ident(), preMeta, v.Location, t.fsF, readOnly{})
	err = table.NewRemoveSnapshotsUpdate(ids, true).PostCommit(ctx, before, t.Iceberg())
	if isNotExist(err) {
		// A file of an expired snapshot is gone: another round deleted
		// it (and cleans up the rest); orphan removal takes any left.
		t.lake.log.Debug("expired files already deleted by another round", "table", t.name.String(), "err", err)
		return 0, nil
	}
	return 0, err
}

// deleteBeforeEarly is deleteExpiredFiles for an expiry on one line of
// history that removed snapshots before their retention (early, the newest
// committed at newestEarly) with others past it; keptAt is the oldest kept
// snapshot's index in pre. The files of the others that the oldest early
// one does not reference are deleted now (a compaction's replaced data
// files among them); those of the early ones that the oldest kept one does
// not reference wait until they are past the retention (deferDeletes).
func (t *Table) deleteBeforeEarly(ctx context.Context, pre *tablemeta.Indexed, keptAt int, ids []int64, early map[int64]bool, newestEarly time.Time) (int, error) {
	var due, earlyIDs []int64
	for _, id := range ids {
		if early[id] {
			earlyIDs = append(earlyIDs, id)
		} else {
			due = append(due, id)
		}
	}
	// The oldest early one: the early ones are the line below the oldest
	// kept one, the others below them.
	boundary := -1
	for i, ok := keptAt, true; ok; {
		r := pre.Snaps()[i]
		if !r.HasParent {
			break
		}
		if i, ok = pre.ByID()[r.Parent]; ok && early[pre.Snaps()[i].ID] {
			boundary = i
		} else {
			break
		}
	}
	kept, err := pre.Snapshot(keptAt)
	if err != nil {
		return 0, err
	}
	later, err := t.expiredFilesIncremental(ctx, pre, kept, earlyIDs)
	if err != nil {
		return 0, err
	}
	if err := t.deferDeletes(ctx, newestEarly, later); err != nil {
		return 0, err
	}
	if len(due) == 0 || boundary < 0 {
		return 0, nil
	}
	oldestEarly, err := pre.Snapshot(boundary)
	if err != nil {
		return 0, err
	}
	now, err := t.expiredFilesIncremental(ctx, pre, oldestEarly, due)
	if err != nil {
		return 0, err
	}
	return t.deleteFiles(ctx, now)
}

// expiredFilesIncremental returns the files of the snapshots ids of pre
// that kept (the oldest kept snapshot, their descendant on one line of
// history) does not reference: deleteExpiredFiles for a line of history.
func (t *Table) expiredFilesIncremental(ctx context.Context, pre *tablemeta.Indexed, kept *table.Snapshot, ids []int64) ([]string, error) {
	fs, err := t.fsF(ctx)
	if err != nil {
		return nil, err
	}
	keptManifests, err := kept.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read manifest list of snapshot %d: %w", kept.SnapshotID, err)
	}
	refManifests := map[string]bool{}
	for _, mf := range keptManifests {
		refManifests[mf.FilePath()] = true
	}
	snaps := make([]*table.Snapshot, len(ids))
	appendsOnly := isAppend(kept)
	for i, id := range ids {
		if snaps[i], err = pre.Snapshot(pre.ByID()[id]); err != nil {
			return nil, err
		}
		appendsOnly = appendsOnly && isAppend(snaps[i])
	}
	// The manifests and manifest lists are read stageConcurrency at a
	// time: on object storage each is a request of 10 to 30 ms, and an
	// expiry chunk reads hundreds.
	var mu sync.Mutex
	lists := make([]string, len(snaps))
	listed := make([][]iceberg.ManifestFile, len(snaps))
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(stageConcurrency)
	for i, s := range snaps {
		lists[i] = s.ManifestList
		g.Go(func() error {
			mfs, err := s.Manifests(fs)
			if isNotExist(err) {
				// Another round of maintenance (its orphan removal, or its
				// clean-up of the same snapshots; with a REST catalog, an
				// expiry the catalog applied at once too) deleted it and
				// what it named first; orphan removal takes whatever that
				// left.
				return nil
			}
			if err != nil {
				return fmt.Errorf("read manifest list of snapshot %d: %w", s.SnapshotID, err)
			}
			listed[i] = mfs
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	candidates := map[string]iceberg.ManifestFile{}
	for _, mfs := range listed {
		for _, mf := range mfs {
			if !refManifests[mf.FilePath()] {
				candidates[mf.FilePath()] = mf
				appendsOnly = appendsOnly && mf.DeletedDataFiles() == 0
			}
		}
	}
	paths := lists
	for p := range candidates {
		paths = append(paths, p)
	}
	if appendsOnly {
		// Only appends from the expired snapshots to the oldest kept one,
		// its ancestors (maintenance.LinearTail), and no entry of a removed file in
		// the manifests to delete: every data file those manifests name is
		// still live in the oldest kept snapshot. Only the manifest lists
		// and manifests go, and no manifest is read: in a long run of
		// appends the kept snapshot's manifests name every data file
		// loaded so far, and reading them at every expiry made its cost
		// grow with the files loaded.
		return paths, nil
	}
	refFiles, err := liveFilePaths(ctx, fs, keptManifests)
	if err != nil {
		return nil, err
	}
	var dataFiles []string
	seen := map[string]bool{}
	g, _ = errgroup.WithContext(ctx)
	g.SetLimit(stageConcurrency)
	for _, mf := range candidates {
		if mf.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		g.Go(func() error {
			var found []string
			err := eachManifestEntry(fs, mf, false, func(e iceberg.ManifestEntry) error {
				if p := e.DataFile().FilePath(); !refFiles[p] {
					found = append(found, p)
				}
				return nil
			})
			if isNotExist(err) {
				return nil // deleted by another round, as above
			}
			if err != nil {
				return fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range found {
				if !seen[p] {
					seen[p] = true
					dataFiles = append(dataFiles, p)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return append(paths, dataFiles...), nil
}

// isAppend reports whether s only added data files (Iceberg's operation
// "append"). A summary that says so falsely makes expiry leave the data
// files s removed to orphan removal, never delete a live one.
func isAppend(s *table.Snapshot) bool {
	return s.Summary != nil && s.Summary.Operation == table.OpAppend
}

// liveFilePaths returns the data files the entries of manifests name as
// live (ADDED or EXISTING), read stageConcurrency manifests at a time.
func liveFilePaths(ctx context.Context, fs iceio.IO, manifests []iceberg.ManifestFile) (map[string]bool, error) {
	var mu sync.Mutex
	live := map[string]bool{}
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(stageConcurrency)
	for _, mf := range manifests {
		g.Go(func() error {
			err := eachManifestEntry(fs, mf, true, func(e iceberg.ManifestEntry) error {
				mu.Lock()
				live[e.DataFile().FilePath()] = true
				mu.Unlock()
				return nil
			})
			if err != nil {
				return fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
			}
			return nil
		})
	}
	return live, g.Wait()
}

// deleteFiles deletes paths (URIs under the table location) and returns how
// many it deleted; missing files count as deleted. Each path is checked
// against the table's location first (tableRel: one outside is
// ErrOutsideTable and never deleted); the others go to the store in
// batches (storage.DeleteKeys: S3 DeleteObjects of up to 1,000 keys). A
// batch cut by ctx counts only what the store confirmed deleted.
func (t *Table) deleteFiles(ctx context.Context, paths []string) (int, error) {
	var errs []error
	keys := make([]string, 0, len(paths))
	for _, p := range paths {
		key, err := t.fileKey(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", p, err))
			continue
		}
		keys = append(keys, key)
	}
	if err := ctx.Err(); err != nil {
		return 0, errors.Join(append(errs, err)...)
	}
	done, err := storage.DeleteKeys(ctx, t.lake.store, keys)
	n := 0
	for _, d := range done {
		if d {
			n++
		}
	}
	if err != nil {
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}
